"""Elementwise primitives added for PyTorch's catalogue (issue 27): `erfc copysign nextafter
gcd lcm frexp_mantissa frexp_exponent`, in the form of `elementwise.py` (one `elementwise(...)` call each, everything the
system knows about the op beside it).

Each is a primitive because no composition gives its values exactly: erfc(x) = 1 - erf(x) loses
every digit for large x, copysign and nextafter read bits no arithmetic sees (-0.0, -NaN), and
gcd/lcm are integer loops. The other functions of that paragraph are compositions
(`tracer/functional_more.py`). numpy has no erfc: its eager implementation is scipy.special's
(`special_ops.scipy_ufunc`).
"""
from __future__ import annotations

from .elementwise import _TWO_OVER_SQRT_PI, elementwise
from .ops import arg, vjp_zero
from .special_ops import scipy_ufunc


def _vjp_erfc(b, n, g):
    # d/dx erfc(x) = -2 / sqrt(pi) * exp(-x^2)
    x = b.value(arg(n))
    k = b.const(-_TWO_OVER_SQRT_PI, n.dtype)
    return (b.op("mul", g, b.op("mul", k, b.op("exp", b.op("neg", b.op("mul", x, x))))),)


elementwise("erfc", 1, "float", "erfc{f}({0})", scipy_ufunc("erfc"), vjp=_vjp_erfc, saves=(0,),
            simd="fd", unary_api=True, eager_kernel=True)


def _vjp_copysign(b, n, g):
    # PyTorch's copysign_tensor_self_backward: g * (result / input), 0 where input == 0; the
    # sign source gets no gradient
    x = b.value(arg(n, 0))
    zero = b.zero(n.dtype)
    ratio = b.op("where", b.op("eq", x, zero), zero, b.op("div", b.value(n), x))
    return (b.sum_to(b.op("mul", g, ratio), arg(n, 0).shape), None)


elementwise("copysign", 2, "float", "copysign{f}({0}, {1})", lambda xp: xp.copysign,
            vjp=_vjp_copysign, saves=(0, "out"))


def _vjp_nextafter(b, n, g):
    # PyTorch 2.13 passes the cotangent to `input` where input != other (checked by hand:
    # nextafter([1, 2], [2, 2]) gives [1, 0]), none to `other`
    x, y = arg(n, 0), arg(n, 1)
    keep = b.op("ne", b.value(x), b.value(y))
    return (b.sum_to(b.where0(keep, g), x.shape), None)


elementwise("nextafter", 2, "same", "nextafter{f}({0}, {1})", lambda xp: xp.nextafter,
            vjp=_vjp_nextafter, saves=(0, 1))


def _aten_gcd(xp, a, b):
    """ATen's Euclid where an operand is its dtype's minimum: abs(min) wraps to min itself and
    C's remainder keeps the dividend's sign, so gcd(127, -128) in int8 is -1 (numpy's: 1)."""
    a, b = xp.abs(a), xp.abs(b)
    while True:
        live = a != 0
        if not bool(live.any()):
            return b
        c = a
        a = xp.where(live, xp.fmod(b, xp.where(live, a, 1)), 0)
        b = xp.where(live, c, b)


def _gcd_edges(xp, a, b, out):
    """np.gcd, with ATen's value where an operand is a signed dtype's minimum."""
    if getattr(out, "dtype", None) is None or out.dtype.kind != "i":
        return out
    low = xp.iinfo(out.dtype).min
    edge = (a == low) | (b == low)
    if not bool(edge.any()):
        return out
    a2, b2 = xp.broadcast_arrays(xp.asarray(a, out.dtype), xp.asarray(b, out.dtype))
    return xp.where(edge, _aten_gcd(xp, a2, b2), out)


def _integer_ufunc(ufunc: str, fix=None):
    def make(xp):
        f = getattr(xp, ufunc)

        def run(a, b):
            if getattr(a, "dtype", None) is not None and a.dtype.kind == "b":
                raise NotImplementedError(f'"{ufunc}_cpu" not implemented for \'Bool\'')
            out = f(a, b)
            return out if fix is None else fix(xp, a, b, out)
        return run
    return make


# Integers only, as the shifts: kernels compute floats and bools, so never fused (an eager step
# of a compiled program). PyTorch refuses floats and bools with NotImplementedError.
for _name, _fix in (("gcd", _gcd_edges), ("lcm", None)):
    elementwise(_name, 2, "integral", f"ft_{_name}({{0}}, {{1}})", _integer_ufunc(_name, _fix),
                vjp=vjp_zero, fusible=False)


# frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1) (0, inf and NaN: the value
# itself and exponent 0); one primitive per result, each computing the pair and keeping one.
# The exponent comes out in the input's float dtype (exact: |exponent| <= 1074), torch.frexp
# casts it to int32: elementwise results share their inputs' dtype in dispatch
_FREXP_C = """/* frexp's two results, one function each */
FT_FN double ft_frexp_mantissa(double x) { int e; return frexp(x, &e); }
FT_FN float ft_frexp_mantissaf(float x) { int e; return frexpf(x, &e); }
FT_FN double ft_frexp_exponent(double x)
{
    int e;
    frexp(x, &e);
    return (x - x == 0) ? (double)e : 0.0;  /* 0 for inf and NaN, as numpy and PyTorch */
}
FT_FN float ft_frexp_exponentf(float x) { return (float)ft_frexp_exponent((double)x); }
"""


def _frexp_part(i: int):
    def make(xp):
        def run(x):
            m, e = xp.frexp(x)
            return m if i == 0 else e.astype(x.dtype)
        return run
    return make


def _vjp_frexp_mantissa(b, n, g):
    # PyTorch's: g / 2^exponent
    x = b.value(arg(n))
    e = b.op("frexp_exponent", x)
    return (b.op("mul", g, b.op("exp2", b.op("neg", e))),)


elementwise("frexp_mantissa", 1, "same", "ft_frexp_mantissa{f}({0})", _frexp_part(0),
            vjp=_vjp_frexp_mantissa, saves=(0,), c_helper=_FREXP_C)
elementwise("frexp_exponent", 1, "same", "ft_frexp_exponent{f}({0})", _frexp_part(1),
            vjp=vjp_zero, c_helper=_FREXP_C)
