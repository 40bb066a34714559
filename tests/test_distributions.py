"""fusetorch.distributions: values against numpy float64 formulas, sample statistics (large
seeded samples, loose tolerances), reparameterised gradients against their analytic form,
validation messages as PyTorch 2.13 prints them (copied from a run of PyTorch)."""
import math
import re

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.distributions import (Bernoulli, Categorical, Distribution, Independent, Normal,
                                     Uniform, constraints, kl_divergence)

F64 = torch.float64
N = 20000


def t64(x):
    return torch.tensor(x, dtype=F64)


def npa(x):
    return x.detach().numpy()


# ---------------------------------------------------------------- Normal

def test_normal_values_against_numpy():
    loc, scale = np.array([-1.0, 0.5, 2.0]), np.array([0.3, 1.0, 4.0])
    d = Normal(t64(loc), t64(scale))
    x = np.array([[0.1, -2.0, 7.0], [1.0, 0.5, -3.0]])
    expected = -(x - loc) ** 2 / (2 * scale ** 2) - np.log(scale) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(npa(d.log_prob(t64(x))), expected, rtol=1e-12)
    np.testing.assert_allclose(npa(d.entropy()), 0.5 + 0.5 * np.log(2 * np.pi * scale ** 2),
                               rtol=1e-12)
    cdf = 0.5 * (1 + np.vectorize(math.erf)((x - loc) / (scale * np.sqrt(2))))
    np.testing.assert_allclose(npa(d.cdf(t64(x))), cdf, rtol=1e-6)
    np.testing.assert_allclose(npa(d.mean), loc)
    np.testing.assert_allclose(npa(d.mode), loc)
    np.testing.assert_allclose(npa(d.variance), scale ** 2)
    np.testing.assert_allclose(npa(d.stddev), scale)
    assert d.batch_shape == (3,) and d.event_shape == ()
    assert d.has_rsample


