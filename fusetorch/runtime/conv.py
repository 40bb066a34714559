"""The CPU eager implementations of `conv2d`, `conv2d_grad_input` and `conv2d_grad_weight`
(ir/conv_ops.py): C kernels (templates/c/conv2d.c.j2) that read the windows in place where the
reference copies them (im2col: 25x a LeNet input, a fresh buffer each step) and runs a batch of
small BLAS products (a weight gradient: 64 products of 16x100 @ 100x150, then their sum).

One build per dtype (the geometry is an argument), kept with eager_kernels' others and cached
on disk like every kernel. Without a C compiler, under FUSETORCH_EAGER_COMPILE=0, or inside a
compile trace (which builds nothing: runtime/eager_kernels.py), the reference runs instead; the
values agree to rounding (the kernels sum in another order)."""
from __future__ import annotations

import numpy as np

from .. import _threads
from .._policy import POLICY
from ..ir.ops import _window_out
from . import eager_kernels

_NAMES = ("forward", "grad_weight", "grad_input")


def _geometry(x_shape: tuple, w_shape: tuple, out_hw: tuple, a: dict) -> list:
    return (list(x_shape) + [w_shape[0]] + list(w_shape[2:]) + list(a["stride"])
            + list(a["padding"]) + list(a["dilation"]) + [a["groups"]] + list(out_hw))


def forward(reference):
    """`conv2d` for numpy arrays, by the kernel where there is one."""
    def conv2d(x, w, bias=None, **a):
        k = _kernels(x.dtype, x, w)
        if k is None:
            return reference(x, w, bias, **a)
        oh, ow = (_window_out(n, k, s, p, d) for n, k, s, p, d in zip(
            x.shape[2:], w.shape[2:], a["stride"], a["padding"], a["dilation"]))
        out = np.empty((x.shape[0], w.shape[0], oh, ow), x.dtype)
        _call(k, "forward", (x, w, out), _geometry(x.shape, w.shape, (oh, ow), a), bias)
        return out
    conv2d.__wrapped__ = reference
    return conv2d


def grad_weight(reference):
    """`conv2d_grad_weight` for numpy arrays, by the kernel where there is one."""
    def conv2d_grad_weight(x, g, *, kernel, **a):
        k = _kernels(x.dtype, x, g)
        if k is None:
            return reference(x, g, kernel=kernel, **a)
        w_shape = (g.shape[1], x.shape[1] // a["groups"]) + tuple(kernel)
        gw = np.empty(w_shape, x.dtype)
        _call(k, "grad_weight", (x, g, gw), _geometry(x.shape, w_shape, g.shape[2:], a))
        return gw
    conv2d_grad_weight.__wrapped__ = reference
    return conv2d_grad_weight


def grad_input(reference):
    """`conv2d_grad_input` for numpy arrays, by the kernel where there is one."""
    def conv2d_grad_input(g, w, *, size, **a):
        k = _kernels(g.dtype, g, w)
        if k is None:
            return reference(g, w, size=size, **a)
        x_shape = (g.shape[0], w.shape[1] * a["groups"]) + tuple(size)
        gx = np.empty(x_shape, g.dtype)
        _call(k, "grad_input", (g, w, gx), _geometry(x_shape, w.shape, g.shape[2:], a))
        return gx
    conv2d_grad_input.__wrapped__ = reference
    return conv2d_grad_input


def _call(k, which: str, arrays: tuple, geometry: list, bias=None) -> None:
    functions, ffi = k
    # (the inputs C-contiguous: a cotangent may be a broadcast or a transpose; held until the
    # call returns)
    arrays = [np.ascontiguousarray(a) for a in arrays[:-1]] + [arrays[-1]]
    if bias is not None:
        bias = np.ascontiguousarray(bias)
    geo = ffi.new("long[17]", geometry + [_threads_for(geometry)])
    args = eager_kernels.pointers(ffi, arrays + ([] if bias is None else [bias]))
    if which == "forward" and bias is None:
        args.append(ffi.NULL)
    if functions[_NAMES.index(which)](*args, geo):
        raise MemoryError(f"conv2d: out of memory for the {which.replace('_', ' ')} kernel's "
                          "buffers")


def _threads_for(geometry: list) -> int:
    """The thread count for a call (`_threads.kernel_threads`), shared over its samples: 1
    for a single sample."""
    n, c, _, _, o, kh, kw = geometry[:7]
    fmas = n * o * (c // geometry[13]) * kh * kw * geometry[14] * geometry[15]
    return 1 if n < 2 else _threads.kernel_threads(fmas)


def _kernels(dtype, *arrays):
    """([forward, grad_weight, grad_input], ffi) for this dtype, or None (the reference runs):
    also for empty arrays, which no kernel loop expects."""
    if not POLICY.eager_kernels or dtype not in (np.float32, np.float64) or \
            any(a.size == 0 for a in arrays):
        return None
    dtype = np.dtype(dtype)
    return eager_kernels.cached_kernel(("conv2d", dtype), lambda: _build(dtype))


def _build(dtype: np.dtype):
    t = eager_kernels.c_type(dtype)
    name = f"ft_conv2d_{t}"
    cdef = "\n".join(f"int {name}_{f}({t}*, {t}*, {t}*, {'%s*, ' % t if f == 'forward' else ''}"
                     "long*);" for f in _NAMES)
    built = eager_kernels.template_functions("conv2d.c.j2", dict(t=t, name=name), cdef,
                                             tuple(f"{name}_{f}" for f in _NAMES))
    return False if built is None else built
