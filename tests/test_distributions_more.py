"""The distribution families added for issue 27: values against scipy.stats in float64,
log_prob gradients against central differences, rsample gradients against the derivative of
the known mean (Monte Carlo), reprs and errors as PyTorch 2.13 shows them (checked by hand)."""
import math

import numpy as np
import pytest
from scipy import stats

import fusetorch as torch
import fusetorch.distributions as D


def t(v):
    return torch.tensor(v, dtype=torch.float64)


A = np.array([0.5, 2.0, 3.5])
B = np.array([1.0, 0.5, 2.0])
X = np.array([0.3, 1.7, 4.0])
U = np.array([0.1, 0.5, 0.93])

# (distribution, the scipy.stats counterpart, values to score)
CASES = [
    (lambda: D.Gamma(t(A), t(B)), stats.gamma(A, scale=1 / B), X),
    (lambda: D.Chi2(t(A * 2)), stats.chi2(A * 2), X),
    (lambda: D.Beta(t(A), t(B)), stats.beta(A, B), U),
    (lambda: D.StudentT(t([0.8, 2.5, 5.0]), t([0.0, 1.0, -1.0]), t(B)),
     stats.t([0.8, 2.5, 5.0], [0.0, 1.0, -1.0], B), X - 1),
    (lambda: D.Laplace(t([0.0, 1.0, -1.0]), t(B)), stats.laplace([0.0, 1.0, -1.0], B), X - 1),
    (lambda: D.Exponential(t(A)), stats.expon(scale=1 / A), X),
    (lambda: D.Gumbel(t([0.0, 1.0, -1.0]), t(B)), stats.gumbel_r([0.0, 1.0, -1.0], B), X - 1),
    (lambda: D.LogNormal(t([0.0, 1.0, -1.0]), t(B)), stats.lognorm(B, scale=np.exp([0, 1, -1])),
     X),
    (lambda: D.Cauchy(t([0.0, 1.0, -1.0]), t(B)), stats.cauchy([0.0, 1.0, -1.0], B), X - 1),
    (lambda: D.HalfNormal(t(B)), stats.halfnorm(scale=B), X),
]
DISCRETE = [
    (lambda: D.Poisson(t(A)), stats.poisson(A), np.array([0.0, 1.0, 4.0])),
    (lambda: D.Binomial(t([5.0, 5.0, 5.0]), t([0.1, 0.5, 0.9])),
     stats.binom(5, [0.1, 0.5, 0.9]), np.array([0.0, 2.0, 5.0])),
    (lambda: D.Geometric(t([0.1, 0.5, 0.8])), stats.geom([0.1, 0.5, 0.8], loc=-1),
     np.array([0.0, 2.0, 3.0])),
]


def _close(ours, want):
    np.testing.assert_allclose(ours.detach().numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make, ref, x", CASES, ids=[c[0]().__class__.__name__ for c in CASES])
def test_continuous_families_agree_with_scipy(make, ref, x):
    d = make()
    _close(d.log_prob(t(x)), ref.logpdf(x))
    if isinstance(d, (D.Beta, D.StudentT)):  # neither has a cdf in PyTorch
        with pytest.raises(NotImplementedError):
            d.cdf(t(x))
    else:
        _close(d.cdf(t(x)), ref.cdf(x))
    _close(d.entropy(), ref.entropy())
    mean, var = ref.mean(), ref.var()
    if isinstance(d, D.StudentT):  # PyTorch: NaN for df <= 1 (scipy: inf)
        mean = np.where(d.df.numpy() <= 1, np.nan, mean)
        var = np.where(d.df.numpy() <= 1, np.nan, var)
    if isinstance(d, D.Cauchy):  # PyTorch: an infinite variance (scipy: NaN)
        var = np.full(3, np.inf)
    _close(d.mean, mean)
    _close(d.variance, var)
    if not isinstance(d, (D.Beta, D.Gamma, D.StudentT)):  # (PyTorch's have no icdf)
        _close(d.icdf(t([0.1, 0.5, 0.8])), ref.ppf([0.1, 0.5, 0.8]))
    assert tuple(d.sample((4,)).shape) == (4, 3) and d.has_rsample


@pytest.mark.parametrize("make, ref, k", DISCRETE,
                         ids=[c[0]().__class__.__name__ for c in DISCRETE])
def test_discrete_families_agree_with_scipy(make, ref, k):
    d = make()
    _close(d.log_prob(t(k)), ref.logpmf(k))
    _close(d.mean, ref.mean())
    _close(d.variance, ref.var())
    if not isinstance(d, D.Poisson):
        _close(d.entropy(), ref.entropy())
    s = d.sample((500,))
    assert tuple(s.shape) == (500, 3) and bool((s == s.floor()).all()) and not d.has_rsample


def test_dirichlet_agrees_with_scipy_and_its_mode_is_pytorchs():
    a = np.array([[0.5, 2.0, 3.5], [0.3, 0.4, 0.6]])
    x = np.array([[0.1, 0.3, 0.6], [0.2, 0.2, 0.6]])
    d = D.Dirichlet(t(a))
    assert d.batch_shape == torch.Size([2]) and d.event_shape == torch.Size([3])
    for i in range(2):
        ref = stats.dirichlet(a[i])
        _close(d.log_prob(t(x))[i], ref.logpdf(x[i]))
        _close(d.entropy()[i], ref.entropy())
        _close(d.mean[i], ref.mean())
        _close(d.variance[i], ref.var())
    # every a < 1 in row 1: PyTorch's rule gives the one-hot of the argmax of 0/0 (the first)
    assert d.mode.tolist()[1] == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(d.mode.numpy()[0], [0.0, 1.0 / 3.5, 2.5 / 3.5])
    with pytest.raises(ValueError, match="must be at least one-dimensional"):
        D.Dirichlet(t(1.0))


def test_kl_divergences_agree_with_numeric_integrals():
    from scipy import integrate
    # (the integrals over scipy.stats' densities: an independent reference)
    pairs = [(D.Gamma(t(2.0), t(3.0)), D.Gamma(t(1.5), t(0.5)),
              stats.gamma(2.0, scale=1 / 3), stats.gamma(1.5, scale=2.0), (0, 40)),
             (D.Beta(t(2.0), t(3.0)), D.Beta(t(1.5), t(1.5)), stats.beta(2.0, 3.0),
              stats.beta(1.5, 1.5), (0, 1)),
             (D.Laplace(t(0.5), t(1.0)), D.Laplace(t(-0.5), t(2.0)), stats.laplace(0.5, 1.0),
              stats.laplace(-0.5, 2.0), (-50, 50)),
             (D.Gumbel(t(0.5), t(1.0)), D.Gumbel(t(-0.5), t(2.0)), stats.gumbel_r(0.5, 1.0),
              stats.gumbel_r(-0.5, 2.0), (-5, 50)),
             (D.Exponential(t(2.0)), D.Exponential(t(0.5)), stats.expon(scale=0.5),
              stats.expon(scale=2.0), (0, 40))]
    for p, q, rp, rq, (lo, hi) in pairs:
        x = np.linspace(lo, hi, 100001)  # (a grid through the Laplaces' kinks)
        with np.errstate(invalid="ignore"):
            lp = rp.logpdf(x)
            f = np.where(lp > -700, np.exp(lp) * (lp - rq.logpdf(x)), 0.0)
        want = integrate.simpson(f, x=x)
        np.testing.assert_allclose(D.kl_divergence(p, q).item(), want, rtol=1e-6)
    np.testing.assert_allclose(D.kl_divergence(D.Poisson(t(2.0)), D.Poisson(t(1.5))).item(),
                               sum(stats.poisson(2.0).pmf(k) * (stats.poisson(2.0).logpmf(k) -
                                   stats.poisson(1.5).logpmf(k)) for k in range(80)),
                               rtol=1e-10)


def test_log_prob_gradients_match_central_differences():
    c = t([0.7, 2.5]).requires_grad_()
    r = t([1.3, 0.4]).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: D.Gamma(a, b).log_prob(t([0.3, 2.0])), (c, r))
    assert torch.autograd.gradcheck(lambda a, b: D.Beta(a, b).log_prob(t([0.3, 0.8])), (c, r))
    assert torch.autograd.gradcheck(lambda a, b: D.StudentT(a, 0.5, b).log_prob(t([0.3, 2.0])),
                                    (c, r))
    assert torch.autograd.gradcheck(lambda a: D.Dirichlet(a).entropy(), (c,))


