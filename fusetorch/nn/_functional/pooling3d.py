"""nn.functional: 3-d pooling (max, average, adaptive, power-average), 1-d power-average
pooling, and max unpooling in 1, 2 and 3 dims.

Max pooling over volumes is the max_pool3d primitives (ir/pool_ops.py: max_pool2d's pick, the
last NaN, else the first maximum, else the first element inside the input); adaptive max
pooling over cells that do not tile is the window_max primitives over a table of the cells'
positions (`pooling.cell_table`). Average pooling sums zero-padded windows and divides by
PyTorch's divisor per output cell. Max unpooling scatters each value to its index in a zero
output plane (its gradient gathers), after a `check` that every index is inside the plane.
"""
from __future__ import annotations

import math

import numpy as np

from ...tracer import autograd as A
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer import functional_shape as FS
from ...tracer.tensor import Tensor
from .activation import _owned
from .int_args import int_arg, int_list
from .padding import pad as _pad
from .pooling import (_divisors, _no_stride, _out_size, _python_checks, avg_pool1d,
                      cell_table, window_max)

__all__ = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]

_DIMS = ("T", "H", "W")


def _triple(v, fn: str, arg: str, pos: int) -> tuple:
    v = int_list(v, 3, fn, arg, pos)
    if len(v) != 3:
        either = "either " if fn.startswith("max") else ""  # PyTorch's two wordings
        rule = {"stride": f"{either}be omitted, a single int,",
                "dilation": "be either a single int,"}.get(arg, f"{either}be a single int,")
        raise RuntimeError(f"{fn}: {arg} must {rule} or a tuple of three ints")
    return tuple(v)


def _batched(input: Tensor) -> Tensor:
    if input.ndim not in (4, 5) or input.numel() == 0 and input.ndim == 4:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    return F.unsqueeze(input, 0) if input.ndim == 4 else input


def _unbatch(r: Tensor, input: Tensor) -> Tensor:
    return _owned(F.reshape(r, tuple(r.shape[1:])), input) if input.ndim == 4 else r


def _geometry(x: Tensor, kernel, stride, padding, dilation, ceil_mode: bool,
              check_input_size: bool = False) -> tuple:
    """Output sizes (OD, OH, OW), after PyTorch's pool3d_shape_check in its order."""
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got "
                           + " ".join(f"k{d}: {k}" for d, k in zip(_DIMS, kernel)))
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero, but got "
                           + " ".join(f"dilation{d}: {v}" for d, v in zip(_DIMS, dilation)))
    size = tuple(x.shape[2:])
    if check_input_size and any(n < k for n, k in zip(size, kernel)):
        raise RuntimeError("input image (" + " ".join(f"{d}: {n}" for d, n in zip(_DIMS, size))
                           + ") smaller than kernel size ("
                           + " ".join(f"k{d}: {k}" for d, k in zip(_DIMS, kernel)) + ")")
    for k, p, d in zip(kernel, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    out = tuple(_out_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(size, kernel, stride, padding, dilation))
    if min(out) < 1:
        c = x.shape[1]
        raise RuntimeError(f"Given input size: ({c}x{'x'.join(map(str, size))}). Calculated "
                           f"output size: ({c}x{'x'.join(map(str, out))}). Output size is too "
                           "small")
    return out


def _windows(x: Tensor, kernel, stride, padding, dilation, out, pad_value) -> Tensor:
    """[N, C, kd*kh*kw, OD, OH, OW]: each kernel position's strided slice of the padded input
    (ceil_mode's extra windows read padding past the far edges too)."""
    size = tuple(x.shape[2:])
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p))
             for o, s, d, k, n, p in zip(out, stride, dilation, kernel, size, padding)]
    pads = []
    for p, e in zip(reversed(padding), reversed(extra)):
        pads += [p, p + e]
    if any(pads):
        x = _pad(x, pads, value=pad_value)
    slices = []
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            for c in range(kernel[2]):
                key = (slice(None), slice(None)) + tuple(
                    slice(i * d, i * d + (o - 1) * s + 1, s)
                    for i, d, o, s in zip((a, b, c), dilation, out, stride))
                slices.append(F.unsqueeze(x[key], 2))
    return F.cat(slices, 2)


# ---------------------------------------------------------------- max pooling

