"""runtime/in_place.py: which updates a kernel writes over its input's own array, decided from
the partition and the layouts alone."""
import numpy as np

from fusetorch.codegen import fuse
from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import in_place
from fusetorch.runtime.layouts import contiguous, layout_of


def _input(shape, dtype=dt.float32):
    return Node("input", (), {"shape": shape, "dtype": dtype}, tuple(shape), dtype)


def _const(v):
    return make_node("constant", [], {"shape": (), "dtype": dt.float32, "value": v})


def _sgd(extra=lambda w, g, new: []):
    """w, g -> w - 0.1 * g, the new w as output 0 and update of input 0, plus `extra`."""
    w, g = _input((8, 4)), _input((8, 4))
    new = make_node("sub", [w, make_node("mul", [g, _const(0.1)])])
    graph = Graph([w, g], [new] + extra(w, g, new))
    return graph, w, new


def _choose(graph, layouts=None):
    part = fuse.partition(graph, cpu=True)
    layouts = layouts or {id(n): contiguous(n.shape) for n in graph.inputs}
    return in_place.choose(graph, part, {0: 0}, layouts)


def test_a_pointwise_update_of_a_contiguous_input_is_written_in_place():
    graph, w, new = _sgd()
    assert _choose(graph) == {id(new): w}


def test_no_updates_nothing_chosen():
    graph, w, new = _sgd()
    assert in_place.choose(graph, fuse.partition(graph), {}, {}) == {}


def test_a_strided_input_is_not_overwritten():
    graph, w, new = _sgd()
    layouts = {id(n): contiguous(n.shape) for n in graph.inputs}
    layouts[id(w)] = layout_of(np.zeros((4, 8), np.float32).T)
    assert _choose(graph, layouts) == {}


def test_the_old_value_still_read_or_returned_keeps_its_array():
    # returned as well
    graph, w, new = _sgd(lambda w, g, new: [w])
    assert _choose(graph) == {}
    # read after the update by a later step, through a view of it
    graph, w, new = _sgd(lambda w, g, new: [make_node("matmul", [
        make_node("permute", [new], {"perm": (1, 0)}),
        make_node("reshape", [w], {"shape": (8, 4)})])])
    assert _choose(graph) == {}


def test_a_fresh_library_result_does_not_alias():
    # a matmul of w is a new array: reading it later does not keep w's old value alive
    w, g = _input((4, 4)), _input((4, 4))
    m = make_node("matmul", [w, w])
    new = make_node("sub", [w, make_node("mul", [make_node("mul", [g, m]), _const(0.1)])])
    late = make_node("exp", [make_node("matmul", [m, new])])
    graph = Graph([w, g], [new, late])
    part = fuse.partition(graph, cpu=True)
    layouts = {id(n): contiguous(n.shape) for n in graph.inputs}
    # (the matmul of w runs before the update's kernel; only its result is read later)
    order = [s.node.op if isinstance(s, fuse.Extern) else s.kind for s in part.steps]
    assert order[:2] == ["matmul", "pointwise"]
    assert in_place.choose(graph, part, {0: 0}, layouts) == {id(new): w}
    # a view of w read later would see the new value: not in place
    v = make_node("reshape", [w], {"shape": (16,)})
    graph = Graph([w, g], [new, make_node("exp", [make_node("matmul", [m, new])]),
                           make_node("cat", [make_node("reshape", [new], {"shape": (16,)}), v],
                                     {"dim": 0})])
    part = fuse.partition(graph, cpu=True)
    assert in_place.choose(graph, part, {0: 0}, layouts) == {}
