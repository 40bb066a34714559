"""Forward-mode AD (`torch.autograd.forward_ad`): each op's tangent as the op runs.

A dual tensor is an alias of its primal that requires grad, so every op on it is recorded by
autograd (`record`); `autograd_modes._on_record` hands each recorded node whose inputs carry
tangents to `propagate`, which stores the node's tangent beside it (`_TANGENTS`, cleared when
the level exits). One definition per op: the JVP is derived from the op's VJP rule, the
transpose of a linear map. `backward_graph([node], inputs)` gives g = J^T u (linear in the
cotangent u); differentiating g with respect to u along the tangents t gives J t, the same
double-backward trick `torch.func.jvp` uses, applied to one node at a time and cached by the
node's structure. An op whose VJP is itself not differentiable has no JVP: the op raises
NotImplementedError naming it, as PyTorch's do.

Departures from PyTorch: a dual tensor (and what is computed from it) reports
`requires_grad=True` inside the level; `unpack_dual(...).primal` is detached; ops under no_grad
are not recorded, so their results carry no tangent (entering no_grad in a level warns).
"""
from __future__ import annotations

import weakref
from collections import OrderedDict

from ..ir.grad import backward_graph
from ..ir.graph import Graph, Node
from ..ir.identity import Unkeyable, graph_key
from ..runtime.device import NP_DTYPES
from ..runtime.runner import Runner
from . import autograd as A
from .tensor import Tensor, _alias
from ..ir.roles import Role

LEVEL: int | None = None  # the one dual level (PyTorch allows no nesting)
_TANGENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Node -> tangent Tensor
_REVERSE = False  # whether some primal of this level requires grad itself
_PLANS: OrderedDict = OrderedDict()  # structure -> (first backward, its derivative in u)
_PLANS_SIZE = 256


def enter() -> int:
    global LEVEL, _REVERSE
    if LEVEL is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    LEVEL, _REVERSE = 0, False
    A.DUAL_LEVEL = True
    from .autograd_modes import _refresh
    _refresh()
    return 0


def exit_level(level: int | None = None) -> None:
    global LEVEL
    if LEVEL is None or (level is not None and level != LEVEL):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    LEVEL = None
    A.DUAL_LEVEL = False
    _TANGENTS.clear()
    from .autograd_modes import _refresh
    _refresh()


def make_dual(tensor: Tensor, tangent: Tensor, level: int | None = None) -> Tensor:
    global _REVERSE
    if LEVEL is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual(): expected Tensor arguments")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tensor.requires_grad:  # reverse mode too: the dual stays connected to the primal
        _REVERSE = True
        dual = tensor.view_as(tensor)
    else:
        dual = _alias(tensor.detach())
        dual.requires_grad_(True)
    node = dual._node if dual._node is not None else A.leaf_node(dual)
    _TANGENTS[node] = tangent.detach().to(tensor.dtype)
    return dual


def tangent_of(tensor: Tensor):
    """(primal, tangent Tensor or None) of `tensor` at the current level."""
    node = None
    if tensor.requires_grad:
        node = A._target_node(tensor)
    t = _TANGENTS.get(node) if node is not None and LEVEL is not None else None
    primal = tensor if _REVERSE or not tensor.requires_grad else tensor.detach()
    return primal, t


def propagate(node) -> None:
    """Store the tangent of recorded `node`, from its inputs' tangents (called at record)."""
    if Role.USER_FORWARD in node.opdef.roles:
        # (record_outputs calls `propagate_custom` once ctx is bound)
        return
    tangents = [_TANGENTS.get(i) for i in node.inputs]
    if all(t is None for t in tangents):
        return
    # each input node once (x * x reads one tangent: the VJP for x already sums both uses)
    wrt, seen = [], set()
    for k, (i, t) in enumerate(zip(node.inputs, tangents)):
        if t is not None and id(i) not in seen:
            seen.add(id(i))
            wrt.append(k)
    order, originals = _local(node)
    first, second, value_pos, reads, runners = _plan(order, [order.index(order[-1].inputs[k])
                                                             for k in wrt], node)
    be = tangents[wrt[0]]._be
    # (the plan may come from another node of this structure: its values by position)
    saved = A._bind_values([node], [(originals[p], part) for p, part in value_pos])
    # (any cotangent: the VJP is linear in it; ones keep rules written with log|g| finite)
    u = be.xp.ones(node.shape, dtype=NP_DTYPES[node.dtype])
    run_reads, run_second = _runners(runners, reads, second.graph, be)
    values = run_reads([u] + [s[0] for s in saved]) if reads is not None else []
    # (a tangent has its primal's dtype: the cotangent of the VJP's output for that input)
    ts = [tangents[k]._data.astype(NP_DTYPES[out.dtype], copy=False)
          for k, out in zip(wrt, first.graph.outputs)]
    (tangent,) = run_second(ts + list(values))
    _TANGENTS[node] = Tensor._make(tangent, node.dtype, be)


