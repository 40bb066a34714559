"""Compiled eager backward (FUSETORCH_EAGER_COMPILE): a backward graph seen a second time runs
as a compiled program, with the interpreter's results."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fusetorch._policy import POLICY
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.tracer import autograd as A


@pytest.fixture
def compiled_backward(monkeypatch):
    def use(on: bool):
        monkeypatch.setattr(POLICY, "backward_programs", on)
        A._CACHE.clear()  # runners decide at creation whether they may compile
    yield use
    A._CACHE.clear()


class SmallConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 5)
        self.ln = nn.LayerNorm(5)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.norm(self.conv(x))), 2)
        return self.ln(self.fc(h.flatten(1)))


def _grads_over_steps(compiled_backward, on: bool, steps: int = 3):
    compiled_backward(on)
    torch.manual_seed(0)
    net = SmallConvNet().double()
    x = torch.randn(16, 2, 8, 8, dtype=torch.float64)
    y = torch.randint(0, 5, (16,))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y) + (net.conv.weight ** 2).sum() * 1e-3
        loss.backward()
        out.append([p.grad.numpy().copy() for p in net.parameters()])
        opt.step()
    runners = [hit[2] for hit in A._CACHE.values()]
    return out, runners


def test_a_repeated_backward_runs_compiled_with_the_interpreters_gradients(compiled_backward):
    want, plain = _grads_over_steps(compiled_backward, False)
    got, runners = _grads_over_steps(compiled_backward, True)
    assert not any(r.programs for r in plain)
    assert any(r.programs for r in runners), "the second step's backward should be compiled"
    for step_want, step_got in zip(want, got):
        for a, b in zip(step_want, step_got):
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def test_small_graphs_and_first_uses_stay_interpreted(compiled_backward):
    compiled_backward(True)
    x = torch.randn(3, 4, requires_grad=True)
    for _ in range(3):
        (x.exp() * 2).sum().backward()
    (runner,) = [hit[2] for hit in A._CACHE.values()]
    assert runner.uses == 3 and not runner.programs  # 12 elements: below MIN_ELEMENTS
    w = torch.randn(64, 128, requires_grad=True)
    (w.tanh() * 3).sum().backward()
    big = [hit[2] for hit in A._CACHE.values() if hit[2] is not runner]
    assert len(big) == 1 and big[0].uses == 1 and not big[0].programs
    g1 = w.grad.clone()
    w.grad = None
    (w.tanh() * 3).sum().backward()
    assert len(big[0].programs) == 1
    np.testing.assert_allclose(w.grad.numpy(), g1.numpy(), rtol=1e-6)


def test_each_input_layout_gets_its_program_up_to_a_limit(compiled_backward):
    compiled_backward(True)
    steps = range(1, POLICY.backward_layouts + 4)
    base = torch.randn(64 * steps[-1], 64)
    for s in steps:
        for _ in range(2):  # the first use of a layout may be interpreted, the second is not
            # every s-th row: the saved input arrives with row stride s * 64 elements
            x = base[::s][:64].requires_grad_()
            (x.sin() * x).sum().backward()
            a = x.detach().numpy().astype(np.float64)
            np.testing.assert_allclose(x.grad.numpy(), np.cos(a) * a + np.sin(a), rtol=1e-5,
                                       atol=1e-6)
    (runner,) = [hit[2] for hit in A._CACHE.values()]
    assert len(runner.programs) == POLICY.backward_layouts  # later layouts ran in the interpreter


def test_custom_functions_are_not_compiled(compiled_backward):
    compiled_backward(True)

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = torch.randn(64, 64, requires_grad=True)
    for _ in range(3):
        x.grad = None
        Square.apply(x).sum().backward()
    assert all(not hit[2].compilable for hit in A._CACHE.values())
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


def _run(code: str, **env) -> subprocess.CompletedProcess:
    import os
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, **env))


SCRIPT = """
    import warnings
    import fusetorch as torch
    from fusetorch.tracer import autograd as A
    warnings.simplefilter("always")
    w = torch.randn(64, 128, requires_grad=True)
    for _ in range(3):
        (w.tanh() * 3).sum().backward()
    print(sum(len(hit[2].programs) for hit in A._CACHE.values()))
