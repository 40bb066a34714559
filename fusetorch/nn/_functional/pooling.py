"""nn.functional: max, average and adaptive average pooling over `unfold2d` windows.

max_pool2d (and max_pool1d, a height-1 image) is the max_pool2d and max_pool2d_index
primitives (ir/pool_ops.py); adaptive max pooling is max_pool2d where its cells tile, else the
window_max primitives over a table of each cell's positions (`cell_table`), as fractional max
pooling is. Each picks, per window, the index PyTorch's CPU kernels pick: the last NaN if there
is one, else the first maximum, and the first element inside the input when every element is
-inf (never the padding), so the gradient goes where PyTorch sends it.
avg_pool2d sums each window and divides by PyTorch's divisor. ceil_mode's extra windows read
past the bottom/right edge: the input gets that extra padding explicitly. The 1-d forms pool a
height-1 image.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from ...ir import dtypes as dt
from ...ir import pool_ops
from ...tracer import autograd as A
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from ...tracer.composite_programs import composite
from .activation import _owned
from .int_args import int_arg, int_list, type_name
from .padding import pad as _pad

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool2d"]


def _pair(v, fn: str, arg: str, pos: int) -> tuple:
    v = int_list(v, 2, fn, arg, pos)
    if len(v) != 2:
        rule = {"stride": "either be omitted, a single int,",
                "dilation": "be either a single int,"}.get(arg, "either be a single int,")
        raise RuntimeError(f"{fn}: {arg} must {rule} or a tuple of two ints")
    return v


def _no_stride(stride) -> bool:
    """stride=None (or empty) means the kernel size."""
    return stride is None or isinstance(stride, (tuple, list)) and len(stride) == 0


_out_size = pool_ops.out_size


def _lowest(x: Tensor) -> float:
    """The padding value that never wins a max: -inf, or the integer type's minimum."""
    return pool_ops.lowest(x._dtype)


def _extra_padding(x: Tensor, kernel, stride, padding, dilation, out_hw, pad_value) -> Tensor:
    """x with ceil_mode's extra bottom/right padding, which its last windows read."""
    h, w = x.shape[2], x.shape[3]
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p))
             for o, s, d, k, n, p in zip(out_hw, stride, dilation, kernel, (h, w), padding)]
    if extra[0] or extra[1]:
        x = _pad(x, [0, extra[1], 0, extra[0]], value=pad_value)
    return x


def _windows(x: Tensor, kernel, stride, padding, dilation, out_hw, pad_value) -> Tensor:
    """[N, C, kh, kw, OH, OW] windows, with ceil_mode's extra bottom/right padding added."""
    x = _extra_padding(x, kernel, stride, padding, dilation, out_hw, pad_value)
    return D.apply("unfold2d", [x], {"kernel": kernel, "stride": stride, "padding": padding,
                                     "dilation": dilation, "pad_value": pad_value})


def _check_windows(x: Tensor, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kernel[0]} "
                           f"kW: {kernel[1]}")
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: "
                           f"{dilation[0]} dilationW: {dilation[1]}")
    c, h, w = x.shape[1], x.shape[2], x.shape[3]
    oh = _out_size(h, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = _out_size(w, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{oh}x{ow}). Output size is too small")
    return oh, ow


def _batched(input: Tensor, name: str) -> Tensor:
    if input.ndim not in (3, 4) or input.numel() == 0 and input.ndim == 3:
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    return F.unsqueeze(input, 0) if input.ndim == 3 else input


def _unbatch(r: Tensor, input: Tensor) -> Tensor:
    return _owned(F.reshape(r, tuple(r.shape[1:])), input) if input.ndim == 3 else r


# ---------------------------------------------------------------- max pooling

def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """(values, indices): indices into each flattened input plane, as PyTorch returns them
    (the max_pool2d and max_pool2d_index primitives, ir/pool_ops.py)."""
    x = _batched(input, "max_pool2d")
    kernel = _pair(kernel_size, "max_pool2d", "kernel_size", 2)
    stride = kernel if _no_stride(stride) else _pair(stride, "max_pool2d", "stride", 3)
    padding = _pair(padding, "max_pool2d", "padding", 4)
    dilation = _pair(dilation, "max_pool2d", "dilation", 5)
    _check_windows(x, kernel, stride, padding, dilation, ceil_mode)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation,
             "ceil_mode": bool(ceil_mode)}
    values = _owned(D.apply("max_pool2d", [x], attrs), input)
    if not return_indices:
        return _unbatch(values, input), None
    idx = D.apply("max_pool2d_index", [x], attrs)
    return _unbatch(values, input), _unbatch(idx, input)


