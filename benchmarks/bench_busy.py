"""Eager training steps on an idle and on a busy machine, with and without the per-size BLAS
thread rule (issue 13, item 7), in one process.

    python benchmarks/bench_busy.py            # the steps
    python benchmarks/bench_busy.py --sweep    # single products, 1 vs all BLAS threads

"Busy" is one other CPU-bound process (`while True: pass`) that this script starts and kills.
"rule off" is `fusetorch._threads.SERIAL_FLOPS = 0` (every product on the BLAS's own thread
count, as before the rule); "rule on" the default. The variants take turns in short blocks, so
a change in the machine's other load hits them alike. Printed per step: the median and best
wall time, and the process CPU time (all threads: BLAS threads that spin show up there).
Other processes on the machine move every number; compare the rows of one run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusetorch as torch  # noqa: E402
import fusetorch.nn as nn  # noqa: E402
from fusetorch import _threads  # noqa: E402
from bench_training import two_layer_fusetorch  # noqa: E402


@contextmanager
def one_busy_process():
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.3)  # let it reach the scheduler's steady state
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def block(fn, seconds: float, least: int = 3) -> tuple[list, float, int]:
    """Per-call wall times over about `seconds`, and the CPU time of the whole block."""
    times, c0, end = [], time.process_time(), time.perf_counter() + seconds
    while len(times) < least or time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times, time.process_time() - c0, len(times)


def compare(name: str, fn, rounds: int, seconds: float, unit: float = 1e-3) -> dict:
    """`fn` with the rule off and on, taking turns; returns the median wall time of each."""
    default = _threads.SERIAL_FLOPS
    stats = {}
    for _ in range(rounds):
        for label, flops in (("rule off", 0), ("rule on", default)):
            _threads.SERIAL_FLOPS = flops
            fn()  # (a switch of rule is not part of a step)
            times, cpu, n = block(fn, seconds)
            w, c, k = stats.get(label, ([], 0.0, 0))
            stats[label] = (w + times, c + cpu, k + n)
    _threads.SERIAL_FLOPS = default
    out = {}
    for label, (w, c, k) in stats.items():
        out[label] = statistics.median(w)
        print(f"  {name:34s} {label:8s}  wall median {statistics.median(w) / unit:8.3f}  "
              f"best {min(w) / unit:8.3f}  cpu {c / k / unit:8.3f} ms  ({k} steps)")
    return out


def two_layer(n: int, d_in: int, h: int, d_out: int):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, d_out))
    loss_fn = nn.MSELoss(reduction="sum")
    opt = torch.optim.SGD(net.parameters(), lr=1e-6)
    x, y = torch.randn(n, d_in), torch.randn(n, d_out)
    return lambda: two_layer_fusetorch(net, loss_fn, opt, x, y)


def steps(quick: bool) -> None:
    small, large = two_layer(64, 1000, 100, 10), two_layer(512, 4096, 1024, 10)
    for _ in range(5):
        small()  # (the eager backward compiles at the second step)
    large(), large()
    rounds = 2 if quick else 4
    print(f"BLAS threads: {torch.get_num_threads()}, one-thread rule below "
          f"{_threads.SERIAL_FLOPS / 1e6:g} MFLOP per product; load average "
          f"{os.getloadavg()[0]:.2f}")
    result = {}
    for state in ("idle", "busy"):
        print(state + (" (one other CPU-bound process)" if state == "busy" else ""))
        ctx = one_busy_process() if state == "busy" else contextmanager(lambda: (yield))()
        with ctx:
            result[state] = compare("two-layer step 64x1000x100x10", small, rounds, 0.4)
            compare("two-layer step 512x4096x1024x10", large, max(1, rounds // 2), 0.6)
    for label in ("rule off", "rule on"):
        print(f"two-layer step 64x1000x100x10, {label}: busy / idle "
              f"{result['busy'][label] / result['idle'][label]:.1f}x (median wall)")


def sweep(quick: bool) -> None:
    """One product at a time, on one BLAS thread and on all, idle and busy: where the one-thread
    rule's threshold should lie."""
    from threadpoolctl import threadpool_limits
    rng = np.random.default_rng(0)
    shapes = [(64, 100, 10), (64, 256, 64), (64, 1000, 100), (128, 512, 128), (256, 256, 256),
              (256, 512, 256), (64, 4096, 256), (512, 512, 512), (512, 1024, 512),
              (1024, 1024, 1024), (512, 4096, 1024)]
    many = torch.get_num_threads()
    for state in ("idle", "busy"):
        print(state)
        ctx = one_busy_process() if state == "busy" else contextmanager(lambda: (yield))()
        with ctx:
            for m, k, n in shapes:
                a = rng.standard_normal((m, k), dtype=np.float32)
                b = rng.standard_normal((k, n), dtype=np.float32)
                times_of = {}
                for _ in range(2 if quick else 4):
                    for t in (1, many):
                        with threadpool_limits(t, user_api="blas"):
                            times, _, _ = block(lambda: a @ b, 0.05 if quick else 0.15)
                        times_of.setdefault(t, []).extend(times)
                one, all_ = statistics.median(times_of[1]), statistics.median(times_of[many])
                b1, b2 = min(times_of[1]), min(times_of[many])
                print(f"  {m:5d}x{k:5d}x{n:5d} {2 * m * k * n / 1e6:7.1f} MFLOP  median: 1 "
                      f"thread {one * 1e3:8.3f} ms, {many}: {all_ * 1e3:8.3f} ms "
                      f"({all_ / one:6.2f}x)  best: {b1 * 1e3:8.3f}, {b2 * 1e3:8.3f} ms "
                      f"({b2 / b1:5.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="single products, 1 vs all threads")
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    args = ap.parse_args()
    (sweep if args.sweep else steps)(args.quick)


if __name__ == "__main__":
    main()
