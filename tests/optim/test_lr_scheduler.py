"""Learning-rate schedulers: values over epochs against closed forms and against the values
PyTorch 2.13 printed for the same schedules (its chainable recursions round differently from
the closed forms, e.g. CosineAnnealingLR's 0.10000000000000006), ReduceLROnPlateau on scripted
metric sequences, state dicts, warnings and errors."""
import math
import pickle
import warnings

import pytest

import fusetorch as torch
from fusetorch import nn, optim
from fusetorch.optim import lr_scheduler as L


def sgd(lr=0.1, groups=None):
    if groups is None:
        return optim.SGD([nn.Parameter(torch.ones(2))], lr=lr)
    return optim.SGD([{"params": [nn.Parameter(torch.ones(2))], **g} for g in groups], lr=lr)


def run(opt, sched, n):
    """The canonical loop: record the lr in use, optimizer.step(), scheduler.step()."""
    out = []
    for _ in range(n):
        out.append(sched.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == out[-1]
        opt.step()
        sched.step()
    return out


def test_module_and_names():
    import fusetorch.optim.lr_scheduler as mod
    assert mod is L
    for name in ("LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                 "LambdaLR", "ReduceLROnPlateau", "MultiplicativeLR", "ConstantLR", "LinearLR",
                 "PolynomialLR"):
        assert issubclass(getattr(L, name), L.LRScheduler)


# ---------------------------------------------------------------- values over epochs

def test_step_lr():
    opt = sgd(0.1)
    got = run(opt, L.StepLR(opt, 3, gamma=0.5), 12)
    assert got == [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125]
    assert got == [0.1 * 0.5 ** (e // 3) for e in range(12)]


def test_multistep_lr_with_a_repeated_milestone():
    opt = sgd(0.1)
    got = run(opt, L.MultiStepLR(opt, [2, 5, 5, 9], gamma=0.1), 12)
    # printed by PyTorch 2.13
    assert got == [0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002,
                   0.00010000000000000005, 0.00010000000000000005, 0.00010000000000000005,
                   0.00010000000000000005, 1.0000000000000006e-05, 1.0000000000000006e-05,
                   1.0000000000000006e-05]


def test_exponential_lr():
    opt = sgd(0.1)
    got = run(opt, L.ExponentialLR(opt, 0.9), 12)
    for e, lr in enumerate(got):
        assert lr == pytest.approx(0.1 * 0.9 ** e, rel=1e-14)
    assert got[11] == 0.03138105960900001  # PyTorch's value (repeated multiplication)


COSINE_PYTORCH = [0.1, 0.09140576474687263, 0.06890576474687263, 0.04109423525312736,
                  0.018594235253127367, 0.01, 0.018594235253127367, 0.04109423525312739,
                  0.06890576474687267, 0.09140576474687269, 0.10000000000000006,
                  0.09140576474687272, 0.06890576474687268, 0.0410942352531274,
                  0.01859423525312738, 0.01]


def test_cosine_annealing_lr_recursive_values():
    opt = sgd(0.1)
    got = run(opt, L.CosineAnnealingLR(opt, 5, eta_min=0.01), 16)
    assert got == COSINE_PYTORCH
    for e, lr in enumerate(got):  # the closed form, to rounding
        assert lr == pytest.approx(0.01 + 0.09 * (1 + math.cos(math.pi * e / 5)) / 2,
                                   rel=1e-12)


def test_cosine_annealing_two_groups():
    opt = sgd(0.1, groups=[{}, {"lr": 0.5}])
    s = L.CosineAnnealingLR(opt, T_max=3, eta_min=0.001)
    got = []
    for _ in range(10):
        got.append(s.get_last_lr())
        opt.step()
        s.step()
    assert got == [[0.1, 0.5], [0.07525000000000001, 0.37525],
                   [0.025750000000000016, 0.12575000000000003], [0.001, 0.001],
                   [0.025749999999999995, 0.12574999999999997],
                   [0.07525000000000005, 0.37525000000000025],
                   [0.10000000000000006, 0.5000000000000003],
                   [0.07525000000000007, 0.37525000000000036],
                   [0.025750000000000054, 0.12575000000000028], [0.001, 0.001]]


def test_lambda_lr_per_group():
    opt = sgd(0.1, groups=[{}, {"lr": 0.5}])
    s = L.LambdaLR(opt, [lambda e: 0.5 ** e, lambda e: e + 1])
    got = []
    for _ in range(4):
        got.append(s.get_last_lr())
        opt.step()
        s.step()
    assert got == [[0.1, 0.5], [0.05, 1.0], [0.025, 1.5], [0.0125, 2.0]]
    assert s.base_lrs == [0.1, 0.5]
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.5]


def test_other_schedulers_printed_by_pytorch():
    cases = [
        (lambda o: L.LambdaLR(o, lambda e: 1 / (e + 1)),
         [0.1, 0.05, 0.03333333333333333, 0.025, 0.020000000000000004, 0.016666666666666666]),
        (lambda o: L.MultiplicativeLR(o, lambda e: 0.95),
         [0.1, 0.095, 0.09025, 0.0857375, 0.08145062499999998, 0.07737809374999999]),
        (lambda o: L.ConstantLR(o, factor=0.5, total_iters=3),
         [0.05, 0.05, 0.05, 0.1, 0.1, 0.1]),
        (lambda o: L.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4),
         [0.025, 0.043750000000000004, 0.06250000000000001, 0.08125000000000002,
          0.10000000000000002, 0.10000000000000002]),
        (lambda o: L.PolynomialLR(o, total_iters=5, power=2.0),
         [0.1, 0.06400000000000002, 0.036000000000000004, 0.016000000000000004,
          0.003999999999999999, 0.0]),
    ]
    for make, want in cases:
        opt = sgd(0.1)
        assert run(opt, make(opt), 6) == want


def test_schedulers_chain_on_one_optimizer():
    opt = sgd(1.0)
    a, b = L.ExponentialLR(opt, 0.9), L.StepLR(opt, 2, 0.5)
    got = []
    for _ in range(6):
        got.append(opt.param_groups[0]["lr"])
        opt.step()
        a.step()
        b.step()
    assert got == [1.0, 0.9, 0.405, 0.36450000000000005, 0.16402500000000003,
                   0.14762250000000005]


# ---------------------------------------------------------------- state, resuming, warnings

def test_state_dict_and_resume():
    opt = sgd(0.1)
    s = L.StepLR(opt, 2)
    assert s.state_dict() == {"step_size": 2, "gamma": 0.1, "base_lrs": [0.1], "last_epoch": 0,
                              "_step_count": 1, "_is_initial": False,
                              "_get_lr_called_within_step": False, "_last_lr": [0.1]}
    ref_opt = sgd(1.0)
    ref = L.CosineAnnealingLR(ref_opt, 7, eta_min=0.1)
    want = run(ref_opt, ref, 12)

    opt = sgd(1.0)
    s = L.CosineAnnealingLR(opt, 7, eta_min=0.1)
    first = run(opt, s, 5)
    saved_opt = pickle.loads(pickle.dumps(opt.state_dict()))
    saved = pickle.loads(pickle.dumps(s.state_dict()))
    assert "optimizer" not in saved and saved["last_epoch"] == 5

    opt2 = sgd(1.0)
    s2 = L.CosineAnnealingLR(opt2, 7, eta_min=0.1)
    opt2.load_state_dict(saved_opt)
    s2.load_state_dict(saved)
    assert first + run(opt2, s2, 7) == want


def test_resume_needs_initial_lr():
    opt = sgd(0.1)
    with pytest.raises(KeyError) as info:
        L.StepLR(opt, 3, last_epoch=4)
    assert info.value.args[0] == (
        "param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with "
        "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training "
        "from a checkpoint but haven't properly loaded the optimizer state\n2. You're using "
        "last_epoch >= 0 for a fresh training run (not recommended)")
    opt.param_groups[0]["initial_lr"] = 0.1
    s = L.CosineAnnealingLR(opt, 10, last_epoch=4)
    assert s.last_epoch == 5 and s.get_last_lr() == [0.1]
    opt.step()
    s.step()
    assert s.get_last_lr() == [0.06909830056250527]  # PyTorch's (recursive from 0.1)


def test_lambda_state_dict_keeps_callable_objects():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, e):
            return self.k ** e

    opt = sgd(0.1, groups=[{}, {}])
    s = L.LambdaLR(opt, [Scale(0.5), lambda e: 1.0])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"k": 0.5}, None]
    s2 = L.LambdaLR(sgd(0.1, groups=[{}, {}]), [Scale(0.9), lambda e: 2.0])
    s2.load_state_dict(sd)
    assert s2.lr_lambdas[0].k == 0.5