def propagate_custom(node, ctx, args: tuple, outs: list, diff: tuple) -> None:
    """The tangent of a custom Function's `node` from the user's `jvp(ctx, *tangents)`: one
    tangent per forward argument (zeros for a tensor without one, None for a non-tensor), one
    returned per forward output; the node packs the outputs at positions `diff` of `outs`."""
    tangents = [_TANGENTS.get(i) for i in node.inputs]
    if all(t is None for t in tangents):
        return
    fn = ctx._fn
    from .function import Function
    if fn.jvp is Function.jvp:
        Function.jvp(ctx)  # (raises PyTorch's error)
    from .autograd import no_grad
    from .creation import zeros_like
    given, it = [], iter(tangents)
    for a in args:
        t = next(it) if isinstance(a, Tensor) else None
        given.append(None if not isinstance(a, Tensor) else t if t is not None else
                     zeros_like(a))
    with no_grad():
        res = fn.jvp(ctx, *given)
    res = res if isinstance(res, tuple) else (res,)
    be, dt = outs[diff[0]]._be, NP_DTYPES[node.dtype]
    parts = []
    for k in diff:
        t, o = (res[k] if k < len(res) else None), outs[k]
        if t is None:
            parts.append(be.xp.zeros(tuple(o.shape), dtype=dt))
            continue
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(f"Function {fn.__name__}.jvp returned a tangent of size "
                               f"{list(t.shape)} for output {k} of size {list(o.shape)}")
        parts.append(t._data.astype(dt, copy=False))
    tangent = parts[0] if len(parts) == 1 else be.xp.concatenate([p.reshape(-1) for p in parts])
    _TANGENTS[node] = Tensor._make(tangent, node.dtype, be)


def _no_jvp(node, e: Exception) -> NotImplementedError:
    from .grad_fn import grad_fn_name
    name = grad_fn_name(node).removesuffix("Backward0").removesuffix("Backward1")
    return NotImplementedError(
        f"Trying to use forward AD with {name} that does not support it because it has not "
        f"been implemented yet (fusetorch derives an op's JVP from its VJP rule: {e})")


def _runners(cache: dict, reads, second, be) -> tuple:
    """The plan's two graphs as callables on arrays: interpreting `Runner`s made once per
    array module."""
    hit = cache.get(id(be.xp))
    if hit is None:
        hit = tuple(Runner(g, be.impl, be.xp).run if g is not None else None
                    for g in (reads, second))
        cache[id(be.xp)] = hit
    return hit


def _local(node) -> tuple:
    """`node` over fresh `input` nodes (one per distinct input but constants): (its local order, the
    original node at each position), so its JVP is derived and cached for the op alone."""
    fresh: dict = {}
    for i in node.inputs:
        if id(i) not in fresh:  # (a scalar constant stays: VJP rules read its value inline)
            fresh[id(i)] = (i if i.op == "constant" else
                            Node("input", (), {"shape": i.shape, "dtype": i.dtype}, i.shape,
                                 i.dtype), i)
    local = Node(node.op, tuple([fresh[id(i)][0] for i in node.inputs]), node.attrs,
                 node.shape, node.dtype)
    return ([p for p, _ in fresh.values()] + [local],
            [i for _, i in fresh.values()] + [node])


def _plan(order: list, wrt: list, node):
    """(backward graph of the local node for inputs `wrt` (positions in `order`), its
    derivative in the cotangent, the positions of the forward values the first reads, the graph
    computing what the derivative reads of the first), cached."""
    try:
        key = (graph_key(order)[0], tuple(wrt))
    except Unkeyable:
        key = None
    hit = _PLANS.get(key) if key is not None else None
    if hit is not None:
        return hit
    try:  # (NotImplementedError is a RuntimeError: a primitive without a VJP rule)
        first = backward_graph([order[-1]], [order[k] for k in wrt])
    except RuntimeError as e:
        raise _no_jvp(node, e) from None
    if any(Role.USER_BACKWARD in n.opdef.roles for n in first.graph.nodes):  # a custom Function's
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")
    try:
        second = backward_graph(first.graph.outputs, [first.graph.inputs[0]])
    except RuntimeError as e:
        raise _no_jvp(node, e) from None
    pos = {id(n): i for i, n in enumerate(order)}
    needed = [f for f, _ in second.values]  # what the derivative reads of the first graph
    reads = Graph(first.graph.inputs, needed) if needed else None
    hit = (first, second, [(pos[id(f)], part) for f, part in first.values], reads, {})
    if key is not None:
        _PLANS[key] = hit
        if len(_PLANS) > _PLANS_SIZE:
            _PLANS.popitem(last=False)
    return hit
