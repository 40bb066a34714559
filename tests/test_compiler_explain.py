"""`fusetorch.compiler.explain()`: why each graph ran compiled or interpreted, in the words of
the decision each holder made. Every reason is reached by a real situation here (a threshold,
a switch, a limit, a build held at a gate, a compiler that fails), never by timing."""
import threading

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch import _policy, compiler
from fusetorch._policy import POLICY
from fusetorch.runtime import build as runtime_build
from fusetorch.runtime import cbuild, program
from fusetorch.tracer import autograd as A
from fusetorch.tracer import composite_programs
from fusetorch.tracer.composite_programs import composite


@pytest.fixture(autouse=True)
def _fresh(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))
    for switch in ("eager_kernels", "backward_programs", "fused_optimizers"):
        monkeypatch.setattr(POLICY, switch, True)  # (also under FUSETORCH_EAGER_COMPILE=0)
    _policy.clear_decisions()
    A._CACHE.clear()
    composite_programs.clear()
    yield
    A._CACHE.clear()
    composite_programs.clear()
    _policy.clear_decisions()


def _lines(kind):
    return compiler.explain(kind).splitlines()


def _backward_twice(x):
    for _ in range(2):
        x.grad = None
        (x.exp() * 2).sum().backward()


def test_nothing_noted_yet():
    assert compiler.explain() == "(no decisions recorded)"


def test_a_backward_graph_first_use_then_too_small():
    x = torch.randn(96, requires_grad=True)
    x.grad = None
    (x.exp() * 2).sum().backward()
    (line,) = _lines("backward")
    assert line.startswith("backward #") and \
        line.endswith("interpreted: use 1 (compiled from use 2: POLICY.backward_compile_at)")
    (x.exp() * 2).sum().backward()
    # its inputs: the cotangent (1 element), the saved exp (96): 97 < 4096
    (line,) = _lines("backward")
    assert line.endswith("interpreted: inputs 97 elements < POLICY.min_elements 4096"), line


def test_a_large_backward_graph_compiled(monkeypatch):
    monkeypatch.setattr(POLICY, "min_elements", 64)
    _backward_twice(torch.randn(96, requires_grad=True))
    (line,) = _lines("backward")
    assert "compiled: 1 kernel" in line, line


def test_backward_programs_switched_off(monkeypatch):
    monkeypatch.setattr(POLICY, "backward_programs", False)
    _backward_twice(torch.randn(5000, requires_grad=True))
    (line,) = _lines("backward")
    assert line.endswith("not compiled: POLICY.backward_programs off"), line


def test_backward_layout_limit(monkeypatch):
    monkeypatch.setattr(POLICY, "backward_layouts", 1)
    w = torch.randn(80, 80, requires_grad=True)
    for x in (torch.randn(80, 80), torch.randn(80, 80), torch.randn(80, 80).t()):
        w.grad = None
        (w * x).exp().sum().backward()  # (the third: its saved x is transposed, a new layout)
    (line,) = _lines("backward")
    assert "interpreted: layout limit 1 reached (POLICY.backward_layouts)" in line, line
    np.testing.assert_allclose(w.grad.numpy(), (np.exp(w.detach().numpy() * x.numpy())
                                                * x.numpy()), rtol=1e-5)


def test_a_build_in_progress_then_compiled(monkeypatch):
    opened = threading.Event()
    real = runtime_build.build

    def held(kernels, device="cpu"):
        if threading.current_thread() is not threading.main_thread():
            assert opened.wait(60)
        return real(kernels, device)

    monkeypatch.setattr(runtime_build, "build", held)
    monkeypatch.setattr(POLICY, "background_builds", True)
    cf = torch.compile(lambda a: (a.sin() * 2).exp())
    x = torch.randn(64, 65)
    try:
        cf(x)
        (line,) = _lines("compile")
        assert "((64, 65),): interpreted: build in progress" in line, line
        assert "<lambda>" in line and "test_compiler_explain.py" in line
    finally:
        opened.set()
        assert cf.wait_for_build(60) and program.wait_for_builds(60)
    (line,) = _lines("compile")
    assert line.endswith("compiled: 1 kernel"), line


