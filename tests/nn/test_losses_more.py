"""The further losses: CTC, margin/ranking/embedding losses, Gaussian and Poisson NLL.

References are numpy float64 written here from PyTorch's documented formulas; CTC's is an
independent dynamic programme over one sample at a time in probability space with explicit
loops (the implementation is batched, in log space). Gradients by `gradcheck` in float64.
Error messages and reprs were observed by hand in PyTorch 2.13.0 (CPU).
"""
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck

F64 = torch.float64
REDUCTIONS = ["none", "mean", "sum"]
RNG = np.random.default_rng(11)


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def np_(t):
    return t.detach().numpy()


def red(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


# ---------------------------------------------------------------- CTC

def ctc_np(probs, target, t_len):
    """-log p(target | probs[:t_len]) by the CTC forward recursion on probabilities."""
    ext = [0]
    for lab in target:
        ext += [lab, 0]
    s = len(ext)
    alpha = np.zeros(s)
    alpha[0] = probs[0, ext[0]]
    if s > 1:
        alpha[1] = probs[0, ext[1]]
    for t in range(1, t_len):
        new = np.zeros(s)
        for i in range(s):
            a = alpha[i] + (alpha[i - 1] if i >= 1 else 0.0)
            if i >= 2 and ext[i] != 0 and ext[i] != ext[i - 2]:
                a += alpha[i - 2]
            new[i] = a * probs[t, ext[i]]
        alpha = new
    p = alpha[s - 1] + (alpha[s - 2] if s > 1 else 0.0)
    if t_len == 0:
        p = 1.0 if not target else 0.0
    return -math.log(p) if p > 0 else math.inf


def _ctc_case(t=6, n=3, c=5):
    logits = RNG.standard_normal((t, n, c))
    lp = logits - np.log(np.exp(logits).sum(2, keepdims=True))
    targets = np.array([[1, 2, 2], [3, 1, 4], [4, 0, 0]])
    in_len = [6, 5, 4]
    tg_len = [3, 2, 1]
    return lp, targets, in_len, tg_len


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_matches_numpy_dp(reduction):
    lp, targets, in_len, tg_len = _ctc_case()
    probs = np.exp(lp)
    ref = np.array([ctc_np(probs[:, k], list(targets[k, :tg_len[k]]), in_len[k])
                    for k in range(3)])
    if reduction == "mean":
        ref = (ref / np.maximum(tg_len, 1)).mean()
    else:
        ref = red(ref, reduction)
    got = F.ctc_loss(t64(lp), torch.tensor(targets), in_len, tg_len, reduction=reduction)
    np.testing.assert_allclose(np_(got), ref, rtol=1e-10)
    # the same with tensor lengths and concatenated 1-D targets
    flat = torch.tensor(np.concatenate([targets[k, :tg_len[k]] for k in range(3)]))
    got2 = nn.CTCLoss(reduction=reduction)(t64(lp), flat, torch.tensor(in_len),
                                          torch.tensor(tg_len))
    np.testing.assert_allclose(np_(got2), ref, rtol=1e-10)


def test_ctc_other_blank_unbatched_and_infeasible():
    lp, targets, in_len, tg_len = _ctc_case(c=5)
    probs = np.exp(lp)
    # blank 4: relabel so the numpy reference (blank 0) sees the same problem
    perm = [4, 0, 1, 2, 3]
    tg = np.array([[0, 1, 1], [2, 0, 3], [3, 3, 3]])
    got = F.ctc_loss(t64(lp), torch.tensor(tg), in_len, tg_len, blank=4, reduction="none")
    ref = [ctc_np(probs[:, k][:, perm], [v + 1 for v in tg[k, :tg_len[k]]], in_len[k])
           for k in range(3)]
    np.testing.assert_allclose(np_(got), ref, rtol=1e-10)
    one = F.ctc_loss(t64(lp[:, 0]), torch.tensor([1, 2]), 6, 2, reduction="none")
    assert one.shape == () and np.isclose(one.item(), ctc_np(probs[:, 0], [1, 2], 6))
    # a repeated label needs a blank between: 2 time steps cannot emit [1, 1]
    x = t64(lp[:2], grad=True)
    loss = F.ctc_loss(x, torch.tensor([[1, 1]] * 3), [2, 2, 2], [2, 2, 2], reduction="none")
    assert np.isinf(np_(loss)).all()
    z = F.ctc_loss(x, torch.tensor([[1, 1]] * 3), [2, 2, 2], [2, 2, 2], zero_infinity=True)
    z.backward()
    assert z.item() == 0 and np.all(np_(x.grad) == 0)
    # empty targets and empty inputs
    e = F.ctc_loss(t64(lp), torch.tensor([[1, 2]] * 3), [6, 0, 3], [0, 0, 0], reduction="none")
    np.testing.assert_allclose(np_(e), [-lp[:, 0, 0].sum(), 0.0, -lp[:3, 2, 0].sum()])


def test_ctc_gradient_and_errors():
    lp, targets, in_len, tg_len = _ctc_case(t=4, n=2, c=3)
    targets = np.array([[1, 2], [1, 1]])
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), torch.tensor(targets), [4, 3],
                                          [2, 1]), (t64(lp, grad=True),))
    # on raw log-probabilities, PyTorch's gradient (its ctc_loss_backward, checked by hand):
    # the exact derivative plus exp(log_probs) over each sample's time steps
    x = t64(lp, grad=True)
    F.ctc_loss(x, torch.tensor(targets), [4, 3], [2, 1], reduction="sum").backward()
    loss = lambda a: float(F.ctc_loss(t64(a), torch.tensor(targets), [4, 3], [2, 1],  # noqa: E731
                                      reduction="sum"))
    exact = np.zeros_like(lp)
    for i in np.ndindex(lp.shape):
        h = np.zeros_like(lp)
        h[i] = 1e-6
        exact[i] = (loss(lp + h) - loss(lp - h)) / 2e-6
    live = (np.arange(4)[:, None] < np.array([4, 3])[None, :])[:, :, None]
    np.testing.assert_allclose(np_(x.grad), exact + np.exp(lp) * live, atol=1e-7)
    # through log_softmax, the gradient PyTorch reports: softmax - occupancy, summing to 0
    logits = t64(lp, grad=True)
    F.ctc_loss(logits.log_softmax(2), torch.tensor(targets), [4, 4], [2, 2],
               reduction="sum").backward()
    np.testing.assert_allclose(np_(logits.grad).sum(2), 0, atol=1e-12)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 4, "
                                           "but got value 5"):
        F.ctc_loss(t64(lp), torch.tensor(targets), [5, 4], [2, 2])
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(t64(lp), torch.tensor(targets), [4], [2, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(t64(lp), torch.tensor(targets), [4, 4], [2, 2], blank=3)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at "
                                           "dimension 1, but got size 2"):
        F.ctc_loss(t64(lp), torch.tensor(targets), [4, 4], [3, 2])


def test_ctc_compiled_matches_eager():
    lp, targets, in_len, tg_len = _ctc_case()
    fn = lambda x, i: F.ctc_loss(x.log_softmax(2), torch.tensor(targets), i,  # noqa: E731
                                 torch.tensor(tg_len))
    cf = torch.compile(fn)
    for _ in range(2):
        x = t64(RNG.standard_normal(lp.shape))
        il = torch.tensor([6, 4, 5])
        np.testing.assert_allclose(np_(cf(x, il)), np_(fn(x, il)), rtol=1e-10)


# ---------------------------------------------------------------- margin and ranking

def cos_np(a, b):
    return (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))


