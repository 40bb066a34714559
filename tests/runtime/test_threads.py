"""torch.set_num_threads reaches numpy's BLAS and the kernels' OpenMP runtime (in a fresh
process, so the suite's own thread settings are untouched); small matrix products run on one
BLAS thread and put the count back (the count observed through threadpoolctl)."""
import os
import subprocess
import sys
import textwrap
import time
import types

import numpy as np
import pytest

import fusetorch as torch


def test_set_num_threads_limits_blas_and_openmp_in_a_fresh_process():
    code = textwrap.dedent("""
        import fusetorch as torch
        from threadpoolctl import threadpool_info
        torch.set_num_threads(1)
        f = torch.compile(lambda t: (t * 2).exp().sum())
        x = torch.randn(1 << 22)          # big enough for a parallel kernel, which links OpenMP
        f(x); f(x)
        torch.mm(torch.randn(8, 8), torch.randn(8, 8))
        print(torch.get_num_threads(),
              sorted({p["num_threads"] for p in threadpool_info()}),
              sorted({p["user_api"] for p in threadpool_info()}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split(maxsplit=1)
    assert out[0] == "1"
    assert out[1].startswith("[1]"), out  # every pool threadpoolctl sees runs one thread
    assert "'openmp'" in out[1] and "'blas'" in out[1], out


@pytest.mark.parametrize("fn", [torch.set_num_threads, torch.set_num_interop_threads])
def test_bad_thread_counts_raise_pytorchs_errors(fn):
    name = fn.__name__
    for bad in (0, -2):
        with pytest.raises(RuntimeError, match=f"{name} expects a positive integer"):
            fn(bad)
    for bad, kind in ((2.0, "float"), ("a", "str"), (True, "bool")):
        with pytest.raises(RuntimeError, match=f"{name} expects an int, but got {kind}"):
            fn(bad)


def test_defaults_are_positive():
    assert torch.get_num_threads() >= 1 and torch.get_num_interop_threads() >= 1


# ------------------------------------------------------------------ BLAS threads per product

def _blas_counts() -> list:
    from threadpoolctl import ThreadpoolController
    return [p["num_threads"] for p in ThreadpoolController().select(user_api="blas").info()]


@pytest.fixture
def two_blas_threads(monkeypatch):
    """numpy's BLAS on two threads for the test, and a matmul that records the BLAS's thread
    count while it runs (read through threadpoolctl, not through the code under test)."""
    from threadpoolctl import threadpool_limits

    from fusetorch import _threads
    if not _blas_counts():
        pytest.skip("no BLAS threadpoolctl can see")
    seen = []

    class Recording:
        @staticmethod
        def matmul(a, b):
            seen.append(_blas_counts())
            return np.matmul(a, b)

    monkeypatch.setattr(_threads, "np", Recording)
    monkeypatch.setattr(_threads, "others_busy", lambda: True)  # the rule applies when busy
    # the large products' rule (free_cores) off unless a test sets it: nothing known, the
    # BLAS's count kept
    monkeypatch.setattr(_threads, "free_cores", lambda: None)
    with threadpool_limits(2, user_api="blas"):
        yield seen
        assert _blas_counts() == [2] * len(_blas_counts())  # put back as found


def _product(m, k, n, batch=()):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(batch + (m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32))


@pytest.mark.parametrize("m,k,n,batch,threads", [
    (64, 1000, 100, (), 1),   # 12.8 MFLOP: a training step's product, one thread
    (8, 64, 64, (3,), 2),     # 98k multiply-adds as one product of the stack: BLAS's choice
    (2000, 200, 1, (), 1),    # (a matrix-vector product as [m, k] @ [k, 1])
])
def test_small_products_run_on_one_blas_thread_and_the_count_is_put_back(
        two_blas_threads, m, k, n, batch, threads):
    from fusetorch import _threads
    a, b = _product(m, k, n, batch)
    out = _threads.matmul(a, b)
    assert two_blas_threads == [[threads] * len(_blas_counts())]
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_products_above_the_threshold_keep_the_blas_count(two_blas_threads, monkeypatch):
    from fusetorch import _threads
    monkeypatch.setattr(_threads, "ALWAYS_SERIAL_FLOPS", 0)
    monkeypatch.setattr(_threads, "SERIAL_FLOPS", 1_000_000)
    a, b = _product(64, 100, 100)  # 1.28 MFLOP
    _threads.matmul(a, b)
    monkeypatch.setattr(_threads, "SERIAL_FLOPS", 0)  # 0: the rule is off
    _threads.matmul(*_product(64, 1000, 100))
    assert two_blas_threads == [[2] * len(_blas_counts())] * 2


def test_small_products_take_one_thread_also_on_an_idle_machine(two_blas_threads,
                                                               monkeypatch):
    """Below ALWAYS_SERIAL_FLOPS a product runs on one BLAS thread whatever the load (its
    spinning workers would cost the C kernels more than a second thread saves it); above, on
    an idle machine, with the BLAS's count."""
    from fusetorch import _threads
    monkeypatch.setattr(_threads, "others_busy", lambda: False)
    _threads.matmul(*_product(64, 400, 120))  # 6.1 MFLOP: LeNet's first Linear
    _threads.matmul(*_product(64, 1000, 100))  # 12.8 MFLOP
    assert two_blas_threads == [[1] * len(_blas_counts()), [2] * len(_blas_counts())]


def test_torch_matmul_goes_through_the_rule(two_blas_threads):
    # eager (Linear's forward, its backward) and a compiled program's extern matmul
    x, w = torch.randn(64, 1000, requires_grad=True), torch.randn(100, 1000, requires_grad=True)
    torch.nn.functional.linear(x, w).sum().backward()
    f = torch.compile(lambda u, v: (u @ v.t()).relu())
    y = f(x.detach(), w.detach())
    assert len(two_blas_threads) >= 4
    assert all(c == [1] * len(_blas_counts()) for c in two_blas_threads)
    ref = np.maximum(x.detach().numpy().astype(np.float64) @ w.detach().numpy().T, 0)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-3)


