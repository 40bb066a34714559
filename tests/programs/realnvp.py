"""In the style of karpathy/pytorch-normalizing-flows (nflib/flows.py and its notebook): RealNVP
affine half flows (AffineHalfFlow with parity, MLP s/t nets, log-det as a sum of s), ActNorm
initialised from the first batch, a NormalizingFlow stack with forward/backward passes of
log-det, the prior as `TransformedDistribution(Uniform(0, 1), SigmoidTransform().inv)` (a
logistic) and as MultivariateNormal(zeros, eye); trained with Adam on a two-moons-like set by
-(prior_logprob + log_det), then sampled from and inverted. The logistic prior's log_prob is
checked against its closed form."""
import math

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.distributions import MultivariateNormal, SigmoidTransform, \
    TransformedDistribution, Uniform


class MLP(nn.Module):
    """ a simple 4-layer MLP """

    def __init__(self, nin, nout, nh):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(nin, nh), nn.LeakyReLU(0.2),
            nn.Linear(nh, nh), nn.LeakyReLU(0.2),
            nn.Linear(nh, nh), nn.LeakyReLU(0.2),
            nn.Linear(nh, nout),
        )

    def forward(self, x):
        return self.net(x)


class AffineHalfFlow(nn.Module):
    """As seen in RealNVP, affine autoregressive flow (z = x * exp(s) + t), where half of the
    dimensions in x are linearly scaled/transfromed as a function of the other half."""

    def __init__(self, dim, parity, net_class=MLP, nh=24, scale=True, shift=True):
        super().__init__()
        self.dim = dim
        self.parity = parity
        self.s_cond = lambda x: x.new_zeros(x.size(0), self.dim // 2)
        self.t_cond = lambda x: x.new_zeros(x.size(0), self.dim // 2)
        if scale:
            self.s_cond = net_class(self.dim // 2, self.dim // 2, nh)
        if shift:
            self.t_cond = net_class(self.dim // 2, self.dim // 2, nh)

    def forward(self, x):
        x0, x1 = x[:, ::2], x[:, 1::2]
        if self.parity:
            x0, x1 = x1, x0
        s = self.s_cond(x0)
        t = self.t_cond(x0)
        z0 = x0  # untouched half
        z1 = torch.exp(s) * x1 + t  # transform this half as a function of the other
        if self.parity:
            z0, z1 = z1, z0
        z = torch.cat([z0, z1], dim=1)
        log_det = torch.sum(s, dim=1)
        return z, log_det

    def backward(self, z):
        z0, z1 = z[:, ::2], z[:, 1::2]
        if self.parity:
            z0, z1 = z1, z0
        s = self.s_cond(z0)
        t = self.t_cond(z0)
        x0 = z0  # this was the same
        x1 = (z1 - t) * torch.exp(-s)  # reverse the transform on this half
        if self.parity:
            x0, x1 = x1, x0
        x = torch.cat([x0, x1], dim=1)
        log_det = torch.sum(-s, dim=1)
        return x, log_det


class AffineConstantFlow(nn.Module):
    """Scales + Shifts the flow by (learned) constants per dimension."""

    def __init__(self, dim, scale=True, shift=True):
        super().__init__()
        self.s = nn.Parameter(torch.randn(1, dim, requires_grad=True)) if scale else None
        self.t = nn.Parameter(torch.randn(1, dim, requires_grad=True)) if shift else None

    def forward(self, x):
        s = self.s if self.s is not None else x.new_zeros(x.size())
        t = self.t if self.t is not None else x.new_zeros(x.size())
        z = x * torch.exp(s) + t
        log_det = torch.sum(s, dim=1)
        return z, log_det

    def backward(self, z):
        s = self.s if self.s is not None else z.new_zeros(z.size())
        t = self.t if self.t is not None else z.new_zeros(z.size())
        x = (z - t) * torch.exp(-s)
        log_det = torch.sum(-s, dim=1)
        return x, log_det


class ActNorm(AffineConstantFlow):
    """Really an AffineConstantFlow but with a data-dependent initialization, where on the very
    first batch we clever initialize the s,t so that the output is unit gaussian."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.data_dep_init_done = False

    def forward(self, x):
        # first batch is used for init
        if not self.data_dep_init_done:
            assert self.s is not None and self.t is not None  # for now
            self.s.data = (-torch.log(x.std(dim=0, keepdim=True))).detach()
            self.t.data = (-(x * torch.exp(self.s)).mean(dim=0, keepdim=True)).detach()
            self.data_dep_init_done = True
        return super().forward(x)


class NormalizingFlow(nn.Module):
    """ A sequence of Normalizing Flows is a Normalizing Flow """

    def __init__(self, flows):
        super().__init__()
        self.flows = nn.ModuleList(flows)

    def forward(self, x):
        m, _ = x.shape
        log_det = torch.zeros(m)
        zs = [x]
        for flow in self.flows:
            x, ld = flow.forward(x)
            log_det += ld
            zs.append(x)
        return zs, log_det

    def backward(self, z):
        m, _ = z.shape
        log_det = torch.zeros(m)
        xs = [z]
        for flow in self.flows[::-1]:
            z, ld = flow.backward(z)
            log_det += ld
            xs.append(z)
        return xs, log_det


class NormalizingFlowModel(nn.Module):
    """ A Normalizing Flow Model is a (prior, flow) pair """

    def __init__(self, prior, flows):
        super().__init__()
        self.prior = prior
        self.flow = NormalizingFlow(flows)

    def forward(self, x):
        zs, log_det = self.flow.forward(x)
        prior_logprob = self.prior.log_prob(zs[-1]).view(x.size(0), -1).sum(1)
        return zs, prior_logprob, log_det

    def backward(self, z):
        xs, log_det = self.flow.backward(z)
        return xs, log_det

    def sample(self, num_samples):
        z = self.prior.sample((num_samples,))
        xs, _ = self.flow.backward(z)
        return xs


def two_moons(n, generator):
    t = torch.rand(n, generator=generator) * math.pi
    upper = torch.rand(n, generator=generator) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) + 0.05 * torch.randn(n, 2, generator=generator)


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    # the logistic prior of the repo, checked against -x - 2 log(1 + e^-x)
    logistic = TransformedDistribution(Uniform(torch.zeros(2), torch.ones(2)),
                                       SigmoidTransform().inv)
    v = torch.tensor([[0.3, -1.2]])
    assert torch.allclose(logistic.log_prob(v), -v - 2 * F.softplus(-v), atol=1e-6)
    prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
    flows = [AffineHalfFlow(dim=2, parity=i % 2, nh=16) for i in range(4)]
    norms = [ActNorm(dim=2) for _ in flows]
    flows = list(sum(zip(norms, flows), ()))
    model = NormalizingFlowModel(prior, flows)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    assert sum(p.numel() for p in model.parameters()) > 0
    model.train()
    for k in range(3):
        x = two_moons(64, g)
        zs, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -torch.sum(logprob)  # NLL
        model.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    x = two_moons(16, g)
    with torch.no_grad():
        zs, prior_logprob, log_det = model(x)
        xs, back_det = model.backward(zs[-1])
        assert torch.allclose(xs[-1], x, atol=1e-4)
        assert torch.allclose(log_det, -back_det, atol=1e-4)
        samples = model.sample(8)[-1]
    assert samples.shape == (8, 2) and torch.isfinite(samples).all()
    return loss.item() / 64
