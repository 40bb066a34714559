"""Losses: nn.functional forms and the loss modules.

Values are checked against numpy float64 references written here from PyTorch's documented
formulas (CrossEntropyLoss / NLLLoss / BCELoss / BCEWithLogitsLoss docs: weighted means divide by
the summed target weights, ignored targets count for nothing, label smoothing mixes the one-hot
target with the uniform distribution, BCE clamps its logs at -100). Gradients go through
`gradcheck` in float64. Error messages, warnings and reprs were observed by hand in PyTorch
2.13.0 (CPU) and are written literally; torch is not imported here.
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck

F64 = torch.float64
REDUCTIONS = ["none", "mean", "sum"]


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def np_(t):
    return t.detach().numpy()


def reduce_np(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


# ---------------------------------------------------------------- numpy references

def log_softmax_np(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def nll_np(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """Class dim 1 (or 0 for a 1-D input), one loop over the target positions."""
    if logp.ndim == 1:
        logp, target = logp[None], np.asarray(target).reshape(1)
        squeeze = True
    else:
        squeeze = False
    c = logp.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, dtype=np.float64)
    loss = np.zeros(target.shape)
    wsum = 0.0
    for pos in np.ndindex(*target.shape):
        k = int(target[pos])
        if k == ignore_index:
            continue
        loss[pos] = -w[k] * logp[(pos[0], k) + pos[1:]]
        wsum += w[k]
    if reduction == "none":
        return loss[0] if squeeze else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wsum if wsum else np.nan


def cross_entropy_np(x, target, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    """CrossEntropyLoss docs: l_n = -sum_c w_c log p_nc y_nc with y the (smoothed) one-hot
    target; 'mean' divides by sum_n w_{t_n} over targets that are not ignored."""
    cdim = 0 if x.ndim == 1 else 1
    logp = log_softmax_np(x, cdim)
    if x.ndim == 1:
        logp, target = logp[None], np.asarray(target).reshape(1)
    c = logp.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, dtype=np.float64)
    loss = np.zeros(target.shape)
    wsum = 0.0
    for pos in np.ndindex(*target.shape):
        k = int(target[pos])
        if k == ignore_index:
            continue
        y = np.full(c, ls / c)
        y[k] += 1 - ls
        lp = logp[(pos[0], slice(None)) + pos[1:]]
        loss[pos] = -(w * lp * y).sum()
        wsum += w[k]
    if reduction == "none":
        return loss[0] if x.ndim == 1 else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wsum


def cross_entropy_probs_np(x, p, weight=None, reduction="mean", ls=0.0):
    cdim = 0 if x.ndim == 1 else 1
    c = x.shape[cdim]
    logp = log_softmax_np(x, cdim)
    p = p * (1 - ls) + ls / c
    wshape = [1] * x.ndim
    wshape[cdim] = c
    w = np.ones(c) if weight is None else np.asarray(weight)
    loss = -(logp * p * w.reshape(wshape)).sum(axis=cdim)
    if reduction == "mean":
        return loss.sum() / (x.size // c)
    return reduce_np(loss, reduction)


def bce_np(x, y, w=None):
    lx = np.maximum(np.log(np.where(x > 0, x, 1e-300)), -100.0)
    lx = np.where(x > 0, lx, -100.0)
    l1x = np.where(x < 1, np.maximum(np.log1p(-np.minimum(x, 1 - 1e-16)), -100.0), -100.0)
    loss = -(y * lx + (1 - y) * l1x)
    return loss if w is None else loss * w


def bce_logits_np(x, y, w=None, pw=None):
    """BCEWithLogitsLoss docs: -w [pw y log s(x) + (1 - y) log(1 - s(x))], evaluated with
    log s(x) = -logaddexp(0, -x) and log(1 - s(x)) = -logaddexp(0, x)."""
    pw = 1.0 if pw is None else pw
    loss = -(pw * y * -np.logaddexp(0, -x) + (1 - y) * -np.logaddexp(0, x))
    return loss if w is None else loss * w


# ---------------------------------------------------------------- cross entropy / nll values

RNG = np.random.default_rng(1234)
X = RNG.standard_normal((6, 4))
T = np.array([0, 3, 1, 2, 1, 3])
W = np.array([0.2, 1.5, 0.7, 1.1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight", [None, W])
@pytest.mark.parametrize("ignore_index", [-100, 1])
@pytest.mark.parametrize("ls", [0.0, 0.25])
def test_cross_entropy_class_indices(reduction, weight, ignore_index, ls):
    got = F.cross_entropy(t64(X), torch.tensor(T), weight=None if weight is None else t64(weight),
                          ignore_index=ignore_index, reduction=reduction, label_smoothing=ls)
    want = cross_entropy_np(X, T, weight, ignore_index, reduction, ls)
    np.testing.assert_allclose(np_(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial_and_unbatched(reduction):
    x = RNG.standard_normal((2, 4, 3, 2))
    t = RNG.integers(0, 4, (2, 3, 2))
    t[0, 1, 1] = -100
    for ls in (0.0, 0.1):
        got = F.cross_entropy(t64(x), torch.tensor(t), weight=t64(W), reduction=reduction,
                              label_smoothing=ls)
        np.testing.assert_allclose(np_(got), cross_entropy_np(x, t, W, -100, reduction, ls),
                                   rtol=1e-12, atol=1e-12)
    x3 = RNG.standard_normal((2, 4, 5))
    t3 = RNG.integers(0, 4, (2, 5))
    np.testing.assert_allclose(np_(F.cross_entropy(t64(x3), torch.tensor(t3),
                                                   reduction=reduction)),
                               cross_entropy_np(x3, t3, reduction=reduction), rtol=1e-12)
    got = F.cross_entropy(t64(X[0]), torch.tensor(2), reduction=reduction)
    assert got.shape == ()
    np.testing.assert_allclose(np_(got), -log_softmax_np(X[0], 0)[2], rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight", [None, W])
@pytest.mark.parametrize("ls", [0.0, 0.3])
def test_cross_entropy_class_probabilities(reduction, weight, ls):
    p = RNG.random((6, 4))
    p /= p.sum(1, keepdims=True)
    got = F.cross_entropy(t64(X), t64(p), weight=None if weight is None else t64(weight),
                          reduction=reduction, label_smoothing=ls)
    np.testing.assert_allclose(np_(got), cross_entropy_probs_np(X, p, weight, reduction, ls),
                               rtol=1e-12, atol=1e-12)


def test_cross_entropy_is_stable_for_huge_logits():
    x = np.array([[1000.0, 0.0, -1000.0], [-5e4, 5e4, 0.0]])
    got = F.cross_entropy(t64(x), torch.tensor([0, 2]), reduction="none")
    np.testing.assert_allclose(np_(got), [0.0, 5e4], rtol=1e-12)
    got32 = F.cross_entropy(torch.tensor(x, dtype=torch.float32), torch.tensor([1, 1]))
    assert got32.dtype == torch.float32 and np.isfinite(got32.item())


def test_cross_entropy_all_targets_ignored_is_nan_for_mean():
    x, t = t64(X[:2]), torch.tensor([1, 1])
    assert np.isnan(F.cross_entropy(x, t, ignore_index=1).item())
    assert np.isnan(F.cross_entropy(x, t, ignore_index=1, label_smoothing=0.1).item())
    assert F.cross_entropy(x, t, ignore_index=1, reduction="sum").item() == 0.0
    assert np.isnan(F.nll_loss(x, t, weight=t64(W), ignore_index=1).item())


def test_cross_entropy_accepts_uint8_targets():
    got = F.cross_entropy(t64(X), torch.tensor(T, dtype=torch.uint8))
    np.testing.assert_allclose(got.item(), cross_entropy_np(X, T), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_values(reduction):
    logp = log_softmax_np(X, 1)
    got = F.nll_loss(t64(logp), torch.tensor(T), weight=t64(W), ignore_index=3,
                     reduction=reduction)
    np.testing.assert_allclose(np_(got), nll_np(logp, T, W, 3, reduction), rtol=1e-12)
    x5 = RNG.standard_normal((2, 3, 2, 2, 2))
    t5 = RNG.integers(0, 3, (2, 2, 2, 2))
    got = F.nll_loss(t64(x5), torch.tensor(t5), reduction=reduction)
    np.testing.assert_allclose(np_(got), nll_np(x5, t5, reduction=reduction), rtol=1e-12)
    # a 1-D input takes a 0-d target or a size-1 target, and gives a 0-d result
    for tgt in (torch.tensor(2), torch.tensor([2])):
        got = F.nll_loss(t64(X[0]), tgt, reduction=reduction)
        assert got.shape == ()
        np.testing.assert_allclose(got.item(), -X[0, 2])


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.lists(st.integers(1, 3), max_size=2),
       st.integers(0, 2**31 - 1))
def test_cross_entropy_property_random_shapes(n, c, spatial, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, *spatial)) * 3
    t = rng.integers(0, c, (n, *spatial))
    w = rng.uniform(0.1, 2.0, c)
    for red in REDUCTIONS:
        got = F.cross_entropy(t64(x), torch.tensor(t), weight=t64(w), reduction=red)
        np.testing.assert_allclose(np_(got), cross_entropy_np(x, t, w, reduction=red),
                                   rtol=1e-11, atol=1e-12)


# ---------------------------------------------------------------- regression losses

A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    d = A - B
    cases = [
        (F.mse_loss, {}, d ** 2),
        (F.l1_loss, {}, np.abs(d)),
        (F.smooth_l1_loss, {"beta": 0.5},
         np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25)),
        (F.smooth_l1_loss, {"beta": 0.0}, np.abs(d)),
        (F.huber_loss, {"delta": 0.7},
         np.where(np.abs(d) < 0.7, 0.5 * d ** 2, 0.7 * (np.abs(d) - 0.35))),
    ]
    for fn, kw, loss in cases:
        got = fn(t64(A), t64(B), reduction=reduction, **kw)
        np.testing.assert_allclose(np_(got), reduce_np(loss, reduction), rtol=1e-12,
                                   err_msg=f"{fn.__name__} {kw}")


def test_weighted_regression_means():
    w = RNG.uniform(0.1, 2.0, (3, 4))
    d = A - B
    # mse/l1 with weights: a weighted mean; huber: the plain mean of the weighted losses
    np.testing.assert_allclose(F.mse_loss(t64(A), t64(B), weight=t64(w)).item(),
                               (w * d ** 2).sum() / w.sum(), rtol=1e-12)
    np.testing.assert_allclose(F.l1_loss(t64(A), t64(B), weight=t64(w)).item(),
                               (w * np.abs(d)).sum() / w.sum(), rtol=1e-12)
    hub = np.where(np.abs(d) < 1, 0.5 * d ** 2, np.abs(d) - 0.5)
    np.testing.assert_allclose(F.huber_loss(t64(A), t64(B), weight=t64(w)).item(),
                               (w * hub).mean(), rtol=1e-12)
    with pytest.raises(ValueError, match="^Weights and input must have the same size.$"):
        F.mse_loss(t64(A), t64(B), weight=t64(w[0]))


def test_mse_broadcasting_warns_like_pytorch():
    with pytest.warns(UserWarning) as rec:
        got = F.mse_loss(t64([1.0, 2.0, 3.0]), t64([[1.0], [2.0]]))
    assert str(rec[0].message) == (
        "Using a target size (torch.Size([2, 1])) that is different to the input size "
        "(torch.Size([3])). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.")
    want = ((np.array([1.0, 2, 3]) - np.array([[1.0], [2.0]])) ** 2).mean()
    np.testing.assert_allclose(got.item(), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(t64(A), t64(B))  # same shapes: no warning


def test_mse_dtype_promotion():
    got = F.mse_loss(torch.tensor([1.0, 2.0]), t64([0.0, 0.0]))
    assert got.dtype == F64 and got.item() == 2.5


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
def test_kl_div(reduction):
    p = RNG.random((3, 4))
    p /= p.sum(1, keepdims=True)
    q = RNG.random((3, 4))
    q /= q.sum(1, keepdims=True)
    q[0, 1] = 0.0  # xlogy(0, 0) = 0
    loss = np.where(q > 0, q * np.log(np.where(q > 0, q, 1)), 0) - q * np.log(p)
    want = {"none": loss, "sum": loss.sum(), "batchmean": loss.sum() / 3}[reduction]
    np.testing.assert_allclose(np_(F.kl_div(t64(np.log(p)), t64(q), reduction=reduction)),
                               want, rtol=1e-12)
    q2 = q + 0.1
    want2 = np.exp(np.log(q2)) * (np.log(q2) - np.log(p))
    got2 = F.kl_div(t64(np.log(p)), t64(np.log(q2)), reduction="none", log_target=True)
    np.testing.assert_allclose(np_(got2), want2, rtol=1e-12)


def test_kl_div_negative_target_is_nan():
    """xlogy(t, t) is NaN for t < 0 in PyTorch (numpy: t * log(t)), so the loss is NaN there,
    for the functional and the module, eager and compiled; the input's gradient stays -t."""
    i, t = np.array([-1.0, -2.0, 0.5]), np.array([-0.5, 0.0, 2.0])
    with np.errstate(invalid="ignore"):
        want = np.where(t == 0, 0.0, t * np.log(t)) - t * i
    assert np.isnan(want[0])
    for fn in (lambda a, b: F.kl_div(a, b, reduction="none"),
               torch.compile(lambda a, b: F.kl_div(a, b, reduction="none"))):
        np.testing.assert_allclose(np_(fn(t64(i), t64(t))), want, rtol=1e-12)
    assert math.isnan(nn.KLDivLoss(reduction="batchmean")(t64(i), t64(t)).item())
    a = t64(i, grad=True)
    F.kl_div(a, t64(t), reduction="sum").backward()
    np.testing.assert_allclose(a.grad.numpy(), -t)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(t64(np.log([0.5, 0.5])), t64([0.3, 0.7]))


