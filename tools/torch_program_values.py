"""Run tests/programs' models in fusetorch and in PyTorch with the same weights (a developer
tool, NOT a test: it IMPORTS TORCH and is never collected by pytest).

Each listed program's module is loaded twice: as it is (fusetorch) and with `fusetorch`
replaced by `torch` in its text (into a temporary directory). Every floating parameter and
buffer is set from one numpy stream (running variances in [0.5, 1.5]; dropout p set to 0), the
same inputs drive a forward and backward, and the losses and per-parameter gradient norms are
written as JSON; `--compare A.json B.json` prints the largest relative differences.

    PYTHONPATH=/path/to/fusetorch /tmp/tv/bin/python tools/torch_program_values.py fusetorch \
        /tmp/f.json
    /tmp/tv/bin/python tools/torch_program_values.py torch /tmp/t.json
    python tools/torch_program_values.py --compare /tmp/t.json /tmp/f.json
"""
import importlib.util
import json
import os
import sys
import tempfile

import numpy as np

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "programs")


def compare(a_path: str, b_path: str) -> None:
    a, b = json.load(open(a_path)), json.load(open(b_path))
    for k in a:
        if isinstance(a[k], dict):
            mx = max(abs(v) for v in a[k].values())
            r = max(abs(a[k][n] - b[k][n]) / (abs(a[k][n]) + 1e-3 * mx) for n in a[k])
            print(f"{k:20s} {len(a[k])} gradient norms, largest relative difference {r:.1e}")
        else:
            x, y = np.array(a[k], dtype=float), np.array(b[k], dtype=float)
            r = np.max(np.abs(x - y) / (np.abs(x) + 1e-12))
            print(f"{k:20s} largest relative difference {r:.1e}")


if sys.argv[1] == "--compare":
    compare(sys.argv[2], sys.argv[3])
    sys.exit(0)
lib, out_path = sys.argv[1], sys.argv[2]
if lib == "torch":
    import torch
    src_dir = tempfile.mkdtemp()
else:
    import fusetorch as torch
    src_dir = PROGRAMS
nn = torch.nn
F = torch.nn.functional


def load(name):
    if lib == "torch":
        s = open(os.path.join(PROGRAMS, f"{name}.py")).read().replace("fusetorch", "torch")
        with open(os.path.join(src_dir, f"{name}.py"), "w") as f:
            f.write(s)
    spec = importlib.util.spec_from_file_location(name, os.path.join(src_dir, f"{name}.py"))
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


def set_weights(model, seed):
    rng = np.random.default_rng(seed)
    sd = model.state_dict()
    new = {}
    for k, v in sd.items():
        shape = tuple(v.shape)
        if v.dtype in (torch.int64, torch.long):
            new[k] = v
            continue
        if k.endswith("running_var"):
            a = rng.uniform(0.5, 1.5, shape)
        elif k.endswith("running_mean"):
            a = rng.standard_normal(shape) * 0.1
        else:
            fan = max(1, int(np.prod(shape[1:])) if len(shape) > 1 else shape[0] if shape else 1)
            a = rng.standard_normal(shape) / np.sqrt(fan)
        new[k] = torch.tensor(a.astype(np.float64 if v.dtype == torch.float64 else np.float32))
    model.load_state_dict(new)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0


def grads(model):
    return {k: float(p.grad.double().norm()) for k, p in model.named_parameters()
            if p.grad is not None}


def arr(a, dtype=np.float32):
    return torch.tensor(np.asarray(a).astype(dtype))


out = {}
rng = np.random.default_rng(123)

# mobilenet_v2: train-mode BN, label smoothing CE, one SGD nesterov step
m = load("mobilenet_v2")
model = m.MobileNetV2(num_classes=10, width_mult=0.5,
                      inverted_residual_setting=[[1, 8, 1, 1], [6, 12, 2, 2], [6, 16, 1, 2]])
set_weights(model, 1)
x = arr(rng.standard_normal((4, 3, 32, 32))); y = torch.tensor([1, 5, 0, 9])
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=4e-5)
loss = nn.CrossEntropyLoss(label_smoothing=0.1)(model(x), y); loss.backward()
out["mobilenet_loss"] = loss.item(); out["mobilenet_grads"] = grads(model)
opt.step(); model.eval()
with torch.no_grad():
    out["mobilenet_eval"] = model(x).tolist()

# densenet: memory-efficient checkpointing, train mode
m = load("densenet")
model = m.DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, bn_size=2,
                   num_classes=5, memory_efficient=True)
set_weights(model, 2)
x = arr(rng.standard_normal((2, 3, 32, 32))); y = torch.tensor([1, 3])
loss = F.cross_entropy(model(x), y); loss.backward()
out["densenet_loss"] = loss.item(); out["densenet_grads"] = grads(model)

# pointnet with feature transform
m = load("pointnet")
model = m.PointNetCls(k=4, feature_transform=True)
set_weights(model, 3)
pts = arr(rng.random((4, 3, 32))); y = torch.tensor([0, 3, 2, 1])
pred, trans, trans_feat = model(pts)
loss = F.nll_loss(pred, y) + m.feature_transform_regularizer(trans_feat) * 0.001
loss.backward()
out["pointnet_loss"] = loss.item(); out["pointnet_grads"] = grads(model)

# capsnet: routing, margin + reconstruction loss
m = load("capsnet")
model = m.CapsuleNet()
set_weights(model, 4)
data = arr(rng.random((3, 1, 12, 12)))
labels = torch.eye(m.NUM_CLASSES).index_select(dim=0, index=torch.tensor([0, 2, 3]))
classes, rec = model(data, labels)
loss = m.CapsuleLoss()(data, labels, classes, rec); loss.backward()
out["capsnet_loss"] = loss.item(); out["capsnet_grads"] = grads(model)

