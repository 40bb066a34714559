"""In the style of Pyro's examples/lkj.py (an LKJ prior on the correlation of a multivariate
normal, HalfCauchy scales) done with torch.distributions alone, as MAP estimation: unconstrained
parameters mapped through `biject_to(constraints.corr_cholesky)` (CorrCholeskyTransform, with
its log-det-Jacobian) and softplus, `torch.mm(theta.sqrt().diag_embed(), L_omega)` as the
covariance's Cholesky factor, `LKJCholesky(d, concentration).log_prob`, `MultivariateNormal(mu,
scale_tril=...)`, Adam; then the conjugate check with a Wishart posterior over the precision
(`Wishart(df, covariance_matrix=...)`: its mean, log_prob and rsample) and the LKJ prior's
samples giving correlation matrices with a unit diagonal."""
import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.distributions import (HalfCauchy, LKJCholesky, MultivariateNormal, Wishart,
                                     biject_to, constraints)


def main():
    torch.manual_seed(0)
    d, n = 3, 60
    true_cov = torch.tensor([[1.0, 0.6, -0.3], [0.6, 2.0, 0.2], [-0.3, 0.2, 0.5]])
    data = MultivariateNormal(torch.zeros(d), covariance_matrix=true_cov).sample((n,))

    to_corr = biject_to(constraints.corr_cholesky)
    raw_corr = torch.zeros(d * (d - 1) // 2, requires_grad=True)
    raw_theta = torch.zeros(d, requires_grad=True)
    mu = torch.zeros(d, requires_grad=True)
    eta = torch.ones(1)  # uniform over correlation matrices, as the example's default
    optimizer = torch.optim.Adam([raw_corr, raw_theta, mu], lr=0.05)
    for step in range(30):
        L_omega = to_corr(raw_corr)
        theta = F.softplus(raw_theta)
        # Lower cholesky factor of the covariance matrix
        L_Omega = torch.mm(theta.sqrt().diag_embed(), L_omega)
        log_prior = (LKJCholesky(d, eta).log_prob(L_omega).sum()
                     + to_corr.log_abs_det_jacobian(raw_corr, L_omega)
                     + HalfCauchy(torch.ones(d)).log_prob(theta).sum())
        log_lik = MultivariateNormal(mu, scale_tril=L_Omega).log_prob(data).sum()
        loss = -(log_lik + log_prior) / n
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    with torch.no_grad():
        L_omega = to_corr(raw_corr)
        corr = L_omega @ L_omega.T
        assert torch.allclose(corr.diagonal(), torch.ones(d), atol=1e-6)
        assert constraints.corr_cholesky.check(L_omega)
        assert torch.allclose(to_corr.inv(L_omega), raw_corr, atol=1e-5)
        # conjugate posterior of the precision under a Wishart(d + 1, I) prior, mean known
        centered = data - data.mean(0)
        scatter = centered.T @ centered
        post = Wishart(torch.tensor(float(d + 1 + n)),
                       covariance_matrix=torch.linalg.inv(torch.eye(d) + scatter))
        assert torch.allclose(post.mean, (d + 1 + n) * torch.linalg.inv(torch.eye(d) + scatter))
        draws = post.rsample((200,))
        assert draws.shape == (200, d, d) and torch.isfinite(post.log_prob(draws)).all()
        assert constraints.positive_definite.check(draws).all()
        prior_draws = LKJCholesky(d, 0.5).sample((50,))
        corr_draws = prior_draws @ prior_draws.transpose(-1, -2)
        assert torch.allclose(corr_draws.diagonal(dim1=-2, dim2=-1), torch.ones(50, d),
                              atol=1e-5)
    return loss.item()