# ---------------------------------------------------------------- binary cross entropy

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    x = RNG.uniform(0.05, 0.95, (3, 4))
    y = RNG.random((3, 4))
    w = RNG.random(4)
    got = F.binary_cross_entropy(t64(x), t64(y), weight=t64(w), reduction=reduction)
    np.testing.assert_allclose(np_(got), reduce_np(bce_np(x, y, w), reduction), rtol=1e-12)


def test_binary_cross_entropy_clamps_logs_at_minus_100():
    x = t64([0.0, 1.0, 0.0, 1.0, 1e-50], grad=True)
    y = t64([1.0, 0.0, 0.0, 1.0, 1.0])
    loss = F.binary_cross_entropy(x, y, reduction="none")
    np.testing.assert_allclose(np_(loss), [100.0, 100.0, 0.0, 0.0, 100.0], rtol=1e-12)
    loss.sum().backward()
    assert np.isfinite(np_(x.grad)).all()  # no log(0) in the gradient either
    # log(1 - x) is log1p(-x), exact for tiny x (PyTorch's kernel prints 1.00000000005e-10)
    tiny = F.binary_cross_entropy(t64([1e-10]), t64([0.0]), reduction="none")
    assert abs(tiny.item() - 1.00000000005e-10) < 1e-24


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(reduction):
    x = RNG.standard_normal((3, 4)) * 4
    y = RNG.random((3, 4))
    w = RNG.random((3, 4))
    pw = RNG.uniform(0.5, 3.0, 4)
    got = F.binary_cross_entropy_with_logits(t64(x), t64(y), weight=t64(w), pos_weight=t64(pw),
                                             reduction=reduction)
    np.testing.assert_allclose(np_(got), reduce_np(bce_logits_np(x, y, w, pw), reduction),
                               rtol=1e-12)
    got = F.binary_cross_entropy_with_logits(t64(x), t64(y), reduction=reduction)
    np.testing.assert_allclose(np_(got), reduce_np(bce_logits_np(x, y), reduction), rtol=1e-12)


