"""The passes before codegen (fusetorch/ir/passes.py): DCE, CSE, simplify, constant folding.

Graphs are built by hand with `make_node`; meaning is checked by running the original and the
optimized graph through the reference interpreter on the same arrays (special values included:
-0.0, inf, nan) and comparing bit for bit (signed zeros too), or to a tiny tolerance where a
reduction's summation order may differ between a broadcast view and a materialised array.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fusetorch
from fusetorch.ir import dtypes as dt
from fusetorch.ir.grad import backward_graph
from fusetorch.ir.graph import Graph, Node, make_node, toposort
from fusetorch.ir.passes import (DEFAULT, count_ops, cse, dce, drop_copies, fold_constants,
                                 optimize, rewrite_indexing, scalar_value, simplify,
                                 sink_reshapes, transpose_matmul)
from fusetorch.runtime.eager import GENERATOR, make_table
from fusetorch.runtime.runner import run_graph
from fusetorch.tracer.autograd import leaf_node

f16, f32, f64 = dt.float16, dt.float32, dt.float64
i8, u8, i32, i64, b8 = dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool_
IMPL = make_table(np)
NAN, INF = math.nan, math.inf


# ---------------------------------------------------------------- helpers

def inp(shape, dtype=f64):
    return make_node("input", [], {"shape": tuple(shape), "dtype": dtype})


def const(value, dtype=f64):
    return make_node("constant", [], {"shape": (), "dtype": dtype, "value": value})


def full(shape, value, dtype=f64):
    return make_node("full", [], {"shape": tuple(shape), "dtype": dtype, "value": value})


def op(name, *inputs, **attrs):
    return make_node(name, inputs, attrs)


def run(g, arrays):
    with np.errstate(all="ignore"):
        return run_graph(g, list(arrays), IMPL, np)


def same_bits(a, b) -> bool:
    """Equal shape, dtype and values, NaN equal to NaN, and the same sign on zeros."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a) | np.isnan(a),
                                                                   np.signbit(b) | np.isnan(b))


def values(shape, seed, dtype=np.float64):
    """Random values with -0.0, 0.0, inf, -inf, nan and 1.0 sprinkled in."""
    r = np.random.default_rng(seed)
    x = r.standard_normal(shape) * 3
    special = np.array([0.0, -0.0, INF, -INF, NAN, 1.0])
    mask = r.random(shape) < 0.25
    x = np.where(mask, special[r.integers(0, len(special), shape)], x)
    return np.asarray(x, dtype=dtype)


def snapshot(g):
    return [(n, n.op, n.inputs, dict(n.attrs), n.shape, n.dtype) for n in g.nodes]


def assert_unchanged(g, snap):
    assert [(n, n.op, n.inputs, dict(n.attrs), n.shape, n.dtype) for n in g.nodes] == snap


def only_output(g):
    assert len(g.outputs) == 1
    return g.outputs[0]


# ---------------------------------------------------------------- count_ops, dce

def test_count_ops():
    x = inp((2, 3))
    g = Graph([x], [op("add", op("exp", x), op("exp", x))])
    assert count_ops(g) == {"input": 1, "exp": 2, "add": 1}


def test_dce_drops_dead_nodes_and_keeps_unused_inputs_in_order():
    a, unused, b = inp((3,)), inp((7,)), inp((3,))
    live = op("mul", a, b)
    g = Graph([a, unused, b], [live])
    g.nodes.append(op("exp", a))  # a stale node list, as a careless pass might leave
    out = dce(g)
    assert out is not g and out.inputs == [a, unused, b]
    assert out.nodes == [a, unused, b, live]
    assert out.outputs == [live]


def test_rewritten_graphs_hold_no_orphans():
    x = inp((3,))
    g = simplify(Graph([x], [op("exp", op("neg", op("neg", x)))]))
    assert count_ops(g) == {"input": 1, "exp": 1}


# ---------------------------------------------------------------- cse

def test_cse_merges_duplicates_bottom_up():
    x, y = inp((2, 3)), inp((2, 3))
    s1 = op("add", op("exp", x), y)
    s2 = op("add", op("exp", x), y)
    g = Graph([x, y], [op("mul", s1, s2)])
    out = cse(g)
    assert count_ops(out) == {"input": 2, "exp": 1, "add": 1, "mul": 1}
    m = only_output(out)
    assert m.inputs[0] is m.inputs[1]
    a = [values((2, 3), 1), values((2, 3), 2)]
    assert same_bits(run(g, a)[0], run(out, a)[0])


def test_cse_merges_equal_scalar_constants():
    x = inp((3,))
    g = Graph([x], [op("sub", op("mul", x, const(2.0)), op("add", x, const(2.0)))])
    assert count_ops(cse(g))["constant"] == 1


@pytest.mark.parametrize("a, b", [
    (op("sum", inp((2, 3)), dims=(0,), keepdim=False),
     op("sum", inp((2, 3)), dims=(1,), keepdim=False)),
    (op("sum", inp((2, 3)), dims=(0,), keepdim=False),
     op("sum", inp((2, 3)), dims=(0,), keepdim=True)),
    (op("cast", inp((2, 3)), dtype=f32), op("cast", inp((2, 3)), dtype=f16)),
    (op("clamp", inp((2, 3)), min=0.0, max=None), op("clamp", inp((2, 3)), min=-0.0, max=None)),
])
def test_cse_respects_attrs(a, b):
    # rebuild both over one shared input so only the attrs differ
    x = inp((2, 3))
    a, b = make_node(a.op, [x], dict(a.attrs)), make_node(b.op, [x], dict(b.attrs))
    g = Graph([x], [a, b])
    out = cse(g)
    assert out.outputs[0] is not out.outputs[1]
    assert len(out) == 3


