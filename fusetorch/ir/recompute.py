"""The joint forward/backward split: which forward values the backward reads from memory,
and which it recomputes. (A "partition" elsewhere is codegen/fuse.py's grouping of a graph's
nodes into kernels.)

`ir.grad.backward_graph` asks for every forward value a VJP rule reads. Saving each one costs
a write in the forward and a read in the backward, plus memory held between the two. A value
that one elementwise op computes from things that are saved anyway (graph inputs, other saved
values, constants) is cheaper to recompute: the backward's kernels fuse the recomputation, so
it costs no memory traffic at all. E.g. `sigmoid(x) * tanh(x)` saves x alone, not the two
activations.

    new_values, graph = recompute(bw.graph, bw.n_cotangents, bw.values, fusible)
"""
from __future__ import annotations

from typing import Callable

from .graph import Graph, Node, make_node


def recompute(graph: Graph, n_cotangents: int, values: list,
              cheap: Callable[[Node], bool]) -> tuple[list, Graph]:
    """`values`: (forward node, part) behind each value input of the backward `graph`.
    Returns the values to save instead and the backward graph reading them, where each
    recomputed value is rebuilt from its inputs. `cheap(node)`: may `node` be recomputed."""
    saved = {id(f) for f, part in values if part == "value"}
    redo: set[int] = set()
    # forward values in topological order: a value is recomputable when its op is cheap and
    # each input is free in the backward (a forward input, a scalar constant, a value saved
    # anyway, or itself recomputable)
    for f in _forward_order([f for f, part in values if part == "value"]):
        if id(f) in saved and cheap(f) and all(
                i.op == "input" or _scalar_const(i) or id(i) in saved or id(i) in redo
                for i in f.inputs):
            redo.add(id(f))
    if not redo:
        return values, graph
    new_values: list = []
    holder: dict[tuple, Node] = {}  # (id(forward node), part) -> placeholder in the new graph

    def placeholder(f: Node, part: str) -> Node:
        key = (id(f), part)
        if key not in holder:
            holder[key] = make_node("input", [], {"shape": f.shape, "dtype": f.dtype})
            new_values.append((f, part))
        return holder[key]

    rebuilt: dict[int, Node] = {}

    def value(f: Node) -> Node:
        if id(f) not in redo:
            return placeholder(f, "value")
        if id(f) not in rebuilt:
            ins = [i if _scalar_const(i) else value(i) for i in f.inputs]
            rebuilt[id(f)] = make_node(f.op, ins, dict(f.attrs), f.meta, shape=f.shape)
        return rebuilt[id(f)]

    env: dict[int, Node] = {}
    for ph, (f, part) in zip(graph.inputs[n_cotangents:], values):
        env[id(ph)] = value(f) if part == "value" else placeholder(f, part)
    for n in graph.nodes:
        if id(n) in env:
            continue
        if n.op == "input":
            env[id(n)] = n  # a cotangent
            continue
        ins = tuple(env[id(i)] for i in n.inputs)
        env[id(n)] = n if all(a is b for a, b in zip(ins, n.inputs)) else \
            make_node(n.op, ins, dict(n.attrs), n.meta, shape=n.shape)
    inputs = list(graph.inputs[:n_cotangents]) + [holder[(id(f), p)] for f, p in new_values]
    return new_values, Graph(inputs, [env[id(o)] for o in graph.outputs])


def _scalar_const(n: Node) -> bool:
    return n.op == "constant" and n.shape == ()


def _forward_order(nodes: list) -> list:
    """`nodes` and what they are computed from, producers first (iterative DFS)."""
    order, seen, stack = [], set(), [(n, False) for n in reversed(nodes)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        stack.extend((i, False) for i in reversed(n.inputs) if id(i) not in seen)
    return order
