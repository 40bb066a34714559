"""The reference interpreter: run a graph node by node with the eager implementations.

It is the meaning of a graph: compiled programs are tested against it, and it is what runs a
captured graph on new inputs before any compiler is involved (a program until its kernels are
built, a backward graph until it is compiled, a small replayed composite). An `Interpreter` is
a graph's `Schedule` (runtime/schedule.py) with the eager table on arrays: made once per graph
and run many times; `run_graph` is one run.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Graph
from .device import NP_DTYPES
from .schedule import Schedule


# elements of a value from which writing it into its dead input 0 (an index_put chain into a
# large gradient) beats the copy, and letting it go early matters: below it the lean loop,
# without the bookkeeping, is faster
REUSE_MIN = 1 << 12


def run_graph(graph: Graph, inputs: list, impl: dict, xp, hook=None,
              consume: bool = False) -> list:
    """`graph` on arrays `inputs` once (`Interpreter(graph, impl, xp).run`): for a graph run
    again, keep its `Interpreter`."""
    return Interpreter(graph, impl, xp).run(inputs, consume=consume, hook=hook)


class Interpreter:
    """The runner with no kernels: a graph's `Schedule` (runtime/schedule.py: slots, steps,
    drop points; made once, shared with autograd's tensor-mode run where given) run with the
    eager table `impl` on arrays, its constants evaluated once, and which steps may write into
    their dead input 0 found here, not per run. `run` walks the steps in one of two loops: a
    lean one (a replayed composite or a backward of small arrays, where a few hundred ns per
    step are the cost) and a general one for what the lean one leaves out: a hook, devices
    crossed (`to_device`), in-place reuse (`reuses_input0`), data-dependent sizes."""

    __slots__ = ("graph", "impl", "xp", "n_inputs", "outputs", "schedule", "_nodes",
                 "_at_step", "_plans", "_env", "_copied", "_general", "_crosses")

    def __init__(self, graph: Graph, impl: dict, xp, schedule: Schedule | None = None):
        self.graph, self.impl, self.xp = graph, impl, xp
        if schedule is None or schedule.graph is not graph:
            schedule = Schedule(graph)
        self.schedule = schedule
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
            reuse = bool(node.opdef.reuses_input0 and ins and
                         math.prod(node.shape) > REUSE_MIN and
                         last_use.get(ins[0]) == pos and view_use.get(ins[0], -1) < pos)
            reuses = reuses or reuse
            dynamic = dynamic or node.opdef.shape is None  # (nonzero: checked each run)
            nodes.append((node, ins, out, reuse))
        self._nodes, self._at_step = nodes, at_step
        # the steps of each loop, with and without `consume`: made at their first run (a
        # graph run once, the first backward of a structure, makes one)
        self._plans = [None, None, None, None]
        self.n_inputs = schedule.n_inputs
        self.outputs = schedule.outputs
        # a run starts from a copy of this list: the constants, evaluated once, in their slots
        self._env = [None] * schedule.n_slots
        for i, v in consts:
            self._env[i] = v
        # an output that is a constant, or may be a view of one, is copied where it can be
        # written: the constant's array is kept for the next run, and the caller may write
        # into what it gets (a gradient zeroed in place)
        made_once = {i for i, _ in consts}
        if made_once:
            for node, ins, out, _ in nodes:
                if node.opdef.may_view and ins and ins[0] in made_once:
                    made_once.add(out)
        self._copied = frozenset(i for i in self.outputs if i in made_once)
        self._crosses = any(node.opdef.crosses_device for node in graph.nodes)
        self._general = reuses or dynamic or self._crosses

    def _plan(self, k: int) -> list:
        """The steps of loop `k`: 0 lean, 1 lean consuming, 2 general, 3 general consuming."""
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
            drops = self.schedule.drops(bool(consume))
            frees = [drops[pos] for pos in self._at_step]
        if general:
            steps = [(node, ins, out, reuse, frees[j])
                     for j, (node, ins, out, reuse) in enumerate(self._nodes)]
        else:
            # (a lean step's function and its input slots unpacked by arity: a call per step
            # is a few hundred ns, a comprehension building its arguments as much again)
            impl = self.impl
            steps = [(impl[node.op], len(ins), ins[0] if ins else None,
                      ins[1] if len(ins) > 1 else None, ins, node.attrs or None, out,
                      NP_DTYPES[node.dtype], frees[j])
                     for j, (node, ins, out, _) in enumerate(self._nodes)]
        self._plans[k] = steps
        return steps

    def run(self, inputs: list, consume: bool = False, hook=None) -> list:
        """The outputs for `inputs` (one array per graph input). `consume`: the caller hands
        the arrays over (the list is emptied), so each is let go after its last reader too.
        `hook` (a profiler's, anomaly mode's checker, or None) is told when each node starts
        (`begin(node)`) and ends (`end(node, value)`)."""
        env = self._env.copy()
        env[:self.n_inputs] = inputs
        k = 0
        if consume:
            inputs.clear()
            k = 1
        if hook is not None or self._general:
            k += 2
            self._run_general(env, self._plans[k] or self._plan(k), hook)
        else:  # the lean loop, inline (a call is a tenth of a small composite's run)
            xp = self.xp
            ndarray, asarray = xp.ndarray, xp.asarray
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
        if self._copied:
            return [_own(env[i]) if i in self._copied else env[i] for i in self.outputs]
        return [env[i] for i in self.outputs]

    def _run_general(self, env: list, steps: list, hook) -> None:
        owners: dict[int, int] = {}  # array id -> how many slots hold that very array
        impl = impl0 = self.impl
        xp = xp0 = self.xp
        crosses = self._crosses
        for node, ins, out, reuse, frees in steps:
            if hook is not None:
                hook.begin(node)
            args = [env[i] for i in ins]
            if crosses:
                args, impl, xp = _where_inputs_live(node, args, impl0, xp0)
            if reuse and _dead(args[0], owners):
                a = eval_node(node, args, impl, xp, inplace=True)
                owners[id(args[0])] -= 1  # the dead input hands its buffer to this node
            else:
                a = eval_node(node, args, impl, xp)
            args = None  # (so that letting an input go below frees it)
            if a.shape != node.shape:  # a data-dependent size (nonzero) differs from the trace's
                _shape_changed(node, a)
            env[out] = a
            owners[id(a)] = owners.get(id(a), 0) + 1
            if hook is not None:
                hook.end(node, a)
            for i in frees:
                k = id(env[i])
                env[i] = None
                held = owners.get(k, 0)
                if held > 1:
                    owners[k] = held - 1
                else:
                    owners.pop(k, None)


def _own(a):
    return a.copy() if getattr(a.flags, "writeable", True) else a


def _shape_changed(node, out) -> None:
    raise RuntimeError(
        f"{node.op} gave shape {list(out.shape)} but the graph was recorded with "
        f"{list(node.shape)}; a data-dependent shape cannot change between runs")


def _where_inputs_live(node, args: list, impl: dict, xp):
    """A graph that crosses devices (`to_device` nodes) runs each node with the table of the
    device its inputs are on. Values made by source nodes (constants, zeros) are made with the
    graph's default table, so an input on another device is copied to the node's device."""
    from .device import backend, cpu_backend
    if node.opdef.crosses_device:  # its result lives on the target: asarray it there
        be = backend(node.attrs["device"])
        return args, be.impl, be.xp
    if not args:
        return args, impl, xp
    dev = next((a for a in args if hasattr(a, "dtype") and not isinstance(a, np.ndarray)), None)
    if dev is None:  # all on the host
        return args, (impl if xp is np else cpu_backend().impl), np
    be = backend(f"cuda:{dev.device.id}")
    return [be.xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args], be.impl, be.xp


def eval_node(node, args: list, impl: dict, xp, **extra):
    """One node on its input arrays with the eager table, as an array of the node's dtype."""
    if node.op == "constant" and not node.inputs:
        out = xp.asarray(node.attrs["value"], dtype=NP_DTYPES[node.dtype])
    elif node.attrs or extra:
        out = impl[node.op](*args, **node.attrs, **extra)
    else:
        out = impl[node.op](*args)
    out = xp.asarray(out)
    if out.dtype != NP_DTYPES[node.dtype]:
        out = out.astype(NP_DTYPES[node.dtype])
    return out


