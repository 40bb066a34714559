"""LKJCholesky, Wishart, CorrCholeskyTransform and constraints.corr_cholesky against
independent references: scipy's Wishart log-density and entropy, the 2-d LKJ density in closed
form, finite-difference Jacobians in float64, and Monte Carlo moments."""
import math

import numpy as np
import pytest
from scipy import special, stats

import fusetorch as torch
from fusetorch.distributions import (CorrCholeskyTransform, LKJCholesky, Wishart, biject_to,
                                     constraints, transform_to)
from fusetorch.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix


def _t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def _spd(rng, n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_tril_vec_round_trip_and_errors():
    m = torch.arange(16.0).view(4, 4)
    v = tril_matrix_to_vec(m, diag=-1)
    assert v.tolist() == [4.0, 8.0, 9.0, 12.0, 13.0, 14.0]
    assert torch.equal(vec_to_tril_matrix(v, diag=-1), m.tril(-1))
    assert torch.equal(vec_to_tril_matrix(tril_matrix_to_vec(m)), m.tril())
    with pytest.raises(ValueError, match="cannot be expressed as the lower triangular part"):
        vec_to_tril_matrix(torch.zeros(5), diag=-1)
    with pytest.raises(ValueError, match=r"diag \(4\) provided is outside \[-4, 3\]"):
        tril_matrix_to_vec(m, diag=4)


def test_corr_cholesky_transform():
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((3, 6)))
    t = CorrCholeskyTransform()
    y = t(x)
    yn = y.numpy()
    assert y.shape == (3, 4, 4) and np.allclose(np.triu(yn, 1), 0)
    assert np.allclose(np.linalg.norm(yn, axis=-1), 1) and (np.diagonal(yn, 0, 1, 2) > 0).all()
    assert constraints.corr_cholesky.check(y).tolist() == [True] * 3
    assert not constraints.corr_cholesky.check(2 * y).any()
    assert np.allclose(t.inv(y).numpy(), x.numpy())
    assert t.forward_shape((2, 6)) == (2, 4, 4) and t.inverse_shape((2, 4, 4)) == (2, 6)
    with pytest.raises(ValueError, match="Input is not a flattend lower-diagonal number"):
        t.forward_shape((5,))
    assert biject_to(constraints.corr_cholesky) == t
    assert transform_to(constraints.corr_cholesky) == t
    # log|det J| of x -> the strict lower triangle of y, by central differences
    ladj = t.log_abs_det_jacobian(x, y).numpy()
    for b in range(3):
        x0 = x.numpy()[b]

        def f(v):
            return tril_matrix_to_vec(t(_t(v)), diag=-1).numpy()

        h = 1e-6
        J = np.stack([(f(x0 + h * e) - f(x0 - h * e)) / (2 * h) for e in np.eye(6)], 1)
        assert np.isclose(ladj[b], np.log(abs(np.linalg.det(J))), atol=1e-6)


@pytest.mark.parametrize("eta", [0.5, 1.0, 3.0])
def test_lkj_2d_closed_form(eta):
    # L = [[1, 0], [r, sqrt(1 - r^2)]]: density (1 - r^2)^(eta - 1) / B(1/2, eta) in r
    r = np.array([-0.9, -0.2, 0.0, 0.6])
    L = np.zeros((4, 2, 2))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1, r, np.sqrt(1 - r ** 2)
    got = LKJCholesky(2, eta).log_prob(_t(L)).numpy()
    want = (eta - 1) * np.log1p(-r ** 2) - special.betaln(0.5, eta)
    assert np.allclose(got, want, atol=1e-12)


def test_lkj_normalises_in_3d():
    # the density of the 3 free coordinates integrates to 1 (Monte Carlo over the cube of
    # unconstrained values, through the transform's Jacobian)
    torch.manual_seed(0)
    t = CorrCholeskyTransform()
    x = torch.rand(200000, 3, dtype=torch.float64) * 8 - 4  # [-4, 4]^3
    y = t(x)
    lp = LKJCholesky(3, 2.0).log_prob(y) + t.log_abs_det_jacobian(x, y)
    integral = lp.exp().mean().item() * 8 ** 3
    assert abs(integral - 1) < 0.02, integral