def test_rsample_gradients_are_the_derivative_of_the_mean():
    torch.manual_seed(0)
    n = 20000
    alpha = t(2.5).requires_grad_()
    rate = t(2.0).requires_grad_()
    D.Gamma(alpha, rate).rsample((n,)).mean().backward()  # d(a/r)/da = 1/r, d/dr = -a/r^2
    np.testing.assert_allclose(alpha.grad.item(), 0.5, rtol=0.03)
    np.testing.assert_allclose(rate.grad.item(), -2.5 / 4, rtol=0.03)
    c1, c0 = t(2.0).requires_grad_(), t(3.0).requires_grad_()
    D.Beta(c1, c0).rsample((n,)).mean().backward()  # d(c1/(c1+c0))/dc1 = c0/(c1+c0)^2
    np.testing.assert_allclose(c1.grad.item(), 3.0 / 25, rtol=0.05)
    np.testing.assert_allclose(c0.grad.item(), -2.0 / 25, rtol=0.05)
    df = t(6.0).requires_grad_()
    s = D.Chi2(df).rsample((n,))
    s.mean().backward()  # E = df
    np.testing.assert_allclose(df.grad.item(), 1.0, rtol=0.03)
    loc, scale = t(0.5).requires_grad_(), t(2.0).requires_grad_()
    x = D.Laplace(loc, scale).rsample((5,))
    x.sum().backward()  # pathwise: dx/dscale = (x - loc) / scale exactly
    np.testing.assert_allclose(scale.grad.item(), ((x.detach() - 0.5) / 2.0).sum().item(),
                               rtol=1e-12)
    assert loc.grad.item() == 5.0
    draw = D.Gamma(t([1e-3, 1.0]), t(1.0)).rsample((1000,))
    assert bool((draw > 0).all())  # clamped to the smallest normal, as PyTorch


def test_reprs_shapes_and_errors_are_pytorchs():
    assert repr(D.Gamma(t([2.0, 1.0]), t([3.0, 1.0]))) == \
        "Gamma(concentration: torch.Size([2]), rate: torch.Size([2]))"
    assert repr(D.Gamma(2.0, 3.0)) == "Gamma(concentration: 2.0, rate: 3.0)"
    assert repr(D.Beta(2.0, 3.0)) == "Beta()" and D.Beta(2.0, 3.0).batch_shape == torch.Size()
    assert repr(D.Chi2(3.0)) == "Chi2()"  # (df is a property: PyTorch prints nothing)
    e = D.StudentT(t([3.0, 4.0])).expand((5, 2))
    assert e.batch_shape == torch.Size([5, 2]) and tuple(e.rsample().shape) == (5, 2)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.Gamma(t([-1.0]), t([1.0]))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Beta(t(2.0), t(3.0)).log_prob(t(1.5))
    with pytest.raises(ValueError, match="to be positive but found invalid values"):
        D.Geometric(t([0.0, 0.5]))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        D.Binomial(t([2.0, 3.0]), t([0.5, 0.5])).entropy()