# Ops declared `reuses_input0` (index_put) may write their result into input 0's buffer when
# nothing else can see it: an index_put chain accumulating many slices' gradients then costs
# the slices, not the whole. Ops declared `may_view` may return a view of (or the very) input
# 0's array: while such a result is still to be read, that input's buffer must not be written
# (conservative: more is safe).


def _last_uses(schedule: Schedule) -> tuple[dict, dict]:
    """(slot -> position of the step that reads it last, slot -> the last read of any value
    that may be a view of its array). The graph's inputs and outputs are read "at the end"
    (the caller's arrays are never written; outputs live to the end)."""
    last: dict = {}
    for pos, (_, ins, _) in enumerate(schedule.steps):
        for i in ins:
            last[i] = pos
    end = len(schedule.steps)
    for i in range(schedule.n_inputs):
        last[i] = end
    for i in schedule.outputs:
        last[i] = end
    views: dict = {}
    for node, ins, out in reversed(schedule.steps):  # a view's own views are folded in first
        if node.opdef.may_view and ins:
            seen = max(last.get(out, -1), views.get(out, -1))
            if seen > views.get(ins[0], -1):
                views[ins[0]] = seen
    return last, views


def _dead(array, owners: dict) -> bool:
    """True if `array` (a value no later step reads) is held by no other slot and is its own
    memory (not a view of something that may still be live, not the caller's: an input or a
    constant is held by no step, so its count is not 1)."""
    return (owners.get(id(array)) == 1 and getattr(array, "base", 0) is None
            and getattr(array.flags, "writeable", True))
