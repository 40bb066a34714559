"""LeNet-5 learns to read digits from a synthetic data set it draws itself.

Each image is a 32x32 seven-segment digit with a random position, size, slant, stroke width and
pixel noise, so the network has to learn shapes, not pixels. The classic LeNet (two conv +
max-pool stages, three linear layers) trains with SGD + momentum on mini-batches from a
DataLoader and is scored on images it never saw.

    python examples/lenet_digits.py [--epochs 4] [--train 3000] [--compile]
"""
import argparse

import numpy as np
from tqdm import tqdm

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.utils.data import DataLoader, TensorDataset

# segment endpoints on a unit box (x right, y down): a top, b upper right, c lower right,
# d bottom, e lower left, f upper left, g middle
SEGMENTS = {
    "a": ((0, 0), (1, 0)), "b": ((1, 0), (1, 1)), "c": ((1, 1), (1, 2)), "d": ((0, 2), (1, 2)),
    "e": ((0, 1), (0, 2)), "f": ((0, 0), (0, 1)), "g": ((0, 1), (1, 1)),
}
DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]


def draw_digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n images [n, 1, 32, 32] (float32, roughly zero-mean) and labels [n] (int64)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32)
    images = np.zeros((n, 32, 32), np.float32)
    for k, digit in enumerate(labels):
        w, h = rng.uniform(9, 14), rng.uniform(9, 12)  # half the digit's height per unit
        x0, y0 = rng.uniform(4, 30 - w), rng.uniform(3, 29 - 2 * h)
        slant, width = rng.uniform(-0.25, 0.25), rng.uniform(1.2, 2.2)
        img = np.zeros((32, 32), np.float32)
        for seg in DIGITS[digit]:
            (ax, ay), (bx, by) = SEGMENTS[seg]
            p = np.array([x0 + ax * w - slant * ay * h, y0 + ay * h])
            q = np.array([x0 + bx * w - slant * by * h, y0 + by * h])
            d = q - p
            t = np.clip(((xx - p[0]) * d[0] + (yy - p[1]) * d[1]) / (d @ d), 0, 1)
            dist = np.hypot(xx - p[0] - t * d[0], yy - p[1] - t * d[1])
            img = np.maximum(img, np.clip(width - dist, 0, 1))
        images[k] = img + rng.normal(0, 0.15, (32, 32))
    return (images[:, None] - 0.2) / 0.4, labels.astype(np.int64)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return (pred == y).float().mean().item()


def main(epochs: int = 4, n_train: int = 3000, compiled: bool = False) -> float:
    torch.manual_seed(0)
    xtr, ytr = draw_digits(n_train, seed=1)
    xte, yte = draw_digits(1000, seed=2)
    xtr, ytr, xte, yte = (torch.from_numpy(a) for a in (xtr, ytr, xte, yte))
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=64, shuffle=True)

    model = LeNet()
    print(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    print(f"before training: test accuracy {accuracy(model, xte, yte):.3f}")

    def train_step(xb, yb):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:  # forward, backward and the SGD update as one compiled program
        train_step = torch.compile(train_step)
    for epoch in range(epochs):
        total, batches = 0.0, 0
        bar = tqdm(loader, desc=f"epoch {epoch + 1}", unit="batch", leave=False, disable=None)
        for xb, yb in bar:
            loss = train_step(xb, yb)
            total, batches = total + loss.item(), batches + 1
            bar.set_postfix(loss=f"{total / batches:.4f}")
        acc = accuracy(model, xte, yte)
        print(f"epoch {epoch + 1}  mean loss {total / batches:.4f}  test accuracy {acc:.3f}")
    print(f"final test accuracy {acc:.3f} on 1000 unseen digits")
    return acc


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--train", type=int, default=3000)
    p.add_argument("--compile", action="store_true", help="compile the whole training step")
    a = p.parse_args()
    main(a.epochs, a.train, a.compile)
