"""State that belongs to a thread (issue 25, item 3): grad mode, inference mode, autocast, the
trace recorder and the profiler's recording are per thread, as in PyTorch, and the caches
(compiled variants, programs, eager kernels, backward programs) take concurrent use.

Ordering between threads is made with events (thread A holds a mode until B has run its ops),
never with sleeps, so each test passes whatever the scheduler does when the code is right.
Threads that must run at once start from a barrier.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import nn


def _run_threads(n: int, target) -> list:
    """`target(i, barrier)` in n threads; returns their results, re-raising the first error."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def run(i):
        try:
            results[i] = target(i, barrier)
        except BaseException as e:  # noqa: BLE001 (reported to the test below)
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def _while_held(enter, exit_, probe):
    """Thread A runs `enter()`, then thread B runs `probe()` while A holds the state, then A
    runs `exit_()`. Returns probe's result."""
    held, probed = threading.Event(), threading.Event()
    out = {}

    def a():
        enter()
        held.set()
        probed.wait(30)
        exit_()

    def b():
        held.wait(30)
        try:
            out["v"] = probe()
        finally:
            probed.set()

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start()
    tb.start()
    ta.join(60)
    tb.join(60)
    assert "v" in out
    return out["v"]


def _needs_grad() -> bool:
    w = torch.ones(3, requires_grad=True)
    return (w * 2).sum().requires_grad and torch.is_grad_enabled()


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled_call", "inference_mode"])
def test_grad_mode_of_one_thread_leaves_the_others_alone(mode):
    ctx = {}

    def enter():
        if mode == "no_grad":
            ctx["c"] = torch.no_grad()
            ctx["c"].__enter__()
        elif mode == "inference_mode":
            ctx["c"] = torch.inference_mode()
            ctx["c"].__enter__()
        else:
            torch.set_grad_enabled(False)
        assert not torch.is_grad_enabled()

    def exit_():
        if "c" in ctx:
            ctx["c"].__exit__(None, None, None)
        else:
            torch.set_grad_enabled(True)

    assert _while_held(enter, exit_, _needs_grad)
    assert torch.is_grad_enabled()


def test_a_new_thread_starts_with_grad_on_even_when_its_parent_turned_it_off():
    with torch.no_grad():
        assert _run_threads(1, lambda i, b: _needs_grad()) == [True]
        assert not torch.is_grad_enabled()


def test_autocast_of_one_thread_leaves_another_threads_matmul_in_float32():
    a, b = torch.ones(4, 4), torch.ones(4, 4)
    ctx = torch.autocast("cpu", dtype=torch.bfloat16)

    def probe():
        return (a @ b).dtype, torch.is_autocast_enabled("cpu")

    assert _while_held(ctx.__enter__, lambda: ctx.__exit__(None, None, None), probe) == (
        torch.float32, False)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # and in its own thread it still casts
        assert (a @ b).dtype == torch.bfloat16
    assert (a @ b).dtype == torch.float32


def test_an_eager_data_read_in_one_thread_is_no_graph_break_in_another_threads_trace():
    inside, read = threading.Event(), threading.Event()
    x = torch.arange(6.0)

    def f(t):
        inside.set()
        read.wait(30)  # thread B reads data (allclose, item) while this trace is recording
        return (t * 2 + 1).sum()

    cf = torch.compile(f, fullgraph=True)  # a graph break would raise
    out = {}

    def a():
        out["y"] = cf(x)

    def b():
        inside.wait(30)
        try:
            out["close"] = torch.allclose(x, x) and x[1].item() == 1.0
        finally:
            read.set()

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start()
    tb.start()
    ta.join(60)
    tb.join(60)
    assert out["close"] is True
    assert out["y"].item() == 36.0
    assert cf(torch.arange(6.0) + 1).item() == 48.0  # compiled, and replays


def test_profiler_records_only_its_own_thread():
    started, done = threading.Event(), threading.Event()
    prof = torch.profiler.profile()

    def a():
        with prof:
            started.set()
            done.wait(30)
            torch.ones(3).exp()

    def b():
        started.wait(30)
        try:
            torch.ones(3).sin()
            with torch.profiler.profile() as mine:  # each thread may record its own
                torch.ones(3).cos()
            return [e.name for e in mine.events()]
        finally:
            done.set()

    ta = threading.Thread(target=a)
    ta.start()
    names_b = b()
    ta.join(60)
    names = [e.name for e in prof.events()]
    assert "aten::exp" in names and "aten::sin" not in names and "aten::cos" not in names
    assert "aten::cos" in names_b and "aten::exp" not in names_b


