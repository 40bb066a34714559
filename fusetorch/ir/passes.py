"""Graph -> Graph passes run before code generation: DCE, CSE, simplification, constant folding.

    g = optimize(graph)              # the default passes to a fixpoint
    g = cse(simplify(graph))         # or one pass at a time
    count_ops(g)                     # {'input': 2, 'mul': 1, ...}

Every pass returns a new `Graph` (the one it is given where it changed nothing: `optimize` skips
what follows from a change) and never touches the nodes of the one it is given: recorded
nodes are shared with autograd (their `saved` values, their identity as cache keys). A node whose
inputs did not change is reused as it is; one whose inputs changed is rebuilt with `make_node`,
keeping its `meta` (the user's source line). Graph inputs keep their identity and order, outputs
their count and order (an output may become an input node, or the same node as another output,
when a pass proves them equal: callers that hand outputs to users copy where aliasing matters).

Each rewrite is exact: the optimized graph computes, bit for bit, what the reference interpreter
computes for the original (NaN payloads aside), signed zeros, inf and NaN included. So `x * 0`
is not 0 (inf * 0 is nan), and in floating point `x + 0.0` is not `x` (-0.0 + 0.0 is +0.0):
only `x + (-0.0)` and `x - 0.0` are.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

from . import dtypes as dt
from .folding import NO as _NO, round_float as _round_float, wrap as _wrap
from .graph import Graph, Node, make_node
from .identity import Unkeyable, node_key
from .ops import OPS, few_rows
from .rewrites import norm_perm as _norm_perm, scalar_value
from .roles import Role

Pass = Callable[[Graph], Graph]


# ---------------------------------------------------------------- helpers

def count_ops(g: Graph) -> dict:
    """Op name -> number of nodes, e.g. `{'input': 1, 'exp': 1}`."""
    out: dict[str, int] = {}
    for n in g.nodes:
        out[n.op] = out.get(n.op, 0) + 1
    return out


def _with_inputs(n: Node, inputs: tuple) -> Node:
    """`n` itself if its inputs are unchanged, else a new node like it over `inputs`."""
    if all(a is b for a, b in zip(inputs, n.inputs)):
        return n
    return make_node(n.op, inputs, dict(n.attrs), n.meta, shape=n.shape)


def _rewrite(g: Graph, rule: Callable[[Node], Node]) -> Graph:
    """Walk `g` in topological order, rebuilding each node over its rewritten inputs and passing
    it to `rule`, which returns the node to use in its place (itself, an earlier node, or a new
    one). Input nodes are never rewritten."""
    env: dict[int, Node] = {}
    changed = False
    for n in g.nodes:
        if n.op == "input":
            env[id(n)] = n
            continue
        m = env[id(n)] = rule(_with_inputs(n, tuple(env[id(i)] for i in n.inputs)))
        if m is not n:
            changed = True
    if not changed:  # (the graph itself: `optimize` then knows this pass changed nothing)
        return g
    return Graph(g.inputs, [env[id(o)] for o in g.outputs])


# ---------------------------------------------------------------- dead code

def dce(g: Graph) -> Graph:
    """Drop every node no output needs; graph inputs stay, in order, even when unused.

    >>> dce(Graph([x, unused], [exp_x])).nodes   # [x, unused, exp_x]
    """
    out = Graph(g.inputs, g.outputs)
    same = len(out.nodes) == len(g.nodes) and all(a is b for a, b in zip(out.nodes, g.nodes))
    return g if same else out  # (g itself: `optimize` then knows nothing changed)


# ---------------------------------------------------------------- common subexpressions

def _cse_key(n: Node):
    """The node's structural identity over its (merged) inputs, for nodes that may merge;
    None for the others and for nodes without identity (an array constant with no digest).
    Never merged: ops declared `distinct` (inputs are distinct by definition, random draws are
    distinct draws, custom Functions are opaque and may be impure, copy promises a buffer of
    its own)."""
    if Role.DISTINCT in OPS[n.op].roles:
        return None
    try:
        return node_key(n, tuple([id(i) for i in n.inputs]))
    except Unkeyable:
        return None


def cse(g: Graph) -> Graph:
    """Merge nodes with the same op, the same (merged) inputs and equal attrs. Array constants
    compare by their `digest`; `distinct` ops (random, custom, custom_vjp, copy) never merge.

    >>> cse(Graph([x], [add(exp(x), exp(x))]))     # one exp, used twice
    """
    table: dict[tuple, Node] = {}

    def rule(n: Node) -> Node:
        key = _cse_key(n)
        if key is None:
            return n
        return table.setdefault(key, n)

    return _rewrite(g, rule)


# ---------------------------------------------------------------- algebraic simplification

def simplify(g: Graph) -> Graph:
    """Exact algebraic identities: x*1, 1*x, x/1, x**1 -> x and x**2 -> x*x (0-d exponents);
    x + (-0.0), x - 0.0 (any zero for integers) -> x; neg(neg(x)) -> x; reshape(reshape(x)) ->
    one reshape; permute of permute -> one permute; expand of expand -> one expand; reshape or
    expand to x's own shape, identity permutes and casts to x's own dtype -> x. Where a constant
    broadcasts x to a larger shape, x is expanded instead. Never: x*0 (inf, nan), x + 0.0 in
    floating point (-0.0), arithmetic on bool, removing a `copy`. Each identity is its op's
    `simplify` rule, declared on the op's definition (ir/rewrites.py).

    >>> simplify(Graph([x], [mul(neg(neg(x)), 1.0)])).outputs == [x]
    """
    def rule(n: Node) -> Node:
        for _ in range(64):  # a rewrite may enable another on the same node
            own = n.opdef.simplify  # the op's identities, declared on its definition
            m = own(n, make_node) if own is not None else None
            if m is None or m is n:
                break
            n = m
        return n

    return _rewrite(g, rule)


def _use_counts(g: Graph) -> dict[int, int]:
    """id(node) -> how many times it is read: as an input of a node, or as a graph output."""
    users: dict[int, int] = {}
    for n in g.nodes:
        for i in n.inputs:
            users[id(i)] = users.get(id(i), 0) + 1
    for o in g.outputs:
        users[id(o)] = users.get(id(o), 0) + 1
    return users


def transpose_matmul(g: Graph) -> Graph:
    """permute(matmul(a, b)) swapping the last two dims -> matmul(b^T, a^T), when nothing else
    reads the product: the library writes the result in the layout its readers want, instead of
    a transposed view that the next kernel reads with a large stride (a weight gradient
    `x^T @ g` consumed as `W -= lr * (x^T @ g)^T`)."""
    users = _use_counts(g)

    def rule(n: Node) -> Node:
        if n.op != "permute" or Role.PRODUCT not in n.inputs[0].opdef.roles or \
                users.get(id(n.inputs[0])) != 1:
            return n
        perm, k = _norm_perm(n.attrs["perm"]), len(n.shape)
        if k < 2 or perm != tuple(range(k - 2)) + (k - 1, k - 2):
            return n
        a, b = n.inputs[0].inputs
        if len(a.shape) != k or len(b.shape) != k:
            return n  # batch broadcasting: leave it
        if few_rows(b.shape[-1], a.shape[-2], n.shape[:-2]):
            return n  # the product was turned this way on purpose (ops._product)
        swap = lambda x: make_node("permute", [x], {"perm": perm}, n.meta)
        return make_node(n.inputs[0].op, [swap(b), swap(a)], {}, n.meta)

    return _rewrite(g, rule)


def _sink_view(g: Graph, view: str, move: Callable) -> Graph:
    """view(f(a, b)) -> f(view'(a), view'(b)) for an elementwise f that only the view reads.
    `move(n, f)` returns how to rewrite one non-0-d input of f for the view node `n` (a
    function of the input), or None where the view cannot move (0-d inputs stay)."""
    users = _use_counts(g)

    def rule(n: Node) -> Node:
        if n.op != view:
            return n
        f = n.inputs[0]
        if OPS[f.op].kind != "elementwise" or users.get(id(f)) != 1 or not f.inputs:
            return n
        each = move(n, f)
        if each is None:
            return n
        out = make_node(f.op, [each(x) if x.shape != () else x for x in f.inputs],
                        dict(f.attrs), f.meta)
        users[id(out)] = 1
        return out

    return _rewrite(g, rule)


def sink_permutes(g: Graph) -> Graph:
    """permute(f(a, b)) -> f(permute(a'), permute(b')) for an elementwise f whose result
    nothing else reads (a' is a lower-rank input reshaped to f's rank; 0-d inputs stay). The
    permutes then apply to values read from memory, where they are free strided views, and f
    fuses with the permute's consumers into one kernel: a transpose inside an elementwise
    chain becomes index arithmetic instead of a buffer in between."""
    def move(n: Node, f: Node):
        perm, rank = _norm_perm(n.attrs["perm"]), len(f.shape)

        def each(x: Node) -> Node:
            if len(x.shape) < rank:
                x = make_node("reshape", [x],
                              {"shape": (1,) * (rank - len(x.shape)) + x.shape}, n.meta)
            return make_node("permute", [x], {"perm": perm}, n.meta)
        return each

    return _sink_view(g, "permute", move)


def drop_copies(g: Graph) -> Graph:
    """copy(x) -> x when x is a value computed afresh (an elementwise op, a reduction, a matmul:
    never an input or a view) and the copy is its only reader: nobody can then tell the two
    buffers apart. A leaf's gradient is cloned when the trace sees it as a view (`(x^T g)^T`),
    and transpose_matmul may turn that view into a fresh product, leaving a copy of 400 KB per
    step for nothing."""
    users = _use_counts(g)

    def rule(n: Node) -> Node:
        if Role.CLONE not in n.opdef.roles:
            return n
        x = n.inputs[0]
        d = x.opdef
        fresh = Role.PRODUCT in d.roles or d.kind in ("elementwise", "reduce") and \
            Role.CLONE not in d.roles
        return x if fresh and users.get(id(x)) == 1 and x.dtype is n.dtype else n

    return _rewrite(g, rule)


def rewrite_indexing(g: Graph) -> Graph:
    """Index-based ops as cheaper equivalents (values equal; a scattered -0.0 may read 0.0):
    gather(x, argmax(x, d, keepdim)) -> max(x, d, keepdim) (likewise argmin -> min); the
    one-index-per-row scatter_add into zeros -> an elementwise where (`one_hot_scatter`);
    fold2d of exactly tiling windows -> permute + reshape (`tiling_fold`). Each rule is the
    op's `cheaper`, declared on its definition (ir/rewrites.py)."""
    def rule(n: Node) -> Node:
        cheaper = n.opdef.cheaper  # declared on the op's definition (rewrites.py)
        return (cheaper(n, make_node) or n) if cheaper is not None else n

    return _rewrite(g, rule)


