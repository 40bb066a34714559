"""Exact scalar values and constant-folding rules, shared by the op table (each elementwise
primitive declares its rule, `OpDef.fold_constant`) and `passes.fold_constants`.

A rule is `fold(node, values, src_dtype) -> Python value or _NO`: the exact result of the op on
Python values of the inputs (bool, int or float in their dtype's meaning), which the caller
rounds to float32 or wraps to the integer width. Only what Python computes exactly as numpy does
is folded: + - * / and sqrt are correctly rounded in both (and float64 has enough bits that
rounding a float64 result to float32 or float16 is the same as rounding once). Transcendentals
(exp, tanh, pow of floats, ...) have no rule: their float32 implementations are not correctly
rounded.
"""
from __future__ import annotations

import math
import struct

from . import dtypes as dt

NO = None  # "cannot say exactly" (no folded or scalar value is ever None)


def round_float(x: float, d: dt.DType) -> float:
    """`x` rounded to float dtype `d` (round to nearest even, overflow to inf)."""
    if d is dt.float64 or math.isnan(x) or math.isinf(x):
        return x
    fmt = "f" if d is dt.float32 or d is dt.bfloat16 else "e"
    try:
        x = struct.unpack(fmt, struct.pack(fmt, x))[0]
    except OverflowError:  # rounds past the largest finite value
        return math.copysign(math.inf, x)
    if d is dt.bfloat16:  # float32's top half, to nearest even, as eager rounds its float32
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        x = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return x


def int_range(d: dt.DType) -> tuple:
    bits = 8 * d.itemsize
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if d.is_signed else (0, (1 << bits) - 1)


def wrap(v: int, d: dt.DType) -> int:
    """Two's-complement wrap-around of `v` to integer dtype `d`."""
    bits = 8 * d.itemsize
    v &= (1 << bits) - 1
    if d.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def fdiv(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        return -math.inf if neg else math.inf
    return a / b


def arith(fn, floats=True, ints=True):
    def fold(n, v, src):
        if src.is_floating_point:
            return fn(*v) if floats else NO
        if src is dt.bool_:
            return NO
        return fn(*v) if ints else NO
    return fold


def sqrt(a: float) -> float:
    if math.isnan(a):
        return a
    return math.nan if a < 0 else math.sqrt(a)


def sign(a):
    if isinstance(a, float):
        if math.isnan(a):
            return 0.0  # PyTorch's sign(NaN)
        if a == 0:
            return NO  # which zero numpy gives is not worth promising
        return 1.0 if a > 0 else -1.0
    return (a > 0) - (a < 0)


def relu(a):
    if isinstance(a, float):
        if math.isnan(a) or a > 0:
            return a
        return 0.0 if a < 0 else NO  # relu(-0.0): which zero is not worth promising
    return max(a, 0)


def extreme(pick):
    def fold(n, v, src):
        a, b = v
        if src.is_floating_point:
            if math.isnan(a) or math.isnan(b):
                return math.nan
            if a == b and math.copysign(1.0, a) != math.copysign(1.0, b):
                return NO  # max(-0.0, 0.0): numpy returns one of them
        return pick(a, b)
    return fold


def int_pow(n, v, src):
    a, b = v
    if src.is_floating_point or src is dt.bool_ or b < 0:
        return NO
    return pow(a, b, 1 << (8 * src.itemsize))


def bitwise(fn):
    def fold(n, v, src):
        return NO if src.is_floating_point else fn(*v)
    return fold


def compare(fn):
    return lambda n, v, src: fn(*v)


def cast(n, v, src):
    a, dst = v[0], n.attrs["dtype"]
    if dst is dt.bool_:
        return a != 0
    if dst.is_floating_point:
        if not isinstance(a, float) and abs(a) > 1 << 53:
            return NO
        return float(a)
    if isinstance(a, float):  # float -> int truncates; nan, inf and out of range are undefined
        if math.isnan(a) or math.isinf(a):
            return NO
        a = int(a)
        lo, hi = int_range(dst)
        return a if lo <= a <= hi else NO
    return int(a)


# op -> fold(node, exact input values, input dtype) -> Python value (rounded/wrapped later) or
# NO. Only what Python computes exactly as numpy does: + - * / and sqrt are correctly rounded
# in both (and float64 has enough bits that rounding a float64 result to float32 or float16 is
# the same as rounding once). Transcendentals (exp, tanh, pow of floats, ...) are left alone:
# their float32 implementations are not correctly rounded.
