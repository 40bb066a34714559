"""The one schedule form (runtime/schedule.py): slots, steps, drop points, shared by the
interpreter (arrays), autograd's recorded backward (values of any kind through a `call`) and
a built program's runner."""
import weakref

import numpy as np

import fusetorch as torch
from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, make_node
from fusetorch.runtime.eager import make_table
from fusetorch.runtime.runner import Runner
from fusetorch.runtime.schedule import Schedule, drop_points

IMPL = make_table(np)


def _graph():
    x = make_node("input", [], {"shape": (3,), "dtype": dt.float64})
    y = make_node("input", [], {"shape": (3,), "dtype": dt.float64})
    a = make_node("mul", [x, y])
    b = make_node("exp", [a])
    c = make_node("add", [b, x])
    return Graph([x, y], [c, a])


def test_drop_points_are_last_readers_less_what_is_kept():
    reads = [(0, 1), (2,), (3, 0)]
    assert drop_points(reads, keep={0}) == [(1,), (2,), (3,)]
    assert [set(d) for d in drop_points(reads, keep=set())] == [{1}, {2}, {0, 3}]


def test_a_schedule_drops_inputs_only_when_handed_over():
    s = Schedule(_graph())
    assert [ins for _, ins, _ in s.steps] == [(0, 1), (2,), (3, 0)] and s.outputs == (4, 2)
    assert s.drops(False) == [(), (), (3,)]  # a (slot 2) is an output: kept
    assert [set(d) for d in s.drops(True)] == [{1}, set(), {0, 3}]


def test_run_with_any_values_matches_the_interpreter():
    graph = _graph()
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    want = Runner(graph, IMPL, np).run([x, y])
    seen = []

    def call(node, args):  # the tensor-mode setting: anything that computes a node
        seen.append(node.op)
        return IMPL[node.op](*args)

    got = Schedule(graph).run_with([x, y], call)
    assert seen == ["mul", "exp", "add"]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(got[0], np.exp(x * y) + x)


def test_run_with_consume_lets_each_input_go_after_its_last_reader():
    x = make_node("input", [], {"shape": (4,), "dtype": dt.float64})
    y = make_node("input", [], {"shape": (4,), "dtype": dt.float64})
    out = make_node("neg", [make_node("mul", [x, y])])
    a, b = np.ones(4), np.full(4, 2.0)
    refs = [weakref.ref(a), weakref.ref(b)]
    alive = []

    def call(node, args):
        alive.append([r() is not None for r in refs])
        return IMPL[node.op](*args)

    values = [a, b]
    del a, b
    (got,) = Schedule(Graph([x, y], [out])).run_with(values, call, consume=True)
    assert values == [] and alive == [[True, True], [False, False]]
    np.testing.assert_array_equal(got, np.full(4, -2.0))


def test_create_graph_runs_the_backward_schedule_in_tensor_mode():
    # the interpreted first backward, then create_graph (Tensors through dispatch) over the
    # same cached graph and schedule: the second derivative against central differences
    x = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    (x * x.sin()).sum().backward()
    (g,) = torch.autograd.grad((x * x.sin()).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    v, e = x.detach().numpy(), 1e-6

    def d(t):
        return np.sin(t) + t * np.cos(t)

    np.testing.assert_allclose(g.detach().numpy(), d(v), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), (d(v + e) - d(v - e)) / (2 * e), rtol=1e-6)
