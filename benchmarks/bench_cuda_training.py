"""Training steps on the cuda device (GPU only): fusetorch eager (cupy underneath) and compiled
(CUDA kernels from the same IR), against the same step written directly in cupy, in one process.

    python benchmarks/bench_cuda_training.py [--torch]

- the two-layer step (Linear-ReLU-Linear, MSELoss(sum), SGD) at 64x1000x100x10 and
  512x4096x1024x10;
- the LeNet-5 step (batch 64, 1x32x32, cross-entropy, SGD);
bench_table.py's steps, on cuda. "cupy" is bench_training.py's two-layer step by hand, on cupy
arrays (what eager fusetorch on cuda does, minus its dispatch and recording). `--torch` adds
PyTorch's eager CUDA step where torch is importable, as an outside reference. Times are wall
clock per step after a device synchronize, median of 5 rounds, each round long enough to hide
the launch queue.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusetorch  # noqa: E402
from bench_table import lenet, two_layer  # noqa: E402
from bench_training import two_layer_numpy  # noqa: E402


def per_step(fn, sync, rounds: int = 5, target: float = 0.2) -> float:
    fn(), fn(), sync()
    number, t0 = 1, time.perf_counter()
    while True:  # calibrate: one round lasts about `target` seconds
        for _ in range(number):
            fn()
        sync()
        took = time.perf_counter() - t0
        if took > target / 4 or number > 1 << 16:
            number = max(1, int(number * target / took))
            break
        number, t0 = number * 2, time.perf_counter()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def cupy_two_layer(cp, n, d_in, h, d_out):
    """The two-layer step by hand on cupy arrays (bench_training's, on cupy)."""
    rs = cp.random.RandomState(0)
    w1 = rs.standard_normal((h, d_in), dtype=cp.float32) * 0.03
    b1 = cp.zeros(h, cp.float32)
    w2 = rs.standard_normal((d_out, h), dtype=cp.float32) * 0.1
    b2 = cp.zeros(d_out, cp.float32)
    x = rs.standard_normal((n, d_in), dtype=cp.float32)
    y = rs.standard_normal((n, d_out), dtype=cp.float32)
    return lambda: two_layer_numpy(w1, b1, w2, b2, x, y, lr=cp.float32(1e-6), xp=cp)


def main() -> None:
    if not fusetorch.cuda.is_available():
        print("no CUDA device (cupy and an NVIDIA GPU are needed): nothing to measure")
        return
    import cupy as cp
    ref = None
    if "--torch" in sys.argv:
        try:
            import torch as ref
        except ImportError:
            print("(torch is not importable here: no PyTorch column)")
    sync_ft = fusetorch.cuda.synchronize
    print(f"device: {fusetorch.cuda.get_device_name()}")
    shapes = [(64, 1000, 100, 10), (512, 4096, 1024, 10)]
    rows = [(f"two-layer step {'x'.join(map(str, s))}",
             lambda T, s=s: two_layer(T, *s, device="cuda"), s) for s in shapes]
    rows.append(("LeNet step, batch 64", lambda T: lenet(T, device="cuda"), None))
    for name, make, shape in rows:
        eager = per_step(make(fusetorch)["eager"], sync_ft)
        compiled = per_step(make(fusetorch)["compiled"], sync_ft)
        line = f"{name:36s} eager {eager * 1e3:7.3f} ms  compiled {compiled * 1e3:7.3f} ms"
        if shape is not None:
            hand = per_step(cupy_two_layer(cp, *shape), cp.cuda.Device().synchronize)
            line += (f"  cupy by hand {hand * 1e3:7.3f} ms (eager {eager / hand:.2f}x, "
                     f"compiled {compiled / hand:.2f}x)")
        if ref is not None:
            t = per_step(make(ref)["eager"], ref.cuda.synchronize)
            line += f"  torch eager {t * 1e3:7.3f} ms (compiled/torch {compiled / t:.2f}x)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
