"""Layouts: how each value of a program lies in memory (shape and element strides), known
before anything runs.

A graph input's layout is the caller's array's (`layout_of`). Through a partition's steps:
what a kernel writes is C-contiguous; what a movement step (a view: permute, expand, reshape,
slicing) makes of its input's layout is found by running the step on a stand-in of that
layout (zeros under the right strides: a view costs nothing, a copy reads zeros); `check` and
`detach` return their input; every other extern step (matmul, unfused math, sources) is
"dense", which the runner enforces with a copy in the rare case its implementation returns
another layout. `derive` does this walk; it raises `LayoutUnknown` for a step it cannot
follow (a data-dependent shape), and `observe` is then the fallback: the layouts an eager run
of the graph gives.

Codegen receives only these tuples (`codegen.lower.Layout`), never an array.
"""
from __future__ import annotations

import mmap

import numpy as np

from ..codegen import fuse
from ..codegen.lower import Layout
from ..ir.ops import OPS
from .device import NP_DTYPES
from .interpret import eval_node
from ..ir.roles import Role

__all__ = ["Layout", "LayoutUnknown", "layout_of", "layouts_of", "contiguous", "is_contiguous",
           "byte_strides", "layout_kind", "may_alias", "stand_in", "derive", "observe"]


class LayoutUnknown(RuntimeError):
    """A step whose output layout cannot be found from its inputs' layouts alone."""


