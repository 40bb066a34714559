"""Partition a graph into fused kernel groups and the steps that stay library calls.

A group is a set of elementwise nodes over one iteration space (the output shape they share),
optionally ending in a `sum`, `max` or `min` over any dims of that space. Everything else
(matmul, movement ops, indexing, argmax, other reductions, integer math) is an `extern` step run
with the eager implementation: numpy's views make movement ops free, and the kernels read any
strides, so a permute or an expand between two groups costs no copy.

    plan = partition(graph)
    plan.steps   # [Group | Extern] in execution order
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .._policy import POLICY
from ..ir import dtypes as dt
from ..ir import pool_ops
from ..ir.graph import Graph, Node
from ..ir.ops import OPS
from ..ir.roles import Role

# dtypes a kernel computes in; integer math stays in numpy (its C semantics differ in corners)
KERNEL_DTYPES = {dt.float32, dt.float64, dt.bool_}


@dataclass
class Group:
    """One kernel: `nodes` in order; `inputs` read from memory; `outputs` written to memory."""
    shape: tuple
    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    reduce: Node | None = None  # a final sum/max/min over dims of the iteration space
    start: int = 0  # topological position of the first node (inputs must come before it)
    # an op with a C template of its own (fold2d; max pooling, whose `nodes` are the values
    # and indices its template writes: `OpDef.kernel_outputs`)
    template: Node | None = None

    @property
    def kind(self) -> str:
        if self.template is not None:
            return (OPS[self.template.op].kernel_outputs or (self.template.op,))[0]
        return "reduce" if self.reduce is not None else "pointwise"


@dataclass
class Extern:
    node: Node


@dataclass
class Plan:
    graph: Graph
    steps: list

    def groups(self) -> list:
        return [s for s in self.steps if isinstance(s, Group)]


def _is_scalar_const(n: Node) -> bool:
    return n.op == "constant" and n.shape == () and isinstance(n.attrs.get("value"),
                                                               (bool, int, float))


def fusible(n: Node) -> bool:
    """Elementwise work a C kernel computes exactly like numpy: float and bool math, and
    comparisons of int64 values (an index against a position: `_one_hot_scatter`)."""
    d = OPS[n.op]
    ints_ok = d.promote == "compare"
    return (d.kind == "elementwise" and d.fusible and d.c_expr is not None
            and n.dtype in KERNEL_DTYPES
            and all(i.dtype in KERNEL_DTYPES or ints_ok and i.dtype is dt.int64
                    for i in n.inputs))


# index reductions (argmax/argmin), reductions of memory over leading dims and ops with a
# template of their own (`Role.OWN_KERNEL`: fold2d, col2im, a convolution's input gradient, is
# kh*kw strided adds in numpy, one pass here) are kernels on the CPU only (`cpu`): the CUDA
# renderer renders them too, but on a GPU cupy runs them until the kernels are measured there


def _reducible(n: Node, g: Group, trailing: bool = False, index: bool = False) -> bool:
    """A sum, max or min over any dims of the group's iteration space (`trailing`: only over
    all dims or trailing dims, which read memory in order); with `index`, also argmax/argmin
    over one dim of a float value (max pooling's window: numpy's argmax over a middle axis is
    slow, so these make a kernel even alone)."""
    x, r = n.inputs[0], OPS[n.op].reduction
    if r is None:
        return False
    if index and r.index and x.dtype in (dt.float32, dt.float64) and len(n.attrs["dims"]) == 1:
        trailing = False
    elif r.index or r.combine not in ("add", "max", "min") or \
            n.dtype not in (dt.float32, dt.float64):
        return False
    dims, rank = tuple(n.attrs["dims"]), len(g.shape)
    if x.shape != g.shape or rank == 0 or not dims:
        return False
    return not trailing or dims == tuple(range(rank - len(dims), rank))


def partition(graph: Graph, cpu: bool = False) -> Plan:
    """The graph's steps: fused groups (kernels) and the nodes left to library calls, in an
    order that respects every dependency. `cpu` (C kernels) adds what only the C templates do:
    argmax/argmin, and reductions over leading dims of a value read from memory (in memory
    order, reduce_outer.c.j2)."""
    pos = {id(n): i for i, n in enumerate(graph.nodes)}
    users: dict[int, list] = {}
    for n in graph.nodes:
        for i in n.inputs:
            users.setdefault(id(i), []).append(n)
    group_of: dict[int, Group] = {}
    open_groups: dict[tuple, list] = {}  # iteration space -> groups made over it
    steps: list = []
    together: dict = {}  # (op's kernel_outputs, input, attrs) -> the group writing them
    outs = {id(o) for o in graph.outputs}
    for n in graph.nodes:
        if n.op == "input":
            continue
        if _is_scalar_const(n):
            # a kernel reads it as a literal, an extern step has it made once; an output is
            # handed out by a step of its own (`torch.ones(()) * 2` folds to one)
            if id(n) in outs:
                steps.append(Extern(n))
            continue
        if cpu and OPS[n.op].kernel_outputs and _pool_fits(n):
            # max pooling's values and indices of one input: one kernel writes both
            key = (OPS[n.op].kernel_outputs, id(n.inputs[0]), _attrs_key(n))
            g = together.get(key)
            if g is None:
                g = together[key] = Group(shape=n.shape, start=pos[id(n)], template=n)
                steps.append(g)
            g.nodes.append(n)
            group_of[id(n)] = g
            continue
        if fusible(n):
            g = _joinable(n, group_of, pos, open_groups.get(n.shape, []))
            if g is None:
                g = Group(shape=n.shape, start=pos[id(n)])
                steps.append(g)
                open_groups.setdefault(n.shape, []).append(g)
            g.nodes.append(n)
            group_of[id(n)] = g
            continue
        g = group_of.get(id(n.inputs[0])) if n.inputs else None
        if g is not None and g.reduce is None and g.template is None and \
                _reducible(n, g, index=cpu):
            # (a value the reduction reads that others read too is stored by the same loop: a
            # bias gradient sums the cotangent that the weight gradient's matmul also reads)
            g.reduce = n
            g.nodes.append(n)
            group_of[id(n)] = g
            continue
        if cpu and Role.OWN_KERNEL in OPS[n.op].roles and not OPS[n.op].kernel_outputs and \
                n.dtype in (dt.float32, dt.float64) and \
                (Role.WINDOW_SCAN not in OPS[n.op].roles or _pool_fits(n)):
            g = Group(shape=n.shape, nodes=[n], start=pos[id(n)], template=n)
            group_of[id(n)] = g
            steps.append(g)
            continue
        if n.inputs:
            # a reduction of a value read from memory (an input, or a group's output that
            # others read too): a kernel of its own where it reads memory in order (numpy's
            # own sums over leading dims are as fast as a strided kernel, but not as fast as
            # the C outer-axis layout)
            alone = Group(shape=n.inputs[0].shape, start=pos[id(n)])
            if _reducible(n, alone, trailing=not cpu, index=cpu):
                alone.reduce = n
                alone.nodes.append(n)
                group_of[id(n)] = alone
                steps.append(alone)
                continue
        steps.append(Extern(n))
    steps = _sink_into_consumers(steps, group_of, users)
    for g in (s for s in steps if isinstance(s, Group)):
        members = {id(m) for m in g.nodes}
        seen = set()
        for m in g.nodes:
            for i in m.inputs:
                if id(i) not in members and not _is_scalar_const(i) and id(i) not in seen:
                    seen.add(id(i))
                    g.inputs.append(i)
        for m in g.nodes:
            external = any(id(u) not in members for u in users.get(id(m), ()))
            if (external or id(m) in outs) and m is not g.reduce:
                g.outputs.append(m)
        if g.reduce is not None:
            g.outputs.append(g.reduce)
        written = OPS[g.template.op].kernel_outputs if g.template is not None else ()
        if written:  # in the template's order
            g.outputs.sort(key=lambda m: written.index(m.op))
    return Plan(graph, steps)


def _attrs_key(n: Node) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in n.attrs.items()))


def _pool_fits(n: Node) -> bool:
    """Whether max_pool2d.c.j2 computes this max pooling node (`Role.WINDOW_SCAN`): a float
    input, its window rows (on the stack) and a padded plane (allocated per plane and thread)
    within bounds."""
    x = n.inputs[0]
    if x.dtype not in (dt.float32, dt.float64):
        return False
    (kh, kw), (ph, pw) = n.attrs["kernel"], n.attrs["padding"]
    (_, ow), (eh, ew) = pool_ops.geometry(x.shape, n.attrs)
    size, (h, w) = x.dtype.itemsize, x.shape[2:]
    hp, wp = h + 2 * ph + eh, w + 2 * pw + ew
    return kh * kw * ow * size <= POLICY.max_pool_rows and \
        ((hp, wp) == (h, w) or hp * wp * size <= POLICY.max_pool_plane)


def _sink_into_consumers(steps: list, group_of: dict, users: dict) -> list:
    """A pointwise group whose values only one later group over the same space reads moves
    into that group: its work is then done where it is needed, and its values never go to
    memory. The graph's order puts a node early (right after its inputs): an optimizer's
    `buf * momentum` came before the gradient's matmul, so it was a kernel of its own, and the
    update `buf * momentum + grad` did not read `buf` itself (no in-place write, see Program)."""
    gone = set()
    for g in steps:
        if not isinstance(g, Group) or g.reduce is not None or g.template is not None:
            continue
        readers = {}
        for m in g.nodes:
            for u in users.get(id(m), ()):
                r = group_of.get(id(u))  # None: an extern step
                if r is not g:
                    readers[id(r)] = r
        if len(readers) != 1:
            continue
        (target,) = readers.values()
        if target is None or target.shape != g.shape or target.template is not None:
            continue  # read by an extern step, or over another space
        target.nodes[:0] = g.nodes
        for m in g.nodes:
            group_of[id(m)] = target
        gone.add(id(g))
    return [st for st in steps if id(st) not in gone]


def _joinable(n: Node, group_of: dict, pos: dict, open_groups: list) -> Group | None:
    """A group `n` can join: same iteration space, not closed by a reduction, and every input
    of `n` either computed in that group or available before the group starts. A producer's
    group first (vertical fusion: the value never goes to memory), else any such group
    (horizontal fusion: independent work over the same space shares one loop and one call)."""
    def fits(g: Group) -> bool:
        return g.reduce is None and g.template is None and g.shape == n.shape and all(
            group_of.get(id(j)) is g or pos[id(j)] < g.start or _is_scalar_const(j)
            for j in n.inputs)

    for i in n.inputs:
        g = group_of.get(id(i))
        if g is not None and fits(g):
            return g
    for g in reversed(open_groups):
        if fits(g):
            return g
    return None