def test_cse_constants_compare_by_bits_and_type():
    assert len(cse(Graph([], [const(0.0), const(-0.0)]))) == 2
    assert len(cse(Graph([], [const(1), const(1.0)]))) == 2
    assert len(cse(Graph([], [const(True, b8), const(1, b8)]))) == 2
    assert len(cse(Graph([], [const(2.0, f32), const(2.0, f64)]))) == 2
    assert len(cse(Graph([], [const(NAN), const(NAN)]))) == 1  # the same bits
    assert len(cse(Graph([], [full((2,), 0.0), full((3,), 0.0)]))) == 2
    assert len(cse(Graph([], [full((2,), 0.0), full((2,), 0.0)]))) == 1


def test_cse_array_constants_compare_by_digest():
    def arr_const(a, digest):
        attrs = {"shape": a.shape, "dtype": f64, "value": a}
        if digest is not None:
            attrs["digest"] = digest
        return make_node("constant", [], attrs)

    a = np.arange(3.0)
    assert len(cse(Graph([], [arr_const(a, "d1"), arr_const(a.copy(), "d1")]))) == 1
    assert len(cse(Graph([], [arr_const(a, "d1"), arr_const(a, "d2")]))) == 2
    assert len(cse(Graph([], [arr_const(a, None), arr_const(a, None)]))) == 2


def test_drop_copies_only_of_fresh_values_nobody_else_reads():
    x, w = inp((4, 3)), inp((3, 5))
    fresh = op("matmul", x, w)
    dropped = drop_copies(Graph([x, w], [op("copy", fresh)]))
    assert dropped.outputs == [fresh] and count_ops(dropped).get("copy", 0) == 0
    e = op("exp", x)
    assert drop_copies(Graph([x, w], [op("copy", e)])).outputs == [e]
    kept = [
        Graph([x, w], [op("copy", x)]),  # an input: the copy is the caller's own buffer
        Graph([x, w], [op("copy", op("permute", x, perm=(1, 0)))]),  # a view of one
        Graph([x, w], [op("copy", fresh), fresh]),  # another reader sees the value itself
        Graph([x, w], [op("copy", e), op("copy", e)]),  # two copies: two buffers
        Graph([x, w], [op("copy", op("copy", x))]),
    ]
    for g in kept:
        assert count_ops(drop_copies(g))["copy"] == count_ops(g)["copy"], g.text()


def _same_values(g, out, arrays):
    for a, b in zip(run(g, arrays), run(out, arrays)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)  # equal values (a scattered -0.0 may read 0.0)


@pytest.mark.parametrize("arg, red", [("argmax", "max"), ("argmin", "min")])
def test_gather_at_the_arg_extreme_is_the_extreme(arg, red):
    x = inp((3, 4, 5))
    for d in range(3):
        idx = op(arg, x, dims=(d,), keepdim=True)
        g = Graph([x], [op("gather", x, idx, dim=d), idx])
        out = rewrite_indexing(g)
        assert count_ops(out).get("gather", 0) == 0 and count_ops(out)[red] == 1
        _same_values(g, out, [values((3, 4, 5), d)])
    other = inp((3, 4, 5))  # the index of another tensor's extreme: left alone
    g = Graph([x, other], [op("gather", x, op(arg, other, dims=(1,), keepdim=True), dim=1)])
    assert count_ops(rewrite_indexing(g)).get("gather") == 1


def test_one_index_per_row_scatter_into_zeros_is_elementwise():
    x, src = inp((4, 3, 5)), inp((4, 1, 5))
    idx = op("argmax", x, dims=(1,), keepdim=True)
    zeros = op("full", shape=(4, 3, 5), dtype=f64, value=0)
    g = Graph([x, src], [op("scatter_add", zeros, idx, src, dim=1)])
    out = rewrite_indexing(g)
    assert count_ops(out).get("scatter_add", 0) == 0 and count_ops(out)["where"] == 1
    r = np.random.default_rng(0)
    _same_values(g, out, [r.standard_normal((4, 3, 5)), r.standard_normal((4, 1, 5))])
    kept = [  # a base that is not zeros; several indices per row
        Graph([x, src], [op("scatter_add", x, idx, src, dim=1)]),
        Graph([x], [op("scatter_add", zeros, op("expand", idx, shape=(4, 3, 5)), x, dim=1)])]
    for k in kept:
        assert count_ops(rewrite_indexing(k))["scatter_add"] == 1


@pytest.mark.parametrize("kernel, stride, size, tiles", [
    ((2, 2), (2, 2), (6, 8), True), ((2, 3), (2, 3), (4, 9), True),
    ((2, 2), (2, 2), (7, 8), False), ((3, 3), (1, 1), (5, 5), False)])
def test_fold_of_tiling_windows_is_a_permute(kernel, stride, size, tiles):
    x = inp((2, 3) + size)
    cols = op("unfold2d", x, kernel=kernel, stride=stride, padding=(0, 0), dilation=(1, 1),
              pad_value=0.0)
    cols2 = op("mul", cols, const(2.0))
    g = Graph([x], [op("fold2d", cols2, size=size, kernel=kernel, stride=stride,
                       padding=(0, 0), dilation=(1, 1))])
    out = rewrite_indexing(g)
    assert (count_ops(out).get("fold2d", 0) == 0) == tiles
    _same_values(g, out, [np.random.default_rng(1).standard_normal((2, 3) + size)])


POOLS = [  # (input shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),  # LeNet's: windows that tile
    ((2, 2, 7, 6), (3, 3), (1, 1), (1, 1), (1, 1), False),  # overlapping, padded
    ((1, 2, 7, 7), (2, 3), (2, 2), (0, 1), (2, 1), True),   # dilated, ceil_mode's last window
    ((1, 2, 4, 5, 6), (2, 2, 2), (1, 2, 2), (0, 1, 1), (1, 1, 1), False)]  # a volume