"""


def test_switched_off_by_the_environment():
    r = _run(SCRIPT, FUSETORCH_EAGER_COMPILE="0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0"]


def test_no_compiler_warns_once_and_keeps_the_interpreter(tmp_path):
    r = _run(SCRIPT, CC="/nonexistent/cc", FUSETORCH_CACHE_DIR=str(tmp_path),
             FUSETORCH_EAGER_COMPILE="1")  # (whatever the suite itself runs under)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("cannot build kernels") == 1, r.stderr


def test_a_small_repeated_backward_runs_interpreted_with_the_same_gradients_each_use():
    # a policy-gradient loss over an episode: many nodes on arrays below the kernels' size, so
    # the backward runs interpreted (one interpreting Runner, slots made once, the lean loop);
    # gradients equal use after use, bit for bit, and against float64
    # finite differences of the same loss
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    states = torch.randn(12, 4)
    actions = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1]
    returns = torch.linspace(1.0, -1.0, 12)

    def loss_of(model):
        terms = []
        for s, a, r in zip(states, actions, returns):
            logp = F.log_softmax(model(s.unsqueeze(0)), dim=1)[0, a]
            terms.append(-logp * r)
        return torch.stack(terms).sum()

    A._CACHE.clear()
    grads = []
    for _ in range(3):
        net.zero_grad()
        loss_of(net).backward()
        grads.append([p.grad.numpy().copy() for p in net.parameters()])
    runner = next(hit[2] for hit in A._CACHE.values())
    assert runner.uses == 3 and runner.interpreter is not None and not runner.programs
    for g in grads[1:]:
        for a, b in zip(grads[0], g):
            np.testing.assert_array_equal(a, b)  # the first use against the later ones
    net64 = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    with torch.no_grad():
        for p, q in zip(net64.parameters(), net.parameters()):
            p.copy_(q.double())
    states, returns = states.double(), returns.double()
    w = net64[0].weight
    eps = 1e-6
    for i, j in [(0, 0), (3, 2), (7, 1)]:
        with torch.no_grad():
            w[i, j] += eps
            up = loss_of(net64).item()
            w[i, j] -= 2 * eps
            down = loss_of(net64).item()
            w[i, j] += eps
        np.testing.assert_allclose(grads[2][0][i, j], (up - down) / (2 * eps), rtol=1e-4,
                                   atol=1e-5)
    A._CACHE.clear()


def test_an_interpreter_hands_out_a_copy_of_a_constant_output():
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.ir import dtypes as dt
    from fusetorch.runtime.runner import Runner
    x = make_node("input", [], {"shape": (2,), "dtype": dt.float32})
    c = make_node("constant", [], {"shape": (), "dtype": dt.float32, "value": 2.5})
    y = make_node("mul", [x, x], {})
    s = Runner(Graph([x], [y, c]), torch.randn(1)._be.impl, np)
    first = s.run([np.ones(2, np.float32)])
    first[1][...] = 7  # written into by its receiver
    again = s.run([np.ones(2, np.float32)])
    assert again[1] == 2.5 and again[1] is not first[1]


def test_a_backward_with_a_large_value_keeps_the_in_place_reuse():
    # scalars picked from a large leaf: the inputs are tiny, but the gradient is an index_put
    # chain into a 16384-element buffer, which the interpreter writes in place (its general
    # loop, which counts the holders of each array)
    x = torch.randn(128, 128, requires_grad=True)
    A._CACHE.clear()
    for _ in range(3):
        x.grad = None
        (x[1, 2] * 2 + x[3, 4] * 3 + x[5, 6]).backward()
    runner = next(hit[2] for hit in A._CACHE.values())
    assert runner.uses == 3 and not runner.interpreter._lean
    want = np.zeros((128, 128), np.float32)
    want[1, 2], want[3, 4], want[5, 6] = 2, 3, 1
    np.testing.assert_array_equal(x.grad.numpy(), want)
    A._CACHE.clear()


# ---------------------------------------------------------------- the payback rule
# (a fake clock: each interpreted run "takes" 1 s and each compiled one `compiled_s`, so no
# decision here depends on the machine's timing)

def _payback_steps(compiled_backward, monkeypatch, compiled_s: float, steps: int):
    from fusetorch.tracer import backward_programs as BP
    compiled_backward(True)
    monkeypatch.setattr(POLICY, "backward_payback", 3.0)
    clock = [0.0]
    monkeypatch.setattr(BP, "perf_counter", lambda: clock[0])
    real_interpreted = BP.BackwardRunner.interpreted

    def interpreted(self, *a, **k):
        clock[0] += 1.0
        return real_interpreted(self, *a, **k)
    monkeypatch.setattr(BP.BackwardRunner, "interpreted", interpreted)
    from fusetorch.runtime.program import Program
    real_run = Program.run

    def run(self, *a, **k):
        if self.prepared:
            clock[0] += compiled_s
        return real_run(self, *a, **k)
    monkeypatch.setattr(Program, "run", run)
    w = torch.randn(64, 128, dtype=torch.float64, requires_grad=True)
    grads = []
    for _ in range(steps):
        w.grad = None
        (w.tanh() * w).sum().backward()
        grads.append(w.grad.numpy().copy())
    (runner,) = [hit[2] for hit in A._CACHE.values()]
    a = w.detach().numpy()
    want = np.tanh(a) + a * (1 - np.tanh(a) ** 2)
    for g in grads:  # (interpreted or compiled, every use's gradient is right)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
    return runner, BP


def test_a_backward_builds_once_its_interpreted_time_pays_for_the_build(compiled_backward,
                                                                     monkeypatch):
    from fusetorch.tracer import backward_programs as BP
    monkeypatch.setattr(BP, "_BUILD_SECONDS_PER_NODE", 1.0)  # (a build "costs" 1 s a node)
    runner, _ = _payback_steps(compiled_backward, monkeypatch, 0.5, 2)
    nodes = len(runner.graph.nodes)
    assert not runner.programs and runner.spent == 1.0  # (use 1 is before backward_compile_at)
    assert "POLICY.backward_payback" in torch.compiler.explain()
    A._CACHE.clear()
    # uses 2 .. 3n+1 spend 3 x the estimate interpreted (1 s each): use 3n+2 builds, and its
    # run is the program's first (a warm-up, before the trial's alternation)
    runner, _ = _payback_steps(compiled_backward, monkeypatch, 0.5, 3 * nodes + 2)
    assert runner.spent == 3 * nodes and len(runner.programs) == 1
    assert list(runner.trials.values()) == [[1, float("inf"), float("inf")]]
    A._CACHE.clear()
    runner, _ = _payback_steps(compiled_backward, monkeypatch, 0.5, 3 * nodes + 1)
    assert runner.spent == 3 * nodes and not runner.programs


def test_a_program_faster_than_the_interpreter_keeps_its_layout(compiled_backward, monkeypatch):
    from fusetorch.tracer import backward_programs as BP
    monkeypatch.setattr(BP, "_BUILD_SECONDS_PER_NODE", 1e-3)
    runner, _ = _payback_steps(compiled_backward, monkeypatch, 0.5, 12)
    (program,) = runner.programs.values()
    assert program is not None and program.prepared and not runner.trials
    assert runner.why == "program"


def test_a_program_slower_than_the_interpreter_is_dropped(compiled_backward, monkeypatch):
    from fusetorch.tracer import backward_programs as BP
    monkeypatch.setattr(BP, "_BUILD_SECONDS_PER_NODE", 1e-3)
    runner, _ = _payback_steps(compiled_backward, monkeypatch, 2.0, 12)
    assert list(runner.programs.values()) == [None] and not runner.trials
    assert runner.why == "slower"
    line = [ln for ln in torch.compiler.explain().splitlines() if runner.label[0] in ln][-1]
    assert line.endswith("ran slower on this layout (2000000 us) than the interpreter "
                         "(1000000 us)"), line


def test_the_payback_setting_reads_the_environment():
    from fusetorch._policy import EagerCompilePolicy
    assert EagerCompilePolicy({}).backward_payback == 4.0
    assert EagerCompilePolicy({"FUSETORCH_BACKWARD_PAYBACK": "0"}).backward_payback == 0.0
    assert EagerCompilePolicy({"FUSETORCH_BACKWARD_PAYBACK": "2.5"}).backward_payback == 2.5
    for bad in ("x", "-1", "nan", ""):
        assert EagerCompilePolicy({"FUSETORCH_BACKWARD_PAYBACK": bad}).backward_payback == 4.0
