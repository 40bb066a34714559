"""The one schedule form of fusetorch's executors: a graph's values numbered by the slots of one
list, its steps in order, and after each step the slots it read last (its drop points).

Two settings run it. On arrays, the `Runner` (runtime/runner.py): a built program's, whose steps
are fused kernels or extern ops, or one with no kernels, every node an extern step of the eager
table (the interpreter); on Tensors, autograd's recorded backward
(`tracer.autograd._run_recorded`, for create_graph and traces) walks a graph's `Schedule` with
Tensors, each node through dispatch (`Schedule.run_with`). Each is made once per graph (or per
program) and run many times; a run copies a list and indexes it, nothing else.
"""
from __future__ import annotations

from ..ir.graph import Graph


def drop_points(reads: list, keep) -> list:
    """For each step (given by the slots it reads, in order), the slots it is the last reader
    of, less those in `keep` (outputs, and inputs the caller keeps): the values let go once
    that step has run."""
    last: dict = {}
    for pos, slots in enumerate(reads):
        for i in slots:
            last[i] = pos  # (positions grow: the last write is the last reader)
    out: list = [[] for _ in reads]
    for i, pos in last.items():
        if i not in keep:
            out[pos].append(i)
    return [tuple(d) for d in out]


class Schedule:
    """A graph's nodes as steps `(node, input slots, output slot)` over one list of slots (its
    inputs first), and their drop points with and without `consume` (the caller hands its
    input values over: each is let go after its last reader too)."""

    __slots__ = ("graph", "n_inputs", "n_slots", "steps", "outputs", "slot", "_drops")

    def __init__(self, graph: Graph):
        self.graph = graph
        slot = {id(n): i for i, n in enumerate(graph.inputs)}
        steps = []
        for node in graph.nodes:
            if node.op == "input":
                continue
            out = slot[id(node)] = len(slot)
            steps.append((node, tuple(slot[id(i)] for i in node.inputs), out))
        self.slot, self.steps, self.n_slots = slot, steps, len(slot)
        self.n_inputs = len(graph.inputs)
        self.outputs = tuple(slot[id(o)] for o in graph.outputs)
        self._drops = [None, None]

    def drops(self, consume: bool) -> list:
        """Per step, the slots let go after it: each value after its last reader, never an
        output, the graph's inputs only with `consume` (a backward graph's inputs are the saved
        forward values: handed over, each lives until the step that last needs it, as PyTorch
        frees a node's saved tensors as its backward runs)."""
        d = self._drops[consume]
        if d is None:
            keep = set(self.outputs)
            if not consume:
                keep.update(range(self.n_inputs))
            d = self._drops[consume] = drop_points([ins for _, ins, _ in self.steps], keep)
        return d

    def run_with(self, values: list, call, consume: bool = False) -> list:
        """The outputs, each step's value made by `call(node, its input values)`: the setting
        with values of any kind (autograd's Tensors through dispatch). `consume`: `values` is
        handed over (emptied) and each is let go after its last reader."""
        env = [None] * self.n_slots
        env[:self.n_inputs] = values
        if consume:
            values.clear()
        for (node, ins, out), drop in zip(self.steps, self.drops(consume)):
            env[out] = call(node, [env[i] for i in ins])
            for i in drop:
                env[i] = None
        return [env[i] for i in self.outputs]
