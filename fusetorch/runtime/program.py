"""A compiled program: the plan's steps run in order, fused groups as C kernels, the rest with
the eager implementations.

Kernels are generated for the strides their inputs arrive with, and those are known before
anything runs: a graph input's are the caller's, every value a kernel writes is C-contiguous,
a movement step's (a view: permute, expand, reshape, slicing) is what numpy makes of its
input's layout, found by running the step on stand-in arrays of the right layout (`prepare`),
and every other extern step (matmul, unfused math, sources) is made C-contiguous by the
schedule when its implementation returns otherwise. So the first run builds all groups as one
C module and runs the kernels at once; nothing is computed twice. Later runs check the strides
of values from outside the kernels (a guard: a kernel is only ever called on the layout it was
generated for) and call the kernels.
"""
from __future__ import annotations

import functools
import sys
import time

import numpy as np

from ..codegen import fuse, lower, render
from ..ir.graph import PHASES, Graph
from ..ir.ops import OPS
from .device import NP_DTYPES
from .interpret import eval_node


# The active profiler's hook (fusetorch.profiler), or None: read once per run; when set, each
# kernel and extern step is timed (the kernels with the bytes they move).
PROFILE = None
_now = time.perf_counter_ns


class Program:
    """`role`: what the program is to its compiled function, "forward" or "backward" (the
    label of its kernels when their nodes do not say: see `labels`)."""

    def __init__(self, graph: Graph, backend, role: str = "forward"):
        self.graph = graph
        self.role = role
        self.plan = fuse.partition(graph, cpu=backend.device.type == "cpu")
        self.backend = backend
        self.kernels: list = []  # LoopKernel per group, once built
        self.source: str | None = None
        self._funcs: list = []
        self._layouts: list = []  # the input strides each kernel was generated for
        self._buffers: dict = {}  # kernel index -> its output arrays from the last call
        self._schedule: list = []  # the steps over slots of `_env` (made by `build`)
        self.user_outputs: int | None = None  # outputs after these are internal (saved values)
        # output index -> input index: the output is the input's new value (an optimizer's
        # update of a parameter), which the caller writes back into the input's array; where
        # it is safe the kernel writes it there itself (see `_choose_in_place`). The caller
        # runs a program with updates only when no input shares memory with an updated one
        # (`overlapping`): the graph's values are those of separate arrays.
        self.updates: dict[int, int] = {}
        self._in_place: dict = {}  # id(output node) -> the input node it overwrites

    # ------------------------------------------------------------ running

    def run(self, arrays: list) -> list:
        prof = PROFILE
        if prof is not None and prof.enter():
            return prof.call(self.run, (arrays,), _EVENT.get(self.role, "CompiledFunction"),
                             reentrant=True)
        if not self._funcs:
            self.prepare(arrays)
        # `_schedule` (made once in `build`) names every value by a slot of `env`
        env = self._env
        env[:len(arrays)] = arrays
        ptr = self._ffi.from_buffer if self._ffi is not None else None
        xp = self.backend.xp
        for step in self._schedule:
            if step[0] is _EXTERN:
                _, fn, args, attrs, out, want, dense = step
                if prof is not None:
                    t0 = _now()
                a = fn(*[env[i] if type(i) is int else i[0] for i in args], **attrs)
                if type(a) is not xp.ndarray or a.dtype is not want:
                    a = xp.asarray(a)
                    if a.dtype != want:
                        a = a.astype(want)
                if dense and not a.flags.c_contiguous:  # the layout `prepare` assumed
                    a = xp.ascontiguousarray(a)
                env[out] = a
                if prof is not None:
                    prof.program_step(self, step, t0, _now(), env)
                continue
            _, k, func, ins, checked, outs, aliased = step
            for i, shape, strides in checked:  # values from outside the kernels: guard them
                a = env[i]
                if a.shape != shape or not getattr(a.flags, "aligned", True) or (
                        a.strides != strides and _strides(a.shape, a.strides) != strides):
                    raise RuntimeError(
                        f"kernel {self.kernels[k].name} was generated for input strides "
                        f"{self._layouts[k]}, got {_layout([env[j] for j in ins])}")
            prev = self._buffers[k]
            for j, (i, shape, dtype) in enumerate(outs):
                # last call's buffer, unless something outside holds it (references here:
                # `prev` and getrefcount's argument). Fresh large arrays cost page faults
                if prev[j] is None or sys.getrefcount(prev[j]) > 2:
                    prev[j] = xp.empty(shape, dtype)
                env[i] = prev[j]
            for i, j in aliased:  # written in place, over input slot j
                env[i] = env[j]
            if prof is not None:
                t0 = _now()
            if ptr is None:  # CUDA: the launcher takes the device arrays
                func([env[i] for i in ins] + prev)
            else:
                func(*[ptr(_CTYPES[env[i].dtype.char] + "[]", env[i])
                       if env[i].flags.c_contiguous else _pointer(env[i], self._ffi)
                       for i in ins], *[ptr(_CTYPES[a.dtype.char] + "[]", a) for a in prev])
            if prof is not None:
                prof.program_step(self, step, t0, _now(), env)
        outs = [env[i] for i in self._output_slots]
        env[:] = [None] * len(env)  # hold no arrays between calls
        return _unaliased(outs, arrays, self.user_outputs, self.updates)

    def _make_schedule(self) -> None:
        """The steps as tuples over slots of one list: a call then does no dict lookups, builds
        no layout tuples, and evaluates no constants."""
        slot = {id(n): i for i, n in enumerate(self.graph.inputs)}
        from_kernel = set()  # slots written by kernels: C-contiguous, of a known shape
        impl = self.backend.impl
        schedule, k = [], 0
        for step in self.plan.steps:
            if isinstance(step, fuse.Extern):
                node = step.node
                args = []
                for i in node.inputs:
                    if id(i) in slot:
                        args.append(slot[id(i)])
                    else:  # a scalar constant no step computes: evaluated once, here
                        args.append((eval_node(i, [], impl, self.backend.xp),))
                dense = _layout_kind(node) == "dense"
                if node.op == "constant" and not node.inputs:
                    value = eval_node(node, [], impl, self.backend.xp)
                    if dense and not value.flags.c_contiguous:  # (never 0-d: those are)
                        value = self.backend.xp.ascontiguousarray(value)
                    fn, attrs, dense = (lambda v=value: v), {}, False
                else:
                    fn, attrs = impl[node.op], dict(node.attrs)
                slot[id(node)] = len(slot)
                schedule.append((_EXTERN, fn, args, attrs, slot[id(node)],
                                 NP_DTYPES[node.dtype], dense))
                continue
            ins = [slot[id(n)] for n in step.inputs]
            checked = [(i, shape, strides) for i, (shape, strides, _) in
                       zip(ins, self._layouts[k]) if i not in from_kernel]
            outs, aliased = [], []
            for n in step.outputs:
                slot[id(n)] = len(slot)
                if id(n) in self._in_place:
                    aliased.append((slot[id(n)], slot[id(self._in_place[id(n)])]))
                    continue
                from_kernel.add(slot[id(n)])
                outs.append((slot[id(n)], n.shape, NP_DTYPES[n.dtype]))
            self._buffers[k] = [None] * len(outs)
            schedule.append((_KERNEL, k, self._funcs[k], ins, checked, outs, aliased))
            k += 1
        self._schedule = schedule
        self._output_slots = [slot[id(o)] for o in self.graph.outputs]
        self._env = [None] * len(slot)

    def prepare(self, arrays: list) -> None:
        """Build every kernel for the layouts that inputs `arrays` (one per graph input) lead
        to, running nothing but movement steps on stand-ins (`_derive_layouts`). A compiled
        function's first call uses this after its trace (whose eager run gave that call's
        results); a program's first `run` too, then runs the kernels."""
        try:
            per_group = self._derive_layouts(arrays)
        except Exception:  # noqa: BLE001  (a step that cannot run on stand-ins: see below)
            per_group = self._eager_layouts(arrays)
        self.build(per_group)

    def _derive_layouts(self, arrays: list) -> list:
        """Each group's input arrays, or stand-ins of the same shape, dtype and strides: a
        kernel's outputs are fresh C-contiguous arrays (zeros, never touched unless a movement
        step copies them); movement steps run on the stand-ins (a view costs nothing; a copy
        reads zeros); `check` and `detach` return their input; every other extern is dense
        (`_layout_kind`). Raises if a step cannot run on stand-ins or makes another shape
        (the caller then runs the graph eagerly instead)."""
        xp = self.backend.xp
        env = {id(n): a for n, a in zip(self.graph.inputs, arrays)}
        for step in self.plan.steps:
            if not isinstance(step, fuse.Extern):
                for n in step.outputs:
                    env[id(n)] = xp.zeros(n.shape, NP_DTYPES[n.dtype])
                continue
            node = step.node
            kind = _layout_kind(node)
            if kind == "same":
                out = env[id(node.inputs[0])]
            elif kind == "view":
                with np.errstate(all="ignore"):
                    out = _run_node(node, env, self.backend.impl, xp)
                if out.shape != node.shape:
                    raise RuntimeError(f"{node.op} on stand-ins made shape {out.shape}")
            else:
                out = xp.zeros(node.shape, NP_DTYPES[node.dtype])
            env[id(node)] = out
        return [{id(n): env[id(n)] for n in g.inputs} for g in self.plan.groups()]

    def _eager_layouts(self, arrays: list) -> list:
        """Each group's input arrays from an eager run of the whole graph (the fallback of
        `prepare`: a movement step that would not run on stand-ins). Kernels write
        C-contiguous outputs, and the schedule makes dense externs so: the eager values are
        made to look the same."""
        env = {id(n): a for n, a in zip(self.graph.inputs, arrays)}
        impl, xp = self.backend.impl, self.backend.xp
        written = {id(n) for g in self.plan.groups() for n in g.outputs}
        for node in self.graph.nodes:
            if node.op != "input":
                out = _run_node(node, env, impl, xp)
                if (id(node) in written or _layout_kind(node) == "dense") and \
                        not out.flags.c_contiguous:
                    out = xp.ascontiguousarray(out)  # (never reached for 0-d: always contiguous)
                env[id(node)] = out
        return [{id(n): env[id(n)] for n in g.inputs} for g in self.plan.groups()]

    # ------------------------------------------------------------ building

    def build(self, inputs_per_group: list) -> None:
        if PROFILE is not None and PROFILE.enter():
            return PROFILE.call(self.build, (inputs_per_group,), "fusetorch::build_kernels",
                                reentrant=True)
        from .cbuild import build
        names = {id(n): f"%{i}" for i, n in enumerate(self.graph.nodes)}  # as graph.text()
        self._in_place = self._choose_in_place(inputs_per_group)
        cpu = self.backend.device.type == "cpu"
        self.kernels = [lower.lower(g, ins, names, self._in_place, outer_axis=cpu)
                        for g, ins in zip(self.plan.groups(), inputs_per_group)]
        self._layouts = [_layout([ins[id(n)] for n in g.inputs])
                         for g, ins in zip(self.plan.groups(), inputs_per_group)]
        if not self.kernels:
            self._funcs = [None]  # nothing to build: extern steps only
            self._ffi = None
        elif self.backend.device.type == "cuda":  # the same loop kernels rendered as CUDA
            from .cudabuild import CudaKernels
            cuda = CudaKernels(self.kernels)
            cuda.compile()  # CompilerUnavailable without cupy or a GPU
            self.source, self._ffi = cuda.source, None
            self._funcs = [functools.partial(cuda.launch, k) for k in range(len(self.kernels))]
        else:
            self.source = render.render_module(self.kernels)
            cdef = "\n".join(render.declaration(k) for k in render.unique(self.kernels))
            lib = build(self.source, cdef)
            self._ffi = lib.ffi
            self._funcs = [lib.function(k.name) for k in self.kernels]
        self._make_schedule()

    def _choose_in_place(self, inputs_per_group: list) -> dict:
        """id(output node) -> input node, for updates a kernel can write over the input's own
        array (C and CUDA kernels alike): a pointwise kernel reading the input at the very
        index it writes (same shape, C-contiguous, no broadcast); no later step reading the old
        value, through the input or any view of it; the old value not returned."""
        if not self.updates:
            return {}
        steps = self.plan.steps
        returned = {id(o) for o in self.graph.outputs}
        chosen = {}
        for out_index, in_index in self.updates.items():
            out, x = self.graph.outputs[out_index], self.graph.inputs[in_index]
            at = next((k for k, st in enumerate(steps)
                       if not isinstance(st, fuse.Extern) and any(o is out for o in st.outputs)),
                      None)
            if at is None or steps[at].kind != "pointwise" or out.shape != x.shape \
                    or out.dtype != x.dtype or any(o is out for o in self.graph.outputs[
                        :out_index]) or id(out) in chosen:
                continue
            group = steps[at]
            arrays = inputs_per_group[self.plan.groups().index(group)]
            if id(x) not in arrays or not arrays[id(x)].flags.c_contiguous:
                continue
            # the values that may share x's memory: x, and what movement steps make of it
            aliases = {id(x)}
            for st in steps:
                if isinstance(st, fuse.Extern) and not st.node.opdef.product and any(
                        id(i) in aliases for i in st.node.inputs):
                    aliases.add(id(st.node))
            later = [st.node.inputs if isinstance(st, fuse.Extern) else st.inputs
                     for st in steps[at + 1:]]
            if aliases & returned or any(id(i) in aliases for ins in later for i in ins) or \
                    any(id(i) in aliases and i is not x for i in group.inputs):
                continue
            chosen[id(out)] = x
        return chosen

    def labels(self) -> list:
        """Per fused group (kernel): which part of the computation its nodes are, "forward",
        "backward" or "update", joined by '+' when a kernel fuses across them. A traced
        training step is one program; its nodes carry the phase they were recorded in
        (`meta['phase']`, see `tracer.trace.recording_phase`); other nodes take the
        program's `role`."""
        return [phase_label(g.nodes, self.role) for g in self.plan.groups()]

    def describe(self) -> list:
        """One line per kernel: name, its label (see `labels`), what it fuses, iteration
        space, bytes read and written."""
        out = []
        for g, k, label in zip(self.plan.groups(), self.kernels, self.labels()):
            read = sum(_nbytes(n) for n in g.inputs)
            written = sum(_nbytes(n) for n in g.outputs)
            ops = ", ".join(n.op for n in g.nodes)
            out.append(f"{k.name} ({label}): {g.kind} [{ops}] over {list(k.shape)}, reads "
                       f"{read} B, writes {written} B")
        return out