def pdist_np(a, b, p, eps=1e-6):
    d = np.abs(a - b + eps)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_and_embedding_losses(reduction):
    a, b, c = (RNG.standard_normal((5, 4)) for _ in range(3))
    y = np.array([1, -1, 1, -1, 0])
    ref = np.where(y == 1, 1 - cos_np(a, b), np.where(y == -1, np.maximum(cos_np(a, b) - 0.1, 0),
                                                        0))
    got = nn.CosineEmbeddingLoss(0.1, reduction=reduction)(t64(a), t64(b), torch.tensor(y))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)

    s = np.sign(c)
    ref = np.maximum(-s * (a - b) + 0.3, 0)
    got = nn.MarginRankingLoss(0.3, reduction=reduction)(t64(a), t64(b), t64(s))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)

    ref = np.where(s != 1, np.maximum(0.5 - a, 0), 0) + np.where(s != -1, a, 0)
    got = nn.HingeEmbeddingLoss(0.5, reduction=reduction)(t64(a), t64(s))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)

    ref = np.log1p(np.exp(-s * a))
    got = nn.SoftMarginLoss(reduction=reduction)(t64(a), t64(s))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)

    for p, swap in [(2, False), (1, True), (3, False)]:
        dn = pdist_np(a, c, p)
        if swap:
            dn = np.minimum(dn, pdist_np(b, c, p))
        ref = np.maximum(0.8 + pdist_np(a, b, p) - dn, 0)
        got = nn.TripletMarginLoss(0.8, p, swap=swap, reduction=reduction)(t64(a), t64(b),
                                                                           t64(c))
        np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-9)
    dist = lambda u, v: 1 - F.cosine_similarity(u, v)  # noqa: E731
    cs = lambda u, v: (u * v).sum(-1) / np.maximum(np.linalg.norm(u, axis=-1), 1e-8) / \
        np.maximum(np.linalg.norm(v, axis=-1), 1e-8)  # noqa: E731
    ref = np.maximum(0.4 + (1 - cs(a, b)) - (1 - cs(a, c)), 0)
    got = nn.TripletMarginWithDistanceLoss(distance_function=dist, margin=0.4,
                                           reduction=reduction)(t64(a), t64(b), t64(c))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)


