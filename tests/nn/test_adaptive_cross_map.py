"""nn.AdaptiveLogSoftmaxWithLoss and nn.CrossMapLRN2d against numpy float64 references written
from PyTorch's algorithms (the adaptive softmax's head and cluster log-probabilities; the
legacy LRN's channel windows, quirks included), with PyTorch 2.13's parameter names, printed
forms and errors, checked by hand."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def _full_log_prob(m, x):
    w = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    head = _log_softmax(x @ w["head.weight"].T + w.get("head.bias", 0))
    parts = [head[:, :m.shortlist_size]]
    for i in range(m.n_clusters):
        z = (x @ w[f"tail.{i}.0.weight"].T) @ w[f"tail.{i}.1.weight"].T
        parts.append(_log_softmax(z) + head[:, m.shortlist_size + i:m.shortlist_size + i + 1])
    return np.concatenate(parts, 1)


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], div_value=2.0,
                                         head_bias=True).double()


def test_adaptive_log_softmax_matches_numpy():
    m = _model()
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == [
        ("head.weight", (7, 8)), ("head.bias", (7,)), ("tail.0.0.weight", (4, 8)),
        ("tail.0.1.weight", (6, 4)), ("tail.1.0.weight", (2, 8)), ("tail.1.1.weight", (5, 2)),
        ("tail.2.0.weight", (1, 8)), ("tail.2.1.weight", (5, 1))]
    a = np.random.default_rng(1).standard_normal((6, 8))
    t = np.array([0, 5, 19, 3, 12, 11])
    full = _full_log_prob(m, a)
    r = m(torch.tensor(a), torch.tensor(t))
    assert type(r).__name__ == "_ASMoutput" and r._fields == ("output", "loss")
    np.testing.assert_allclose(r.output.detach().numpy(), full[np.arange(6), t], rtol=1e-12)
    np.testing.assert_allclose(float(r.loss), -full[np.arange(6), t].mean(), rtol=1e-12)
    np.testing.assert_allclose(m.log_prob(torch.tensor(a)).detach().numpy(), full, rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_array_equal(m.predict(torch.tensor(a)).numpy(), full.argmax(1))
    r0 = m(torch.tensor(a[2]), torch.tensor(t[2]))  # unbatched: a 0-d output
    assert r0.output.shape == () and np.isclose(float(r0.output), full[2, 19], rtol=1e-12)


def test_adaptive_log_softmax_gradients():
    m = _model(2)
    x = torch.randn(5, 8, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([1, 17, 9, 4, 12])
    assert torch.autograd.gradcheck(lambda x: m(x, t).loss, (x,))
    m(x, t).loss.backward()
    assert m.tail[2][1].weight.grad is not None and m.head.bias.grad is not None


def test_adaptive_log_softmax_errors():
    m = _model()
    x = torch.zeros(3, 8, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(x, torch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 19\\], but values "
                                           "in range \\[0, 20\\] were found"):
        m(x, torch.tensor([0, 20, 3]))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(x[None], torch.zeros(1, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, [])
    with pytest.raises(ValueError, match="unique, positive integers sorted"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 20])
    assert nn.modules.adaptive.AdaptiveLogSoftmaxWithLoss is nn.AdaptiveLogSoftmaxWithLoss


def _lrn_ref(x, size, alpha, beta, k):
    """scale[c] = k + alpha / size * (sq[0] + sum of sq[j], j in [max(1, c - p + 1),
    min(c + p - 1, C - 1)]), p = int((size - 1) / 2 + 1): the legacy running sum never
    removes channel 0."""
    sq = x * x
    c_n = x.shape[1]
    p = int((size - 1) / 2 + 1)
    scale = np.empty_like(x)
    for c in range(c_n):
        lo, hi = max(1, c - p + 1), min(c + p - 1, c_n - 1)
        scale[:, c] = sq[:, 0] + sq[:, lo:hi + 1].sum(1)
    scale = k + alpha / size * scale
    return scale ** -beta * x, scale


def _lrn_grad_ref(x, g, size, alpha, beta, k):
    """PyTorch's backward: scale^-beta * g - 2 alpha beta / size * x[c] * the sum of
    g * out / scale over channels [c - q, c + size - 1 - q], q = int(size - (size - 1) / 2)."""
    out, scale = _lrn_ref(x, size, alpha, beta, k)
    ratio = g * out / scale
    q = int(size - (size - 1) / 2)
    grad = scale ** -beta * g
    for c in range(x.shape[1]):
        lo, hi = max(0, c - q), min(x.shape[1] - 1, c + size - 1 - q)
        grad[:, c] -= 2 * alpha * beta / size * x[:, c] * ratio[:, lo:hi + 1].sum(1)
    return grad


@pytest.mark.parametrize("size,channels", [(5, 7), (3, 4), (4, 6), (2, 3), (7, 3)])
def test_cross_map_lrn2d_matches_the_legacy_windows(size, channels):
    rng = np.random.default_rng(size)
    a = rng.standard_normal((2, channels, 3, 2))
    g = rng.standard_normal(a.shape)
    m = nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=1.5)
    x = torch.tensor(a, requires_grad=True)
    out = m(x)
    out.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), _lrn_ref(a, size, 0.3, 0.75, 1.5)[0],
                               rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), _lrn_grad_ref(a, g, size, 0.3, 0.75, 1.5),
                               rtol=1e-11, atol=1e-13)
    assert repr(m) == f"CrossMapLRN2d({size}, alpha=0.3, beta=0.75, k=1.5)"
    assert nn.modules.normalization.CrossMapLRN2d is nn.CrossMapLRN2d


def test_cross_map_lrn2d_refuses_other_ranks_and_compiles_around_itself():
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        nn.CrossMapLRN2d(3)(torch.zeros(2, 3, 4))
    m = nn.CrossMapLRN2d(3, alpha=0.5)
    x = torch.randn(1, 4, 2, 2)
    with pytest.warns(UserWarning):
        got = torch.compile(lambda v: m(v * 2) + 1)(x)
    np.testing.assert_allclose(got.numpy(), (m(x * 2) + 1).numpy(), rtol=1e-6)
