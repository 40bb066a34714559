"""ContinuousBernoulli and LowRankMultivariateNormal (issue 27): values against numeric
integrals of the closed-form density and scipy.stats in float64, gradients against central
differences (gradcheck), reprs and errors as PyTorch 2.13 shows them (checked by hand)."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

import fusetorch as torch
import fusetorch.distributions as D


def t(v):
    return torch.tensor(np.asarray(v, dtype=np.float64))


def _cb_density(lam):
    """The continuous Bernoulli's density from its definition, normalised by quadrature."""
    z = integrate.quad(lambda x: lam ** x * (1 - lam) ** (1 - x), 0, 1, epsabs=1e-14)[0]
    return lambda x: lam ** x * (1 - lam) ** (1 - x) / z


# 0.4995 and 0.5 sit inside PyTorch's Taylor region (lims 0.499..0.501)
PROBS = [0.1, 0.4995, 0.5, 0.7, 0.95]
X = [0.2, 0.5, 0.0, 1.0, 0.77]


def test_continuous_bernoulli_agrees_with_quadrature_of_its_density():
    cb = D.ContinuousBernoulli(t(PROBS))
    lp, cdf = cb.log_prob(t(X)).numpy(), cb.cdf(t(X)).numpy()
    for i, lam in enumerate(PROBS):
        p = _cb_density(lam)
        mean = integrate.quad(lambda x: x * p(x), 0, 1, epsabs=1e-14)[0]
        var = integrate.quad(lambda x: (x - mean) ** 2 * p(x), 0, 1, epsabs=1e-14)[0]
        ent = -integrate.quad(lambda x: p(x) * math.log(p(x)), 0, 1, epsabs=1e-14)[0]
        # (inside the Taylor region PyTorch's series is accurate to about (p - 1/2)^6)
        tol = 1e-9
        assert cb.mean[i].item() == pytest.approx(mean, abs=tol)
        assert cb.variance[i].item() == pytest.approx(var, abs=tol)
        assert cb.stddev[i].item() == pytest.approx(math.sqrt(var), abs=tol)
        assert cb.entropy()[i].item() == pytest.approx(ent, abs=tol)
        assert lp[i] == pytest.approx(math.log(p(X[i])), abs=tol)
        true_cdf = integrate.quad(p, 0, X[i])[0]
        if 0.499 < lam <= 0.501:  # PyTorch's cdf there is the uniform's: off by under 1e-3
            assert cdf[i] == X[i] and abs(cdf[i] - true_cdf) < 1e-3
        else:
            assert cdf[i] == pytest.approx(true_cdf, abs=tol)
    u = t([0.05, 0.3, 0.5, 0.8, 0.99])
    np.testing.assert_allclose(cb.cdf(cb.icdf(u)).numpy(), u.numpy(), atol=1e-12)
    outside = D.ContinuousBernoulli(t(PROBS), validate_args=False).cdf(t([-0.5, 1.5, 0, 0, 0]))
    assert outside.numpy()[:2].tolist() == [0.0, 1.0]
    by_logits = D.ContinuousBernoulli(logits=t(np.log(PROBS) - np.log1p(-np.array(PROBS))))
    np.testing.assert_allclose(by_logits.log_prob(t(X)).numpy(), lp, atol=1e-9)


