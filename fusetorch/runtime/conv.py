"""The CPU eager implementations of `conv2d`, `conv2d_grad_input` and `conv2d_grad_weight`
(ir/conv_ops.py): C kernels (templates/c/conv2d.c.j2) that read the windows in place where the
reference copies them (im2col: 25x a LeNet input, a fresh buffer each step) and runs a batch of
small BLAS products (a weight gradient: 64 products of 16x100 @ 100x150, then their sum).

One build per dtype (the geometry is an argument), kept with eager_kernels' others and cached
on disk like every kernel. Without a C compiler, under FUSETORCH_EAGER_COMPILE=0, or inside a
compile trace (which builds nothing: runtime/eager_kernels.py), the reference runs instead; the
values agree to rounding (the kernels sum in another order).

A Program knows its shapes (compile's, and the backward programs eager mode builds): its extern
steps ask an implementation's `specialize` (runtime/runner.py), and from
`POLICY.specialize_fmas` multiply-adds a convolution's step gets the same template built with
its geometry as constants
(bounds the compiler unrolls, divisions it folds, tiles over the layer's own channels instead of
a whole vector, `_window_block`): the same sums in the same order, so the same bits as the
eager kernels, faster (LeNet's five kernels, float32, one thread: 2.54 -> 1.96 ms; first layer
forward 0.38 -> 0.29, its weight gradient 0.56 -> 0.36, the second's input gradient 0.72 ->
0.52). One build per layer serves its forward and both gradients, kept by
`eager_kernels.cached_kernel` beside the generic ones, under the same policy."""
from __future__ import annotations

import math

import numpy as np

from .. import _threads
from .._policy import POLICY
from ..ir.ops import _window_out
from . import eager_kernels

_NAMES = ("forward", "grad_weight", "grad_input")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _geometry(x_shape: tuple, w_shape: tuple, out_hw: tuple, a: dict) -> list:
    return (list(x_shape) + [w_shape[0]] + list(w_shape[2:]) + list(a["stride"])
            + list(a["padding"]) + list(a["dilation"]) + [a["groups"]] + list(out_hw))


def forward(reference):
    """`conv2d` for numpy arrays, by the kernel where there is one."""
    def make(special=None):
        def conv2d(x, w, bias=None, **a):
            k = _kernels(x.dtype, x, w) if special is None or \
                special[0] != (x.shape, w.shape, x.dtype) else special[1]
            if k is None:
                return reference(x, w, bias, **a)
            oh, ow = (_window_out(n, k, s, p, d) for n, k, s, p, d in zip(
                x.shape[2:], w.shape[2:], a["stride"], a["padding"], a["dilation"]))
            out = np.empty((x.shape[0], w.shape[0], oh, ow), x.dtype)
            _call(k, "forward", (x, w, out), _geometry(x.shape, w.shape, (oh, ow), a), bias)
            return out
        return conv2d
    conv2d = make()
    conv2d.__wrapped__ = reference
    conv2d.specialize = lambda shapes, attrs, dtype: _specialize(
        make, shapes[0], shapes[1], _out_hw(shapes[0], shapes[1], attrs), attrs, dtype)
    return conv2d