@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, ceil_mode", POOLS)
@pytest.mark.parametrize("relu", [True, False])
def test_a_mask_after_a_pool_gradient_moves_before_it(shape, kernel, stride, padding, dilation,
                                                      ceil_mode, relu):
    """ReLU's VJP after max pooling's, where(le(r, 0), 0, max_pool_grad(r, g)), masks the
    cotangent at the picks instead (where(le(max_pool(r), 0), 0, g) into the pool's gradient):
    the same bits, NaNs, infinities and signed zeros included, overlapping windows too (every
    addend at a position is masked alike)."""
    pool = "max_pool2d" if len(shape) == 4 else "max_pool3d"
    a = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation,
             ceil_mode=ceil_mode)
    x = inp(shape)
    r = op("relu", x) if relu else x
    y = op(pool, r, **a)
    g = inp(y.shape)
    mask = op("le", r, const(0.0)) if relu else op("lt", const(0.5), r)
    gx = op("where", mask, const(0.0), op(pool + "_grad", r, g, **a))
    graph = Graph([x, g], [gx])
    out = rewrite_indexing(graph)
    new = only_output(out)
    assert new.op == pool + "_grad" and new.inputs[1].op == "where"
    assert new.inputs[1].inputs[0].inputs[int(not relu)].op == pool
    for seed in range(3):
        arrays = [values(shape, seed), values(y.shape, seed + 10)]
        for u, v in zip(run(graph, arrays), run(out, arrays)):
            assert same_bits(u, v)


def test_a_mask_after_a_pool_gradient_stays_where_it_must():
    """Not rewritten: a -0.0 or nonzero fill (the positions no window picks hold +0), a mask
    of another value than the pooled one, or of that value and another array."""
    a = dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), ceil_mode=False)
    x, other = inp((1, 2, 4, 4)), inp((1, 2, 4, 4))
    g = inp((1, 2, 2, 2))
    m = op("max_pool2d_grad", x, g, **a)
    for gx in (op("where", op("le", x, const(0.0)), const(-0.0), m),
               op("where", op("le", x, const(0.0)), const(1.0), m),
               op("where", op("le", other, const(0.0)), const(0.0), m),
               op("where", op("le", x, other), const(0.0), m)):
        out = rewrite_indexing(Graph([x, other, g], [gx]))
        assert only_output(out).op == "where"


def test_sink_reshapes_splits_an_elementwise_result_at_its_inputs():
    a, b, c = inp((4, 6, 5)), inp((6, 1)), inp(())
    f = op("add", op("mul", a, b), c)
    g = Graph([a, b, c], [op("reshape", f, shape=(2, 2, 2, 3, 5))])
    out = sink_reshapes(g)
    assert out.outputs[0].op == "add" and out.outputs[0].shape == (2, 2, 2, 3, 5)
    r = np.random.default_rng(2)
    _same_values(g, out, [r.standard_normal((4, 6, 5)), r.standard_normal((6, 1)),
                          np.array(1.5)])
    for shape in ((24, 5), (4, 30), (4, 5, 6)):  # merges and reorders: left alone
        g = Graph([a, b, c], [op("reshape", f, shape=shape)])
        assert sink_reshapes(g).outputs[0].op == "reshape"


def test_cse_never_merges_random_custom_copy_or_inputs():
    x = inp((4,))
    r1 = op("random", shape=(4,), dtype=f64, dist="uniform", low=0.0, high=1.0)
    r2 = op("random", shape=(4,), dtype=f64, dist="uniform", low=0.0, high=1.0)
    c1, c2 = op("copy", x), op("copy", x)
    fn = object()
    k1 = make_node("custom", [x], {"fn": fn, "positions": (0,), "dtype": f64}, shape=(4,))
    k2 = make_node("custom", [x], {"fn": fn, "positions": (0,), "dtype": f64}, shape=(4,))
    v1 = op("custom_vjp", x, k1, index=0, positions=(0,), shape=(4,), dtype=f64)
    v2 = op("custom_vjp", x, k1, index=0, positions=(0,), shape=(4,), dtype=f64)
    y = inp((4,))
    g = Graph([x, y], [r1, r2, c1, c2, k1, k2, v1, v2, x, y])
    out = cse(g)
    assert out.outputs == g.outputs
    assert count_ops(out) == count_ops(g)


def test_cse_keeps_output_count_and_order():
    x = inp((3,))
    g = Graph([x], [op("exp", x), x, op("exp", x)])
    out = cse(g)
    assert len(out.outputs) == 3
    assert out.outputs[0] is out.outputs[2] and out.outputs[1] is x
    assert count_ops(out) == {"input": 1, "exp": 1}


# ---------------------------------------------------------------- simplify: what it removes

@pytest.mark.parametrize("build", [
    lambda x: op("mul", x, const(1.0)),
    lambda x: op("mul", const(1), x),
    lambda x: op("mul", x, full((2, 3), 1.0)),
    lambda x: op("div", x, const(1.0)),
    lambda x: op("pow", x, const(1.0)),
    lambda x: op("sub", x, const(0.0)),
    lambda x: op("sub", x, const(0)),
    lambda x: op("add", x, const(-0.0)),
    lambda x: op("add", const(-0.0), x),
    lambda x: op("neg", op("neg", x)),
    lambda x: op("neg", op("neg", op("neg", op("neg", x)))),
    lambda x: op("reshape", x, shape=(2, 3)),
    lambda x: op("reshape", x, shape=(-1, 3)),
    lambda x: op("reshape", op("reshape", x, shape=(6,)), shape=(2, 3)),
    lambda x: op("permute", x, perm=(0, 1)),
    lambda x: op("permute", x, perm=(-2, -1)),
    lambda x: op("permute", op("permute", x, perm=(1, 0)), perm=(1, 0)),
    lambda x: op("expand", x, shape=(2, 3)),
    lambda x: op("cast", x, dtype=f64),
    lambda x: op("mul", op("div", op("cast", op("neg", op("neg", x)), dtype=f64), const(1.0)),
                 const(1.0)),
])
def test_simplify_removes_identities(build):
    x = inp((2, 3))
    g = Graph([x], [build(x)])
    out = simplify(g)
    assert out.outputs == [x] and len(out) == 1
    a = [values((2, 3), 3)]
    assert same_bits(run(g, a)[0], run(out, a)[0])


