"""runtime/runner.py: a planned and built program's schedule, run."""
import numpy as np
import pytest

from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import build, kernel_plan
from fusetorch.runtime.device import cpu_backend
from fusetorch.runtime.layouts import layouts_of
from fusetorch.runtime.runner import Runner


def _input(shape, dtype=dt.float64):
    return Node("input", (), {"shape": shape, "dtype": dtype}, tuple(shape), dtype)


def _runner(graph, arrays, updates=None):
    plan = kernel_plan.make(graph, layouts_of(graph.inputs, arrays), updates=updates)
    return Runner(graph, cpu_backend().impl, np, plan, build.build(plan.kernels, "cpu")), plan


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))


def _mlp():
    x, w = _input((8, 6)), _input((6, 4))
    h = make_node("matmul", [x, w])
    t = make_node("tanh", [h])
    s = make_node("sum", [make_node("mul", [t, t])], {"dims": (1,), "keepdim": False})
    return Graph([x, w], [t, s])


def test_externs_and_kernels_in_order_give_numpy_values():
    graph = _mlp()
    x, w = np.random.rand(8, 6), np.random.rand(6, 4)
    runner, plan = _runner(graph, [x, w])
    kinds = [s[0] for s in runner.schedule]
    assert kinds[0] == "extern" and "kernel" in kinds
    t, s = runner.run([x, w])
    np.testing.assert_allclose(t, np.tanh(x @ w), rtol=1e-14)
    np.testing.assert_allclose(s, (np.tanh(x @ w) ** 2).sum(1), rtol=1e-13)


def test_a_kernel_is_never_called_on_another_layout():
    # planned for a transposed x: the matmul reads any layout, and the kernel reads only the
    # matmul's result, so a contiguous x runs the same program
    graph = _mlp()
    x, w = np.random.rand(6, 8).T, np.random.rand(6, 4)
    runner, _ = _runner(graph, [x, w])
    np.testing.assert_allclose(runner.run([np.ascontiguousarray(x), w])[0], np.tanh(x @ w))
    # a kernel reading an input directly is guarded
    a = _input((5, 3))
    graph = Graph([a], [make_node("exp", [a])])
    y = np.random.rand(5, 3)
    runner, _ = _runner(graph, [y])
    np.testing.assert_allclose(runner.run([y])[0], np.exp(y))
    with pytest.raises(RuntimeError, match="generated for input layouts"):
        runner.run([np.random.rand(3, 5).T])


def test_output_buffers_are_reused_only_when_nobody_holds_them():
    a = _input((100,))
    graph = Graph([a], [make_node("exp", [a])])
    x = np.random.rand(100)
    runner, _ = _runner(graph, [x])
    first = runner.run([x])[0]
    held = runner.run([x])[0]
    assert held is not first  # the first result is still held here
    ident = id(held)
    del held, first
    assert id(runner.run([x])[0]) == ident


def test_an_update_written_in_place_returns_the_input_array():
    w, g = _input((16,)), _input((16,))
    c = make_node("constant", [], {"shape": (), "dtype": dt.float64, "value": 0.5})
    graph = Graph([w, g], [make_node("sub", [w, make_node("mul", [g, c])])])
    wa, ga = np.random.rand(16), np.random.rand(16)
    want = wa - ga * 0.5
    runner, plan = _runner(graph, [wa, ga], updates={0: 0})
    assert plan.in_place
    (out,) = runner.run([wa, ga])
    assert out is wa
    np.testing.assert_allclose(wa, want)


def _put(base, value, row: int, accumulate: bool):
    spec = (("int", row),)
    return make_node("index_put", [base, value], {"spec": spec, "accumulate": accumulate})


def _row_chain(first):
    """`first` [4, 3], then gradient-style puts of three rows of g into it, one after another
    (what backward makes of the slices of one tensor: an RNN's time steps)."""
    g = _input((3,))
    base = first
    for r in range(3):
        base = _put(base, make_node("mul", [g, g]) if r == 1 else g, r, True)
    return g, base


