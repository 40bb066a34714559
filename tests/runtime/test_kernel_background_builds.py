"""The eager table's hand-written kernels (a convolution's, max pooling's, an LSTM layer's) build
in a background thread under `POLICY.background_builds`: the caller's reference computes until the
kernel is there (a conv net's first eager step on a fresh machine waited ~1 s for gcc). Builds are
gated by events here, never by time."""
import threading
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch._policy import POLICY
from fusetorch.runtime import eager_kernels as ek
from fusetorch.runtime import program


@pytest.fixture(autouse=True)
def _kernels_on(monkeypatch):
    # (cached_kernel honours the switch: on here also under FUSETORCH_EAGER_COMPILE=0)
    monkeypatch.setattr(POLICY, "eager_kernels", True)


@pytest.fixture
def background(monkeypatch):
    monkeypatch.setattr(POLICY, "background_builds", True)
    keys = []
    yield keys
    assert ek.wait_for_kernel_builds(60)
    with ek._lock:
        for k in keys:
            ek._PROGRAMS.pop(k, None)
            ek._FAILURES.pop(k, None)


def _gated_build(gate: threading.Event, calls: list, result):
    def build():
        calls.append(1)
        assert gate.wait(60)
        if isinstance(result, Exception):
            raise result
        return result
    return build


def test_the_first_calls_get_none_until_the_kernel_is_built_then_the_kernel(background):
    key = ("test_kernel", "a")
    background.append(key)
    gate, calls = threading.Event(), []
    kernel = object()
    build = _gated_build(gate, calls, kernel)
    assert ek.cached_kernel(key, build) is None  # (the reference computes meanwhile)
    assert ek.cached_kernel(key, build) is None
    gate.set()
    assert program.wait_for_builds(60)  # (the one handover point waits for kernels too)
    assert ek.cached_kernel(key, build) is kernel
    assert ek.cached_kernel(key, build) is kernel
    assert calls == [1]  # built once


def test_a_failed_background_build_is_said_once_in_the_callers_thread(background):
    key = ("test_kernel", "b")
    background.append(key)
    gate, calls = threading.Event(), []
    build = _gated_build(gate, calls, OSError(28, "No space left on device"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ek.cached_kernel(key, build) is None
        gate.set()
        assert ek.wait_for_kernel_builds(60)
    with pytest.warns(RuntimeWarning, match="No space left on device"):
        assert ek.cached_kernel(key, build) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ek.cached_kernel(key, build) is None  # not again, and not built again
    assert calls == [1]


def test_a_trace_builds_nothing(background):
    key = ("test_kernel", "c")
    background.append(key)
    calls = []
    with ek.no_builds():
        assert ek.cached_kernel(key, lambda: calls.append(1) or object()) is None
    assert calls == [] and key not in ek._PROGRAMS


def test_without_background_builds_the_caller_waits_for_the_kernel(monkeypatch):
    monkeypatch.setattr(POLICY, "background_builds", False)
    key = ("test_kernel", "d")
    kernel = object()
    try:
        assert ek.cached_kernel(key, lambda: kernel) is kernel
    finally:
        with ek._lock:
            ek._PROGRAMS.pop(key, None)


def test_a_conv_net_step_gives_the_same_values_while_its_kernel_builds(background):
    """The reference and the kernel agree to rounding, checked against float64."""
    with ek._lock:  # (a fresh start for the float64 kernel: the reference runs first)
        ek._PROGRAMS.pop(("conv2d", np.dtype(np.float64)), None)
    background.append(("conv2d", np.dtype(np.float64)))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 9))
    w = rng.standard_normal((4, 3, 3, 3))
    want = np.zeros((2, 4, 7, 7))
    for i in range(3):
        for j in range(3):
            want += np.einsum("ncij,oc->noij", x[:, :, i:i + 7, j:j + 7], w[:, :, i, j])
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    first = torch.nn.functional.conv2d(tx, tw).numpy()
    assert ek.wait_for_kernel_builds(60)
    later = torch.nn.functional.conv2d(tx, tw).numpy()
    np.testing.assert_allclose(first, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(later, want, rtol=1e-12, atol=1e-12)


def test_a_program_build_waits_for_its_kernel_even_under_no_builds(background):
    """`wait=True` (a program's build asks once and keeps what it gets: a convolution built for
    its geometry) builds where a trace's eager calls build nothing, and returns the kernel."""
    key = ("test_kernel", "wait")
    background.append(key)
    kernel = object()
    with ek.no_builds():
        assert ek.cached_kernel(key, lambda: kernel, wait=True) is kernel
    assert ek.cached_kernel(key, lambda: object()) is kernel  # (kept: built once)


def test_a_waiting_build_joins_the_build_another_caller_started(background):
    """The forward and backward programs of one layer ask for the same key: the second waits for
    the first one's build instead of going without."""
    key = ("test_kernel", "joined")
    background.append(key)
    gate, calls = threading.Event(), []
    kernel = object()
    build = _gated_build(gate, calls, kernel)
    assert ek.cached_kernel(key, build) is None  # (started in the background)
    got = []
    waiter = threading.Thread(target=lambda: got.append(ek.cached_kernel(key, build, wait=True)))
    waiter.start()
    gate.set()
    waiter.join(60)
    assert got == [kernel] and calls == [1]


def test_a_failed_waited_build_is_said_once_and_gives_none(background):
    key = ("test_kernel", "wait_failed")
    background.append(key)
    gate, calls = threading.Event(), []
    gate.set()
    build = _gated_build(gate, calls, OSError(28, "No space left on device"))
    with pytest.warns(RuntimeWarning, match="No space left on device"):
        assert ek.cached_kernel(key, build, wait=True) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ek.cached_kernel(key, build, wait=True) is None  # not again, nor built again
    assert calls == [1]


def test_waiting_builds_honour_the_switch(monkeypatch):
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    calls = []
    assert ek.cached_kernel(("test_kernel", "off"), lambda: calls.append(1), wait=True) is None
    assert calls == []