def test_matmul_keeps_numpys_results_and_errors():
    from fusetorch import _threads
    rng = np.random.default_rng(1)
    for sa, sb in [((300,), (300, 900)), ((5, 40, 300), (300, 90)), ((900, 300), (300,)),
                   ((2, 1, 64, 128), (3, 128, 64)), ((0, 300), (300, 900)), ((7,), (7,))]:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        np.testing.assert_allclose(_threads.matmul(a, b), np.einsum(
            "...ij,...jk->...ik", np.atleast_2d(a) if a.ndim > 1 else a[None],
            b if b.ndim > 1 else b[:, None]).reshape(np.matmul(a, b).shape))
    with pytest.raises(ValueError):
        _threads.matmul(np.ones((3, 4)), np.ones((5, 6)))


def test_the_bound_is_read_from_the_environment_when_the_module_loads(monkeypatch):
    """Each setting loads a fresh copy of the module (by path, as a new process would import
    it; the suite's own `_threads` is untouched)."""
    import importlib.util
    import warnings
    from fusetorch import _threads
    for raw, want, warns in (("2e7", 20_000_000, False), ("0", 0, False),
                             ("lots", 64_000_000, True), ("-5", 64_000_000, True)):
        monkeypatch.setenv("FUSETORCH_BLAS_SERIAL_FLOPS", raw)
        spec = importlib.util.spec_from_file_location("fresh_threads", _threads.__file__)
        fresh = importlib.util.module_from_spec(spec)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spec.loader.exec_module(fresh)
        assert fresh.SERIAL_FLOPS == want, raw
        said = [str(w.message) for w in caught if "FUSETORCH_BLAS_SERIAL_FLOPS" in str(w.message)]
        assert bool(said) == warns, (raw, said)


