"""Smoke programs written in the style of public PyTorch programs (the official tutorials and
pytorch/examples, karpathy's nanoGPT, minGPT and makemore), each with `import fusetorch as
torch` as its only change: tiny synthetic data, two or three training steps. Each module's
docstring names the program it imitates; `main()` runs it and returns a final loss.

Programs that stop on something fusetorch lacks are strict xfails that also check *what*
stopped them: when the feature lands, the program passes, the xfail turns into a failure, and
whoever added the feature moves the program to the passing list (or it stops on the next
missing name, which then goes into the table). Runs in-process: a subprocess per program would
cost more than the programs."""
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.runtime import device as D
from fusetorch.runtime.eager import CUDA_GENERATOR, make_table

HERE = Path(__file__).resolve().parent

RUNS = [
    "quickstart",                # tutorial: Quickstart (torch.accelerator, save/load state dict)
    "tensors_tutorial",          # tutorial: Tensors (numpy bridge, out=, in-place)
    "autograd_tutorial",         # tutorial: Automatic differentiation with torch.autograd
    "nn_tutorial",               # tutorial: What is torch.nn really?
    "polynomial_sine",           # tutorial: Learning PyTorch with examples
    "cifar10_blitz",             # tutorial: 60-minute blitz, Training a classifier
    "lstm_tagger",               # tutorials: Sequence models and LSTMs; Word embeddings (N-gram)
    "bilstm_crf",                # tutorial: Advanced: Bi-LSTM CRF
    "spatial_transformer",       # tutorial: Spatial transformer networks
    "dqn",                       # tutorial: Reinforcement learning (DQN)
    "mnist_cnn",                 # pytorch/examples mnist
    "time_sequence_prediction",  # pytorch/examples time_sequence_prediction (LBFGS, float64)
    "vae",                       # pytorch/examples vae
    "dcgan",                     # pytorch/examples dcgan
    "reinforce",                 # pytorch/examples reinforcement_learning/reinforce.py
    "actor_critic",              # pytorch/examples reinforcement_learning/actor_critic.py
    "regression",                # pytorch/examples regression
    "siamese_network",           # pytorch/examples siamese_network
    "fast_neural_style",         # pytorch/examples fast_neural_style (Tensor.repeat's copy)
    "char_rnn_classification",   # tutorial: NLP from scratch, classifying names (topk)
    "seq2seq_attention",         # tutorial: seq2seq translation with attention (topk)
    "mingpt",                    # karpathy/minGPT + its sort demo (tril, unique, sort, topk)
    "word_language_model",       # pytorch/examples word_language_model (torch.save of a model)
    "super_resolution",          # pytorch/examples super_resolution (torch.save of a model)
    "char_rnn_generation",       # tutorial: NLP from scratch, generating names (unsqueeze_, topk)
    "nanogpt",                   # karpathy/nanoGPT (torch.cuda.amp.GradScaler, disabled on CPU)
    "makemore",                  # karpathy/makemore (SummaryWriter: needs tensorboard)
    "gcn",                       # pytorch/examples gcn (to_sparse, torch.sparse.mm, spmm)
    "wgan_gp",                   # WGAN-GP (autograd.grad(only_inputs=True), is_xpu)
    "gpt_step",                  # benchmarks/models.py's nanoGPT-shaped step (bench_table's row)
    "transformer_lm",            # tutorial: language modeling with nn.Transformer
    "text_classification",       # tutorial: text classification (EmbeddingBag + offsets)
    "neural_style",              # tutorial: neural transfer (gram matrix, LBFGS closure)
    "transfer_learning",         # tutorial: transfer learning (inline resnet18), imagenet's accuracy
    "gat",                       # pytorch/examples gat
    "mnist_rnn",                 # pytorch/examples mnist_rnn (LSTM over rows, Adadelta)
    "micrograd",                 # karpathy/micrograd's test_engine comparisons and its MLP demo
    "sngan",                     # pytorch-spectral-normalization-gan (nn.utils.spectral_norm)
    "ppo",                       # nikhilbarhate99/PPO-PyTorch (MultivariateNormal, Categorical)
    "forward_forward",           # pytorch/examples mnist_forward_forward
    "vision_transformer",        # ViT: Conv2d patches, MultiheadAttention(batch_first), warm restarts
    "optimization_tutorial",     # tutorial: Optimizing model parameters (TensorDataset, OneCycleLR)
    "unet",                      # milesial/Pytorch-UNet (ConvTranspose2d, cat skips, channels_last)
    "packed_gru",                # chatbot-tutorial-style encoder (pack_padded_sequence, GRU)
    "autocast_accumulation",     # recipe: automatic mixed precision, gradient accumulation
    "makemore_lectures",         # karpathy Zero to Hero makemore 1-4 (keepdims=True, one_hot)
    "per_sample_grads",          # torch.func tutorial: per-sample gradients (vmap(grad) of dicts)
    "jacobians_hessians",        # torch.func tutorial: jacrev/jacfwd/hessian/hvp, batch Jacobians
    "saving_loading",            # tutorial + recipes: saving/loading models, general checkpoints
    "data_utilities",            # torch.utils.data: custom Dataset/Sampler/collate_fn, splits
    "lr_schedulers",             # lr_scheduler docs: Lambda/Sequential/Plateau/WarmRestarts/...
    "hooks",                     # forward/backward hook recipes (with_kwargs hooks), Grad-CAM
    "parametrizations",          # tutorial: Parametrizations (orthogonal, weight/spectral norm)
    "imagenet_resnet",           # pytorch/examples imagenet (ResNet-18 written out, AverageMeter)
    "einsum_attention",          # einsum-heavy attention code (einsum sublist form)
    "weight_init",               # init_weights via model.apply (nn.init.*), inference_mode
    "sequence_batching",         # pack/pad (enforce_sorted=False), key padding masks
    "forward_mode_ad",           # tutorial: forward-mode AD (custom jvp, func.jvp over a dict)
    "extending_pytorch",         # notes: Extending PyTorch (setup_context, once_differentiable)
    "word2vec",                  # skip-gram negative sampling (sparse Embedding, SparseAdam)
    "swa",                       # optim docs: SWA recipe (AveragedModel, SWALR, update_bn, EMA)
    "tcn",                       # locuslab/TCN adding problem (weight_norm, dilated Conv1d)
    "pruning_tutorial",          # tutorial: pruning (prune.*, global_unstructured, custom method)
    "fgsm",                      # tutorial: adversarial example generation (FGSM)
    "ddpm",                      # annotated diffusion (cumprod(axis=0), GroupNorm, einsum attention)
    "vqvae",                     # zalandoresearch/pytorch-vq-vae (codebook, straight-through, EMA)
    "translation",               # tutorial: language translation with nn.Transformer (masks)
    "neural_tangent_kernels",    # torch.func tutorial: NTKs (vmap(jacrev), vjp then jvp, einsum)
    "fuse_conv_bn",              # tutorial: fusing conv and batch norm (custom Functions, gradcheck)
    "maml",                      # dragen1860/MAML-Pytorch (second-order grads, ParameterList repr)
    "cyclegan",                  # junyanz CycleGAN (InstanceNorm partial, image pool, LambdaLR)
    "seq2seq_packed",            # bentrevett pytorch-seq2seq 4 (packed bi-GRU, masked attention)
    "mobilenet_v2",              # torchvision models/mobilenetv2.py (Conv2dNormActivation, ReLU6)
    "densenet",                  # torchvision models/densenet.py (checkpointed bottlenecks)
    "realnvp",                   # karpathy/pytorch-normalizing-flows (AffineHalfFlow, ActNorm)
    "gmm_mixture",               # distributions: MixtureSameFamily GMM fit, kl_divergence
    "gnn_scatter",               # message passing with index_add_/scatter_reduce (GIN, SAGE)
    "pointnet",                  # fxia22/pointnet.pytorch (STN3d/STNkd, Conv1d, bmm, regularizer)
    "capsnet",                   # gram-ai/capsule-networks (dynamic routing, margin loss)
    "ctc_speech",                # AssemblyAI speech recognition (CTCLoss, bi-GRU, OneCycleLR)
    "gaussian_process",          # GP regression from scratch (cdist, cholesky_solve, float64)
    "knowledge_distillation",    # tutorial: knowledge distillation (KL soft targets, cosine, MSE)
    "autograd_mechanics",        # notes: autograd mechanics (_saved_*, Node hooks, multi-grad hook)
    "lkj_covariance",            # Pyro's examples/lkj.py as MAP (LKJCholesky, Wishart posterior)
    "annotated_transformer",     # harvardnlp The Annotated Transformer (LabelSmoothing, copy task)
    "neural_ode",                # msurtsukov Neural ODEs (hand-written adjoint autograd.Function)
    "simclr",                    # sthalles/SimCLR (info_nce_loss: boolean-mask similarity matrix)
    "sinkhorn",                  # dfdazac/wassdistance (log-domain Sinkhorn, logsumexp)
    "yolo_boxes",                # YOLOv5 utils (box_iou, non_max_suppression, x[i, j + 5, None])
    "bayes_by_backprop",         # Bayes by Backprop (Gaussian posterior, scale-mixture prior)
    "compile_tutorial",          # tutorial: Introduction to torch.compile (graph breaks, modes)
    "profiler_recipe",           # recipe: PyTorch Profiler (tables, memory, schedule, trace)
    "swin_block",                # microsoft/Swin-Transformer (shifted windows, torch.roll)
    "convnext",                  # facebookresearch/ConvNeXt (depthwise 7x7, channels_first LN)
    "gumbel_vae",                # YongfeiYan/Gumbel_Softmax_VAE (straight-through gumbel softmax)
    "lora",                      # microsoft/LoRA loralib (nn.Linear mixin, merge on eval)
    "sparsemax",                 # deep-spin/entmax (sparsemax/entmax15 Functions, gradcheck)
    "mixture_of_experts",        # davidmrau/mixture-of-experts (noisy top-k gating, dispatcher)
    "mamba_minimal",             # johnma2006/mamba-minimal (selective scan; x.split(split_size=))
    "frozen_bn_finetune",        # torchvision FrozenBatchNorm2d, state-dict migrations and hooks
    "llama2c",                   # karpathy/llama2.c model.py (RoPE, GQA, flash/manual attention)
    "two_layer_net",             # tutorial: Learning PyTorch with examples (two-layer net, all steps)
    "convmixer",                 # locuslab/convmixer (padding="same", np.interp lr, clip_grad_norm_)
    "cifar_vgg",                 # kuangliu/pytorch-cifar models/vgg.py + main.py's loop
    "cifar_preact_resnet",       # kuangliu/pytorch-cifar models/preact_resnet.py
    "saved_tensor_hooks",        # tutorial: hooks for autograd saved tensors (to disk, save_on_cpu)
    "double_backward",           # tutorial: double backward with custom functions (saved outputs)
    "func_whirlwind",            # torch.func whirlwind tour (grad of grad, vjp/jvp, stack_module_state)
    "vae_distributions",         # VAE on distributions (Independent Normal/Bernoulli, kl, IWAE)
    "sac",                       # Spinning Up SAC (squashed Gaussian, double Q, Polyak .data.mul_)
    "deep_sets",                 # manzilzaheer/DeepSets (permutation-equivariant max/mean layers)
    "wavenet",                   # small WaveNets (mu-law, causal F.pad conv, gated residual stack)
    "nerf",                      # yenchenlin/nerf-pytorch (embedder, raw2outputs, sample_pdf)
    "chatbot",                   # tutorial: chatbot (Luong attention, maskNLLLoss, greedy search)
    "snli",                      # pytorch/examples legacy snli (Bottle mixin over nn.Linear, bi-LSTM)
    "text_cnn",                  # Shawn1993 cnn-text-classification (Conv2d over embeddings, max_pool1d)
    "pix2pix",                   # junyanz pix2pix (recursive UnetSkipConnectionBlock, PatchGAN, GANLoss)
    "speech_commands",           # tutorial: speech command classification (M5, pad_sequence collate)
    "mnist_hogwild",             # pytorch/examples mnist_hogwild (spawn, share_memory, mp.Process)
    "build_model_tutorial",      # tutorial: Build the neural network (printed layers and params)
    "modules_notes",             # notes: Modules (buffers, ParameterList/Dict, hooks, apply, to)
    "reproducibility",           # notes: Reproducibility (seed_worker, workers=2, fork_rng, rng state)
    "grad_clip_checkpoint",      # accumulation, clip_grad_*/get_total_norm, checkpoint(_sequential)
    "cifar_efficientnet",        # kuangliu/pytorch-cifar efficientnet (swish, drop_connect, SE)
    "cifar_shufflenetv2",        # kuangliu/pytorch-cifar shufflenetv2 (channel shuffle, split)
    "cifar_dla",                 # kuangliu/pytorch-cifar dla (recursive Tree, Root of torch.cat)
    "pytorch_gan_cgan",          # eriklindernoren PyTorch-GAN cgan + infogan (FloatTensor, Variable)
    "moco",                      # facebookresearch/moco builder (queue, momentum encoder, all_gather)
    "custom_optim_sched",        # SAM, Lookahead, GradualWarmupScheduler, lr-finder ExponentialLR
    "glow",                      # rosinality/glow-pytorch (ActNorm init, InvConv2dLU, reverse)
    "siren",                     # vsitzmann/siren (sine layers, gradient/divergence/laplace)
    "hnn",                       # greydanus/hamiltonian-nn (autograd.grad field @ M.t(), create_graph)
    "pixelcnn",                  # jzbontar/pixelcnn-pytorch (MaskedConv2d mask buffer, sampling)
    "stylegan2",                 # rosinality/stylegan2-pytorch (modulated grouped convs, R1, path reg)
    "show_attend_tell",          # sgrvinod image captioning (LSTMCell over shrinking batches, packed)
    "ssd_multibox",              # sgrvinod SSD (MultiBoxLoss hard negatives, uint8 NMS, reduce=False)
    "detr_criterion",            # facebookresearch/detr (Hungarian matcher, GIoU, SetCriterion)
    "decoding",                  # top-k/top-p filtering gist, pointer-generator scatter_add, beams
    "python_custom_ops",         # tutorial: Python custom operators (custom_op, opcheck, mutates_args)
    "sdpa_benchmark",            # tutorials: SDPA (sdpa_kernel backends), PyTorch Benchmark (Timer, Compare)
]
# program -> the optional package it needs (its test skips without it)
NEEDS = {"makemore": "tensorboard"}