def test_an_index_put_chain_writes_over_its_dead_links():
    # index_put's input, made by this program and read by nothing after it, is written over
    # instead of copied (each link of a chain copied the whole tensor: quadratic in its length)
    x = _input((4, 3))
    g, out = _row_chain(make_node("exp", [x]))
    graph = Graph([x, g], [out])
    xa, ga = np.random.rand(4, 3), np.random.rand(3)
    runner, plan = _runner(graph, [xa, ga])
    reuse = [s[7] for s, st in zip(runner.schedule, plan.partition.steps)
             if s[0] == "extern" and st.node.op == "index_put"]
    assert reuse == [True, True, True]
    want = np.exp(xa)
    want[0] += ga
    want[1] += ga * ga
    want[2] += ga
    for _ in range(2):  # the kernel's reused output buffer is written over again, correctly
        np.testing.assert_allclose(runner.run([xa, ga])[0], want, rtol=1e-14)


def test_an_index_put_never_writes_over_what_is_still_read():
    x, g = _input((4, 3)), _input((3,))
    e = make_node("exp", [x])
    kept = make_node("reshape", [e], {"shape": (12,)})  # a view of e, made before the put
    row = make_node("mul", [g, make_node("sum", [kept], {"dims": (0,), "keepdim": False})])
    put = _put(e, row, 0, True)  # e itself is read last here, its view after
    graph = Graph([x, g], [put, make_node("mul", [kept, kept])])
    xa, ga = np.random.rand(4, 3), np.random.rand(3)
    runner, plan = _runner(graph, [xa, ga])
    ops = [st.node.op if hasattr(st, "node") else "kernel" for st in plan.partition.steps]
    assert ops.index("reshape") < ops.index("index_put") < len(ops) - 1, ops
    got_put, got_sq = runner.run([xa, ga])
    np.testing.assert_allclose(got_sq, np.exp(xa).reshape(12) ** 2, rtol=1e-14)
    want = np.exp(xa)
    want[0] += ga * np.exp(xa).sum()
    np.testing.assert_allclose(got_put, want, rtol=1e-13)
    # nor the caller's array
    graph = Graph([x, g], [_put(x, g, 1, True)])
    runner, _ = _runner(graph, [xa, ga])
    before = xa.copy()
    for _ in range(2):
        got = runner.run([xa, ga])[0]
    np.testing.assert_array_equal(xa, before)
    want = xa.copy()
    want[1] += ga
    np.testing.assert_allclose(got, want, rtol=1e-14)


def _product_chain(n: int, links: int):
    """x @ w @ w ... (`links` products: extern steps, each value read only by the next)."""
    x, w = _input((n, n)), _input((n, n))
    h = x
    for _ in range(links):
        h = make_node("matmul", [h, w])
    return Graph([x, w], [make_node("exp", [h])])


