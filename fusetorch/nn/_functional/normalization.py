"""nn.functional: normalization (batch_norm, layer_norm, group_norm, instance_norm, rms_norm,
local_response_norm), composed from tensor operations: `(x - mean) * rsqrt(var + eps)` with the biased variance, then the affine map.

batch_norm in training mode also updates the running statistics in place under no_grad, as
PyTorch does: `running = (1 - momentum) * running + momentum * batch_stat`, where the variance
stored is the unbiased one (n / (n - 1) times the biased variance used to normalise).
"""
from __future__ import annotations

import math
from typing import Sequence

from ...ir import dtypes as dt
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer import autocast as _ac
from ...tracer.composite_programs import composite
from ...tracer.opmath import half_dtype, round_to, to_float32
from ...tracer.tensor import Tensor

_AUTOCAST = _ac._LOCAL  # (bound once: a per-thread module's attributes read slowly)

__all__ = ["batch_norm", "group_norm", "layer_norm", "instance_norm", "rms_norm",
           "local_response_norm"]




def _verify_batch_size(size) -> None:
    """Training statistics need more than one value per channel."""
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def _check_channels(name: str, t: Tensor | None, c: int) -> None:
    if t is not None and t.numel() != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims. Training uses the batch
    statistics (and updates `running_mean` / `running_var` in place when given); evaluation
    uses the running statistics."""
    return batch_norm_parts(input, running_mean, running_var, weight, bias, training, momentum,
                            eps)[0]


def batch_norm_parts(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                     weight: Tensor | None, bias: Tensor | None, training: bool,
                     momentum: float, eps: float) -> tuple:
    """batch_norm's (output, batch mean [C], 1 / sqrt(biased batch variance + eps) [C]); the
    statistics are None in evaluation (torch.native_batch_norm's tuple)."""
    D.check_tensor(input, "batch_norm", "input", 1)
    if running_mean is not None:
        D.check_tensor(running_mean, "batch_norm", "running_mean", 2)
    if running_var is not None:
        D.check_tensor(running_var, "batch_norm", "running_var", 3)
    if training:
        _verify_batch_size(input.size())
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if input.ndim == 1 and input.numel() == 0:  # PyTorch returns it as it is, stats unread
        return input.clone(), None, None
    if input.ndim == 1 and running_mean is not None:  # PyTorch counts 0 channels here
        raise RuntimeError(f"running_mean should contain 0 elements not "
                           f"{running_mean.numel()}")
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[-{max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channels(name, t, c)
    if not training:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
    # float16/bfloat16 in float32 (the running statistics' update too), each result rounded
    # once, as ATen's CPU kernels
    h = half_dtype(input)
    x, w, b = (to_float32(t) for t in (input, weight, bias))
    if not training:
        out = _batch_norm_eval(x, to_float32(running_mean), to_float32(running_var), w, b, eps)
        return round_to(out, h, "NativeBatchNormBackward0", input, weight, bias), None, None
    out, mean, var = _batch_norm_train(x, w, b, eps)
    # an empty batch has no statistics: PyTorch leaves the running ones as they are
    if (running_mean is not None or running_var is not None) and input.numel():
        n = input.numel() // c
        with A.no_grad():
            if running_mean is not None:
                new = mean.reshape((c,)) * momentum + to_float32(running_mean) * (1 - momentum)
                running_mean.copy_(new)
            if running_var is not None:
                unbiased = var.reshape((c,)) * (n / (n - 1))
                running_var.copy_(unbiased * momentum + to_float32(running_var) * (1 - momentum))
    return (round_to(out, h, "NativeBatchNormBackward0", input, weight, bias),
            round_to(mean.reshape((c,)), h), round_to(F.rsqrt(var + eps).reshape((c,)), h))


def _affine(out: Tensor, input: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return A.label_recorded(out, "NativeBatchNormBackward0", input, weight, bias)


@composite
def _batch_norm_train(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple:
    """(output, batch mean, biased batch variance): the pure part of training batch_norm (the
    running statistics' in-place update stays outside, so that this part can be replayed)."""
    dims = (0,) + tuple(range(2, input.ndim))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dims, keepdim=True)
    out = _affine(centered * F.rsqrt(var + eps), input, weight, bias)
    return out, mean, var


@composite
def _batch_norm_eval(input: Tensor, running_mean: Tensor, running_var: Tensor,
                     weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    out = (input - running_mean.reshape(shape)) * F.rsqrt(running_var.reshape(shape) + eps)
    return _affine(out, input, weight, bias)


@composite
def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last `len(normalized_shape)` dims (biased variance), then
    `* weight + bias` elementwise over those dims."""
    return layer_norm_parts(input, normalized_shape, weight, bias, eps, stats=False)[0]


def layer_norm_parts(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                     bias: Tensor | None, eps: float, stats: bool = True) -> tuple:
    """layer_norm's (output, mean, 1 / sqrt(biased variance + eps)), the statistics with the
    normalised dims kept as 1 (torch.native_layer_norm's tuple; None without `stats`). The
    output is one `layer_norm` primitive, whose backward keeps the input alone
    (ir/norm_ops.py); the statistics are computed apart, only where asked for."""
    D.check_tensor(input, "layer_norm", "input", 1)
    if weight is not None:
        D.check_tensor(weight, "layer_norm", "weight", 3)
    if bias is not None:
        D.check_tensor(bias, "layer_norm", "bias", 4)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("layer_norm", layer_norm_parts, (input, normalized_shape, weight, bias,
                                                         eps, stats), {})
    if isinstance(normalized_shape, int):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        "ints, not int")
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in ns)}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(ns)}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    affine = [t for t in (weight, bias) if t is not None]
    if any(t._dtype is not input._dtype for t in affine):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    out = D.apply("layer_norm", [input] + affine, {"count": k, "eps": float(eps),
                                                   "weight": weight is not None,
                                                   "bias": bias is not None})
    out = A.label_recorded(out, "NativeLayerNormBackward0", input, weight, bias)
    if not stats:
        return out, None, None
    dims = tuple(range(input.ndim - k, input.ndim))
    x = to_float32(input)  # ATen's statistics of half inputs: float32, rounded once
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    rstd = F.rsqrt((centered * centered).mean(dims, keepdim=True) + eps)
    return out, round_to(mean, half_dtype(input)), round_to(rstd, half_dtype(input))


@composite
@_ac.op("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each group of `C / num_groups` channels (with the spatial dims) per sample,
    then a per-channel affine map."""
    return group_norm_parts(input, num_groups, weight, bias, eps)[0]


def group_norm_parts(input: Tensor, num_groups: int, weight: Tensor | None, bias: Tensor | None,
                     eps: float) -> tuple:
    """group_norm's (output, mean [N, G], 1 / sqrt(biased variance + eps) [N, G])
    (torch.native_group_norm's tuple)."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    _verify_batch_size([n * c // num_groups, num_groups] + list(input.shape[2:]))
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
    h = half_dtype(input)  # float16/bfloat16 in float32, each result rounded once (ATen's)
    x = to_float32(input).reshape((n, num_groups, c // num_groups * math.prod(input.shape[2:])))
    mean = x.mean(2, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(2, keepdim=True)
    rstd = F.rsqrt(var + eps)
    out = (centered * rstd).reshape(tuple(input.shape))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * to_float32(weight).reshape(shape)
    if bias is not None:
        out = out + to_float32(bias).reshape(shape)
    out = round_to(out, h) if h else out
    return (A.label_recorded(out, "NativeGroupNormBackward0", input, weight, bias),
            round_to(mean.reshape((n, num_groups)), h), round_to(rstd.reshape((n, num_groups)), h))



def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims, then a per-channel affine map.
    With `use_input_stats` the running statistics (when given) move towards the batch average
    of the per-instance mean and unbiased variance, as PyTorch's batch_norm over the
    [1, N * C, ...] view does; without it the running statistics normalise."""
    if use_input_stats:
        size = input.size()
        spatial = 1
        for s in size[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {size}")
    n, c = input.shape[0], input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channels(name, t, c)
    shape = (1, c) + (1,) * (input.ndim - 2)
    dims = tuple(range(2, input.ndim))
    # float16/bfloat16 in float32 (the running statistics too), rounded once: ATen's batch_norm
    x, rm, rv = to_float32(input), to_float32(running_mean), to_float32(running_var)
    if use_input_stats:
        mean = x.mean(dims, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dims, keepdim=True)
        out = centered * F.rsqrt(var + eps)
        if running_mean is not None or running_var is not None:
            k = input.numel() // (n * c) if n * c else 0
            with A.no_grad():
                if running_mean is not None:
                    batch = mean.reshape((n, c)).mean(0)
                    running_mean.copy_(batch * momentum + rm * (1 - momentum))
                if running_var is not None:
                    batch = var.reshape((n, c)).mean(0) * (k / (k - 1))
                    running_var.copy_(batch * momentum + rv * (1 - momentum))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        out = (x - rm.reshape(shape)) * F.rsqrt(rv.reshape(shape) + eps)
    if weight is not None:
        out = out * to_float32(weight).reshape(shape)
    if bias is not None:
        out = out + to_float32(bias).reshape(shape)
    return round_to(out, half_dtype(input))


def _finfo_eps(d) -> float:
    """torch.finfo(d).eps."""
    import ml_dtypes  # numpy's finfo knows no bfloat16
    import numpy as np
    return float(ml_dtypes.finfo(np.dtype(d.name)).eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """`x * rsqrt(mean(x ** 2) + eps) * weight` over the trailing `normalized_shape` dims; eps
    None is the machine epsilon of the input's dtype."""
    if isinstance(normalized_shape, int):
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        "ints, not int")
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(str(s) for s in ns)}], but got input of size"
                           f"{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(ns)}")
    # A half input computes in float32, as ATen's (its squares overflow float16 past 256), with
    # float32's epsilon as the default, and the result goes back to the input's dtype.
    low = input._dtype in (dt.float16, dt.bfloat16)
    x = input.to(dt.float32) if low else input
    if eps is None:
        eps = _finfo_eps(x._dtype)
    dims = tuple(range(input.ndim - k, input.ndim))
    out = x * F.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out.to(input._dtype) if low else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """`x / (k + alpha * mean of x ** 2 over `size` neighbouring channels) ** beta`; the
    window is c - size // 2 .. c + (size - 1) // 2, zero-padded, always divided by `size`
    (an integer input's mean truncates, as PyTorch's avg_pool of integers)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    lo, hi = size // 2, (size - 1) // 2
    zeros_shape = lambda m: (input.shape[0], m) + tuple(input.shape[2:])  # noqa: E731
    parts = []
    if lo:
        parts.append(sq.new_zeros(zeros_shape(lo)))
    parts.append(sq)
    if hi:
        parts.append(sq.new_zeros(zeros_shape(hi)))
    padded = F.cat(parts, 1) if len(parts) > 1 else sq
    total = None
    for s in range(size):
        window = F.narrow(padded, 1, s, c)
        total = window if total is None else total + window
    # PyTorch averages with avg_pool, then scales: integers average by integer division
    avg = total / size if total._dtype.is_floating_point else total // size
    div = (avg * alpha + k) ** beta
    return input / div
