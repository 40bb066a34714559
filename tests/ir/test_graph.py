"""The graph IR by hand: nodes built with `make_node` (no tensors, no arrays).

Topological order, the text form, the structural hash and `verify()`.
"""
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node, toposort

f32, f64, i64, b8 = dt.float32, dt.float64, dt.int64, dt.bool_


def inp(shape, dtype=f32):
    return make_node("input", [], {"shape": tuple(shape), "dtype": dtype})


def const(value, dtype=f32):
    return make_node("constant", [], {"shape": (), "dtype": dtype, "value": value})


def assert_topological(g: Graph):
    pos = {}
    for k, n in enumerate(g.nodes):
        assert id(n) not in pos, f"{n} listed twice"
        pos[id(n)] = k
    assert g.nodes[:len(g.inputs)] == g.inputs
    for n in g.nodes:
        for i in n.inputs:
            assert pos[id(i)] < pos[id(n)], f"{n} comes before its input {i}"
    # exactly what the outputs need, plus the declared inputs
    need, stack = {id(n) for n in g.inputs}, list(g.outputs)
    while stack:
        n = stack.pop()
        if id(n) not in need:
            need.add(id(n))
            stack.extend(n.inputs)
    assert set(pos) == need


# ---------------------------------------------------------------- topological order

def test_diamond_order():
    a, b = inp((2, 3)), inp((2, 3))
    c = make_node("mul", [a, b])
    d = make_node("exp", [c])
    e = make_node("add", [c, d])
    g = Graph([a, b], [e])
    assert g.nodes == [a, b, c, d, e]
    assert len(g) == 5 and list(g) == g.nodes
    assert_topological(g)


def test_inputs_come_first_in_declared_order_even_if_unused():
    a, b, u = inp((3,)), inp((3,)), inp((7,))
    s = make_node("sub", [b, a])
    g = Graph([u, b, a], [s])
    assert g.nodes == [u, b, a, s]
    assert_topological(g)


def test_dead_nodes_are_left_out():
    a = inp((4,))
    live = make_node("neg", [a])
    dead = make_node("exp", [live])
    make_node("add", [dead, a])
    g = Graph([a], [live])
    assert g.nodes == [a, live]
    assert all(n is not dead for n in g.nodes)


def test_shared_nodes_listed_once_and_outputs_may_repeat():
    a = inp((2,))
    b = make_node("exp", [a])
    c = make_node("mul", [b, b])
    g = Graph([a], [c, b, c])
    assert g.nodes == [a, b, c]
    assert g.text().splitlines()[-1] == "return (%2, %1, %2)"


def test_graph_rejects_bad_inputs():
    a = inp((2,))
    b = make_node("neg", [a])
    with pytest.raises(ValueError, match="input nodes"):
        Graph([b], [b])
    other = inp((2,))
    with pytest.raises(ValueError, match="not listed"):
        Graph([a], [make_node("add", [b, other])])


def test_toposort_function():
    a, b = inp(()), inp(())
    c = make_node("add", [a, b])
    d = make_node("mul", [c, a])
    assert toposort([d]) == [a, b, c, d]
    assert toposort([d], [b]) == [b, a, c, d]
    assert toposort([c, d]) == [a, b, c, d]
    assert toposort([]) == []


def test_deep_chain_does_not_hit_the_recursion_limit():
    n = max(5000, 3 * sys.getrecursionlimit())
    x = inp((3,))
    node = x
    for k in range(n):
        node = make_node(("neg", "exp", "tanh")[k % 3], [node])
    g = Graph([x], [node])
    assert len(g.nodes) == n + 1
    assert g.nodes[0] is x and g.nodes[-1] is node
    # each node right after its input: the chain in order
    assert all(g.nodes[k + 1].inputs[0] is g.nodes[k] for k in range(n))
    text = g.text().splitlines()
    assert len(text) == n + 2
    assert text[-2] == f"%{n} = {node.op}(%{n - 1}) : f32[3]"
    assert text[-1] == f"return (%{n})"
    g.verify()
    assert len(g.structural_hash()) == 64
    assert len(toposort([node])) == n + 1


def test_deep_dag_with_sharing_is_linear():
    # each node reads the previous two: a naive walk would take exponential time
    a, b = inp((2,)), inp((2,))
    nodes = [a, b]
    for _ in range(5000):
        nodes.append(make_node("add", [nodes[-1], nodes[-2]]))
    g = Graph([a, b], [nodes[-1]])
    assert g.nodes == nodes
    assert_topological(g)
    g.verify()


# ---------------------------------------------------------------- random DAGs

UNARY = ("neg", "exp", "relu", "tanh")
BINARY = ("add", "mul", "maximum", "sub")


