"""In the style of from-scratch Gaussian-process regression tutorials (GPyTorch's "simple GP
regression" example re-done in plain PyTorch, as in the "GPs from scratch" notebooks): an RBF
kernel through `torch.cdist(...).pow(2)`, positive hyperparameters as softplus of raw
nn.Parameters, the exact marginal likelihood through `torch.linalg.cholesky`,
`torch.cholesky_solve` and the log-determinant from the Cholesky diagonal (checked against
`MultivariateNormal(zeros, covariance_matrix=K).log_prob(y)` and `torch.logdet`), Adam on the
negative log marginal likelihood, the predictive mean and variance through
`torch.linalg.solve_triangular`, compared with numpy's dense solve in float64."""
import math

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.distributions import MultivariateNormal


class RBFKernel(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(1))
        self.raw_outputscale = nn.Parameter(torch.zeros(1))

    @property
    def lengthscale(self):
        return F.softplus(self.raw_lengthscale)

    @property
    def outputscale(self):
        return F.softplus(self.raw_outputscale)

    def forward(self, x1, x2):
        dist = torch.cdist(x1 / self.lengthscale, x2 / self.lengthscale, p=2).pow(2)
        return self.outputscale * torch.exp(-0.5 * dist)


class ExactGP(nn.Module):
    def __init__(self, train_x, train_y):
        super().__init__()
        self.train_x, self.train_y = train_x, train_y
        self.mean_constant = nn.Parameter(torch.zeros(()))
        self.kernel = RBFKernel()
        self.raw_noise = nn.Parameter(torch.tensor(-2.0))

    @property
    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4

    def neg_log_marginal_likelihood(self):
        x, y = self.train_x, self.train_y
        n = x.size(0)
        K = self.kernel(x, x) + self.noise * torch.eye(n, dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        r = (y - self.mean_constant).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L)
        data_fit = 0.5 * (r * alpha).sum()
        complexity = torch.log(torch.diagonal(L)).sum()
        return data_fit + complexity + 0.5 * n * math.log(2 * math.pi), K

    def predict(self, test_x):
        x, y = self.train_x, self.train_y
        K = self.kernel(x, x) + self.noise * torch.eye(x.size(0), dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        K_s = self.kernel(x, test_x)
        K_ss = self.kernel(test_x, test_x)
        r = (y - self.mean_constant).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L)
        mean = self.mean_constant + (K_s.transpose(-1, -2) @ alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(L, K_s, upper=False)
        var = torch.diagonal(K_ss) - (v * v).sum(0)
        return mean, var


def main():
    torch.manual_seed(0)
    train_x = torch.linspace(0, 1, 15, dtype=torch.float64).unsqueeze(-1)
    train_y = torch.sin(train_x.squeeze(-1) * (2 * math.pi)) + \
        torch.randn(15, dtype=torch.float64) * math.sqrt(0.04)
    model = ExactGP(train_x, train_y).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model.train()
    for i in range(10):
        optimizer.zero_grad()
        loss, K = model.neg_log_marginal_likelihood()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        loss, K = model.neg_log_marginal_likelihood()
        mvn = MultivariateNormal(model.mean_constant.expand(15), covariance_matrix=K)
        assert abs(mvn.log_prob(train_y).item() + loss.item()) < 1e-8
        assert abs(torch.logdet(K).item() - 2 * torch.log(torch.diagonal(
            torch.linalg.cholesky(K))).sum().item()) < 1e-8
        test_x = torch.linspace(0, 1, 7, dtype=torch.float64).unsqueeze(-1)
        mean, var = model.predict(test_x)
        # numpy float64 reference with the same hyperparameters
        ls, os_ = model.kernel.lengthscale.item(), model.kernel.outputscale.item()
        noise, c = model.noise.item(), model.mean_constant.item()
        xn, tn, yn = train_x.numpy()[:, 0], test_x.numpy()[:, 0], train_y.numpy()

        def k(a, b):
            return os_ * np.exp(-0.5 * ((a[:, None] - b[None]) / ls) ** 2)

        Kn = k(xn, xn) + noise * np.eye(15)
        ref_mean = c + k(xn, tn).T @ np.linalg.solve(Kn, yn - c)
        ref_var = np.diag(k(tn, tn)) - np.einsum("ij,ij->j", k(xn, tn),
                                                 np.linalg.solve(Kn, k(xn, tn)))
        assert np.allclose(mean.numpy(), ref_mean, atol=1e-8), (mean, ref_mean)
        assert np.allclose(var.numpy(), ref_var, atol=1e-8), (var, ref_var)
        lower, upper = mean - 2 * var.clamp_min(0).sqrt(), mean + 2 * var.clamp_min(0).sqrt()
        assert (lower <= upper).all()
    return loss.item()
