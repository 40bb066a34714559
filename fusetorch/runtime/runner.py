"""The one runner of a graph on arrays: its schedule (runtime/schedule.py's form, made once)
run step by step, with per-use settings:

- kernels or none. Made from a built program's plan (`plan`, `built`), its steps are the
  fused groups' kernels and the partition's extern steps (the eager implementations,
  specialized to their shapes where one offers `specialize`); values from outside the kernels
  are guarded (a kernel is only ever called on the layout it was generated for). Made without
  one (`Runner(graph, impl, xp)`), every node is an extern step of the eager table: the
  reference interpreter, the meaning of a graph, which compiled programs are tested against
  and which runs a captured graph before any compiler is involved (a program until its
  kernels are built, a backward graph until it is compiled, a small replayed composite).
- buffer reuse. A kernel's output buffers are kept for the next call when nothing outside
  holds them; an extern step whose op `reuses_input0` writes over its dead input 0, proven
  from the plan where there is one (`_reusable`), else by counting at run time the slots that
  hold each array (`_dead`, for values above REUSE_MIN).
- hooks: a node hook (`begin(node)`, `end(node, value)`: anomaly mode, the profiler of an
  interpreted backward) and a program's profiler (`prof.program_step`).

A run copies a list and indexes it: no dict lookups, no layout tuples, no constants evaluated
(they are made once). `run` takes the lean loop where no setting applies (no kernels, hook,
device crossing, reuse or data-dependent size: a replayed composite or a small backward, where
a few hundred ns a step are the cost), else the general loop, which does all of them. Whether
a graph ran with kernels, and why not, is its holder's to say (`program.why_interpreted`,
`Program.status`, `fusetorch.compiler.explain`); `kernels` says whether this runner has any.
"""
from __future__ import annotations

import math
import sys
import time

from ..codegen import fuse
from ..ir.graph import Graph
from .device import C_ARRAY_TYPES, NP_DTYPES
from .interpret import _dead, _last_uses, _own, _shape_changed, _where_inputs_live, eval_node
from .layouts import byte_strides, layout_kind, may_alias
from .schedule import Schedule, drop_points
from ..ir.roles import Role

_now = time.perf_counter_ns
KEEP_BYTES = 1 << 20  # intermediate kernel outputs up to this size keep their buffer
# elements of a value from which an interpreted step writes it into its dead input 0 (an
# index_put chain into a large gradient) and letting values go early matters: below it the
# lean loop, without counting holders, is faster
REUSE_MIN = 1 << 12
_EXTERN, _KERNEL = "extern", "kernel"  # schedule step kinds
_ARRAY_TYPES = {d: t + "[]" for d, t in C_ARRAY_TYPES.items()}


def run_graph(graph: Graph, inputs: list, impl: dict, xp, hook=None,
              consume: bool = False) -> list:
    """`graph` on arrays `inputs` once, interpreted (`Runner(graph, impl, xp).run`): for a
    graph run again, keep its Runner."""
    return Runner(graph, impl, xp).run(inputs, consume=consume, hook=hook)


