"""OneCycleLR, CyclicLR, CosineAnnealingWarmRestarts, SequentialLR, ChainedScheduler: lr (and
momentum / beta1) sequences against the schedules written out in numpy / math from PyTorch's
documentation, get_last_lr, state_dict round trips, argument errors.

Error messages were printed by PyTorch 2.13 for the same calls; the sequences of every
schedule below were also run through PyTorch 2.13 by hand and agreed exactly.
"""
import copy
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import nn, optim
from fusetorch.optim import lr_scheduler as L

N = 20


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scheduler-before-optimizer order warning
        yield


def make_opt(cls=optim.SGD, **kw):
    a, b = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(1))
    return cls([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, **kw)


def momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def run(opt, sched, n=N, epochs=None):
    """lrs and momenta after construction and after each of n steps: arrays [n+1, groups]."""
    lrs, moms = [sched.get_last_lr()], [[momentum(g) for g in opt.param_groups]]
    for i in range(n):
        opt.step()
        sched.step() if epochs is None else sched.step(epochs[i])
        lrs.append(sched.get_last_lr())
        moms.append([momentum(g) for g in opt.param_groups])
        assert [float(g["lr"]) for g in opt.param_groups] == lrs[-1]
    return np.array(lrs, dtype=float), np.array(moms, dtype=float)


# ---------------------------------------------------------------- OneCycleLR

def cos_anneal(start, end, pct):
    return end + (start - end) * (1 + np.cos(np.pi * pct)) / 2


def lin_anneal(start, end, pct):
    return start + (end - start) * pct


def ref_one_cycle(max_lr, total, pct_start=0.3, anneal=cos_anneal, div=25.0, final_div=1e4,
                  three_phase=False, base_m=0.85, max_m=0.95):
    init = max_lr / div
    low = init / final_div
    if three_phase:
        ends = [pct_start * total - 1, 2 * pct_start * total - 2, total - 1]
        lr_points = [init, max_lr, init, low]
        m_points = [max_m, base_m, max_m, max_m]
    else:
        ends = [pct_start * total - 1, total - 1]
        lr_points = [init, max_lr, low]
        m_points = [max_m, base_m, max_m]
    lrs, moms = [], []
    for k in range(total + 1):  # the last step (k = total) extrapolates the last phase
        i = next((j for j, e in enumerate(ends) if k <= e), len(ends) - 1)
        start = 0.0 if i == 0 else ends[i - 1]
        pct = (k - start) / (ends[i] - start)
        lrs.append(anneal(lr_points[i], lr_points[i + 1], pct))
        moms.append(anneal(m_points[i], m_points[i + 1], pct))
    return np.array(lrs), np.array(moms)


@pytest.mark.parametrize("kw,ref_kw", [
    (dict(), dict()),
    (dict(anneal_strategy="linear", pct_start=0.25, div_factor=10.0, final_div_factor=100.0),
     dict(anneal=lin_anneal, pct_start=0.25, div=10.0, final_div=100.0)),
    (dict(three_phase=True, pct_start=0.2, base_momentum=0.8, max_momentum=0.9),
     dict(three_phase=True, pct_start=0.2, base_m=0.8, max_m=0.9)),
    (dict(anneal_strategy="linear", three_phase=True), dict(anneal=lin_anneal,
                                                            three_phase=True)),
])
def test_one_cycle(kw, ref_kw):
    opt = make_opt(momentum=0.9)
    lrs, moms = run(opt, L.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=N, **kw))
    for g, max_lr in enumerate([1.0, 2.0]):
        want_lr, want_m = ref_one_cycle(max_lr, N, **ref_kw)
        np.testing.assert_allclose(lrs[:, g], want_lr, rtol=1e-12)
        np.testing.assert_allclose(moms[:, g], want_m, rtol=1e-12)
    div = kw.get("div_factor", 25.0)
    assert opt.param_groups[1]["max_lr"] == 2.0 and opt.param_groups[1]["initial_lr"] == 2 / div