def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """(values, indices): indices into each flattened input volume, as PyTorch returns them
    (the max_pool3d and max_pool3d_index primitives, ir/pool_ops.py)."""
    D.check_tensor(input, "max_pool3d", "input", 1)
    x = _batched(input)
    kernel = _triple(kernel_size, "max_pool3d", "kernel_size", 2)
    stride = kernel if _no_stride(stride) else _triple(stride, "max_pool3d", "stride", 3)
    padding = _triple(padding, "max_pool3d", "padding", 4)
    dilation = _triple(dilation, "max_pool3d", "dilation", 5)
    _geometry(x, kernel, stride, padding, dilation, ceil_mode)  # (PyTorch's checks)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation,
             "ceil_mode": bool(ceil_mode)}
    values = _owned(D.apply("max_pool3d", [x], attrs), input)
    if not return_indices:
        return _unbatch(values, input), None
    return _unbatch(values, input), _unbatch(D.apply("max_pool3d_index", [x], attrs), input)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over each kernel window of [N, C, D, H, W] (or [C, D, H, W]); stride defaults to the
    kernel size; with return_indices also the flat index of each maximum in its volume."""
    values, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation,
                                          ceil_mode, return_indices)
    return (values, idx) if return_indices else values


# ---------------------------------------------------------------- average pooling

def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over each kernel window of [N, C, D, H, W] (or [C, D, H, W]); padded zeros count
    when count_include_pad; divisor_override replaces the window size."""
    D.check_tensor(input, "avg_pool3d", "input", 1)
    x = _batched(input)
    kernel = _triple(kernel_size, "avg_pool3d", "kernel_size", 2)
    stride = kernel if _no_stride(stride) else _triple(stride, "avg_pool3d", "stride", 3)
    padding = _triple(padding, "avg_pool3d", "padding", 4)
    if divisor_override is not None:
        divisor_override = int_arg(divisor_override, "avg_pool3d", "divisor_override")
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    out = _geometry(x, kernel, stride, padding, (1, 1, 1), ceil_mode, check_input_size=True)
    sums = F.sum(_windows(x, kernel, stride, padding, (1, 1, 1), out, 0), 2)
    if divisor_override is not None:
        r = sums / divisor_override
    else:
        div = _divisors(tuple(x.shape[2:]), kernel, stride, padding, out, count_include_pad)
        if (div == math.prod(kernel)).all():
            r = sums / math.prod(kernel)
        else:
            r = sums / C.tensor(div, dtype=sums.dtype if sums.dtype.is_floating_point else None,
                                device=input.device)
    if r._dtype is not input._dtype:  # integer inputs: PyTorch divides in the integer type
        r = D.cast(r, input._dtype)
    return _unbatch(A.label_recorded(r, "AvgPool3DBackward0", input), input)


# ---------------------------------------------------------------- adaptive pooling