def _split_groups(src: tuple, dst: tuple) -> list | None:
    """For a reshape that only splits dims: per dim of `src`, the dims of `dst` it becomes
    ([4] -> [2, 2]); None for anything else (a merge, a reorder of sizes)."""
    groups, j = [], 0
    for n in src:
        size, start = 1, j
        while j < len(dst) and (size < n or j == start):
            size *= dst[j]
            j += 1
        if size != n:
            return None
        groups.append(tuple(dst[start:j]))
    return groups if j == len(dst) else None


def sink_reshapes(g: Graph) -> Graph:
    """reshape(f(a, b)) -> f(reshape(a), reshape(b)) for an elementwise f that only the reshape
    reads, when the reshape only splits dims (a broadcast input's size-1 dim splits into 1s).
    The split is a free view of each input, and a permute after it can then sink into f as well
    (max pooling's gradient: windows [N,C,4,OH,OW] -> [N,C,2,2,OH,OW] -> the image)."""
    def move(n: Node, f: Node):
        groups = _split_groups(f.shape, n.shape)
        if groups is None or len(n.shape) == len(f.shape):
            return None

        def each(x: Node) -> Node:
            padded = (1,) * (len(f.shape) - len(x.shape)) + x.shape
            shape = tuple(d for size, full, grp in zip(padded, f.shape, groups)
                          for d in (grp if size == full else (1,) * len(grp)))
            return make_node("reshape", [x], {"shape": shape}, n.meta)
        return each

    return _sink_view(g, "reshape", move)