def test_one_cycle_cycles_adams_beta1_and_counts_epochs():
    opt = make_opt(optim.Adam, betas=(0.5, 0.99))
    sched = L.OneCycleLR(opt, max_lr=1.0, epochs=4, steps_per_epoch=5)
    lrs, moms = run(opt, sched)
    want_lr, want_m = ref_one_cycle(1.0, 20)
    np.testing.assert_allclose(lrs[:, 0], want_lr, rtol=1e-12)
    np.testing.assert_allclose(moms[:, 0], want_m, rtol=1e-12)
    assert opt.param_groups[0]["betas"][1] == 0.99
    with pytest.raises(ValueError, match="Tried to step 21 times. The specified number of "
                                         "total steps is 20"):
        sched.step()


@pytest.mark.parametrize("make,message", [
    (lambda o: L.OneCycleLR(o, 1.0), "You must define either total_steps OR (epochs AND "
                                     "steps_per_epoch)"),
    (lambda o: L.OneCycleLR(o, 1.0, total_steps=0), "Expected positive integer total_steps, "
                                                    "but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=-1),
     "Expected positive integer steps_per_epoch, but got -1"),
    (lambda o: L.OneCycleLR(o, 1.0, total_steps=10, pct_start=1),
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda o: L.OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="exp"),
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda o: L.OneCycleLR(o, [1.0], total_steps=10),
     "max_lr must have the same length as optimizer.param_groups. max_lr has 1 values, "
     "param_groups has 2."),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, mode="square"), "mode is invalid and scale_fn is None"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=0), "Expected positive integer T_0, but "
                                                        "got 0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
     "Expected integer T_mult >= 1, but got 0"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2)], milestones=[3]),
     "Sequential Schedulers expects number of schedulers provided to be one more than the "
     "number of milestone points, but got number of schedulers 1 and the number of "
     "milestones to be equal to 1"),
    (lambda o: L.ChainedScheduler([]), "ChainedScheduler expects at least one scheduler to be "
                                       "chained, but got no scheduler."),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.ReduceLROnPlateau(o)], milestones=[3]),
     "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional "
     "kwargs to be specified when calling `step`, but got one at index 1 in the given "
     "schedulers sequence."),
])
def test_argument_errors(make, message):
    with pytest.raises(ValueError) as e:
        make(make_opt(momentum=0.9))
    assert str(e.value) == message


def test_cycle_momentum_needs_momentum():
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with "
                                         "`cycle_momentum` option enabled"):
        L.OneCycleLR(make_opt(optim.Adadelta), 1.0, total_steps=5)
    L.OneCycleLR(make_opt(optim.Adadelta), 1.0, total_steps=5, cycle_momentum=False)


# ---------------------------------------------------------------- CyclicLR