def test_on_an_idle_machine_small_products_keep_the_blas_count(two_blas_threads, monkeypatch):
    from fusetorch import _threads
    monkeypatch.setattr(_threads, "others_busy", lambda: False)
    _threads.matmul(*_product(64, 1000, 100))
    assert two_blas_threads == [[2] * len(_blas_counts())]


def test_large_products_take_the_cores_others_leave_free(two_blas_threads, monkeypatch):
    """Above SERIAL_FLOPS a product runs on as many BLAS threads as there are free cores: one
    where the others keep more than half of one of 2 cores busy, the BLAS's count on an idle
    machine and before anything is known."""
    from fusetorch import _threads
    monkeypatch.setattr(_threads, "get_num_threads", lambda: 2)
    a, b = _product(512, 256, 512)  # 134 MFLOP
    for free in (1, 2, None):
        monkeypatch.setattr(_threads, "free_cores", lambda free=free: free)
        out = _threads.matmul(a, b)
    monkeypatch.setattr(_threads, "SERIAL_FLOPS", 0)  # 0: the load's rule off, every size
    monkeypatch.setattr(_threads, "free_cores", lambda: 1)
    _threads.matmul(a, b)
    assert two_blas_threads == [[1] * len(_blas_counts()), [2] * len(_blas_counts()),
                                [2] * len(_blas_counts()), [2] * len(_blas_counts())]
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_a_call_while_another_has_lowered_the_counts_leaves_them(two_blas_threads):
    """The counts another thread's call lowered are not this call's to save and put back
    (two limits, 3 and 2, would leave 3 for good): it runs on them as they are."""
    import threading

    from fusetorch import _threads
    a, b = _product(64, 1000, 100)
    held, done = threading.Event(), threading.Event()

    def other():  # a call between its lowering and its putting back
        with _threads._lowering:
            held.set()
            done.wait(10)
    t = threading.Thread(target=other)
    t.start()
    held.wait(10)
    try:
        _threads.matmul(a, b)  # would take one thread: the counts are the other call's
    finally:
        done.set()
        t.join()
    _threads.matmul(a, b)
    assert two_blas_threads == [[2] * len(_blas_counts()), [1] * len(_blas_counts())]


def test_lapack_calls_take_the_threads_of_the_products_rule(monkeypatch):
    pytest.importorskip("scipy.linalg")  # (its own OpenBLAS loaded before the libraries are listed)
    from threadpoolctl import threadpool_limits

    from fusetorch import _threads
    monkeypatch.setattr(_threads, "_lapack_blas", None)
    monkeypatch.setattr(_threads, "get_num_threads", lambda: 2)
    seen = []
    with threadpool_limits(2, user_api="blas"):
        for free in (1, None):
            monkeypatch.setattr(_threads, "free_cores", lambda free=free: free)
            with _threads.lapack_threads(1e9):
                seen.append(_blas_counts())
        assert _blas_counts() == [2] * len(_blas_counts())  # put back as found
    assert seen == [[1] * len(seen[0]), [2] * len(seen[0])] and seen[0]


@pytest.mark.parametrize("others,cores,bound,want", [
    (None, 2, 2, None),  # no window yet, or no /proc/stat: nothing known
    (0.3, 2, 2, 2), (0.6, 2, 2, 1), (1.3, 2, 2, 1), (2.0, 2, 2, 1),
    (4.2, 16, 16, 12), (4.0, 16, 4, 4),  # (bound to 4 of 16 cores: the others use others)
])
def test_free_cores_rounds_what_the_others_leave(monkeypatch, others, cores, bound, want):
    from fusetorch import _threads
    monkeypatch.setattr(_threads, "_others_now", lambda: others)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(_threads, "_cores", lambda: bound)
    assert _threads.free_cores() == want


