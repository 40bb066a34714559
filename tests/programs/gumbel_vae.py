"""In the style of YongfeiYan/Gumbel_Softmax_VAE (gumbel_softmax_vae.py): sample_gumbel from
torch.rand, gumbel_softmax_sample with a temperature, the straight-through hard sample
(`y_hard.scatter_(1, ind.view(-1, 1), 1)` then `(y_hard - y).detach() + y`), a VAE whose
latent is latent_dim categorical variables, the loss as BCE plus the KL to a uniform prior
(`torch.log(qy * categorical_dim + 1e-20)`), temperature annealing with np.maximum/np.exp every
few batches, Adam; F.gumbel_softmax(hard=True) checked to return one-hot rows whose gradient
flows through the soft sample."""
import numpy as np

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch import nn, optim

latent_dim = 4
categorical_dim = 5
temp_min = 0.5
ANNEAL_RATE = 0.00003


def sample_gumbel(shape, eps=1e-20):
    U = torch.rand(shape)
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax_sample(logits, temperature):
    y = logits + sample_gumbel(logits.size())
    return F.softmax(y / temperature, dim=-1)


def gumbel_softmax(logits, temperature, hard=False):
    """
    ST-gumple-softmax
    input: [*, n_class]
    return: flatten --> [*, n_class] an one-hot vector
    """
    y = gumbel_softmax_sample(logits, temperature)
    if not hard:
        return y.view(-1, latent_dim * categorical_dim)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    # Set gradients w.r.t. y_hard gradients w.r.t. y
    y_hard = (y_hard - y).detach() + y
    return y_hard.view(-1, latent_dim * categorical_dim)


class VAE_gumbel(nn.Module):
    def __init__(self, temp):
        super(VAE_gumbel, self).__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, latent_dim * categorical_dim)
        self.fc4 = nn.Linear(latent_dim * categorical_dim, 16)
        self.fc5 = nn.Linear(16, 32)
        self.fc6 = nn.Linear(32, 64)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def encode(self, x):
        h1 = self.relu(self.fc1(x))
        h2 = self.relu(self.fc2(h1))
        return self.relu(self.fc3(h2))

    def decode(self, z):
        h4 = self.relu(self.fc4(z))
        h5 = self.relu(self.fc5(h4))
        return self.sigmoid(self.fc6(h5))

    def forward(self, x, temp, hard):
        q = self.encode(x.view(-1, 64))
        q_y = q.view(q.size(0), latent_dim, categorical_dim)
        z = gumbel_softmax(q_y, temp, hard)
        return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())


def loss_function(recon_x, x, qy):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum") / x.shape[0]
    log_ratio = torch.log(qy * categorical_dim + 1e-20)
    KLD = torch.sum(qy * log_ratio, dim=-1).mean()
    return BCE + KLD


def main():
    torch.manual_seed(0)
    # the library's gumbel_softmax: one-hot rows, gradients through the soft sample
    logits = torch.randn(6, categorical_dim, requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert torch.equal(y.sum(-1), torch.ones(6)) and set(y.detach().unique().tolist()) <= {0.0, 1.0}
    (y * torch.arange(5.0)).sum().backward()
    assert logits.grad.abs().sum() > 0
    soft = F.gumbel_softmax(logits, tau=1.0)
    assert torch.allclose(soft.sum(-1), torch.ones(6))

    temp = 1.0
    hard = False
    model = VAE_gumbel(temp)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    data = (torch.rand(24, 1, 8, 8) > 0.5).float()
    model.train()
    train_loss = 0
    for batch_idx in range(3):
        x = data[batch_idx * 8:(batch_idx + 1) * 8]
        optimizer.zero_grad()
        recon_batch, qy = model(x, temp, hard)
        loss = loss_function(recon_batch, x, qy)
        loss.backward()
        train_loss += loss.item() * len(x)
        optimizer.step()
        if batch_idx % 2 == 1:
            temp = np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx), temp_min)
    model.eval()
    with torch.no_grad():
        recon, qy = model(data[:8], temp, True)
        assert recon.shape == (8, 64) and torch.allclose(
            qy.view(8, latent_dim, categorical_dim).sum(-1), torch.ones(8, latent_dim))
        # sampling: random one-hot codes decoded
        ind = torch.zeros(16, 1).long().random_(0, categorical_dim)
        z = torch.zeros(16, categorical_dim).scatter_(1, ind, 1).view(4, -1)
        assert model.decode(z).shape == (4, 64)
    return train_loss / 24