@st.composite
def dags(draw):
    """A recipe: input shapes, then (op, operand positions) per node, then output positions."""
    shapes = draw(st.lists(st.sampled_from([(2, 3), (3,), (1, 3), ()]), min_size=1, max_size=3))
    steps = []
    for k in range(draw(st.integers(0, 25))):
        avail = len(shapes) + k
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(UNARY)), (draw(st.integers(0, avail - 1)),)))
        else:
            steps.append((draw(st.sampled_from(BINARY)),
                          (draw(st.integers(0, avail - 1)), draw(st.integers(0, avail - 1)))))
    total = len(shapes) + len(steps)
    outs = draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=4))
    return shapes, steps, outs


def build(recipe, replace=None):
    """Build the recipe's graph from fresh nodes; `replace` = (step, op) swaps one op."""
    shapes, steps, outs = recipe
    nodes = [inp(s) for s in shapes]
    for k, (op, args) in enumerate(steps):
        if replace is not None and replace[0] == k:
            op = replace[1]
        nodes.append(make_node(op, [nodes[i] for i in args],
                               meta={"source": f"recipe.py:{k}"}))
    return Graph(nodes[:len(shapes)], [nodes[i] for i in outs]), nodes


@settings(max_examples=50, deadline=None)
@given(dags())
def test_random_dags_are_ordered_and_hash_stably(recipe):
    g, nodes = build(recipe)
    assert_topological(g)
    g.verify()
    g2, nodes2 = build(recipe)
    assert all(x is not y for x, y in zip(nodes, nodes2))
    assert g2.text() == g.text()
    assert g2.structural_hash() == g.structural_hash()
    # changing the op of a node the outputs need changes the hash
    shapes, steps, outs = recipe
    in_graph = {id(n) for n in g.nodes}
    for k, (op, args) in enumerate(steps):
        if id(nodes[len(shapes) + k]) in in_graph:
            family = UNARY if len(args) == 1 else BINARY
            other = family[(family.index(op) + 1) % len(family)]
            g3, _ = build(recipe, replace=(k, other))
            assert g3.structural_hash() != g.structural_hash()
            break


# ---------------------------------------------------------------- text form

def small_graph(source=None):
    x = inp((64, 100))
    y = inp((100,))
    e = make_node("expand", [y], {"shape": (64, 100)})
    m = make_node("mul", [x, e], meta={"source": source} if source else None)
    s = make_node("sum", [m], {"dims": (1,), "keepdim": False})
    c = const(2.0)
    o = make_node("mul", [s, c])
    k = make_node("cast", [o], {"dtype": f64})
    return Graph([x, y], [k, m])


def test_text_form_literal():
    assert small_graph().text() == (
        "%0 = input() : f32[64,100]\n"
        "%1 = input() : f32[100]\n"
        "%2 = expand(%1, shape=(64, 100)) : f32[64,100]\n"
        "%3 = mul(%0, %2) : f32[64,100]\n"
        "%4 = sum(%3, dims=(1,), keepdim=False) : f32[64]\n"
        "%5 = constant(value=2.0) : f32[]\n"
        "%6 = mul(%4, %5) : f32[64]\n"
        "%7 = cast(%6, dtype=f64) : f64[64]\n"
        "return (%7, %3)"
    )
    assert str(small_graph()) == small_graph().text()


def test_text_form_source_comment():
    lines = small_graph(source="model.py:12").text().splitlines()
    assert lines[3] == "%3 = mul(%0, %2) : f32[64,100]  # model.py:12"
    assert "#" not in "".join(lines[:3] + lines[4:])


def test_text_form_dtypes_and_sources():
    b = inp((2, 0), b8)
    i = inp((), i64)
    full = make_node("full", [], {"shape": (2, 0), "dtype": b8, "value": True})
    w = make_node("bitwise_and", [b, full])
    r = make_node("iota", [], {"shape": (5,), "dtype": i64, "start": 0, "step": 2})
    ad = make_node("add", [r, i])
    g = Graph([b, i], [w, ad])
    assert g.text() == (
        "%0 = input() : b8[2,0]\n"
        "%1 = input() : i64[]\n"
        "%2 = full(value=True) : b8[2,0]\n"
        "%3 = bitwise_and(%0, %2) : b8[2,0]\n"
        "%4 = iota(start=0, step=2) : i64[5]\n"
        "%5 = add(%4, %1) : i64[5]\n"
        "return (%3, %5)"
    )
    assert repr(g) == "<Graph: 2 inputs, 6 nodes, 2 outputs>"


# ---------------------------------------------------------------- structural hash

def variant(op="mul", value=2.0, perm=(1, 0), n=8, dtype=f32, swap=False, outs="ab",
            source=None):
    x = inp((n, n), dtype)
    y = inp((n, n), dtype)
    p = make_node("permute", [y], {"perm": perm})
    a = make_node(op, [p, x] if swap else [x, p], meta={"source": source} if source else None)
    b = make_node("sub", [a, const(value, dtype)])
    pick = {"a": a, "b": b}
    return Graph([x, y], [pick[c] for c in outs])


