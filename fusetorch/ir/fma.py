"""A fused multiply-add for float64 arrays, as PyTorch's CPU kernels compute `start + step * i`
and the polynomial recurrences' steps (the compiler contracts them): numpy has no fma ufunc.
Array-module generic (`xp`), so the op table's eager implementations use it too."""
from __future__ import annotations

import contextlib


def fma(xp, a, b, c):
    """a * b + c rounded once: the product's rounding error by Dekker's splitting, added back
    with the sum's (exact but for a double rounding in rare ties). Non-finite products take
    the plain formula."""
    a, b = xp.broadcast_arrays(xp.asarray(a, dtype="float64"), xp.asarray(b, dtype="float64"))
    p = a * b
    total = p + c
    if not bool(xp.isfinite(p).all()):
        return total
    with getattr(xp, "errstate", _quiet)(over="ignore", invalid="ignore"):
        ah, al = _split(a)
        bh, bl = _split(b)
        perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        bv = total - p
        serr = (p - (total - bv)) + (c - bv)
        fused = total + (serr + perr)
    # (a factor beyond 2**996 overflows its split: the plain sum there)
    return xp.where(xp.isfinite(fused), fused, total)


@contextlib.contextmanager
def _quiet(**_):  # (cupy has no errstate: it never warns)
    yield


def _split(x):
    t = 134217729.0 * x  # 2**27 + 1: x = hi + lo with 26-bit halves
    hi = t - (t - x)
    return hi, x - hi