# ---------------------------------------------------------------- constant folding

def _as_dtype(r, d: dt.DType):
    """A folded Python result as the value of dtype `d`, or _NO."""
    if r is _NO:
        return _NO
    if d is dt.bool_:
        return r if isinstance(r, bool) else _NO
    if d.is_floating_point:
        return _round_float(float(r), d) if isinstance(r, float) else _NO
    return _wrap(int(r), d) if isinstance(r, int) and not isinstance(r, bool) else _NO


def _fold_node(n: Node) -> Node:
    fold = OPS[n.op].fold_constant  # the op's own rule (ir/elementwise.py), if it has one
    if fold is None or not n.inputs:
        return n
    values = []
    for i in n.inputs:
        if i.op == "constant" and i.shape != ():
            return n
        v = scalar_value(i)
        if v is _NO:
            return n
        values.append(v)
    src = n.inputs[-1].dtype  # the compute dtype (where: its branches, not the mask)
    try:
        r = _as_dtype(fold(n, values, src), n.dtype)
    except (ArithmeticError, ValueError):
        return n
    if r is _NO:
        return n
    if n.shape == ():
        return make_node("constant", [], {"shape": (), "dtype": n.dtype, "value": r}, n.meta)
    return make_node("full", [], {"shape": n.shape, "dtype": n.dtype, "value": r}, n.meta)


