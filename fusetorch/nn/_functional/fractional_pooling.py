"""nn.functional: fractional max pooling (Graham, 2014) in 2 and 3 dims.

Each plane pools windows of the kernel's size that start at pseudo-random offsets: per spatial
dim, PyTorch's `generate_intervals` turns one uniform sample u into the starts
`int((i + u) * alpha) - int(u * alpha)` with alpha = (input - kernel) / (output - 1), computed
in the input's floating type, and the last start `input - kernel`. The samples are
`_random_samples` [N, C, dims] (drawn with `rand` when not given; PyTorch's order: the 2-d form
reads sample 0 for the width and 1 for the height, the 3-d form 0, 1, 2 for time, height,
width). The starts are data, so the windows are a host-built table of flat positions for the
window_max primitives (ir/pool_ops.py: max pooling's pick, the first maximum or the last NaN),
so gradients go where PyTorch sends them; reading the samples is a graph break when
compiling.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import dtypes as DT
from ...tracer import autograd as A
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .int_args import int_list
from .pooling import window_max

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _intervals(sample: np.ndarray, n: int, o: int, k: int, ftype) -> np.ndarray:
    """[..., o] window starts for samples [...] (PyTorch's generate_intervals, in `ftype`)."""
    starts = np.empty(sample.shape + (o,), np.int64)
    if o > 1:
        alpha = ftype(n - k) / ftype(o - 1)
        i = np.arange(o - 1, dtype=ftype)
        u = sample.astype(ftype)[..., None]
        starts[..., :-1] = (((i + u) * alpha).astype(np.int64)
                            - (u * alpha).astype(np.int64))
    if o > 0:
        starts[..., -1] = n - k
    return starts


def _fractional(input: Tensor, kernel_size, output_size, output_ratio, samples, nd: int,
                return_indices: bool):
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    spatial = tuple(input.shape[-nd:]) if input.ndim >= nd else ()
    if output_size is None:
        if len(output_ratio) > nd:  # PyTorch's wrapper: a float ratio has no len() here
            raise ValueError(f"{name} requires output_ratio to either be a single Int or "
                             "tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else \
            (output_ratio,) * nd
        output_size = [int(n * r) for n, r in zip(spatial, ratio)]
    kernel = tuple(int_list(kernel_size, nd, name, "kernel_size", 2))
    out = int_list(output_size, nd, name, "output_size", 3)
    if len(kernel) != nd or len(out) != nd:
        which = "kernel_size" if len(kernel) != nd else "output_size"
        raise RuntimeError(f"{name}: {which} must either be a single Int or tuple of Ints")
    batched = input.ndim == nd + 2
    if samples is None:
        n_batch = input.shape[0] if batched else 1
        samples = C.rand(n_batch, input.shape[-nd - 1], nd, dtype=input.dtype,
                         device=input.device)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"check_uniform_bounds" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    if samples._dtype is not input._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    n_batch = input.shape[0] if batched else 1
    if samples.ndim != 3 or samples.shape[0] < n_batch or samples.shape[2] != nd:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    dims = ("time", "height", "width")[3 - nd:]
    for d, n, k, o in zip(dims, spatial, kernel, out):
        if k <= 0:
            raise RuntimeError(f"{name}(): kernel_size must be greater than zero, but got {k}")
        if o + k - 1 > n:
            suffix = "_out" if nd == 3 else ""
            raise RuntimeError(f"{name}{suffix}(): pool {d} {k} too large relative to input "
                               f"{d} {n}")
    x = input if batched else F.unsqueeze(input, 0)
    n, c = x.shape[0], x.shape[1]
    u = samples.detach().cpu()  # [N, C, nd]: data, read on the host (bfloat16 as float32)
    u = (u.float() if u._dtype is DT.bfloat16 else u).numpy()[:n, :c]
    ftype = np.float64 if input._data.dtype.itemsize == 8 else np.float32
    # the 2-d form reads sample 0 for the width; the 3-d form in dim order
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_intervals(u[..., order[i]], spatial[i], out[i], kernel[i], ftype)
              for i in range(nd)]  # each [N, C, o_i]
    strides = [math.prod(spatial[i + 1:]) for i in range(nd)]
    flat = np.zeros((n, c) + (1,) * nd + tuple(out), np.int64)
    for i in range(nd):
        # position along dim i: start[o_i] + w_i, at window axis i and output axis nd + i
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + nd + i] = out[i]
        offs = [1] * (2 * nd)
        offs[i] = kernel[i]
        pos = starts[i].reshape(shape) + np.arange(kernel[i]).reshape([1, 1] + offs)
        flat = flat + pos * strides[i]
    flat = flat.reshape(n, c, math.prod(kernel), *out)
    values, idx = window_max(x, flat.reshape((n, c, math.prod(kernel)) + tuple(out)),
                             return_indices)
    if not batched:
        values = F.squeeze(values, 0)
        idx = F.squeeze(idx, 0) if idx is not None else None
    return A.label_recorded(values, f"FractionalMaxPool{nd}DBackward0", input), idx


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None):
    """(values, indices) of fractional max pooling over [N, C, H, W] (or [C, H, W])."""
    D.check_tensor(input, "fractional_max_pool2d", "input", 1)
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2, True)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """Max over kernel-sized windows at pseudo-random starts, to `output_size` (or the input's
    size times `output_ratio`)."""
    D.check_tensor(input, "fractional_max_pool2d", "input", 1)
    values, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples,
                              2, return_indices)
    return (values, idx) if return_indices else values


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None):
    """(values, indices) of fractional max pooling over [N, C, T, H, W] (or [C, T, H, W])."""
    D.check_tensor(input, "fractional_max_pool3d", "input", 1)
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3, True)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """The 3-d form of fractional_max_pool2d."""
    D.check_tensor(input, "fractional_max_pool3d", "input", 1)
    values, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples,
                              3, return_indices)
    return (values, idx) if return_indices else values
