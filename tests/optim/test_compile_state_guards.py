"""What `fusetorch.compile` guards of optimizers' Python-side state (hyperparameters, which state
entries exist): only the optimizers the compiled function's trace stepped, which the optimizer
reports to the recording itself (`Recorder.uses_python_state`); no registry of every optimizer.
Compiled steps are checked against the same step run eagerly on a copy."""
import copy

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.tracer.trace import trace


def _pair(opt_cls=torch.optim.SGD, **kw):
    torch.manual_seed(0)
    m1 = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2))
    m2 = copy.deepcopy(m1)
    return (m1, opt_cls(m1.parameters(), **kw)), (m2, opt_cls(m2.parameters(), **kw))


def _same(m1, m2):
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def _step_of(model, opt, before=None):
    # (its traces are counted by `retrace_count`: a probe such as `traced.append(1)` would be
    # Python a replay skips, so every call would trace again)
    def step(x, y):
        if before is not None:
            before(opt)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def test_an_optimizer_the_function_does_not_use_leaves_its_guards_alone():
    (m1, o1), (m2, o2) = _pair(lr=0.1)
    torch.manual_seed(1)
    other = nn.Linear(3, 3)
    bystander = torch.optim.Adam(other.parameters(), lr=0.1)
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    eager, compiled = _step_of(m1, o1), torch.compile(_step_of(m2, o2))
    for i in range(6):
        eager(x, y)
        compiled(x, y)
        _same(m1, m2)
        # the bystander changes everything it keeps in Python: a new lr, new state entries
        # (its first step), a new step count
        bystander.param_groups[0]["lr"] *= 0.5
        other(torch.randn(2, 3)).sum().backward()
        bystander.step()
    # first call: an optimizer new to the function (its state before unknown): traced again;
    # second call: settled and compiled; every later call a replay
    assert compiled.retrace_count == 1
    assert compiled.kernels()


def test_the_optimizer_it_steps_is_guarded():
    (m1, o1), (m2, o2) = _pair(lr=0.1, momentum=0.9)
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    eager, compiled = _step_of(m1, o1), torch.compile(_step_of(m2, o2))
    for i in range(5):
        eager(x, y)
        compiled(x, y)
        _same(m1, m2)
        if i == 2:
            for o in (o1, o2):
                o.param_groups[0]["lr"] = 0.02  # seen by the guard: traced again
    n = compiled.retrace_count
    assert n >= 2
    for _ in range(2):
        eager(x, y)
        compiled(x, y)
        _same(m1, m2)
    assert compiled.retrace_count == n  # settled again: replays


def test_a_step_that_changes_its_own_lr_before_stepping_runs_right():
    # the change happens inside the traced call, before the optimizer reports itself: only the
    # function's memory of which optimizers it uses catches it
    def decay(opt):
        opt.param_groups[0]["lr"] *= 0.9
    (m1, o1), (m2, o2) = _pair(lr=0.1)
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    for m in (m1, m2):  # gradients exist before the first call, so that its guards would
        F.mse_loss(m(x), y).backward()  # let the second call replay it
    eager = _step_of(m1, o1, before=decay)
    compiled = torch.compile(_step_of(m2, o2, before=decay))
    for _ in range(6):
        eager(x, y)
        compiled(x, y)
        _same(m1, m2)
    assert o1.param_groups[0]["lr"] == o2.param_groups[0]["lr"]


def test_a_stepping_optimizer_reports_itself_to_the_recording():
    p = nn.Parameter(torch.randn(3))
    used = torch.optim.SGD([p], lr=0.1)
    unused = torch.optim.SGD([nn.Parameter(torch.randn(3))], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(used, step_size=1)
    p.grad = torch.ones(3)
    with trace(p) as rec:
        used.step()
    assert list(rec.stateful.values()) == [used]
    with trace(p) as rec:
        sched.step()  # a scheduler writes its optimizer's lr
    assert list(rec.stateful.values()) == [used]
    assert unused._python_state() != used._python_state()