@pytest.mark.parametrize("dtype", [i8, u8, i32, i64])
@pytest.mark.parametrize("build", [
    lambda x, d: op("add", x, const(0, d)),
    lambda x, d: op("add", const(0, d), x),
    lambda x, d: op("sub", x, const(0, d)),
    lambda x, d: op("mul", x, const(1, d)),
    lambda x, d: op("pow", x, const(1, d)),
    lambda x, d: op("neg", op("neg", x)),
])
def test_simplify_integer_identities(build, dtype):
    x = inp((5,), dtype)
    g = Graph([x], [build(x, dtype)])
    out = simplify(g)
    assert out.outputs == [x]
    info = np.iinfo(np.dtype(dtype.name))
    a = [np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=dtype.name)]
    assert same_bits(run(g, a)[0], run(out, a)[0])


def test_simplify_identity_that_broadcasts_becomes_expand():
    x = inp((3,))
    g = Graph([x], [op("mul", full((2, 3), 1.0), x)])
    out = simplify(g)
    e = only_output(out)
    assert e.op == "expand" and e.inputs == (x,) and e.shape == (2, 3)
    a = [values((3,), 4)]
    assert same_bits(run(g, a)[0], run(out, a)[0])


def test_simplify_merges_movement_chains():
    x = inp((2, 3, 4))
    r = op("reshape", op("reshape", op("reshape", x, shape=(6, 4)), shape=(24,)), shape=(4, -1))
    p = op("permute", op("permute", x, perm=(1, 2, 0)), perm=(-3, 2, 1))
    e = op("expand", op("expand", op("reshape", x, shape=(2, 1, 3, 4)), shape=(2, 5, 3, 4)),
           shape=(7, 2, 5, 3, 4))
    g = Graph([x], [r, p, e])
    out = simplify(g)
    r2, p2, e2 = out.outputs
    assert r2.op == "reshape" and r2.inputs == (x,) and r2.attrs["shape"] == (4, 6)
    assert p2.op == "permute" and p2.inputs == (x,) and p2.shape == p.shape
    assert e2.op == "expand" and e2.inputs[0].op == "reshape" and e2.inputs[0].inputs == (x,)
    assert count_ops(out) == {"input": 1, "reshape": 2, "permute": 1, "expand": 1}
    a = [values((2, 3, 4), 5)]
    for u, v in zip(run(g, a), run(out, a)):
        assert same_bits(u, v)


@given(st.permutations(range(4)), st.permutations(range(4)))
@settings(max_examples=60, deadline=None)
def test_permute_composition_matches_numpy(p1, p2):
    x = inp((2, 3, 4, 5))
    g = Graph([x], [op("permute", op("permute", x, perm=tuple(p1)), perm=tuple(p2))])
    out = simplify(g)
    assert len(out) <= 2
    a = [values((2, 3, 4, 5), 6)]
    assert same_bits(run(g, a)[0], run(out, a)[0])


def test_simplify_pow2_becomes_mul():
    x = inp((4,))
    g = Graph([x], [op("pow", x, const(2))])
    out = simplify(g)
    m = only_output(out)
    assert m.op == "mul" and m.inputs == (x, x)
    a = [values((4,), 7)]
    assert same_bits(run(g, a)[0], run(out, a)[0])


# ---------------------------------------------------------------- simplify: what it keeps

@pytest.mark.parametrize("build", [
    lambda x: op("mul", x, const(0.0)),            # inf * 0 is nan
    lambda x: op("mul", const(0.0), x),
    lambda x: op("add", x, const(0.0)),            # -0.0 + 0.0 is +0.0
    lambda x: op("add", const(0), x),
    lambda x: op("sub", x, const(-0.0)),           # -0.0 - -0.0 is +0.0
    lambda x: op("sub", const(0.0), x),
    lambda x: op("div", const(1.0), x),
    lambda x: op("mul", x, const(1.0000000000000002)),
    lambda x: op("mul", x, const(-1.0)),
    lambda x: op("pow", x, const(3.0)),
    lambda x: op("pow", x, const(0.0)),
    lambda x: op("pow", x, full((2, 3), 1.0)),     # numpy's array-exponent pow is inexact
    lambda x: op("pow", x, full((2, 3), 2.0)),
    lambda x: op("copy", x),
    lambda x: op("cast", op("cast", x, dtype=f32), dtype=f64),
    lambda x: op("reshape", x, shape=(3, 2)),
    lambda x: op("permute", x, perm=(1, 0)),
    lambda x: op("sub", x, x),                     # inf - inf is nan
    lambda x: op("div", x, x),
])
def test_simplify_keeps_what_is_not_an_identity(build):
    x = inp((2, 3))
    g = Graph([x], [build(x)])
    out = simplify(g)
    assert out.structural_hash() == g.structural_hash()


def test_float_plus_zero_is_not_an_identity():
    """Why simplify leaves `x + 0.0` alone in floating point."""
    x = inp((1,))
    g = Graph([x], [op("add", x, const(0.0))])
    assert not same_bits(run(g, [np.array([-0.0])])[0], np.array([-0.0]))
    assert only_output(simplify(g)).op == "add"


def test_simplify_leaves_random_nodes_alone():
    r = op("random", shape=(3,), dtype=f64, dist="normal", low=None, high=None)
    g = Graph([], [op("mul", r, const(1.0)), op("mul", r, const(0.0))])
    out = simplify(g)
    assert out.outputs[0] is r
    assert out.outputs[1].inputs[0] is r and count_ops(out)["random"] == 1