def element_strides(a) -> tuple:
    """An array's strides in elements. A byte stride that is not a whole number of elements
    (a structured array's field, a crafted file) cannot be expressed: refused, never rounded
    (rounding made kernels read outside the buffer)."""
    if any(s % a.itemsize for n, s in zip(a.shape, a.strides) if n > 1):
        raise RuntimeError(f"cannot generate a kernel for byte strides {a.strides} of "
                           f"{a.itemsize}-byte elements")
    return tuple(s // a.itemsize for s in a.strides)


def layout_of(a) -> Layout:
    """The layout of array `a` (numpy or cupy). Strides of size-1 dims are 0: they never move
    an index, and numpy gives them arbitrary values that vary between calls."""
    strides = element_strides(a)
    return Layout(tuple(a.shape), tuple(0 if n == 1 else s for n, s in zip(a.shape, strides)))


def layouts_of(nodes, arrays) -> dict:
    """id(node) -> layout of the array it holds, for nodes and arrays in pairs."""
    return {id(n): layout_of(a) for n, a in zip(nodes, arrays)}


def contiguous(shape: tuple) -> Layout:
    """The C-contiguous layout of `shape` (size-1 dims at stride 0)."""
    st, acc = [], 1
    for n in reversed(shape):
        st.append(0 if n == 1 else acc)
        acc *= n
    return Layout(tuple(shape), tuple(reversed(st)))


def is_contiguous(layout: Layout) -> bool:
    """Whether `layout` is C-contiguous (numpy's `c_contiguous` flag, which ignores size-1
    dims and is true of every empty array)."""
    return 0 in layout.shape or layout == contiguous(layout.shape)


def byte_strides(layout: Layout, itemsize: int) -> tuple:
    return tuple(s * itemsize for s in layout.strides)


def layout_kind(node) -> str:
    """How an extern step's output layout is known before the program runs: "view" (a
    movement op: what numpy makes of its input's layout, found on stand-ins), "same" (`check`,
    `detach`: the input itself), or "dense" (everything else: C-contiguous)."""
    if Role.PASSTHROUGH in node.opdef.roles:
        return "same"
    if OPS[node.op].kind == "movement" or Role.CROSSES_DEVICE in node.opdef.roles:
        return "view"
    return "dense"


def may_alias(node) -> bool:
    """Whether an extern step's output may share memory with an input: views and `same`
    steps do; so may any elementwise or reduction implementation (numpy may hand back its
    operand for an identity). Library calls of kind "extern" with a dense result (matmul,
    linalg, scans, sorting) allocate it. (User Functions, `custom`, never reach a program:
    they are graph breaks, and the compiled eager runners refuse them.)"""
    return layout_kind(node) != "dense" or OPS[node.op].kind != "extern"


def stand_in(layout: Layout, dtype, xp=np):
    """An array of `layout` standing in for a value when only its layout matters (movement
    steps run on it). On the CPU every stand-in views a read-only anonymous mapping of its own that
    is never written: its pages stay the kernel's zero page, so a build deriving the layouts of a
    training step (hundreds of views of activations, all alive until it ends) takes no memory
    beside the runs it overlaps (np.zeros came from the heap, zeroed: 0.25 GB of a nanoGPT
    step's peak)."""
    shape, strides = layout
    if 0 in shape:
        return xp.zeros(shape, dtype)
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    itemsize = np.dtype(dtype).itemsize
    if xp is np:
        base = _zero_bytes((hi - lo + 1) * itemsize).view(dtype)[-lo:]
    elif is_contiguous(layout):
        return xp.zeros(shape, dtype)
    else:
        base = xp.zeros(hi - lo + 1, dtype)[-lo:]
    return xp.lib.stride_tricks.as_strided(base, shape, byte_strides(layout, itemsize))


def _zero_bytes(n: int) -> np.ndarray:
    """n zero bytes of an anonymous mapping of their own, read-only and never written. (One
    mapping shared by every stand-in made them all share memory, which the in-place choice of
    a background build then took for aliasing: a training step lost an in-place update.)"""
    # private and read-only: a read of a page maps the kernel's zero page (a shared anonymous
    # mapping, mmap's default, is shared memory, which allocates every page read: a build's
    # copies of stand-ins made a nanoGPT step's RSS 0.2 GB higher)
    flags = getattr(mmap, "MAP_PRIVATE", None)
    m = mmap.mmap(-1, max(n, 1)) if flags is None else \
        mmap.mmap(-1, max(n, 1), flags=flags, prot=mmap.PROT_READ)
    have = np.frombuffer(m, np.uint8)[:n]
    have.flags.writeable = False
    return have


def derive(partition, layouts: dict, impl: dict, xp=np) -> dict:
    """`layouts` (at least every graph input's) completed with the layout of every value a
    fused group reads, following the partition's steps (see the module docstring). Raises
    LayoutUnknown where a movement step cannot run on stand-ins or makes another shape."""
    out = dict(layouts)
    arrays: dict = {}  # stand-ins, made when a movement step reads one

    def array(n):
        a = arrays.get(id(n))
        if a is None:
            a = arrays[id(n)] = stand_in(out[id(n)], NP_DTYPES[n.dtype], xp)
        return a

    for step in partition.steps:
        if not isinstance(step, fuse.Extern):  # a fused group: C-contiguous outputs
            for n in step.outputs:
                out[id(n)] = contiguous(n.shape)
            continue
        node = step.node
        kind = layout_kind(node)
        if kind == "same":
            out[id(node)] = out[id(node.inputs[0])]
            if id(node.inputs[0]) in arrays:
                arrays[id(node)] = arrays[id(node.inputs[0])]
        elif kind == "view":
            try:
                args = [array(i) if id(i) in out else eval_node(i, [], impl, xp)
                        for i in node.inputs]
                with np.errstate(all="ignore"):
                    a = eval_node(node, args, impl, xp)
            except Exception as e:  # noqa: BLE001  (the step needs real values)
                raise LayoutUnknown(f"{node.op} on stand-ins: {e}") from None
            if tuple(a.shape) != node.shape:
                raise LayoutUnknown(f"{node.op} on stand-ins made shape {a.shape}")
            out[id(node)] = layout_of(a)
            # a step that copied (a reshape of a transposed view) made real memory: only its
            # layout is kept, and a later reader gets a stand-in of it (a nanoGPT step's
            # build held 190 MB of such copies to its end, beside the interpreted run)
            if any(xp.may_share_memory(a, v) for v in args if isinstance(v, xp.ndarray)):
                arrays[id(node)] = a
            del a, args
        else:
            out[id(node)] = contiguous(node.shape)
    return out


def observe(graph, partition, arrays: list, impl: dict, xp=np) -> dict:
    """The layouts an eager run of the whole graph on `arrays` gives (the fallback when
    `derive` cannot follow a step). Kernels write C-contiguous outputs and the runner makes
    dense externs so: those values are taken as contiguous."""
    env = {id(n): a for n, a in zip(graph.inputs, arrays)}
    out = layouts_of(graph.inputs, arrays)
    written = {id(n) for g in partition.groups() for n in g.outputs}
    for node in graph.nodes:
        if node.op == "input":
            continue
        args = [env[id(i)] if id(i) in env else eval_node(i, [], impl, xp)
                for i in node.inputs]
        a = eval_node(node, args, impl, xp)
        if (id(node) in written or layout_kind(node) == "dense") and \
                not a.flags.c_contiguous:
            a = xp.ascontiguousarray(a)  # as the kernel or the runner makes it
        env[id(node)] = a
        out[id(node)] = layout_of(a)
    return out
