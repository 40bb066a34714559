"""Eager forward + backward of the two-layer net against hand-written numpy, in one process.

    python benchmarks/bench_autograd.py

One training step of the classic net (N=64, D_in=1000, H=100, D_out=10, float32): forward,
squared-error loss, backward, SGD update. fusetorch records the forward, differentiates the
recorded graph (cached after the first step) and runs the backward graph; numpy runs the same
arithmetic written by hand. Target: fusetorch at most 1.5x numpy's time per step.
"""
from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402

LR = 1e-6


def fusetorch_step(x, y, w1, w2):
    loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        w1 -= LR * w1.grad
        w2 -= LR * w2.grad
        w1.grad.zero_()
        w2.grad.zero_()
    return loss


def numpy_step(x, y, w1, w2):
    h = x @ w1
    h_relu = np.maximum(h, 0)
    y_pred = h_relu @ w2
    diff = y_pred - y
    loss = (diff ** 2).sum()
    g = 2.0 * diff
    gw2 = h_relu.T @ g
    gh = g @ w2.T
    gh[h < 0] = 0
    gw1 = x.T @ gh
    w1 -= LR * gw1
    w2 -= LR * gw2
    return loss


def per_step(fn, args, number=200, repeat=5) -> float:
    return statistics.median(timeit.repeat(lambda: fn(*args), number=number, repeat=repeat)) \
        / number


def main() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(64, 1000), torch.randn(64, 10)
    w1 = torch.randn(1000, 100, requires_grad=True)
    w2 = torch.randn(100, 10, requires_grad=True)
    xa, ya = x.numpy().copy(), y.numpy().copy()
    w1a, w2a = w1.detach().numpy().copy(), w2.detach().numpy().copy()
    per_step(fusetorch_step, (x, y, w1, w2), 20, 1)  # warm up (first step differentiates)
    per_step(numpy_step, (xa, ya, w1a, w2a), 20, 1)
    ft, ref = [], []
    for _ in range(3):
        ft.append(per_step(fusetorch_step, (x, y, w1, w2)))
        ref.append(per_step(numpy_step, (xa, ya, w1a, w2a)))
    a, b = min(ft), min(ref)
    print(f"two-layer net fwd+bwd+update: fusetorch {a * 1e3:.3f} ms   numpy {b * 1e3:.3f} ms   "
          f"ratio {a / b:.2f}x")


if __name__ == "__main__":
    main()