def test_simplify_keeps_bool_arithmetic():
    x = inp((3,), b8)
    g = Graph([x], [op("mul", x, const(True, b8)), op("add", x, const(False, b8))])
    assert simplify(g).structural_hash() == g.structural_hash()


# ---------------------------------------------------------------- fold_constants

def folded(node):
    """The value `fold_constants` gives a graph computing `node`, checked against the
    interpreter bit for bit."""
    g = Graph([], [node])
    out = fold_constants(g)
    c = only_output(out)
    assert c.op in ("constant", "full") and len(out) == 1, out.text()
    assert same_bits(run(out, [])[0], run(g, [])[0])
    return scalar_value(c)


def test_fold_rounds_float32_and_float16():
    v = folded(op("add", const(0.1, f32), const(0.2, f32)))
    assert v == float(np.float32(0.1) + np.float32(0.2))
    assert folded(op("mul", const(1.1, f16), const(3.3, f16))) == float(
        np.float16(1.1) * np.float16(3.3))
    assert folded(op("div", const(1.0, f32), const(3.0, f32))) == float(
        np.float32(1) / np.float32(3))
    assert folded(op("sqrt", const(2.0, f32))) == float(np.sqrt(np.float32(2)))


def test_fold_overflows_to_inf():
    assert folded(op("mul", const(65504.0, f16), const(2.0, f16))) == INF
    assert folded(op("add", const(65504.0, f16), const(16.0, f16))) == INF  # halfway: to even
    assert folded(op("mul", const(3e38, f32), const(-2.0, f32))) == -INF
    assert folded(op("mul", const(1e308), const(10.0))) == INF


def test_fold_ieee_specials():
    assert folded(op("div", const(1.0), const(0.0))) == INF
    assert folded(op("div", const(1.0), const(-0.0))) == -INF
    assert math.isnan(folded(op("div", const(0.0), const(0.0))))
    assert math.isnan(folded(op("mul", const(NAN), const(0.0))))
    assert math.isnan(folded(op("mul", const(INF), const(0.0))))
    assert math.isnan(folded(op("sub", const(INF), const(INF))))
    assert math.isnan(folded(op("sqrt", const(-1.0))))
    assert math.copysign(1, folded(op("sqrt", const(-0.0)))) < 0
    assert math.copysign(1, folded(op("neg", const(0.0)))) < 0
    assert math.isnan(folded(op("maximum", const(NAN), const(1.0))))
    assert folded(op("eq", const(NAN), const(NAN))) is False
    assert folded(op("ne", const(NAN), const(NAN))) is True
    assert folded(op("logical_not", const(NAN))) is False


def test_fold_integers_wrap():
    assert folded(op("add", const(100, i8), const(100, i8))) == -56
    assert folded(op("sub", const(0, u8), const(1, u8))) == 255
    assert folded(op("mul", const(2**31 - 1, i32), const(2, i32))) == -2
    assert folded(op("neg", const(-2**63, i64))) == -2**63
    assert folded(op("abs", const(-128, i8))) == -128
    assert folded(op("pow", const(3, i8), const(5, i8))) == 243 - 256
    assert folded(op("bitwise_xor", const(-1, i32), const(5, i32))) == -6
    assert folded(op("bitwise_and", const(True, b8), const(False, b8))) is False


def test_fold_casts_where_and_compares():
    assert folded(op("cast", const(1e40), dtype=f32)) == INF
    assert folded(op("cast", const(0.1), dtype=f32)) == float(np.float32(0.1))
    assert folded(op("cast", const(-3.7), dtype=i32)) == -3
    assert folded(op("cast", const(300, i32), dtype=u8)) == 44
    assert folded(op("cast", const(NAN), dtype=b8)) is True
    assert folded(op("where", op("lt", const(1.0), const(2.0)), const(5, i32), const(6, i32))) == 5
    assert folded(op("ge", const(-0.0), const(0.0))) is True


def test_fold_chains_and_fulls():
    c = op("mul", op("add", const(1.5), const(2.5)), op("neg", const(0.5)))
    assert folded(c) == -2.0
    f = op("add", full((2, 3), 1.0, f32), const(2.0, f32))
    out = fold_constants(Graph([], [f]))
    n = only_output(out)
    assert n.op == "full" and n.shape == (2, 3) and n.attrs["value"] == 3.0 and n.dtype is f32
    assert same_bits(run(out, [])[0], np.full((2, 3), 3.0, np.float32))


@pytest.mark.parametrize("build", [
    lambda: op("exp", const(1.0)),                     # transcendental: not correctly rounded
    lambda: op("tanh", const(1.0, f32)),
    lambda: op("pow", const(2.0), const(0.5)),         # float pow
    lambda: op("pow", const(2, i32), const(-1, i32)),  # an error at run time
    lambda: op("clamp", const(3.0), min=0.0, max=1.0),
    lambda: op("copy", const(3.0)),
    lambda: op("sign", const(-0.0)),
    lambda: op("relu", const(-0.0)),
    lambda: op("maximum", const(-0.0), const(0.0)),
    lambda: op("cast", const(NAN), dtype=i32),
    lambda: op("cast", const(1e10), dtype=i32),
    lambda: op("cast", const(2**53 + 1, i64), dtype=f64),   # would round twice
    lambda: op("add", const(300, u8), const(1, u8)),   # 300 is no uint8: numpy refuses it
    lambda: op("add", const(2**60 + 1, f32), const(1.0, f32)),
    lambda: op("add", const(1.0), inp(())),
    lambda: op("add", op("random", shape=(), dtype=f64, dist="normal", low=None, high=None),
               const(1.0)),
    lambda: op("add", make_node("constant", [], {"shape": (2,), "dtype": f64,
                                                 "value": np.ones(2), "digest": "x"}),
               const(1.0)),
    lambda: op("add", op("iota", shape=(3,), dtype=f64, start=0.0, step=1.0), const(1.0)),
    lambda: op("sum", full((3,), 1.0), dims=(0,), keepdim=False),
])
def test_fold_leaves_what_it_cannot_do_exactly(build):
    n = build()
    ins = [m for m in toposort([n]) if m.op == "input"]
    g = Graph(ins, [n])
    assert fold_constants(g).structural_hash() == g.structural_hash()