def test_normal_broadcasts_numbers_and_tensors():
    d = Normal(torch.zeros(2, 1), 2.0)
    assert d.batch_shape == (2, 1) and d.scale.dtype is torch.float32
    assert Normal(0.0, 1.0).batch_shape == ()
    assert Normal(torch.zeros(2, 1, dtype=F64), torch.ones(3)).batch_shape == (2, 3)
    assert Normal(torch.zeros(3), 1.0).sample((4, 5)).shape == (4, 5, 3)
    assert Normal(torch.zeros(2), 1.0).log_prob(torch.zeros(3, 2)).shape == (3, 2)
    e = Normal(torch.zeros(2), 1.0).expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample().shape == (3, 2)
    assert repr(Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(Normal(torch.zeros(2), 1.0)) == \
        "Normal(loc: torch.Size([2]), scale: torch.Size([2]))"


def test_normal_sample_statistics_and_seed():
    torch.manual_seed(0)
    d = Normal(t64([1.0, -3.0]), t64([0.5, 2.0]))
    s = npa(d.sample((N,)))
    np.testing.assert_allclose(s.mean(0), [1.0, -3.0], atol=0.05)
    np.testing.assert_allclose(s.std(0), [0.5, 2.0], rtol=0.03)
    torch.manual_seed(3)
    a = npa(d.rsample((5,)))
    torch.manual_seed(3)
    np.testing.assert_array_equal(npa(d.rsample((5,))), a)
    assert not d.sample().requires_grad


def test_normal_rsample_gradients_are_reparameterised():
    loc = t64([0.5, -1.0]).requires_grad_()
    scale = t64([2.0, 0.7]).requires_grad_()
    torch.manual_seed(7)
    eps = npa(torch.randn((50, 2), dtype=F64))
    torch.manual_seed(7)
    x = Normal(loc, scale).rsample((50,))
    (x ** 2).mean().backward()
    xs = npa(loc)[None] + eps * npa(scale)[None]
    np.testing.assert_allclose(npa(x), xs, rtol=1e-12)
    # d/dloc mean(x^2) = 2 mean(x) / 1 over samples, per column divided by the 100 entries
    np.testing.assert_allclose(npa(loc.grad), 2 * xs.sum(0) / xs.size, rtol=1e-10)
    np.testing.assert_allclose(npa(scale.grad), 2 * (xs * eps).sum(0) / xs.size, rtol=1e-10)


def test_normal_log_prob_gradcheck():
    loc = t64([0.3, -0.2]).requires_grad_()
    scale = t64([1.5, 0.4]).requires_grad_()
    x = t64([0.1, 0.9])
    assert torch.autograd.gradcheck(lambda m, s: Normal(m, s).log_prob(x), (loc, scale))
    assert torch.autograd.gradcheck(lambda m, s: Normal(m, s).entropy(), (loc, scale))


# ---------------------------------------------------------------- Uniform

def test_uniform_values_samples_and_gradients():
    low, high = np.array([0.0, -2.0]), np.array([1.0, 3.0])
    d = Uniform(t64(low), t64(high))
    np.testing.assert_allclose(npa(d.log_prob(t64([0.5, 1.0]))), -np.log(high - low))
    np.testing.assert_allclose(npa(d.entropy()), np.log(high - low))
    np.testing.assert_allclose(npa(d.mean), (low + high) / 2)
    np.testing.assert_allclose(npa(d.variance), (high - low) ** 2 / 12)
    np.testing.assert_allclose(npa(d.stddev), (high - low) / np.sqrt(12))
    np.testing.assert_allclose(npa(d.cdf(t64([0.25, 0.5]))), [0.25, 0.5])
    assert np.isnan(npa(d.mode)).all()
    outside = Uniform(0.0, 1.0, validate_args=False).log_prob(torch.tensor([2.0, -1.0]))
    assert np.isneginf(npa(outside)).all()
    torch.manual_seed(1)
    s = npa(d.sample((N,)))
    assert (s >= low).all() and (s < high).all()
    np.testing.assert_allclose(s.mean(0), (low + high) / 2, atol=0.05)
    lo = t64([0.0]).requires_grad_()
    hi = t64([2.0]).requires_grad_()
    torch.manual_seed(2)
    u = npa(torch.rand((10, 1), dtype=F64))
    torch.manual_seed(2)
    Uniform(lo, hi).rsample((10,)).sum().backward()
    np.testing.assert_allclose(npa(lo.grad), [np.sum(1 - u)], rtol=1e-12)
    np.testing.assert_allclose(npa(hi.grad), [np.sum(u)], rtol=1e-12)


# ---------------------------------------------------------------- Bernoulli

def test_bernoulli_probs_and_logits_against_numpy():
    p = np.array([0.1, 0.5, 0.8])
    for d in (Bernoulli(probs=t64(p)), Bernoulli(logits=t64(np.log(p / (1 - p))))):
        x = np.array([1.0, 0.0, 0.0])
        np.testing.assert_allclose(npa(d.log_prob(t64(x))),
                                   x * np.log(p) + (1 - x) * np.log1p(-p), rtol=1e-9)
        np.testing.assert_allclose(npa(d.entropy()),
                                   -(p * np.log(p) + (1 - p) * np.log1p(-p)), rtol=1e-9)
        np.testing.assert_allclose(npa(d.mean), p, rtol=1e-12)
        np.testing.assert_allclose(npa(d.variance), p * (1 - p), rtol=1e-12)
        np.testing.assert_allclose(npa(d.probs), p, rtol=1e-12)
        np.testing.assert_allclose(npa(d.logits), np.log(p / (1 - p)), rtol=1e-9)
    mode = npa(Bernoulli(t64(p)).mode)
    assert mode[0] == 0 and np.isnan(mode[1]) and mode[2] == 1
    torch.manual_seed(4)
    s = npa(Bernoulli(t64(p)).sample((N,)))
    assert set(np.unique(s)) <= {0.0, 1.0}
    np.testing.assert_allclose(s.mean(0), p, atol=0.015)
    assert Bernoulli(0.3).sample((2, 3)).shape == (2, 3)
    np.testing.assert_array_equal(npa(Bernoulli(torch.full((3,), 0.5)).enumerate_support()),
                                  [[0.0] * 3, [1.0] * 3])
    with pytest.raises(NotImplementedError):
        Bernoulli(0.3).rsample()


# ---------------------------------------------------------------- Categorical

def test_categorical_normalises_and_scores_indices():
    w = np.array([[1.0, 2.0, 7.0], [3.0, 3.0, 4.0]])
    p = w / w.sum(-1, keepdims=True)
    for d in (Categorical(t64(w)), Categorical(logits=t64(np.log(w) + 5.0))):
        np.testing.assert_allclose(npa(d.probs), p, rtol=1e-12)
        np.testing.assert_allclose(npa(d.logits), np.log(p), rtol=1e-12)
        idx = torch.tensor([[2, 0], [1, 1], [0, 2]])
        np.testing.assert_allclose(npa(d.log_prob(idx)),
                                   np.log(p[[0, 1], idx.numpy()]), rtol=1e-12)
        assert d.log_prob(torch.zeros(4, 1, dtype=torch.int64)).shape == (4, 2)
        np.testing.assert_allclose(npa(d.entropy()), -(p * np.log(p)).sum(-1), rtol=1e-12)
        np.testing.assert_array_equal(npa(d.mode), [2, 2])
        assert np.isnan(npa(d.mean)).all() and d.mean.shape == (2,)
        assert np.isnan(npa(d.variance)).all()
        assert d.batch_shape == (2,) and d.event_shape == ()
    assert Categorical(t64([0.0, 1.0])).entropy().item() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(npa(Categorical(torch.ones(2, 3)).enumerate_support()),
                                  [[0, 0], [1, 1], [2, 2]])


def test_categorical_samples():
    torch.manual_seed(5)
    w = t64([[0.0, 1.0, 3.0], [2.0, 2.0, 0.0]])
    s = Categorical(w).sample((N,))
    assert s.dtype is torch.int64 and s.shape == (N, 2)
    for row, weights in zip(npa(s).T, npa(w)):
        freq = np.bincount(row, minlength=3) / N
        np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.015)
        assert (freq[weights == 0] == 0).all()
    assert Categorical(logits=torch.zeros(4)).sample().shape == ()
    torch.manual_seed(9)
    a = npa(Categorical(w).sample((6,)))
    torch.manual_seed(9)
    np.testing.assert_array_equal(npa(Categorical(w).sample((6,))), a)


