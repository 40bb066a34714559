"""In the style of VAEs written on torch.distributions (the Pyro-free VAE recipes and the
"variational autoencoder with torch.distributions" posts): an encoder giving loc and
F.softplus scale, Independent(Normal(loc, scale), 1) posterior and prior, rsample for the
reparameterization trick, a Bernoulli(logits=...) likelihood made Independent over pixels,
kl_divergence(q, p) analytically and as a Monte-Carlo estimate (q.log_prob(z) - p.log_prob(z)),
importance-weighted log-likelihood with torch.logsumexp, and sampling from the prior."""
import math

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.distributions import Bernoulli, Independent, Normal, kl_divergence


class Encoder(nn.Module):
    def __init__(self, data_dim, hidden_dim, latent_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(data_dim, hidden_dim), nn.ReLU(),
                                 nn.Linear(hidden_dim, 2 * latent_dim))

    def forward(self, x):
        loc, scale = self.net(x).chunk(2, dim=-1)
        return Independent(Normal(loc, F.softplus(scale) + 1e-4), 1)


class Decoder(nn.Module):
    def __init__(self, latent_dim, hidden_dim, data_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_dim, hidden_dim), nn.ReLU(),
                                 nn.Linear(hidden_dim, data_dim))

    def forward(self, z):
        return Independent(Bernoulli(logits=self.net(z)), 1)


class VAE(nn.Module):
    def __init__(self, data_dim=64, hidden_dim=32, latent_dim=4):
        super().__init__()
        self.encoder = Encoder(data_dim, hidden_dim, latent_dim)
        self.decoder = Decoder(latent_dim, hidden_dim, data_dim)
        self.register_buffer("prior_loc", torch.zeros(latent_dim))
        self.register_buffer("prior_scale", torch.ones(latent_dim))

    def prior(self):
        return Independent(Normal(self.prior_loc, self.prior_scale), 1)

    def elbo(self, x, analytic_kl=True):
        q = self.encoder(x)
        z = q.rsample()
        log_lik = self.decoder(z).log_prob(x)
        if analytic_kl:
            kl = kl_divergence(q, self.prior())
        else:
            kl = q.log_prob(z) - self.prior().log_prob(z)
        return (log_lik - kl).mean()

    def iwae(self, x, k=8):
        q = self.encoder(x)
        z = q.rsample((k,))
        log_w = self.decoder(z).log_prob(x) + self.prior().log_prob(z) - q.log_prob(z)
        return (torch.logsumexp(log_w, dim=0) - math.log(k)).mean()


def main():
    torch.manual_seed(0)
    data = (torch.rand(64, 64) < 0.3).float()
    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(6):
        batch = data[torch.randint(0, 64, (16,))]
        loss = -model.elbo(batch, analytic_kl=step % 2 == 0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        print("iwae bound", model.iwae(data[:8]).item())
        q = model.encoder(data[:2])
        print(q.batch_shape, q.event_shape, q.mean.shape, q.variance.shape)
        print(model.prior())
        samples = model.decoder(model.prior().sample((3,))).sample()
        print(samples.shape, q.entropy().shape)
    return loss.item()


if __name__ == "__main__":
    main()