def test_bce_with_logits_is_stable():
    x = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    y = np.array([1.0, 1.0, 0.5, 0.0, 0.0])
    for dtype in (torch.float32, F64):
        xt = torch.tensor(x, dtype=dtype, requires_grad=True)
        loss = F.binary_cross_entropy_with_logits(xt, torch.tensor(y, dtype=dtype),
                                                  reduction="none")
        np.testing.assert_allclose(np_(loss).astype(np.float64), bce_logits_np(x, y),
                                   rtol=1e-6)
        loss.sum().backward()
        sig = 1 / (1 + np.exp(-np.clip(x, -500, 500)))
        np.testing.assert_allclose(np_(xt.grad).astype(np.float64), sig - y, atol=1e-7)


def test_bce_with_logits_equals_bce_of_sigmoid():
    x = RNG.standard_normal(7)
    y = RNG.random(7)
    a = F.binary_cross_entropy_with_logits(t64(x), t64(y))
    b = F.binary_cross_entropy(torch.sigmoid(t64(x)), t64(y))
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)


# ---------------------------------------------------------------- gradients

def test_gradcheck_cross_entropy_variants():
    x = t64(RNG.standard_normal((4, 3)), grad=True)
    w = t64([0.3, 1.2, 0.8], grad=True)
    t = torch.tensor([0, 2, 1, 2])
    for kw in ({}, {"ignore_index": 2}, {"label_smoothing": 0.2},
               {"ignore_index": 1, "label_smoothing": 0.15}):
        for red in REDUCTIONS:
            assert gradcheck(lambda a, b: F.cross_entropy(a, t, weight=b, reduction=red, **kw),
                             (x, w))
    p = RNG.random((4, 3))
    p = t64(p / p.sum(1, keepdims=True), grad=True)
    assert gradcheck(lambda a, b, q: F.cross_entropy(a, q, weight=b, label_smoothing=0.1),
                     (x, w, p))
    xs = t64(RNG.standard_normal((2, 3, 2, 2)), grad=True)
    ts = torch.tensor(RNG.integers(0, 3, (2, 2, 2)))
    assert gradcheck(lambda a: F.cross_entropy(a, ts, reduction="none"), (xs,))