def test_categorical_log_prob_gradient_is_softmax_gradient():
    logits = t64([0.2, -1.0, 0.5]).requires_grad_()
    Categorical(logits=logits).log_prob(torch.tensor(2)).backward()
    z = np.array([0.2, -1.0, 0.5])
    p = np.exp(z) / np.exp(z).sum()
    np.testing.assert_allclose(npa(logits.grad), np.eye(3)[2] - p, rtol=1e-12)


# ---------------------------------------------------------------- Independent, KL

def test_independent_sums_event_dims():
    base = Normal(torch.zeros(3, 2, dtype=F64), t64([1.0, 2.0]))
    d = Independent(base, 1)
    assert d.batch_shape == (3,) and d.event_shape == (2,)
    x = torch.ones(3, 2, dtype=F64)
    np.testing.assert_allclose(npa(d.log_prob(x)), npa(base.log_prob(x)).sum(-1))
    np.testing.assert_allclose(npa(d.entropy()), npa(base.entropy()).sum(-1))
    assert d.sample((4,)).shape == (4, 3, 2) and d.has_rsample
    assert repr(d) == "Independent(Normal(loc: torch.Size([3, 2]), scale: " \
                      "torch.Size([3, 2])), 1)"
    with pytest.raises(ValueError, match=re.escape(
            "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
            "actual 3 vs 2")):
        Independent(base, 3)


def test_kl_divergences_against_numpy():
    m1, s1, m2, s2 = 0.3, 0.8, -1.0, 2.0
    kl = kl_divergence(Normal(t64(m1), t64(s1)), Normal(t64(m2), t64(s2)))
    assert kl.item() == pytest.approx(np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2)
                                      / (2 * s2 ** 2) - 0.5, rel=1e-12)
    p, q = np.array([0.2, 0.0, 0.8]), np.array([0.5, 0.25, 0.25])
    kl = kl_divergence(Categorical(t64(p)), Categorical(t64(q)))
    assert kl.item() == pytest.approx(0.2 * np.log(0.2 / 0.5) + 0.8 * np.log(0.8 / 0.25),
                                      rel=1e-9)
    assert kl_divergence(Categorical(t64(q)), Categorical(t64(p))).item() == math.inf
    kl = kl_divergence(Bernoulli(t64(0.3)), Bernoulli(t64(0.6)))
    assert kl.item() == pytest.approx(0.3 * np.log(0.3 / 0.6) + 0.7 * np.log(0.7 / 0.4),
                                      rel=1e-9)
    kl = kl_divergence(Uniform(t64(0.0), t64(1.0)), Uniform(t64(-1.0), t64(3.0)))
    assert kl.item() == pytest.approx(np.log(4.0), rel=1e-12)
    ind = kl_divergence(Independent(Normal(torch.zeros(2, dtype=F64), 1.0), 1),
                        Independent(Normal(torch.ones(2, dtype=F64), 1.0), 1))
    assert ind.item() == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p "
                                                  "type Normal and q type Categorical"):
        kl_divergence(Normal(0.0, 1.0), Categorical(torch.ones(2)))


# ---------------------------------------------------------------- validation

def _raises(fn, err, message):
    with pytest.raises(err) as info:
        fn()
    assert str(info.value) == message