SCALARS = st.one_of(
    st.sampled_from([0, 1, -1, 2, 3, 127, 128, 255, 256, -128, -129, 2**31 - 1, 2**31,
                     2**53 + 1, -2**63, True, False]),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1e-45, 1e-8, 65504.0, 65520.0, 3.4e38,
                     1e308, INF, -INF, NAN, 2.5, -3.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-2**70, 2**70))
FOLD_OPS = ["neg", "abs", "sqrt", "sign", "relu", "logical_not", "add", "sub", "mul", "div",
            "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and",
            "bitwise_or", "bitwise_xor", "where", "cast"]


@given(st.sampled_from(FOLD_OPS), st.sampled_from([b8, u8, i8, i32, i64, f16, f32, f64]),
       st.lists(SCALARS, min_size=3, max_size=3), st.sampled_from([b8, i8, i64, f16, f32, f64]),
       st.booleans())
@settings(max_examples=400, deadline=None)
def test_fold_matches_the_interpreter(name, dtype, vals, cast_to, use_full):
    """Whatever folds gives the interpreter's value bit for bit; whatever the interpreter
    rejects is not folded."""
    def src(v, d):
        return full((), v, d) if use_full else const(v, d)

    try:
        if name == "where":
            node = op("where", src(bool(vals[0]), b8), src(vals[1], dtype), src(vals[2], dtype))
        elif name == "cast":
            node = op("cast", src(vals[0], dtype), dtype=cast_to)
        else:
            nin = 1 if name in ("neg", "abs", "sqrt", "sign", "relu", "logical_not") else 2
            node = make_node(name, [src(v, dtype) for v in vals[:nin]])
    except (TypeError, RuntimeError):
        return
    g = Graph([], [node])
    try:
        with np.errstate(all="ignore"):
            want = run(g, [])[0]
    except Exception:
        want = None
    out = fold_constants(g)
    out.verify()
    c = only_output(out)
    if c is node:
        return
    assert want is not None, f"folded {g.text()} which the interpreter rejects"
    assert same_bits(run(out, [])[0], want), (g.text(), out.text(), want)


# ---------------------------------------------------------------- optimize

def test_optimize_runs_to_a_fixpoint():
    x = inp((2, 3))
    # simplify drops identity permutes, exposing a foldable add (round 2), whose result 1.0
    # makes mul an identity
    one = op("add", op("permute", op("reshape", const(0.25), shape=(1, 1)), perm=(0, 1)),
             op("permute", op("reshape", const(0.75), shape=(1, 1)), perm=(0, 1)))
    y = op("mul", op("neg", op("neg", x)), one)
    g = Graph([x], [y, op("exp", x), op("exp", x)])
    once = g
    for p in DEFAULT:
        once = p(once)
    assert once.outputs[0] is not x  # one round is not enough
    out = optimize(g)
    assert out.outputs[0] is x
    assert out.outputs[1] is out.outputs[2]
    assert count_ops(out) == {"input": 1, "exp": 1}
    a = [values((2, 3), 8)]
    for u, v in zip(run(g, a), run(out, a)):
        assert same_bits(u, v)


def test_optimize_verifies_after_every_pass_that_changed_the_graph(monkeypatch):
    calls = []
    real = Graph.verify
    monkeypatch.setattr(Graph, "verify",
                        lambda self, *a: (calls.append(self), real(self, *a))[1])
    x = inp((3,))
    g = Graph([x], [op("mul", x, const(1.0))])
    out = optimize(g)
    assert out.outputs == [x] and calls and calls[-1] is out
    calls.clear()
    assert optimize(out) is out and calls == []  # (nothing changed: nothing to verify)


def test_optimize_rejects_a_pass_that_breaks_the_graph():
    x = inp((3,))
    g = Graph([x], [op("exp", x)])

    def bad_shape(g):
        wrong = Node("exp", (g.inputs[0],), {}, (4,), f64)  # the shape rule says (3,)
        return Graph(g.inputs, [wrong])

    def new_inputs(g):
        y = inp((3,))
        return Graph([y], [op("exp", y)])

    def drops_output(g):
        return Graph(g.inputs, [])

    for p in (bad_shape, new_inputs, drops_output):
        with pytest.raises(AssertionError):
            optimize(g, passes=(p,))


def test_optimize_with_chosen_passes():
    x = inp((3,))
    g = Graph([x], [op("add", op("mul", x, const(1.0)), op("mul", x, const(1.0)))])
    assert count_ops(optimize(g, passes=(cse,))) == {"input": 1, "constant": 1, "mul": 1,
                                                      "add": 1}
    assert count_ops(optimize(g)) == {"input": 1, "add": 1}


def test_passes_never_mutate_their_input_graph():
    x, y = inp((2, 3)), inp((3,))
    a = op("mul", op("neg", op("neg", x)), const(1.0))
    b = op("add", op("exp", a), op("exp", a))
    c = op("permute", op("permute", b, perm=(1, 0)), perm=(1, 0))
    d = op("add", c, op("mul", y, op("add", const(0.5), const(0.5))))
    g = Graph([x, y], [d, op("pow", x, const(2.0))])
    snap, h = snapshot(g), g.structural_hash()
    for p in (dce, cse, simplify, fold_constants, optimize):
        out = p(g)
        assert out.inputs == [x, y] and len(out.outputs) == 2
    assert_unchanged(g, snap)
    assert g.structural_hash() == h


# ---------------------------------------------------------------- random graphs

SPECIAL = [0.0, -0.0, 1.0, 1, 0, 2.0, 2, 0.5, -1.0, NAN, INF, 3.0]
UNARY = ["neg", "exp", "tanh", "abs", "relu", "sqrt", "sin", "sign"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]