def test_hash_equal_for_separately_built_graphs():
    g1, g2 = variant(), variant()
    assert g1.nodes[0] is not g2.nodes[0]
    assert g1.structural_hash() == g2.structural_hash()
    assert small_graph().structural_hash() == small_graph().structural_hash()


def test_hash_ignores_source_comments():
    assert variant(source="a.py:1").structural_hash() == variant(source="b.py:2").structural_hash()
    assert small_graph("x.py:3").structural_hash() == small_graph().structural_hash()


@pytest.mark.parametrize("change", [
    {"op": "add"},          # an op
    {"value": 3.0},         # an attribute (constant value)
    {"perm": (0, 1)},       # an attribute (permutation, same shapes)
    {"n": 9},               # a shape
    {"dtype": f64},         # a dtype
    {"swap": True},         # the wiring (operand order)
    {"outs": "ba"},         # the outputs' order
    {"outs": "b"},          # which values are outputs
])
def test_hash_differs(change):
    assert variant(**change).structural_hash() != variant().structural_hash()


def test_hash_differs_for_input_order_and_int_vs_float_constant():
    x, y = inp((3,)), inp((3,))
    z = make_node("sub", [x, y])
    x2, y2 = inp((3,)), inp((3,))
    z2 = make_node("sub", [x2, y2])
    assert Graph([x, y], [z]).structural_hash() == Graph([x2, y2], [z2]).structural_hash()
    assert Graph([x, y], [z]).structural_hash() != Graph([y2, x2], [z2]).structural_hash()
    c1 = Graph([], [const(1, i64)])
    c2 = Graph([], [const(2, i64)])
    assert c1.structural_hash() != c2.structural_hash()
    assert c1.structural_hash() == Graph([], [const(1, i64)]).structural_hash()


# ---------------------------------------------------------------- verify

def test_verify_passes_on_good_graphs():
    small_graph().verify()
    variant().verify()
    a = inp((2, 3))
    nz = make_node("nonzero", [a], shape=(4, 2))  # data-dependent: the observed shape is kept
    g = Graph([a], [make_node("cast", [nz], {"dtype": f32})])
    g.verify()
    assert g.nodes[1].shape == (4, 2)


def test_verify_rejects_a_stored_shape_that_disagrees_with_the_rule():
    a, b = inp((2, 3)), inp((3,))
    bad = Node("add", (a, b), {}, (3, 3), f32)
    with pytest.raises(AssertionError, match=r"\(2, 3\)"):
        Graph([a, b], [bad]).verify()
    s = Node("sum", (a,), {"dims": (1,), "keepdim": True}, (2,), f32)
    with pytest.raises(AssertionError, match=r"\(2, 1\)"):
        Graph([a], [s]).verify()


def test_verify_rejects_a_wrong_dtype_or_arity():
    a, b = inp((2, 3)), inp((2, 3))
    with pytest.raises(AssertionError, match="dtype"):
        Graph([a, b], [Node("lt", (a, b), {}, (2, 3), f32)]).verify()
    with pytest.raises(AssertionError, match="inputs"):
        Graph([a, b], [Node("neg", (a, b), {}, (2, 3), f32)]).verify()


def test_verify_rejects_an_out_of_order_node_list():
    g = small_graph()
    g.verify()
    g.nodes[2], g.nodes[3] = g.nodes[3], g.nodes[2]
    with pytest.raises(AssertionError, match="after"):
        g.verify()


def test_verify_with_checked_nodes_still_checks_every_new_node_and_the_order():
    """optimize passes one `checked` dict through every pass's verify: a node met before is
    not checked again, but a new node with a wrong shape, and a new order, still fail."""
    a, b = inp((2, 3)), inp((2, 3))
    good = make_node("add", [a, b])
    checked: dict = {}
    Graph([a, b], [good]).verify(checked)
    assert checked[id(good)] is good
    with pytest.raises(AssertionError, match=r"\(2, 3\)"):
        Graph([a, b], [good, Node("mul", (good, b), {}, (3, 3), f32)]).verify(checked)
    g = small_graph()
    g.verify(checked)
    g.nodes[2], g.nodes[3] = g.nodes[3], g.nodes[2]
    with pytest.raises(AssertionError, match="after"):
        g.verify(checked)


def test_verify_propagates_rule_errors_for_impossible_nodes():
    a, b = inp((2, 3)), inp((4,))
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        make_node("add", [a, b])
    bad = Node("add", (a, b), {}, (2, 3), f32)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        Graph([a, b], [bad]).verify()


def test_make_node_needs_the_observed_shape_of_data_dependent_ops():
    a = inp((5,))
    with pytest.raises(ValueError, match="data-dependent"):
        make_node("nonzero", [a])
    n = make_node("nonzero", [a], shape=(2, 1))
    assert n.shape == (2, 1) and n.dtype is i64
    assert make_node("lt", [a, a]).dtype is b8
    assert repr(make_node("neg", [a])) == "<Node neg : f32[5]>"
