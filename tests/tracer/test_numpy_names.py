"""NumPy's `axis=` and `keepdims=` on the reductions, as PyTorch's argument parser takes them
(checked by hand in PyTorch 2.13: `x.sum(1, keepdims=True)`, `torch.mean(x, axis=(0, 1))`;
both spellings at once is a TypeError). Values against numpy in float64."""
import numpy as np
import pytest

import fusetorch as torch

A = np.random.default_rng(0).standard_normal((3, 4))


@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("mean", np.mean), ("prod", np.prod),
                                       ("amax", np.amax), ("amin", np.amin),
                                       ("logsumexp", None)])
def test_reductions_take_numpy_names(name, ref):
    x = torch.tensor(A, requires_grad=True)
    got = getattr(x, name)(axis=1, keepdims=True)
    want = (np.log(np.exp(A).sum(1, keepdims=True)) if ref is None
            else ref(A, axis=1, keepdims=True))
    assert got.shape == (3, 1)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(getattr(torch, name)(x, 1, keepdims=True).detach().numpy(), want,
                               rtol=1e-12)
    got.sum().backward()
    assert x.grad.shape == (3, 4)


def test_numpy_names_on_the_other_reductions():
    x = torch.tensor(A)
    v = x.max(axis=0, keepdims=True)
    np.testing.assert_array_equal(v.values.numpy(), A.max(0, keepdims=True))
    np.testing.assert_array_equal(v.indices.numpy(), A.argmax(0)[None])
    assert x.argmax(axis=1).tolist() == A.argmax(1).tolist()
    np.testing.assert_allclose(torch.std(x, axis=0, keepdims=True).numpy(),
                               A.std(0, ddof=1, keepdims=True), rtol=1e-12)
    s, m = torch.var_mean(x, axis=1)
    np.testing.assert_allclose(s.numpy(), A.var(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(m.numpy(), A.mean(1), rtol=1e-12)
    np.testing.assert_allclose(torch.quantile(x, 0.5, axis=1, keepdims=True).numpy(),
                               np.quantile(A, 0.5, axis=1, keepdims=True), rtol=1e-12)
    assert (x > 0).any(axis=1).tolist() == (A > 0).any(1).tolist()
    assert torch.count_nonzero(x > 0, axis=0).tolist() == (A > 0).sum(0).tolist()
    assert x.sum(axis=(0, 1)).item() == pytest.approx(A.sum(), rel=1e-12)


def test_both_spellings_is_a_type_error_and_methods_stay_the_functions():
    x = torch.tensor(A)
    with pytest.raises(TypeError, match="sum\\(\\) got an unexpected keyword argument 'keepdims'"):
        x.sum(1, keepdim=True, keepdims=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        torch.mean(x, dim=0, axis=1)
    assert torch.sum is torch.Tensor.sum and torch.amax is torch.Tensor.amax


# every reduction PyTorch gives a `keepdim` in C++ (torch.norm, written in Python, takes neither)
KEEPDIM = ("all", "any", "argmax", "argmin", "nansum", "amax", "amin", "max", "mean", "min",
           "prod", "std", "sum", "var", "logsumexp", "nanmean", "median", "nanmedian", "mode")


@pytest.mark.parametrize("name", KEEPDIM)
def test_every_keepdim_reduction_takes_keepdims(name):
    x = torch.tensor(A)
    r = getattr(torch, name)(x, axis=1, keepdims=True)
    r = r[0] if isinstance(r, tuple) else r
    assert r.shape == (3, 1)
    m = getattr(x, name)(axis=0, keepdims=False)
    assert (m[0] if isinstance(m, tuple) else m).shape == (4,)