def ref_cyclic(k, base, peak, up, down, scale):
    """A triangle wave: position in the cycle, rising over `up` steps, falling over `down`;
    scale(cycle index from 1, step) multiplies its height."""
    pos = k % (up + down)
    height = pos / up if pos <= up else (up + down - pos) / down
    return base + (peak - base) * height * scale(k // (up + down) + 1, k)


@pytest.mark.parametrize("kw,scale", [
    (dict(step_size_up=4, step_size_down=3), lambda c, k: 1.0),
    (dict(step_size_up=3, mode="triangular2"), lambda c, k: 0.5 ** (c - 1)),
    (dict(step_size_up=3, mode="exp_range", gamma=0.9), lambda c, k: 0.9 ** k),
    (dict(step_size_up=2, step_size_down=5, scale_fn=lambda x: 1 / (x + 1),
          scale_mode="iterations"), lambda c, k: 1 / (k + 1)),
    (dict(step_size_up=2, scale_fn=lambda x: 1 / x), lambda c, k: 1 / c),
])
def test_cyclic(kw, scale):
    opt = make_opt(momentum=0.5)
    lrs, moms = run(opt, L.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.2], base_momentum=0.7,
                                    max_momentum=0.95, **kw))
    up = kw["step_size_up"]
    down = kw.get("step_size_down", up)
    for g, peak in enumerate([0.1, 0.2]):
        np.testing.assert_allclose(lrs[:, g], [ref_cyclic(k, 0.01, peak, up, down, scale)
                                               for k in range(N + 1)], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(moms[:, g], [0.95 - ref_cyclic(k, 0, 0.25, up, down, scale)
                                                for k in range(N + 1)], rtol=1e-12)


def test_cyclic_without_momentum_and_with_adam():
    opt = make_opt(optim.Adam)
    run(opt, L.CyclicLR(opt, 0.01, 0.1, step_size_up=2), n=3)
    assert opt.param_groups[0]["betas"][1] == 0.999
    opt = make_opt(momentum=0.3)
    lrs, moms = run(opt, L.CyclicLR(opt, 0.01, 0.1, step_size_up=2, cycle_momentum=False), n=4)
    assert (moms == 0.3).all()
    np.testing.assert_allclose(lrs[:, 0], [0.01, 0.055, 0.1, 0.055, 0.01])


def test_cyclic_state_dict_leaves_functions_out():
    opt = make_opt(momentum=0.9)
    sched = L.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2")
    run(opt, sched, n=5)
    sd = sched.state_dict()
    assert "_scale_fn_ref" not in sd and sd["_scale_fn_custom"] is None
    opt2 = make_opt(momentum=0.9)
    sched2 = L.CyclicLR(opt2, 0.01, 0.1, step_size_up=3)  # mode comes from the state
    sched2.load_state_dict(copy.deepcopy(sd))
    a, _ = run(opt, sched, n=8)
    b, _ = run(opt2, sched2, n=8)
    np.testing.assert_array_equal(a, b)

    class Scale:
        def __init__(self):
            self.k = 2.0

        def __call__(self, x):
            return 1 / (self.k * x)

    fn = Scale()
    sched = L.CyclicLR(make_opt(momentum=0.9), 0.01, 0.1, scale_fn=fn)
    fn.k = 5.0
    sd = sched.state_dict()
    assert sd["_scale_fn_custom"] == {"k": 5.0}
    fn2 = Scale()
    sched2 = L.CyclicLR(make_opt(momentum=0.9), 0.01, 0.1, scale_fn=fn2)
    sched2.load_state_dict(sd)
    assert fn2.k == 5.0


# ---------------------------------------------------------------- CosineAnnealingWarmRestarts

def ref_warm_restarts(epoch, base, T_0, T_mult, eta_min):
    T_i, t = T_0, float(epoch)
    while t >= T_i:
        t -= T_i
        T_i *= T_mult
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / T_i)) / 2


@pytest.mark.parametrize("T_0,T_mult,eta_min", [(4, 2, 0.001), (5, 1, 0.0), (3, 3, 0.01)])
def test_warm_restarts(T_0, T_mult, eta_min):
    opt = make_opt()
    lrs, _ = run(opt, L.CosineAnnealingWarmRestarts(opt, T_0=T_0, T_mult=T_mult,
                                                    eta_min=eta_min))
    for g, base in enumerate([0.1, 0.5]):
        np.testing.assert_allclose(lrs[:, g], [ref_warm_restarts(k, base, T_0, T_mult, eta_min)
                                               for k in range(N + 1)], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("T_mult", [1, 2])
def test_warm_restarts_fractional_epochs(T_mult):
    opt = make_opt()
    sched = L.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=T_mult, eta_min=0.002)
    epochs = [0.35 * i for i in range(1, N + 1)]  # e.g. epoch + batch / batches
    lrs, _ = run(opt, sched, epochs=epochs)
    np.testing.assert_allclose(lrs[1:, 1], [ref_warm_restarts(e, 0.5, 3, T_mult, 0.002)
                                            for e in epochs], rtol=1e-9)
    assert sched.last_epoch == math.floor(epochs[-1])
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


