"""One structural identity (ir/identity.py) for CSE, the structural hash and autograd's
backward cache: values normalised one way, and every user of it agreeing on "the same"."""
import numpy as np
import pytest

from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, make_node
from fusetorch.ir.identity import Unkeyable, graph_key, node_key, value_key
from fusetorch.ir.passes import count_ops, cse

f32, i64 = dt.float32, dt.int64


def inp(shape, dtype=f32):
    return make_node("input", [], {"shape": tuple(shape), "dtype": dtype})


def const(value, dtype=f32, **extra):
    return make_node("constant", [], {"shape": (), "dtype": dtype, "value": value, **extra})


# ---------------------------------------------------------------- values

@pytest.mark.parametrize("a, b", [
    (1, 1.0), (1, True), (1.0, True), (0, False),  # Python finds these equal
    (0.0, -0.0),  # x / 0.0 is inf, x / -0.0 is -inf
    ((1, 2), [1, 2]), ((1,), (1.0,)), ((0.0,), (-0.0,)),
    (None, 0), ("1", 1), (f32, dt.float64),
    (np.float32(0.0), np.float32(-0.0)), (np.float32(1.0), np.float64(1.0)), (np.float32(1), 1.0),
    ({"a": 1}, {"a": 1.0}),
])
def test_values_python_calls_equal_may_differ(a, b):
    assert value_key(a) != value_key(b)
    hash(value_key(a))


@pytest.mark.parametrize("a, b", [
    (float("nan"), float("nan")),  # two NaN objects: the same bits
    ((1, (2, "x")), (1, (2, "x"))), ({"a": 1, "b": 2.0}, {"b": 2.0, "a": 1}),
    (np.float32(0.5), np.float32(0.5)), (f32, f32), (None, None),
])
def test_values_meaning_the_same_are_equal(a, b):
    assert value_key(a) == value_key(b) and hash(value_key(a)) == hash(value_key(b))


def test_an_array_has_no_identity():
    with pytest.raises(Unkeyable):
        value_key(np.zeros(3))
    with pytest.raises(Unkeyable):
        value_key({"a": [np.zeros(2)]})


# ---------------------------------------------------------------- nodes and graphs

def test_attribute_order_meta_and_saved_do_not_count():
    x = inp((2, 3))
    a = make_node("sum", [x], {"dims": (1,), "keepdim": False}, meta={"source": "a.py:1"})
    b = make_node("sum", [x], {"keepdim": False, "dims": (1,)})
    b.saved = {1: 2}
    assert node_key(a, (0,)) == node_key(b, (0,))


def test_array_constants_are_named_by_their_digest():
    a = make_node("constant", [], {"shape": (2,), "dtype": f32, "value": np.zeros(2, np.float32),
                                   "digest": "d1"})
    b = make_node("constant", [], {"shape": (2,), "dtype": f32, "value": np.ones(2, np.float32),
                                   "digest": "d1"})
    c = make_node("constant", [], {"shape": (2,), "dtype": f32, "value": np.zeros(2, np.float32),
                                   "digest": "d2"})
    assert node_key(a, ()) == node_key(b, ()) != node_key(c, ())
    nameless = make_node("constant", [], {"shape": (2,), "dtype": f32,
                                          "value": np.zeros(2, np.float32)})
    with pytest.raises(Unkeyable):
        node_key(nameless, ())


def _build(kind, variant, x):
    """One node over input `x`: variants 0 and 1 differ (or not) in one way."""
    if kind == "neg zero":
        return make_node("mul", [x, const(-0.0 if variant else 0.0)])
    if kind == "int or float scalar":
        return make_node("mul", [x, const(2 if variant else 2.0)])
    if kind == "bool or int attr":
        return make_node("sum", [x], {"dims": (1,), "keepdim": 0 if variant else False})
    if kind == "nan":
        return make_node("add", [x, const(float("nan"))])
    if kind == "attr order":
        a = {"dims": (1,), "keepdim": True}
        return make_node("sum", [x], a if variant else dict(reversed(list(a.items()))))
    if kind == "meta":
        return make_node("exp", [x], meta={"source": f"f.py:{variant}"})
    if kind == "perm":  # -1 and 1 name one dim, but the attributes differ
        return make_node("permute", [x], {"perm": (1, 0) if variant else (-1, 0)})
    raise AssertionError(kind)


SAME = {"nan": True, "attr order": True, "meta": True}


@pytest.mark.parametrize("kind", ["neg zero", "int or float scalar", "bool or int attr", "nan",
                                  "attr order", "meta", "perm"])
def test_cse_structural_hash_and_graph_key_agree(kind):
    same = SAME.get(kind, False)
    xa, xb = inp((2, 3)), inp((2, 3))
    ga, gb = Graph([xa], [_build(kind, 0, xa)]), Graph([xb], [_build(kind, 1, xb)])
    assert (ga.structural_hash() == gb.structural_hash()) == same
    assert (graph_key(ga.nodes, ga.outputs)[0] == graph_key(gb.nodes, gb.outputs)[0]) == same
    # CSE over both in one graph merges them exactly when they are the same
    merged = cse(Graph([xa], [_build(kind, 0, xa), _build(kind, 1, xa)]))
    assert (merged.outputs[0] is merged.outputs[1]) == same
    assert count_ops(merged)[ga.outputs[0].op] == (1 if same else 2)


def test_an_unkeyable_node_hashes_as_itself():
    nameless = lambda: make_node("constant", [], {"shape": (2,), "dtype": f32,  # noqa: E731
                                                  "value": np.zeros(2, np.float32)})
    a = nameless()
    g = Graph([], [a])
    assert g.structural_hash() == Graph([], [a]).structural_hash()
    assert g.structural_hash() != Graph([], [nameless()]).structural_hash()
    with pytest.raises(Unkeyable):
        graph_key(g.nodes, g.outputs)