def test_others_cores_is_the_machines_busy_time_less_our_own():
    from fusetorch._threads import others_cores
    # 1.5 core-seconds busy over 1 s of which 0.5 were ours: others used one core
    assert others_cores(10.0, 2.0, 100.0, 11.5, 2.5, 101.0) == pytest.approx(1.0)
    # our own spinning BLAS workers are not somebody else's load
    assert others_cores(10.0, 2.0, 100.0, 11.8, 3.8, 101.0) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc/stat")
def test_a_cpu_bound_neighbour_makes_the_machine_busy(monkeypatch):
    from fusetorch import _threads
    monkeypatch.setattr(_threads, "_sample", None)
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert _threads.others_busy()  # no window yet: busy, the safe side
        time.sleep(2 * _threads.LOAD_WINDOW)
        assert _threads.others_busy()  # a whole core of the neighbour in the window
    finally:
        spin.kill()
        spin.wait()


def test_the_verdict_follows_each_window(monkeypatch):
    from fusetorch import _threads
    # (wall clock, machine busy seconds, our CPU seconds) at each sample
    samples = iter([(0.0, 5.0, 1.0), (0.05, 0, 0), (0.2, 5.15, 1.1), (0.4, 5.55, 1.2),
                    (0.6, 5.65, 1.3)])
    now = {}

    def clock():
        now["t"], now["busy"], now["own"] = next(samples)
        return now["t"]
    monkeypatch.setattr(_threads, "time", types.SimpleNamespace(
        monotonic=clock, process_time=lambda: now["own"]))
    monkeypatch.setattr(_threads, "_machine_busy_seconds", lambda: now["busy"])
    monkeypatch.setattr(_threads, "_sample", None)
    assert _threads.others_busy()        # first sample: no window, busy
    assert _threads.others_busy()        # within LOAD_WINDOW: the last verdict
    assert not _threads.others_busy()    # (0.15 - 0.1) s over 0.2 s: others 0.25 core
    assert _threads.others_busy()        # (0.4 - 0.1) s over 0.2 s: others 1.5 cores
    assert not _threads.others_busy()    # 0.1 - 0.1: nobody else


def test_openblas_workers_sleep_early_when_fusetorch_comes_before_numpy():
    """Imported first, fusetorch shortens OpenBLAS's idle spin (OPENBLAS_THREAD_TIMEOUT=20:
    2^20 cycles, not 2^28 ~ 0.1 s), and its C kernels then need not wait the spin out
    (BLAS_SPIN 0); after numpy, or under the user's own setting, it changes nothing. The spin
    itself is observed: the process's CPU time while it sleeps after a threaded product."""
    code = textwrap.dedent("""
        import os, sys, time
        if sys.argv[1] == "numpy first":
            import numpy
        import fusetorch
        import numpy as np
        from fusetorch import _threads
        from threadpoolctl import threadpool_limits
        a = np.ones((512, 512), np.float32)
        with threadpool_limits(2, user_api="blas"):
            a @ a
            a @ a
            t0 = time.process_time()
            time.sleep(0.3)
            spun = time.process_time() - t0
        print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), _threads.BLAS_SPIN, spun)
    """)
    runs = {}
    for order, env in (("fusetorch first", {}), ("numpy first", {}),
                       ("fusetorch first", {"OPENBLAS_THREAD_TIMEOUT": "26"})):
        e = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        e.update(env)
        out = subprocess.run([sys.executable, "-c", code, order], capture_output=True, text=True,
                             env=e, timeout=120, check=True).stdout.split()
        runs[order, tuple(env.items())] = (out[0], float(out[1]), float(out[2]))
    assert runs["fusetorch first", ()][:2] == ("20", 0.0)
    assert runs["numpy first", ()][:2] == ("None", 0.1)
    assert runs["fusetorch first", (("OPENBLAS_THREAD_TIMEOUT", "26"),)][:2] == ("26", 0.1)
    if os.cpu_count() >= 2:  # (a spinning worker burns CPU time while the caller sleeps)
        assert runs["fusetorch first", ()][2] < 0.02
