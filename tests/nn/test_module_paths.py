"""Every class `fusetorch.nn` has is reachable where PyTorch defines it (its `__module__` in
PyTorch 2.13), as a chain of attributes from the top-level package, with no import of the
submodule: scripts name `torch.nn.modules.activation.MultiheadAttention` in `safe_globals`."""
import inspect
import subprocess
import sys

import fusetorch.nn as nn

# `cls.__module__` of every class in PyTorch 2.13's `torch.nn` (read by hand from /tmp's torch)
TORCH_PATHS = {
    "torch.nn.modules.activation": (
        "CELU ELU GELU GLU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid "
        "LogSoftmax Mish MultiheadAttention PReLU RReLU ReLU ReLU6 SELU SiLU Sigmoid Softmax "
        "Softmax2d Softmin Softplus Softshrink Softsign Tanh Tanhshrink Threshold "
    ),
    "torch.nn.modules.adaptive": (
        "AdaptiveLogSoftmaxWithLoss "
    ),
    "torch.nn.modules.batchnorm": (
        "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d "
        "SyncBatchNorm "
    ),
    "torch.nn.modules.channelshuffle": (
        "ChannelShuffle "
    ),
    "torch.nn.modules.container": (
        "Container ModuleDict ModuleList ParameterDict ParameterList Sequential "
    ),
    "torch.nn.modules.conv": (
        "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d "
        "LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d "
    ),
    "torch.nn.modules.distance": (
        "CosineSimilarity PairwiseDistance "
    ),
    "torch.nn.modules.dropout": (
        "AlphaDropout Dropout Dropout1d Dropout2d Dropout3d FeatureAlphaDropout "
    ),
    "torch.nn.modules.flatten": (
        "Flatten Unflatten "
    ),
    "torch.nn.modules.fold": (
        "Fold Unfold "
    ),
    "torch.nn.modules.instancenorm": (
        "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
        "LazyInstanceNorm3d "
    ),
    "torch.nn.modules.linear": (
        "Bilinear Identity LazyLinear Linear "
    ),
    "torch.nn.modules.linear_cross_entropy_options": (
        "LinearCrossEntropyOptions "
    ),
    "torch.nn.modules.loss": (
        "BCELoss BCEWithLogitsLoss CTCLoss CosineEmbeddingLoss CrossEntropyLoss GaussianNLLLoss "
        "HingeEmbeddingLoss HuberLoss KLDivLoss L1Loss LinearCrossEntropyLoss MSELoss "
        "MarginRankingLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss "
        "NLLLoss NLLLoss2d PoissonNLLLoss SmoothL1Loss SoftMarginLoss TripletMarginLoss "
        "TripletMarginWithDistanceLoss "
    ),
    "torch.nn.modules.module": (
        "Module "
    ),
    "torch.nn.modules.normalization": (
        "CrossMapLRN2d GroupNorm LayerNorm LocalResponseNorm RMSNorm "
    ),
    "torch.nn.modules.padding": (
        "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d "
        "ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d "
        "ReplicationPad3d ZeroPad1d ZeroPad2d ZeroPad3d "
    ),
    "torch.nn.modules.pixelshuffle": (
        "PixelShuffle PixelUnshuffle "
    ),
    "torch.nn.modules.pooling": (
        "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d "
        "AdaptiveMaxPool2d AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d FractionalMaxPool2d "
        "FractionalMaxPool3d LPPool1d LPPool2d LPPool3d MaxPool1d MaxPool2d MaxPool3d "
        "MaxUnpool1d MaxUnpool2d MaxUnpool3d "
    ),
    "torch.nn.modules.rnn": (
        "GRU GRUCell LSTM LSTMCell RNN RNNBase RNNCell RNNCellBase "
    ),
    "torch.nn.modules.sparse": (
        "Embedding EmbeddingBag "
    ),
    "torch.nn.modules.transformer": (
        "Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder "
        "TransformerEncoderLayer "
    ),
    "torch.nn.modules.upsampling": (
        "Upsample UpsamplingBilinear2d UpsamplingNearest2d "
    ),
    "torch.nn.parallel.data_parallel": (
        "DataParallel "
    ),
    "torch.nn.parameter": (
        "Buffer Parameter UninitializedBuffer UninitializedParameter "
    ),
}
WHERE = {name: path for path, names in TORCH_PATHS.items() for name in names.split()}
NOT_IN_TORCH_NN = {"RemovableHandle"}  # torch.utils.hooks's; fusetorch.nn re-exports it


def _classes() -> list[str]:
    return sorted(n for n in dir(nn) if inspect.isclass(getattr(nn, n)) and not n.startswith("_"))


def test_every_nn_class_has_a_pytorch_path():
    assert [n for n in _classes() if n not in WHERE and n not in NOT_IN_TORCH_NN] == []


def test_every_nn_class_is_an_attribute_at_pytorch_path_without_importing_it():
    # a fresh interpreter: in this one another test may have imported the submodule already
    # torch.nn.parallel.data_parallel is the function of that name in PyTorch too (it shadows
    # its module), so DataParallel is reached as torch.nn.parallel.DataParallel there
    wanted = {n: WHERE[n] for n in _classes() if n in WHERE and n != "DataParallel"}
    code = (
        "import fusetorch as torch\n"
        f"wanted = {wanted!r}\n"
        "bad = []\n"
        "for name, path in wanted.items():\n"
        "    obj = torch\n"
        "    for part in path.split('.')[1:]:\n"
        "        obj = getattr(obj, part, None)\n"
        "    if getattr(obj, name, None) is not getattr(torch.nn, name):\n"
        "        bad.append(path + '.' + name)\n"
        "    if path.startswith('torch.nn.modules.') and \\\n"
        "            getattr(torch.nn.modules, name, None) is not getattr(torch.nn, name):\n"
        "        bad.append('torch.nn.modules.' + name)\n"
        "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    assert nn.parallel.DataParallel is nn.DataParallel