def phase_label(nodes, default: str) -> str:
    """The phases of `nodes` (their `meta['phase']`, else `default`), in the order forward,
    backward, update, joined by '+'."""
    seen = {(n.meta or {}).get("phase") or default for n in nodes}
    return "+".join(p for p in PHASES if p in seen) or default


def _unaliased(outs: list, inputs: list, n_user: int | None, updates=()) -> list:
    """Optimised graphs may return an input (x * 1 -> x) or one node twice (CSE): give each
    result the user sees its own buffer, as eager execution would. Outputs past `n_user` are
    values kept for a backward program, which only reads them; `updates` are new values of
    inputs, which the caller copies into the inputs' arrays (or a kernel wrote there)."""
    seen = {id(a) for a in inputs}
    res = []
    for k, a in enumerate(outs):
        if (n_user is None or k < n_user) and k not in updates and id(a) in seen:
            a = a.copy()
        seen.add(id(a))
        res.append(a)
    return res


def overlapping(arrays: list, slots) -> bool:
    """Whether an array at one of `slots` shares memory with another of `arrays`. Two arrays
    that own their memory never do, so only views (and the targets themselves) are checked."""
    views = [k for k, a in enumerate(arrays) if a.base is not None]
    for j in slots:
        t = arrays[j]
        for k in (range(len(arrays)) if t.base is not None else views):
            if k != j and (arrays[k] is t or np.may_share_memory(arrays[k], t)):
                return True
    return False


