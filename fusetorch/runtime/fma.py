"""A fused multiply-add for float64 arrays, as PyTorch's CPU range kernels compute
`start + step * i` (the compiler contracts it): numpy has no fma ufunc."""
from __future__ import annotations


def fma(xp, a, b, c):
    """a * b + c rounded once: the product's rounding error by Dekker's splitting, added back
    with the sum's (exact but for a double rounding in rare ties). Non-finite products take
    the plain formula."""
    a, b = xp.broadcast_arrays(xp.asarray(a, dtype="float64"), xp.asarray(b, dtype="float64"))
    p = a * b
    if not bool(xp.isfinite(p).all()):
        return p + c
    ah, al = _split(a)
    bh, bl = _split(b)
    perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    total = p + c
    bv = total - p
    serr = (p - (total - bv)) + (c - bv)
    return total + (serr + perr)


def _split(x):
    t = 134217729.0 * x  # 2**27 + 1: x = hi + lo with 26-bit halves
    hi = t - (t - x)
    return hi, x - hi
