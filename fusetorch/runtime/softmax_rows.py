"""The CPU eager implementations of softmax and log_softmax for small arrays (ir/norm_ops.py):
one C call (templates/c/softmax_rows.c.j2) where numpy's reference makes five calls and three
temporaries. A loop's row of scores (an RNN's 57 classes) spent most of a log_softmax in those
calls' fixed costs.

Only arrays of up to `MAX_ELEMENTS` take the kernel: its loops are scalar (libm's exp one
element at a time), so past that numpy's vectorised exp wins back its call costs, and larger
inputs are `@composite`'s (tracer/softmax.py), whose programs fuse the composition. The VJP
primitives (softmax_grad, log_softmax_grad) stay numpy's: their reference is four calls, which
cost what one C call with three buffers does. One kernel per dtype, built through
`eager_kernels.cached_kernel` (its policy: the first sight builds, in a thread; until then,
without a compiler, under FUSETORCH_EAGER_COMPILE=0 or inside a compile trace, the numpy
reference runs). The kernel sums in order in double where numpy sums pairwise in the input's
dtype: the values agree to rounding, not bit for bit.
"""
from __future__ import annotations

import functools

import numpy as np

from . import eager_kernels

# the largest array the kernel computes (float32 rows on this machine: 0.56x numpy's time at 57
# elements, 0.7-0.8x at 256, even at 512-1024, 2.4x slower at 4000)
MAX_ELEMENTS = 512
_PTR = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]"}


def forward(reference, log_of: bool):
    """softmax (`log_of` False) or log_softmax of numpy arrays: the kernel where it applies,
    else `reference` (the op table's numpy implementation)."""
    def run(x, dim):
        k = _kernel(x)
        if k is None:
            return reference(x, dim)
        fn, ffi = k
        shape = x.shape
        outer, n, inner = _lanes(shape, dim)
        y = np.empty(shape, x.dtype)
        ptr = _PTR[x.dtype]
        fn(ffi.from_buffer(ptr, x), ffi.from_buffer(ptr, y), outer, n, inner, log_of)
        return y

    run.__wrapped__ = reference
    return run


@functools.lru_cache(maxsize=256)  # (a loop's rows repeat their shape)
def _lanes(shape: tuple, dim: int) -> tuple:
    """(outer, n, inner): the C-contiguous `shape` as [outer, n, inner] around `dim`."""
    outer = inner = 1
    for s in shape[:dim]:
        outer *= s
    for s in shape[dim + 1:]:
        inner *= s
    return outer, shape[dim], inner


def _kernel(x):
    """(function, ffi) for x's dtype where the kernel computes x (small, non-empty,
    C-contiguous, aligned float32/float64), else None."""
    if not (0 < x.size <= MAX_ELEMENTS and x.__class__ is np.ndarray and x.dtype in _PTR):
        return None
    flags = x.flags  # (a new flags object per look)
    if not (flags.c_contiguous and flags.aligned):
        return None
    key, build = _KINDS[x.dtype]
    return eager_kernels.cached_kernel(key, build)


def _build(dtype: np.dtype):
    t = eager_kernels.c_type(dtype)
    name = f"ft_softmax_rows_{t}"
    ctx = dict(t=t, name=name, acc="double", exp="expf" if t == "float" else "exp")
    built = eager_kernels.template_functions(
        "softmax_rows.c.j2", ctx, f"void {name}({t}*, {t}*, long, long, long, long);", (name,))
    if built is None:
        return False
    (fn,), ffi = built
    return fn, ffi


# per dtype: its cache key and builder (made once, not per call)
_KINDS = {d: (("softmax_rows", d), functools.partial(_build, d)) for d in _PTR}