def _model_and_data(seed: int):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    x, y = torch.randn(16, 5), torch.randn(16, 1)
    return model, x, y


def _train(model, x, y, steps: int, barrier=None) -> list:
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        if barrier is not None:
            barrier.wait(30)  # every step of every thread at once: grad mode flips interleave
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()  # (its no_grad must not leak into the other threads)
        with torch.no_grad():
            losses.append(float(loss))
    return losses


def test_four_threads_train_separate_models_as_they_would_alone():
    setups = [_model_and_data(s) for s in range(4)]
    alone = [_train(*_model_and_data(s), steps=12) for s in range(4)]
    together = _run_threads(4, lambda i, barrier: _train(*setups[i], steps=12, barrier=barrier))
    for a, t in zip(alone, together):
        np.testing.assert_allclose(t, a, rtol=1e-6)


def test_cold_first_calls_from_eight_threads_at_once_return_eager_values():
    # a fresh compiled function per round: every round's first calls are cold and concurrent
    for rnd in range(3):
        w = torch.full((64, 64), 0.01 * (rnd + 1))

        def f(t):
            return torch.tanh(t @ w + 1.0).sum(1) * 2.0

        cf = torch.compile(f)
        xs = [torch.randn(32, 64) for _ in range(8)]
        want = [np.tanh(x.numpy().astype(np.float64) @ w.numpy().astype(np.float64) + 1.0)
                .sum(1) * 2.0 for x in xs]

        def call(i, barrier):
            barrier.wait(30)
            first = cf(xs[i]).numpy().copy()
            again = cf(xs[i]).numpy().copy()
            return first, again

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (no compiler here: eager after one warning)
            got = _run_threads(8, call)
        for (first, again), ref in zip(got, want):
            np.testing.assert_allclose(first, ref, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(again, ref, rtol=1e-4, atol=1e-4)


def test_one_program_run_from_many_threads_gives_each_its_own_outputs():
    # a compiled backward / eager-kernel program keeps its last output buffers for reuse:
    # concurrent runs must not write into each other's
    def f(t):
        return (t * 3.0 + 1.0).exp().sum(0)

    cf = torch.compile(f)
    x0 = torch.zeros(128, 64)
    cf(x0)
    cf(x0)
    xs = [torch.full((128, 64), 0.001 * i) for i in range(8)]

    def call(i, barrier):
        barrier.wait(30)
        return [cf(xs[i]).numpy().copy() for _ in range(20)]

    got = _run_threads(8, call)
    for i, runs in enumerate(got):
        ref = np.exp(0.003 * i + 1.0) * 128
        for r in runs:
            np.testing.assert_allclose(r, np.full(64, ref), rtol=1e-5)


def test_backward_from_many_threads_at_once_is_each_threads_own():
    def grads(i, barrier):
        out = []
        for _ in range(10):
            w = torch.full((64, 80), float(i + 1), requires_grad=True)
            barrier.wait(30)
            (w.sin() * w).sum().backward()  # the same structure in every thread: one cache
            out.append(w.grad.numpy().copy())
        return out

    got = _run_threads(6, grads)
    for i, gs in enumerate(got):
        v = float(i + 1)
        want = np.cos(np.float32(v)) * v + np.sin(np.float32(v))
        for g in gs:
            np.testing.assert_allclose(g, np.full((64, 80), want), rtol=1e-5)


def test_cold_calls_of_a_compiled_module_from_eight_threads_with_backward():
    # each thread's first call traces (its grad mode and recorder its own), runs backward
    # through the compiled backward, and calls again; before, another thread's trace or
    # no_grad leaked in ("element 0 of tensors does not require grad", a None output)
    for rnd in range(3):
        torch.manual_seed(rnd)
        model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8))
        cf = torch.compile(model)
        xs = [torch.randn(16, 32) for _ in range(8)]
        w1, b1, w2, b2 = (p.detach().numpy().astype(np.float64) for p in model.parameters())
        want = [np.tanh(x.numpy().astype(np.float64) @ w1.T + b1) @ w2.T + b2 for x in xs]

        def call(i, barrier):
            barrier.wait(30)
            y = cf(xs[i])
            y.sum().backward()
            return y.detach().numpy().copy(), cf(xs[i]).detach().numpy().copy()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _run_threads(8, call)
        for (first, again), ref in zip(got, want):
            np.testing.assert_allclose(first, ref, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(again, ref, rtol=1e-4, atol=1e-5)
        # every thread's backward added its batch's gradient of the sum to the weights
        dy = np.ones((16, 8))
        hs = [np.tanh(x.numpy().astype(np.float64) @ w1.T + b1) for x in xs]
        np.testing.assert_allclose(model[2].bias.grad.numpy(), 8 * dy.sum(0), rtol=1e-4)
        np.testing.assert_allclose(model[2].weight.grad.numpy(),
                                   sum(dy.T @ h for h in hs), rtol=1e-4, atol=1e-4)


def test_grad_mode_set_in_a_copied_context_holds_for_the_thread():
    # per thread, not per asyncio task / contextvars context: a Jupyter kernel runs each cell
    # in a context of its own, and `torch.set_grad_enabled(False)` in one cell must hold in
    # the next, as in PyTorch
    import contextvars
    try:
        contextvars.copy_context().run(torch.set_grad_enabled, False)
        assert not torch.is_grad_enabled()
        contextvars.copy_context().run(torch.autocast("cpu", dtype=torch.bfloat16).__enter__)
        assert torch.is_autocast_enabled("cpu")
    finally:
        torch.set_grad_enabled(True)
        torch.set_autocast_enabled("cpu", False)
    assert torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu")


def test_two_threads_accumulating_a_first_grad_into_one_leaf_keep_both(monkeypatch):
    # thread A is held inside its first-.grad accumulation (between the "no .grad yet" check
    # and the store) while thread B accumulates into the same leaf: B must wait for A (PyTorch's
    # AccumulateGrad mutex), never store a .grad that A then overwrites. (A's wait only ends
    # early when B finished first, which is the bug; with the lock it runs out.)
    from fusetorch.tracer import autograd as A
    w = torch.zeros(3, requires_grad=True)
    a_inside, b_done = threading.Event(), threading.Event()
    real = A._first_grad_relaid

    def held(t, g):
        if threading.current_thread().name == "A":
            a_inside.set()
            b_done.wait(0.5)
        return real(t, g)
    monkeypatch.setattr(A, "_first_grad_relaid", held)

    def run_a():
        (w * torch.tensor([1.0, 2.0, 3.0])).sum().backward()

    def run_b():
        assert a_inside.wait(30)
        (w * torch.tensor([10.0, 20.0, 30.0])).sum().backward()
        b_done.set()
    ta, tb = threading.Thread(target=run_a, name="A"), threading.Thread(target=run_b, name="B")
    ta.start(), tb.start()
    ta.join(60), tb.join(60)
    np.testing.assert_array_equal(w.grad.numpy(), [11.0, 22.0, 33.0])


def test_a_generators_draw_leaves_the_global_stream_alone():
    """A draw from a torch.Generator takes its numbers from that stream only; it used to swap
    the stream in as the global one for the draw, so another thread drawing meanwhile took
    this stream's numbers, and the swaps' restores could leave it as the global stream."""
    from fusetorch.runtime import eager
    global_stream, seen = eager.GENERATOR.np, []

    class Stream:  # stands in for the Generator's numpy stream, and looks at the global one
        def standard_normal(self, shape, dtype):
            seen.append(eager.GENERATOR.np is global_stream)
            return np.zeros(shape, dtype)

    g = torch.Generator()
    g._g.np = Stream()
    assert torch.randn(3, generator=g).tolist() == [0.0, 0.0, 0.0]
    assert seen == [True] and eager.GENERATOR.np is global_stream


def test_seeded_generators_in_threads_draw_what_they_draw_alone():
    def draws(seed):
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(8, 5, generator=g).numpy().copy() for _ in range(20)]

    alone = [draws(i) for i in range(4)]

    def target(i, barrier):
        barrier.wait()
        return draws(i)

    for got, want in zip(_run_threads(4, target), alone):
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