def test_continuous_bernoulli_kls_agree_with_quadrature():
    p_lam, q_lam = 0.3, 0.85
    p, q = _cb_density(p_lam), _cb_density(q_lam)
    want = integrate.quad(lambda x: p(x) * math.log(p(x) / q(x)), 0, 1, epsabs=1e-14)[0]
    got = D.kl_divergence(D.ContinuousBernoulli(t(p_lam)), D.ContinuousBernoulli(t(q_lam)))
    assert got.item() == pytest.approx(want, abs=1e-10)
    n = stats.norm(0.5, 2.0)
    want = integrate.quad(lambda x: p(x) * (math.log(p(x)) - n.logpdf(x)), 0, 1)[0]
    got = D.kl_divergence(D.ContinuousBernoulli(t(p_lam)), D.Normal(t(0.5), t(2.0)))
    assert got.item() == pytest.approx(want, abs=1e-10)
    want = integrate.quad(lambda x: p(x) * (math.log(p(x)) - math.log(3.0) + 3.0 * x), 0, 1)[0]
    got = D.kl_divergence(D.ContinuousBernoulli(t(p_lam)), D.Exponential(t(3.0)))
    assert got.item() == pytest.approx(want, abs=1e-10)
    b = stats.beta(2.0, 3.0)
    want = integrate.quad(lambda x: b.pdf(x) * (b.logpdf(x) - math.log(q(x))), 0, 1)[0]
    got = D.kl_divergence(D.Beta(t(2.0), t(3.0)), D.ContinuousBernoulli(t(q_lam)))
    assert got.item() == pytest.approx(want, abs=1e-9)
    want = integrate.quad(lambda x: 2.5 * (math.log(2.5) - math.log(q(x))), 0.2, 0.6)[0]
    got = D.kl_divergence(D.Uniform(t(0.2), t(0.6)), D.ContinuousBernoulli(t(q_lam)))
    assert got.item() == pytest.approx(want, abs=1e-10)
    assert D.kl_divergence(D.Normal(t(0.0), t(1.0)), D.ContinuousBernoulli(t(0.3))).item() \
        == math.inf
    assert D.kl_divergence(D.ContinuousBernoulli(t(0.3)), D.Uniform(t(0.0), t(2.0))).item() \
        == math.inf  # (PyTorch's rule: q's support must hold [0, 1] strictly inside)


def test_continuous_bernoulli_gradients_match_central_differences():
    lam = t([0.2, 0.4995, 0.8]).requires_grad_()
    u = t([0.3, 0.6, 0.9])
    assert torch.autograd.gradcheck(lambda p: D.ContinuousBernoulli(p).log_prob(u), (lam,))
    assert torch.autograd.gradcheck(lambda p: D.ContinuousBernoulli(p).entropy(), (lam,))
    assert torch.autograd.gradcheck(lambda p: D.ContinuousBernoulli(p).icdf(u), (lam,))
    torch.manual_seed(0)
    s = D.ContinuousBernoulli(lam).rsample((5,))
    s.sum().backward()
    assert s.shape == (5, 3) and lam.grad is not None and bool((s >= 0).all() & (s <= 1).all())


def test_continuous_bernoulli_shapes_reprs_and_errors_are_pytorchs():
    cb = D.ContinuousBernoulli(t([0.3, 0.8]))
    assert cb.sample((4,)).shape == (4, 2) and cb.rsample().shape == (2,)
    e = cb.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.log_prob(t(0.4)).shape == (3, 2)
    assert repr(D.ContinuousBernoulli(logits=0.3)) == \
        "ContinuousBernoulli(logits: 0.30000001192092896)"  # (float32, as PyTorch prints it)
    assert D.ContinuousBernoulli(0.3).batch_shape == ()
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.ContinuousBernoulli()
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(t([1.3]), validate_args=False)  # (PyTorch checks even then)
    with pytest.raises(ValueError, match="within the support"):
        D.ContinuousBernoulli(t([0.3]), validate_args=True).log_prob(t([1.3]))


def _lowrank(seed=0, batch=(2,), n=4, m=2):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(batch + (n,)), rng.standard_normal(batch + (n, m)),
            rng.uniform(0.5, 2.0, batch + (n,)))


def _gauss_kl(m0, S0, m1, S1):
    n = len(m0)
    S1i = np.linalg.inv(S1)
    d = m1 - m0
    return 0.5 * (np.trace(S1i @ S0) + d @ S1i @ d - n
                  + np.linalg.slogdet(S1)[1] - np.linalg.slogdet(S0)[1])


def test_lowrank_mvn_agrees_with_scipy_dense_normal():
    loc, W, Dg = _lowrank()
    lr = D.LowRankMultivariateNormal(t(loc), t(W), t(Dg))
    v = np.random.default_rng(1).standard_normal((3, 2, 4))
    lp, ent = lr.log_prob(t(v)).numpy(), lr.entropy().numpy()
    for b in range(2):
        cov = W[b] @ W[b].T + np.diag(Dg[b])
        ref = stats.multivariate_normal(loc[b], cov)
        np.testing.assert_allclose(lp[:, b], ref.logpdf(v[:, b]), rtol=1e-12)
        assert ent[b] == pytest.approx(ref.entropy(), rel=1e-12)
        np.testing.assert_allclose(lr.covariance_matrix[b].numpy(), cov, rtol=1e-12)
        np.testing.assert_allclose(lr.precision_matrix[b].numpy(), np.linalg.inv(cov),
                                   atol=1e-12)
        np.testing.assert_allclose(lr.scale_tril[b].numpy(), np.linalg.cholesky(cov),
                                   atol=1e-12)
        np.testing.assert_allclose(lr.variance[b].numpy(), np.diag(cov), rtol=1e-12)
    assert lr.mean is lr.loc and lr.mode is lr.loc
    np.testing.assert_allclose(lr.expand((3, 2)).log_prob(t(v)).numpy(), lp, rtol=1e-12)