def test_gradcheck_nll_loss():
    x = t64(RNG.standard_normal((4, 3)), grad=True)
    w = t64([0.3, 1.2, 0.8])
    for red in REDUCTIONS:
        assert gradcheck(lambda a: F.nll_loss(a, torch.tensor([0, 2, 1, 2]), weight=w,
                                              ignore_index=1, reduction=red), (x,))


def test_gradcheck_regression_and_kl():
    a = t64(RNG.standard_normal((2, 3)), grad=True)
    b = t64(RNG.standard_normal((2, 3)) + 3.0, grad=True)  # |a - b| away from the kinks
    w = t64(RNG.uniform(0.5, 1.5, (2, 3)), grad=True)
    for red in REDUCTIONS:
        assert gradcheck(lambda x, y: F.mse_loss(x, y, reduction=red), (a, b))
        assert gradcheck(lambda x, y: F.l1_loss(x, y, reduction=red), (a, b))
        assert gradcheck(lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=5.0), (a, b))
        assert gradcheck(lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=0.5), (a, b))
        assert gradcheck(lambda x, y: F.huber_loss(x, y, reduction=red, delta=5.0), (a, b))
        assert gradcheck(lambda x, y: F.huber_loss(x, y, reduction=red, delta=0.5), (a, b))
    assert gradcheck(lambda x, y, v: F.mse_loss(x, y, weight=v), (a, b, w))
    lp = t64(np.log(RNG.uniform(0.1, 1, (2, 3))), grad=True)
    q = t64(RNG.uniform(0.1, 1, (2, 3)), grad=True)
    assert gradcheck(lambda x, y: F.kl_div(x, y, reduction="batchmean"), (lp, q))
    assert gradcheck(lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True), (lp, q))


