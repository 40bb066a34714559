"""Eager training steps of LeNet and of the nn two-layer net against hand-written numpy.

    python benchmarks/bench_training.py

- LeNet-5 step, batch 64 of 1x32x32, cross-entropy, SGD: fusetorch `nn` layers + autograd +
  `optim.SGD` against numpy forward and backward written by hand (im2col convolutions through
  stride tricks, the same arithmetic).
- The two-layer net with `nn.Sequential`, `MSELoss(reduction='sum')` and `optim.SGD`, against
  hand-written numpy.
Reports medians per step and the ratio fusetorch / numpy.
"""
from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
import fusetorch.nn as nn  # noqa: E402
import fusetorch.nn.functional as F  # noqa: E402
from models import lenet_model  # noqa: E402

LR = 0.01


# ------------------------------------------------------------------ numpy LeNet

def _windows(x, k):
    n, c, h, w = x.shape
    s = x.strides
    return as_strided(x, (n, c, k, k, h - k + 1, w - k + 1), (s[0], s[1], s[2], s[3], s[2], s[3]),
                      writeable=False)


def _conv(x, w, b):
    """x [N,C,H,W], w [O,C,k,k] -> [N,O,OH,OW]; also returns the im2col matrix for backward."""
    n, c = x.shape[:2]
    o, _, k, _ = w.shape
    cols = _windows(x, k).reshape(n, c * k * k, -1)  # copies into [N, C*k*k, OH*OW]
    oh = x.shape[2] - k + 1
    out = np.matmul(w.reshape(o, -1), cols) + b[:, None]
    return out.reshape(n, o, oh, -1), cols


def _conv_backward(g, x_shape, w, cols):
    n, o, oh, ow = g.shape
    g2 = g.reshape(n, o, -1)
    gw = np.einsum("nol,nkl->ok", g2, cols).reshape(w.shape)
    gb = g2.sum(axis=(0, 2))
    gcols = np.matmul(w.reshape(o, -1).T, g2).reshape(n, x_shape[1], w.shape[2], w.shape[3],
                                                     oh, ow)
    gx = np.zeros(x_shape, dtype=g.dtype)
    k = w.shape[2]
    for i in range(k):
        for j in range(k):
            gx[:, :, i:i + oh, j:j + ow] += gcols[:, :, i, j]
    return gx, gw, gb


def _pool(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
        n, c, h // 2, w // 2, 4)
    idx = win.argmax(-1)
    return np.take_along_axis(win, idx[..., None], -1)[..., 0], idx


def _pool_backward(g, idx, shape):
    n, c, h, w = shape
    onehot = (np.arange(4) == idx[..., None]) * g[..., None]
    return onehot.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)


def numpy_lenet_step(params, x, y):
    c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b = params
    a1, cols1 = _conv(x, c1w, c1b)
    r1 = np.maximum(a1, 0)
    p1, i1 = _pool(r1)
    a2, cols2 = _conv(p1, c2w, c2b)
    r2 = np.maximum(a2, 0)
    p2, i2 = _pool(r2)
    flat = p2.reshape(len(x), -1)
    h1 = flat @ f1w.T + f1b
    r3 = np.maximum(h1, 0)
    h2 = r3 @ f2w.T + f2b
    r4 = np.maximum(h2, 0)
    logits = r4 @ f3w.T + f3b
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -logp[np.arange(len(y)), y].mean()
    g = np.exp(logp)
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    grads = [None] * 10
    grads[8], grads[9] = g.T @ r4, g.sum(0)
    g = (g @ f3w) * (h2 > 0)
    grads[6], grads[7] = g.T @ r3, g.sum(0)
    g = (g @ f2w) * (h1 > 0)
    grads[4], grads[5] = g.T @ flat, g.sum(0)
    g = (g @ f1w).reshape(p2.shape)
    g = _pool_backward(g, i2, r2.shape) * (a2 > 0)
    g, grads[2], grads[3] = _conv_backward(g, p1.shape, c2w, cols2)
    g = _pool_backward(g, i1, r1.shape) * (a1 > 0)
    _, grads[0], grads[1] = _conv_backward(g, x.shape, c1w, cols1)
    for p, gp in zip(params, grads):
        p -= LR * gp
    return loss


# ------------------------------------------------------------------ fusetorch LeNet

def LeNet():
    """LeNet-5 in fusetorch (benchmarks/models.py)."""
    return lenet_model(torch)


def fusetorch_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


# ------------------------------------------------------------------ two-layer net

def two_layer_fusetorch(model, loss_fn, opt, x, y):
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def two_layer_numpy(w1, b1, w2, b2, x, y, lr=1e-4, xp=np):
    """The two-layer step by hand on arrays of `xp` (numpy, or cupy in bench_cuda_training)."""
    h = x @ w1.T + b1
    hr = xp.maximum(h, 0)
    pred = hr @ w2.T + b2
    diff = pred - y
    loss = (diff * diff).sum()
    g = 2 * diff
    gw2, gb2 = g.T @ hr, g.sum(0)
    gh = (g @ w2) * (h > 0)
    gw1, gb1 = gh.T @ x, gh.sum(0)
    for p, gp in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
        p -= lr * gp
    return loss


def per_step(fn, number: int, repeat: int = 5) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def compare(name: str, ft, ref, number: int) -> None:
    per_step(ft, 3, 1)
    per_step(ref, 3, 1)
    a = min(per_step(ft, number) for _ in range(2))
    b = min(per_step(ref, number) for _ in range(2))
    print(f"{name:36s} fusetorch {a * 1e3:8.3f} ms   numpy {b * 1e3:8.3f} ms   ratio "
          f"{a / b:5.2f}x")


def main() -> None:
    torch.manual_seed(0)
    model = LeNet()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x = torch.randn(64, 1, 32, 32)
    y = torch.randint(0, 10, (64,))
    params = [p.detach().numpy().copy() for p in model.parameters()]
    xa, ya = x.numpy().copy(), y.numpy().copy()
    compare("LeNet step, batch 64, 1x32x32", lambda: fusetorch_step(model, opt, x, y),
            lambda: numpy_lenet_step(params, xa, ya), 10)

    net = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
    loss_fn = nn.MSELoss(reduction="sum")
    opt2 = torch.optim.SGD(net.parameters(), lr=1e-4)
    X, Y = torch.randn(64, 1000), torch.randn(64, 10)
    ws = [p.detach().numpy().copy() for p in net.parameters()]
    Xa, Ya = X.numpy().copy(), Y.numpy().copy()
    compare("two-layer net step (nn + optim)", lambda: two_layer_fusetorch(net, loss_fn, opt2, X, Y),
            lambda: two_layer_numpy(*ws, Xa, Ya), 100)


if __name__ == "__main__":
    main()