@st.composite
def graphs(draw):
    """Random chains over random shapes, rich in what the passes look for: identities with
    special constants, double negation, movement chains, duplicates, constant subexpressions."""
    shape = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
    inputs = [inp(shape) for _ in range(draw(st.integers(1, 2)))]
    pool = list(inputs)
    has_random = False
    for _ in range(draw(st.integers(1, 12))):
        x = draw(st.sampled_from(pool))
        kind = draw(st.sampled_from([
            "unary", "const_binary", "const_binary", "binary", "neg_neg", "reshape", "permute",
            "expand", "cast", "dup", "const_expr", "copy", "sum", "random"]))
        if kind == "unary":
            y = op(draw(st.sampled_from(UNARY)), x)
        elif kind == "const_binary":
            v = draw(st.sampled_from(SPECIAL))
            where = draw(st.sampled_from(["scalar", "full", "full_bigger"]))
            c = const(v) if where == "scalar" else full(
                x.shape if where == "full" else (2,) + x.shape, v)
            name = draw(st.sampled_from(BINARY))
            y = op(name, x, c) if draw(st.booleans()) else op(name, c, x)
        elif kind == "binary":
            others = [p for p in pool if p.shape == x.shape]
            y = op(draw(st.sampled_from(BINARY)), x, draw(st.sampled_from(others)))
        elif kind == "neg_neg":
            y = op("neg", op("neg", x))
        elif kind == "reshape":
            n = 1
            for s in x.shape:
                n *= s
            target = draw(st.sampled_from([x.shape, (n,), tuple(reversed(x.shape)), (-1,),
                                           x.shape + (1,), (1,) + x.shape]))
            y = op("reshape", x, shape=target)
            if draw(st.booleans()):
                y = op("reshape", y, shape=x.shape)
        elif kind == "permute":
            k = len(x.shape)
            p1 = tuple(draw(st.permutations(range(k))))
            y = op("permute", x, perm=p1)
            if draw(st.booleans()):
                p2 = tuple(d - k if draw(st.booleans()) else d
                           for d in draw(st.permutations(range(k))))
                y = op("permute", y, perm=p2)
        elif kind == "expand":
            y = op("expand", x, shape=draw(st.sampled_from([x.shape, (2,) + x.shape])))
            if draw(st.booleans()):
                y = op("expand", y, shape=(3,) + y.shape)
        elif kind == "cast":
            y = op("cast", x, dtype=f64)
            if draw(st.booleans()):
                y = op("cast", op("cast", x, dtype=f32), dtype=f64)
        elif kind == "dup":
            made = [p for p in pool if p.inputs and p.op != "random"]
            if not made:
                continue
            m = draw(st.sampled_from(made))
            y = make_node(m.op, m.inputs, dict(m.attrs))
        elif kind == "const_expr":
            a, b = draw(st.sampled_from(SPECIAL)), draw(st.sampled_from(SPECIAL))
            c = op(draw(st.sampled_from(["add", "sub", "mul", "div", "maximum"])),
                   const(a), const(b))
            y = op(draw(st.sampled_from(["mul", "add", "div"])), x, c)
        elif kind == "copy":
            y = op("copy", x)
        elif kind == "sum":
            if not x.shape:
                continue
            y = op("sum", x, dims=(draw(st.integers(0, len(x.shape) - 1)),),
                   keepdim=draw(st.booleans()))
        else:  # at most one random source: its draws do not depend on node order then
            if has_random:
                continue
            has_random = True
            y = op("add", x, op("random", shape=x.shape, dtype=f64, dist="uniform",
                                low=0.0, high=1.0))
        pool.append(y)
    outs = [pool[-1]] + ([draw(st.sampled_from(pool))] if draw(st.booleans()) else [])
    return Graph(inputs, outs)


def run_seeded(g, arrays):
    GENERATOR.seed(1234)
    return run(g, arrays)


_VIEWS = ("permute", "reshape", "expand")


def _work(g) -> int:
    """Nodes that compute. Views may multiply: sink_permutes puts one permute on each input of
    the chain it moves past, and transpose_matmul one on each operand; they cost no kernel."""
    return sum(1 for n in g.nodes if n.op not in _VIEWS)


@given(graphs(), st.integers(0, 2**32 - 1))
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_optimize_preserves_meaning(g, seed):
    arrays = [values(n.shape, seed + k) for k, n in enumerate(g.inputs)]
    snap = snapshot(g)
    out = optimize(g)
    assert_unchanged(g, snap)
    assert out.inputs == g.inputs and len(out.outputs) == len(g.outputs)
    assert _work(out) <= _work(g)
    assert count_ops(out).get("random", 0) == count_ops(g).get("random", 0)
    assert count_ops(out).get("copy", 0) <= count_ops(g).get("copy", 0)  # see drop_copies
    reduces = "sum" in count_ops(g)
    for want, got in zip(run_seeded(g, arrays), run_seeded(out, arrays)):
        if reduces:  # a sum over a broadcast view may add in another order
            assert want.shape == got.shape and want.dtype == got.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
        else:
            assert same_bits(want, got), (g.text(), out.text())


@given(graphs())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_optimize_is_idempotent(g):
    once = optimize(g)
    twice = optimize(once)
    assert twice.structural_hash() == once.structural_hash()
    for p in DEFAULT:  # a fixpoint of every pass
        assert p(once).structural_hash() == once.structural_hash()


# ---------------------------------------------------------------- real backward graphs

def _net_tanh(x, ws):
    (w,) = ws
    return ((x @ w).tanh() * 2).sum()


def _net_mlp(x, ws):
    w1, w2 = ws
    h = (x @ w1).relu()
    out = (h @ w2).sigmoid()
    return ((out - 0.5) ** 2).mean() + (w1 * w1).sum() * 0.01 + (w2 * 1.0).sum()