def test_no_c_compiler(monkeypatch):
    def no_cc(*a, **k):
        raise cbuild.CompilerUnavailable("no C compiler found")

    monkeypatch.setattr(cbuild, "build_all", no_cc)
    monkeypatch.setattr(runtime_build, "_warned", set())
    cf = torch.compile(lambda t: t.exp() + 1)
    with pytest.warns(UserWarning, match="no C compiler"):
        cf(torch.randn(7))
    (line,) = _lines("compile")
    assert line.endswith("not compiled: no C compiler (no C compiler found)"), line


def test_a_graph_break():
    cf = torch.compile(lambda t: t * t.sum().item())
    with pytest.warns(UserWarning, match="graph break"):
        cf(torch.randn(3))
    (line,) = _lines("compile")
    assert "eager: graph break (item() reads tensor data at test_compiler_explain.py:" in line


@composite
def _linear(x, w):  # (F.linear is one primitive, no composite: the composed form it had)
    return x.matmul(w.t())


def test_composite_keys_first_call_capture_and_replay(monkeypatch):
    x, w = torch.randn(2, 8), torch.randn(4, 8)
    _linear(x, w)
    assert _lines("composite")[-1].endswith("plain: call 1 (captured at call 2: "
                                            "POLICY.composite_capture_at, replayed from the "
                                            "next)")
    _linear(x, w)
    assert _lines("composite")[-1].endswith("plain: captured at this call (replayed from "
                                            "the next)")
    _linear(x, w)
    (line,) = _lines("composite")
    assert "_linear ((2, 8), (4, 8)):" in line
    assert line.endswith("interpreted: inputs 48 elements < POLICY.min_elements 4096"), line


def test_composites_switched_off(monkeypatch):
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    for _ in range(3):
        _linear(torch.randn(2, 8), torch.randn(4, 8))
    (line,) = _lines("composite")
    assert line == (f"composite {_linear.__module__}._linear: not compiled: "
                    "POLICY.eager_kernels off"), line


def test_a_composite_that_fuses_nothing():
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    for _ in range(3):
        _linear(x, w)  # (one matmul: nothing for a kernel to fuse)
    (line,) = _lines("composite")
    assert line.endswith("interpreted: its partition fuses nothing (a kernel per primitive "
                         "is no faster than numpy)"), line


def test_a_composite_that_reads_data_is_not_replayed():
    @composite
    def scaled(t):
        return t * float(t.max())

    x = torch.randn(5)
    for _ in range(3):
        scaled(x)
    (line,) = _lines("composite")
    assert "plain: not replayable (" in line, line


def test_eager_kernels_first_sight_then_a_kernel():
    x = torch.randn(128, 128)
    torch.erf(x)
    assert _lines("eager_kernel")[-1].endswith("numpy: sight 1 of this layout (built at "
                                               "sight 2: POLICY.eager_kernel_at)")
    torch.erf(x)
    (line,) = _lines("eager_kernel")
    assert line.startswith("eager_kernel erf ((128, 128)") and \
        line.endswith("compiled: a kernel for this layout"), line


def _train(opt_factory, steps=2, **group):
    net = nn.Linear(4, 3)
    opt = opt_factory(net.parameters(), **group)
    for _ in range(steps):
        opt.zero_grad()
        net(torch.randn(2, 4)).sum().backward()
        opt.step()
    return _lines("fused_optimizer")


def test_fused_optimizer_step():
    (line,) = _train(torch.optim.Adam, steps=1)
    assert line == ("fused_optimizer Adam param group 0: Python loop: step 1 of this "
                    "group and its parameters (fused from step 2: POLICY.fused_step_at)")
    _policy.clear_decisions()
    (line,) = _train(torch.optim.Adam, steps=2)
    assert line == "fused_optimizer Adam param group 0: compiled: one fused kernel call per dtype"