def test_step_with_epoch_uses_the_closed_form_and_warns():
    opt = sgd(0.1)
    s = L.StepLR(opt, 3, 0.5)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s.step(7)
    assert opt.param_groups[0]["lr"] == 0.025 and s.last_epoch == 7
    messages = [str(x.message) for x in w]
    assert messages[0].startswith("Detected call of `lr_scheduler.step()` before "
                                  "`optimizer.step()`.")
    assert messages[1].startswith("The epoch parameter in `scheduler.step()` was not "
                                  "necessary and is being deprecated")


def test_order_warning_only_when_the_scheduler_steps_first():
    opt = sgd(0.1)
    s = L.ExponentialLR(opt, 0.5)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        opt.step()
        s.step()
        s.get_last_lr()
    assert w == []
    opt2 = sgd(0.1)
    s2 = L.ExponentialLR(opt2, 0.5)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                      r"`optimizer.step\(\)`"):
        s2.step()
    with pytest.warns(UserWarning, match="To get the last learning rate computed by the "
                      r"scheduler, please use `get_last_lr\(\)`."):
        s2.get_lr()


def test_errors():
    with pytest.raises(TypeError, match="NoneType is not an Optimizer"):
        L.StepLR(None, 3)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        L.LambdaLR(sgd(0.1, groups=[{}, {}]), [lambda e: 1])
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be "
                       "between 0 and 1."):
        L.ConstantLR(sgd(), factor=2.0)


