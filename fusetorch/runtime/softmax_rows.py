"""The CPU eager implementations of softmax, log_softmax and their VJP primitives for small
arrays (ir/norm_ops.py): one C call each (templates/c/softmax_rows.c.j2) where numpy's
reference makes five calls and three temporaries. A loop's row of scores (an RNN's 57
classes) spent most of a log_softmax in those calls' fixed costs.

Only arrays under `POLICY.min_elements` take the kernel: larger ones are `@composite`'s
(tracer/softmax.py), whose programs fuse the composition. One kernel per dtype, built through
`eager_kernels.cached_kernel` (its policy: the first sight builds, in a thread; until then,
without a compiler, under FUSETORCH_EAGER_COMPILE=0 or inside a compile trace, the numpy
reference runs). The kernel sums in order in double where numpy sums pairwise in the input's
dtype: the values agree to rounding, not bit for bit.
"""
from __future__ import annotations

import numpy as np

from .._policy import POLICY
from . import eager_kernels

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def forward(reference, log_of: bool):
    """softmax (`log_of` False) or log_softmax of numpy arrays: the kernel where it applies,
    else `reference` (the op table's numpy implementation)."""
    def run(x, dim):
        k = _kernels(x)
        if k is None:
            return reference(x, dim)
        fwd, _, ffi = k
        outer, n, inner = _lanes(x.shape, dim)
        y = np.empty(x.shape, x.dtype)
        ptr = _PTR[x.dtype]
        fwd(ffi.from_buffer(ptr, x), ffi.from_buffer(ptr, y), outer, n, inner, log_of)
        return y

    run.__wrapped__ = reference
    return run


def backward(reference, log_of: bool):
    """softmax_grad or log_softmax_grad (g, y) of numpy arrays: the kernel where it applies
    (a cotangent that is a broadcast or a strided view is copied first: it is small), else
    `reference`."""
    def run(g, y, dim):
        k = _kernels(y)
        if k is None or g.dtype != y.dtype or g.shape != y.shape or \
                g.__class__ is not np.ndarray:
            return reference(g, y, dim)
        _, bwd, ffi = k
        if not g.flags.c_contiguous or not g.flags.aligned:
            g = np.ascontiguousarray(g)
        outer, n, inner = _lanes(y.shape, dim)
        dx = np.empty(y.shape, y.dtype)
        ptr = _PTR[y.dtype]
        bwd(ffi.from_buffer(ptr, g), ffi.from_buffer(ptr, y), ffi.from_buffer(ptr, dx),
            outer, n, inner, log_of)
        return dx

    run.__wrapped__ = reference
    return run


_PTR = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]"}


def _lanes(shape: tuple, dim: int) -> tuple:
    """(outer, n, inner): the C-contiguous `shape` as [outer, n, inner] around `dim`."""
    outer = inner = 1
    for s in shape[:dim]:
        outer *= s
    for s in shape[dim + 1:]:
        inner *= s
    return outer, shape[dim], inner


def _kernels(x):
    """(forward, backward, ffi) for x's dtype where the kernel computes x (small, non-empty,
    C-contiguous, aligned float32/float64), else None."""
    if not (0 < x.size < POLICY.min_elements and x.__class__ is np.ndarray
            and x.dtype in _FLOATS):
        return None
    flags = x.flags  # (a new flags object per look)
    if not (flags.c_contiguous and flags.aligned):
        return None
    dtype = x.dtype
    return eager_kernels.cached_kernel(("softmax_rows", dtype), lambda: _build(dtype))


def _build(dtype: np.dtype):
    t = eager_kernels.c_type(dtype)
    single = t == "float"
    name = f"ft_softmax_rows_{t}"
    ctx = dict(t=t, name=name, acc="double", exp="expf" if single else "exp")
    cdef = (f"void {name}_forward({t}*, {t}*, long, long, long, long);\n"
            f"void {name}_backward({t}*, {t}*, {t}*, long, long, long, long);")
    built = eager_kernels.template_functions("softmax_rows.c.j2", ctx, cdef,
                                             (name + "_forward", name + "_backward"))
    if built is None:
        return False
    (fwd, bwd), ffi = built
    return fwd, bwd, ffi
