"""torch.optim.swa_utils: averaged parameters against numpy means and EMAs, update_bn's
statistics against numpy, SWALR's schedule from its closed form, and PyTorch's errors (the
messages and the schedule were checked by hand with PyTorch 2.13)."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.optim.swa_utils import (SWALR, AveragedModel, get_ema_avg_fn,
                                       get_ema_multi_avg_fn, update_bn)

W = [np.array([[1.0, -2.0], [0.5, 3.0]]), np.array([[0.0, 1.0], [2.5, -1.0]]),
     np.array([[4.0, 0.0], [-0.5, 1.0]])]


def _model(k: int) -> nn.Module:
    m = nn.Sequential(nn.Linear(2, 2, bias=False), nn.BatchNorm1d(2)).double()
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor(W[k]))
        m[1].running_mean.fill_(float(k))
    return m


def test_averaged_model_is_the_running_mean_and_copies_buffers():
    swa = AveragedModel(_model(0))
    for k in range(3):
        swa.update_parameters(_model(k))
    assert swa.n_averaged.item() == 3 and swa.n_averaged.dtype == torch.int64
    np.testing.assert_allclose(swa.module[0].weight.detach().numpy(), np.mean(W, axis=0),
                               rtol=1e-12)
    np.testing.assert_allclose(swa.module[1].running_mean.numpy(), [2.0, 2.0])  # the last's
    assert [n for n, _ in swa.named_buffers()][0] == "n_averaged"
    out = swa(torch.tensor(np.ones((3, 2))))  # forward is the copy's
    assert out.shape == (3, 2)


@pytest.mark.parametrize("multi", [True, False])
def test_ema_of_parameters_and_of_buffers(multi):
    decay = 0.75
    fn = {"multi_avg_fn": get_ema_multi_avg_fn(decay)} if multi else \
        {"avg_fn": get_ema_avg_fn(decay)}
    ema = AveragedModel(_model(0), use_buffers=True, **fn)
    w, rm = None, None
    for k in range(3):
        ema.update_parameters(_model(k))
        w = W[k] if w is None else decay * w + (1 - decay) * W[k]
        rm = float(k) if rm is None else decay * rm + (1 - decay) * k
    np.testing.assert_allclose(ema.module[0].weight.detach().numpy(), w, rtol=1e-12)
    np.testing.assert_allclose(ema.module[1].running_mean.numpy(), [rm, rm], rtol=1e-12)
    # an integer buffer (num_batches_tracked) is averaged and truncated, as PyTorch's
    assert ema.module[1].num_batches_tracked.dtype == torch.int64


def test_update_bn_recomputes_statistics_over_the_loader():
    rng = np.random.RandomState(0)
    batches = [rng.randn(4, 2) * 3 + 1 for _ in range(3)]
    m = _model(1)
    m[1].momentum = 0.3
    m.eval()
    update_bn([(torch.tensor(b), 0) for b in batches], m)  # (input, target) pairs
    assert not m.training and m[1].momentum == 0.3
    h = [b @ W[1].T for b in batches]
    np.testing.assert_allclose(m[1].running_mean.numpy(), np.mean([x.mean(0) for x in h], 0),
                               rtol=1e-12)
    np.testing.assert_allclose(m[1].running_var.numpy(),
                               np.mean([x.var(0, ddof=1) for x in h], 0), rtol=1e-12)
    update_bn([], nn.Linear(2, 2))  # nothing to update


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_anneals_to_swa_lr_then_holds(strategy):
    p = nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=0.1)
    sched = SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy=strategy)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    anneal = (lambda t: (1 - np.cos(np.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    expect = [0.05 * anneal(min(1, k / 3)) + 0.1 * (1 - anneal(min(1, k / 3)))
              for k in range(6)]
    np.testing.assert_allclose(lrs, expect, rtol=1e-12)
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
    sched.load_state_dict(state)
    assert sched.get_last_lr() == [lrs[-1]]


def test_errors_are_pytorchs():
    opt = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got exp"):
        SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        SWALR(opt, 0.05, anneal_epochs=-1)
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a "
                                         r"value in \[0,1\] range."):
        get_ema_multi_avg_fn(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be "
                                             "provided"):
        AveragedModel(nn.Linear(1, 1), avg_fn=get_ema_avg_fn(), multi_avg_fn=get_ema_avg_fn())
    assert torch.optim.swa_utils.AveragedModel is AveragedModel
