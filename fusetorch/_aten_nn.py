"""torch-level forms of nn.functional ops (`torch.conv2d`, `torch.batch_norm`, `torch.lstm`, ...).

PyTorch exposes these with ATen's signatures, which differ from nn.functional's: the weight
before the running statistics in `batch_norm`, `train` required in `dropout`, losses taking an
integer `reduction` whose Python default is 0 ('none'), pooling without `return_indices`,
`lstm` over a flat parameter list. Each is nn.functional's op called with its arguments
rearranged, so there is one definition of every computation. Where the signatures agree the
name is nn.functional's function itself.
"""
from __future__ import annotations

from .nn import functional as F
from .nn.modules import rnn as _rnn
from .nn._functional import dropout as _drop
from .tracer import dispatch as D
from .tracer import functional as TF
from .tracer.tensor import Tensor

# torch.<name> is F.<name>: the signatures agree
SAME = ("conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d conv_tbc bilinear "
        "cosine_similarity pairwise_distance pdist pixel_shuffle pixel_unshuffle channel_shuffle "
        "prelu rms_norm adaptive_avg_pool1d").split()

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction: int) -> str:
    """ATen's `at::Reduction` code (0 none, 1 mean, 2 sum) as nn.functional's string."""
    if not isinstance(reduction, int) or isinstance(reduction, bool) or \
            not 0 <= reduction <= 2:
        raise RuntimeError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _stride(stride):
    return None if stride is None or isinstance(stride, (list, tuple)) and not stride \
        else stride


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:
    """Convolution of any of 1, 2 or 3 spatial dims (the weight's rank says which), direct or
    transposed."""
    D.check_tensor(weight, "convolution", "weight", 2)
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got "
                           f"input of size: {list(input.shape)}" if nd < 1 else
                           f"convolution: weight of {weight.ndim} dims is not supported")
    if transposed:
        return getattr(F, f"conv_transpose{nd}d")(input, weight, bias, stride, padding,
                                                  output_padding, groups, dilation)
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enable: bool = True) -> Tensor:
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enabled: bool = True) -> Tensor:
    return F.group_norm(input, num_groups, weight, bias, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` (first, as ATen orders them). ATen never checks padding_idx (it only
    keeps that row's gradient at zero): one outside the rows is none."""
    D.check_tensor(weight, "embedding", "weight", 1)
    D.check_tensor(indices, "embedding", "indices", 2)
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    pad = padding_idx if 0 <= padding_idx < weight.shape[0] else None
    return F.embedding(indices, weight, pad,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _drop.dropout(input, p, train)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _drop.alpha_dropout(input, p, train)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _drop.feature_alpha_dropout(input, p, train)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels of [N, C, *] (one draw per sample and channel)."""
    D.check_tensor(input, "feature_dropout", "input", 1)
    return _drop._feature_dropout(input, p, train, False, True)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    return F.channel_shuffle(input, groups)


def selu(input: Tensor) -> Tensor:
    return F.selu(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu(input, alpha)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    return F.threshold(input, threshold, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return F.hardshrink(input, lambd)


def rrelu(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3, training: bool = False,
          generator=None) -> Tensor:
    if generator is not None:
        raise NotImplementedError("fusetorch: rrelu draws from the global generator; "
                                  "generator= is not supported")
    return F.rrelu(input, lower, upper, training)


# losses: ATen's integer reduction, whose default through torch.* is 0 ('none')
def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    red = _reduction(reduction)
    if red == "mean":  # ATen's mean is over every element, without nn.functional's warning
        return F.kl_div(input, target, reduction="none", log_target=log_target).mean()
    return F.kl_div(input, target, reduction=red, log_target=log_target)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 0) -> Tensor:
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-06, swap: bool = False,
                        reduction: int = 0) -> Tensor:
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 0) -> Tensor:
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


# pooling: values only, or (values, indices) where the name says so
def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                        count_include_pad)


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                        return_indices=True)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


# recurrent layers over ATen's flat parameter lists
def _cell_args(name: str, input: Tensor, w_ih: Tensor, w_hh: Tensor) -> None:
    D.check_tensor(input, name, "input", 1)
    D.check_tensor(w_ih, name, "w_ih", 3)
    D.check_tensor(w_hh, name, "w_hh", 4)
    if input.ndim not in (1, 2) or input.shape[-1] != w_ih.shape[-1]:
        raise RuntimeError(f"{name}: input has inconsistent input_size: got "
                           f"{input.shape[-1] if input.ndim else None} expected "
                           f"{w_ih.shape[-1]}")


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple:
    """One LSTM step: hx = (h, c) -> (h', c')."""
    _cell_args("lstm_cell", input, w_ih, w_hh)
    h, c = hx
    gates = _rnn._linear(input, w_ih, b_ih) + _rnn._linear(h, w_hh, b_hh)
    return _rnn._lstm_step(gates, c, None)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    _cell_args("gru_cell", input, w_ih, w_hh)
    return _rnn._gru_step(_rnn._linear(input, w_ih, b_ih), _rnn._linear(hx, w_hh, b_hh), hx)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    _cell_args("rnn_tanh_cell", input, w_ih, w_hh)
    return TF.tanh(_rnn._linear(input, w_ih, b_ih) + _rnn._linear(hx, w_hh, b_hh))


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    _cell_args("rnn_relu_cell", input, w_ih, w_hh)
    return TF.relu(_rnn._linear(input, w_ih, b_ih) + _rnn._linear(hx, w_hh, b_hh))


def _layers(mode: str, input: Tensor, hx: Tensor, cx: Tensor | None, params, has_biases: bool,
            num_layers: int, dropout: float, train: bool, bidirectional: bool,
            batch_first: bool) -> tuple:
    params = list(params)
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if len(params) not in (per * num_layers * dirs, (per + 1) * num_layers * dirs) or \
            mode != "LSTM" and len(params) != per * num_layers * dirs:
        raise RuntimeError("got an incorrect number of RNN parameters")
    per = len(params) // (num_layers * dirs)
    weights = [params[k * per:(k + 1) * per] for k in range(num_layers * dirs)]
    return _rnn.run_layers(mode, input, hx, cx, weights, has_biases, per == 5 or per == 3,
                           num_layers, dirs, dropout, train, batch_first)


def lstm(input: Tensor, hx, params, has_biases: bool, num_layers: int, dropout: float,
         train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    """A multi-layer LSTM: hx = (h_0, c_0), params the per-layer, per-direction weights in
    `nn.LSTM._flat_weights`' order -> (output, h_n, c_n)."""
    h, c = hx
    out, hn, cn = _layers("LSTM", input, h, c, params, has_biases, num_layers, dropout, train,
                          bidirectional, batch_first)
    return out, hn, cn


def gru(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int, dropout: float,
        train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    out, hn, _ = _layers("GRU", input, hx, None, params, has_biases, num_layers, dropout, train,
                         bidirectional, batch_first)
    return out, hn


def rnn_tanh(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int,
             dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    out, hn, _ = _layers("RNN_TANH", input, hx, None, params, has_biases, num_layers, dropout,
                         train, bidirectional, batch_first)
    return out, hn


def rnn_relu(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int,
             dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple:
    out, hn, _ = _layers("RNN_RELU", input, hx, None, params, has_biases, num_layers, dropout,
                         train, bidirectional, batch_first)
    return out, hn


PUBLIC = {name: getattr(F, name) for name in SAME}
PUBLIC.update({fn.__name__: fn for fn in (
    convolution, batch_norm, instance_norm, layer_norm, group_norm, embedding, dropout,
    alpha_dropout, feature_alpha_dropout, feature_dropout, native_channel_shuffle, selu, celu,
    threshold, hardshrink, rrelu, kl_div, margin_ranking_loss, hinge_embedding_loss,
    cosine_embedding_loss, triplet_margin_loss, poisson_nll_loss, ctc_loss,
    binary_cross_entropy_with_logits, adaptive_max_pool1d, avg_pool1d, max_pool1d,
    max_pool1d_with_indices, max_pool2d, max_pool3d, lstm_cell, gru_cell, rnn_tanh_cell,
    rnn_relu_cell, lstm, gru, rnn_tanh, rnn_relu)})


def _prelu_method(self: Tensor, weight: Tensor) -> Tensor:
    return F.prelu(self, weight)


def _hardshrink_method(self: Tensor, lambd: float = 0.5) -> Tensor:
    return F.hardshrink(self, lambd)


_prelu_method.__name__, _hardshrink_method.__name__ = "prelu", "hardshrink"
Tensor.prelu = _prelu_method  # (x.prelu(w), x.hardshrink(): PyTorch's methods too)
Tensor.hardshrink = _hardshrink_method