# ctc_speech: GRU, LayerNorm, CTC
m = load("ctc_speech")
model = m.SpeechRecognitionModel(1, 2, 16, 29, 16, 2, 0.0)
set_weights(model, 5)
spec = arr(rng.standard_normal((2, 1, 16, 20)))
labels = torch.tensor([[3, 7, 7, 1, 20], [5, 2, 9, 0, 0]])
o = F.log_softmax(model(spec), dim=2).transpose(0, 1)
loss = nn.CTCLoss(blank=28, zero_infinity=True)(o, labels, [10, 10], [5, 3]); loss.backward()
out["ctc_loss"] = loss.item(); out["ctc_grads"] = grads(model)

# annotated transformer: eval-mode forward, label-smoothed KL loss, greedy decode
m = load("annotated_transformer")
model = m.make_model(11, 11, N=2, d_model=32, d_ff=64, h=4)
set_weights(model, 6)
src = torch.tensor(rng.integers(1, 11, (3, 10))); src[:, 0] = 1
b = m.Batch(src, src.clone(), 0)
outp = model.forward(b.src, b.tgt, b.src_mask, b.tgt_mask)
crit = m.LabelSmoothing(size=11, padding_idx=0, smoothing=0.1)
loss, node = m.SimpleLossCompute(model.generator, crit)(outp, b.tgt_y, b.ntokens)
node.backward()
out["transformer_loss"] = node.item(); out["transformer_grads"] = grads(model)
model.eval()
with torch.no_grad():
    out["transformer_decode"] = m.greedy_decode(model, src[:1], torch.ones(1, 1, 10), 10,
                                                1).tolist()

# gnn_scatter: GIN + SAGE(max, mean) + mean pool
m = load("gnn_scatter")
model = m.Net(5, 16, 2).eval()  # (its F.dropout follows training)
set_weights(model, 7)
ei = torch.tensor(rng.integers(0, 18, (2, 40)))
x = arr(rng.standard_normal((18, 5))); batch = torch.arange(3).repeat_interleave(6)
loss = F.cross_entropy(model(x, ei, batch, 3), torch.tensor([0, 1, 1])); loss.backward()
out["gnn_loss"] = loss.item(); out["gnn_grads"] = grads(model)

# simclr info_nce on the model's features
m = load("simclr")
model = m.ResNetSimCLR(out_dim=8)
set_weights(model, 8)
sim = m.SimCLR(model=model, optimizer=None, scheduler=None,
               args={"device": "cpu", "batch_size": 4, "n_views": 2, "temperature": 0.07})
imgs = arr(rng.random((8, 3, 16, 16)))
logits, lab = sim.info_nce_loss(model(imgs))
loss = F.cross_entropy(logits, lab); loss.backward()
out["simclr_loss"] = loss.item(); out["simclr_grads"] = grads(model)

# knowledge distillation: soft-target loss of the student vs the teacher
m = load("knowledge_distillation")
t_net, s_net = m.DeepNN(10), m.LightNN(10)
set_weights(t_net, 9); set_weights(s_net, 10)
imgs = arr(rng.standard_normal((4, 3, 16, 16))); y = torch.tensor([1, 2, 3, 4])
with torch.no_grad():
    tl, th, tf = t_net(imgs)
sl, sh, sr = s_net(imgs)
T = 2
st = F.softmax(tl / T, dim=-1); sp = F.log_softmax(sl / T, dim=-1)
loss = (torch.sum(st * (st.log() - sp)) / sp.size()[0] * T ** 2 * 0.25
        + 0.75 * F.cross_entropy(sl, y)
        + nn.CosineEmbeddingLoss()(sh, th, torch.ones(4)) + nn.MSELoss()(sr, tf))
loss.backward()
out["kd_loss"] = loss.item(); out["kd_grads"] = grads(s_net)


# convnext: depthwise 7x7, channels_first LayerNorm, layer scale
m = load("convnext")
model = m.ConvNeXt(num_classes=10, depths=[1, 1], dims=[8, 16], drop_path_rate=0.0)
set_weights(model, 11)
imgs = arr(rng.standard_normal((2, 3, 32, 32))); y = torch.tensor([0, 3])
loss = nn.CrossEntropyLoss(label_smoothing=0.1)(model(imgs), y); loss.backward()
out["convnext_loss"] = loss.item(); out["convnext_grads"] = grads(model)

# swin: shifted-window blocks and patch merging
m = load("swin_block")
blocks = nn.Sequential(m.SwinTransformerBlock(16, (8, 8), 2, 4, 0),
                       m.SwinTransformerBlock(16, (8, 8), 2, 4, 2), m.PatchMerging((8, 8), 16))
set_weights(blocks, 12)
tok = arr(rng.standard_normal((2, 64, 16)))
loss = blocks(tok).pow(2).mean(); loss.backward()
out["swin_loss"] = loss.item(); out["swin_grads"] = grads(blocks)

# llama2.c: RoPE, GQA, SDPA
m = load("llama2c")
model = m.Transformer(m.ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=64,
                                  multiple_of=16, max_seq_len=16))
set_weights(model, 13)
ids = torch.tensor(rng.integers(0, 64, (2, 12)))
model(ids, torch.roll(ids, -1, 1)); model.last_loss.backward()
out["llama_loss"] = model.last_loss.item(); out["llama_grads"] = grads(model)

with open(out_path, "w") as f:
    json.dump(out, f)
print("written", out_path)
