"""Symbolic differentiation: a forward graph -> a backward graph, in the same IR.

Reverse mode in one loop, as in micrograd: walk the forward nodes in reverse topological order,
look up each node's VJP rule in the op table, and accumulate the cotangents it returns for the
node's inputs. The rules build IR through a `Builder`; whenever a rule needs a forward value it
asks `b.value(node)`, which becomes an input of the backward graph, bound at run time to the
value saved during the forward pass.

    bw = backward_graph(outputs=[loss], wrt=[w1, w2])
    bw.graph            # inputs: cotangents of the outputs, then the forward values used
    bw.values           # (forward node, 'value' or 'context') behind each value input
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from . import dtypes as dt
from .graph import Graph, Node, make_node, toposort
from .ops import OPS


class Builder:
    """What VJP rules build with: `b.op('mul', g, b.value(x))`, plus a few compositions that
    many rules share (summing a broadcast cotangent back to an input's shape)."""

    def __init__(self):
        # (input node of the backward graph, forward node, 'value' or 'context')
        self.values: list[tuple[Node, Node, str]] = []
        self._value_of: dict[tuple, Node] = {}
        self._made: dict[tuple, Node] = {}
        self._keep: list = []
        # the forward node whose rule is building (position in the forward order, its user
        # line): new nodes carry it in `meta` (`vjp_of`, `source`), so a profile can name the
        # grad_fn each backward node belongs to and kernels the user's line they differentiate
        self.origin: tuple[int, str | None] | None = None

    def op(self, name: str, *inputs: Node, **attrs) -> Node:
        """A node; asking twice for the same op on the same inputs gives the same node (the
        VJP of x * x asks for g * x twice)."""
        try:
            key = (name, tuple(id(i) for i in inputs), tuple(sorted(attrs.items())))
            hash(key)
        except TypeError:
            return make_node(name, inputs, attrs, self._meta())
        n = self._made.get(key)
        if n is None:
            n = self._made[key] = make_node(name, inputs, attrs, self._meta())
            self._keep.append(inputs)  # the ids in `key` must stay unique while building
        return n

    def _meta(self) -> dict | None:
        if self.origin is None:
            return None
        pos, source = self.origin
        return {"vjp_of": pos, "source": source} if source else {"vjp_of": pos}

    def value(self, fwd: Node) -> Node:
        """The forward value of `fwd`, as a node of the backward graph. A scalar constant is
        copied in (it is part of the structure, not a value to bind)."""
        if fwd.op == "constant" and isinstance(fwd.attrs.get("value"), (bool, int, float)):
            return self.const(fwd.attrs["value"], fwd.dtype)
        return self._placeholder(fwd, "value")

    def context(self, fwd: Node) -> Node:
        """An opaque per-call object saved by `fwd` (a custom Function's ctx), distinct from its
        value."""
        return self._placeholder(fwd, "context")

    def _placeholder(self, fwd: Node, part: str) -> Node:
        key = (id(fwd), part)
        v = self._value_of.get(key)
        if v is None:
            v = make_node("input", [], {"shape": fwd.shape, "dtype": fwd.dtype})
            self._value_of[key] = v
            self.values.append((v, fwd, part))
        return v

    def const(self, value, dtype: dt.DType) -> Node:
        return make_node("constant", [], {"shape": (), "dtype": dtype, "value": value})

    def zeros(self, shape: tuple, dtype: dt.DType) -> Node:
        return make_node("full", [], {"shape": tuple(shape), "dtype": dtype, "value": 0})

    def zero(self, dtype: dt.DType) -> Node:
        return self.const(0 if dtype.category < 2 else 0.0, dtype)

    def sum_to(self, g: Node, shape: tuple) -> Node:
        """Sum `g` over the dims that broadcasting added or stretched, giving `shape`."""
        shape = tuple(shape)
        if g.shape == shape:
            return g
        lead = len(g.shape) - len(shape)
        dims = tuple(range(lead)) + tuple(
            i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
        if dims:
            g = self.op("sum", g, dims=dims, keepdim=False)
        if g.shape != shape:
            g = self.op("reshape", g, shape=shape)
        return g

    def expand_reduced(self, g: Node, x_shape: tuple, dims: tuple, keepdim: bool) -> Node:
        """Broadcast a reduction's cotangent back over the reduced dims."""
        if not keepdim:
            kept = tuple(1 if i in dims else s for i, s in enumerate(x_shape))
            g = self.op("reshape", g, shape=kept)
        return self.op("expand", g, shape=tuple(x_shape)) if g.shape != tuple(x_shape) else g

    def where0(self, cond: Node, g: Node) -> Node:
        """g where cond holds, else 0."""
        return self.op("where", cond, g, self.zero(g.dtype))


@dataclass
class BackwardGraph:
    graph: Graph
    values: list  # (forward node, part) behind each value input (after the cotangent inputs)
    n_cotangents: int
    # (backward node, forward position, input index): the cotangent each rule returned for an
    # input, which anomaly mode checks for NaN (PyTorch's "returned nan values in its 0th output")
    rule_outputs: list = field(default_factory=list)


def needs_grad(order: Sequence[Node], wrt: Sequence[Node]) -> set:
    """ids of the nodes that depend on some `wrt` node through floating-point values. A node
    recorded with gradients off (`meta['no_grad']`: inside `torch.no_grad()` in a traced
    function) is a constant to differentiation, as it is to eager autograd."""
    need = {id(w) for w in wrt}
    for n in order:
        if id(n) not in need and n.dtype.is_floating_point and any(
                id(i) in need for i in n.inputs) and not (n.meta or {}).get("no_grad"):
            need.add(id(n))
    return need


def backward_graph(outputs: Sequence[Node], wrt: Sequence[Node],
                   also: Sequence[Node] = (), stop: Sequence[Node] = ()) -> BackwardGraph:
    """Graph computing d(outputs)/d(wrt) . cotangents, one output per `wrt` node (zeros where no
    path reaches it), then one per `also` node (the cotangent reaching it: `retain_grad`).
    Cotangents stop at the `stop` nodes: theirs are collected (as `wrt`) but not passed on to
    their inputs (autograd runs the rest after a tensor hook has seen them)."""
    stop_ids = {id(s) for s in stop}
    order = toposort(outputs)
    need = needs_grad(order, wrt)
    b = Builder()
    rule_outputs = []
    ct_inputs = [make_node("input", [], {"shape": o.shape, "dtype": o.dtype}) for o in outputs]
    ct: dict[int, Node] = {}
    for o, c in zip(outputs, ct_inputs):
        ct[id(o)] = _accumulate(b, ct.get(id(o)), c)
    for pos in range(len(order) - 1, -1, -1):
        n = order[pos]
        g = ct.get(id(n))
        if g is None or not n.inputs or id(n) in stop_ids:
            continue
        d = OPS[n.op]
        if not any(id(i) in need for i in n.inputs):
            continue
        if d.vjp is None:
            raise NotImplementedError(f"no VJP rule for primitive '{n.op}'")
        b.origin = (pos, (n.meta or {}).get("source"))
        for i, (x, c) in enumerate(zip(n.inputs, d.vjp(b, n, g))):
            if c is not None and id(x) in need:
                rule_outputs.append((c, pos, i))
                if c.shape != x.shape or c.dtype is not x.dtype:
                    raise AssertionError(f"VJP of {n.op} gave {c.type_str()} for an input of "
                                         f"type {x.type_str()}")
                ct[id(x)] = _accumulate(b, ct.get(id(x)), c)
    b.origin = None
    outs = [ct.get(id(w)) or b.zeros(w.shape, w.dtype) for w in wrt]
    outs += [ct.get(id(a)) or b.zeros(a.shape, a.dtype) for a in also]
    # only the forward values some output reads: a rule also builds cotangents for inputs that
    # need none (the tensor in `y * 3`), and their values must not be bound or version-checked
    # (PyTorch lets `y.mul_(3)` follow `y * 3` on a non-leaf)
    live = {id(n) for n in toposort(outs)}
    values = [(v, f, part) for v, f, part in b.values if id(v) in live]
    graph = Graph(ct_inputs + [v for v, _, _ in values], outs)
    return BackwardGraph(graph, [(f, part) for _, f, part in values], len(ct_inputs),
                         rule_outputs)


def _accumulate(b: Builder, old: Node | None, new: Node) -> Node:
    if old is None:
        return new
    own = new.opdef.accumulate  # the op's cheaper sum, if it declares one (index_put)
    merged = own(b, old, new) if own is not None else None
    return merged if merged is not None else b.op("add", old, new)