def test_lowrank_mvn_kls_agree_with_the_dense_gaussian_formula():
    loc, W, Dg = _lowrank()
    loc2, W2, D2 = (a[0] for a in _lowrank(seed=2, batch=(1,), m=3))
    A = np.random.default_rng(3).standard_normal((4, 4))
    cov3 = A @ A.T + np.eye(4)
    p = D.LowRankMultivariateNormal(t(loc), t(W), t(Dg))
    q = D.LowRankMultivariateNormal(t(loc2), t(W2), t(D2))
    mvn = D.MultivariateNormal(t(loc2), t(cov3))
    cov = [W[b] @ W[b].T + np.diag(Dg[b]) for b in range(2)]
    cov2 = W2 @ W2.T + np.diag(D2)
    for got, want in ((D.kl_divergence(p, q), [_gauss_kl(loc[b], cov[b], loc2, cov2)
                                               for b in range(2)]),
                      (D.kl_divergence(p, mvn), [_gauss_kl(loc[b], cov[b], loc2, cov3)
                                                 for b in range(2)]),
                      (D.kl_divergence(mvn, p), [_gauss_kl(loc2, cov3, loc[b], cov[b])
                                                 for b in range(2)])):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(p, D.LowRankMultivariateNormal(t(loc2[:3]), t(W2[:3]), t(D2[:3])))


def test_lowrank_mvn_gradients_match_central_differences():
    loc, W, Dg = (t(a[0][:3, :2] if a.ndim == 3 else a[0][:3]) for a in _lowrank())
    args = [a.requires_grad_() for a in (loc, W, Dg)]
    v = t([0.3, -1.0, 0.5])
    assert torch.autograd.gradcheck(
        lambda a, b, c: D.LowRankMultivariateNormal(a, b, c).log_prob(v), args)
    assert torch.autograd.gradcheck(
        lambda a, b, c: D.LowRankMultivariateNormal(a, b, c).entropy(), args)
    torch.manual_seed(0)
    s = D.LowRankMultivariateNormal(*args).rsample((2,))
    s.sum().backward()
    # d(sum of loc + W eps_W + sqrt(D) eps_D)/d loc is the number of draws
    np.testing.assert_allclose(args[0].grad.numpy(), [2.0, 2.0, 2.0])


def test_lowrank_mvn_shapes_reprs_and_errors_are_pytorchs():
    lr = D.LowRankMultivariateNormal(torch.zeros(2, 3), torch.ones(3, 2), torch.ones(3))
    assert repr(lr) == ("LowRankMultivariateNormal(loc: torch.Size([2, 3]), cov_factor: "
                        "torch.Size([2, 3, 2]), cov_diag: torch.Size([2, 3]))")
    assert lr.sample((4,)).shape == (4, 2, 3) and lr.rsample().shape == (2, 3)
    assert lr.expand((5, 2)).batch_shape == (5, 2) and lr.event_shape == (3,)
    cases = [((torch.zeros(3), torch.ones(2, 2), torch.ones(3)), "shape 3 x m"),
             ((torch.zeros(3), torch.ones(3, 2), torch.ones(2)), "vectors with shape"),
             ((torch.zeros(2, 3), torch.ones(3, 3, 2), torch.ones(3)), "Incompatible batch"),
             ((torch.zeros(()), torch.ones(3, 2), torch.ones(3)), "at least one-dim"),
             ((torch.zeros(3), torch.ones(3), torch.ones(3)), "at least two-dim")]
    for args, msg in cases:
        with pytest.raises(ValueError, match=msg):
            D.LowRankMultivariateNormal(*args)
    with pytest.raises(Exception, match="not positive-definite"):
        D.LowRankMultivariateNormal(torch.zeros(3), torch.ones(3, 2), -torch.ones(3))