# ---------------------------------------------------------------- ReduceLROnPlateau

def test_reduce_on_plateau_min_rel_with_cooldown():
    opt = sgd(1.0)
    s = L.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.1)
    seq = [10, 9, 9.5, 9.2, 9.1, 9.0, 8.0, 8.5, 8.6, 8.7, 8.8, 8.9, 9, 9, 9, 9, 9]
    got = []
    for m in seq:
        s.step(m)
        got.append((opt.param_groups[0]["lr"], s.num_bad_epochs, s.cooldown_counter, s.best))
    # printed by PyTorch 2.13
    assert got == [(1.0, 0, 0, 10.0), (1.0, 0, 0, 9.0), (1.0, 1, 0, 9.0), (1.0, 2, 0, 9.0),
                   (0.5, 0, 1, 9.0), (0.5, 0, 0, 9.0), (0.5, 0, 0, 8.0), (0.5, 1, 0, 8.0),
                   (0.5, 2, 0, 8.0), (0.25, 0, 1, 8.0), (0.25, 0, 0, 8.0), (0.25, 1, 0, 8.0),
                   (0.25, 2, 0, 8.0), (0.125, 0, 1, 8.0), (0.125, 0, 0, 8.0),
                   (0.125, 1, 0, 8.0), (0.125, 2, 0, 8.0)]
    for m in [9, 9, 9, 9]:
        s.step(m)
    assert opt.param_groups[0]["lr"] == 0.1  # floored at min_lr
    assert s.get_last_lr() == [0.1] and s.last_epoch == 21


def test_reduce_on_plateau_max_abs_per_group_min_lr_and_eps():
    opt = sgd(1.0, groups=[{}, {"lr": 0.05}])
    s = L.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=1, threshold=0.1,
                            threshold_mode="abs", min_lr=[0.2, 0.0], eps=0.01)
    seq = [1.0, 1.05, 1.2, 1.25, 1.28, 1.29, 1.3, 1.3, 1.3, 1.3, 1.3, 1.3]
    got = []
    for m in seq:
        s.step(torch.tensor(m, dtype=torch.float64))  # metrics may be 0-d tensors
        got.append((tuple(g["lr"] for g in opt.param_groups), s.num_bad_epochs, s.best))
    # printed by PyTorch 2.13: the second group stops at 0.0125 because halving it would
    # change it by less than eps
    assert got == [((1.0, 0.05), 0, 1.0), ((1.0, 0.05), 1, 1.0), ((1.0, 0.05), 0, 1.2),
                   ((1.0, 0.05), 1, 1.2), ((0.5, 0.025), 0, 1.2), ((0.5, 0.025), 1, 1.2),
                   ((0.25, 0.0125), 0, 1.2), ((0.25, 0.0125), 1, 1.2), ((0.2, 0.0125), 0, 1.2),
                   ((0.2, 0.0125), 1, 1.2), ((0.2, 0.0125), 0, 1.2), ((0.2, 0.0125), 1, 1.2)]