def test_gradcheck_binary_cross_entropies():
    x = t64(RNG.uniform(0.1, 0.9, (2, 3)), grad=True)
    y = t64(RNG.random((2, 3)), grad=True)
    w = t64(RNG.random(3), grad=True)
    for red in REDUCTIONS:
        assert gradcheck(lambda a, b, c: F.binary_cross_entropy(a, b, weight=c, reduction=red),
                         (x, y, w))
    z = t64(RNG.standard_normal((2, 3)) * 3, grad=True)
    pw = t64(RNG.uniform(0.5, 2, 3), grad=True)
    for red in REDUCTIONS:
        assert gradcheck(lambda a, b, c, d: F.binary_cross_entropy_with_logits(
            a, b, weight=c, pos_weight=d, reduction=red), (z, y, w, pw))


def test_bce_with_logits_gradient_at_zero_is_sigmoid_minus_target():
    x = t64([0.0, 0.0], grad=True)
    F.binary_cross_entropy_with_logits(x, t64([1.0, 0.0]), reduction="sum").backward()
    np.testing.assert_allclose(np_(x.grad), [-0.5, 0.5])


# ---------------------------------------------------------------- legacy reduction arguments

@pytest.mark.parametrize("size_average,reduce,expected", [
    (None, False, "none"), (False, None, "sum"), (True, None, "mean"), (None, True, "mean"),
    (False, True, "sum"), (True, False, "none"), (False, False, "none")])
