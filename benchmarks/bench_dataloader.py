"""DataLoader workers and tensor transport between processes.

    python benchmarks/bench_dataloader.py [--batches 40]

1. A data set whose `__getitem__` sleeps 1 ms (I/O-bound loading) feeding a small training step
   (two-layer net, SGD): samples per second with `num_workers=0` and `num_workers=2` (target:
   at least 1.8x), for one epoch including worker start-up, and for a later epoch of
   persistent workers (steady state).
2. One 64 MiB float32 array sent to a child process and acknowledged: a fusetorch tensor through
   `fusetorch.multiprocessing.Queue` (a fresh tensor, moved into shared memory on the way, and
   one already shared) against a numpy array through `multiprocessing.Queue` (pickled through the
   pipe), side by side. Medians of interleaved repeats.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
import fusetorch.multiprocessing as mp  # noqa: E402
from fusetorch.utils.data import DataLoader, Dataset  # noqa: E402

FEATURES, HIDDEN, CLASSES, BATCH = 64, 128, 10, 32


class SlowDataset(Dataset):
    """Each sample costs 1 ms of waiting, as reading a file would."""

    def __init__(self, n: int):
        self.x = torch.randn(n, FEATURES)
        self.y = torch.randint(0, CLASSES, (n,))

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i):
        time.sleep(0.001)
        return self.x[i], self.y[i]


def train_epoch(loader, model, opt, loss_fn) -> tuple[float, int]:
    """Seconds for one epoch of training steps and the number of samples seen."""
    t0 = time.perf_counter()
    n = 0
    for xb, yb in loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
        n += len(yb)
    return time.perf_counter() - t0, n


def bench_loader(batches: int) -> None:
    ds = SlowDataset(batches * BATCH)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    rates = {}
    for workers in (0, 2):
        loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers,
                            persistent_workers=workers > 0)
        s_first, n = train_epoch(loader, model, opt, loss_fn)
        s_later, _ = train_epoch(loader, model, opt, loss_fn)
        rates[workers] = (n / s_first, n / s_later)
        del loader
    print(f"DataLoader, __getitem__ sleeps 1 ms, batch {BATCH}, {batches} batches per epoch, "
          f"training step each batch (samples/s)")
    for i, what in enumerate(("first epoch (with worker start-up)", "later epoch (persistent)")):
        r0, r2 = rates[0][i], rates[2][i]
        print(f"  {what:38s} num_workers=0 {r0:8.0f}   num_workers=2 {r2:8.0f}   "
              f"ratio {r2 / r0:5.2f}x  (target >= 1.8x)")


def echo_child(inbox, acks) -> None:
    while (item := inbox.get()) is not None:
        acks.put(float(item[0]) if isinstance(item, np.ndarray) else item[0].item())
        del item


def round_trip(inbox, acks, make, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        obj = make()
        t0 = time.perf_counter()
        inbox.put(obj)
        acks.get()
        times.append(time.perf_counter() - t0)
        del obj
    return statistics.median(times)


def bench_transport(mib: int, repeat: int) -> None:
    n = mib * 2 ** 20 // 4
    ctx_ft, ctx_np = mp.get_context("fork"), multiprocessing.get_context("fork")
    shared = torch.ones(n)
    shared.share_memory_()
    cases = {
        "fusetorch tensor, fresh (moved to shared memory on send)":
            (ctx_ft, lambda: torch.ones(n)),
        "fusetorch tensor, already shared": (ctx_ft, lambda: shared),
        "numpy array, pickled through multiprocessing.Queue":
            (ctx_np, lambda: np.ones(n, dtype=np.float32)),
    }
    results = {name: [] for name in cases}
    queues = {}
    for name, (ctx, _) in cases.items():
        inbox, acks = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=echo_child, args=(inbox, acks))
        p.start()
        queues[name] = (inbox, acks, p)
    for _ in range(3):  # interleaved, so drifting load hits every case
        for name, (_, make) in cases.items():
            inbox, acks, _p = queues[name]
            results[name].append(round_trip(inbox, acks, make, repeat))
    for inbox, _acks, p in queues.values():
        inbox.put(None)
        p.join()
    base = min(results["numpy array, pickled through multiprocessing.Queue"])
    print(f"one {mib} MiB float32 array to a child process and an acknowledgement back "
          f"(median ms)")
    for name, ts in results.items():
        t = min(ts)
        print(f"  {name:58s} {t * 1e3:8.2f} ms   vs numpy {t / base:6.3f}x")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    torch.manual_seed(0)
    bench_loader(a.batches)
    bench_transport(a.mib, a.repeat)
