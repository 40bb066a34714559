"""Functional writes, view copies, products and creation of issue 27 against numpy (float64)
and central differences; PyTorch's errors as checked by hand in PyTorch 2.13."""
from __future__ import annotations

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

R = np.random.default_rng(31)


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def leaf(a):
    return t64(a).requires_grad_()


def test_index_put_and_put_against_numpy():
    x, v = R.uniform(-1, 1, (3, 4)), R.uniform(-1, 1, 4)
    want = x.copy()
    want[[0, 2, 2], [1, 3, 3]] = v[:3]  # numpy: the last write of a repeated index wins
    got = torch.index_put(t64(x), (torch.tensor([0, 2, 2]), torch.tensor([1, 3, 3])),
                          t64(v[:3]))
    assert got[0, 1].item() == want[0, 1] and got[2, 3].item() in (v[1], v[2])
    want = x.copy()
    np.add.at(want, ([0, 2, 2],), v)
    np.testing.assert_allclose(torch.index_put(t64(x), (torch.tensor([0, 2, 2]),), t64(v),
                                               accumulate=True).numpy(), want, rtol=1e-15)
    mask = x > 0
    want = x.copy()
    want[mask] = 7.0
    np.testing.assert_array_equal(torch.index_put(t64(x), (torch.tensor(mask),),
                                                  t64(7.0)).numpy(), want)
    got = torch.put(t64(x).t(), torch.tensor([0, 5, -1, 5]), t64([1.0, 2.0, 3.0, 4.0]),
                    accumulate=True)  # a non-contiguous input: flat positions are row-major
    np.testing.assert_allclose(got.numpy(), _put_ref(x.T, [0, 5, -1, 5], [1.0, 2.0, 3.0, 4.0]),
                               rtol=1e-15)
    y = t64(x)
    y.put_(torch.tensor([1]), t64([9.0]))
    assert y[0, 1].item() == 9.0
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12"):
        torch.put(t64(x), torch.tensor([12]), t64([1.0]))
    with pytest.raises(IndexError, match="same number of elements"):
        torch.put(t64(x), torch.tensor([1]), t64([1.0, 2.0]))


def _put_ref(x, idx, vals):
    flat = np.ascontiguousarray(x).ravel().copy()
    np.add.at(flat, idx, vals)
    return flat.reshape(x.shape)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_against_a_loop(reduce, include_self):
    x, src = R.uniform(-2, 2, (4, 3)), R.uniform(-2, 2, (5, 3))
    idx = np.array([0, 2, 0, -1, 2])
    groups = {t: [x[t]] if include_self else [] for t in range(4)}
    for i, t in enumerate(idx % 4):
        groups[t].append(src[i])
    fold = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    want = np.stack([fold(np.stack(g), 0) if g else x[t] for t, g in groups.items()])
    got = torch.index_reduce(t64(x).t(), 1, torch.tensor(idx), t64(src).t(), reduce,
                             include_self=include_self)
    np.testing.assert_allclose(got.numpy(), want.T, rtol=1e-14)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean"):
        torch.index_reduce(t64(x), 0, torch.tensor(idx), t64(src), "sum")


def test_scatters_against_numpy():
    x = R.uniform(-1, 1, (4, 5))
    src = R.uniform(-1, 1, 5)
    want = x.copy()
    want[2] = src
    np.testing.assert_array_equal(torch.select_scatter(t64(x), t64(src), 0, -2).numpy(), want)
    want = x.copy()
    want[:, 1:5:2] = x[:, :2] * 3
    got = torch.slice_scatter(t64(x), t64(x[:, :2] * 3), 1, 1, None, 2)
    np.testing.assert_array_equal(got.numpy(), want)
    for offset in (-2, 0, 1, 3):
        n = len(np.diagonal(x, offset))
        want = x.copy()
        r = np.arange(n) + max(-offset, 0)
        want[r, r + offset] = np.arange(n) + 10.0
        got = torch.diagonal_scatter(t64(x), t64(np.arange(n) + 10.0), offset)
        np.testing.assert_array_equal(got.numpy(), want)
    b = R.uniform(-1, 1, (2, 3, 3))
    want = b.copy()
    want[:, [0, 1, 2], [0, 1, 2]] = 0.0
    got = torch.diagonal_scatter(t64(b), torch.zeros(2, 3, dtype=torch.float64), 0, 1, 2)
    np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(RuntimeError, match="src size = \\[2\\], slice size = \\[5\\]"):
        torch.select_scatter(t64(x), t64([1.0, 2.0]), 0, 1)
    with pytest.raises(IndexError, match="out of range"):
        torch.select_scatter(t64(x), t64(src), 0, 4)


