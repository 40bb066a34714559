"""In the style of dfdazac/wassdistance (layers.py: SinkhornDistance) and the "Sinkhorn
iterations in PyTorch" notebooks: entropic optimal transport between point clouds in the log
domain, `torch.empty(batch_size, x_points, dtype=torch.float, requires_grad=False).fill_(1.0 /
x_points).squeeze()`, the modified cost `M(C, u, v)` with unsqueeze(-1)/(-2), updates through
`torch.logsumexp(..., dim=-1)`, a stopping rule on `err.item() < thresh`, `_cost_matrix` with
`torch.sum((torch.abs(x_col - y_lin)) ** p, -1)`, and the transport plan `pi = torch.exp(...)`;
the cost is checked against a numpy Sinkhorn and the plan's marginals, and differentiated to
move one cloud onto the other."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn


class SinkhornDistance(nn.Module):
    def __init__(self, eps, max_iter, reduction="none"):
        super(SinkhornDistance, self).__init__()
        self.eps = eps
        self.max_iter = max_iter
        self.reduction = reduction

    def forward(self, x, y):
        # The Sinkhorn algorithm takes as input three variables :
        C = self._cost_matrix(x, y)  # Wasserstein cost function
        x_points = x.shape[-2]
        y_points = y.shape[-2]
        if x.dim() == 2:
            batch_size = 1
        else:
            batch_size = x.shape[0]
        # both marginals are fixed with equal weights
        mu = torch.empty(batch_size, x_points, dtype=torch.float,
                         requires_grad=False).fill_(1.0 / x_points).squeeze()
        nu = torch.empty(batch_size, y_points, dtype=torch.float,
                         requires_grad=False).fill_(1.0 / y_points).squeeze()
        u = torch.zeros_like(mu)
        v = torch.zeros_like(nu)
        # To check if algorithm terminates because of threshold
        # or max iterations reached
        actual_nits = 0
        # Stopping criterion
        thresh = 1e-1
        # Sinkhorn iterations
        for i in range(self.max_iter):
            u1 = u  # useful to check the update
            u = self.eps * (torch.log(mu + 1e-8) - torch.logsumexp(self.M(C, u, v), dim=-1)) + u
            v = self.eps * (torch.log(nu + 1e-8) -
                            torch.logsumexp(self.M(C, u, v).transpose(-2, -1), dim=-1)) + v
            err = (u - u1).abs().sum(-1).mean()
            actual_nits += 1
            if err.item() < thresh:
                break
        U, V = u, v
        # Transport plan pi = diag(a)*K*diag(b)
        pi = torch.exp(self.M(C, U, V))
        # Sinkhorn distance
        cost = torch.sum(pi * C, dim=(-2, -1))
        if self.reduction == "mean":
            cost = cost.mean()
        elif self.reduction == "sum":
            cost = cost.sum()
        return cost, pi, C

    def M(self, C, u, v):
        "Modified cost for logarithmic updates"
        "$M_{ij} = (-c_{ij} + u_i + v_j) / \\epsilon$"
        return (-C + u.unsqueeze(-1) + v.unsqueeze(-2)) / self.eps

    @staticmethod
    def _cost_matrix(x, y, p=2):
        "Returns the matrix of $|x_i-y_j|^p$."
        x_col = x.unsqueeze(-2)
        y_lin = y.unsqueeze(-3)
        C = torch.sum((torch.abs(x_col - y_lin)) ** p, -1)
        return C

    @staticmethod
    def ave(u, u1, tau):
        "Barycenter subroutine, used by kinetic acceleration through extrapolation."
        return tau * u + (1 - tau) * u1


def sinkhorn_numpy(x, y, eps, iters):
    C = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    n, m = C.shape
    mu, nu = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    u, v = np.zeros(n), np.zeros(m)

    def lse(a):
        mx = a.max(-1, keepdims=True)
        return (mx + np.log(np.exp(a - mx).sum(-1, keepdims=True)))[..., 0]

    for _ in range(iters):
        u = eps * (np.log(mu + 1e-8) - lse((-C + u[:, None] + v[None]) / eps)) + u
        v = eps * (np.log(nu + 1e-8) - lse(((-C + u[:, None] + v[None]) / eps).T)) + v
    pi = np.exp((-C + u[:, None] + v[None]) / eps)
    return (pi * C).sum(), pi


def main():
    torch.manual_seed(0)
    n = 12
    a = torch.rand(n, 2)
    b = torch.rand(n, 2) + torch.tensor([1.0, 0.0])
    sinkhorn = SinkhornDistance(eps=0.1, max_iter=100, reduction=None)
    dist, P, C = sinkhorn(a, b)
    # fixed iterations in numpy: run the module's count (its stopping rule stopped it)
    iters = 100
    sk = SinkhornDistance(eps=0.1, max_iter=iters)
    sk_dist, sk_P, _ = sk(a.double(), b.double())
    ref_dist, ref_P = sinkhorn_numpy(a.double().numpy(), b.double().numpy(), 0.1, iters)
    assert P.shape == (n, n) and C.shape == (n, n)
    assert abs(dist.item() - ref_dist) / ref_dist < 0.05
    assert np.allclose(P.sum(0).numpy(), 1.0 / n, atol=0.02)
    # batched clouds
    xb, yb = torch.rand(3, 5, 2), torch.rand(3, 7, 2)
    cost, pi, _ = SinkhornDistance(eps=0.1, max_iter=50, reduction="mean")(xb, yb)
    assert pi.shape == (3, 5, 7) and cost.dim() == 0
    # move the cloud a onto b by gradient descent on the distance
    x = a.clone().requires_grad_()
    optimizer = torch.optim.SGD([x], lr=0.5)
    for _ in range(3):
        loss, _, _ = sinkhorn(x, b)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < dist.item()
    return loss.item()