def cell_table(size: tuple, cells: list) -> np.ndarray:
    """int64 [K, *out]: each window's flat input positions (row-major, the order PyTorch's
    kernels scan a window in), a window of fewer than K repeating its last position, for the
    window_max primitives (ir/pool_ops.py). `cells[d]` lists dim d's (start, stop) per output
    index."""
    windows = []
    for at in itertools.product(*(range(len(c)) for c in cells)):
        ranges = [range(*cells[d][i]) for d, i in enumerate(at)]
        windows.append([int(np.ravel_multi_index(q, size)) for q in itertools.product(*ranges)])
    k = max(len(w) for w in windows)
    table = np.array([w + w[-1:] * (k - len(w)) for w in windows], np.int64)
    return np.ascontiguousarray(table.T).reshape((k,) + tuple(len(c) for c in cells))


def window_max(x: Tensor, table: np.ndarray, return_indices: bool) -> tuple:
    """(values [N, C, *out], indices or None) of max pooling x [N, C, *spatial] over the
    windows of `table` ([K, *out] or [N, C, K, *out] flat positions)."""
    t = C.tensor(table if table.ndim == x.ndim + 1 else table[None, None], device=x.device)
    flat = F.flatten(x, 2)
    values = D.apply("window_max", [flat, t], {})
    return values, D.apply("window_max_index", [flat, t], {}) if return_indices else None


@composite
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over each kernel window of [N, C, H, W] (or [C, H, W]); stride defaults to the
    kernel size; with return_indices also the flat index of each maximum in its plane."""
    D.check_tensor(input, "max_pool2d", "input", 1)
    values, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation,
                                          ceil_mode, return_indices)
    return (values, idx) if return_indices else values


def _single(v, fn: str, arg: str, pos: int) -> int:
    v = int_list(v, 1, fn, arg, pos)
    if len(v) != 1:
        if fn == "max_pool1d":
            raise RuntimeError(f"max_pool1d() {arg} must be an int, list of ints or tuple of ints "
                               f"of size 1 but got size {len(v)}")
        raise RuntimeError(f"{fn}() argument '{arg}' should contain one int (got {len(v)})")
    return v[0]


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    k = _single(kernel_size, "max_pool1d", "kernel_size", 2)
    s = k if _no_stride(stride) else _single(stride, "max_pool1d", "stride", 3)
    p = _single(padding, "max_pool1d", "padding", 4)
    d = _single(dilation, "max_pool1d", "dilation", 5)
    for arg, v in (("kernel_size", k), ("stride", s)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {arg} must be greater than zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _out_size(input.shape[-1], k, s, p, d, ceil_mode)
    if out < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    x = F.unsqueeze(input, -2)
    values, idx = max_pool2d_with_indices(x, (1, k), (1, s), (0, p), (1, d), ceil_mode,
                                          return_indices)
    values = _owned(F.squeeze(values, -2), input)
    return values, (F.squeeze(idx, -2) if idx is not None else None)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over windows along the last dim of [N, C, L] (or [C, L])."""
    D.check_tensor(input, "max_pool1d", "input", 1)
    values, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation,
                                          ceil_mode, return_indices)
    return (values, idx) if return_indices else values


# ---------------------------------------------------------------- average pooling

