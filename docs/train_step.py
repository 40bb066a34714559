"""Draws the graph of a small MLP's compiled SGD step (the README's picture, kept as
docs/train_step.svg): `python docs/train_step.py [OUTPUT.svg]`, by default train_step.svg in the
current directory, so a run from the repository root leaves the tracked picture alone unless
it is named: `python docs/train_step.py docs/train_step.svg`."""
import sys

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.utils import viz

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.MSELoss()

@torch.compile
def train_step(x, y):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss

x, y = torch.randn(8, 20), torch.randn(8, 3)
for _ in range(3):  # the first step creates the momentum buffers, the second compiles
    train_step(x, y)
print("\n".join(train_step.kernels()))  # labelled (forward+backward), (forward), ..., (update)
viz.render(train_step, sys.argv[1] if len(sys.argv) > 1 else "train_step.svg")  # needs dot