def test_legacy_size_average_reduce(size_average, reduce, expected):
    msg = ("size_average and reduce args will be deprecated, please use "
           f"reduction='{expected}' instead.")
    with pytest.warns(UserWarning) as rec:
        got = F.mse_loss(t64(A), t64(B), size_average=size_average, reduce=reduce)
    assert [str(r.message) for r in rec] == [msg]
    np.testing.assert_allclose(np_(got), reduce_np((A - B) ** 2, expected), rtol=1e-12)
    with pytest.warns(UserWarning) as rec:
        m = nn.MSELoss(size_average=size_average, reduce=reduce)
    assert m.reduction == expected and str(rec[0].message) == msg
    with pytest.warns(UserWarning):
        got = F.cross_entropy(t64(X), torch.tensor(T), size_average=size_average,
                              reduce=reduce)
    np.testing.assert_allclose(np_(got), cross_entropy_np(X, T, reduction=expected),
                               rtol=1e-12)
    for ctor in (nn.L1Loss, nn.NLLLoss, nn.CrossEntropyLoss, nn.BCELoss, nn.BCEWithLogitsLoss,
                 nn.SmoothL1Loss, nn.KLDivLoss):
        with pytest.warns(UserWarning, match="size_average and reduce args"):
            assert ctor(size_average=size_average, reduce=reduce).reduction == expected


def test_reduction_errors_and_elementwise_mean():
    for fn, args in ((F.mse_loss, (t64(A), t64(B))),
                     (F.cross_entropy, (t64(X), torch.tensor(T))),
                     (F.binary_cross_entropy, (t64([0.5]), t64([1.0]))),
                     (F.huber_loss, (t64(A), t64(B)))):
        with pytest.raises(ValueError, match="^avg is not a valid value for reduction$"):
            fn(*args, reduction="avg")
    with pytest.warns(UserWarning, match="reduction='elementwise_mean' is deprecated"):
        got = F.mse_loss(t64(A), t64(B), reduction="elementwise_mean")
    np.testing.assert_allclose(got.item(), ((A - B) ** 2).mean())
    with pytest.raises(ValueError, match=r"^Invalid reduction mode: avg\. Expected one of "):
        F.mse_loss(t64(A), t64(B), reduction="avg", weight=t64(np.ones((3, 4))))


# ---------------------------------------------------------------- errors (PyTorch's messages)

def _zeros(*s, dtype=torch.float32):
    return torch.zeros(*s, dtype=dtype)


