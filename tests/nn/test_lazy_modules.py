"""Lazy layers (PyTorch's behaviour, checked by hand against PyTorch 2.13): placeholders until
the first forward, materialized in place so optimizers made before it keep working, then the
regular class; shapes from a checkpoint; PyTorch's errors for a placeholder used too early."""
import copy
import math

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.nn.modules.lazy import LazyModuleMixin
from fusetorch.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy


def test_a_placeholder_refuses_use_as_pytorch_does():
    p = UninitializedParameter()
    assert isinstance(p, nn.Parameter) and p.requires_grad and is_lazy(p)
    assert repr(p) == "<UninitializedParameter>" and str(p) == repr(p)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        p.shape
    for use in (lambda: p + 1, lambda: p.sum(), lambda: p.numel(), lambda: -p, lambda: p[0]):
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            use()
    p.materialize((3, 4))
    assert type(p) is nn.Parameter and p.shape == (3, 4) and not is_lazy(p)
    b = UninitializedBuffer(dtype=torch.float64)
    b.materialize(5)
    assert type(b) is torch.Tensor and b.shape == (5,) and b.dtype == torch.float64


def test_lazy_linear_infers_in_features_and_an_earlier_optimizer_still_steps():
    torch.manual_seed(0)
    m = nn.LazyLinear(3)
    assert isinstance(m, LazyModuleMixin) and m.has_uninitialized_params()
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    w = m.weight
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    x = torch.ones(2, 5)
    y = m(x)
    assert type(m) is nn.Linear and m.in_features == 5 and y.shape == (2, 3)
    assert m.weight is w and w.shape == (3, 5)
    bound = 1 / math.sqrt(5)  # Linear's default init, run once the shape is known
    assert float(w.abs().max()) <= bound
    before = w.detach().clone()
    y.sum().backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), before.numpy() - 0.5 * 2.0, rtol=1e-6)


def test_lazy_layers_in_a_sequential_train():
    torch.manual_seed(1)
    model = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                          nn.Flatten(), nn.LazyLinear(2))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    x = torch.randn(3, 2, 5, 5)
    model(x).pow(2).mean().backward()
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten",
                                                 "Linear"]
    assert model[0].weight.shape == (4, 2, 3, 3) and model[4].weight.shape == (2, 100)
    before = [(p.detach().clone().numpy(), p.grad.numpy().copy()) for p in model.parameters()]
    opt.step()
    for p, (old, g) in zip(model.parameters(), before):
        # Adam's first step moves each element by lr * g / (|g| + eps): about lr * sign(g)
        moved = p.detach().numpy() - old
        big = np.abs(g) > 1e-3
        np.testing.assert_allclose(moved[big], -0.1 * np.sign(g[big]), rtol=1e-2)


def test_lazy_convolutions_read_channels_and_check_groups():
    c = nn.LazyConv1d(4, 3)
    c(torch.ones(2, 5))  # unbatched: channels are dim 0
    assert type(c) is nn.Conv1d and c.weight.shape == (4, 2, 3)
    t = nn.LazyConvTranspose3d(4, 2, stride=2, groups=2)
    y = t(torch.ones(1, 2, 3, 3, 3))
    assert type(t) is nn.ConvTranspose3d and t.weight.shape == (2, 2, 2, 2, 2)
    assert y.shape == (1, 4, 6, 6, 6)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           "to LazyConv2d"):
        nn.LazyConv2d(4, 3)(torch.ones(5, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(torch.ones(1, 3, 5, 5))


def test_lazy_norms_materialize_their_statistics():
    b = nn.LazyBatchNorm1d()
    assert is_lazy(b.running_mean) and b.num_batches_tracked.item() == 0
    b(torch.tensor([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]]))
    assert type(b) is nn.BatchNorm1d and b.num_features == 3
    np.testing.assert_allclose(b.running_mean.numpy(), [0.2, 0.3, 0.4], rtol=1e-6)
    i = nn.LazyInstanceNorm2d()  # PyTorch's lazy defaults: affine and running stats on
    i(torch.randn(2, 3, 4, 4))
    assert type(i) is nn.InstanceNorm2d and i.weight.shape == (3,)
    assert i.running_mean.shape == (3,)
    j = nn.LazyInstanceNorm1d(affine=False, track_running_stats=False)
    with pytest.warns(UserWarning, match="does not match num_features"):
        j(torch.randn(2, 3, 4))  # nothing to materialize: num_features stays 0, as in PyTorch
    assert type(j) is nn.InstanceNorm1d and j.weight is None and j.num_features == 0


def test_state_dicts_hold_placeholders_and_a_checkpoint_gives_the_shapes():
    sd = nn.LazyLinear(3).state_dict()
    assert all(is_lazy(v) for v in sd.values()) and list(sd) == ["weight", "bias"]
    trained = nn.Linear(5, 3)
    m = nn.LazyLinear(3)
    m.load_state_dict(trained.state_dict())
    assert type(m) is nn.LazyLinear  # as in PyTorch: the class changes at the next forward
    np.testing.assert_array_equal(m.weight.detach().numpy(), trained.weight.detach().numpy())
    x = torch.randn(2, 5)
    np.testing.assert_allclose(m(x).detach().numpy(), trained(x).detach().numpy())
    assert type(m) is nn.Linear
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias"'):
        nn.LazyLinear(3).load_state_dict({"weight": torch.ones(3, 2)})
    bn = nn.LazyBatchNorm3d()
    bn.load_state_dict(nn.BatchNorm3d(4).state_dict())
    assert bn.running_var.shape == (4,) and bn.weight.shape == (4,)


def test_conversions_before_the_first_forward_set_the_dtype_and_copies_stay_lazy():
    m = nn.LazyLinear(2).double()
    m(torch.ones(1, 3, dtype=torch.float64))
    assert m.weight.dtype == torch.float64
    c = copy.deepcopy(nn.LazyLinear(2))
    assert is_lazy(c.weight) and c.weight.requires_grad


def test_compile_of_a_lazy_model_matches_eager():
    torch.manual_seed(2)
    model = nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.LazyLinear(1))
    f = torch.compile(model)
    x = torch.randn(3, 6)
    first = f(x)
    assert type(model[0]) is nn.Linear
    np.testing.assert_allclose(f(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(first.detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