def fold_constants(g: Graph) -> Graph:
    """Evaluate elementwise nodes whose inputs are all scalar `constant`s or `full`s, exactly
    as the interpreter would (float32 results rounded to float32, integers wrapped to their
    width). The result is a 0-d `constant`, or a `full` of the node's shape when a `full`
    broadcast it. Left alone: transcendental ops, float pow, clamp, copy, array constants,
    anything whose exact value is in doubt (signed zeros out of max/relu/sign, float -> int of
    nan or out of range values).

    >>> fold_constants(Graph([], [add(const(0.1, f32), const(0.2, f32))]))  # constant 0.3f
    """
    return _rewrite(g, _fold_node)


# ---------------------------------------------------------------- compositions

def decompose(g: Graph, every_dtype: bool = False, keep=None) -> Graph:
    """Each node whose op declares a `composition` (softmax, layer_norm: primitives for their
    VJPs) replaced by it, so that kernels fuse its parts. float16/bfloat16 nodes stay one node
    unless `every_dtype` (ONNX export): they get no kernels, and eager rounds them once. So do
    the nodes `keep(node)` accepts (a backend's own kernel for them: max pooling on the CPU);
    by default those of `kept_whole` ops (conv2d, lstm_scan). A composition's own composites
    are decomposed in turn (lstm: linear, then lstm_scan, which stays).

    >>> decompose(Graph([x], [softmax(x, dim=1)]))   # exp(x - max) / sum(exp(x - max))
    """
    if keep is None:
        keep = _kept_whole

    def rule(n: Node) -> Node:
        own = n.opdef.composition
        if own is None or not every_dtype and n.dtype in (dt.float16, dt.bfloat16) or keep(n):
            return n
        return _expand(own(n, make_node), n.inputs, rule)

    return _rewrite(g, rule)