def test_von_mises_agrees_with_scipy_to_its_bessel_approximation():
    from scipy import special
    loc, k = np.array([0.0, 1.0, -2.0, 3.0]), np.array([0.5, 3.7, 3.8, 20.0])
    x = np.array([0.3, -1.0, 2.5, 7.0])
    vm = D.VonMises(t(loc), t(k))
    # (PyTorch's log I0 / log I1 are polynomial fits with relative error about 1e-7)
    np.testing.assert_allclose(vm.log_prob(t(x)).numpy(), stats.vonmises(k, loc).logpdf(x),
                               rtol=1e-6)
    np.testing.assert_allclose(vm.variance.numpy(), 1 - special.i1(k) / special.i0(k),
                               atol=1e-6)
    assert vm.mean is vm.loc and vm.mode is vm.loc and not vm.has_rsample
    torch.manual_seed(0)
    s = vm.sample((4000,)).numpy()
    assert s.shape == (4000, 4) and s.min() >= -math.pi and s.max() <= math.pi
    # circular moments: E[exp(i x)] = (I1/I0)(k) exp(i loc); tolerance five standard errors
    r = special.i1(k) / special.i0(k)
    for j in range(4):
        m = np.exp(1j * s[:, j]).mean()
        assert abs(m - r[j] * np.exp(1j * loc[j])) < 5 / math.sqrt(4000)
    assert D.VonMises(t([0.0]), t([1e-6])).sample((3,)).shape == (3, 1)  # (no hang: float64)
    assert D.VonMises(t(loc), t(k)).expand((2, 4)).log_prob(t(x)).shape == (2, 4)


def test_von_mises_gradients_reprs_and_errors():
    loc, k = t([0.0, 1.0, -2.0]).requires_grad_(), t([0.5, 3.7, 6.0]).requires_grad_()
    x = t([0.3, -1.0, 2.5])
    assert torch.autograd.gradcheck(lambda a, b: D.VonMises(a, b).log_prob(x), (loc, k))
    assert torch.autograd.gradcheck(lambda b: D.VonMises(0.0, b).variance, (k,))
    assert repr(D.VonMises(0.0, 1.0)) == "VonMises(loc: 0.0, concentration: 1.0)"
    with pytest.raises(ValueError, match="concentration .* to satisfy the constraint "
                                         r"GreaterThan\(lower_bound=0.0\)"):
        D.VonMises(t([0.0]), t([-1.0]))


def test_generalized_pareto_agrees_with_scipy_genpareto():
    loc, scale, c = np.array([0.0, 1.0, -1.0, 0.5]), np.array([1.0, 2.0, 0.5, 1.5]), \
        np.array([0.0, 0.4, -0.5, 1e-9])
    x, u = np.array([0.3, 2.0, -0.8, 3.0]), np.array([0.1, 0.5, 0.9, 0.99])
    gp = D.GeneralizedPareto(t(loc), t(scale), t(c))
    ref = stats.genpareto(c, loc, scale)
    np.testing.assert_allclose(gp.log_prob(t(x)).numpy(), ref.logpdf(x), rtol=1e-8)
    np.testing.assert_allclose(gp.log_survival_function(t(x)).numpy(), ref.logsf(x), rtol=1e-8)
    np.testing.assert_allclose(gp.cdf(t(x)).numpy(), ref.cdf(x), rtol=1e-8)
    np.testing.assert_allclose(gp.icdf(t(u)).numpy(), ref.ppf(u), rtol=1e-8)
    np.testing.assert_allclose(gp.mean.numpy(), ref.mean(), rtol=1e-8)
    np.testing.assert_allclose(gp.variance.numpy(), ref.var(), rtol=1e-8)
    np.testing.assert_allclose(gp.entropy().numpy(), ref.entropy(), rtol=1e-8)
    np.testing.assert_allclose(gp.support.upper_bound.numpy(), [math.inf, math.inf, 0.0,
                                                                math.inf])
    heavy = D.GeneralizedPareto(t([0.0, 0.0]), t([1.0, 1.0]), t([1.5, 0.7]))
    assert np.isnan(heavy.mean.numpy()[0]) and np.isnan(heavy.variance.numpy()).all()
    assert gp.mode is gp.loc and gp.expand((2, 4)).log_prob(t(x)).shape == (2, 4)