# ---------------------------------------------------------------- SequentialLR, ChainedScheduler

def test_sequential():
    opt = make_opt()
    sched = L.SequentialLR(opt, [L.ConstantLR(opt, factor=0.1, total_iters=4),
                                 L.ExponentialLR(opt, gamma=0.9), L.StepLR(opt, 3, gamma=0.5)],
                           milestones=[6, 12])
    lrs, _ = run(opt, sched)

    def factor(k):
        if k < 6:
            return 0.1 if k < 4 else 1.0
        if k < 12:
            return 0.9 ** (k - 6)
        return 0.5 ** ((k - 12) // 3)
    for g, base in enumerate([0.1, 0.5]):
        np.testing.assert_allclose(lrs[:, g], [base * factor(k) for k in range(N + 1)],
                                   rtol=1e-12)


def test_sequential_of_warm_up_and_cosine():
    opt = make_opt()
    sched = L.SequentialLR(opt, [L.LinearLR(opt, start_factor=0.2, total_iters=5),
                                 L.CosineAnnealingLR(opt, T_max=10, eta_min=0.0)],
                           milestones=[5])
    lrs, _ = run(opt, sched, n=15)
    want = [0.1 * (0.2 + 0.8 * k / 5) if k < 5 else
            0.1 * (1 + math.cos(math.pi * (k - 5) / 10)) / 2 for k in range(16)]
    np.testing.assert_allclose(lrs[:, 0], want, rtol=1e-10, atol=1e-15)


def test_chained():
    opt = make_opt()
    sched = L.ChainedScheduler([L.ConstantLR(opt, factor=0.1, total_iters=4),
                                L.ExponentialLR(opt, gamma=0.9)])
    lrs, _ = run(opt, sched)
    for g, base in enumerate([0.1, 0.5]):
        np.testing.assert_allclose(lrs[:, g], [base * 0.9 ** k * (0.1 if k < 4 else 1.0)
                                               for k in range(N + 1)], rtol=1e-12)
    assert sched.optimizer is opt


@pytest.mark.parametrize("which", ["sequential", "chained", "one_cycle", "warm"])
def test_state_dict_round_trip(which):
    def build(opt):
        if which == "sequential":
            return L.SequentialLR(opt, [L.ConstantLR(opt, factor=0.5, total_iters=3),
                                        L.ExponentialLR(opt, gamma=0.8)], milestones=[5])
        if which == "chained":
            return L.ChainedScheduler([L.LinearLR(opt, 0.25, total_iters=6),
                                       L.StepLR(opt, 4, 0.3)])
        if which == "one_cycle":
            return L.OneCycleLR(opt, 1.0, total_steps=N)
        return L.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    opt = make_opt(momentum=0.9)
    sched = build(opt)
    run(opt, sched, n=7)
    sd, opt_sd = sched.state_dict(), opt.state_dict()
    assert "optimizer" not in sd
    if which in ("sequential", "chained"):
        assert len(sd["_schedulers"]) == 2 and all("optimizer" not in s
                                                    for s in sd["_schedulers"])
    opt2 = make_opt(momentum=0.9)
    sched2 = build(opt2)
    opt2.load_state_dict(copy.deepcopy(opt_sd))
    sched2.load_state_dict(copy.deepcopy(sd))
    assert sched2.get_last_lr() == sched.get_last_lr()
    a, _ = run(opt, sched, n=10)
    b, _ = run(opt2, sched2, n=10)
    np.testing.assert_array_equal(a, b)


def test_exported_names():
    for name in ("OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts", "SequentialLR",
                 "ChainedScheduler"):
        assert name in L.__all__ and issubclass(getattr(L, name), L.LRScheduler)