def _nbytes(n) -> int:
    size = 1
    for d in n.shape:
        size *= d
    return size * n.dtype.itemsize


def _layout(arrays: list) -> tuple:
    return tuple((a.shape, _strides(a.shape, a.strides), a.dtype) for a in arrays)


def _strides(shape: tuple, strides: tuple) -> tuple:
    """Strides with those of size-1 dims zeroed: they never move an index (kernels read such
    dims at index 0), and numpy gives them arbitrary values that vary between calls."""
    if 1 not in shape:
        return strides
    return tuple(0 if n == 1 else s for n, s in zip(shape, strides))


def _pointer(a, ffi):
    ctype = _CTYPES[a.dtype.char]
    if a.flags.c_contiguous:
        return ffi.from_buffer(ctype + "[]", a)
    return ffi.cast(ctype + "*", a.ctypes.data)  # strided views are read in place


_CTYPES = {"f": "float", "d": "double", "?": "uint8_t",  # as render.pointer_type
           "l": "int64_t", "q": "int64_t"}  # argmax/argmin results
_EXTERN, _KERNEL = "extern", "kernel"  # schedule step kinds
# a run's event in a profile, by role (PyTorch's names for compiled code)
_EVENT = {"forward": "CompiledFunction", "backward": "CompiledFunctionBackward"}