def _net_movement(x, ws):
    (w,) = ws
    y = (x @ w).t().reshape(-1).reshape(5, 4)
    return (y.exp() * y - y / 1.0).sum() + (-(-y)).max()


@pytest.mark.parametrize("net, wshapes, shrinks", [
    (_net_tanh, [(3, 5)], False),
    (_net_mlp, [(3, 6), (6, 2)], True),       # g * 1.0, duplicate constants
    (_net_movement, [(3, 5)], True),          # reshape chains, double negation, y / 1.0
])
def test_optimized_backward_graphs(net, wshapes, shrinks):
    fusetorch.manual_seed(0)
    x = fusetorch.randn(4, 3, requires_grad=True)
    ws = [fusetorch.randn(*s, requires_grad=True) for s in wshapes]
    loss = net(x, ws)
    bw = backward_graph([loss._node], [leaf_node(w) for w in ws])
    # the forward values the backward graph reads, by running the forward graph
    fwd_inputs = [n for n in toposort([loss._node]) if n.op == "input"]
    fwd = Graph(fwd_inputs, [f for f, _ in bw.values])
    fwd_vals = run(fwd, [n.meta["leaf"]()._data for n in fwd_inputs])
    arrays = [np.ones((), np.float32)] + fwd_vals
    snap = snapshot(bw.graph)
    out = optimize(bw.graph)
    assert_unchanged(bw.graph, snap)
    assert out.inputs == bw.graph.inputs and len(out.outputs) == len(ws)
    assert len(out) < len(bw.graph) if shrinks else len(out) <= len(bw.graph)
    want, got = run(bw.graph, arrays), run(out, arrays)
    for w, a, b in zip(ws, want, got):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    loss.backward()
    for w, b in zip(ws, got):
        np.testing.assert_allclose(b, w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_transposed_product_is_computed_in_the_layout_its_reader_wants():
    a, b = inp((4, 3)), inp((4, 5))
    at = op("permute", a, perm=(1, 0))
    t = op("permute", op("matmul", at, b), perm=(1, 0))          # (a^T b)^T : [5, 3]
    g = Graph([a, b], [op("add", t, const(1.0))])
    out = transpose_matmul(g)
    mm = [n for n in out.nodes if n.op == "matmul"]
    assert len(mm) == 1 and mm[0].shape == (5, 3)                 # b^T a, no transpose after
    assert not any(n.op == "permute" and n.inputs[0].op == "matmul" for n in out.nodes)
    arrays = [np.random.rand(4, 3), np.random.rand(4, 5)]
    np.testing.assert_allclose(run(out, arrays)[0], (arrays[0].T @ arrays[1]).T + 1, rtol=1e-12)
    # a product that something else also reads is left alone (no second matmul)
    shared = op("matmul", at, b)
    g2 = Graph([a, b], [op("permute", shared, perm=(1, 0)), shared])
    assert count_ops(transpose_matmul(g2))["matmul"] == 1


def test_a_broadcast_one_is_still_one():
    x = inp((2, 3))
    ones = op("expand", op("reshape", op("full", shape=(), dtype=f64, value=1.0), shape=(1, 1)),
              shape=(2, 3))
    assert optimize(Graph([x], [op("mul", ones, x)])).outputs[0] is x


def test_a_transpose_inside_an_elementwise_chain_sinks_to_the_inputs():
    from fusetorch.ir.passes import sink_permutes
    a, b, c = inp((4, 3)), inp((3,)), inp((3, 4))
    t = op("permute", op("exp", op("add", a, b)), perm=(1, 0))      # (exp(a + b))^T
    g = Graph([a, b, c], [op("mul", t, c)])
    out = optimize(g)
    # every permute now reads an input (a free view); the elementwise ops are one chain
    for n in out.nodes:
        if n.op == "permute":
            assert n.inputs[0].op in ("input", "reshape"), out.text()
    arrays = [np.random.rand(4, 3), np.random.rand(3), np.random.rand(3, 4)]
    np.testing.assert_allclose(run(out, arrays)[0],
                               np.exp(arrays[0] + arrays[1]).T * arrays[2], rtol=1e-12)
    # a value something else also reads is not recomputed in the other layout
    e = op("exp", a)
    g2 = Graph([a], [op("permute", e, perm=(1, 0)), e])
    assert count_ops(sink_permutes(g2))["exp"] == 1


def test_the_gradient_of_a_broadcast_weight_is_computed_with_many_rows():
    # a convolution's weight [1, 16, 150] times 64 images' columns [64, 1, 150, 100]: its
    # gradient is one product per image, summed. As g @ cols^T each has 16 rows (OpenBLAS runs
    # those far below its speed); it is computed as (cols @ g^T)^T, 150 rows each, and
    # transpose_matmul must not turn it back. Values against numpy in float64.
    w, x = inp((1, 16, 150)), inp((64, 1, 150, 100))
    y = op("matmul", w, x)
    loss = op("sum", op("mul", y, y), dims=(0, 1, 2, 3), keepdim=False)
    bw = backward_graph([loss], [w, x])
    g = optimize(bw.graph)
    products = sorted(n.shape for n in g.nodes if n.op == "matmul")
    assert (64, 1, 150, 16) in products and (64, 1, 16, 150) not in products, products
    rng = np.random.default_rng(0)
    wa, xa = rng.standard_normal((1, 16, 150)), rng.standard_normal((64, 1, 150, 100))
    gy = 2 * (wa @ xa)
    known = {id(w): wa, id(x): xa, id(y): wa @ xa}
    gw, gx = run(g, [np.array(1.0)] + [known[id(f)] for f, _ in bw.values])
    np.testing.assert_allclose(gw, (gy @ xa.transpose(0, 1, 3, 2)).sum(0), rtol=1e-10)
    np.testing.assert_allclose(gx, wa.transpose(0, 2, 1) @ gy, rtol=1e-10)
