"""Issue 11's new operations against numpy, in one process.

    python benchmarks/bench_api.py

- sort, topk (k = 100) and cumsum over 2**20 float32: eager and compiled against numpy's
  `sort` (values only: torch.sort also returns indices, so a stable argsort + take is printed
  too), `argpartition` + sort of the k, and `cumsum`.
- `F.scaled_dot_product_attention` at (8, 4, 256, 64) float32, causal and not: eager and compiled
  against a hand-written numpy attention (matmul, max-subtracted exp, normalise, matmul).
Ratios are numpy time / fusetorch time: above 1 means fusetorch is faster.
"""
from __future__ import annotations

import sys
import timeit
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402
import fusetorch.nn.functional as F  # noqa: E402

N = 1 << 20
K = 100


def best(fn, number: int = 3, repeat: int = 5) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def row(name: str, t_eager: float, t_comp: float, t_np: float) -> None:
    print(f"{name:<34} eager {t_eager * 1e3:8.2f} ms ({t_np / t_eager:5.2f}x)   compiled "
          f"{t_comp * 1e3:8.2f} ms ({t_np / t_comp:5.2f}x)   numpy {t_np * 1e3:8.2f} ms")


def numpy_topk(a: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.argpartition(a, -k)[-k:]
    order = np.argsort(-a[idx], kind="stable")
    return a[idx[order]], idx[order]


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = (q @ k.swapaxes(-1, -2)) * np.float32(1.0 / np.sqrt(q.shape[-1]))
    if causal:
        L = q.shape[-2]
        s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, np.float32(-np.inf))
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def scans() -> None:
    x = torch.randn(N)
    xa = x.numpy().copy()
    cases = [
        ("sort, 2**20 f32", lambda t: torch.sort(t).values, lambda: np.sort(xa)),
        (f"topk k={K}, 2**20 f32", lambda t: torch.topk(t, K).values,
         lambda: numpy_topk(xa, K)),
        ("cumsum, 2**20 f32", lambda t: torch.cumsum(t, 0), lambda: np.cumsum(xa)),
    ]
    for name, fn, np_fn in cases:
        compiled = torch.compile(fn)
        compiled(x)
        row(name, best(lambda: fn(x)), best(lambda: compiled(x)), best(np_fn))
        print("   kernels:", compiled.kernels())
    t_pair = best(lambda: np.take_along_axis(xa, np.argsort(xa, kind="stable"), 0))
    print(f"   numpy stable argsort + take (values and indices, as torch.sort returns): "
          f"{t_pair * 1e3:.2f} ms")


def attention() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(8, 4, 256, 64) for _ in range(3))
    qa, ka, va = (t.numpy().copy() for t in (q, k, v))
    for causal in (False, True):
        def fn(a, b, c, causal=causal):
            return F.scaled_dot_product_attention(a, b, c, is_causal=causal)
        compiled = torch.compile(fn)
        got = compiled(q, k, v).numpy()
        ref = numpy_attention(qa.astype(np.float64), ka.astype(np.float64),
                              va.astype(np.float64), causal)
        err = float(np.abs(got - ref).max())
        row(f"sdpa (8,4,256,64) causal={causal}", best(lambda: fn(q, k, v)),
            best(lambda: compiled(q, k, v)), best(lambda: numpy_attention(qa, ka, va, causal)))
        print(f"   max abs error vs float64: {err:.1e}; kernels: {compiled.kernels()}")


def main() -> None:
    warnings.simplefilter("ignore")  # graph-break warnings: the rows say what ran
    scans()
    attention()


if __name__ == "__main__":
    main()
