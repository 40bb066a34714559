"""The reference meaning of one node on arrays, which the runner's interpreted steps and layout
derivation share: `eval_node` (the eager table's implementation, the result as an array of the
node's dtype), the table of the device a node's inputs live on, and the facts about a graph's
slots that decide when an interpreted step may write over its dead input 0 (`_last_uses`,
`_dead`). Graphs are run by runtime/runner.py's `Runner` (`run_graph` for one run).
"""
from __future__ import annotations

import numpy as np

from .device import NP_DTYPES
from .schedule import Schedule
from ..ir.roles import Role


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
    if Role.CROSSES_DEVICE in node.opdef.roles:  # its result lives on the target: asarray it there
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
        if Role.MAY_VIEW in node.opdef.roles and ins:
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