def test_fused_optimizer_reasons(monkeypatch):
    (line,) = _train(torch.optim.SGD, lr=0.1, foreach=False)
    assert line.endswith("Python loop: foreach=False")
    monkeypatch.setattr(POLICY, "fused_optimizers", False)
    (line,) = _train(torch.optim.SGD, lr=0.1)
    assert line.endswith("not compiled: POLICY.fused_optimizers off")


def test_the_log_is_bounded_and_keeps_codes_not_text(monkeypatch):
    monkeypatch.setattr(_policy, "DECISIONS_KEPT", 3)
    for k in range(5):
        _policy.note("backward", (f"#{k}",), "small", k, 4096)
    assert [line.split(":")[0] for line in _lines(None)] == \
        ["backward #2", "backward #3", "backward #4"]
    # what is kept is the code and its values; the text is made when asked
    assert list(_policy._DECISIONS.values())[-1] == ("small", (4, 4096))


def test_a_backward_graph_with_an_op_kernels_cannot_take():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = torch.randn(5000, requires_grad=True)
    for _ in range(2):
        x.grad = None
        Double.apply(x).exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * x.detach().numpy()), rtol=1e-5)
    (line,) = _lines("backward")
    assert "interpreted: op custom" in line and "cannot be compiled (OpDef.compilable is " \
        "False)" in line, line


# Each holder's "Nth use" is one POLICY field, read where the holder decides: moved, the
# holder moves with it and its reason says so.

def test_backward_compile_at_moves_the_build(monkeypatch):
    monkeypatch.setattr(POLICY, "min_elements", 64)
    monkeypatch.setattr(POLICY, "backward_compile_at", 3)
    x = torch.randn(96, requires_grad=True)
    want = 2 * np.exp(x.detach().numpy())
    for use in (1, 2, 3):
        x.grad = None
        (x.exp() * 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
        (line,) = _lines("backward")
        if use < 3:
            assert line.endswith(f"interpreted: use {use} (compiled from use 3: "
                                 "POLICY.backward_compile_at)"), line
    assert "compiled: 1 kernel" in line, line


def test_backward_compile_at_one_compiles_the_first_use(monkeypatch):
    monkeypatch.setattr(POLICY, "min_elements", 64)
    monkeypatch.setattr(POLICY, "backward_compile_at", 1)
    x = torch.randn(96, requires_grad=True)
    (x.exp() * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-6)
    (line,) = _lines("backward")
    assert "compiled: 1 kernel" in line, line


@pytest.mark.parametrize("at", [1, 3])
def test_composite_capture_at_moves_the_capture(monkeypatch, at):
    monkeypatch.setattr(POLICY, "composite_capture_at", at)
    x, w = torch.randn(2, 8), torch.randn(4, 8)
    want = x.numpy() @ w.numpy().T
    for call in range(1, at + 2):
        np.testing.assert_allclose(_linear(x, w).numpy(), want, rtol=1e-6)
        line = _lines("composite")[-1]
        if call < at:
            assert line.endswith(f"plain: call {call} (captured at call {at}: "
                                 "POLICY.composite_capture_at, replayed from the next)"), line
        elif call == at:
            assert line.endswith("plain: captured at this call (replayed from the next)"), line
    assert line.endswith("interpreted: inputs 48 elements < POLICY.min_elements 4096"), line


@pytest.mark.parametrize("at", [1, 3])
def test_eager_kernel_at_moves_the_build(monkeypatch, at):
    from fusetorch.runtime import eager_kernels as ek
    monkeypatch.setattr(POLICY, "eager_kernel_at", at)
    x = torch.randn(96, 97 + at)  # (a layout of this test's own)
    try:
        for sight in range(1, at + 1):
            np.testing.assert_allclose(torch.erf(x).numpy(), _erf(x.numpy()), rtol=1e-5,
                                       atol=1e-6)
            line = _lines("eager_kernel")[-1]
            if sight < at:
                assert line.endswith(f"numpy: sight {sight} of this layout (built at sight "
                                     f"{at}: POLICY.eager_kernel_at)"), line
        assert line.endswith("compiled: a kernel for this layout"), line
    finally:
        for key in [k for k in ek._PROGRAMS if k[0] == "erf"]:
            ek._PROGRAMS.pop(key, None)


def _erf(a):
    from math import erf
    return np.vectorize(erf)(a.astype(np.float64))


def test_fused_step_at_moves_the_fused_step(monkeypatch):
    monkeypatch.setattr(POLICY, "fused_step_at", 3)
    (line,) = _train(torch.optim.Adam, steps=2)
    assert line == ("fused_optimizer Adam param group 0: Python loop: step 2 of this "
                    "group and its parameters (fused from step 3: POLICY.fused_step_at)")
    _policy.clear_decisions()
    (line,) = _train(torch.optim.Adam, steps=3)
    assert line == "fused_optimizer Adam param group 0: compiled: one fused kernel call per dtype"


def _conv_ref(x, w):
    """conv2d (stride 1, no padding) in float64 by windows."""
    k = w.shape[2]
    win = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (k, k), axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64))


