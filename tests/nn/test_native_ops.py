"""torch.native_batch_norm / native_layer_norm / native_group_norm / native_dropout /
norm_except_dim: aten's tuples (shapes, statistics, autograd flags as PyTorch 2.13 gives them,
checked by hand) against numpy float64 statistics."""
import numpy as np
import pytest

import fusetorch as torch


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_native_batch_norm_statistics_and_running_update():
    a = _x((2, 3, 4, 5))
    x = torch.tensor(a, requires_grad=True)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out, mean, invstd = torch.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    m, v = a.mean((0, 2, 3)), a.var((0, 2, 3))
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(v + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), (a - m[:, None, None]) / np.sqrt(
        v[:, None, None] + 1e-5), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.1 * m, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * v * 40 / 39, rtol=1e-12)
    assert not mean.requires_grad and not invstd.requires_grad and out.requires_grad
    out, mean, invstd = torch.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    assert mean.shape == (0,) and invstd.shape == (0,)
    with pytest.raises(RuntimeError, match="at least one element"):
        torch.native_batch_norm(x[:0], None, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_mean must be defined"):
        torch.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)


def test_native_layer_and_group_norm_statistics():
    a = _x((2, 6, 4))
    x = torch.tensor(a, requires_grad=True)
    out, mean, rstd = torch.native_layer_norm(x, [4], None, None, 1e-5)
    assert mean.shape == (2, 6, 1) and not rstd.requires_grad
    np.testing.assert_allclose(rstd.numpy()[..., 0], 1 / np.sqrt(a.var(-1) + 1e-5), rtol=1e-12)
    out, mean, rstd = torch.native_group_norm(x, None, None, 2, 6, 4, 3, 1e-5)
    g = a.reshape(2, 3, 8)
    assert mean.shape == (2, 3) and mean.requires_grad  # PyTorch's: differentiable
    np.testing.assert_allclose(mean.detach().numpy(), g.mean(-1), rtol=1e-12)
    np.testing.assert_allclose(rstd.detach().numpy(), 1 / np.sqrt(g.var(-1) + 1e-5), rtol=1e-12)
    with pytest.raises(RuntimeError, match="N \\* C \\* HxW"):
        torch.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        torch.native_group_norm(x, None, None, 2, 6, 4, 4, 1e-5)


def test_native_dropout_mask():
    x = torch.ones(200, 50, dtype=torch.float64)
    out, mask = torch.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool
    np.testing.assert_array_equal(out.numpy(), np.where(mask.numpy(), 1 / 0.75, 0.0))
    assert 0.7 < mask.numpy().mean() < 0.8
    out, mask = torch.native_dropout(x, 0.25, False)
    assert mask.numpy().all() and out is not x and np.array_equal(out.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        torch.native_dropout(x, 1.5, True)


def test_norm_except_dim():
    a = _x((3, 4, 5))
    v = torch.tensor(a)
    np.testing.assert_allclose(torch.norm_except_dim(v, 2, 0).numpy().ravel(),
                               np.sqrt((a ** 2).sum((1, 2))), rtol=1e-12)
    np.testing.assert_allclose(torch.norm_except_dim(v, 3, -2).numpy().ravel(),
                               (np.abs(a) ** 3).sum((0, 2)) ** (1 / 3), rtol=1e-12)
    assert torch.norm_except_dim(v, 2, 1).shape == (1, 4, 1)
    assert torch.norm_except_dim(v, 2, -1).shape == ()  # ATen's special case: all dims
    with pytest.raises(IndexError):
        torch.norm_except_dim(v, 2, 3)
    with pytest.raises(RuntimeError, match="Got Long instead"):
        torch.norm_except_dim(torch.tensor([1, 2]), 2, 0)
