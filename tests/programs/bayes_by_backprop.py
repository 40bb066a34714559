"""In the style of the "Weight Uncertainty in Neural Networks" (Bayes by Backprop) PyTorch
notebooks (nitarshan's bayes-by-backprop): a Gaussian variational posterior with
`torch.log1p(torch.exp(self.rho))` as sigma and `self.normal.sample(self.rho.size())`
reparameterisation, a ScaleMixtureGaussian prior built from two torch.distributions.Normal,
BayesianLinear layers accumulating log_prior and log_variational_posterior, `sample_elbo`
averaging several samples with `F.nll_loss(outputs.mean(0), target, reduction='sum')`,
minibatch weighting of the complexity cost, Adam; an ensemble prediction at test time. The
posterior's log-density is checked against Normal.log_prob and numpy."""
import math

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim

DEVICE = torch.device("cpu")
SAMPLES = 2
BATCH_SIZE = 8
CLASSES = 4
TRAIN_SIZE = 32
NUM_BATCHES = TRAIN_SIZE // BATCH_SIZE
PI = 0.5
SIGMA_1 = torch.FloatTensor([math.exp(-0)])
SIGMA_2 = torch.FloatTensor([math.exp(-6)])


class Gaussian(object):
    def __init__(self, mu, rho):
        super().__init__()
        self.mu = mu
        self.rho = rho
        self.normal = torch.distributions.Normal(0, 1)

    @property
    def sigma(self):
        return torch.log1p(torch.exp(self.rho))

    def sample(self):
        epsilon = self.normal.sample(self.rho.size()).to(DEVICE)
        return self.mu + self.sigma * epsilon

    def log_prob(self, input):
        return (-math.log(math.sqrt(2 * math.pi))
                - torch.log(self.sigma)
                - ((input - self.mu) ** 2) / (2 * self.sigma ** 2)).sum()


class ScaleMixtureGaussian(object):
    def __init__(self, pi, sigma1, sigma2):
        super().__init__()
        self.pi = pi
        self.sigma1 = sigma1
        self.sigma2 = sigma2
        self.gaussian1 = torch.distributions.Normal(0, sigma1)
        self.gaussian2 = torch.distributions.Normal(0, sigma2)

    def log_prob(self, input):
        prob1 = torch.exp(self.gaussian1.log_prob(input))
        prob2 = torch.exp(self.gaussian2.log_prob(input))
        return (torch.log(self.pi * prob1 + (1 - self.pi) * prob2)).sum()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        # Weight parameters
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
        self.weight = Gaussian(self.weight_mu, self.weight_rho)
        # Bias parameters
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
        self.bias = Gaussian(self.bias_mu, self.bias_rho)
        # Prior distributions
        self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.bias_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, input, sample=False, calculate_log_probs=False):
        if self.training or sample:
            weight = self.weight.sample()
            bias = self.bias.sample()
        else:
            weight = self.weight.mu
            bias = self.bias.mu
        if self.training or calculate_log_probs:
            self.log_prior = self.weight_prior.log_prob(weight) + self.bias_prior.log_prob(bias)
            self.log_variational_posterior = self.weight.log_prob(weight) + \
                self.bias.log_prob(bias)
        else:
            self.log_prior, self.log_variational_posterior = 0, 0
        return F.linear(input, weight, bias)


class BayesianNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = BayesianLinear(16, 32)
        self.l2 = BayesianLinear(32, 32)
        self.l3 = BayesianLinear(32, CLASSES)

    def forward(self, x, sample=False):
        x = x.view(-1, 16)
        x = F.relu(self.l1(x, sample))
        x = F.relu(self.l2(x, sample))
        x = F.log_softmax(self.l3(x, sample), dim=1)
        return x

    def log_prior(self):
        return self.l1.log_prior + self.l2.log_prior + self.l3.log_prior

    def log_variational_posterior(self):
        return self.l1.log_variational_posterior + self.l2.log_variational_posterior + \
            self.l3.log_variational_posterior

    def sample_elbo(self, input, target, samples=SAMPLES):
        outputs = torch.zeros(samples, BATCH_SIZE, CLASSES).to(DEVICE)
        log_priors = torch.zeros(samples).to(DEVICE)
        log_variational_posteriors = torch.zeros(samples).to(DEVICE)
        for i in range(samples):
            outputs[i] = self(input, sample=True)
            log_priors[i] = self.log_prior()
            log_variational_posteriors[i] = self.log_variational_posterior()
        log_prior = log_priors.mean()
        log_variational_posterior = log_variational_posteriors.mean()
        negative_log_likelihood = F.nll_loss(outputs.mean(0), target, reduction="sum")
        loss = (log_variational_posterior - log_prior) / NUM_BATCHES + negative_log_likelihood
        return loss, log_prior, log_variational_posterior, negative_log_likelihood


def main():
    torch.manual_seed(0)
    # the posterior's log density is a sum of Normal log-densities
    g = Gaussian(torch.tensor([0.3, -1.0]), torch.tensor([-2.0, 0.5]))
    w = torch.tensor([0.1, 0.2])
    ref = torch.distributions.Normal(g.mu, g.sigma).log_prob(w).sum()
    assert torch.allclose(g.log_prob(w), ref)
    sig = np.log1p(np.exp([-2.0, 0.5]))
    npref = np.sum(-0.5 * np.log(2 * np.pi) - np.log(sig) - (np.array([0.1, 0.2]) -
                                                             np.array([0.3, -1.0])) ** 2 /
                   (2 * sig ** 2))
    assert abs(g.log_prob(w).item() - npref) < 1e-5

    net = BayesianNetwork().to(DEVICE)
    optimizer = optim.Adam(net.parameters())
    data = torch.rand(TRAIN_SIZE, 4, 4)
    target = torch.randint(0, CLASSES, (TRAIN_SIZE,))
    net.train()
    for batch_idx in range(NUM_BATCHES):
        x = data[batch_idx * BATCH_SIZE:(batch_idx + 1) * BATCH_SIZE]
        y = target[batch_idx * BATCH_SIZE:(batch_idx + 1) * BATCH_SIZE]
        net.zero_grad()
        loss, log_prior, log_variational_posterior, negative_log_likelihood = \
            net.sample_elbo(x, y)
        loss.backward()
        optimizer.step()
    assert net.l1.weight_rho.grad is not None and net.l1.weight_rho.grad.abs().sum() > 0
    net.eval()
    with torch.no_grad():
        outputs = torch.zeros(SAMPLES + 1, BATCH_SIZE, CLASSES).to(DEVICE)
        for i in range(SAMPLES):
            outputs[i] = net(data[:BATCH_SIZE], sample=True)
        outputs[SAMPLES] = net(data[:BATCH_SIZE], sample=False)
        output = outputs.mean(0)
        preds = outputs.max(2, keepdim=True)[1]
        pred = output.max(1, keepdim=True)[1]  # index of max log-probability
        corrects = preds.eq(target[:BATCH_SIZE].view_as(pred)).sum(dim=1).squeeze()
        assert corrects.shape == (SAMPLES + 1,)
    return loss.item() / BATCH_SIZE
