"""The graph IR: nodes in SSA form, a graph with inputs and outputs, its text and its hash.

    %0 = input() : f32[64,100]
    %1 = input() : f32[100]
    %2 = add(%0, %1) : f32[64,100]
    %3 = sum(%2, dims=(1,), keepdim=False) : f32[64]
    return (%3)

Node identity is the Python object; the numbers in the text are positions in topological order,
so two graphs built separately from the same program print, and hash, the same.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from . import identity as _identity
from . import ops as _ops
from .dtypes import DType


# the parts of a computation a node may belong to (`meta['phase']`; absent: "forward"): a
# traced training step records its backward and its optimizer update into the same graph
PHASES = ("forward", "backward", "update")


class Node:
    """One primitive applied to earlier nodes. `meta` and `saved` hold what is not part of the
    meaning of the node: the user's source line, a grad_fn name; the forward values a recorded
    node keeps for its VJP (set by the tracer's autograd, opaque here)."""

    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "meta", "saved", "__weakref__")

    def __init__(self, op: str, inputs: tuple, attrs: dict, shape: tuple, dtype: DType,
                 meta: dict | None = None):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.meta = meta
        self.saved = None

    @property
    def opdef(self) -> _ops.OpDef:
        return _ops.OPS[self.op]

    def type_str(self) -> str:
        return f"{self.dtype.short}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self) -> str:
        return f"<Node {self.op} : {self.type_str()}>"


def make_node(op: str, inputs: Sequence[Node], attrs: dict | None = None,
              meta: dict | None = None, shape: tuple | None = None) -> Node:
    """Build a node, computing its shape and dtype from the op table (raises on bad input).
    `shape` is needed only for data-dependent ops (nonzero), whose rule cannot know it."""
    d = _ops.OPS[op]
    attrs = attrs or {}
    if d.shape is not None:
        shape = d.shape([i.shape for i in inputs], attrs)
    elif shape is None:
        raise ValueError(f"{op} has a data-dependent shape: pass the observed shape")
    dtype = d.dtype([i.dtype for i in inputs], attrs)
    return Node(op, tuple(inputs), attrs, tuple(shape), dtype, meta)


def toposort(outputs: Iterable[Node], inputs: Iterable[Node] = ()) -> list[Node]:
    """Nodes reachable from `outputs`, each after its inputs; `inputs` come first, in order."""
    order: list[Node] = []
    seen: set = set()  # of the nodes themselves: a Node hashes by identity
    done, append = seen.add, order.append
    for n in inputs:
        if n not in seen:
            done(n)
            append(n)
    for root in outputs:
        if root in seen:
            continue
        # iterative DFS (recorded graphs can be deeper than Python's recursion limit): each
        # node is on the stack once with an iterator over its inputs, finished when it runs out
        # (a child cannot be on the stack already: the graph is acyclic)
        stack = [(root, iter(root.inputs))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    if child.inputs:
                        stack.append((child, iter(child.inputs)))
                        break
                    done(child)  # (a leaf: finished at once)
                    append(child)
            else:
                stack.pop()
                done(node)
                append(node)
    return order


class Graph:
    """A closed computation: `inputs` are `input` nodes, `outputs` any nodes; `nodes` is the
    topological order of everything the outputs need, inputs first."""

    def __init__(self, inputs: Sequence[Node], outputs: Sequence[Node]):
        for n in inputs:
            if n.op != "input":
                raise ValueError(f"graph inputs must be input nodes, got {n.op}")
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.nodes = toposort(self.outputs, self.inputs)
        ins = {id(n) for n in self.inputs}
        stray = [n for n in self.nodes if n.op == "input" and id(n) not in ins]
        if stray:
            raise ValueError(f"graph uses {len(stray)} input node(s) not listed as its inputs")

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)

    def text(self) -> str:
        """The readable form: one line per node, `%3 = mul(%1, %2) : f32[64,100]`."""
        num = {id(n): i for i, n in enumerate(self.nodes)}
        lines = []
        for n in self.nodes:
            args = [f"%{num[id(i)]}" for i in n.inputs]
            args += [f"{k}={_fmt_attr(k, v, n)}" for k, v in n.attrs.items() if _shown(k, n)]
            line = f"%{num[id(n)]} = {n.op}({', '.join(args)}) : {n.type_str()}"
            where = (n.meta or {}).get("source")
            lines.append(line + (f"  # {where}" if where else ""))
        lines.append("return (" + ", ".join(f"%{num[id(o)]}" for o in self.outputs) + ")")
        return "\n".join(lines)

    __str__ = text

    def __repr__(self) -> str:
        return f"<Graph: {len(self.inputs)} inputs, {len(self.nodes)} nodes, " \
               f"{len(self.outputs)} outputs>"

    def structural_hash(self) -> str:
        """Equal for graphs that differ only in node identities (and source comments): a digest
        of the graph's structural identity (ir/identity.py)."""
        return _identity.structural_hash(self.nodes, self.outputs)

    def verify(self, checked: dict | None = None) -> None:
        """Check SSA order and that every node's shape and dtype follow from the op table.
        `checked` (id -> node) holds nodes whose rules already held: a node's op, inputs and
        attrs never change after it is made, so they are not run again (optimize verifies
        after every pass, and most passes keep most nodes); the nodes checked here join it."""
        placed: set[int] = set()
        for n in self.nodes:
            for i in n.inputs:
                if id(i) not in placed:
                    raise AssertionError(f"{n} uses a node defined after it")
            placed.add(id(n))
            if checked is not None:
                if checked.get(id(n)) is n:
                    continue
                checked[id(n)] = n  # (the reference keeps the id from being reused)
            d = _ops.OPS[n.op]
            if d.nin is not None and len(n.inputs) != d.nin:
                raise AssertionError(f"{n} has {len(n.inputs)} inputs, {n.op} takes {d.nin}")
            if d.shape is not None:
                shape = tuple(d.shape([i.shape for i in n.inputs], n.attrs))
                if shape != n.shape:
                    raise AssertionError(f"{n}: shape rule gives {shape}")
            dtype = d.dtype([i.dtype for i in n.inputs], n.attrs)
            if dtype is not n.dtype:
                raise AssertionError(f"{n}: dtype rule gives {dtype}")


def _shown(key: str, n: Node) -> bool:
    # a source node's shape and dtype are already in its type
    return not (n.opdef.kind == "source" and key in ("shape", "dtype"))


def _fmt_attr(key: str, v, n: Node) -> str:
    if isinstance(v, DType):
        return v.short
    if key == "value" and n.op == "constant" and not isinstance(v, (int, float, bool)):
        return f"<{n.attrs.get('digest', '?')[:12]}>"  # arrays are named by a content digest
    return repr(v)
