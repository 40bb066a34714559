"""Hogwild: several processes train one model whose parameters live in shared memory.

PyTorch's mnist_hogwild pattern on a synthetic task: `model.share_memory()` moves the
parameters into shared memory, each process gets the model as an argument (the same memory,
not a copy) and runs its own SGD on its own shard of the data, updating the shared parameters
without locks. The main process never trains; it only evaluates the shared model before and
after, so the improvement it sees is the workers' doing.

    python examples/hogwild.py [--processes 2] [--epochs 8] [--start-method spawn]
"""
import argparse
import time

import fusetorch as torch
import fusetorch.multiprocessing as mp
from fusetorch import nn
from fusetorch.utils.data import DataLoader, TensorDataset

CLASSES, FEATURES = 4, 16


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, 64)
        self.fc2 = nn.Linear(64, CLASSES)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make_data(n: int, seed: int):
    """Points around four centres; the label is the centre's index."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(1)) * 1.5
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = centres[y] + torch.randn(n, FEATURES, generator=g) * 1.5
    return x, y


def train(rank: int, model: Net, x, y, epochs: int, results) -> None:
    """One Hogwild worker: SGD on shard `rank` of the data, writing the shared parameters."""
    torch.manual_seed(100 + rank)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()  # in place, into the shared parameters
    results.put((rank, loss.item()))


def evaluate(model: Net, x, y) -> tuple:
    with torch.no_grad():
        out = model(x)
        loss = nn.functional.cross_entropy(out, y).item()
        acc = (out.argmax(1) == y).float().mean().item()
    return loss, acc


def main(processes: int = 2, epochs: int = 8, start_method: str = "spawn") -> float:
    torch.manual_seed(0)
    ctx = mp.get_context(start_method)
    x, y = make_data(4000, seed=2)
    x_test, y_test = make_data(1000, seed=3)
    model = Net()
    model.share_memory()  # gradients are made per process by backward; they stay private
    first_loss, first_acc = evaluate(model, x_test, y_test)

    t0 = time.perf_counter()
    results = ctx.Queue()
    shard = len(x) // processes
    workers = []
    for rank in range(processes):
        part = slice(rank * shard, (rank + 1) * shard)
        p = ctx.Process(target=train, args=(rank, model, x[part], y[part], epochs, results))
        p.start()
        workers.append(p)
    finals = dict(results.get() for _ in workers)
    for p in workers:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"worker {p.pid} failed with exit code {p.exitcode}")
    seconds = time.perf_counter() - t0

    for rank in sorted(finals):
        print(f"process {rank}: {epochs} epochs on {shard} samples, last batch loss "
              f"{finals[rank]:.4f}")
    last_loss, last_acc = evaluate(model, x_test, y_test)
    print(f"{processes} processes ({start_method}) trained the shared model in {seconds:.1f} s")
    print(f"test accuracy {first_acc:.3f} -> {last_acc:.3f}")
    print(f"loss went from {first_loss:.4f} to {last_loss:.4f} (seen by the main process, "
          f"which did not train)")
    return last_loss


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--start-method", default="spawn", choices=mp.get_all_start_methods())
    a = p.parse_args()
    main(a.processes, a.epochs, a.start_method)
