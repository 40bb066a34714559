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
print("\n".join(train_step.kernels()))  # each labelled (forward), (backward) or (update)
viz.render(train_step, "docs/train_step.svg")  # needs the graphviz package and dot