def _adaptive_size3(output_size, size: tuple, name: str, wording: str) -> tuple:
    """(OD, OH, OW); None in a triple keeps that input size. `wording` is how PyTorch's
    message for a wrong length goes on after the function's name (it differs per pool)."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 3:
            raise RuntimeError(f"{name}{wording} must be 3")
        sizes = [size[i] if o is None else o for i, o in enumerate(output_size)]
        return tuple(int_list(sizes, 3, name, "output_size", 2))
    if isinstance(output_size, Tensor) and output_size.ndim > 0:
        return _adaptive_size3(tuple(output_size), size, name, wording)
    return tuple(int_list(output_size, 3, name, "output_size", 2))


def _cells(n: int, o: int) -> list:
    """PyTorch's adaptive windows: cell i spans [floor(i*n/o), ceil((i+1)*n/o))."""
    return [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """(values, indices) of max pooling over PyTorch's adaptive windows; each window's index
    by max_pool3d's rule, indices into each flattened input volume."""
    D.check_tensor(input, "adaptive_max_pool3d", "input", 1)
    _python_checks(input, output_size)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(input.shape)}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"adaptive_max_pool3d_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    size = tuple(input.shape[-3:])
    out = _adaptive_size3(output_size, size, "adaptive_max_pool3d",
                          "(): internal error: output_size.size()")
    for i in range(1, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"adaptive_max_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(input.shape)} "
                               f"with dimension {i} being empty")
    shape = tuple(input.shape[:-3]) + out
    if min(out) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                           f"{list(shape)}")
    if 0 in out:  # an empty result, still a function of the input for autograd
        v = F.reshape(F.flatten(input, -3)[..., :0], shape)
        i = C.tensor(np.zeros(shape, dtype=np.int64), device=input.device) if return_indices \
            else None
        return A.label_recorded(v, "AdaptiveMaxPool3DBackward0", input), i
    if all(n % o == 0 for n, o in zip(size, out)):  # the windows tile: max_pool3d
        kernel = tuple(n // o for n, o in zip(size, out))
        values, idx = max_pool3d_with_indices(input, kernel, return_indices=return_indices)
        return A.label_recorded(values, "AdaptiveMaxPool3DBackward0", input), idx
    x = input if input.ndim == 5 else F.unsqueeze(input, 0)
    cells = [_cells(n, o) for n, o in zip(size, out)]
    v, i = window_max(x, cell_table(size, cells), return_indices)
    v = _unbatch(v, input)
    i = _unbatch(i, input) if return_indices else None
    return A.label_recorded(v, "AdaptiveMaxPool3DBackward0", input), i


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of [N, C, D, H, W] (or [C, D, H, W]) to a fixed output size."""
    values, idx = adaptive_max_pool3d_with_indices(input, output_size, return_indices)
    return (values, idx) if return_indices else values


# ---------------------------------------------------------------- power-average pooling

def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """(sum over each window of x^p)^(1/p) along the last dim, as PyTorch computes it."""
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (F.sign(out) * F.relu(F.abs(out)) * kernel_size) ** (1.0 / norm_type)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """(sum over each 3-d window of x^p)^(1/p)."""
    kd, kh, kw = _triple(kernel_size, "avg_pool3d", "kernel_size", 2)
    out = avg_pool3d(input ** norm_type, (kd, kh, kw), stride, 0, ceil_mode)
    return (F.sign(out) * F.relu(F.abs(out)) * (kd * kh * kw)) ** (1.0 / norm_type)


# ---------------------------------------------------------------- max unpooling

def _unpool_output_size(input: Tensor, kernel, stride, padding, output_size) -> tuple:
    """PyTorch's `_unpool_output_size`: the default size, or a requested one within a stride
    of it."""
    nd = len(kernel)
    default = [(input.shape[-nd + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        return tuple(default)
    output_size = list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be '
                             f"between {lo} and {hi})")
    return tuple(int(s) for s in output_size)


def _max_unpool(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size,
                nd: int) -> Tensor:
    name = f"max_unpool{nd}d"
    D.check_tensor(input, name, "input", 1)
    D.check_tensor(indices, name, "indices", 2)
    kernel = tuple(int_list(kernel_size, nd, name, "kernel_size", 3))
    stride = kernel if stride is None else tuple(int_list(stride, nd, name, "stride", 4))
    padding = tuple(int_list(padding, nd, name, "padding", 5))
    size = _unpool_output_size(input, kernel, stride, padding, output_size)
    dims = max(nd, 2)  # the 1-d form is the 2-d one over a width-1 plane, as in PyTorch
    if input.ndim not in (dims + 1, dims + 2) and nd > 1 or nd == 1 and input.ndim not in (2, 3):
        raise RuntimeError(f"Input to max_unpooling{dims}d should be a {dims + 1}d or "
                           f"{dims + 2}d Tensor, but got a tensor with {input.ndim} dimensions.")
    if indices._dtype.name != "int64":
        # PyTorch's 3-d check says less
        raise RuntimeError("elements in indices should be type int64" + (
            f" but got: {D._torch_name(indices._dtype)}" if nd < 3 else ""))
    if tuple(indices.shape) != tuple(input.shape):
        unit = [1] if nd == 1 else []  # the 1-d form is the 2-d one over a width-1 plane
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape) + unit}) but got indices tensor with shape: "
                           f"{list(indices.shape) + unit}")
    spatial = nd
    lead = tuple(input.shape[:-spatial])
    plane = math.prod(size)
    x = F.reshape(input, lead + (-1,))
    idx = F.reshape(indices, lead + (-1,))
    word = "x".join(map(str, size if nd > 1 else size + (1,)))
    idx = D.check_values(idx, f"Found an invalid max index: {{value}} (output volumes are of "
                              f"size {word})", lo=0, hi=plane)
    zeros = C.zeros(lead + (plane,), dtype=input.dtype, device=input.device)
    r = FS.scatter(zeros, -1, idx, x)
    r = F.reshape(r, lead + size)
    return A.label_recorded(_owned(r, input), f"MaxUnpool{dims}DBackward0", input)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The inverse of max_pool1d where it kept a value: each value of [N, C, L] (or [C, L])
    written at its index into a zero [N, C, L_out]."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The inverse of max_pool2d where it kept a value: each value written at its flat index
    into a zero [N, C, H_out, W_out]."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The inverse of max_pool3d where it kept a value: each value written at its flat index
    into a zero [N, C, D_out, H_out, W_out]."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
