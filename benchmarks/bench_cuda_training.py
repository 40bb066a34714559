"""Training steps on the cuda device (GPU only): fusetorch eager (cupy underneath) and compiled
(CUDA kernels from the same IR), against the same step written directly in cupy, in one process.

    python benchmarks/bench_cuda_training.py [--torch]

- the two-layer step (Linear-ReLU-Linear, MSELoss(sum), SGD) at 64x1000x100x10 and
  512x4096x1024x10;
- the LeNet-5 step (batch 64, 1x32x32, cross-entropy, SGD), as in bench_table.py.
"cupy" is the two-layer step written by hand on cupy arrays (what eager fusetorch on cuda does,
minus its dispatch and recording). `--torch` adds PyTorch's eager CUDA step where torch is
importable, as an outside reference. Times are wall clock per step after a device
synchronize, median of 5 rounds, each round long enough to hide the launch queue.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusetorch  # noqa: E402
from models import lenet_model  # noqa: E402


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


def two_layer(T, dev, n, d_in, h, d_out):
    nn = T.nn
    T.manual_seed(0)
    net = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, d_out)).to(dev)
    mse = nn.MSELoss(reduction="sum")
    opt = T.optim.SGD(net.parameters(), lr=1e-6)
    x, y = T.randn(n, d_in, device=dev), T.randn(n, d_out, device=dev)

    def step(a, b):
        opt.zero_grad()
        loss = mse(net(a), b)
        loss.backward()
        opt.step()
        return loss
    return step, (x, y)


def lenet(T, dev):
    T.manual_seed(0)
    model = lenet_model(T).to(dev)
    opt = T.optim.SGD(model.parameters(), lr=0.01)
    x, y = T.randn(64, 1, 32, 32, device=dev), T.randint(0, 10, (64,), device=dev)

    def step(a, b):
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(model(a), b)
        loss.backward()
        opt.step()
        return loss
    return step, (x, y)


def cupy_two_layer(cp, n, d_in, h, d_out):
    """The two-layer step by hand on cupy arrays (forward, backward, SGD in place)."""
    rs = cp.random.RandomState(0)
    w1 = rs.standard_normal((h, d_in), dtype=cp.float32) * 0.03
    b1 = cp.zeros(h, cp.float32)
    w2 = rs.standard_normal((d_out, h), dtype=cp.float32) * 0.1
    b2 = cp.zeros(d_out, cp.float32)
    x = rs.standard_normal((n, d_in), dtype=cp.float32)
    y = rs.standard_normal((n, d_out), dtype=cp.float32)
    lr = cp.float32(1e-6)

    def step():
        hid = x @ w1.T + b1
        hr = cp.maximum(hid, 0)
        diff = hr @ w2.T + b2 - y
        loss = (diff * diff).sum()
        g = 2 * diff
        gw2, gb2 = g.T @ hr, g.sum(0)
        gh = (g @ w2) * (hid > 0)
        gw1, gb1 = gh.T @ x, gh.sum(0)
        for p, gp in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            p -= lr * gp
        return loss
    return step


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
             lambda T, dev, s=s: two_layer(T, dev, *s), s) for s in shapes]
    rows.append(("LeNet step, batch 64", lenet, None))
    for name, make, shape in rows:
        step, args = make(fusetorch, "cuda")
        eager = per_step(lambda: step(*args), sync_ft)
        cstep, cargs = make(fusetorch, "cuda")
        whole = fusetorch.compile(cstep)
        compiled = per_step(lambda: whole(*cargs), sync_ft)
        line = f"{name:36s} eager {eager * 1e3:7.3f} ms  compiled {compiled * 1e3:7.3f} ms"
        if shape is not None:
            hand = per_step(cupy_two_layer(cp, *shape), cp.cuda.Device().synchronize)
            line += (f"  cupy by hand {hand * 1e3:7.3f} ms (eager {eager / hand:.2f}x, "
                     f"compiled {compiled / hand:.2f}x)")
        if ref is not None:
            tstep, targs = make(ref, "cuda")
            t = per_step(lambda: tstep(*targs), ref.cuda.synchronize)
            line += f"  torch eager {t * 1e3:7.3f} ms (compiled/torch {compiled / t:.2f}x)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
