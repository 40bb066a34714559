"""`torch.quasirandom.SobolEngine`: Sobol' low-discrepancy points (scipy.stats.qmc's
generator, with the Joe-Kuo direction numbers PyTorch uses: the unscrambled sequence is
PyTorch's point for point; scrambled sequences are Owen-scrambled from `seed` and differ from
PyTorch's draws)."""
from __future__ import annotations

import warnings

import numpy as np

from .ir import dtypes as dt
from .tracer import creation as C
from .tracer.tensor import Tensor

__all__ = ["SobolEngine"]


class SobolEngine:
    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, "
                             f"{self.MAXDIM}]")
        from scipy.stats import qmc
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self._make = lambda: qmc.Sobol(dimension, scramble=scramble, seed=seed)
        self._engine = self._make()
        self.num_generated = 0

    def _points(self, n: int) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (scipy's note on non-power-of-2 counts)
            pts = self._engine.random(n)
        self.num_generated += n
        return pts

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next `n` points, [n, dimension], in `dtype` (the default float dtype)."""
        d = dt.to_dtype(dtype, "draw") or dt.default_float()
        result = C.tensor(self._points(int(n)), dtype=d)
        if out is not None:
            out.resize_(tuple(result.shape)).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(f"The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total}. If you "
                             f"still want to do this, please use 'SobolEngine.draw()' instead.")
        return self.draw(n, out, dtype)

    def reset(self) -> "SobolEngine":
        self._engine = self._make()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> "SobolEngine":
        self._engine.fast_forward(int(n))
        self.num_generated += int(n)
        return self

    def __repr__(self) -> str:
        fmt = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt += ["scramble=True"]
        if self.seed is not None:
            fmt += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt) + ")"
