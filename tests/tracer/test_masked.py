"""torch.masked (issue 27) against numpy's masked arrays in float64, PyTorch 2.13's results for
fully masked slices (checked by hand), and gradients against central differences."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

MK = torch.masked
R = np.random.default_rng(5)
X = R.uniform(-2, 2, (4, 6))
KEEP = R.random((4, 6)) > 0.4
KEEP[:, 0] = True
MA = np.ma.masked_array(X, ~KEEP)


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def _k():
    return torch.tensor(KEEP)


@pytest.mark.parametrize("name,ref", [
    ("sum", lambda: MA.sum(1)), ("prod", lambda: MA.prod(1)), ("amax", lambda: MA.max(1)),
    ("amin", lambda: MA.min(1)), ("mean", lambda: MA.mean(1)),
    ("var", lambda: MA.var(1, ddof=1)), ("std", lambda: MA.std(1, ddof=1)),
    ("argmax", lambda: MA.argmax(1)), ("argmin", lambda: MA.argmin(1)),
    ("logsumexp", lambda: np.log(np.exp(MA).sum(1))),
    ("norm", lambda: np.sqrt((MA ** 2).sum(1))),
])
def test_reductions_match_numpy_masked_arrays(name, ref):
    got = getattr(MK, name)(t64(X), 1, mask=_k()) if name != "norm" else \
        MK.norm(t64(X), 2.0, 1, mask=_k())
    np.testing.assert_allclose(got.numpy(), np.ma.filled(ref(), np.nan), rtol=1e-13)


def test_median_scans_and_normalisations():
    med = [np.sort(X[i][KEEP[i]])[(KEEP[i].sum() - 1) // 2] for i in range(4)]  # lower median
    np.testing.assert_array_equal(MK.median(t64(X), 1, mask=_k()).numpy(), med)
    np.testing.assert_allclose(MK.cumsum(t64(X), 1, mask=_k()).numpy(),
                               np.cumsum(np.where(KEEP, X, 0), 1), rtol=1e-14)
    np.testing.assert_allclose(MK.cumprod(t64(X), 1, mask=_k()).numpy(),
                               np.cumprod(np.where(KEEP, X, 1), 1), rtol=1e-14)
    e = np.where(KEEP, np.exp(X), 0)
    np.testing.assert_allclose(MK.softmax(t64(X), 1, mask=_k()).numpy(),
                               e / e.sum(1, keepdims=True), rtol=1e-14)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(MK.log_softmax(t64(X), 1, mask=_k()).numpy(),
                                   np.log(e / e.sum(1, keepdims=True)), rtol=1e-14)
    e = np.where(KEEP, np.exp(-X), 0)
    np.testing.assert_allclose(MK.softmin(t64(X), 1, mask=_k()).numpy(),
                               e / e.sum(1, keepdims=True), rtol=1e-14)
    z = np.where(KEEP, X, 0)
    np.testing.assert_allclose(MK.normalize(t64(X), 2.0, 1, mask=_k()).numpy(),
                               z / np.linalg.norm(z, axis=1, keepdims=True), rtol=1e-14)
    y = R.uniform(-2, 2, (4, 6))
    want = np.logaddexp(np.where(KEEP, X, -np.inf), np.where(~KEEP, y, -np.inf))
    np.testing.assert_allclose(MK.logaddexp(t64(X), t64(y), input_mask=_k(),
                                            other_mask=~_k()).numpy(), want, rtol=1e-14)


def test_fully_masked_slices_and_broadcast_masks_are_pytorchs():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = torch.tensor([[True, False, True], [False, False, False]])
    assert MK.sum(x, 1, mask=m).tolist() == [4.0, 0.0]
    assert MK.prod(x, 1, mask=m).tolist() == [3.0, 1.0]
    assert MK.amax(x, 1, mask=m).tolist() == [3.0, -math.inf]
    assert math.isnan(MK.mean(x, 1, mask=m)[1].item())
    assert math.isnan(MK.var(x, 1, mask=m)[1].item())
    assert math.isnan(MK.median(x, 1, mask=m)[1].item())
    assert MK.normalize(x, 2.0, 1, mask=m)[1].tolist() == [0.0, 0.0, 0.0]
    assert all(math.isnan(v) for v in MK.softmax(x, 1, mask=m)[1].tolist())
    assert MK.sum(x, 1, mask=torch.tensor([True, False, True])).tolist() == [4.0, 10.0]
    assert MK.argmax(x, 1, mask=m).dtype == torch.float32  # PyTorch 2.13's dtype
    assert MK.amax(torch.tensor([1, 2]), 0, mask=torch.tensor([False, False])).item() == \
        -2 ** 63
    assert MK.sum(x).item() == 21.0  # no mask: the plain reduction
    with pytest.raises(ValueError, match="bool tensor"):
        MK.sum(x, mask=torch.ones(2, 3))


GRADS = {
    "sum": lambda x: MK.sum(x, 1, mask=_k()), "prod": lambda x: MK.prod(x, 1, mask=_k()),
    "amax": lambda x: MK.amax(x, 1, mask=_k()), "mean": lambda x: MK.mean(x, 0, mask=_k()),
    "var": lambda x: MK.var(x, 1, mask=_k()), "std": lambda x: MK.std(x, 1, mask=_k()),
    "norm": lambda x: MK.norm(x, 3.0, 1, mask=_k()),
    "logsumexp": lambda x: MK.logsumexp(x, 1, mask=_k()),
    "cumprod": lambda x: MK.cumprod(x, 1, mask=_k()),
    "softmax": lambda x: MK.softmax(x, 1, mask=_k()),
    "log_softmax": lambda x: MK.log_softmax(x, 1, mask=_k()).masked_fill(~_k(), 0.0),
    "normalize": lambda x: MK.normalize(x, 2.0, 1, mask=_k()),
    "median": lambda x: MK.median(x, 1, mask=_k()),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_central_differences(name):
    assert gradcheck(GRADS[name], (t64(X).requires_grad_(),), eps=1e-6, atol=1e-8, rtol=1e-6)
