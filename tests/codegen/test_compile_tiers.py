"""Tiered compile (runtime/program.py): a compiled call never waits for the C compiler; until
the background build is done its calls interpret the traced graph, then the built kernels take
over. Each tier is forced here, never left to timing: the background build is held at a gate
the test opens, and the handover happens at `wait_for_build`."""
import copy
import threading
import warnings

import numpy as np
import pytest

from fusetorch._policy import POLICY
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.runtime import build as runtime_build
from fusetorch.runtime import cbuild, program


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


class _Gate:
    """Holds every background build until `open()`; counts the builds that reached it."""

    def __init__(self, monkeypatch, fail: BaseException | None = None):
        self.opened, self.reached, self.fail = threading.Event(), [], fail
        real = runtime_build.build

        def held(kernels, device="cpu"):
            if threading.current_thread() is threading.main_thread():
                return real(kernels, device)  # (synchronous builds: not held)
            self.reached.append(len(kernels))
            assert self.opened.wait(60), "the test never opened the gate"
            if self.fail is not None:
                raise self.fail
            return real(kernels, device)

        monkeypatch.setattr(runtime_build, "build", held)
        monkeypatch.setattr(POLICY, "background_builds", True)

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def gate(monkeypatch):
    g = _Gate(monkeypatch)
    yield g
    g.open()
    assert program.wait_for_builds(60)  # (no build of this test outlives it)


def _exact(a, b, c):
    # float operations that numpy and the C kernels round alike (no libm, no sums): the two
    # tiers agree bit for bit
    return torch.maximum(a * b + c, -a) - (b * 0.5 + a * c).relu()


def _inputs():
    return [torch.randn(64, 33), torch.randn(33), torch.randn(64, 1)]


def _prepared(cf) -> bool:
    return cf._last.program.prepared


def test_synchronous_builds_before_the_first_call_returns():
    # the test suite's setting (tests/conftest.py): nothing depends on a background thread
    assert not POLICY.background_builds
    cf = torch.compile(_exact)
    cf(*_inputs())
    assert _prepared(cf) and cf._last.program._pending is None


def test_interpreted_tier_then_built_tier_at_the_wait(gate):
    args = _inputs()
    want = _exact(*args).numpy()
    cf = torch.compile(_exact)
    first = cf(*args)  # traced: eager's values
    assert not _prepared(cf)  # (its build is held at the gate)
    interpreted = [cf(*args) for _ in range(2)]
    assert not _prepared(cf)
    gate.open()
    assert cf.wait_for_build(60) and _prepared(cf) and gate.reached
    built = cf(*args)
    for out in [first, built] + interpreted:
        assert out.numpy().tobytes() == want.tobytes()
    # new arrays of the same layout in each tier, and the kernels' own (written) buffers
    other = _inputs()
    assert cf(*other).numpy().tobytes() == _exact(*other).numpy().tobytes()


def test_inspection_waits_for_the_build(gate):
    cf = torch.compile(_exact)
    cf(*_inputs())
    threading.Timer(0.0, gate.open).start()  # (opened by another thread while we wait)
    assert "ft_" in cf.source() and len(cf.kernels()) == 2 and _prepared(cf)


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).double()


def _step_of(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y, reduction="sum")
        loss.backward()
        opt.step()
        return loss
    return step


def _state(model, opt):
    out = [p.detach().numpy().copy() for p in model.parameters()]
    out += [p.grad.numpy().copy() for p in model.parameters()]
    out += [s["momentum_buffer"].numpy().copy() for s in opt.state.values()]
    return out


def test_training_step_is_the_same_in_both_tiers(gate):
    # parameters, gradients and momentum written back by the interpreted tier, then by the
    # built kernels, against the same steps run eagerly on a copy
    m1 = _model()
    m2 = copy.deepcopy(m1)
    o1 = torch.optim.SGD(m1.parameters(), lr=1e-3, momentum=0.9)
    o2 = torch.optim.SGD(m2.parameters(), lr=1e-3, momentum=0.9)
    eager, cf = _step_of(m1, o1), torch.compile(_step_of(m2, o2))
    x, y = torch.randn(10, 12).double(), torch.randn(10, 3).double()
    for k in range(6):
        if k == 4:  # steps 0-1 settle the optimizer's state, 2 traces, 3 interprets
            assert not _prepared(cf)
            gate.open()
            assert cf.wait_for_build(60)
        l1, l2 = eager(x, y), cf(x, y)
        np.testing.assert_allclose(float(l2), float(l1), rtol=1e-12)
        for a, b in zip(_state(m1, o1), _state(m2, o2)):
            # (sums accumulate in another order in the kernels: float64 rounding apart)
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    assert _prepared(cf) and gate.reached


def test_backward_program_interprets_until_built(gate):
    w = torch.randn(16, 8, requires_grad=True)
    cf = torch.compile(lambda a: (torch.tanh(a @ w) * a.sum()).sum())
    x = torch.randn(4, 16)
    grads = []
    for k in range(3):
        if k == 2:
            bprog = cf._last.backward[0]
            assert not bprog.prepared  # the forward's build and the backward's held
            gate.open()
            assert cf.wait_for_build(60) and bprog.prepared
        w.grad = None
        cf(x).backward()
        grads.append(w.grad.numpy())
    # against float64: some of these gradients are differences of nearly equal float32 terms
    # (1 - tanh^2 near saturation), so eager and compiled may differ by more than rtol allows
    # elementwise while both are within float32 rounding of the largest entry
    xd, wd = x.numpy().astype(np.float64), w.detach().numpy().astype(np.float64)
    t = np.tanh(xd @ wd)
    want = xd.T @ ((1 - t * t) * xd.sum())
    for g in grads:
        np.testing.assert_allclose(g, want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("fail, category, words", [
    (cbuild.CompilerUnavailable("no C compiler found"), UserWarning, "no C compiler"),
    (RuntimeError("C compilation failed"), RuntimeWarning, "building kernels failed"),
])
def test_a_failed_background_build_warns_once_and_interprets(monkeypatch, fail, category,
                                                             words):
    gate = _Gate(monkeypatch, fail)
    monkeypatch.setattr(runtime_build, "_warned", set())  # (the one "cannot build" warning)
    args = _inputs()
    want = _exact(*args).numpy()
    cf = torch.compile(_exact)
    cf(*args)
    gate.open()
    with pytest.warns(category, match=words):
        assert not cf.wait_for_build(60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        for _ in range(2):
            assert cf(*args).numpy().tobytes() == want.tobytes()
    assert not _prepared(cf)


def test_threads_calling_during_the_build_and_after_the_handover(gate):
    args = _inputs()
    want = _exact(*args).numpy().tobytes()
    cf = torch.compile(_exact)
    cf(*args)
    got, errors = [], []

    def calls():
        try:
            got.extend(cf(*args).numpy().tobytes() for _ in range(3))
        except BaseException as e:  # (re-raised below, in the test's thread)
            errors.append(e)

    threads = [threading.Thread(target=calls) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not _prepared(cf)  # every call above interpreted
    gate.open()
    threads = [threading.Thread(target=calls) for _ in range(2)]
    for t in threads:
        t.start()
    assert cf.wait_for_build(60)  # (the handover may come in the middle of their calls)
    for t in threads:
        t.join()
    assert not errors and got == [want] * 12