def test_fills_and_pads():
    x = t64(R.uniform(-1, 1, (2, 3)))
    assert torch.fill(x, 2).tolist() == [[2.0] * 3] * 2 and x[0, 0].item() != 2.0
    assert torch.fill(x, torch.tensor(3.0)).dtype == torch.float64
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        torch.fill(x, torch.tensor([3.0]))
    y = torch.ones(2)
    assert torch.zero_(y) is y and y.tolist() == [0.0, 0.0]
    assert torch.fill_(y, 4).tolist() == [4.0, 4.0]
    a = np.ones((2, 2))
    np.testing.assert_array_equal(torch.constant_pad_nd(t64(a), (1, 0, 0, 1), 3.0).numpy(),
                                  np.pad(a, ((0, 1), (1, 0)), constant_values=3.0))
    np.testing.assert_array_equal(torch.constant_pad_nd(t64(a), (-1, 1)).numpy(),
                                  np.pad(a[:, 1:], ((0, 0), (0, 1))))


def test_view_copies_own_their_memory():
    x = t64(R.uniform(-1, 1, (3, 4)))
    for fn in (lambda v: torch.view_copy(v, (12,)), lambda v: torch.t_copy(v),
               lambda v: torch.narrow_copy(v, 1, 1, 2), lambda v: torch.diagonal_copy(v),
               lambda v: torch.select_copy(v, 0, 1), lambda v: torch.alias_copy(v),
               lambda v: torch.expand_copy(v[:1], (2, 4))):
        y = fn(x)
        y.zero_()
        assert float(x.abs().sum()) > 0
    assert torch.permute_copy(x, (1, 0)).tolist() == x.t().tolist()
    assert [p.shape for p in torch.split_copy(x, 3, 1)] == [(3, 3), (3, 1)]
    assert torch.slice_copy(x, 1, 1, None, 2).tolist() == x[:, 1::2].tolist()
    assert torch.unfold_copy(x, 1, 2, 2).shape == (3, 2, 2)


def test_products_norms_and_transposes_against_numpy():
    a, b = R.uniform(-1, 1, 4), R.uniform(-1, 1, 4)
    assert torch.vdot(t64(a), t64(b)).item() == pytest.approx(np.vdot(a, b), rel=1e-15)
    with pytest.raises(RuntimeError, match="same dtype, but found Double and Long"):
        torch.vdot(t64(a), torch.tensor([1, 2, 3, 4]))
    m = R.uniform(-1, 1, (4, 3))
    np.testing.assert_allclose(torch.addr(t64(m), t64(a), t64(b[:3]), beta=0.5, alpha=2).numpy(),
                               0.5 * m + 2 * np.outer(a, b[:3]), rtol=1e-15)
    nan = np.full((4, 3), np.nan)
    assert not torch.addr(t64(nan), t64(a), t64(b[:3]), beta=0).isnan().any()
    with pytest.raises(RuntimeError, match="argument beta must not be a floating"):
        torch.addr(torch.ones(2, 3, dtype=torch.int64), torch.tensor([1, 2]),
                   torch.tensor([1, 0, 1]), beta=0.5)
    x = R.uniform(-2, 2, (3, 4))
    for p, dim, maxnorm in ((2, 0, 1.0), (1, 1, 2.0), (float("inf"), 0, 1.5)):
        norms = np.linalg.norm(np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1), p, axis=1)
        factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
        shape = [1, 1]
        shape[dim] = -1
        np.testing.assert_allclose(torch.renorm(t64(x), p, dim, maxnorm).numpy(),
                                   x * factor.reshape(shape), rtol=1e-14)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.renorm(t64(a), 2, 0, 1)
    np.testing.assert_allclose(t64(x).sum_to_size(1, 4).numpy(), x.sum(0, keepdims=True))
    np.testing.assert_allclose(t64(x).sum_to_size(4).numpy(), x.sum(0))
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        t64(x).sum_to_size(2, 4)
    assert t64(x).H.tolist() == x.T.tolist()
    assert torch.zeros(2, 3, 4).mH.shape == (2, 4, 3) and torch.zeros(2, 3).adjoint().shape == \
        (3, 2)
    with pytest.raises(RuntimeError, match="only supported on matrices \\(2-D tensors\\)"):
        t64(a).H
    with pytest.raises(RuntimeError, match="matrices or batches of matrices"):
        t64(a).mH


