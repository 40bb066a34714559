"""nn.functional: conv_transpose1d/2d/3d, the adjoint of a convolution.

A transposed convolution is the input gradient of the convolution with the same weight: over
float32/float64 the `conv2d_grad_input` primitive (ir/conv_ops.py; C kernels on the CPU), whose
gradients are a convolution and a convolution's weight gradient. Otherwise (half precision,
output_padding >= stride) one batched matmul takes each input pixel to its window of output
contributions
([N, G, Og*kh*kw, H*W] = weight^T @ input), and `fold2d` (col2im) adds the overlapping windows
into the output image. So its own gradient is `unfold2d` + matmul, a plain convolution.
output_padding adds rows/columns at the bottom/right that only the padding crop would have
removed; conv_transpose1d is conv_transpose2d over a height-1 image, conv_transpose3d a sum of
2-d ones over the kernel's depth (`_conv_transpose3d`).
"""
from __future__ import annotations

from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.opmath import half_dtype, round_to, to_float32
from ...tracer.tensor import Tensor
from .activation import _owned
from .conv import _ntuple, _primitive, _type_name
from .int_args import int_arg
from .padding import pad as _pad
from ...tracer import autocast as _ac

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


def _out_sizes(spatial, kernel, stride, padding, output_padding, dilation) -> tuple:
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for n, k, s, p, op, d in zip(spatial, kernel, stride, padding, output_padding,
                                              dilation))


def _check(x: Tensor, weight: Tensor, bias, stride, padding, output_padding, groups, dilation,
           nd: int) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        # PyTorch reports the 1-d case as the height-1 2-d one
        names = ("depth", "height", "width") if nd == 3 else ("height", "width")
        parts = [((unit,) + t if nd == 1 else t)
                 for unit, t in ((0, output_padding), (1, stride), (1, dilation))]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + " ".join(f"{what}_{dim}: {v}" for what, t in zip(
                               ("output_padding", "stride", "dilation"), parts)
                               for dim, v in zip(names, t)))
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{list(weight.shape)}] "
                           "instead")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[0]} channels, but got "
                           f"{x.shape[1]} channels instead")
    out_ch = weight.shape[1] * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_ch):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"bias to be 1-dimensional with {out_ch} elements, but got bias of "
                           f"size {list(bias.shape)} instead")
    if x._dtype is not weight._dtype or bias is not None and bias._dtype is not weight._dtype:
        other = weight if x._dtype is not weight._dtype else bias
        raise RuntimeError(f"expected scalar type {_type_name(x)[6:].replace('Tensor', '')} "
                           f"but found {_type_name(other)[6:].replace('Tensor', '')}")


def _conv_transpose(input: Tensor, weight: Tensor, bias, stride, padding, output_padding,
                    groups: int, dilation, nd: int) -> Tensor:
    name = f"conv_transpose{nd}d"
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {name}, but got weight "
                           f"of size {list(weight.shape)}")
    # PyTorch names the position only of an argument given positionally; these are usually
    # given by keyword, so the messages leave it out
    stride = _ntuple(stride, nd, "stride", name, None)
    padding = _ntuple(padding, nd, "padding", name, None)
    output_padding = _ntuple(output_padding, nd, "output_padding", name, None)
    groups = int_arg(groups, name, "groups")
    dilation = _ntuple(dilation, nd, "dilation", name, None)
    unbatched = input.ndim == nd + 1
    x = F.unsqueeze(input, 0) if unbatched else input
    _check(x, weight, bias, stride, padding, output_padding, groups, dilation, nd)
    kernel = tuple(weight.shape[2:])
    out = _out_sizes(tuple(x.shape[2:]), kernel, stride, padding, output_padding, dilation)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: "
                           f"({' x '.join(str(s) for s in x.shape[2:])}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, out))}). Output size is too small")
    # float16/bfloat16: float32 products, sums and bias, one rounding (ATen's CPU convolution)
    h = half_dtype(x)
    x, w, b = to_float32(x), to_float32(weight), to_float32(bias)
    if nd == 1:  # a height-1 image
        x, w = F.unsqueeze(x, 2), F.unsqueeze(w, 2)
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
        output_padding = (0,) + output_padding
    if nd == 3:
        r = _conv_transpose3d(x, w, stride, padding, output_padding, groups, dilation)
    else:
        r = _conv_transpose2d(x, w, stride, padding, output_padding, groups, dilation)
    if b is not None:
        r = r + F.reshape(b, (b.shape[0],) + (1,) * (r.ndim - 2))
    if nd == 1:
        r = F.reshape(r, tuple(r.shape[:2]) + tuple(r.shape[3:]))
    if unbatched:
        r = F.reshape(r, tuple(r.shape[1:]))
    r = round_to(r, h)
    return A.label_recorded(_owned(r, input, weight, bias), "ConvolutionBackward0", input, weight, bias)


