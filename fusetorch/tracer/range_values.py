"""The values of arange, linspace and logspace as PyTorch's CPU kernels compute them
(RangeFactories.cpp), on the host with numpy.

PyTorch converts the bounds to the result dtype first (integers truncate toward zero, and a
bound outside the dtype's range is an error), then steps:
  arange    integer dtypes: start + step * i in int64, with int64's truncated start and step;
            an int64 result counts (end - start + step - sign(step)) / step (integer division),
            other dtypes ceil((end - start) / step) of the original bounds in double.
  linspace  step = (end - start) / (steps - 1), in double for integer dtypes, else in the
            dtype; the first half is start + step * i, the second end - step * (steps - 1 - i).
  logspace  base ** (the same exponents), the power in double for integer dtypes.
Floating results can still differ from PyTorch's in the last bit: its vectorised loops (whose
width depends on the CPU) and fused multiply-adds round differently from this scalar formula.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes as dt
from ..runtime.device import NP_DTYPES
from ..ir.fma import fma


def scalar(v):
    """A Python number from a number or a one-element tensor (`.item()`: no float32 rounding
    of a float64 computation)."""
    return v.item() if hasattr(v, "item") and not isinstance(v, (int, float)) else v


def to_dtype(v, d: dt.DType):
    """Scalar.to<T>(): truncation toward zero for integer dtypes, PyTorch's error outside the
    dtype's range."""
    if d.is_floating_point:
        return float(v)
    if d is dt.bool_:
        return bool(v)
    info = np.iinfo(NP_DTYPES[d])
    if isinstance(v, float) and not math.isfinite(v) or not info.min <= v <= info.max:
        raise RuntimeError(f"value cannot be converted to type {d.c_type} without overflow")
    return int(v)


def arange_size(start, end, step, d: dt.DType) -> int:
    if d is dt.int64:
        s, e, st = (to_dtype(v, d) for v in (start, end, step))
        if st == 0:
            raise ValueError("step must be nonzero")
        num = e - s + st - (1 if st > 0 else -1)
        q = abs(num) // abs(st)  # C++'s division truncates toward zero
        return max(0, q if (num >= 0) == (st > 0) else -q)
    return max(0, math.ceil((float(end) - float(start)) / float(step)))


def linspace(start, end, steps: int, d: dt.DType) -> np.ndarray:
    return _spaced(start, end, steps, d, None)


def logspace(start, end, steps: int, base: float, d: dt.DType) -> np.ndarray:
    return _spaced(start, end, steps, d, float(base))


def _spaced(start, end, steps: int, d: dt.DType, base) -> np.ndarray:
    out = NP_DTYPES[d]
    # linspace steps in the dtype; float32 goes through float64, where start + step * i is
    # exact and rounds once, as PyTorch's fused multiply-add; logspace works in double
    typed = np.dtype(out).type
    work = typed if d.is_floating_point and base is None else np.float64
    if work is np.float32:
        work = np.float64
        s, e = (np.float64(typed(to_dtype(v, d))) for v in (start, end))
        step = np.float64(typed((typed(e) - typed(s)) / typed(max(steps - 1, 1))))
    else:
        s, e = (work(typed(to_dtype(v, d))) if d.is_floating_point else work(to_dtype(v, d))
                for v in (start, end))
        step = (e - s) / work(max(steps - 1, 1))
    if steps == 0:
        return np.empty(0, dtype=out)
    if steps == 1:  # PyTorch fills with start (base ** start in double, from the bound given)
        one = start if base is None else float(base) ** float(start)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.array([to_dtype(one, d) if base is None else one]).astype(out)
    else:
        i = np.arange(steps)
        half = steps // 2
        with np.errstate(over="ignore", invalid="ignore"):
            if work is typed and d.itemsize == 2:
                # float16/bfloat16: c10::Half arithmetic rounds the product, then the sum
                exps = np.where(i < half, (step * i.astype(work)).astype(work) + s,
                                e - (step * (steps - 1 - i).astype(work)).astype(work))
            else:
                exps = np.where(i < half, fma(np, step, i.astype(work), s),
                                fma(np, -step, (steps - 1 - i).astype(work), e))
            exps = exps.astype(work)
    if base is None:
        vals = exps
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            vals = np.power(work(base), exps)
    with np.errstate(over="ignore", invalid="ignore"):
        return vals.astype(out)

