"""Memory over a long eager training loop: 10,000 steps of the two-layer net (64x1000x100x10,
nn.Sequential, MSELoss(sum), SGD with momentum), whose backward runs compiled from the second
step (the graph holds far more than the 4096 elements that switch it on).

    python benchmarks/bench_memory.py [--steps N] [--heap]

Prints the process's resident set size at a few points, and with --heap the Python heap
(tracemalloc, traced from step 100; it makes every step several times slower). Flat means: what step 100 holds is what step 10,000 holds, to within
allocator noise (a leaked step would keep its activations, ~0.5 MB, so 10k steps ~GBs).
"""
from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
import fusetorch.nn as nn  # noqa: E402


def rss_mib() -> float:
    """Current resident set size (Linux /proc; the peak from getrusage elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--heap", action="store_true")
    args = ap.parse_args()
    steps = args.steps
    torch.manual_seed(0)
    x, y = torch.randn(64, 1000), torch.randn(64, 10)
    model = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
    loss_fn = nn.MSELoss(reduction="sum")
    opt = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
    marks = sorted({min(steps, m) for m in (100, 1000, steps // 2, steps)})
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step == 100 and args.heap:
            tracemalloc.start()
        if step in marks:
            gc.collect()
            heap = tracemalloc.get_traced_memory()[0] / 2**10 if tracemalloc.is_tracing() else 0
            print(f"step {step:6d}: rss {rss_mib():8.1f} MiB  python heap since step 100 "
                  f"{heap:8.1f} KiB  loss {loss.item():.4g}  "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    tracemalloc.stop()


if __name__ == "__main__":
    main()
