"""torch.distributions' transforms, TransformedDistribution and the families built on them or on
Categorical (issue 27): values against scipy.stats and change-of-variables formulas in float64;
PyTorch 2.13's printed forms and results checked by hand in a scratch venv."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

import fusetorch as torch
import fusetorch.distributions as D
from fusetorch.distributions import transforms as T


def t(v):
    return torch.tensor(v, dtype=torch.float64)


def _close(ours, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(ours.detach().numpy(), want, rtol=rtol, atol=atol)


X = np.array([0.3, -1.2, 2.0])
ELEMENTWISE = [(T.ExpTransform(), np.exp), (T.TanhTransform(), np.tanh),
               (T.SigmoidTransform(), lambda v: 1 / (1 + np.exp(-v))),
               (T.SoftplusTransform(), lambda v: np.log1p(np.exp(v))),
               (T.AffineTransform(t([1.0, 2.0, 3.0]), t([-2.0, 0.5, 1.0])),
                lambda v: np.array([1.0, 2.0, 3.0]) + np.array([-2.0, 0.5, 1.0]) * v),
               (T.ComposeTransform([T.TanhTransform(), T.AffineTransform(0.5, 3.0)]),
                lambda v: 0.5 + 3.0 * np.tanh(v))]


@pytest.mark.parametrize("tr, f", ELEMENTWISE, ids=[repr(e[0]).split("(")[0] for e in ELEMENTWISE])
def test_elementwise_transforms_invert_and_their_jacobians_are_derivatives(tr, f):
    x = t(X)
    y = tr(x)
    _close(y, f(X))
    _close(tr.inv(y), X, rtol=1e-9)
    h = 1e-6
    slope = (f(X + h) - f(X - h)) / (2 * h)
    _close(tr.log_abs_det_jacobian(x, y), np.log(np.abs(slope)), rtol=1e-7, atol=1e-8)
    assert tr.bijective and tr.inv.inv is tr


def test_simplex_transforms_and_printed_forms():
    x = t(X[:2])
    y = T.StickBreakingTransform()(x)
    assert y.shape == (3,) and abs(y.sum().item() - 1) < 1e-15 and bool((y > 0).all())
    _close(T.StickBreakingTransform().inv(y), X[:2], rtol=1e-12)
    s = T.SoftmaxTransform()(t(X))
    _close(s, np.exp(X) / np.exp(X).sum())
    assert repr(T.ExpTransform().inv) == "_InverseTransform(ExpTransform())"
    assert repr(T.identity_transform) == "ComposeTransform(\n    \n)"
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform().inv == T.ExpTransform().inv
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    r = T.ReshapeTransform((4,), (2, 2))
    assert tuple(r(t([1.0, 2.0, 3.0, 4.0])).shape) == (2, 2)
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)


def test_tanh_squashed_normal_scores_by_change_of_variables():
    base = D.Normal(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5]))
    d = D.TransformedDistribution(base, [T.TanhTransform(), T.AffineTransform(1.0, 2.0)])
    y = np.array([0.3, 1.7, 2.5])
    u = (y - 1) / 2
    want = (stats.norm([0.0, 1.0, -1.0], [1.0, 2.0, 0.5]).logpdf(np.arctanh(u))
            - np.log(2) - np.log(1 - u ** 2))
    _close(d.log_prob(t(y)), want, rtol=1e-9)
    assert d.batch_shape == torch.Size([3]) and d.has_rsample
    loc = t([0.0, 1.0, -1.0]).requires_grad_()
    dd = D.TransformedDistribution(D.Normal(loc, 1.0), [T.TanhTransform(cache_size=1)])
    a = dd.rsample((4,))
    dd.log_prob(a).sum().backward()  # through the cached inverse: the sample's own x
    assert loc.grad is not None and bool(loc.grad.isfinite().all())


CONTINUOUS = [
    (lambda: D.HalfCauchy(t([1.0, 2.0, 0.5])), stats.halfcauchy(scale=[1.0, 2.0, 0.5]),
     np.array([0.3, 1.7, 4.0])),
    (lambda: D.Pareto(t([1.0, 2.0, 0.5]), t([2.5, 3.0, 4.5])),
     stats.pareto([2.5, 3.0, 4.5], scale=[1.0, 2.0, 0.5]), np.array([1.3, 2.7, 4.0])),
    (lambda: D.Weibull(t([1.0, 2.0, 0.5]), t([0.5, 2.5, 3.5])),
     stats.weibull_min([0.5, 2.5, 3.5], scale=[1.0, 2.0, 0.5]), np.array([0.3, 1.7, 4.0])),
    (lambda: D.LogNormal(t([0.0, 1.0]), t([1.0, 0.5])),
     stats.lognorm([1.0, 0.5], scale=np.exp([0.0, 1.0])), np.array([0.3, 1.7])),
    (lambda: D.InverseGamma(t([2.5, 3.5]), t([1.0, 2.0])),
     stats.invgamma([2.5, 3.5], scale=[1.0, 2.0]), np.array([0.3, 1.7])),
]


@pytest.mark.parametrize("make, ref, x", CONTINUOUS,
                         ids=[c[0]().__class__.__name__ for c in CONTINUOUS])
def test_transformed_families_agree_with_scipy(make, ref, x):
    d = make()
    assert isinstance(d, D.TransformedDistribution)
    _close(d.log_prob(t(x)), ref.logpdf(x))
    if not isinstance(d, D.InverseGamma):  # (PyTorch's has no cdf)
        _close(d.cdf(t(x)), ref.cdf(x))
    _close(d.entropy(), ref.entropy())
    _close(d.mean, ref.mean())
    # (HalfCauchy: PyTorch reports the Cauchy's infinite variance; scipy NaN)
    _close(d.variance, np.full(3, np.inf) if isinstance(d, D.HalfCauchy) else ref.var())
    s = d.sample((200,))
    assert tuple(s.shape) == (200, len(x)) and bool((s > 0).all())


def test_discrete_and_mixture_families_agree_with_scipy():
    p = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    m = D.Multinomial(5, t(p))
    k = np.array([[1.0, 3.0, 1.0], [0.0, 0.0, 5.0]])
    for i in range(2):
        ref = stats.multinomial(5, p[i])
        _close(m.log_prob(t(k))[i], ref.logpmf(k[i]))
        _close(m.entropy()[i], ref.entropy(), rtol=1e-6)  # (PyTorch's lgamma(6) in float32)
    assert bool((m.sample((7,)).sum(-1) == 5).all())
    oh = D.OneHotCategorical(t(p))
    _close(oh.log_prob(t([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])), np.log([0.5, 0.1]))
    assert oh.sample((3,)).sum(-1).tolist() == [[1.0, 1.0]] * 3
    assert oh.mode.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    r, q = np.array([2.0, 3.5]), np.array([0.2, 0.5])
    nb = D.NegativeBinomial(t(r), t(q))  # successes of probability q before r failures
    _close(nb.log_prob(t([0.0, 3.0])), stats.nbinom(r, 1 - q).logpmf([0.0, 3.0]))
    _close(nb.mean, stats.nbinom(r, 1 - q).mean())
    _close(nb.variance, stats.nbinom(r, 1 - q).var())
    mix = D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])), D.Normal(t([0.0, 2.0]),
                                                                    t([1.0, 0.5])))
    x = np.array([0.3, 1.7, 4.0])
    want = np.log(0.3 * stats.norm(0, 1).pdf(x) + 0.7 * stats.norm(2, 0.5).pdf(x))
    _close(mix.log_prob(t(x)), want)
    _close(mix.mean, 0.3 * 0 + 0.7 * 2)
    _close(mix.variance, 0.3 * 1 + 0.7 * 0.25 + 0.3 * 1.4 ** 2 + 0.7 * 0.6 ** 2)
    assert repr(mix.support) == "MixtureSameFamilyConstraint(Real())"
    with pytest.raises(ValueError, match="does not equal `component_distribution.batch_shape"):
        D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])), D.Normal(t([0.0, 2.0, 1.0]), 1.0))


def test_relaxed_distributions_are_densities_with_reparameterized_draws():
    rb = D.RelaxedBernoulli(t(0.7), t(0.3))
    z = np.linspace(-40, 40, 200001)  # y = sigmoid(z): the density in y times dy/dz
    y = 1 / (1 + np.exp(-z))
    inside = (y > 0) & (y < 1)
    dens = np.exp(rb.log_prob(t(y[inside])).numpy()) * (y * (1 - y))[inside]
    np.testing.assert_allclose(integrate.trapezoid(dens, z[inside]), 1.0, rtol=1e-6)
    logits = t([0.2, -0.5, 1.0]).requires_grad_()
    ro = D.RelaxedOneHotCategorical(t(0.5), logits=logits)
    s = ro.rsample((5,))
    assert tuple(s.shape) == (5, 3) and bool((s.sum(-1) - 1).abs().max() < 1e-12)
    s[:, 0].sum().backward()
    assert logits.grad is not None and bool((logits.grad != 0).any())
    st = D.OneHotCategoricalStraightThrough(logits=logits)
    assert st.has_rsample and tuple(st.rsample((2,)).shape) == (2, 3)


def test_fisher_snedecor_and_kumaraswamy_agree_with_their_densities():
    f = D.FisherSnedecor(t([5.0, 7.0]), t([4.5, 10.0]))
    x = np.array([0.3, 1.7])
    _close(f.log_prob(t(x)), stats.f([5.0, 7.0], [4.5, 10.0]).logpdf(x))
    _close(f.mean, stats.f([5.0, 7.0], [4.5, 10.0]).mean())
    _close(f.variance, stats.f([5.0, 7.0], [4.5, 10.0]).var())
    assert math.isnan(D.FisherSnedecor(t(1.0), t(1.5)).mean.item())
    a, b = np.array([0.5, 2.5]), np.array([1.5, 2.0])
    k = D.Kumaraswamy(t(a), t(b))
    u = np.array([0.3, 0.9])
    _close(k.log_prob(t(u)), np.log(a * b * u ** (a - 1) * (1 - u ** a) ** (b - 1)), rtol=1e-9)
    mean = [integrate.quad(lambda v, i=i: v * a[i] * b[i] * v ** (a[i] - 1) *
                           (1 - v ** a[i]) ** (b[i] - 1), 0, 1)[0] for i in range(2)]
    _close(k.mean, mean, rtol=1e-7)
    ln = D.LogisticNormal(t([0.0, 1.0]), t([1.0, 0.5]))
    s = ln.rsample((3,))
    assert tuple(s.shape) == (3, 3) and bool(((s.sum(-1) - 1).abs() < 1e-12).all())
    assert ln.event_shape == torch.Size([3]) and bool(ln.log_prob(s).isfinite().all())


def test_constraint_registry_and_exponential_family_are_pytorchs():
    from fusetorch.distributions import biject_to, constraints, transform_to
    assert isinstance(biject_to(constraints.simplex), T.StickBreakingTransform)
    assert isinstance(transform_to(constraints.simplex), T.SoftmaxTransform)
    assert isinstance(biject_to(constraints.unit_interval), T.SigmoidTransform)
    tr = biject_to(constraints.interval(-1.0, 3.0))
    x = t([0.3, -2.0])
    y = tr(x)
    _close(y, -1 + 4 / (1 + np.exp(-x.numpy())))
    _close(tr.inv(y), x.numpy(), rtol=1e-12)
    assert bool((biject_to(constraints.positive)(t([-30.0, 2.0])) > 0).all())
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        biject_to(constraints.lower_cholesky)
    for d in (D.Gamma(t([0.5, 2.0]), t([1.0, 3.0])), D.Exponential(t([0.5, 2.0]))):
        assert isinstance(d, D.ExponentialFamily)
        # the Bregman form from the log-normalizer equals the closed form
        _close(D.ExponentialFamily.entropy(d), d.entropy(), rtol=1e-12)
    beta = D.Beta(t([0.5, 2.0]), t([1.5, 0.7]))
    assert isinstance(beta, D.ExponentialFamily)
    with pytest.raises(NotImplementedError):  # (no carrier measure: PyTorch's too)
        D.ExponentialFamily.entropy(beta)


def test_wishart_bregman_entropy_and_unknown_names():
    # Wishart is an exponential family with a zero carrier measure (PyTorch's): the entropy
    # from its log-normalizer equals the closed form
    w = D.Wishart(t([4.5, 6.0]), covariance_matrix=t([[2.0, 0.3], [0.3, 1.0]]))
    _close(D.ExponentialFamily.entropy(w), w.entropy(), rtol=1e-10)
    assert T.CorrCholeskyTransform()._inverse is not None
    assert not hasattr(D, "NoSuchDistribution")
