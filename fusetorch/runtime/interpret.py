"""The reference interpreter: run a graph node by node with the eager implementations.

It is the meaning of a graph: compiled programs are tested against it, and it is what runs a
captured graph on new inputs before any compiler is involved.
"""
from __future__ import annotations

from ..ir.graph import Graph
from .device import NP_DTYPES


def run_graph(graph: Graph, inputs: list, impl: dict, xp) -> list:
    """Evaluate `graph` on arrays `inputs` (one per graph input) with the eager table `impl`."""
    env: dict[int, object] = {}
    for node, value in zip(graph.inputs, inputs):
        env[id(node)] = value
    for node in graph.nodes:
        if node.op == "input":
            continue
        if node.op == "constant" and not node.inputs:
            out = xp.asarray(node.attrs["value"], dtype=NP_DTYPES[node.dtype])
        else:
            args = [env[id(i)] for i in node.inputs]
            out = impl[node.op](*args, **node.attrs) if node.attrs else impl[node.op](*args)
        out = xp.asarray(out)
        if out.shape != node.shape:  # a data-dependent size (nonzero) differs from the trace's
            raise RuntimeError(
                f"{node.op} gave shape {list(out.shape)} but the graph was recorded with "
                f"{list(node.shape)}; a data-dependent shape cannot change between runs")
        if out.dtype != NP_DTYPES[node.dtype]:
            out = out.astype(NP_DTYPES[node.dtype])
        env[id(node)] = out
    return [env[id(o)] for o in graph.outputs]