def test_generalized_pareto_gradients_reprs_and_errors():
    loc, scale, c = t([0.0, 1.0]).requires_grad_(), t([1.0, 2.0]).requires_grad_(), \
        t([0.3, -0.2]).requires_grad_()
    x, u = t([0.3, 2.0]), t([0.2, 0.7])
    assert torch.autograd.gradcheck(
        lambda a, b, k: D.GeneralizedPareto(a, b, k).log_prob(x), (loc, scale, c))
    assert torch.autograd.gradcheck(
        lambda a, b, k: D.GeneralizedPareto(a, b, k).icdf(u), (loc, scale, c))
    torch.manual_seed(0)
    assert D.GeneralizedPareto(loc, scale, c).rsample((3,)).shape == (3, 2)
    assert repr(D.GeneralizedPareto(0.0, 1.0, 0.5)) == \
        "GeneralizedPareto(loc: 0.0, scale: 1.0, concentration: 0.5)"
    assert D.GeneralizedPareto(0.0, 1.0, 0.5).batch_shape == ()
    with pytest.raises(ValueError, match="to be within the support"):
        D.GeneralizedPareto(t([0.0]), t([1.0]), t([-0.5])).log_prob(t([3.0]))  # above 2
    with pytest.raises(ValueError, match="parameter scale"):
        D.GeneralizedPareto(t([0.0]), t([-1.0]), t([0.0]))


def test_cholesky_and_positive_definite_transforms():
    T = D.transforms
    x = np.random.default_rng(0).standard_normal((2, 3, 3))
    L = np.tril(x, -1) + np.stack([np.diag(np.exp(np.diag(m))) for m in x])
    lc, pd = T.LowerCholeskyTransform(), T.PositiveDefiniteTransform()
    np.testing.assert_allclose(lc(t(x)).numpy(), L, rtol=1e-14)
    np.testing.assert_allclose(pd(t(x)).numpy(), L @ L.transpose(0, 2, 1), rtol=1e-13)
    assert bool(D.constraints.positive_definite.check(pd(t(x))).all())
    assert bool(D.constraints.lower_cholesky.check(lc(t(x))).all())
    np.testing.assert_allclose(pd.inv(pd(t(x))).numpy(), np.tril(x), atol=1e-12)
    np.testing.assert_allclose(lc.inv(lc(t(x))).numpy(), np.tril(x), atol=1e-14)
    assert isinstance(D.transform_to(D.constraints.positive_definite), T.PositiveDefiniteTransform)
    assert isinstance(D.transform_to(D.constraints.lower_cholesky), T.LowerCholeskyTransform)
    assert (lc.event_dim, pd.event_dim, lc.bijective) == (2, 2, False)
    assert repr(pd) == "PositiveDefiniteTransform()" and lc == T.LowerCholeskyTransform()
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky"):
        D.biject_to(D.constraints.lower_cholesky)
    with pytest.raises(Exception, match="not positive-definite"):
        pd.inv(-pd(t(x)))
    xg = t(x[0]).requires_grad_()
    assert torch.autograd.gradcheck(lambda a: pd(a), (xg,))