def _expand(out: Node, leaves, rule) -> Node:
    """`out` (a composition over `leaves`) with `rule` applied to each node the composition
    made, inputs first: a composition may hold composites (lstm's linear)."""
    known = {id(x) for x in leaves}
    done: dict[int, Node] = {}
    stack = [(out, False)]
    while stack:
        n, ready = stack.pop()
        if id(n) in known or id(n) in done:
            continue
        if not ready:
            stack.append((n, True))
            stack.extend((i, False) for i in n.inputs if id(i) not in known and id(i) not in done)
            continue
        done[id(n)] = rule(_with_inputs(n, tuple(done.get(id(i), i) for i in n.inputs)))
    return done.get(id(out), out)


_KEPT_ON_CPU = frozenset({Role.OWN_KERNEL, Role.KEPT_WHOLE})


def decompose_but_own_kernels(g: Graph) -> Graph:
    """`decompose` where C templates exist: nodes whose op has a template of its own stay."""
    return decompose(g, keep=lambda n: bool(n.opdef.roles & _KEPT_ON_CPU))


def _kept_whole(n: Node) -> bool:
    return Role.KEPT_WHOLE in n.opdef.roles


# ---------------------------------------------------------------- the pipeline

DEFAULT: tuple = (decompose, fold_constants, simplify, rewrite_indexing, transpose_matmul, sink_reshapes,
                  sink_permutes, drop_copies, cse, dce)
# the CPU's: its own templates compute what they can (codegen/fuse.py)
CPU: tuple = (decompose_but_own_kernels,) + DEFAULT[1:]


# Verify every pass's output (`Graph.verify`: SSA order, each node's shape and dtype by its rule)
# while optimising: a developer's tripwire, on in the test suite (tests/conftest.py sets
# FUSETORCH_VERIFY_PASSES=1). Off by default: a recorded backward of a thousand nodes is verified
# ~70 times in its build (a fifth of its passes' time), and graphs are toposorted and their nodes
# made by `make_node` from the op table's rules, so it checks what construction already holds.
VERIFY = os.environ.get("FUSETORCH_VERIFY_PASSES", "0") == "1"


def _check_contract(before: Graph, after: Graph, p: Pass) -> None:
    name = getattr(p, "__name__", repr(p))
    if len(after.inputs) != len(before.inputs) or any(
            a is not b for a, b in zip(after.inputs, before.inputs)):
        raise AssertionError(f"pass {name} changed the graph's inputs")
    if len(after.outputs) != len(before.outputs):
        raise AssertionError(f"pass {name} changed the number of outputs")


def optimize(g: Graph, passes: Sequence[Pass] = DEFAULT, max_rounds: int = 16) -> Graph:
    """Run `passes` in order, round after round, until a round changes nothing or leaves the
    graph's structural hash unchanged (at most `max_rounds`). Each pass must keep the inputs
    (identity, order) and the number of outputs; with `VERIFY` the graph is verified after every
    pass that changed it.

    >>> optimize(Graph([x], [mul(neg(neg(x)), add(const(0.5), const(0.5)))])).outputs == [x]
    """
    h = None
    checked: dict | None = {} if VERIFY else None  # nodes whose rules held (Graph.verify)
    for _ in range(max_rounds):
        changed = False
        for p in passes:
            out = p(g)
            if out is g:  # (the pass changed nothing)
                continue
            changed = True
            _check_contract(g, out, p)
            if checked is not None:
                out.verify(checked)
            g = out
        if not changed:
            break
        # (a round may rebuild nodes into the structure it began with: the hash ends that)
        h2 = g.structural_hash()
        if h2 == h:
            break
        h = h2
    return g


__all__ = ["CPU", "DEFAULT", "count_ops", "cse", "dce", "decompose", "decompose_but_own_kernels", "drop_copies", "fold_constants",
           "optimize", "rewrite_indexing", "scalar_value", "simplify", "sink_permutes",
           "sink_reshapes", "transpose_matmul"]
