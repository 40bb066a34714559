"""nn.functional: conv1d, conv2d and conv3d: the `conv2d` primitive over float32/float64
(ir/conv_ops.py; C kernels on the CPU: runtime/conv.py), else im2col + one batched matmul.

The composition (half precision; the primitive's own, `conv_ops._conv_parts`, is the same):
conv2d = `unfold2d` (the windows as a strided view, [N, C, kh, kw, OH, OW]) reshaped to
[N, G, Cg*kh*kw, OH*OW], multiplied by the weight as [G, Og, Cg*kh*kw]; the product is already
[N, G, Og, OH*OW], i.e. the output in NCHW order with no transpose. Its gradient is the matmul's
and `fold2d` (col2im). conv1d is conv2d over a height-1 image. conv3d stacks the kd strided
depth slices that each kernel depth reads as extra input channels (a copy kd times the input)
and runs one conv2d over every output depth as a batch: [N*OD, C*kd, H, W] with the weight as
[O, Cg*kd, kh, kw].
"""
from __future__ import annotations

import warnings

from ...ir import dtypes as dt
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import autocast as _ac
from ...tracer import functional as F
from ...tracer.creation import LEGACY
from ...tracer.opmath import half_dtype, round_to, to_float32
from ...tracer.tensor import Tensor
from ...tracer.composite_programs import composite
from .activation import _owned
from .int_args import int_arg, int_list, type_name
from .padding import pad as _pad

_AUTOCAST = _ac._LOCAL  # (bound once: a per-thread module's attributes read slowly)

__all__ = ["conv1d", "conv2d", "conv3d", "conv_tbc"]


def _ntuple(value, n: int, name: str, fn: str, pos: int | None) -> tuple:
    value = int_list(value, n, fn, name, pos)
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={list(value)}")
    return value


_CONV_SIGNATURES = (
    " * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, tuple of "
    "ints padding = 0, tuple of ints dilation = 1, int groups = 1)\n"
    " * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, str padding "
    "= \"valid\", tuple of ints dilation = 1, int groups = 1)\n")


def _conv_args(name: str, nd: int, args: tuple) -> tuple:
    """(stride, padding, dilation, groups) parsed as PyTorch's conv*d overloads parse them: a
    float, bool or None among them matches neither overload, which PyTorch reports as
    "invalid combination of arguments" listing the argument types (trailing defaults left
    out, as if they were not passed)."""
    input, weight, bias, stride, padding, dilation, groups = args
    try:
        stride = _ntuple(stride, nd, "stride", name, 4)
        dilation = _ntuple(dilation, nd, "dilation", name, 6)
        if not isinstance(padding, str):
            padding = _ntuple(padding, nd, "padding", name, 5)
        groups = int_arg(groups, name, "groups", 7)
    except TypeError:  # only int_list / int_arg raise it here
        given = list(args)
        for default in (1, 1, 0, 1):  # groups, dilation, padding, stride
            if len(given) > 3 and type(given[-1]) is int and given[-1] == default:
                given.pop()
            else:
                break
        got = ", ".join(type_name(a) for a in given)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n{_CONV_SIGNATURES}") from None
    return stride, padding, dilation, groups


def _type_name(t: Tensor) -> str:
    return "torch." + LEGACY[t._dtype].__name__


def _same_padding(kernel: tuple, dilation: tuple) -> tuple:
    """(left, extra right) per dim: PyTorch pads total = d * (k - 1), the odd one on the right."""
    left = tuple(d * (k - 1) // 2 for k, d in zip(kernel, dilation))
    extra = tuple(d * (k - 1) - 2 * lo for k, d, lo in zip(kernel, dilation, left))
    return left, extra


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
          groups: int, nd: int) -> Tensor:
    name = f"conv{nd}d"
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {list(weight.shape)}, but got {input.ndim}-"
                           f"dimensional input of size {list(input.shape)} instead")
    stride, padding, dilation, groups = _conv_args(
        name, nd, (input, weight, bias, stride, padding, dilation, groups))
    kernel = tuple(weight.shape[2:])
    extra = (0,) * nd
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            padding, extra = _same_padding(kernel, dilation)
            if any(extra):
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation "
                              "may require a zero-padded copy of the input be created",
                              stacklevel=3)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")

    unbatched = input.ndim == nd + 1
    x = F.unsqueeze(input, 0) if unbatched else input
    out_ch = weight.shape[0]
    if out_ch < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if out_ch % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{list(weight.shape)}] "
                           "instead")
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, "
                           f"but got {x.shape[1]} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_ch):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_ch} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    spatial = tuple(x.shape[2:])
    padded = tuple(s + 2 * p + e for s, p, e in zip(spatial, padding, extra))
    dilated = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(k > s for k, s in zip(dilated, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, dilated))}). Kernel size can't be greater "
                           "than actual input size")
    if x._dtype is not weight._dtype:
        raise RuntimeError(f"Input type ({_type_name(x)}) and weight type ({_type_name(weight)}) "
                           "should be the same or input should be a MKLDNN tensor and weight is "
                           "a dense tensor")
    if bias is not None and bias._dtype is not weight._dtype:
        raise RuntimeError(f"Input type ({_type_name(x)}) and bias type ({_type_name(bias)}) "
                           "should be the same")
    if any(extra):  # 'same' with an even dilated kernel: one more zero on the right
        pads = []
        for e in reversed(extra):
            pads += [0, e]
        x = _pad(x, pads)
    # float16/bfloat16: float32 products, sums and bias, one rounding (ATen's CPU convolution)
    h = half_dtype(x)
    x, w, b = to_float32(x), to_float32(weight), to_float32(bias)
    if nd == 1:  # a height-1 image
        x, w = F.unsqueeze(x, 2), F.unsqueeze(w, 2)
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    if nd == 3:
        out = _conv3d(x, w, b, stride, padding, dilation, groups)
    else:
        out = _conv2d(x, w, b, stride, padding, dilation, groups)
    if nd == 1:
        out = F.reshape(out, tuple(out.shape[:2]) + tuple(out.shape[3:]))
    if unbatched:
        out = F.reshape(out, tuple(out.shape[1:]))
    out = round_to(out, h)
    return A.label_recorded(_owned(out, input, weight, bias), "ConvolutionBackward0", input, weight, bias)