def test_parameter_validation_messages_match_pytorch():
    _raises(lambda: Normal(0.0, -1.0), ValueError,
            "Expected parameter scale (Tensor of shape ()) of distribution Normal(loc: 0.0, "
            "scale: -1.0) to satisfy the constraint GreaterThan(lower_bound=0.0), but found "
            "invalid values:\n-1.0")
    _raises(lambda: Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, -1.0])), ValueError,
            "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: "
            "torch.Size([2]), scale: torch.Size([2])) to satisfy the constraint "
            "GreaterThan(lower_bound=0.0), but found invalid values:\ntensor([ 1., -1.])")
    _raises(lambda: Uniform(1.0, 0.0), ValueError,
            "Expected parameter low (Tensor of shape ()) of distribution Uniform(low: 1.0, "
            "high: 0.0) to satisfy the constraint LessThan(upper_bound=0.0), but found invalid "
            "values:\n1.0")
    _raises(lambda: Bernoulli(probs=torch.tensor([1.5])), ValueError,
            "Expected parameter probs (Tensor of shape (1,)) of distribution Bernoulli(probs: "
            "tensor([1.5000])) to satisfy the constraint Interval(lower_bound=0.0, "
            "upper_bound=1.0), but found invalid values:\ntensor([1.5000])")
    _raises(lambda: Categorical(torch.tensor([0.2, -0.1])), ValueError,
            "Expected parameter probs (Tensor of shape (2,)) of distribution Categorical(probs: "
            "torch.Size([2])) to satisfy the constraint Simplex(), but found invalid values:\n"
            "tensor([ 2., -1.])")
    _raises(lambda: Bernoulli(probs=0.3, logits=0.1), ValueError,
            "Either `probs` or `logits` must be specified, but not both.")
    _raises(lambda: Categorical(), ValueError,
            "Either `probs` or `logits` must be specified, but not both.")
    _raises(lambda: Categorical(torch.tensor(0.2)), ValueError,
            "`probs` parameter must be at least one-dimensional.")


def test_value_validation_messages_match_pytorch():
    _raises(lambda: Normal(0.0, 1.0).log_prob(torch.tensor(float("nan"))), ValueError,
            "Expected value argument (Tensor of shape ()) to be within the support (Real()) of "
            "the distribution Normal(loc: 0.0, scale: 1.0), but found invalid values:\nnan")
    _raises(lambda: Normal(0.0, 1.0).log_prob(1), ValueError,
            "The value argument to log_prob must be a Tensor")
    _raises(lambda: Uniform(0.0, 1.0).log_prob(torch.tensor([2.0, 0.5])), ValueError,
            "Expected value argument (Tensor of shape (2,)) to be within the support "
            "(Interval(lower_bound=0.0, upper_bound=1.0)) of the distribution Uniform(low: 0.0, "
            "high: 1.0), but found invalid values:\ntensor([2.0000, 0.5000])")
    _raises(lambda: Categorical(torch.tensor([0.2, 0.3])).log_prob(torch.tensor(2)), ValueError,
            "Expected value argument (Tensor of shape ()) to be within the support "
            "(IntegerInterval(lower_bound=0, upper_bound=1)) of the distribution "
            "Categorical(probs: torch.Size([2])), but found invalid values:\n2")
    _raises(lambda: Categorical(torch.tensor([0.2, 0.3])).log_prob(torch.tensor(0.5)),
            ValueError, "Expected value argument (Tensor of shape ()) to be within the support "
            "(IntegerInterval(lower_bound=0, upper_bound=1)) of the distribution "
            "Categorical(probs: torch.Size([2])), but found invalid values:\n0.5")
    _raises(lambda: Normal(torch.tensor([0.0, 1.0]), 1.0).log_prob(torch.zeros(3)), ValueError,
            "Value is not broadcastable with batch_shape+event_shape: torch.Size([3]) vs "
            "torch.Size([2]).")
    assert Normal(0.0, 1.0).log_prob(torch.tensor(float("inf"))).item() == -math.inf


def test_validation_switches():
    assert Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    Distribution.set_default_validate_args(False)
    try:
        assert Normal(0.0, -1.0).scale.item() == -1.0
        with pytest.raises(ValueError):
            Normal(0.0, -1.0, validate_args=True)
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args(1.5)