def kernel_safe(arrays: list) -> bool:
    """Whether kernels may read these arrays: numpy's `aligned` flag says the data pointer and
    every stride are multiples of the element's alignment (its size, for the kernel dtypes).
    Kernels index in elements, so a byte stride of 5 or -1 (a structured array's field, a
    crafted file) would make them read outside the buffer; such a call runs eagerly
    (compile) or in the interpreter (compiled eager mode). The doors
    (from_numpy, load, as_strided, frombuffer) refuse such layouts already."""
    for a in arrays:
        if not getattr(a.flags, "aligned", True):  # (cupy's arrays have no such flag)
            return False
    return True


def _layout_kind(node) -> str:
    """How an extern step's output layout is known before the program runs: "view" (a
    movement op: what numpy makes of its input's layout, found by running it on stand-ins),
    "same" (`check`, `detach`: the input itself), or "dense" (everything else: matmul, unfused
    math, sources, custom Functions: C-contiguous, which the schedule enforces with a copy
    in the rare case the implementation returns another layout)."""
    if node.opdef.passthrough:
        return "same"
    if OPS[node.op].kind == "movement" or node.opdef.crosses_device:
        return "view"
    return "dense"


def _run_node(node, env: dict, impl: dict, xp):
    """One extern step. Scalar constants are not steps of the plan (kernels inline them), so
    one read here is evaluated on the spot."""
    args = [env[id(i)] if id(i) in env else eval_node(i, [], impl, xp) for i in node.inputs]
    return eval_node(node, args, impl, xp)

