"""In the style of the "Reproducibility" notes and the usual seed_everything helpers:
random/numpy/torch seeding, torch.use_deterministic_algorithms(True) and
torch.backends.cudnn.deterministic/benchmark, the seed_worker worker_init_fn reading
torch.initial_seed() % 2**32, a DataLoader with num_workers=2, a seeded torch.Generator,
persistent_workers=True and pin_memory=torch.cuda.is_available(), torch.get_rng_state /
set_rng_state replays, torch.random.fork_rng, and the check that two seeded runs of a small
training loop give bit-identical weights."""
import os
import random

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.utils.data import DataLoader, Dataset


def seed_everything(seed: int):
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class NoisyDataset(Dataset):
    """Items drawn with numpy's and Python's generators in the worker, as augmentations do."""

    def __init__(self, n=32):
        self.x = torch.linspace(-1, 1, n).unsqueeze(1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        jitter = np.float32(np.random.uniform(-0.01, 0.01)) + random.random() * 0.0
        return self.x[i] + jitter, 2 * self.x[i]


def run(seed, num_workers):
    seed_everything(seed)
    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(NoisyDataset(), batch_size=8, shuffle=True, num_workers=num_workers,
                        worker_init_fn=seed_worker, generator=g,
                        persistent_workers=num_workers > 0,
                        pin_memory=torch.cuda.is_available())
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Dropout(0.1), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return [p.detach().clone() for p in model.parameters()], loss.item()


def main():
    torch.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled()
    try:
        a, loss = run(0, 2)
        b, _ = run(0, 2)
        assert all(torch.equal(p, q) for p, q in zip(a, b))
        c, _ = run(1, 0)
        assert not all(torch.equal(p, q) for p, q in zip(a, c))
    finally:
        torch.use_deterministic_algorithms(False)

    torch.manual_seed(42)
    state = torch.get_rng_state()
    first = torch.randn(3)
    torch.set_rng_state(state)
    assert torch.equal(first, torch.randn(3))
    with torch.random.fork_rng():
        torch.manual_seed(7)
        inner = torch.rand(2)
    after = torch.randn(3)
    torch.set_rng_state(state)
    torch.randn(3)
    assert torch.equal(after, torch.randn(3))
    g = torch.Generator().manual_seed(3)
    gs = g.get_state()
    x1 = torch.randint(0, 10, (5,), generator=g)
    g.set_state(gs)
    assert torch.equal(x1, torch.randint(0, 10, (5,), generator=g))
    print(torch.initial_seed(), g.initial_seed(), inner, x1)
    return loss


if __name__ == "__main__":
    main()
