"""The reference interpreter: run a graph node by node with the eager implementations.

It is the meaning of a graph: compiled programs are tested against it, and it is what runs a
captured graph on new inputs before any compiler is involved.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph
from .device import NP_DTYPES


def run_graph(graph: Graph, inputs: list, impl: dict, xp, hook=None,
              consume: bool = False) -> list:
    """Evaluate `graph` on arrays `inputs` (one per graph input) with the eager table `impl`.
    `hook` (a profiler's, or None) is told when each node starts (`begin(node)`) and ends
    (`end(node, value)`). `consume`: the caller hands the arrays over (the list is emptied),
    so each input is let go after its last reader too (see `_last_uses`)."""
    env: dict[int, object] = {}
    for node, value in zip(graph.inputs, inputs):
        env[id(node)] = value
    last_use, view_use, input_reads = _last_uses(graph)
    # values dropped after their last reader (a first, interpreted, backward of a transformer
    # held every intermediate to its end: 3.1 GB where its compiled program peaks at 1.2)
    drop: dict[int, list] = {}
    for key, pos in last_use.items():
        if pos < len(graph.nodes):  # (outputs and inputs are read "at the end")
            drop.setdefault(pos, []).append(key)
    if consume:
        inputs.clear()
        for key, pos in input_reads.items():
            drop.setdefault(pos, []).append(key)
    owners: dict[int, int] = {}  # array id -> how many env entries hold that very array
    mixed = any(node.opdef.crosses_device for node in graph.nodes)
    impl0, xp0 = impl, xp
    for pos, node in enumerate(graph.nodes):
        if node.op == "input":
            continue
        if hook is not None:
            hook.begin(node)
        args = [env[id(i)] for i in node.inputs]
        if mixed:
            args, impl, xp = _where_inputs_live(node, args, impl0, xp0)
        if node.opdef.reuses_input0 and _dead_after(node.inputs[0], args[0], pos, last_use,
                                                       owners) \
                and view_use.get(id(node.inputs[0]), -1) < pos:
            out = eval_node(node, args, impl, xp, inplace=True)
            owners[id(args[0])] -= 1  # the dead input hands its buffer to this node
        else:
            out = eval_node(node, args, impl, xp)
        if out.shape != node.shape:  # a data-dependent size (nonzero) differs from the trace's
            raise RuntimeError(
                f"{node.op} gave shape {list(out.shape)} but the graph was recorded with "
                f"{list(node.shape)}; a data-dependent shape cannot change between runs")
        env[id(node)] = out
        owners[id(out)] = owners.get(id(out), 0) + 1
        if hook is not None:
            hook.end(node, out)
        for key in drop.get(pos, ()):
            a = env.pop(key)
            held = owners.get(id(a), 0)
            if held > 1:
                owners[id(a)] = held - 1
            else:
                owners.pop(id(a), None)
    return [env[id(o)] for o in graph.outputs]


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


def _last_uses(graph: Graph) -> tuple[dict, dict, dict]:
    """(node id -> position of its last reader, node id -> last read of any value that may be
    a view of its array, graph input id -> position of its last reader). The last: for each
    graph input that is not an output and that a node reads; a backward graph's inputs are the
    saved forward values: dropped there (`consume`), each lives until the step that last needs
    it, not to the end of the run (PyTorch frees each node's saved tensors as its backward
    runs). One walk over the edges for all three: an eager backward of a structure not seen
    before (a sentence of another length) runs this graph once."""
    last: dict = {}
    for pos, node in enumerate(graph.nodes):
        for i in node.inputs:
            last[id(i)] = pos  # (positions grow: the last write is the last reader)
    outs = {id(o) for o in graph.outputs}
    end = len(graph.nodes)
    input_reads = {}
    for n in graph.inputs:
        k = id(n)
        if k not in outs and k in last:
            input_reads[k] = last[k]
        last[k] = end  # the caller's arrays are never written
    for k in outs:
        last[k] = end  # outputs live to the end
    views: dict = {}
    for node in reversed(graph.nodes):  # a view's own views are folded in before it
        if node.opdef.may_view and node.inputs:
            src = id(node.inputs[0])
            seen = max(last.get(id(node), -1), views.get(id(node), -1))
            if seen > views.get(src, -1):
                views[src] = seen
    return last, views, input_reads


def _dead_after(node, array, pos: int, last_use: dict, owners: dict) -> bool:
    """True if `array` (the value of `node`) is used by no later node, is held by no other
    node, and is its own memory (not a view of something that may still be live)."""
    return (last_use.get(id(node)) == pos and owners.get(id(array)) == 1
            and getattr(array, "base", 0) is None and getattr(array.flags, "writeable", True))


class Schedule:
    """`run_graph` for one graph run many times on small arrays (a replayed eager composite):
    the nodes as steps over slots of a list, made once, with constants evaluated once. The
    values are `eval_node`'s, so the same as `run_graph`'s (without its in-place reuse)."""

    __slots__ = ("steps", "n_inputs", "outputs", "xp", "_env", "_copied")

    def __init__(self, graph: Graph, impl: dict, xp):
        slot = {id(n): i for i, n in enumerate(graph.inputs)}
        consts, steps = [], []
        for node in graph.nodes:
            if node.op == "input":
                continue
            slot[id(node)] = len(slot)
            if node.op == "constant" and not node.inputs:
                consts.append((slot[id(node)], eval_node(node, [], impl, xp)))
                continue
            # (a step's function and its input slots unpacked by arity: a call per step is
            # a few hundred ns, a comprehension building its arguments as much again)
            ins = tuple(slot[id(i)] for i in node.inputs)
            steps.append((impl[node.op], len(ins), ins[0] if ins else None,
                          ins[1] if len(ins) > 1 else None, ins, node.attrs or None,
                          slot[id(node)], NP_DTYPES[node.dtype]))
        self.steps, self.n_inputs, self.xp = steps, len(graph.inputs), xp
        self.outputs = tuple(slot[id(o)] for o in graph.outputs)
        # a run starts from a copy of this list: the constants, evaluated once, in their slots
        self._env = [None] * len(slot)
        for i, v in consts:
            self._env[i] = v
        # an output that is a constant is copied: its array is kept for the next run, and the
        # caller may write into what it gets (a gradient zeroed in place)
        made_once = {i for i, _ in consts}
        self._copied = tuple(i for i in self.outputs if i in made_once)

    def run(self, inputs: list) -> list:
        env = self._env.copy()
        env[:self.n_inputs] = inputs
        xp = self.xp
        ndarray, asarray = xp.ndarray, xp.asarray
        for fn, n, i0, i1, ins, attrs, out, dtype in self.steps:
            if n == 1:
                a = fn(env[i0], **attrs) if attrs else fn(env[i0])
            elif n == 2:
                a = fn(env[i0], env[i1], **attrs) if attrs else fn(env[i0], env[i1])
            else:
                a = fn(*[env[i] for i in ins], **attrs) if attrs else fn(*[env[i] for i in ins])
            if a.__class__ is not ndarray:
                a = asarray(a)
            if a.dtype is not dtype and a.dtype != dtype:
                a = a.astype(dtype)
            env[out] = a
        if self._copied:
            return [env[i].copy() if i in self._copied else env[i] for i in self.outputs]
        return [env[i] for i in self.outputs]