def grad_weight(reference):
    """`conv2d_grad_weight` for numpy arrays, by the kernel where there is one."""
    def make(special=None):
        def conv2d_grad_weight(x, g, *, kernel, **a):
            k = _kernels(x.dtype, x, g) if special is None or \
                special[0] != (x.shape, g.shape, x.dtype) else special[1]
            if k is None:
                return reference(x, g, kernel=kernel, **a)
            w_shape = (g.shape[1], x.shape[1] // a["groups"]) + tuple(kernel)
            gw = np.empty(w_shape, x.dtype)
            _call(k, "grad_weight", (x, g, gw), _geometry(x.shape, w_shape, g.shape[2:], a))
            return gw
        return conv2d_grad_weight
    conv2d_grad_weight = make()
    conv2d_grad_weight.__wrapped__ = reference

    def specialize(shapes, attrs, dtype):
        x, g = shapes
        w = (g[1], x[1] // attrs["groups"]) + tuple(attrs["kernel"])
        return _specialize(make, x, g, g[2:], attrs, dtype, w)
    conv2d_grad_weight.specialize = specialize
    return conv2d_grad_weight


def grad_input(reference):
    """`conv2d_grad_input` for numpy arrays, by the kernel where there is one."""
    def make(special=None):
        def conv2d_grad_input(g, w, *, size, **a):
            k = _kernels(g.dtype, g, w) if special is None or \
                special[0] != (g.shape, w.shape, g.dtype) else special[1]
            if k is None:
                return reference(g, w, size=size, **a)
            x_shape = (g.shape[0], w.shape[1] * a["groups"]) + tuple(size)
            gx = np.empty(x_shape, g.dtype)
            _call(k, "grad_input", (g, w, gx), _geometry(x_shape, w.shape, g.shape[2:], a))
            return gx
        return conv2d_grad_input
    conv2d_grad_input = make()
    conv2d_grad_input.__wrapped__ = reference

    def specialize(shapes, attrs, dtype):
        g, w = shapes
        x = (g[0], w[1] * attrs["groups"]) + tuple(attrs["size"])
        return _specialize(make, g, w, g[2:], attrs, dtype, w, x)
    conv2d_grad_input.specialize = specialize
    return conv2d_grad_input


def _out_hw(x: tuple, w: tuple, a: dict) -> tuple:
    return tuple(_window_out(n, k, s, p, d) for n, k, s, p, d in zip(
        x[2:], w[2:], a["stride"], a["padding"], a["dilation"]))


def _specialize(make, shape0: tuple, shape1: tuple, out_hw: tuple, attrs: dict, dtype,
                w_shape: tuple | None = None, x_shape: tuple | None = None):
    """`make`'s implementation for operands of shapes (shape0, shape1) only, on kernels built
    for their geometry (the generic ones for any other shapes), or None: below
    `POLICY.specialize_fmas`, for other dtypes, or where `cached_kernel` gives none (the
    switch off: the compiled step then runs what eager runs; no compiler). A program's build
    calls it once and keeps what it gets, so it waits for the kernels (`wait`)."""
    dtype = np.dtype(dtype)
    x_shape, w_shape = x_shape or shape0, w_shape or shape1
    if dtype not in _FLOATS or len(x_shape) != 4 or len(w_shape) != 4 or \
            math.prod(x_shape[:1] + w_shape + tuple(out_hw)) < POLICY.specialize_fmas:
        return None
    geometry = tuple(_geometry(x_shape, w_shape, out_hw, attrs))
    k = eager_kernels.cached_kernel(("conv2d", dtype, geometry),
                                    lambda: _build(dtype, geometry), wait=True)
    return None if k is None else make(((tuple(shape0), tuple(shape1), dtype), k))


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
    if dtype not in (np.float32, np.float64) or any(a.size == 0 for a in arrays):
        return None
    dtype = np.dtype(dtype)
    return eager_kernels.cached_kernel(("conv2d", dtype), lambda: _build(dtype))


def _window_block(og: int, k: int, registers: int) -> int:
    """The window positions a tile of the rows weight gradient covers (templates' KB): at
    most `registers` accumulators of og channels; the cheapest by the multiply-adds of the
    blocks of b positions (those past k included) and a pass over the cotangent per block
    (~2 og loads a vector of it: each block streams it again)."""
    fits = [b for b in range(1, 7) if og * b <= registers] or [1]
    return min(fits, key=lambda b: (-(-k // b) * (b * og + 2 * og), -b))


def _build(dtype: np.dtype, geometry: tuple | None = None):
    """The three kernels of `dtype`, for any geometry or (`geometry`, N to OW) only."""
    t = eager_kernels.c_type(dtype)
    name = f"ft_conv2d_{t}"
    if geometry is not None:
        name += "_" + "_".join(map(str, geometry))
    cdef = "\n".join(f"int {name}_{f}({t}*, {t}*, {t}*, {'%s*, ' % t if f == 'forward' else ''}"
                     "long*);" for f in _NAMES)
    ctx = dict(t=t, name=name, specialized=geometry is not None,
               geometry=[f"{v}L" for v in geometry] if geometry is not None else
               [f"geo[{i}]" for i in range(16)])
    if geometry is not None:
        og, k = geometry[4] // geometry[13], geometry[1] // geometry[13] * geometry[5] * geometry[6]
        # (32 vector registers with AVX-512VL, 16 without: the accumulators, the operands)
        ctx["kb"] = [_window_block(og, k, 30), _window_block(og, k, 12)]
    from ..codegen import render, template_nests
    ctx.update(loops=template_nests.conv2d_c(), pragmas=render.PRAGMAS)
    built = eager_kernels.template_functions("conv2d.c.j2", ctx, cdef,
                                             tuple(f"{name}_{f}" for f in _NAMES))
    return False if built is None else built
