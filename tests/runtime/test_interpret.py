"""The reference interpreter's buffer reuse: index_put may write into its input only when no one
else can see that buffer."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, make_node
from fusetorch.runtime.eager import make_table
from fusetorch.runtime.runner import run_graph

IMPL = make_table(np)
SPEC = (("slice", 0, 2, 1),)


def _graph(reuse_twice: bool):
    x = make_node("input", [], {"shape": (4,), "dtype": dt.float32})
    v = make_node("input", [], {"shape": (2,), "dtype": dt.float32})
    put = make_node("index_put", [x, v], {"spec": SPEC, "accumulate": True})
    outs = [put, make_node("sum", [x], {"dims": (0,), "keepdim": False})] if reuse_twice \
        else [put]
    return Graph([x, v], outs)


def test_graph_inputs_are_never_written():
    x, v = np.ones(4, np.float32), np.full(2, 5, np.float32)
    (out,) = run_graph(_graph(False), [x, v], IMPL, np)
    np.testing.assert_array_equal(out, [6, 6, 1, 1])
    np.testing.assert_array_equal(x, [1, 1, 1, 1])


def test_a_value_read_later_is_not_overwritten():
    x = make_node("input", [], {"shape": (4,), "dtype": dt.float32})
    v = make_node("input", [], {"shape": (2,), "dtype": dt.float32})
    doubled = make_node("mul", [x, x], {})
    put = make_node("index_put", [doubled, v], {"spec": SPEC, "accumulate": True})
    later = make_node("sum", [doubled], {"dims": (0,), "keepdim": False})
    out_put, out_sum = run_graph(Graph([x, v], [put, later]),
                                 [np.ones(4, np.float32), np.full(2, 5, np.float32)], IMPL, np)
    np.testing.assert_array_equal(out_put, [6, 6, 1, 1])
    assert out_sum == 4.0  # the sum saw doubled before (and without) the scatter-add


def test_backward_through_many_slices_is_exact():
    # the gradient of a sum of T slices accumulates T scatter-adds into one buffer
    x = torch.randn(3, 50, 4, dtype=torch.float64, requires_grad=True)
    w = torch.arange(50, dtype=torch.float64)
    total = sum(x[:, t] * w[t] for t in range(50)).sum()
    total.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(w.numpy()[None, :, None],
                                                               (3, 50, 4)))
    g = torch.ones(3, 50, 4, dtype=torch.float64)
    (gx,) = torch.autograd.grad((x * 1).unbind(1)[7].sum(), x)
    assert gx[:, 7].sum().item() == 12 and gx.sum().item() == 12
    np.testing.assert_array_equal(g.numpy(), np.ones((3, 50, 4)))


def test_values_are_dropped_after_their_last_reader():
    """An interpreted chain of 8 ops over 1 MiB holds a few values at a time (a first, eager,
    backward of a large model held every one to the end)."""
    import tracemalloc
    x = make_node("input", [], {"shape": (1 << 17,), "dtype": dt.float64})
    h = x
    for _ in range(8):
        h = make_node("exp", [make_node("neg", [h])])
    graph = Graph([x], [h])
    a = np.random.rand(1 << 17)
    want = a
    for _ in range(8):
        want = np.exp(-want)
    tracemalloc.start()
    try:
        out = run_graph(graph, [a], IMPL, np)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out, want)
    assert peak < 4 * a.nbytes, peak  # (16 values held to the end before)


def test_one_interpreter_runs_a_graph_many_times_as_numpy_computes_it():
    from fusetorch.runtime.runner import Runner
    x = make_node("input", [], {"shape": (3,), "dtype": dt.float64})
    two = make_node("constant", [], {"shape": (), "dtype": dt.float64, "value": 2.0})
    y = make_node("exp", [make_node("mul", [x, two])])
    run = Runner(Graph([x], [y]), IMPL, np).run
    for k in range(3):
        a = np.arange(3.0) + k
        np.testing.assert_array_equal(run([a])[0], np.exp(a * 2.0))


def test_consume_empties_the_callers_list_and_lets_each_input_go_after_its_last_reader():
    import weakref
    from fusetorch.runtime.runner import Runner
    x = make_node("input", [], {"shape": (1 << 13,), "dtype": dt.float64})
    h = make_node("neg", [x])
    out = make_node("exp", [h])
    seen = []

    class Spy:  # (the hook protocol: told at each node's start and end)
        def begin(self, node):
            seen.append(ref() is not None)

        def end(self, node, value):
            pass

    a = np.random.rand(1 << 13)
    ref = weakref.ref(a)
    arrays = [a]
    del a
    (got,) = Runner(Graph([x], [out]), IMPL, np).run(arrays, consume=True, hook=Spy())
    assert arrays == [] and seen == [True, False]  # gone once neg (its one reader) ran
    assert ref() is None


def test_a_data_dependent_size_that_changes_raises():
    from fusetorch.runtime.runner import Runner
    x = make_node("input", [], {"shape": (4,), "dtype": dt.float32})
    nz = make_node("nonzero", [x], {}, shape=(2, 1))  # the size the trace observed
    graph = Graph([x], [nz])
    interp = Runner(graph, IMPL, np)
    a = np.array([1, 0, 2, 0], np.float32)
    want = interp.run([a])[0]
    np.testing.assert_array_equal(want, np.stack(np.nonzero(a), axis=1))
    with pytest.raises(RuntimeError, match="data-dependent shape"):
        interp.run([np.array([1, 1, 1, 1], np.float32)])
