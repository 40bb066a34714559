"""In the style of the "What is torch.nn really?" tutorial: logistic regression written with
raw tensors (hand-made log_softmax, negative log-likelihood by fancy indexing, updates under
no_grad), then refactored step by step onto F.cross_entropy, nn.Module/nn.Parameter,
nn.Linear, optim, TensorDataset/DataLoader, and a CNN built from nn.Sequential with a Lambda
layer and AdaptiveAvgPool2d. The data are random 28x28 "digits" with labels derived from them."""
import math

import numpy as np

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch import nn, optim
from fusetorch.utils.data import DataLoader, TensorDataset

bs = 16
lr = 0.1


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb):
        return xb @ self.weights + self.bias


class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x):
    return x.view(-1, 1, 28, 28)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(epoch, val_loss)
    return val_loss


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x_np = rng.random((64, 784), dtype=np.float32)
    y_np = (x_np[:, :10].argmax(1)).astype(np.int64)
    x_train, y_train, x_valid, y_valid = map(torch.tensor, (x_np[:48], y_np[:48], x_np[48:], y_np[48:]))
    n, c = x_train.shape
    print(x_train.shape, y_train.min(), y_train.max())

    # from scratch
    weights = torch.randn(784, 10) / math.sqrt(784)
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    loss_func = nll
    xb, yb = x_train[0:bs], y_train[0:bs]
    start = loss_func(model(xb), yb)
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        xb, yb = x_train[start_i:start_i + bs], y_train[start_i:start_i + bs]
        loss = loss_func(model(xb), yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
    # the hand-written loss is the library's
    assert torch.allclose(loss_func(model(xb), yb), F.cross_entropy(xb @ weights + bias, yb), atol=1e-5)
    print(start.item(), loss.item(), accuracy(model(xb), yb).item())

    # nn.Module + manual parameter updates
    model = Mnist_Logistic()
    loss_func = F.cross_entropy
    for i in range((n - 1) // bs + 1):
        xb, yb = x_train[i * bs:i * bs + bs], y_train[i * bs:i * bs + bs]
        loss = loss_func(model(xb), yb)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad * lr
            model.zero_grad()

    # nn.Linear, optim, DataLoader
    train_dl = DataLoader(TensorDataset(x_train, y_train), batch_size=bs, shuffle=True)
    valid_dl = DataLoader(TensorDataset(x_valid, y_valid), batch_size=bs * 2)
    model = nn.Linear(784, 10)
    opt = optim.SGD(model.parameters(), lr=lr)
    fit(1, model, loss_func, opt, train_dl, valid_dl)

    # CNN with a Lambda layer
    model = nn.Sequential(
        Lambda(preprocess),
        nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 10, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        Lambda(lambda x: x.view(x.size(0), -1)),
    )
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    return fit(2, model, loss_func, opt, train_dl, valid_dl)


if __name__ == "__main__":
    main()
