"""Runs a planned and built program: its steps in order, fused groups as the built kernels,
extern steps with the eager implementations (specialized to their shapes where one offers
`specialize`).

The schedule (made once) is runtime/schedule.py's form, the interpreter's: every value a slot
of one list, steps in order, each followed by its drop points (`drop_points`); here a step is a
built kernel or an extern op, so a call does no dict lookups, builds no layout tuples and
evaluates no constants. Values from outside the kernels
are guarded (a kernel is only ever called on the layout it was generated for); a kernel's
output buffers are reused from the last call when nothing outside holds them.
"""
from __future__ import annotations

import math
import sys
import time

from ..codegen import fuse
from .device import C_ARRAY_TYPES, NP_DTYPES
from .interpret import eval_node
from .layouts import byte_strides, layout_kind, may_alias
from .schedule import drop_points

_now = time.perf_counter_ns
KEEP_BYTES = 1 << 20  # intermediate kernel outputs up to this size keep their buffer
_EXTERN, _KERNEL = "extern", "kernel"  # schedule step kinds
_ARRAY_TYPES = {d: t + "[]" for d, t in C_ARRAY_TYPES.items()}


class Runner:
    """`schedule`: one tuple per step of the partition, in its order (the profiler matches
    them by position)."""

    def __init__(self, graph, plan, built, backend):
        self.plan, self.ffi, self.xp = plan, built.ffi, backend.xp
        self._buffers: dict = {}  # kernel index -> its output arrays from the last call
        # taken (popped) by the run that may reuse those buffers; a run that finds it taken
        # (another thread's, or a nested one) allocates its own, so two runs never share an
        # output. A list's pop and append are atomic and cost half a lock's acquire and release
        self._reuse = [True]
        self._pointers: dict = {}
        slot = {id(n): i for i, n in enumerate(graph.inputs)}
        from_kernel = set()  # slots written by kernels: C-contiguous, of a known shape
        impl, xp = backend.impl, backend.xp
        reusable = _reusable(graph, plan.partition.steps)
        schedule, consts, made_once, k = [], [], set(), 0
        for step in plan.partition.steps:
            if isinstance(step, fuse.Extern):
                node = step.node
                args = []
                for i in node.inputs:
                    if id(i) not in slot:  # a scalar constant no step computes: evaluated once
                        slot[id(i)] = len(slot)
                        consts.append((slot[id(i)], eval_node(i, [], impl, xp)))
                    args.append(slot[id(i)])
                dense = layout_kind(node) == "dense"
                slot[id(node)] = len(slot)
                if node.op == "constant" and not node.inputs:
                    value = eval_node(node, [], impl, xp)
                    if dense and not value.flags.c_contiguous:  # (never 0-d: those are)
                        value = xp.ascontiguousarray(value)
                    consts.append((slot[id(node)], value))
                    made_once.add(len(schedule))
                    fn, attrs, dense = (lambda v=value: v), {}, False
                else:
                    fn, attrs = impl[node.op], dict(node.attrs)
                    # an implementation that can do better knowing the shapes (a convolution:
                    # kernels built for its geometry, runtime/conv.py) says so
                    special = getattr(fn, "specialize", None)
                    if special is not None:
                        fn = special(tuple(i.shape for i in node.inputs), attrs,
                                     NP_DTYPES[node.dtype]) or fn
                schedule.append((_EXTERN, fn, tuple(args), attrs, slot[id(node)],
                                 NP_DTYPES[node.dtype], dense, id(node) in reusable))
                continue
            ins = [slot[id(n)] for n in step.inputs]
            checked = [(i, n.shape, byte_strides(plan.layouts[id(n)],
                                                 NP_DTYPES[n.dtype].itemsize))
                       for i, n in zip(ins, step.inputs) if i not in from_kernel]
            outs, aliased = [], []
            for n in step.outputs:
                slot[id(n)] = len(slot)
                if id(n) in plan.in_place:
                    aliased.append((slot[id(n)], slot[id(plan.in_place[id(n)])]))
                    continue
                from_kernel.add(slot[id(n)])
                outs.append((slot[id(n)], n.shape, NP_DTYPES[n.dtype]))
            self._buffers[k] = [None] * len(outs)
            self._pointers[k] = [None] * len(outs)  # (cdata of those buffers, made with them)
            schedule.append((_KERNEL, k, built.functions[k], ins, checked, outs, aliased))
            k += 1
        self._output_slots = [slot[id(o)] for o in graph.outputs]
        # Each step is followed by the slots it read last (`drop`: not the inputs, the outputs
        # or constants), and by the positions of its output buffers that are intermediate
        # values larger than KEEP_BYTES, not kept for the next call (`fresh`): such a value
        # lives from its kernel to its last reader, not to the end of the run and on until the
        # next (a transformer's compiled backward kept ~0.7 GB of intermediates between steps
        # so). Small ones are kept: a fresh buffer and its pointer each call cost a 64x1000
        # two-layer step ~0.1 ms.
        outs_kept = set(self._output_slots) | {i for i, _ in consts}
        keep = outs_kept | set(range(len(graph.inputs)))
        reads = [st[2] if st[0] is _EXTERN else st[3] for st in schedule]
        drops = drop_points(reads, keep)
        self.schedule = []
        for st, drop in zip(schedule, drops):
            if st[0] is _KERNEL:
                fresh = tuple(j for j, (i, shape, dtype) in enumerate(st[5])
                              if i not in keep and math.prod(shape) * dtype.itemsize > KEEP_BYTES)
                st = st + (fresh, drop)
            else:
                st = st + (drop,)
            self.schedule.append(st)
        schedule = self.schedule
        # a run that was handed its input arrays (`consume`) lets each go after its last
        # reader as well: step id -> the input slots it read last
        self._input_drops: dict = {}
        for st, drop in zip(schedule, drop_points(reads, outs_kept)):
            ins = tuple(i for i in drop if i < len(graph.inputs))
            if ins:
                self._input_drops[id(st)] = ins
        # constants are made once: a call starts from a copy of this list (its slots past the
        # inputs hold them), and runs only the steps that compute something
        self._env = [None] * len(slot)
        for i, v in consts:
            self._env[i] = v
        self._steps = [s for pos, s in enumerate(schedule) if pos not in made_once]

    def run(self, arrays: list, program=None, prof=None, consume: bool = False) -> list:
        """The graph's outputs for input `arrays`. `prof`: the active profiler, told of each
        step (as a step of `program`). `consume`: the caller hands the arrays over (the list
        is emptied) and each is let go after the step that last reads it."""
        try:
            token = self._reuse.pop()
        except IndexError:
            return self._run(arrays, program, prof, False, consume)
        try:
            return self._run(arrays, program, prof, True, consume)
        finally:
            self._reuse.append(token)

    def _run(self, arrays: list, program, prof, reuse_buffers: bool, consume: bool) -> list:
        env = self._env.copy()  # (a list of the call's own: runs may nest, in backward hooks)
        env[:len(arrays)] = arrays
        in_drops = None
        if consume:
            arrays.clear()
            in_drops = self._input_drops
        ffi = self.ffi
        ptr = ffi.from_buffer if ffi is not None else None
        held = 2 if ptr is None else 3
        xp = self.xp
        for step in (self._steps if prof is None else self.schedule):  # (the profiler: all)
            if step[0] is _EXTERN:
                _, fn, args, attrs, out, want, dense, reuse, drop = step
                if prof is not None:
                    t0 = _now()
                values = [env[i] for i in args]
                if reuse and values[0].base is None and \
                        getattr(values[0].flags, "writeable", True):
                    # its input 0 is dead from here on and owns its memory: written over
                    a = fn(*values, **attrs, inplace=True)
                else:
                    a = fn(*values, **attrs)
                if type(a) is not xp.ndarray or a.dtype is not want:
                    a = xp.asarray(a)
                    if a.dtype != want:
                        a = a.astype(want)
                if dense and not a.flags.c_contiguous:  # the layout the plan assumed
                    a = xp.ascontiguousarray(a)
                env[out] = a
                if prof is not None:
                    prof.program_step(program, step, t0, _now(), env)
                for i in drop:
                    env[i] = None
                if in_drops:
                    for i in in_drops.get(id(step), ()):
                        env[i] = None
                continue
            _, k, func, ins, checked, outs, aliased, fresh, drop = step
            for i, shape, strides in checked:  # values from outside the kernels: guard them
                a = env[i]
                # (an empty array's strides are whatever numpy chose: no element is indexed)
                if a.shape != shape or not getattr(a.flags, "aligned", True) or (
                        a.strides != strides and _strides(a.shape, a.strides) != strides
                        and a.size):
                    self._refuse(k, [env[j] for j in ins])
            if reuse_buffers:
                prev, made = self._buffers[k], self._pointers[k]
            else:
                prev, made = [None] * len(outs), [None] * len(outs)
            for j, (i, shape, dtype) in enumerate(outs):
                # last call's buffer, unless something outside holds it (references here:
                # `prev`, getrefcount's argument and, on the CPU, the pointer kept to it).
                # Fresh large arrays cost page faults
                if prev[j] is None or sys.getrefcount(prev[j]) > held:
                    prev[j] = xp.empty(shape, dtype)
                    if ptr is not None:
                        made[j] = ptr(_ARRAY_TYPES[dtype], prev[j])
                env[i] = prev[j]
            for i, j in aliased:  # written in place, over input slot j
                env[i] = env[j]
            if prof is not None:
                t0 = _now()
            if ptr is None:  # CUDA: the launcher takes the device arrays
                func([env[i] for i in ins] + prev)
            else:
                func(*[ptr(_ARRAY_TYPES[env[i].dtype], env[i])
                       if env[i].flags.c_contiguous else _pointer(env[i], ffi)
                       for i in ins], *made)
            if prof is not None:
                prof.program_step(program, step, t0, _now(), env)
            for j in fresh:
                prev[j] = made[j] = None
            for i in drop:
                env[i] = None
            if in_drops:
                for i in in_drops.get(id(step), ()):
                    env[i] = None
        return [env[i] for i in self._output_slots]

    def _refuse(self, k: int, arrays: list) -> None:
        want = [(tuple(lay.shape), lay.strides) for lay in self.plan.input_layouts(k)]
        got = [(a.shape, tuple(s // a.itemsize for s in _strides(a.shape, a.strides)))
               for a in arrays]
        raise RuntimeError(f"kernel {self.plan.kernels[k].name} was generated for input "
                           f"layouts (shape, element strides) {want}, got {got}")


def _strides(shape: tuple, strides: tuple) -> tuple:
    """Strides with those of size-1 dims zeroed (see `layouts.layout_of`)."""
    if 1 not in shape:
        return strides
    return tuple(0 if n == 1 else s for n, s in zip(shape, strides))


def _reusable(graph, steps) -> set:
    """ids of the extern nodes that may write their result over input 0's array (ops that
    declare `reuses_input0`: index_put, whose chains accumulate the gradient of many slices of
    one tensor, an RNN's time steps, and copied the whole tensor at each link). Input 0 must
    be fresh memory made by this program (a kernel's output, a dense library result, a
    source such as zeros, or such a write), neither an input nor an output of the graph, and
    read by no later step, directly or through anything that may share its memory. Whether
    the array owns its memory is checked again per call."""
    never = {id(n) for n in graph.inputs} | {id(n) for n in graph.outputs}
    fresh, last = set(), {}
    for pos, st in enumerate(steps):
        if not isinstance(st, fuse.Extern):
            fresh.update(id(o) for o in st.outputs)
            for i in st.inputs:
                last[id(i)] = pos
            continue
        n = st.node
        for i in n.inputs:
            last[id(i)] = pos
        if n.opdef.reuses_input0 or (n.inputs and not may_alias(n)) or \
                (not n.inputs and n.op != "constant"):  # (constants are made once, kept)
            fresh.add(id(n))
    for st in reversed(steps):  # what may share an input's memory is read as that input
        if isinstance(st, fuse.Extern) and not st.node.opdef.reuses_input0 and \
                may_alias(st.node):
            for i in st.node.inputs:
                if id(st.node) in never:
                    never.add(id(i))
                last[id(i)] = max(last.get(id(i), -1), last.get(id(st.node), -1))
    out = set()
    for pos, st in enumerate(steps):
        if isinstance(st, fuse.Extern) and st.node.opdef.reuses_input0 and st.node.inputs:
            x = st.node.inputs[0]
            if id(x) in fresh and id(x) not in never and last.get(id(x)) == pos and \
                    sum(i is x for i in st.node.inputs) == 1:
                out.add(id(st.node))
    return out


def _pointer(a, ffi):
    ctype = C_ARRAY_TYPES[a.dtype]
    if a.flags.c_contiguous:
        return ffi.from_buffer(ctype + "[]", a)
    return ffi.cast(ctype + "*", a.ctypes.data)  # strided views are read in place