def _divisors(hw, kernel, stride, padding, out_hw, count_include_pad: bool) -> np.ndarray:
    """PyTorch's divisor per output cell, in any number of spatial dims: the window clipped to
    the padded input (or, without count_include_pad, to the input itself)."""
    per_dim = []
    for n, k, s, p, o in zip(hw, kernel, stride, padding, out_hw):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        size = end - start
        if not count_include_pad:
            size = np.minimum(end, n) - np.maximum(start, 0)
        per_dim.append(size)
    return functools.reduce(np.multiply, np.ix_(*per_dim)).astype(np.float64)  # outer product


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over each kernel window of [N, C, H, W] (or [C, H, W]); padded zeros count in the
    mean when count_include_pad; divisor_override replaces the window size."""
    D.check_tensor(input, "avg_pool2d", "input", 1)
    if input.ndim < 3:
        lo, hi = -max(input.ndim, 1), max(input.ndim, 1) - 1
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got -3)")
    x = _batched(input, "avg_pool2d")
    kernel = _pair(kernel_size, "avg_pool2d", "kernel_size", 2)
    stride = kernel if _no_stride(stride) else _pair(stride, "avg_pool2d", "stride", 3)
    padding = _pair(padding, "avg_pool2d", "padding", 4)
    if divisor_override is not None:
        divisor_override = int_arg(divisor_override, "avg_pool2d", "divisor_override")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    oh, ow = _check_windows(x, kernel, stride, padding, (1, 1), ceil_mode)
    divisor = divisor_override
    if divisor is None:
        div = _divisors(x.shape[2:], kernel, stride, padding, (oh, ow), count_include_pad)
        divisor = kernel[0] * kernel[1] if (div == kernel[0] * kernel[1]).all() else None
    if divisor is not None and x._dtype in (dt.float32, dt.float64):
        # one primitive (ir/pool_ops.py): windows of one divisor, real floats
        x = _extra_padding(x, kernel, stride, padding, (1, 1), (oh, ow), 0)
        out = D.apply("avg_pool2d", [x], {"kernel": kernel, "stride": stride,
                                          "padding": padding, "divisor": float(divisor)})
        return _unbatch(A.label_recorded(out, "AvgPool2DBackward0", input), input)
    win = _windows(x, kernel, stride, padding, (1, 1), (oh, ow), 0)
    sums = F.sum(win, (2, 3))
    if divisor is not None:
        out = sums / divisor
    else:
        out = sums / C.tensor(div, dtype=sums.dtype if sums.dtype.is_floating_point
                              else None, device=input.device)
    if out._dtype is not input._dtype:  # integer inputs: PyTorch divides in the integer type
        out = D.cast(out, input._dtype)
    return _unbatch(A.label_recorded(out, "AvgPool2DBackward0", input), input)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows along the last dim of [N, C, L] (or [C, L])."""
    D.check_tensor(input, "avg_pool1d", "input", 1)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for avg_pool1d)")
    k = _single(kernel_size, "avg_pool1d", "kernel_size", 2)
    s = k if _no_stride(stride) else _single(stride, "avg_pool1d", "stride", 3)
    p = _single(padding, "avg_pool1d", "padding", 4)
    r = avg_pool2d(F.unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return _owned(F.squeeze(r, -2), input)


# ---------------------------------------------------------------- adaptive pooling

def _adaptive_size(output_size, hw: tuple, name: str) -> tuple:
    """(OH, OW) (or (OD, OH, OW) for 3 input sizes); None in a tuple keeps that input size."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != len(hw):
            raise RuntimeError(f"{name}: output_size must be {len(hw)}")
        size = [hw[i] if o is None else o for i, o in enumerate(output_size)]
        return int_list(size, len(hw), name, "output_size", 2)
    if isinstance(output_size, Tensor) and output_size.ndim > 0:
        return _adaptive_size(tuple(output_size), hw, name)
    if not isinstance(output_size, int):
        # PyTorch's Python wrapper takes len() of anything but a Python int (numpy ints and
        # 0-d tensors included), which fails before its argument parser is reached
        if isinstance(output_size, Tensor):
            raise TypeError("len() of a 0-d tensor")
        raise TypeError(f"object of type '{type_name(output_size)}' has no len()")
    return int_list(output_size, len(hw), name, "output_size", 2)


def _python_checks(input: Tensor, output_size) -> None:
    """The ValueError of PyTorch's Python wrapper (its _list_with_default), raised before
    anything else looks at the input."""
    if isinstance(output_size, (tuple, list)) and input.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _adaptive_mean(x: Tensor, dim: int, o: int) -> Tensor:
    """x averaged along `dim` over PyTorch's adaptive windows: output i averages input
    [floor(i*n/o), ceil((i+1)*n/o)). Equal windows are one reshape and a mean; otherwise one
    mean per window (not a product with an averaging matrix, whose zeros would spread a NaN
    to every output)."""
    n = x.shape[dim]
    if o == 0:  # no cells: an empty slice keeps the other dims (and the graph)
        return x[(slice(None),) * dim + (slice(0, 0),)]
    if n % o == 0:
        shape = tuple(x.shape)
        r = F.reshape(x, shape[:dim] + (o, n // o) + shape[dim + 1:])
        return F.sum(r, dim + 1) / (n // o)
    cells = []
    for i in range(o):
        start, end = (i * n) // o, -((-(i + 1) * n) // o)
        window = x[(slice(None),) * dim + (slice(start, end),)]
        cells.append(F.sum(window, dim, keepdim=True) / (end - start))
    return F.cat(cells, dim)


_HALF = (dt.float16, dt.bfloat16)


def _in_float32(pool, input: Tensor, size: tuple, grad_name: str) -> Tensor:
    """A float16/bfloat16 pooling computed in float32, rounded once, as ATen's 2-d CPU kernel
    sums and divides in its opmath type (the window sums rounded to half, then the division,
    put the mean an ulp off). Its 3-d kernel sums in half itself, element by element."""
    r = D.cast(pool(D.cast(input, dt.float32), size), input._dtype)
    return A.label_recorded(r, grad_name, input)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output size: window i spans
    [floor(i * H / OH), ceil((i + 1) * H / OH)) as in PyTorch."""
    D.check_tensor(input, "adaptive_avg_pool2d", "input", 1)
    _python_checks(input, output_size)
    if (output_size.__class__ is int and output_size == 1) or (
            isinstance(output_size, (tuple, list)) and list(output_size) == [1, 1]
            and not any(isinstance(o, bool) for o in output_size)):
        # ATen takes this one as a mean over the last two dims before its 3-d/4-d check: a
        # 2-d or 5-d input is pooled too, and a 1-d one is mean's IndexError (MeanBackward1)
        return F.mean(input, (-2, -1), keepdim=True)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{list(input.shape)}")
    h, w = input.shape[-2], input.shape[-1]
    oh, ow = _adaptive_size(output_size, (h, w), "adaptive_avg_pool2d")
    if oh < 0 or ow < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{{oh}, {ow}}}")
    if (oh, ow) == (1, 1):  # PyTorch computes this one as a mean (MeanBackward1)
        return F.mean(input, (-2, -1), keepdim=True)
    if input._dtype in _HALF:
        return _in_float32(adaptive_avg_pool2d, input, (oh, ow), "AdaptiveAvgPool2DBackward0")
    lead = tuple(input.shape[:-2])
    if oh and ow and h % oh == 0 and w % ow == 0:
        # equal windows: one reshape and a mean over the window dims
        r = F.reshape(input, lead + (oh, h // oh, ow, w // ow))
        r = F.sum(r, (-3, -1)) / ((h // oh) * (w // ow))
    else:
        r = _adaptive_mean(_adaptive_mean(input, input.ndim - 2, oh), input.ndim - 1, ow)
    return A.label_recorded(r, "AdaptiveAvgPool2DBackward0", input)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """adaptive_avg_pool2d's windows over the last three dims of [N, C, D, H, W] (or
    [C, D, H, W]), averaged one dim at a time (the windows of a dim do not depend on the
    others)."""
    D.check_tensor(input, "adaptive_avg_pool3d", "input", 1)
    _python_checks(input, output_size)
    if output_size == 1 or isinstance(output_size, (tuple, list)) and tuple(output_size) == (
            1, 1, 1):  # PyTorch computes this one as a mean over the last three dims, any rank
        return F.mean(input, (-3, -2, -1), keepdim=True)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    sizes = tuple(input.shape[-3:])
    out = _adaptive_size(output_size, sizes, "adaptive_avg_pool3d")
    if min(out) < 0:
        raise RuntimeError(f"adaptive_avg_pool3d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{{', '.join(map(str, out))}}}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"adaptive_avg_pool3d_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    r = input
    for k, (n, o) in enumerate(zip(sizes, out)):
        if n != o:
            r = _adaptive_mean(r, input.ndim - 3 + k, o)
    if r is input:
        r = F.clone(input)
    return A.label_recorded(r, "AdaptiveAvgPool3DBackward0", input)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    D.check_tensor(input, "adaptive_avg_pool1d", "input", 1)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_avg_pool1d() argument 'input' must be 2D or 3D, but got "
                           f"{list(input.shape)}")
    o = _single(output_size, "adaptive_avg_pool1d", "output_size", 2)
    r = adaptive_avg_pool2d(F.unsqueeze(input, -2), (1, o))
    return _owned(F.squeeze(r, -2), input)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max over PyTorch's adaptive windows (cell i spans [floor(i * H / OH),
    ceil((i + 1) * H / OH))), each window's index picked by PyTorch's rule as in max_pool2d
    (the last NaN, else the first maximum); with return_indices also that flat index."""
    D.check_tensor(input, "adaptive_max_pool2d", "input", 1)
    _python_checks(input, output_size)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{list(input.shape)}")
    h, w = input.shape[-2], input.shape[-1]
    oh, ow = _adaptive_size(output_size, (h, w), "adaptive_max_pool2d")
    if oh < 0 or ow < 0:
        shape = list(input.shape[:-2]) + [oh, ow]
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{oh if oh < 0 else ow}: {shape}")
    if oh and ow and h % oh == 0 and w % ow == 0:  # the windows tile: max_pool2d's graph
        r = max_pool2d(input, (h // oh, w // ow), return_indices=return_indices)
        A.label_recorded(r[0] if return_indices else r, "AdaptiveMaxPool2DBackward0", input)
        return r
    # varying windows: one window_max over a table of each cell's positions
    cells = [[((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]
             for n, o in ((h, oh), (w, ow))]
    x = input if input.ndim == 4 else F.unsqueeze(input, 0)
    values, idx = window_max(x, cell_table((h, w), cells), return_indices)
    if input.ndim == 3:
        values = F.squeeze(values, 0)
        idx = F.squeeze(idx, 0) if idx is not None else None
    values = A.label_recorded(_owned(values, input), "AdaptiveMaxPool2DBackward0", input)
    return (values, idx) if return_indices else values


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    o = _single(output_size, "adaptive_max_pool1d", "output_size", 2)
    r = adaptive_max_pool2d(F.unsqueeze(input, -2), (1, o), return_indices)
    if return_indices:
        return F.squeeze(r[0], -2), F.squeeze(r[1], -2)
    return F.squeeze(r, -2)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """(sum over each window of x^p)^(1/p)."""
    kh, kw = _pair(kernel_size, "avg_pool2d", "kernel_size", 2)
    out = avg_pool2d(input ** norm_type, (kh, kw), stride, 0, ceil_mode)
    return (F.sign(out) * F.relu(F.abs(out)) * (kh * kw)) ** (1.0 / norm_type)
