"""A compiled program: the plan's steps run in order, fused groups as C kernels, the rest with
the eager implementations.

The first run executes everything eagerly (giving the right answer at once) while it records
the strides every group's inputs arrive with; then all groups are lowered, rendered into one C
module and built once. Later runs check those strides (a guard: a kernel is only ever called on
the layout it was generated for) and call the kernels.
"""
from __future__ import annotations

import sys

import numpy as np

from ..codegen import fuse, lower, render
from ..ir.graph import Graph
from .device import NP_DTYPES
from .interpret import eval_node


class Program:
    def __init__(self, graph: Graph, backend):
        self.graph = graph
        self.plan = fuse.partition(graph)
        self.backend = backend
        self.kernels: list = []  # LoopKernel per group, once built
        self.source: str | None = None
        self._funcs: list = []
        self._layouts: list = []  # the input strides each kernel was generated for
        self._buffers: dict = {}  # kernel index -> its output arrays from the last call
        self.user_outputs: int | None = None  # outputs after these are internal (saved values)

    # ------------------------------------------------------------ running

    def run(self, arrays: list) -> list:
        if not self._funcs:
            return self._first_run(arrays)
        env = {id(n): a for n, a in zip(self.graph.inputs, arrays)}
        impl, xp = self.backend.impl, self.backend.xp
        k = 0
        for step in self.plan.steps:
            if isinstance(step, fuse.Extern):
                env[id(step.node)] = _run_node(step.node, env, impl, xp)
                continue
            ins = [env[id(n)] for n in step.inputs]
            if _layout(ins) != self._layouts[k]:
                raise RuntimeError(f"kernel {self.kernels[k].name} was generated for input "
                                   f"strides {self._layouts[k]}, got {_layout(ins)}")
            outs = self._output_buffers(k, step.outputs)
            self._funcs[k](*[_pointer(a, self._ffi) for a in ins + outs])
            for n, a in zip(step.outputs, outs):
                env[id(n)] = a
            k += 1
        return _unaliased([env[id(o)] for o in self.graph.outputs], arrays, self.user_outputs)

    def _output_buffers(self, k: int, nodes: list) -> list:
        """Kernel k's output arrays: last call's, where nothing outside this program holds them
        any more (fresh large arrays cost page faults: ~15 ms per 64 MiB here), else new."""
        prev = self._buffers.get(k)
        outs = []
        for j, n in enumerate(nodes):
            a = prev[j] if prev is not None else None
            # references: `prev`'s list and getrefcount's argument; anything more is a user's
            if a is None or sys.getrefcount(a) > 2:
                a = np.empty(n.shape, NP_DTYPES[n.dtype])
            outs.append(a)
        self._buffers[k] = outs
        return outs

    def _first_run(self, arrays: list) -> list:
        """Run eagerly, remembering each group's input arrays; then build every kernel."""
        env = {id(n): a for n, a in zip(self.graph.inputs, arrays)}
        impl, xp = self.backend.impl, self.backend.xp
        seen = []
        # kernels write C-contiguous outputs: make the eager run's values look the same, so
        # the layouts recorded below are the ones later runs will see
        written = {id(n) for g in self.plan.groups() for n in g.outputs}
        for node in self.graph.nodes:
            if node.op != "input":
                out = _run_node(node, env, impl, xp)
                if id(node) in written and not out.flags.c_contiguous:
                    out = xp.ascontiguousarray(out)  # (never reached for 0-d: always contiguous)
                env[id(node)] = out
        for g in self.plan.groups():
            ins = {id(n): env[id(n)] for n in g.inputs}
            seen.append(ins)
        self.build(seen)
        return _unaliased([env[id(o)] for o in self.graph.outputs], arrays, self.user_outputs)

    # ------------------------------------------------------------ building

    def build(self, inputs_per_group: list) -> None:
        from .cbuild import build
        names = {id(n): f"%{i}" for i, n in enumerate(self.graph.nodes)}  # as graph.text()
        self.kernels = [lower.lower(g, ins, names) for g, ins in zip(self.plan.groups(),
                                                                       inputs_per_group)]
        self._layouts = [_layout([ins[id(n)] for n in g.inputs])
                         for g, ins in zip(self.plan.groups(), inputs_per_group)]
        if not self.kernels:
            self._funcs = [None]  # nothing to build: extern steps only
            return
        self.source = render.render_module(self.kernels)
        cdef = "\n".join(render.declaration(k) for k in render.unique(self.kernels))
        lib = build(self.source, cdef)
        self._ffi = lib.ffi
        self._funcs = [lib.function(k.name) for k in self.kernels]

    def describe(self) -> list:
        """One line per kernel: name, what it fuses, iteration space, bytes read and written."""
        out = []
        for g, k in zip(self.plan.groups(), self.kernels):
            read = sum(_nbytes(n) for n in g.inputs)
            written = sum(_nbytes(n) for n in g.outputs)
            ops = ", ".join(n.op for n in g.nodes)
            out.append(f"{k.name}: {g.kind} [{ops}] over {list(k.shape)}, reads {read} B, "
                       f"writes {written} B")
        return out


def _unaliased(outs: list, inputs: list, n_user: int | None) -> list:
    """Optimised graphs may return an input (x * 1 -> x) or one node twice (CSE): give each
    result the user sees its own buffer, as eager execution would. Outputs past `n_user` are
    values kept for a backward program, which only reads them."""
    seen = {id(a) for a in inputs}
    res = []
    for k, a in enumerate(outs):
        if (n_user is None or k < n_user) and id(a) in seen:
            a = a.copy()
        seen.add(id(a))
        res.append(a)
    return res


def _nbytes(n) -> int:
    size = 1
    for d in n.shape:
        size *= d
    return size * n.dtype.itemsize


def _layout(arrays: list) -> tuple:
    return tuple((a.shape, a.strides, a.dtype) for a in arrays)


def _pointer(a, ffi):
    ctype = _CTYPES[a.dtype.char]
    if a.flags.c_contiguous:
        return ffi.from_buffer(ctype + "[]", a)
    return ffi.cast(ctype + "*", a.ctypes.data)  # strided views are read in place


_CTYPES = {"f": "float", "d": "double", "?": "bool"}


def _run_node(node, env: dict, impl: dict, xp):
    """One extern step. Scalar constants are not steps of the plan (kernels inline them), so
    one read here is evaluated on the spot."""
    args = [env[id(i)] if id(i) in env else eval_node(i, [], impl, xp) for i in node.inputs]
    return eval_node(node, args, impl, xp)