def test_reduce_on_plateau_state_dict_and_errors():
    opt = sgd(1.0)
    s = L.ReduceLROnPlateau(opt)
    assert s.get_last_lr() == [1.0]
    assert s.state_dict() == {"factor": 0.1, "default_min_lr": 0, "min_lrs": [0],
                              "patience": 10, "cooldown": 0, "eps": 1e-08, "last_epoch": 0,
                              "_last_lr": [1.0], "mode_worse": math.inf, "mode": "min",
                              "threshold": 0.0001, "threshold_mode": "rel", "best": math.inf,
                              "cooldown_counter": 0, "num_bad_epochs": 0}
    for m in [5.0] + [6.0] * 11:
        s.step(m)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    s2 = L.ReduceLROnPlateau(sgd(1.0), mode="max")
    s2.load_state_dict(s.state_dict())
    assert s2.mode == "min" and s2.best == 5.0 and s2.mode_worse == math.inf
    two = sgd(1.0, groups=[{}, {}])
    for make, msg in [(lambda: L.ReduceLROnPlateau(opt, factor=1.0), "Factor should be < 1.0."),
                      (lambda: L.ReduceLROnPlateau(opt, mode="avg"), "mode avg is unknown!"),
                      (lambda: L.ReduceLROnPlateau(opt, threshold_mode="x"),
                       "threshold mode x is unknown!"),
                      (lambda: L.ReduceLROnPlateau(two, min_lr=[0.1]),
                       "expected 2 min_lrs, got 1")]:
        with pytest.raises(ValueError) as info:
            make()
        assert str(info.value) == msg


def test_reduce_on_plateau_relative_threshold():
    opt = sgd(1.0)
    s = L.ReduceLROnPlateau(opt, factor=0.5, patience=1, threshold=0.1)
    got = []
    for m in [10, 9.5, 9.1, 8.95, 8.9, 8.0, 7.5]:
        s.step(m)
        got.append((opt.param_groups[0]["lr"], s.num_bad_epochs, s.best))
    # printed by PyTorch 2.13: 9.5 and 9.1 are not 10% better than 10
    assert got == [(1.0, 0, 10.0), (1.0, 1, 10.0), (0.5, 0, 10.0), (0.5, 0, 8.95),
                   (0.5, 1, 8.95), (0.5, 0, 8.0), (0.5, 1, 8.0)]


@pytest.mark.parametrize("make,want", [
    # resumed at last_epoch=2 with initial_lr 0.6 and current lr 0.3; printed by PyTorch 2.13
    (lambda o: L.LinearLR(o, start_factor=0.5, total_iters=4, last_epoch=2),
     [0.3, 0.3428571428571428, 0.3428571428571428, 0.3428571428571428]),
    (lambda o: L.ExponentialLR(o, gamma=0.5, last_epoch=2), [0.3, 0.15, 0.075, 0.0375]),
    (lambda o: L.PolynomialLR(o, total_iters=4, last_epoch=2), [0.3, 0.0, 0.0, 0.0]),
    (lambda o: L.MultiplicativeLR(o, lambda e: 0.5, last_epoch=2), [0.3, 0.15, 0.075, 0.0375]),
    (lambda o: L.StepLR(o, step_size=2, last_epoch=2), [0.3, 0.03, 0.03, 0.003])])
def test_resumed_schedulers_keep_the_current_lr_at_construction(make, want):
    opt = sgd(0.3)
    opt.param_groups[0]["initial_lr"] = 0.6
    s = make(opt)
    got = [s.get_last_lr()[0]]
    for _ in range(3):
        opt.step()
        s.step()
        got.append(s.get_last_lr()[0])
    assert got == want and s.last_epoch == 6