class Runner:
    """`schedule`: with kernels, one tuple per step of the partition, in its order (the
    profiler matches them by position): `(_EXTERN, fn, input slots, attrs, output slot, numpy
    dtype, dense, reuse, node, drop)` or `(_KERNEL, k, function, input slots, guarded, outputs,
    aliased, fresh, drop)`. Interpreted, the extern tuples of each loop are made at its first
    run (`_plan`)."""

    __slots__ = ("graph", "impl", "xp", "plan", "ffi", "n_inputs", "outputs", "schedule",
                 "_buffers", "_reuse", "_pointers", "_env", "_input_drops",
                 "_copied", "_crosses", "_count", "_lean", "_form", "_nodes", "_at_step",
                 "_plans", "_steps")

    def __init__(self, graph: Graph, impl: dict, xp, plan=None, built=None,
                 schedule: Schedule | None = None):
        """`plan` and `built` (kernel_plan.make's and build.build's): with kernels; else
        interpreted, over `schedule` where it is the graph's (shared with autograd's
        tensor-mode run)."""
        self.graph, self.impl, self.xp, self.plan = graph, impl, xp, plan
        self.ffi = built.ffi if built is not None else None
        self.n_inputs = len(graph.inputs)
        self._buffers: dict = {}  # kernel index -> its output arrays from the last call
        # taken (popped) by the run that may reuse those buffers; a run that finds it taken
        # (another thread's, or a nested one) allocates its own, so two runs never share an
        # output. A list's pop and append are atomic and cost half a lock's acquire and release
        self._reuse = [True]
        self._pointers: dict = {}
        self._crosses = any(Role.CROSSES_DEVICE in node.opdef.roles for node in graph.nodes)
        self._input_drops: dict = {}
        self._plans = [None, None, None, None]
        self._count = self._lean = False
        self._form = self._nodes = self._at_step = None
        self._steps: list = []
        if plan is None:
            if schedule is None or schedule.graph is not graph:
                schedule = Schedule(graph)
            made_once, slot = self._interpreted(schedule), schedule.slot
        else:
            made_once, slot = self._with_kernels(graph, plan, built)
        # an output that is a constant, or may be a view of one, is copied where it can be
        # written: the constant's array is kept for the next run, and the caller may write
        # into what it gets (a gradient zeroed in place)
        if made_once:
            for node in graph.nodes:
                if Role.MAY_VIEW in node.opdef.roles and node.inputs and id(node) in slot and \
                        slot.get(id(node.inputs[0])) in made_once:
                    made_once.add(slot[id(node)])
        self._copied = frozenset(i for i in self.outputs if i in made_once)

    @property
    def kernels(self) -> int:
        """How many compiled kernels this runner calls (0: interpreted)."""
        return len(self._buffers)

    # ------------------------------------------------------------ making the schedule

    def _interpreted(self, schedule: Schedule) -> set:
        """Every node an extern step of the eager table; its constants evaluated once, and
        which steps may write into their dead input 0 found here, not per run."""
        impl, xp = self.impl, self.xp
        self._form = schedule
        last_use, view_use = _last_uses(schedule)
        consts, nodes, at_step = [], [], []
        reuses = dynamic = False
        for pos, (node, ins, out) in enumerate(schedule.steps):
            if node.op == "constant" and not node.inputs:
                consts.append((out, eval_node(node, [], impl, xp)))
                continue
            at_step.append(pos)
            # input 0 read last here and no value that may be a view of it read later: the
            # node may take its buffer, if at the run it is its own array held by no other
            # value (`_dead`); only for large values, where the copy saved pays for counting
            # the holders of every array in the general loop
            reuse = bool(Role.REUSES_INPUT0 in node.opdef.roles and ins and
                         math.prod(node.shape) > REUSE_MIN and
                         last_use.get(ins[0]) == pos and view_use.get(ins[0], -1) < pos)
            reuses = reuses or reuse
            dynamic = dynamic or node.opdef.shape is None  # (nonzero: checked each run)
            nodes.append((node, ins, out, reuse))
        self._nodes, self._at_step = nodes, at_step
        self.outputs = schedule.outputs
        self.schedule = []
        self._count = reuses
        self._lean = not (reuses or dynamic or self._crosses)
        # a run starts from a copy of this list: the constants, evaluated once, in their slots
        self._env = [None] * schedule.n_slots
        for i, v in consts:
            self._env[i] = v
        return {i for i, _ in consts}

    def _plan(self, k: int) -> list:
        """The interpreted steps of loop `k`: 0 lean, 1 lean consuming, 2 general, 3 general
        consuming."""
        consume, general = k & 1, k >> 1
        # values let go after their last reader (a first, interpreted, backward of a
        # transformer held every intermediate to its end: 3.1 GB where its compiled program
        # peaks at 1.2); outputs and the caller's arrays are read "at the end"; with
        # `consume` the caller's arrays too, each after its last reader
        frees = [()] * len(self._nodes)
        # (a graph of small values only keeps them to the end in the lean loop: letting each
        # go frees nothing that matters and costs a few percent of a small composite's run)
        if general or not all(n.opdef.shape is not None and math.prod(n.shape) <= REUSE_MIN
                              for n in self.graph.nodes):
            drops = self._form.drops(bool(consume))
            frees = [drops[pos] for pos in self._at_step]
        impl = self.impl
        if general:
            steps = [(_EXTERN, impl[node.op], ins, node.attrs, out, NP_DTYPES[node.dtype],
                      False, reuse, node, frees[j])
                     for j, (node, ins, out, reuse) in enumerate(self._nodes)]
        else:
            # (a lean step's function and its input slots unpacked by arity: a call per step
            # is a few hundred ns, a comprehension building its arguments as much again)
            steps = [(impl[node.op], len(ins), ins[0] if ins else None,
                      ins[1] if len(ins) > 1 else None, ins, node.attrs or None, out,
                      NP_DTYPES[node.dtype], frees[j])
                     for j, (node, ins, out, _) in enumerate(self._nodes)]
        self._plans[k] = steps
        return steps

    def _with_kernels(self, graph: Graph, plan, built) -> tuple:
        """The partition's steps: its groups the built kernels, the rest extern steps; (the
        constants' slots, node id -> slot)."""
        slot = {id(n): i for i, n in enumerate(graph.inputs)}
        from_kernel = set()  # slots written by kernels: C-contiguous, of a known shape
        impl, xp = self.impl, self.xp
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
                                 NP_DTYPES[node.dtype], dense, id(node) in reusable, node))
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
        self.outputs = tuple(slot[id(o)] for o in graph.outputs)
        # Each step is followed by the slots it read last (`drop`: not the inputs, the outputs
        # or constants), and by the positions of its output buffers that are intermediate
        # values larger than KEEP_BYTES, not kept for the next call (`fresh`): such a value
        # lives from its kernel to its last reader, not to the end of the run and on until the
        # next (a transformer's compiled backward kept ~0.7 GB of intermediates between steps
        # so). Small ones are kept: a fresh buffer and its pointer each call cost a 64x1000
        # two-layer step ~0.1 ms.
        outs_kept = set(self.outputs) | {i for i, _ in consts}
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
        return {i for i, _ in consts}, slot

    # ------------------------------------------------------------ running

    def run(self, arrays: list, consume: bool = False, hook=None, program=None,
            prof=None) -> list:
        """The graph's outputs for input `arrays` (one per graph input). `consume`: the caller
        hands the arrays over (the list is emptied) and each is let go after the step that
        last reads it. `hook` (anomaly mode's checker, a profiler's spans, or None) is told
        when each node starts (`begin(node)`) and ends (`end(node, value)`); `prof`: the
        active profiler, told of each step as a step of `program`."""
        env = self._env.copy()  # (a list of the call's own: runs may nest, in backward hooks)
        env[:self.n_inputs] = arrays
        if consume:
            arrays.clear()
        if self._lean and hook is None and prof is None:  # interpreted, no setting applies:
            # the lean loop, inline (a call is a tenth of a small composite's run), each
            # step's function and input slots unpacked by arity
            xp = self.xp
            ndarray, asarray = xp.ndarray, xp.asarray
            k = 1 if consume else 0
            for fn, n, i0, i1, ins, attrs, out, dtype, frees in \
                    (self._plans[k] or self._plan(k)):
                if n == 1:
                    a = fn(env[i0], **attrs) if attrs else fn(env[i0])
                elif n == 2:
                    a = fn(env[i0], env[i1], **attrs) if attrs else fn(env[i0], env[i1])
                else:
                    a = fn(*[env[i] for i in ins], **attrs) if attrs else \
                        fn(*[env[i] for i in ins])
                if a.__class__ is not ndarray:
                    a = asarray(a)
                if a.dtype is not dtype and a.dtype != dtype:
                    a = a.astype(dtype)
                env[out] = a
                if frees:
                    for i in frees:
                        env[i] = None
        elif self.plan is None:
            k = 3 if consume else 2
            self._run_general(env, self._plans[k] or self._plan(k), hook, prof, program, False,
                              None)
        else:
            steps = self._steps if prof is None else self.schedule  # (the profiler: all)
            in_drops = self._input_drops if consume else None
            try:
                token = self._reuse.pop()
            except IndexError:
                self._run_general(env, steps, hook, prof, program, False, in_drops)
            else:
                try:
                    self._run_general(env, steps, hook, prof, program, True, in_drops)
                finally:
                    self._reuse.append(token)
        if self._copied:
            return [_own(env[i]) if i in self._copied else env[i] for i in self.outputs]
        return [env[i] for i in self.outputs]

    def _run_general(self, env: list, steps: list, hook, prof, program, reuse_buffers: bool,
                     in_drops: dict | None) -> None:
        ffi = self.ffi
        ptr = ffi.from_buffer if ffi is not None else None
        held = 2 if ptr is None else 3
        impl0, xp0 = self.impl, self.xp
        xp = xp0
        crosses = self._crosses and self.plan is None
        owners: dict | None = {} if self._count else None  # array id -> slots holding it
        for step in steps:
            if step[0] is _EXTERN:
                _, fn, args, attrs, out, want, dense, reuse, node, drop = step
                if hook is not None:
                    hook.begin(node)
                if prof is not None:
                    t0 = _now()
                values = [env[i] for i in args]
                if crosses:
                    values, impl, xp = _where_inputs_live(node, values, impl0, xp0)
                    fn = impl[node.op]
                if reuse and (_dead(values[0], owners) if owners is not None else
                              values[0].base is None and
                              getattr(values[0].flags, "writeable", True)):
                    # its input 0 is dead from here on and owns its memory: written over
                    a = fn(*values, **attrs, inplace=True)
                    if owners is not None:  # the dead input hands its buffer to this node
                        owners[id(values[0])] -= 1
                else:
                    a = fn(*values, **attrs)
                values = None  # (so that letting an input go below frees it)
                if type(a) is not xp.ndarray or a.dtype is not want:
                    a = xp.asarray(a)
                    if a.dtype != want:
                        a = a.astype(want)
                if dense and not a.flags.c_contiguous:  # the layout the plan assumed
                    a = xp.ascontiguousarray(a)
                if a.shape != node.shape:  # a data-dependent size (nonzero) differs
                    _shape_changed(node, a)
                env[out] = a
                if owners is not None:
                    owners[id(a)] = owners.get(id(a), 0) + 1
                if hook is not None:
                    hook.end(node, a)
                if prof is not None:
                    prof.program_step(program, step, t0, _now(), env)
                for i in drop:
                    if owners is not None:
                        _let_go(owners, env[i])
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

    def _refuse(self, k: int, arrays: list) -> None:
        want = [(tuple(lay.shape), lay.strides) for lay in self.plan.input_layouts(k)]
        got = [(a.shape, tuple(s // a.itemsize for s in _strides(a.shape, a.strides)))
               for a in arrays]
        raise RuntimeError(f"kernel {self.plan.kernels[k].name} was generated for input "
                           f"layouts (shape, element strides) {want}, got {got}")


def _let_go(owners: dict, array) -> None:
    """One slot fewer holds `array` (the general interpreted loop's count, for `_dead`)."""
    k = id(array)
    n = owners.get(k, 0)
    if n > 1:
        owners[k] = n - 1
    else:
        owners.pop(k, None)


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
        if Role.REUSES_INPUT0 in n.opdef.roles or (n.inputs and not may_alias(n)) or \
                (not n.inputs and n.op != "constant"):  # (constants are made once, kept)
            fresh.add(id(n))
    for st in reversed(steps):  # what may share an input's memory is read as that input
        if isinstance(st, fuse.Extern) and Role.REUSES_INPUT0 not in st.node.opdef.roles and \
                may_alias(st.node):
            for i in st.node.inputs:
                if id(st.node) in never:
                    never.add(id(i))
                last[id(i)] = max(last.get(id(i), -1), last.get(id(st.node), -1))
    out = set()
    for pos, st in enumerate(steps):
        if isinstance(st, fuse.Extern) and Role.REUSES_INPUT0 in st.node.opdef.roles and \
                st.node.inputs:
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