def _conv_transpose2d(x: Tensor, w: Tensor, stride, padding, output_padding, groups: int,
                      dilation) -> Tensor:
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    size = _out_sizes((h, wd), (kh, kw), stride, padding, output_padding, dilation)
    if _primitive(x) and all(op < s for op, s in zip(output_padding, stride)):
        # the input gradient of the convolution of an image of `size` (ir/conv_ops.py)
        return D.apply("conv2d_grad_input", [x, w], {
            "stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation),
            "groups": groups, "size": size})
    cig = cin // groups
    wt = F.transpose(F.reshape(w, (groups, cig, cog * kh * kw)), 1, 2)  # [G, Og*kh*kw, Cg]
    cols = D.apply("matmul", [wt, F.reshape(x, (n, groups, cig, h * wd))], {})
    cols = F.reshape(cols, (n, groups * cog, kh, kw, h, wd))
    attrs = {"kernel": (kh, kw), "stride": tuple(stride), "dilation": tuple(dilation)}
    if all(op < s for op, s in zip(output_padding, stride)):
        # the padded output holds exactly the h x w windows: fold straight into it
        return D.apply("fold2d", [cols], dict(attrs, size=size, padding=tuple(padding)))
    # output_padding >= stride (allowed when below the dilation): fold the whole extent, then
    # crop the padding and add output_padding's zeros
    full = _out_sizes((h, wd), (kh, kw), stride, (0, 0), (0, 0), dilation)
    r = D.apply("fold2d", [cols], dict(attrs, size=full, padding=(0, 0)))
    (ph, pw), (oph, opw) = padding, output_padding
    return _pad(r, [-pw, opw - pw, -ph, oph - ph])


def _conv_transpose3d(x: Tensor, w: Tensor, stride, padding, output_padding, groups: int,
                      dilation) -> Tensor:
    """Over depth, a sum of 2-d transposed convolutions: kernel depth a takes input depth i to
    output depth i * stride - padding + a * dilation. Each slice's planes are convolved at
    once (depth folded into the batch), spread `stride` apart with zeros and shifted to their
    offset; the sum over a is cropped to the padding and output_padding."""
    n, cin, d = x.shape[:3]
    kd = w.shape[2]
    (sd, *s2), (pd, *p2), (od, *o2), (dd, *d2) = stride, padding, output_padding, dilation
    planes = F.reshape(F.transpose(x, 1, 2), (n * d, cin) + tuple(x.shape[3:]))
    full = (d - 1) * sd + dd * (kd - 1) + 1
    total = None
    for a in range(kd):
        y = _conv_transpose2d(planes, w[:, :, a], tuple(s2), tuple(p2), tuple(o2), groups,
                              tuple(d2))
        y = F.transpose(F.reshape(y, (n, d) + tuple(y.shape[1:])), 1, 2)  # [N, Cout, D, OH, OW]
        if sd > 1:  # input depth i lands at i * sd
            y = _pad(F.unsqueeze(y, 3), [0, 0, 0, 0, 0, sd - 1])
            y = F.reshape(y, tuple(y.shape[:2]) + (d * sd,) + tuple(y.shape[4:]))
        y = _pad(y, [0, 0, 0, 0, a * dd, full - d * sd - a * dd])
        total = y if total is None else total + y
    return _pad(total, [0, 0, 0, 0, -pd, od - pd])


@_ac.op("conv_transpose1d")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-d transposed convolution of input [N, C_in, L] (or [C_in, L]) with weight
    [C_in, C_out/groups, k]."""
    D.check_tensor(input, "conv_transpose1d", "input", 1)
    D.check_tensor(weight, "conv_transpose1d", "weight", 2)
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1)


@_ac.op("conv_transpose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-d transposed convolution ("deconvolution") of input [N, C_in, H, W] (or [C_in, H, W])
    with weight [C_in, C_out/groups, kh, kw]."""
    D.check_tensor(input, "conv_transpose2d", "input", 1)
    D.check_tensor(weight, "conv_transpose2d", "weight", 2)
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2)


@_ac.op("conv_transpose3d")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-d transposed convolution of input [N, C_in, D, H, W] (or [C_in, D, H, W]) with weight
    [C_in, C_out/groups, kd, kh, kw]."""
    D.check_tensor(input, "conv_transpose3d", "input", 1)
    D.check_tensor(weight, "conv_transpose3d", "weight", 2)
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3)