def _conv2d(x: Tensor, w: Tensor, bias, stride: tuple, padding: tuple, dilation: tuple,
            groups: int) -> Tensor:
    if _primitive(x):
        return D.apply("conv2d", [x, w] + ([] if bias is None else [bias]), {
            "stride": stride, "padding": padding, "dilation": dilation, "groups": groups})
    n = x.shape[0]
    out_ch, cg, kh, kw = w.shape
    cols = D.apply("unfold2d", [x], {"kernel": (kh, kw), "stride": stride, "padding": padding,
                                     "dilation": dilation, "pad_value": 0.0})
    oh, ow = cols.shape[4], cols.shape[5]
    k = cg * kh * kw
    cols = F.reshape(cols, (n, groups, k, oh * ow))  # the im2col copy
    wm = F.reshape(w, (groups, out_ch // groups, k))
    out = D.apply("matmul", [wm, cols], {})  # [N, G, Og, OH*OW]: NCHW order already
    out = F.reshape(out, (n, out_ch, oh, ow))
    if bias is not None:
        out = out + F.reshape(bias, (out_ch, 1, 1))
    return out


def _primitive(x: Tensor) -> bool:
    """Whether a convolution of x runs as the `conv2d` primitives (ir/conv_ops.py), which
    compute float32 and float64 (half precision: in float32, `_conv` rounds once); other
    dtypes take im2col + matmul."""
    return x._dtype in _PRIMITIVE_DTYPES


_PRIMITIVE_DTYPES = (dt.float32, dt.float64)


def _conv3d(x: Tensor, w: Tensor, bias, stride: tuple, padding: tuple, dilation: tuple,
            groups: int) -> Tensor:
    (sd, dd, pd), kd = (stride[0], dilation[0], padding[0]), w.shape[2]
    if pd:
        x = _pad(x, [0, 0, 0, 0, pd, pd])
    n, c, depth, h, wd = x.shape
    od = (depth - dd * (kd - 1) - 1) // sd + 1
    slices = [x[:, :, i * dd:i * dd + sd * (od - 1) + 1:sd] for i in range(kd)]
    x2 = F.permute(F.stack(slices, 3), (0, 2, 1, 3, 4, 5))  # [N, OD, C, kd, H, W]
    x2 = F.reshape(x2, (n * od, c * kd, h, wd))
    o, cg = w.shape[0], w.shape[1]
    w2 = F.reshape(w, (o, cg * kd) + tuple(w.shape[3:]))
    out = _conv2d(x2, w2, None, stride[1:], padding[1:], dilation[1:], groups)
    oh, ow = out.shape[2], out.shape[3]
    out = F.permute(F.reshape(out, (n, od, o, oh, ow)), (0, 2, 1, 3, 4))
    if bias is not None:
        out = out + F.reshape(bias, (o, 1, 1, 1))
    return out


def _check_args(fn: str, input, weight, bias) -> None:
    """PyTorch's TypeError for a non-tensor input, weight or (given) bias, before anything
    else (autocast's casts included) touches them."""
    D.check_tensor(input, fn, "input", 1)
    D.check_tensor(weight, fn, "weight", 2)
    if bias is not None:
        D.check_tensor(bias, fn, "bias", 3)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-d cross-correlation of input [N, C, L] (or [C, L]) with weight [O, C/groups, k]."""
    _check_args("conv1d", input, weight, bias)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("conv1d", conv1d, (input, weight, bias, stride, padding, dilation,
                                             groups), {})
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


@composite
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-d cross-correlation of input [N, C, H, W] (or [C, H, W]) with weight
    [O, C/groups, kh, kw]; padding is ints, 'valid' or 'same' (stride 1)."""
    _check_args("conv2d", input, weight, bias)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("conv2d", conv2d, (input, weight, bias, stride, padding, dilation,
                                             groups), {})
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)



def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-d cross-correlation of input [N, C, D, H, W] (or [C, D, H, W]) with weight
    [O, C/groups, kd, kh, kw]; padding is ints, 'valid' or 'same' (stride 1)."""
    _check_args("conv3d", input, weight, bias)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("conv3d", conv3d, (input, weight, bias, stride, padding, dilation,
                                             groups), {})
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """Time-batch-channel convolution: input [T, B, C_in], weight [K, C_in, C_out], bias
    [C_out] -> [T + 2 pad - K + 1, B, C_out]; a conv1d over [B, C_in, T]."""
    for k, (t, name) in enumerate(((input, "self"), (weight, "weight"), (bias, "bias"))):
        D.check_tensor(t, "conv_tbc", name, k + 1)
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)