def test_hand_written_kernels_switched_off_never_build(monkeypatch):
    """The convolution's and max pooling's kernels: none is built or run with the switch off,
    and explain() names the switch, once per kernel however often it is met."""
    from fusetorch.runtime import conv
    from fusetorch.runtime import eager_kernels as ek
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    built = []
    monkeypatch.setattr(conv, "_build", lambda *a: built.append(a))
    monkeypatch.setattr(ek, "_build_pool", lambda *a, **k: built.append(a))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for _ in range(3):
        y = F.conv2d(torch.tensor(x), torch.tensor(w))
        np.testing.assert_allclose(y.numpy(), _conv_ref(x, w), rtol=1e-5, atol=1e-5)
        p = F.max_pool2d(torch.tensor(x), 3)
        np.testing.assert_array_equal(p.numpy(), x.reshape(2, 3, 3, 3, 3, 3).max((3, 5)))
    assert built == []
    lines = _lines("eager_kernel")
    assert "eager_kernel conv2d float32: not compiled: POLICY.eager_kernels off" in lines, lines
    assert any(line.startswith("eager_kernel max_pool2d ") and
               line.endswith("not compiled: POLICY.eager_kernels off") for line in lines), lines
    assert len(lines) == len(set(lines))


def test_hand_kernel_at_moves_a_hand_written_kernels_build(monkeypatch):
    from fusetorch.runtime import eager_kernels as ek
    monkeypatch.setattr(POLICY, "hand_kernel_at", 3)
    monkeypatch.setattr(POLICY, "background_builds", False)
    key, kernel, calls = ("test_hand_kernel", "at3"), object(), []
    try:
        for sight in (1, 2):
            assert ek.cached_kernel(key, lambda: calls.append(1) or kernel) is None
            assert _lines("eager_kernel")[-1] == (
                f"eager_kernel test_hand_kernel at3: reference: sight {sight} of this kernel's "
                "key (built at sight 3: POLICY.hand_kernel_at)")
        assert calls == []
        assert ek.cached_kernel(key, lambda: calls.append(1) or kernel) is kernel
        assert _lines("eager_kernel")[-1] == ("eager_kernel test_hand_kernel at3: compiled: a "
                                              "kernel for this layout")
        assert ek.cached_kernel(key, lambda: calls.append(1) or kernel) is kernel
        assert calls == [1]
    finally:
        with ek._lock:
            ek._PROGRAMS.pop(key, None)


def test_hand_kernel_at_is_a_policy_row():
    assert POLICY.hand_kernel_at == 1  # (from the first sight: a build runs in a thread)
    assert "hand_kernel_at=1" in repr(_policy.EagerCompilePolicy({}))
    assert _policy.EagerCompilePolicy({"FUSETORCH_EAGER_COMPILE": "0"}).eager_kernels is False
