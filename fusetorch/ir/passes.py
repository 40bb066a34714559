"""Graph -> Graph passes run before code generation: DCE, CSE, simplification, constant folding.

    g = optimize(graph)              # the default passes to a fixpoint, verified after each
    g = cse(simplify(graph))         # or one pass at a time
    count_ops(g)                     # {'input': 2, 'mul': 1, ...}

Every pass returns a new `Graph` and never touches the nodes of the one it is given: recorded
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

import math
import struct
from typing import Callable, Sequence

from . import dtypes as dt
from .folding import NO as _NO, int_range as _int_range, round_float as _round_float, wrap as _wrap
from .graph import Graph, Node, make_node
from .ops import OPS
from .pool_index import in_window

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
    for n in g.nodes:
        if n.op == "input":
            env[id(n)] = n
            continue
        env[id(n)] = rule(_with_inputs(n, tuple(env[id(i)] for i in n.inputs)))
    return Graph(g.inputs, [env[id(o)] for o in g.outputs])


def scalar_value(n: Node):
    """The exact value a `constant` or `full` node holds, as a Python bool, int or float of its
    dtype's meaning (a float32 value rounded to float32), or None when that cannot be said
    exactly: arrays, non-Python scalars, values the conversion would round twice or reject.

    >>> scalar_value(const(0.1, float32))    # 0.10000000149011612
    """
    while n.op in ("reshape", "expand") and math.prod(n.inputs[0].shape) == 1:
        n = n.inputs[0]  # a single value reshaped or broadcast is still that value
    if n.op not in ("constant", "full"):
        return _NO
    v = n.attrs.get("value")
    d = n.dtype
    if isinstance(v, bool):
        return v if d is dt.bool_ else (float(v) if d.is_floating_point else int(v))
    if isinstance(v, int):
        if d.is_floating_point:
            return _round_float(float(v), d) if abs(v) <= 1 << 53 else _NO
        if d is dt.bool_:
            return bool(v) if v in (0, 1) else _NO
        lo, hi = _int_range(d)
        return int(v) if lo <= v <= hi else _NO
    if isinstance(v, float):
        if d.is_floating_point:
            return _round_float(float(v), d)
        if d is dt.bool_ or not v.is_integer():
            return _NO
        lo, hi = _int_range(d)
        return int(v) if lo <= v <= hi else _NO
    return _NO


def _is_value(n: Node, want: float) -> bool:
    v = scalar_value(n)
    return v is not _NO and not isinstance(v, bool) and v == want


def _is_zero(n: Node, negative: bool) -> bool:
    """`n` is zero, and in floating point a zero of the given sign."""
    v = scalar_value(n)
    if v is _NO or isinstance(v, bool) or v != 0:
        return False
    return not n.dtype.is_floating_point or (math.copysign(1.0, v) < 0) == negative


# ---------------------------------------------------------------- dead code

def dce(g: Graph) -> Graph:
    """Drop every node no output needs; graph inputs stay, in order, even when unused.

    >>> dce(Graph([x, unused], [exp_x])).nodes   # [x, unused, exp_x]
    """
    return Graph(g.inputs, g.outputs)


# ---------------------------------------------------------------- common subexpressions

# Never merged: inputs are distinct by definition, random draws are distinct draws, custom
# Functions are opaque (and may be impure), copy promises a buffer of its own.
NEVER_MERGE = frozenset({"input", "random", "custom", "custom_vjp", "copy"})


class _Unhashable(Exception):
    pass


def _attr_key(v):
    """A hashable key equal for attribute values that mean the same thing. Floats compare by
    their bits (so -0.0 and 0.0 differ, and NaN equals itself); bool, int and float stay apart."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", int(v))
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))
    if isinstance(v, dt.DType):
        return ("dtype", v.name)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_attr_key(x) for x in v)
    raise _Unhashable(type(v).__name__)


def _cse_key(n: Node):
    """(op, inputs, attrs, shape, dtype) for nodes that may merge, else None."""
    if n.op in NEVER_MERGE:
        return None
    attrs = n.attrs
    try:
        if n.op == "constant" and not isinstance(attrs.get("value"), (bool, int, float)):
            digest = attrs.get("digest")
            if not isinstance(digest, str):
                return None  # an array nothing names: only itself is known to equal it
            attrs = {k: v for k, v in attrs.items() if k != "value"}
        akey = tuple(sorted((k, _attr_key(v)) for k, v in attrs.items()))
    except _Unhashable:
        return None
    return (n.op, tuple(id(i) for i in n.inputs), akey, n.shape, n.dtype.name)


