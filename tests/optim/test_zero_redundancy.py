"""ZeroRedundancyOptimizer in a single process (no process group): the wrapped optimizer
exactly; its state_dict needs consolidate_state_dict first, as PyTorch's does. Sharding over
MPI ranks is checked in tests/distributed (mpi_checks.zero_redundancy_matches_plain_optimizer)."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.distributed.optim import ZeroRedundancyOptimizer


def _pair(seed=0):
    torch.manual_seed(seed)
    a = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    b = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    b.load_state_dict(a.state_dict())
    return a, b


def _train(models_opts, x, steps, sched=()):
    for _ in range(steps):
        for model, opt in models_opts:
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        for s in sched:
            s.step()


@pytest.mark.parametrize("cls,kw", [(torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                                    (torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1})])
def test_single_process_is_the_wrapped_optimizer(cls, kw):
    a, b = _pair()
    plain = cls(a.parameters(), **kw)
    zero = ZeroRedundancyOptimizer(b.parameters(), optimizer_class=cls, **kw)
    x = torch.randn(5, 3)
    sched = [torch.optim.lr_scheduler.StepLR(o, 1, gamma=0.5) for o in (plain, zero)]
    _train([(a, plain), (b, zero)], x, 4, sched)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
    assert zero.param_groups[0]["lr"] == plain.param_groups[0]["lr"] == kw["lr"] / 16
    with pytest.raises(RuntimeError, match="Optimizer state has not been consolidated on this "
                                           "rank. Please call `consolidate_state_dict"):
        zero.state_dict()
    zero.consolidate_state_dict()
    got, want = zero.state_dict(), plain.state_dict()
    assert got["param_groups"] == want["param_groups"]
    assert got["state"].keys() == want["state"].keys()
    for i in want["state"]:
        for k, v in want["state"][i].items():
            np.testing.assert_array_equal(np.asarray(got["state"][i][k]), np.asarray(v))


def test_load_state_dict_and_add_param_group():
    a, b = _pair()
    plain = torch.optim.Adam(a.parameters(), lr=0.01)
    zero = ZeroRedundancyOptimizer(b.parameters(), torch.optim.Adam, lr=0.01)
    x = torch.randn(5, 3)
    _train([(a, plain)], x, 3)
    b.load_state_dict(a.state_dict())
    zero.load_state_dict(plain.state_dict())
    _train([(a, plain), (b, zero)], x, 2)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
    extra = torch.nn.Parameter(torch.ones(2))
    zero.add_param_group({"params": [extra], "lr": 0.5})
    extra.grad = torch.ones(2)
    zero.step()
    assert len(zero.param_groups) == 2 and extra.detach().tolist() != [1.0, 1.0]


def test_overlap_with_ddp_is_refused():
    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer(torch.nn.Linear(2, 2).parameters(), torch.optim.SGD,
                                overlap_with_ddp=True, lr=0.1)