def test_values_are_dropped_after_their_last_reader():
    """A chain of products holds about two intermediates at a time, not all of them to the end;
    and an intermediate kernel output over KEEP_BYTES is not kept for the next call."""
    import tracemalloc
    n = 256  # 512 KiB per float64 value
    graph = _product_chain(n, 8)
    x, w = np.random.rand(n, n), np.random.rand(n, n) / n
    runner, _ = _runner(graph, [x, w])
    want = x
    for _ in range(8):
        want = want @ w
    np.testing.assert_allclose(runner.run([x, w])[0], np.exp(want), rtol=1e-12)
    tracemalloc.start()
    try:
        out = runner.run([x, w])[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * x.nbytes, peak  # (8 products held to the end: 9 values)
    np.testing.assert_allclose(out, np.exp(want), rtol=1e-12)


def test_large_intermediate_kernel_buffers_are_not_kept(monkeypatch):
    from fusetorch.runtime import runner as R
    monkeypatch.setattr(R, "KEEP_BYTES", 1024)
    a = _input((64, 64))
    mid = make_node("exp", [a])  # a kernel's output that only the product reads
    graph = Graph([a], [make_node("matmul", [mid, a])])
    x = np.random.rand(64, 64)
    runner, _ = _runner(graph, [x])
    np.testing.assert_allclose(runner.run([x])[0], np.exp(x) @ x, rtol=1e-12)
    assert all(b is None for bufs in runner._buffers.values() for b in bufs)
    np.testing.assert_allclose(runner.run([x])[0], np.exp(x) @ x, rtol=1e-12)


class _Steps:
    """A profiler stand-in: what each step's environment holds of the inputs."""

    def __init__(self):
        self.inputs_held = []

    def program_step(self, program, step, t0, t1, env):
        self.inputs_held.append((step[0], env[0] is not None, env[1] is not None))


@pytest.mark.parametrize("consume", [False, True])
def test_handed_over_inputs_go_after_their_last_reader(consume):
    graph = _mlp()
    x, w = np.random.rand(8, 6), np.random.rand(6, 4)
    runner, _ = _runner(graph, [x, w])
    arrays, steps = [x, w], _Steps()
    t, s = runner.run(arrays, prof=steps, consume=consume)
    np.testing.assert_allclose(t, np.tanh(x @ w))
    assert (arrays == []) is consume
    assert steps.inputs_held[0] == ("extern", True, True)  # the matmul reads both
    assert steps.inputs_held[-1][1:] == (not consume, not consume)


def test_one_runner_runs_a_graph_with_kernels_or_interpreted_to_the_same_values():
    # the settings differ (kernels, buffer reuse), the schedule form and the values do not:
    # both against numpy
    graph = _mlp()
    x, w = np.random.rand(8, 6), np.random.rand(6, 4)
    compiled, _ = _runner(graph, [x, w])
    interpreted = Runner(graph, cpu_backend().impl, np)
    assert compiled.kernels >= 1 and interpreted.kernels == 0
    want = [np.tanh(x @ w), (np.tanh(x @ w) ** 2).sum(1)]
    for runner in (compiled, interpreted, compiled, interpreted):
        for got, ref in zip(runner.run([x, w]), want):
            np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_a_constant_output_is_handed_out_as_a_copy_with_kernels_too():
    # (what the interpreter always did: the receiver may write into a gradient it gets, and
    # the constant, made once, must not change for the next run)
    a = _input((3,))
    c = make_node("constant", [], {"shape": (3,), "dtype": dt.float64, "value": (2.5,) * 3})
    graph = Graph([a], [make_node("exp", [a]), c,
                        make_node("reshape", [c], {"shape": (3, 1)})])
    x = np.zeros(3)
    for runner in (_runner(graph, [x])[0], Runner(graph, cpu_backend().impl, np)):
        first = runner.run([x])
        first[1][...] = 7.0
        first[2][...] = 8.0
        again = runner.run([x])
        np.testing.assert_array_equal(again[0], np.ones(3))
        np.testing.assert_array_equal(again[1], np.full(3, 2.5))
        np.testing.assert_array_equal(again[2], np.full((3, 1), 2.5))


def test_a_scalar_constant_output_has_a_step_with_kernels():
    # (a 0-d constant with a Python value is a kernel's literal and no step of its own; as an
    # output it was missing from the runner's slots: KeyError)
    a = _input((3,))
    c = make_node("constant", [], {"shape": (), "dtype": dt.float64, "value": 2.0})
    graph = Graph([a], [make_node("sin", [a]), make_node("mul", [a, c]), c])
    x = np.array([0.0, -1.5, 3.0])
    runner, plan = _runner(graph, [x])
    assert runner.kernels == 1
    for _ in range(2):
        s, twice, got = runner.run([x])
        np.testing.assert_allclose(s, np.sin(x), rtol=1e-15)
        np.testing.assert_array_equal(twice, x * 2)
        assert got.shape == () and got == 2.0
        got[...] = 7.0