# program -> (text its first error must contain, what it needs, in the order it needs them)
STOPS = {
    # tutorial: dynamic quantization of an LSTM word language model
    "dynamic_quantization": ("torch.quantization: quantized tensors and quantization are out of "
                             "scope", "quantization (out of scope)"),
    # torch.func tutorial: model ensembling (stack_module_state; the base model moved to 'meta')
    "model_ensembling": ("device type at start of device string: meta",
                         "the meta device (out of scope)"),
}


class StoppedAsRecorded(Exception):
    """The program stopped where STOPS says it does."""


# programs whose classes spawned child processes unpickle: imported by their own names, with
# HERE on sys.path, which spawn hands to its children (as it re-imports a script's __main__)
SPAWNS = {"mnist_hogwild"}


def _load(name: str):
    if name in SPAWNS:
        if str(HERE) not in sys.path:
            sys.path.append(str(HERE))
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(f"fusetorch_program_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    # registered as an import would, so that its classes can be found by name (torch.save of
    # a whole model stores its class's module and name, as pickle does)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(name: str) -> float:
    try:
        return _load(name).main()
    finally:
        torch.set_default_device("cpu")  # a program that set it and then failed leaves no trace


def _cases():
    for name in RUNS:
        yield pytest.param(name, id=name)
    for name, (_, needs) in STOPS.items():
        yield pytest.param(name, id=name, marks=pytest.mark.xfail(
            strict=True, raises=StoppedAsRecorded, reason=needs))


@pytest.mark.parametrize("name", list(_cases()))
def test_program(name, capsys):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    if name in STOPS:
        try:
            _run(name)
        except Exception as e:  # noqa: BLE001  (any error: its text says whether it is the recorded one)
            if STOPS[name][0] in str(e):
                raise StoppedAsRecorded(f"{type(e).__name__}: {e}") from e
            raise
        return
    loss = _run(name)
    assert isinstance(loss, float) and math.isfinite(loss), loss


def test_every_program_file_is_listed():
    files = {p.stem for p in HERE.glob("*.py") if p.stem != "test_programs"}
    assert files == set(RUNS) | set(STOPS)


# ----------------------------------------------------------------------------- torch.accelerator


@pytest.fixture(params=["as_is", "stand_in_cuda0"])
def cuda_setting(request):
    """The machine as it is, then (where it has no GPU) with tests/runtime's stand-in cuda:0,
    a backend over numpy, so the accelerator's device branch runs without a GPU too."""
    if request.param == "as_is" or D._cupy() is not None:
        yield
        return
    D.register_backend("cuda:0", D.Backend(D.device("cuda", 0), np, make_table(np, CUDA_GENERATOR)))
    try:
        yield
    finally:
        D.register_backend("cuda:0", None)


def test_accelerator_follows_cuda(cuda_setting):
    acc = torch.accelerator
    assert acc.is_available() == torch.cuda.is_available()
    if acc.is_available():
        assert acc.current_accelerator() == torch.device("cuda")
        assert acc.current_accelerator(check_available=True) == torch.device("cuda")
        assert acc.device_count() == torch.cuda.device_count() >= 1
        assert acc.current_device_index() == torch.cuda.current_device()
        acc.synchronize()
        acc.synchronize(0)
    else:
        # PyTorch's CPU build: no accelerator, no count, and asking for its index raises
        assert acc.current_accelerator() is None
        assert acc.current_accelerator(check_available=True) is None
        assert acc.device_count() == 0
        for call in (acc.current_device_index, acc.synchronize):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none "
                                                   "is available."):
                call()


