"""nn.functional: unfold (im2col) and fold (col2im) in PyTorch's [N, C*kh*kw, L] layout.

Both are the `unfold2d` / `fold2d` primitives with the window dims merged: unfold2d's
[N, C, kh, kw, OH, OW] flattens to [N, C*kh*kw, OH*OW] (the copy), and fold reshapes its input
back into windows before `fold2d` sums them. Each is the other's gradient.
"""
from __future__ import annotations

from ...ir import dtypes as dt
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .activation import _float_only, _owned
from .int_args import int_list

__all__ = ["unfold", "fold"]


def _pair(v, fn: str, name: str, pos: int) -> tuple:
    if isinstance(v, Tensor):  # PyTorch's _pair iterates a tensor: a 0-d one is a TypeError
        if v.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        v = tuple(v)
    elif not isinstance(v, (tuple, list)):
        v = (v, v)  # PyTorch's message then names element 0
    if len(v) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return int_list(v, 2, fn, name, pos)


def _check_args(kernel, dilation, padding, stride) -> None:
    for name, (a, b), short, ok in (("kernel size", kernel, "kernel", lambda v: v > 0),
                                    ("dilation", dilation, "dilation", lambda v: v > 0),
                                    ("padding", padding, "pad", lambda v: v >= 0),
                                    ("stride", stride, "stride", lambda v: v > 0)):
        if not (ok(a) and ok(b)):
            rule = "be non-negative" if name == "padding" else "be greater than zero"
            raise RuntimeError(f"{name} should {rule}, but got {short}_height: {a} "
                               f"{short}_width: {b}")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding blocks of input [N, C, H, W] (or [C, H, W]) as columns [N, C*kh*kw, L]."""
    D.check_tensor(input, "im2col", "input", 1)
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[1:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           "other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    kernel = _pair(kernel_size, "im2col", "kernel_size", 2)
    dilation = _pair(dilation, "im2col", "dilation", 3)
    padding = _pair(padding, "im2col", "padding", 4)
    stride = _pair(stride, "im2col", "stride", 5)
    _check_args(kernel, dilation, padding, stride)
    if input._dtype is dt.bool_:  # PyTorch takes bool (0 and 1 are exact in float32)
        return D.cast(unfold(D.cast(input, dt.float32), kernel, dilation, padding, stride),
                      dt.bool_)
    _float_only(input, "im2col_out_cpu")
    x = F.unsqueeze(input, 0) if input.ndim == 3 else input
    n, c, h, w = x.shape
    blocks = [(s + 2 * p - d * (k - 1) - 1) // st + 1
              for s, p, d, k, st in zip((h, w), padding, dilation, kernel, stride)]
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the "
                           f"array of sliding blocks as ({blocks[0]}, {blocks[1]}), but its "
                           "components must be at least one.")
    cols = D.apply("unfold2d", [x], {"kernel": kernel, "stride": stride, "padding": padding,
                                     "dilation": dilation, "pad_value": 0.0})
    r = F.reshape(cols, (n, c * kernel[0] * kernel[1], blocks[0] * blocks[1]))
    if input.ndim == 3:
        r = F.reshape(r, tuple(r.shape[1:]))
    return _owned(r, input)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns [N, C*kh*kw, L] (or [C*kh*kw, L]) back into an image [N, C, *output_size]
    (overlapping positions add up)."""
    if input.ndim not in (2, 3) or any(s == 0 for s in input.shape[1:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    size = _pair(output_size, "col2im", "output_size", 2)
    kernel = _pair(kernel_size, "col2im", "kernel_size", 3)
    dilation = _pair(dilation, "col2im", "dilation", 4)
    padding = _pair(padding, "col2im", "padding", 5)
    stride = _pair(stride, "col2im", "stride", 6)
    _check_args(kernel, dilation, padding, stride)
    if input._dtype is dt.bool_:  # PyTorch takes bool: overlapping Trues add up to True
        summed = fold(D.cast(input, dt.float32), size, kernel, dilation, padding, stride)
        return D.binary("ne", summed, 0)
    _float_only(input, "col2im_out_cpu")
    x = F.unsqueeze(input, 0) if input.ndim == 2 else input
    n, ck, length = x.shape
    kk = kernel[0] * kernel[1]
    if ck % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and "
                           f"kernel_size={kernel}.")
    blocks = [(s + 2 * p - d * (k - 1) - 1) // st + 1
              for s, p, d, k, st in zip(size, padding, dilation, kernel, stride)]
    if blocks[0] < 1 or blocks[1] < 1 or blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                           f"size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={length}.")
    cols = F.reshape(x, (n, ck // kk) + kernel + tuple(blocks))
    r = D.apply("fold2d", [cols], {"size": size, "kernel": kernel, "stride": stride,
                                   "padding": padding, "dilation": dilation})
    if input.ndim == 2:
        r = F.reshape(r, tuple(r.shape[1:]))
    return r
