"""Which updates a kernel may write over the updated input's own array.

A program with `updates` (output index -> input index: the output is the input's new value,
an optimizer's update of a parameter) hands the new values to its caller, which copies them
into the inputs' arrays. Where it is safe the kernel that computes an update stores it through
the input's pointer instead, at the index it read it, and the copy disappears. Decided from
the partition and the layouts alone (pure data), before any kernel is generated.
"""
from __future__ import annotations

from ..codegen import fuse
from .layouts import is_contiguous, may_alias


def choose(graph, partition, updates: dict, layouts: dict) -> dict:
    """id(output node) -> input node, for the updates a kernel writes over the input's array:
    a pointwise kernel reading the input at the very index it writes (same shape and dtype,
    C-contiguous, no broadcast); no later step reading the old value, through the input or
    any value that may share its memory (`layouts.may_alias`); the old value not returned.
    C and CUDA kernels alike."""
    if not updates:
        return {}
    steps = partition.steps
    returned = {id(o) for o in graph.outputs}
    chosen: dict = {}
    for out_index, in_index in updates.items():
        out, x = graph.outputs[out_index], graph.inputs[in_index]
        at = next((k for k, st in enumerate(steps)
                   if not isinstance(st, fuse.Extern) and any(o is out for o in st.outputs)),
                  None)
        if at is None or steps[at].kind != "pointwise" or out.shape != x.shape \
                or out.dtype != x.dtype or id(out) in chosen \
                or any(o is out for o in graph.outputs[:out_index]):
            continue
        group = steps[at]
        if not any(i is x for i in group.inputs) or not is_contiguous(layouts[id(x)]):
            continue
        # the values that may share x's memory: x, and what extern steps may make of it
        aliases = {id(x)}
        for st in steps:
            if isinstance(st, fuse.Extern) and may_alias(st.node) and any(
                    id(i) in aliases for i in st.node.inputs):
                aliases.add(id(st.node))
        later = [st.node.inputs if isinstance(st, fuse.Extern) else st.inputs
                 for st in steps[at + 1:]]
        if aliases & returned or any(id(i) in aliases for ins in later for i in ins) or \
                any(id(i) in aliases and i is not x for i in group.inputs):
            continue
        chosen[id(out)] = x
    return chosen