def cse(g: Graph) -> Graph:
    """Merge nodes with the same op, the same (merged) inputs and equal attrs. Array constants
    compare by their `digest`; `random`, `custom`, `custom_vjp` and `copy` never merge.

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

def _norm_perm(perm) -> tuple:
    k = len(perm)
    return tuple(p + k if p < 0 else p for p in perm)


def _same_as(x: Node, n: Node) -> Node:
    """`x` standing for `n`, whose values equal x's broadcast to n's shape (same dtype)."""
    if x.shape == n.shape:
        return x
    return make_node("expand", [x], {"shape": n.shape}, n.meta)


def _simplify_node(n: Node) -> Node:
    """One rewrite of `n`, or `n` itself when no rule applies."""
    op, ins, d = n.op, n.inputs, n.dtype
    arith = d is not dt.bool_
    if op == "mul" and arith:
        for a, b in ((0, 1), (1, 0)):
            if _is_value(ins[b], 1):
                return _same_as(ins[a], n)
    elif op == "add" and arith:
        for a, b in ((0, 1), (1, 0)):
            if _is_zero(ins[b], negative=True):  # x + (-0.0) == x, also for x = -0.0
                return _same_as(ins[a], n)
    elif op == "sub" and arith:
        if _is_zero(ins[1], negative=False):  # x - 0.0 == x, also for x = -0.0
            return _same_as(ins[0], n)
    elif op == "div" and d.is_floating_point:
        if _is_value(ins[1], 1):
            return _same_as(ins[0], n)
    elif op == "pow" and arith and ins[1].shape == ():
        # only a 0-d exponent: numpy's elementwise pow with an array of exponents is not
        # correctly rounded (float32 x ** 1 can miss x by an ulp), so the interpreter itself
        # would disagree with the rewrite; with a 0-d exponent it computes x and x * x exactly
        if _is_value(ins[1], 1):
            return _same_as(ins[0], n)
        if _is_value(ins[1], 2) and ins[0].shape == n.shape:
            return make_node("mul", [ins[0], ins[0]], {}, n.meta)
    elif op == "neg" and arith:
        if ins[0].op == "neg":
            return ins[0].inputs[0]
    elif op == "reshape":
        x = ins[0]
        if x.shape == n.shape:
            return x
        if x.op == "reshape":
            return make_node("reshape", [x.inputs[0]], {"shape": n.shape}, n.meta)
    elif op == "permute":
        x, perm = ins[0], _norm_perm(n.attrs["perm"])
        if perm == tuple(range(len(perm))):
            return x
        if x.op == "permute":
            inner = _norm_perm(x.attrs["perm"])
            return make_node("permute", [x.inputs[0]],
                             {"perm": tuple(inner[p] for p in perm)}, n.meta)
    elif op == "expand":
        x = ins[0]
        if x.shape == n.shape:
            return x
        if x.op == "expand":
            return make_node("expand", [x.inputs[0]], {"shape": n.shape}, n.meta)
    elif op == "cast":
        if ins[0].dtype is d:
            return ins[0]
    return n


def simplify(g: Graph) -> Graph:
    """Exact algebraic identities: x*1, 1*x, x/1, x**1 -> x and x**2 -> x*x (0-d exponents);
    x + (-0.0), x - 0.0 (any zero for integers) -> x; neg(neg(x)) -> x; reshape(reshape(x)) ->
    one reshape; permute of permute -> one permute; expand of expand -> one expand; reshape or
    expand to x's own shape, identity permutes and casts to x's own dtype -> x. Where a constant
    broadcasts x to a larger shape, x is expanded instead. Never: x*0 (inf, nan), x + 0.0 in
    floating point (-0.0), arithmetic on bool, removing a `copy`.

    >>> simplify(Graph([x], [mul(neg(neg(x)), 1.0)])).outputs == [x]
    """
    def rule(n: Node) -> Node:
        for _ in range(64):  # a rewrite may enable another on the same node
            m = _simplify_node(n)
            if m is n:
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
        if n.op != "permute" or n.inputs[0].op != "matmul" or users.get(id(n.inputs[0])) != 1:
            return n
        perm, k = _norm_perm(n.attrs["perm"]), len(n.shape)
        if k < 2 or perm != tuple(range(k - 2)) + (k - 1, k - 2):
            return n
        a, b = n.inputs[0].inputs
        if len(a.shape) != k or len(b.shape) != k:
            return n  # batch broadcasting: leave it
        swap = lambda x: make_node("permute", [x], {"perm": perm}, n.meta)
        return make_node("matmul", [swap(b), swap(a)], {}, n.meta)

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
        if n.op != "copy":
            return n
        x = n.inputs[0]
        fresh = x.op == "matmul" or OPS[x.op].kind in ("elementwise", "reduce") and x.op != "copy"
        return x if fresh and users.get(id(x)) == 1 and x.dtype is n.dtype else n

    return _rewrite(g, rule)


def _one_hot_scatter(n: Node) -> Node | None:
    """scatter_add(zeros, idx, src, dim=d) with one index per row along d (max pooling's and
    max(dim)'s gradient) -> where(iota_d == idx, src, 0): elementwise, so it fuses."""
    z, idx, src = n.inputs
    d = n.attrs["dim"]
    if not z.dtype.is_floating_point or scalar_value(z) != 0 or idx.shape[d] != 1 or \
            src.shape != idx.shape or any(a != b for k, (a, b) in
                                          enumerate(zip(idx.shape, z.shape)) if k != d):
        return None
    k = z.shape[d]
    if not (idx.op in ("argmax", "argmin") and tuple(idx.attrs["dims"]) == (d,) and
            idx.inputs[0].shape[d] == k or in_window(idx, d, k)):  # (max pooling's index)
        # an index out of range would match no position and vanish: keep scatter_add's check
        idx = make_node("check", [idx], {
            "lo": 0, "hi": k, "closed": False, "allow": None, "error": "RuntimeError",
            "message": f"index {{value}} is out of bounds for dimension {d} with size {k}"},
            n.meta)
    iota = make_node("iota", [], {"shape": (k,), "dtype": idx.dtype, "start": 0, "step": 1},
                     n.meta)
    along = make_node("reshape", [iota], {"shape": tuple(k if i == d else 1
                                                         for i in range(len(z.shape)))}, n.meta)
    hit = make_node("eq", [along, idx], {}, n.meta)
    zero = make_node("constant", [], {"shape": (), "dtype": z.dtype, "value": 0.0})
    return make_node("where", [hit, src, zero], {}, n.meta)


def _tiling_fold(n: Node) -> Node | None:
    """fold2d of windows that tile the image exactly (stride = kernel, no padding or dilation:
    2x2 max pooling's gradient) -> a permute and a reshape: each element goes to one place, so
    the windows' producer writes the image's layout directly (sink_permutes)."""
    cols = n.inputs[0]
    a = n.attrs
    (kh, kw), (oh, ow), (h, w) = a["kernel"], cols.shape[4:], a["size"]
    if tuple(a["stride"]) != (kh, kw) or tuple(a["padding"]) != (0, 0) or \
            tuple(a["dilation"]) != (1, 1) or (oh * kh, ow * kw) != (h, w):
        return None
    image = make_node("permute", [cols], {"perm": (0, 1, 4, 2, 5, 3)}, n.meta)
    return make_node("reshape", [image], {"shape": n.shape}, n.meta)


def rewrite_indexing(g: Graph) -> Graph:
    """Index-based ops as cheaper equivalents (values equal; a scattered -0.0 may read 0.0):
    gather(x, argmax(x, d, keepdim)) -> max(x, d, keepdim) (likewise argmin -> min); the
    one-index-per-row scatter_add into zeros -> an elementwise where (`_one_hot_scatter`);
    fold2d of exactly tiling windows -> permute + reshape (`_tiling_fold`)."""
    def rule(n: Node) -> Node:
        if n.op == "gather":
            x, idx = n.inputs
            d = n.attrs["dim"]
            if idx.op in ("argmax", "argmin") and idx.inputs[0] is x and \
                    tuple(idx.attrs["dims"]) == (d,) and idx.attrs.get("keepdim"):
                return make_node("max" if idx.op == "argmax" else "min", [x],
                                 {"dims": (d,), "keepdim": True}, n.meta)
        elif n.op == "scatter_add":
            return _one_hot_scatter(n) or n
        elif n.op == "fold2d":
            return _tiling_fold(n) or n
        return n

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
    fold = OPS[n.op].fold  # the op's own rule (ir/elementwise.py), if it has one
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


# ---------------------------------------------------------------- the pipeline

DEFAULT: tuple = (fold_constants, simplify, rewrite_indexing, transpose_matmul, sink_reshapes,
                  sink_permutes, drop_copies, cse, dce)


def _check_contract(before: Graph, after: Graph, p: Pass) -> None:
    name = getattr(p, "__name__", repr(p))
    if len(after.inputs) != len(before.inputs) or any(
            a is not b for a, b in zip(after.inputs, before.inputs)):
        raise AssertionError(f"pass {name} changed the graph's inputs")
    if len(after.outputs) != len(before.outputs):
        raise AssertionError(f"pass {name} changed the number of outputs")


def optimize(g: Graph, passes: Sequence[Pass] = DEFAULT, max_rounds: int = 16) -> Graph:
    """Run `passes` in order, round after round, until a round leaves the graph's structural
    hash unchanged (at most `max_rounds`). The graph is verified after every pass, and each pass
    must keep the inputs (identity, order) and the number of outputs.

    >>> optimize(Graph([x], [mul(neg(neg(x)), add(const(0.5), const(0.5)))])).outputs == [x]
    """
    h = g.structural_hash()
    for _ in range(max_rounds):
        for p in passes:
            out = p(g)
            _check_contract(g, out, p)
            out.verify()
            g = out
        h2 = g.structural_hash()
        if h2 == h:
            break
        h = h2
    return g


__all__ = ["DEFAULT", "NEVER_MERGE", "count_ops", "cse", "dce", "drop_copies", "fold_constants",
           "optimize", "rewrite_indexing", "scalar_value", "simplify", "sink_permutes",
           "sink_reshapes", "transpose_matmul"]