def test_accelerator_device_selection_idiom_gives_a_usable_device(cuda_setting):
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() \
        else "cpu"
    x = torch.ones(2, device=device)
    assert x.device.type == device and x.sum().item() == 2.0


def test_pin_memory_and_cuda_legacy_types(cuda_setting):
    # nanoGPT's get_batch: `x.pin_memory().to(device, non_blocking=True)` on CUDA; PyTorch's CPU
    # build refuses pin_memory; old GAN scripts: `Tensor = torch.cuda.FloatTensor if cuda else
    # torch.FloatTensor`
    x = torch.arange(3.0, requires_grad=True)
    assert not x.is_pinned()
    assert not isinstance(x, torch.cuda.FloatTensor) and isinstance(x, torch.FloatTensor)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is "
                                               "available."):
            x.pin_memory()
        return
    p = x.pin_memory()
    assert p.is_pinned() and p.pin_memory() is p and p.tolist() == [0.0, 1.0, 2.0]
    with torch.no_grad():
        p[0] = 5.0
    assert x[0].item() == 0.0  # a copy, not a view
    (x.pin_memory() * 2).sum().backward()
    assert x.grad.tolist() == [2.0] * 3
    y = p.to("cuda", non_blocking=True)
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        y.pin_memory()
    c = torch.cuda.FloatTensor(2, 3)
    assert c.device.type == "cuda" and c.dtype == torch.float32 and c.shape == (2, 3)
    assert isinstance(c, torch.cuda.FloatTensor) and not isinstance(c, torch.cuda.LongTensor)
    assert torch.cuda.LongTensor([1, 2]).tolist() == [1, 2]