def test_constraints():
    x = torch.tensor([-1.0, 0.0, 0.5, 1.0, float("nan")])
    np.testing.assert_array_equal(npa(constraints.real.check(x)), [1, 1, 1, 1, 0])
    np.testing.assert_array_equal(npa(constraints.positive.check(x)), [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(npa(constraints.unit_interval.check(x)), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(npa(constraints.boolean.check(x)), [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(npa(constraints.integer_interval(0, 3).check(
        torch.tensor([-1.0, 0.0, 2.0, 2.5, 3.0, 4.0, float("inf")]))), [0, 1, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(npa(constraints.simplex.check(
        torch.tensor([[0.5, 0.5], [0.7, 0.7], [1.5, -0.5]]))), [1, 0, 0])
    assert repr(constraints.independent(constraints.real, 1)) == "IndependentConstraint(Real(), 1)"
    assert constraints.is_dependent(Uniform.support)
    assert repr(Uniform(0.0, 2.0).support) == "Interval(lower_bound=0.0, upper_bound=2.0)"


def test_unvalidated_distributions_compile_without_graph_breaks():
    def step(loc, scale, logits):
        d = Normal(loc, scale, validate_args=False)
        c = Categorical(logits=logits, validate_args=False)
        return (d.rsample((3,)).sum() + d.log_prob(loc * 0.5).sum() + d.entropy().sum()
                + c.log_prob(c.sample((4,))).sum() + kl_divergence(d, Normal(
                    0.0, 1.0, validate_args=False)).sum())

    cf = torch.compile(step, fullgraph=True)
    args = (torch.zeros(5), torch.ones(5), torch.zeros(5, 3))
    cf(*args)
    a, b = cf(*args).item(), cf(*args).item()
    assert math.isfinite(a) and a != b  # replays draw anew
    loc = torch.zeros(5, requires_grad=True)
    cf(loc, torch.ones(5), torch.zeros(5, 3)).backward()
    assert loc.grad is not None and np.isfinite(npa(loc.grad)).all()


def test_multivariate_normal_against_numpy():
    # PPO's `MultivariateNormal(action_mean, torch.diag(action_var).unsqueeze(0))`, and the three
    # parametrisations of one covariance; reference: the density's formula in float64 numpy
    from fusetorch.distributions import MultivariateNormal
    cov = np.array([[2.0, 0.3], [0.3, 0.5]])
    loc = np.array([0.5, -1.0])
    v = np.array([[0.1, 0.2], [1.0, -2.0]])
    d = v - loc
    ref = -0.5 * (2 * np.log(2 * np.pi) + np.log(np.linalg.det(cov))
                  + np.einsum("bi,ij,bj->b", d, np.linalg.inv(cov), d))
    ref_entropy = 0.5 * np.log(np.linalg.det(2 * np.pi * np.e * cov))
    tcov = torch.tensor(cov)
    for kw in ({"covariance_matrix": tcov}, {"precision_matrix": torch.linalg.inv(tcov)},
               {"scale_tril": torch.linalg.cholesky(tcov)}):
        m = MultivariateNormal(torch.tensor(loc), **kw)
        assert m.batch_shape == () and m.event_shape == (2,)
        np.testing.assert_allclose(m.log_prob(torch.tensor(v)).numpy(), ref, rtol=1e-12)
        np.testing.assert_allclose(m.entropy().item(), ref_entropy, rtol=1e-12)
        np.testing.assert_allclose(m.covariance_matrix.numpy(), cov, rtol=1e-12)
        np.testing.assert_allclose(m.variance.numpy(), np.diag(cov), rtol=1e-12)
    # batched, broadcast covariance; draws have the batch and event shape
    m = MultivariateNormal(torch.zeros(3, 2), torch.diag(torch.full((2,), 0.36)).unsqueeze(0))
    assert m.batch_shape == (3,) and m.sample().shape == (3, 2)
    assert m.sample((4,)).shape == (4, 3, 2) and m.entropy().shape == (3,)
    assert repr(m) == ("MultivariateNormal(loc: torch.Size([3, 2]), covariance_matrix: "
                       "torch.Size([3, 2, 2]))")
    # rsample is loc + L eps: its gradient w.r.t. loc is one per draw
    mu = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    MultivariateNormal(mu, tcov).rsample((5,)).sum().backward()
    assert mu.grad.tolist() == [5.0, 5.0]
    # log_prob's gradient w.r.t. loc, against central differences
    mu = torch.tensor(loc, requires_grad=True)
    assert torch.autograd.gradcheck(lambda m_: MultivariateNormal(m_, tcov).log_prob(
        torch.tensor(v)), (mu,))
    with pytest.raises(ValueError, match="constraint PositiveDefinite"):
        MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        MultivariateNormal(torch.zeros(2))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        MultivariateNormal(torch.tensor(0.0), torch.eye(1))
