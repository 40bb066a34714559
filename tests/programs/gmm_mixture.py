"""In the style of the torch.distributions MixtureSameFamily documentation and the common
"fit a Gaussian mixture by gradient descent" notebooks: a 2-d mixture as
`MixtureSameFamily(Categorical(logits=...), Independent(Normal(loc, softplus(scale)), 1))`,
fitted with Adam on -log_prob(x).mean(); then the posterior responsibilities through
`component_distribution.log_prob(x.unsqueeze(-2))` + mixture logits, `mixture.mean` and
`.variance`, `sample((n,))`, a mixture of MultivariateNormal(scale_tril) components, KL between
Normals (kl_divergence) and entropy; log_prob is checked against numpy's logsumexp form."""
import math

import numpy as np

import fusetorch as torch
import fusetorch.distributions as D
import fusetorch.nn.functional as F


def main():
    torch.manual_seed(0)
    true_means = torch.tensor([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.5]])
    comp = torch.randint(0, 3, (120,))
    data = true_means[comp] + 0.5 * torch.randn(120, 2)

    k = 3
    logits = torch.zeros(k, requires_grad=True)
    loc = torch.randn(k, 2, requires_grad=True)
    raw_scale = torch.zeros(k, 2, requires_grad=True)
    optimizer = torch.optim.Adam([logits, loc, raw_scale], lr=0.05)
    for step in range(20):
        mix = D.Categorical(logits=logits)
        comp_dist = D.Independent(D.Normal(loc, F.softplus(raw_scale)), 1)
        gmm = D.MixtureSameFamily(mix, comp_dist)
        loss = -gmm.log_prob(data).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    with torch.no_grad():
        mix = D.Categorical(logits=logits)
        comp_dist = D.Independent(D.Normal(loc, F.softplus(raw_scale)), 1)
        gmm = D.MixtureSameFamily(mix, comp_dist)
        assert gmm.batch_shape == torch.Size([]) and gmm.event_shape == torch.Size([2])
        lp = gmm.log_prob(data[:5])
        # numpy reference: logsumexp_k (log pi_k + sum_d log N(x_d; mu_kd, s_kd))
        x = data[:5].numpy().astype(np.float64)[:, None, :]
        mu = loc.detach().numpy().astype(np.float64)[None]
        s = F.softplus(raw_scale).numpy().astype(np.float64)[None]
        logpi = logits.detach().numpy().astype(np.float64)
        logpi = logpi - np.log(np.exp(logpi).sum())
        comp_lp = (-0.5 * ((x - mu) / s) ** 2 - np.log(s) - 0.5 * math.log(2 * math.pi)).sum(-1)
        a = comp_lp + logpi
        ref = np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1)
        assert np.allclose(lp.numpy(), ref, atol=1e-5), (lp, ref)
        # responsibilities, as the notebooks' E step
        log_resp = comp_dist.log_prob(data.unsqueeze(-2)) + torch.log_softmax(logits, -1)
        resp = torch.softmax(log_resp, dim=-1)
        assert torch.allclose(resp.sum(-1), torch.ones(120), atol=1e-5)
        labels = resp.argmax(-1)
        assert labels.shape == (120,)
        mean, var = gmm.mean, gmm.variance
        pi = mix.probs
        ref_mean = (pi[:, None] * loc).sum(0)
        assert torch.allclose(mean, ref_mean, atol=1e-5)
        assert var.shape == (2,) and (var > 0).all()
        samples = gmm.sample((50,))
        assert samples.shape == (50, 2)
        # a batch of two mixtures of full-covariance components
        tril = torch.tensor([[1.0, 0.0], [0.3, 0.8]]).expand(2, k, 2, 2)
        mvn = D.MultivariateNormal(loc.expand(2, k, 2), scale_tril=tril)
        gmm2 = D.MixtureSameFamily(D.Categorical(logits=logits.expand(2, k)), mvn)
        assert gmm2.batch_shape == (2,) and gmm2.log_prob(data[:4, None]).shape == (4, 2)
        # KL between a fitted component and the standard normal, closed form
        p = D.Normal(loc[0], F.softplus(raw_scale[0]))
        q = D.Normal(torch.zeros(2), torch.ones(2))
        kl = D.kl_divergence(p, q)
        ref_kl = torch.log(1 / p.scale) + (p.scale ** 2 + p.loc ** 2) / 2 - 0.5
        assert torch.allclose(kl, ref_kl, atol=1e-6)
        assert torch.allclose(p.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) +
                              torch.log(p.scale), atol=1e-6)
    return loss.item()