def test_cumulative_distribution_transform_makes_a_copula():
    T = D.transforms
    cdf = T.CumulativeDistributionTransform(D.Normal(t(0.5), t(2.0)))
    v = np.array([-1.0, 0.3, 2.0])
    ref = stats.norm(0.5, 2.0)
    np.testing.assert_allclose(cdf(t(v)).numpy(), ref.cdf(v), rtol=1e-14)
    np.testing.assert_allclose(cdf.inv(t(ref.cdf(v))).numpy(), v, rtol=1e-12)
    np.testing.assert_allclose(cdf.log_abs_det_jacobian(t(v), cdf(t(v))).numpy(),
                               ref.logpdf(v), rtol=1e-14)
    assert cdf.sign == 1 and cdf.bijective and cdf.event_dim == 0
    assert cdf.with_cache(1)._cache_size == 1 and repr(cdf.domain) == "Real()"
    # the density of y = F(x), x ~ N(mu, s): the base density over F's density at x
    base = ([0.0, 1.0], [1.0, 2.0])
    td = D.TransformedDistribution(D.Normal(t(base[0]), t(base[1])), [cdf])
    y = np.array([0.3, 0.6])
    xs = ref.ppf(y)
    want = stats.norm(base[0], base[1]).logpdf(xs) - ref.logpdf(xs)
    np.testing.assert_allclose(td.log_prob(t(y)).numpy(), want, rtol=1e-10)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_cat_and_stack_transforms_apply_slice_wise():
    T, Cn = D.transforms, D.constraints
    x = np.random.default_rng(0).standard_normal((3, 5))
    ct = T.CatTransform([T.ExpTransform(), T.identity_transform, T.SigmoidTransform()], dim=1,
                        lengths=[2, 1, 2])
    want = np.concatenate([np.exp(x[:, :2]), x[:, 2:3], _sigmoid(x[:, 3:])], axis=1)
    y = ct(t(x))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(ct.inv(y).numpy(), x, rtol=1e-12, atol=1e-14)
    s = _sigmoid(x[:, 3:])
    ldj = np.concatenate([x[:, :2], np.zeros((3, 1)), np.log(s * (1 - s))], axis=1)
    np.testing.assert_allclose(ct.log_abs_det_jacobian(t(x), y).numpy(), ldj, rtol=1e-12)
    # cat along a batch dim of event-dim-1 transforms: one log-det per row, concatenated
    ct2 = T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                          T.IndependentTransform(T.SigmoidTransform(), 1)], dim=0,
                         lengths=[1, 2])
    s2 = _sigmoid(x[1:])
    np.testing.assert_allclose(ct2.log_abs_det_jacobian(t(x), ct2(t(x))).numpy(),
                               np.concatenate([[x[0].sum()], np.log(s2 * (1 - s2)).sum(-1)]),
                               rtol=1e-12)
    # cat along the event dim: the slices' log-dets add up
    ct3 = T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                          T.IndependentTransform(T.SigmoidTransform(), 1)], dim=1,
                         lengths=[2, 3])
    s4 = _sigmoid(x[:, 2:])
    np.testing.assert_allclose(ct3.log_abs_det_jacobian(t(x), ct3(t(x))).numpy(),
                               x[:, :2].sum(-1) + np.log(s4 * (1 - s4)).sum(-1), rtol=1e-12)
    st = T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0),
                           T.SigmoidTransform()], dim=0)
    ys = st(t(x))
    np.testing.assert_allclose(ys.numpy(), np.stack([np.exp(x[0]), 1 + 3 * x[1],
                                                     _sigmoid(x[2])]), rtol=1e-14)
    np.testing.assert_allclose(st.inv(ys).numpy(), x, rtol=1e-12, atol=1e-14)
    s3 = _sigmoid(x[2])
    np.testing.assert_allclose(st.log_abs_det_jacobian(t(x), ys).numpy(),
                               np.stack([x[0], np.full(5, math.log(3.0)),
                                         np.log(s3 * (1 - s3))]), rtol=1e-12)
    assert bool(ct.codomain.check(y).all()) and bool(st.codomain.check(ys).all())
    assert not bool(st.codomain.check(-ys.abs()).all())
    b = D.biject_to(Cn.cat([Cn.positive, Cn.real], 1, [2, 3]))(t(x))
    np.testing.assert_allclose(b.numpy()[:, 2:], x[:, 2:])
    assert (b.numpy()[:, :2] > 0).all()
    assert isinstance(D.transform_to(Cn.stack([Cn.positive, Cn.real], 0)), T.StackTransform)
    assert (ct.event_dim, ct2.event_dim, ct.length, ct.bijective) == (0, 1, 5, True)
    assert Cn.stack([Cn.real_vector], -1).event_dim == 1
    assert repr(ct) == "CatTransform()" and ct.with_cache(1)._cache_size == 1
    for f, msg in ((lambda: ct(t(np.ones((3, 4)))), "must equal length 5"),
                   (lambda: st(t(np.ones((2, 5)))), "must equal len"),
                   (lambda: T.CatTransform([1]), "must be Transform instances"),
                   (lambda: ct(t(np.ones(5))), "out of range")):
        with pytest.raises(AssertionError, match=msg):
            f()