ERRORS = [
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 2, 3])), IndexError,
     "Target 3 is out of bounds."),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, -1, 1])), IndexError,
     "Target -1 is out of bounds."),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 2])), ValueError,
     "Expected input batch_size (4) to match target batch_size (3)."),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([[0, 1, 2, 1]])), ValueError,
     "Expected input batch_size (4) to match target batch_size (1)."),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0.0, 1, 2, 1])), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 2, 1], dtype=torch.int32)),
     RuntimeError, "expected target dtype to be Long or Byte, but got Int"),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 1, 1], dtype=torch.bool)),
     RuntimeError, "expected target dtype to be Long or Byte, but got Bool"),
    (lambda: F.cross_entropy(_zeros(4, 3), _zeros(4, 2)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 2, 1]), weight=torch.ones(2)),
     RuntimeError, "weight tensor should be defined either for all 3 classes or no classes but "
     "got weight tensor of shape: [2]"),
    (lambda: F.cross_entropy(_zeros(2, 3), torch.tensor([0, 1]), weight=torch.ones(3, dtype=F64)),
     RuntimeError, "expected scalar type Float but found Double"),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 2, 1]), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda: F.cross_entropy(_zeros(4, 3), torch.tensor([0, 1, 2, 1]), label_smoothing=2.0),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 2"),
    (lambda: F.cross_entropy(_zeros(2, 3, 4), torch.zeros(2, 5, dtype=torch.long)),
     RuntimeError, "Expected target size [2, 4], got [2, 5]"),
    (lambda: F.cross_entropy(_zeros(2, 3, 4), torch.zeros(2, dtype=torch.long)), RuntimeError,
     "Expected target size [2, 4], got [2]"),
    (lambda: F.cross_entropy(_zeros(2, 3), torch.zeros(2, 3, dtype=torch.long)), RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    (lambda: F.cross_entropy(_zeros(2, 3), _zeros(2, 3), ignore_index=1), RuntimeError,
     "ignore_index is not supported for floating point target"),
    (lambda: F.cross_entropy(_zeros(2, 3), _zeros(2, 3), weight=torch.ones(2)), RuntimeError,
     "cross_entropy: weight tensor should be defined either for all 3 classes or no classes "
     "but got weight tensor of shape: [2]"),
    (lambda: F.cross_entropy(torch.zeros(2, 3, dtype=torch.long), torch.tensor([0, 1])),
     NotImplementedError, "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda: F.nll_loss(_zeros(2, 3, 4, 5), torch.zeros(2, 4, 6, dtype=torch.long)),
     RuntimeError, "size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 6]"),
    (lambda: F.nll_loss(_zeros(2, 3, 4, 5), torch.zeros(2, 4, dtype=torch.long)), RuntimeError,
     "only batches of spatial targets supported (3D tensors) but got targets of dimension: 2"),
    (lambda: F.nll_loss(_zeros(2, 3, 4, 5), torch.full((2, 4, 5), 7)), IndexError,
     "Target 7 is out of bounds."),
    (lambda: F.nll_loss(_zeros(2, 3, 4), torch.zeros(2, 4, dtype=torch.long),
                        weight=torch.ones(4)),
     RuntimeError, "weight tensor should be defined either for all or no classes"),
    (lambda: F.nll_loss(torch.tensor(1.0), torch.tensor(1)), ValueError,
     "Expected 1 or more dimensions (got 0)"),
    (lambda: F.nll_loss(_zeros(3), torch.tensor([1, 2])), ValueError,
     "For 1D input, 1D target must have size 1, but got target size: 2"),
    (lambda: F.nll_loss(_zeros(2, 3), torch.tensor(1)), ValueError,
     "Expected input batch_size (2) to match target batch_size (0)."),
    (lambda: F.binary_cross_entropy(torch.rand(3), torch.rand(2)), ValueError,
     "Using a target size (torch.Size([2])) that is different to the input size "
     "(torch.Size([3])) is deprecated. Please ensure they have the same size."),
    (lambda: F.binary_cross_entropy(torch.tensor([0.5, 1.5]), torch.rand(2)), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(torch.tensor([float("nan")]), torch.rand(1)), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(torch.tensor([0.5]), torch.tensor([1.5])), RuntimeError,
     "all elements of target should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(torch.rand(3), torch.tensor([0, 1, 1])), RuntimeError,
     "Found dtype Long but expected Float"),
    (lambda: F.binary_cross_entropy(torch.rand(3, dtype=F64), torch.rand(3)), RuntimeError,
     "Found dtype Float but expected Double"),
    (lambda: F.binary_cross_entropy(torch.rand(3), torch.rand(3), weight=torch.rand(2, 3)),
     RuntimeError, "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    (lambda: F.binary_cross_entropy_with_logits(torch.rand(3), torch.rand(2)), ValueError,
     "Target size (torch.Size([2])) must be the same as input size (torch.Size([3]))"),
    (lambda: F.binary_cross_entropy_with_logits(torch.rand(3), torch.tensor([0, 1, 1])),
     RuntimeError, "result type Float can't be cast to the desired output type Long"),
    (lambda: F.mse_loss(torch.tensor([1, 2]), torch.tensor([1, 2])), NotImplementedError,
     "\"mse_cpu\" not implemented for 'Long'"),
    (lambda: F.smooth_l1_loss(torch.rand(3), torch.rand(3), beta=-1), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda: F.huber_loss(torch.rand(3), torch.rand(3), delta=0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_error_messages(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


# ---------------------------------------------------------------- modules

def test_loss_module_reprs_and_attributes():
    assert repr(nn.MSELoss()) == "MSELoss()"
    assert repr(nn.MSELoss(reduction="sum")) == "MSELoss()"
    assert repr(nn.CrossEntropyLoss(ignore_index=3, label_smoothing=0.1)) == "CrossEntropyLoss()"
    for ctor in (nn.L1Loss, nn.NLLLoss, nn.BCELoss, nn.BCEWithLogitsLoss, nn.SmoothL1Loss,
                 nn.HuberLoss, nn.KLDivLoss):
        assert repr(ctor()) == ctor.__name__ + "()"
    ce = nn.CrossEntropyLoss()
    assert (ce.reduction, ce.ignore_index, ce.label_smoothing, ce.weight) == \
        ("mean", -100, 0.0, None)
    assert nn.SmoothL1Loss().beta == 1.0 and nn.HuberLoss().delta == 1.0
    # class weights are buffers (they follow .to() and appear in the state dict)
    m = nn.CrossEntropyLoss(weight=torch.ones(3))
    assert list(m.state_dict()) == ["weight"] and list(m.parameters()) == []
    m = nn.BCEWithLogitsLoss(pos_weight=torch.ones(2))
    assert list(m.state_dict()) == ["pos_weight"]
    assert m.double().pos_weight.dtype == F64


def test_loss_modules_match_functional():
    x, t = t64(X), torch.tensor(T)
    w = t64(W)
    pairs = [
        (nn.CrossEntropyLoss(weight=w, ignore_index=2, label_smoothing=0.1, reduction="sum"),
         F.cross_entropy(x, t, weight=w, ignore_index=2, label_smoothing=0.1, reduction="sum")),
        (nn.NLLLoss(weight=w, reduction="none"),
         F.nll_loss(x, t, weight=w, reduction="none")),
    ]
    for m, want in pairs:
        np.testing.assert_array_equal(np_(m(x, t)), np_(want))
    a, b = t64(A), t64(B)
    for m, fn in ((nn.MSELoss(reduction="sum"), lambda: F.mse_loss(a, b, reduction="sum")),
                  (nn.L1Loss(), lambda: F.l1_loss(a, b)),
                  (nn.SmoothL1Loss(beta=0.3), lambda: F.smooth_l1_loss(a, b, beta=0.3)),
                  (nn.HuberLoss(delta=0.3), lambda: F.huber_loss(a, b, delta=0.3))):
        np.testing.assert_array_equal(np_(m(a, b)), np_(fn()))
    p, y = t64(RNG.uniform(0.1, 0.9, 4)), t64(RNG.random(4))
    np.testing.assert_array_equal(np_(nn.BCELoss(weight=t64(W))(p, y)),
                                  np_(F.binary_cross_entropy(p, y, weight=t64(W))))
    m = nn.BCEWithLogitsLoss(weight=t64(W), pos_weight=t64(W + 1))
    np.testing.assert_array_equal(
        np_(m(p, y)), np_(F.binary_cross_entropy_with_logits(p, y, t64(W), pos_weight=t64(W + 1))))
    m = nn.KLDivLoss(reduction="batchmean", log_target=True)
    np.testing.assert_array_equal(np_(m(a, b)), np_(F.kl_div(a, b, reduction="batchmean",
                                                             log_target=True)))


def test_loss_grad_fn_names():
    x = torch.randn(2, 3, requires_grad=True)
    assert F.cross_entropy(x, torch.tensor([0, 1])).grad_fn.name() == "NllLossBackward0"
    assert F.mse_loss(x, torch.randn(2, 3)).grad_fn.name() == "MseLossBackward0"
    assert F.binary_cross_entropy_with_logits(x, torch.rand(2, 3)).grad_fn.name() == \
        "BinaryCrossEntropyWithLogitsBackward0"
    x4 = torch.randn(2, 3, 2, 2, requires_grad=True)
    assert F.cross_entropy(x4, torch.zeros(2, 2, 2, dtype=torch.long)).grad_fn.name() == \
        "NllLoss2DBackward0"


def test_classic_training_loop_reduces_loss():
    """The tutorials' pattern: logits -> CrossEntropyLoss -> backward -> manual SGD step."""
    torch.manual_seed(0)
    x = torch.randn(32, 5)
    y = x[:, :3].argmax(1)  # linearly separable without a bias
    w = torch.zeros(5, 3, requires_grad=True)
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(60):
        loss = loss_fn(x @ w, y)
        first = loss.item() if first is None else first
        loss.backward()
        with torch.no_grad():
            w -= 0.5 * w.grad
        w.grad = None
    np.testing.assert_allclose(first, np.log(3), rtol=1e-6)
    assert loss.item() < 0.5 * first
