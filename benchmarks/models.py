"""Models the benchmarks share, written against a module `T` with PyTorch's API, so the same
code builds them with fusetorch and, in bench_table.py's PyTorch run, with torch. Imports
nothing itself: a PyTorch interpreter without fusetorch's dependencies can load it."""
from __future__ import annotations


def lenet_model(T):
    """LeNet-5 for 1x32x32 inputs (the benchmarks' LeNet step, batch 64)."""
    nn, F = T.nn, T.nn.functional

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = T.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    return LeNet()
