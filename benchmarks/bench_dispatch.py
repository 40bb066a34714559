"""Eager dispatch overhead: fusetorch against numpy in the same process.

    python benchmarks/bench_dispatch.py

- `x + y` on 10x10 float32: per-op latency, where dispatch overhead is everything
  (target: at most 4 us; numpy ~0.5 us, PyTorch eager ~1.6 us on the reference machine).
- a chain of 20 elementwise ops on 1000x1000 float32: per-op cost where the arrays dominate.
- one step of the classic two-layer net with raw tensors (64x1000x100x10, hand-written backward).
- the small ops of RNN loops with requires_grad=True (`grad_ops`: issue 29's list, `x[2]`,
  `view(1, -1)`, `expand`, `cat` of 5, `max(v, 1)`, and a classifier's log_softmax and
  nll_loss of a row of 57 scores), which `bench_table.py` runs next to
  PyTorch (`--ops`).
Reports medians over interleaved repeats and the ratio fusetorch / numpy.
"""
from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

import numpy as np



def bench(fn, number: int, repeat: int = 7) -> float:
    """Median seconds per call."""
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def compare(name: str, ft, ref, number: int) -> None:
    bench(ft, max(1, number // 10))  # warm up both
    bench(ref, max(1, number // 10))
    t_ft, t_np = [], []
    for _ in range(3):  # interleave, so drifting machine load hits both sides
        t_ft.append(bench(ft, number, 3))
        t_np.append(bench(ref, number, 3))
    a, b = min(t_ft), min(t_np)
    print(f"{name:42s} fusetorch {a * 1e6:9.2f} us   numpy {b * 1e6:9.2f} us   "
          f"ratio {a / b:5.2f}x")


def chain(m, x):
    # 20 elementwise ops; `m` is the namespace (fusetorch or numpy)
    y = x * 0.5
    for _ in range(4):
        y = m.exp(y * 0.1) + x
        y = m.tanh(y) - 0.25
        y = m.maximum(y, x) * 1.5
    y = y / 3.0
    return y


def two_layer_step(m, x, y, w1, w2, lr=1e-6):
    if m is np:
        h = x @ w1
        h_relu = np.maximum(h, 0)
        y_pred = h_relu @ w2
        loss = float(((y_pred - y) ** 2).sum())
        g = 2.0 * (y_pred - y)
        gw2 = h_relu.T @ g
        gh = g @ w2.T
        gh[h < 0] = 0
        gw1 = x.T @ gh
    else:
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)
        loss = (y_pred - y).pow(2).sum().item()
        g = 2.0 * (y_pred - y)
        gw2 = h_relu.t().mm(g)
        gh = g.mm(w2.t()).clone()
        gh[h < 0] = 0
        gw1 = x.t().mm(gh)
    w1 -= lr * gw1
    w2 -= lr * gw2
    return loss


GRAD_OPS = ("x[2]", "view(1, -1)", "expand(4, -1)", "cat of 5", "max(v, 1)", "x + y", "tanh(x)",
            "log_softmax(row, 1)", "nll_loss(log_softmax(row, 1))")


def grad_ops(T) -> dict:
    """{label: callable}: one small op of an RNN or attention loop per callable, its inputs
    requiring grad (each call records an autograd node), written against a module `T` with
    PyTorch's API (fusetorch or torch). Shapes as in tests/programs' loops: a sequence of
    one-hot rows, a hidden state of 128, a row of 57 scores."""
    T.manual_seed(0)
    seq = T.randn(10, 1, 57, requires_grad=True)
    hidden = T.randn(128, requires_grad=True)
    row = T.randn(1, 128, requires_grad=True)
    parts = [T.randn(1, 32, requires_grad=True) for _ in range(5)]
    scores = T.randn(4, 57, requires_grad=True)
    a, b = T.randn(1, 128, requires_grad=True), T.randn(1, 128, requires_grad=True)
    logits, target, F = T.randn(1, 57, requires_grad=True), T.tensor([3]), T.nn.functional
    return dict(zip(GRAD_OPS, [
        lambda: seq[2],
        lambda: hidden.view(1, -1),
        lambda: row.expand(4, -1),
        lambda: T.cat(parts, 1),
        lambda: T.max(scores, 1),
        lambda: a + b,
        lambda: T.tanh(a),
        lambda: F.log_softmax(logits, 1),
        lambda: F.nll_loss(F.log_softmax(logits, 1), target),
    ]))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import fusetorch as torch
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}")
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    xa, ya = x.numpy().copy(), y.numpy().copy()
    compare("x + y, 10x10 float32", lambda: x + y, lambda: xa + ya, 100_000)
    compare("x * 2.0, 10x10 float32", lambda: x * 2.0, lambda: xa * 2.0, 100_000)
    compare("x.sum(), 10x10 float32", lambda: x.sum(), lambda: xa.sum(), 50_000)
    compare("x[0], 10x10 float32", lambda: x[0], lambda: xa[0], 50_000)

    big = torch.randn(1000, 1000)
    biga = big.numpy().copy()
    compare("chain of 20 ops, 1000x1000 float32", lambda: chain(torch, big),
            lambda: chain(np, biga), 20)

    torch.manual_seed(0)
    X, Y = torch.randn(64, 1000), torch.randn(64, 10)
    W1, W2 = torch.randn(1000, 100), torch.randn(100, 10)
    Xa, Ya, W1a, W2a = (t.numpy().copy() for t in (X, Y, W1, W2))
    compare("two-layer net step (raw tensors)", lambda: two_layer_step(torch, X, Y, W1, W2),
            lambda: two_layer_step(np, Xa, Ya, W1a, W2a), 200)

    for label, fn in grad_ops(torch).items():  # (no numpy counterpart; PyTorch: bench_table)
        bench(fn, 5000)
        print(f"{label + ' with requires_grad':42s} fusetorch "
              f"{min(bench(fn, 20_000, 3) for _ in range(3)) * 1e6:9.2f} us")


if __name__ == "__main__":
    main()
