"""Compiled fused kernels against numpy eager, in one process.

    python benchmarks/bench_compile.py

- `tanh(exp(x*0.5+1).clamp(max=10) * x - 0.25)` over 2**24 float32: one fused kernel against
  numpy's six temporaries, and against a plain numpy copy of the array (the memory-bound floor).
- `((a - b) ** 2).sum()` over 2**24 float32: one reduction kernel, no intermediate array.
Targets from the compile issue: at least 8x and 15x faster than numpy eager.
"""
from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fusetorch as torch  # noqa: E402

N = 1 << 24


def best(fn, number: int = 5, repeat: int = 5) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    x = torch.randn(N)
    xa = x.numpy().copy()
    chain = torch.compile(lambda t: torch.tanh(torch.exp(t * 0.5 + 1).clamp(max=10) * t - 0.25))
    chain(x)
    t_ft = best(lambda: chain(x))
    t_np = best(lambda: np.tanh(np.minimum(np.exp(xa * 0.5 + 1), 10) * xa - 0.25))
    t_copy = best(lambda: xa.copy())
    print(f"6-op chain, 2**24 f32: compiled {t_ft * 1e3:.1f} ms  numpy {t_np * 1e3:.1f} ms "
          f"({t_np / t_ft:.1f}x)  numpy copy {t_copy * 1e3:.1f} ms ({t_ft / t_copy:.2f}x a copy)")
    print("   kernels:", chain.kernels())

    a, b = torch.randn(N), torch.randn(N)
    aa, ba = a.numpy().copy(), b.numpy().copy()
    sq = torch.compile(lambda u, v: ((u - v) ** 2).sum())
    got = sq(a, b).item()
    t_ft = best(lambda: sq(a, b))
    t_np = best(lambda: ((aa - ba) ** 2).sum())
    ref = float(((aa.astype(np.float64) - ba) ** 2).sum())
    print(f"((a - b) ** 2).sum(), 2**24 f32: compiled {t_ft * 1e3:.1f} ms  numpy "
          f"{t_np * 1e3:.1f} ms ({t_np / t_ft:.1f}x); relative error vs float64 "
          f"{abs(got - ref) / ref:.1e}")
    print("   kernels:", sq.kernels())


if __name__ == "__main__":
    main()