def multi_margin_np(x, y, p, margin, w):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j != y[i]:
                z = max(0.0, margin - x[i, y[i]] + x[i, j]) ** p
                out[i] += z * (w[y[i]] if w is not None else 1.0)
    return out / c


def multilabel_margin_np(x, t):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        labels = []
        for v in t[i]:
            if v < 0:
                break
            labels.append(v)
        others = [k for k in range(c) if k not in labels]
        for j in labels:
            for k in others:
                out[i] += max(0.0, 1 - (x[i, j] - x[i, k]))
    return out / c


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multiclass_margin_losses(reduction):
    x = RNG.standard_normal((4, 5))
    y = np.array([0, 3, 4, 1])
    w = np.array([1.0, 0.5, 2.0, 1.5, 3.0])
    for p, margin, weight in [(1, 1.0, None), (2, 0.5, w)]:
        got = nn.MultiMarginLoss(p, margin, None if weight is None else t64(weight),
                                 reduction=reduction)(t64(x), torch.tensor(y))
        np.testing.assert_allclose(np_(got), red(multi_margin_np(x, y, p, margin, weight),
                                                 reduction), rtol=1e-10)
    t = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 2, 3, 0, 0], [2, 2, -1, 0, 1]])
    got = nn.MultiLabelMarginLoss(reduction=reduction)(t64(x), torch.tensor(t))
    np.testing.assert_allclose(np_(got), red(multilabel_margin_np(x, t), reduction), rtol=1e-10)
    yy = (RNG.random((4, 5)) > 0.5).astype(np.float64)
    ls = lambda v: -np.log1p(np.exp(-v))  # noqa: E731
    ref = (-(yy * ls(x) + (1 - yy) * ls(-x)) * w).mean(1)
    got = nn.MultiLabelSoftMarginLoss(t64(w), reduction=reduction)(t64(x), t64(yy))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)