def test_lkj_samples_batch_expand_and_errors():
    torch.manual_seed(0)
    d = LKJCholesky(2, 1.0)  # uniform correlation: r ~ U(-1, 1)
    s = d.sample((20000,))
    assert s.shape == (20000, 2, 2) and bool(constraints.corr_cholesky.check(s).all())
    r = s[:, 1, 0]
    assert abs(r.mean().item()) < 0.02 and abs((r ** 2).mean().item() - 1 / 3) < 0.01
    b = LKJCholesky(3, torch.tensor([0.5, 2.0]))
    assert b.batch_shape == (2,) and b.event_shape == (3, 3)
    assert b.sample((4,)).shape == (4, 2, 3, 3)
    e = b.expand((5, 2))
    assert e.sample().shape == (5, 2, 3, 3)
    assert repr(LKJCholesky(3, 0.5)) == "LKJCholesky(concentration: 0.5)"
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal "
                                         "to 2. Found dim=1."):
        LKJCholesky(1)


def test_wishart_against_scipy():
    rng = np.random.default_rng(1)
    cov = _spd(rng, 3)
    val = _spd(rng, 3, (4,))
    for kind, arg in (("covariance_matrix", cov), ("precision_matrix", np.linalg.inv(cov)),
                      ("scale_tril", np.linalg.cholesky(cov))):
        w = Wishart(4.5, **{kind: _t(arg)})
        ref = stats.wishart(df=4.5, scale=cov)
        assert np.allclose(w.log_prob(_t(val)).numpy(), ref.logpdf(np.moveaxis(val, 0, -1)))
        assert np.isclose(w.entropy().item(), ref.entropy())
        assert np.allclose(w.covariance_matrix.numpy(), cov)
        assert np.allclose(w.precision_matrix.numpy(), np.linalg.inv(cov))
    w = Wishart(_t([4.5, 7.0]), covariance_matrix=_t(cov))
    V = cov
    assert np.allclose(w.mean.numpy(), np.array([4.5, 7.0])[:, None, None] * V)
    var = np.array([4.5, 7.0])[:, None, None] * (V ** 2 + np.outer(np.diag(V), np.diag(V)))
    assert np.allclose(w.variance.numpy(), var)
    assert np.allclose(w.mode.numpy(), np.array([0.5, 3.0])[:, None, None] * V)
    assert np.isnan(Wishart(3.5, covariance_matrix=_t(cov)).mode.numpy()).all()
    e = w.expand((2, 2))
    assert e.batch_shape == (2, 2) and e.log_prob(_t(val[:2])).shape == (2, 2)


def test_wishart_rsample_moments_and_gradient():
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    cov = _spd(rng, 2)
    c = _t(cov).requires_grad_()
    w = Wishart(_t(5.0), covariance_matrix=c)
    s = w.rsample((20000,))
    assert s.shape == (20000, 2, 2)
    assert np.allclose(s.mean(0).detach().numpy(), 5 * cov, rtol=0.03)
    s.mean(0).sum().backward()  # d/dcov of E[X] = df * cov, by reparameterisation: about 5
    assert np.allclose(c.grad.numpy(), 5.0, rtol=0.05), c.grad
    # log_prob's gradient in cov against central differences
    val = _t(_spd(rng, 2))

    def lp(m):
        return Wishart(5.0, covariance_matrix=_t(m)).log_prob(val).item()

    c2 = _t(cov).requires_grad_()
    Wishart(5.0, covariance_matrix=c2).log_prob(val).backward()
    g = c2.grad.numpy()
    h = 1e-6
    # (perturbed symmetrically: the Cholesky factorisation reads one triangle, and its
    # gradient, PyTorch's too, is the symmetric one)
    for i, j in ((0, 0), (1, 1), (0, 1)):
        e = np.zeros((2, 2))
        e[i, j] = e[j, i] = h
        fd = (lp(cov + e) - lp(cov - e)) / (2 * h)
        got = g[i, j] if i == j else g[i, j] + g[j, i]
        assert np.isclose(got, fd, atol=1e-6), (i, j, g, fd)


def test_wishart_errors_and_repr():
    eye = torch.eye(3)
    with pytest.raises(ValueError, match=r"Value of df=2 expected to be greater than ndim - 1 "
                                         r"= 2\."):
        Wishart(2, covariance_matrix=eye)
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or "
                                             "precision_matrix or scale_tril"):
        Wishart(4.0, covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional"):
        Wishart(4.0, covariance_matrix=torch.ones(3))
    with pytest.warns(UserWarning, match="Low df values detected"):
        Wishart(2.5, covariance_matrix=eye)
    assert repr(Wishart(5.0, scale_tril=eye)) == \
        "Wishart(scale_tril: torch.Size([3, 3]), df: 5.0)"
    assert bool(constraints.positive_definite.check(Wishart(5.0, scale_tril=eye).sample()))
    assert math.isfinite(Wishart(5.0, scale_tril=eye).log_prob(eye).item())