def test_creation_and_resize():
    e = torch.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2)
    assert torch.empty_strided((0, 3), (3, 1)).numel() == 0
    assert torch.ones(2, dtype=torch.float64).new_empty_strided((2, 2), (2, 1)).dtype == \
        torch.float64
    assert torch.scalar_tensor(3).dtype == torch.float32 and torch.scalar_tensor(3).shape == ()
    assert torch.scalar_tensor(True, dtype=torch.int64).item() == 1
    a = torch.arange(6.0)
    a.resize_(2, 2)
    assert a.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    a.resize_(3, 2)
    assert a.tolist()[:2] == [[0.0, 1.0], [2.0, 3.0]] and a.shape == (3, 2)
    b = torch.arange(2.0)
    b.resize_as_(torch.ones(1, 2))
    assert b.shape == (1, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        torch.ones(2, requires_grad=True).resize_(4)


GRADCHECKS = {
    "index_put": lambda x, v: torch.index_put(x, (torch.tensor([0, 2, 2]),), v, accumulate=True),
    "put": lambda x, v: torch.put(x, torch.tensor([1, -1, 1]), v[0, :3], accumulate=True),
    "select_scatter": lambda x, v: torch.select_scatter(x, v[1], 0, 0),
    "slice_scatter": lambda x, v: torch.slice_scatter(x, v[:, :2], 1, 0, 4, 2),
    "diagonal_scatter": lambda x, v: torch.diagonal_scatter(x, v[0, :3], 1),
    "fill": lambda x, v: torch.fill(x, v[0, 0]),
    "addr": lambda x, v: torch.addr(x[:, :3], v[:, 0], v[0, :3], beta=0.5, alpha=-2),
    "renorm": lambda x, v: torch.renorm(x, 2, 0, 0.5),
    "renorm_inf": lambda x, v: torch.renorm(x, float("inf"), 1, 0.3),
    "vdot": lambda x, v: torch.vdot(x[0], v[1]),
    "sum_to_size": lambda x, v: x.sum_to_size(1, 4),
    "index_reduce_prod": lambda x, v: torch.index_reduce(x, 0, torch.tensor([0, 0, 2]), v,
                                                         "prod"),
    "index_reduce_amax": lambda x, v: torch.index_reduce(x, 1, torch.tensor([1, 1, 3, 0]), v,
                                                         "amax", include_self=False),
    "copies": lambda x, v: torch.diagonal_copy(x, 1) * torch.narrow_copy(v, 1, 0, 3)[0],
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradients_match_central_differences(name):
    x, v = leaf(R.uniform(-1, 1, (3, 4))), leaf(R.uniform(-1, 1, (3, 4)))
    assert gradcheck(GRADCHECKS[name], (x, v), eps=1e-6, atol=1e-8, rtol=1e-6)