def test_margin_loss_gradients_and_errors():
    x = t64(RNG.standard_normal((3, 4)), grad=True)
    y = torch.tensor([0, 2, 3])
    assert gradcheck(lambda v: F.multi_margin_loss(v, y, p=2, margin=0.7), (x,))
    assert gradcheck(lambda v: F.multilabel_margin_loss(v, torch.tensor(
        [[1, 3, -1, 0], [0, 1, 2, 3], [2, -1, 0, 0]])), (x,))
    a, b, c = (t64(RNG.standard_normal((3, 4)), grad=True) for _ in range(3))
    assert gradcheck(lambda u, v, w: F.triplet_margin_loss(u, v, w, margin=2.0, swap=True),
                     (a, b, c))
    assert gradcheck(lambda u, v: F.cosine_embedding_loss(u, v, torch.tensor([1, -1, 1]),
                                                          margin=-0.5), (a, b))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, y, p=3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, torch.tensor([0, 1, 4]))
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 4 but got"):
        F.multi_margin_loss(x, y, weight=torch.ones(3, dtype=F64))
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(x, torch.tensor([[0, 1, -1, 2], [3, -1, 0, 0], [0, 1, 2, 4]]))
    with pytest.raises(RuntimeError, match="The anchor, positive, and negative tensors are "
                                           "expected to have the same number of dimensions, "
                                           "but got: anchor 2D, positive 2D, and negative 1D"):
        F.triplet_margin_loss(a, b, c[0])
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(a, b, c, margin=0)
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater "
                                         "than 0, got 0 instead"):
        nn.TripletMarginLoss(margin=0)
    assert repr(nn.TripletMarginWithDistanceLoss()) == (
        "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)")
    assert repr(nn.CTCLoss()) == "CTCLoss()" and repr(nn.MultiMarginLoss()) == \
        "MultiMarginLoss()"


# ---------------------------------------------------------------- likelihoods

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gaussian_nll(reduction):
    x, t = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    v = RNG.uniform(0.1, 2, (4, 3))
    v[0, 0] = 1e-9  # clamped to eps
    for var, full in [(v, False), (v[:, 0], True), (v[:, :1], False)]:
        vv = np.maximum(var if var.shape == (4, 3) or var.ndim == 2 else var[:, None], 1e-6)
        ref = 0.5 * (np.log(vv) + (x - t) ** 2 / vv) + (0.5 * np.log(2 * np.pi) if full else 0)
        got = nn.GaussianNLLLoss(full=full, reduction=reduction)(t64(x), t64(t), t64(var))
        np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)
    got = F.gaussian_nll_loss(t64(x), t64(t), 0.5, reduction=reduction)
    ref = 0.5 * (np.log(0.5) + (x - t) ** 2 / 0.5)
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)


def test_gaussian_nll_gradient_and_errors():
    x, t = t64(RNG.standard_normal((3, 2)), grad=True), t64(RNG.standard_normal((3, 2)))
    var = t64(RNG.uniform(0.5, 2, (3, 1)), grad=True)
    assert gradcheck(lambda a, v: F.gaussian_nll_loss(a, t, v), (x, var))
    # a variance under eps: the value uses eps, the gradient passes as if unclamped
    small = t64([[1e-8]], grad=True)
    F.gaussian_nll_loss(t64([[0.0]]), t64([[0.0]]), small, eps=1e-6).backward()
    np.testing.assert_allclose(np_(small.grad), [[0.5 / 1e-6]])
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, t, -torch.ones(3, 2, dtype=F64))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, t, torch.ones(3, 3, dtype=F64))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_poisson_nll(reduction):
    x = RNG.uniform(0.1, 3, (4, 3))
    t = RNG.integers(0, 5, (4, 3)).astype(np.float64)
    ref = np.exp(x) - t * x
    got = nn.PoissonNLLLoss(reduction=reduction)(t64(x), t64(t))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)
    safe = np.where(t > 1, t, 1)
    stirling = np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0)
    ref = x - t * np.log(x + 1e-8) + stirling
    got = nn.PoissonNLLLoss(log_input=False, full=True, reduction=reduction)(t64(x), t64(t))
    np.testing.assert_allclose(np_(got), red(ref, reduction), rtol=1e-10)
    assert gradcheck(lambda a: F.poisson_nll_loss(a, t64(t), log_input=False, full=True),
                     (t64(x, grad=True),))
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.poisson_nll_loss(t64(x), t64(t), reduction="foo")


def test_legacy_size_average_maps_to_sum():
    x, y = t64(RNG.standard_normal(5)), t64(np.sign(RNG.standard_normal(5)))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        m = nn.SoftMarginLoss(size_average=False)
    assert m.reduction == "sum"
    np.testing.assert_allclose(np_(m(x, y)), np.log1p(np.exp(-np_(y) * np_(x))).sum())
