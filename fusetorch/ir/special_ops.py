"""Special functions as elementwise primitives (issue 27): the modified Bessel functions
`i0 i1 i0e i1e` (torch.i0, torch.special.*), in the form of `elementwise.py`.

Eager implementations are scipy.special's ufuncs (cupyx.scipy.special's on cupy), imported at
the first call (`scipy_ufunc`): numpy has none of these, scipy's are accurate to float64
rounding, and importing scipy.special costs ~0.3 s that a script not calling them should not
pay. Kernels call the C helpers below, written out (libm has no modified Bessel functions);
they agree with scipy to a few ulp, tested in tests/tracer/test_special_more.py.
"""
from __future__ import annotations

import importlib

from .elementwise import elementwise
from .ops import arg


def scipy_ufunc(name: str):
    """`eager(xp)` for scipy.special's ufunc `name`, in the input's dtype (0-d stays an array)."""
    def make(xp):
        module = "cupyx.scipy.special" if xp.__name__.startswith("cupy") else "scipy.special"
        found = []

        def run(*args):
            if not found:
                found.append(getattr(importlib.import_module(module), name))
            first = next(a for a in args if hasattr(a, "dtype"))
            return xp.asarray(found[0](*args), dtype=first.dtype)
        run.__name__ = name
        return run
    return make


# I_nu(x) for nu = 0, 1, optionally scaled by exp(-|x|): the power series below |x| = 25 (all
# its terms positive, so no cancellation), the asymptotic series above (its smallest term,
# at k ~ 2|x|, is below 1e-19 relative there). exp(|x|) is applied in two halves so that
# I0(x) is finite up to where it overflows itself (|x| ~ 713).
_BESSEL_I_C = """/* modified Bessel functions of the first kind, orders 0 and 1 (scaled: times exp(-|x|)):
 * the power series for |x| <= 25, the asymptotic expansion above */
FT_FN double ft_bessel_i(int nu, double x, int scaled)
{
    const double ax = fabs(x);
    double r;
    if (ax != ax)
        return x;
    if (ax <= 25.0) {
        const double q = 0.25 * x * x;
        double term = nu ? 0.5 * ax : 1.0, s = term;
        for (int k = 1; k < 200 && term > 1e-17 * s; k++) {
            term *= q / ((double)k * (double)(k + nu));
            s += term;
        }
        r = scaled ? s * exp(-ax) : s;
    } else {
        const double mu = 4.0 * nu * nu;
        double term = 1.0, s = 1.0;
        for (int k = 1; k < 60; k++) {
            const double odd = 2.0 * k - 1.0;
            term *= -(mu - odd * odd) / (8.0 * k * ax);
            s += term;
            if (fabs(term) < 1e-17 * fabs(s))
                break;
        }
        s /= sqrt(6.283185307179586 * ax);
        if (scaled) {
            r = s;
        } else {
            const double h = exp(0.5 * ax);
            r = h * s * h;
        }
    }
    return (nu && x < 0) ? -r : r;
}
FT_FN double ft_i0(double x) { return ft_bessel_i(0, x, 0); }
FT_FN double ft_i1(double x) { return ft_bessel_i(1, x, 0); }
FT_FN double ft_i0e(double x) { return ft_bessel_i(0, x, 1); }
FT_FN double ft_i1e(double x) { return ft_bessel_i(1, x, 1); }
FT_FN float ft_i0f(float x) { return (float)ft_bessel_i(0, (double)x, 0); }
FT_FN float ft_i1f(float x) { return (float)ft_bessel_i(1, (double)x, 0); }
FT_FN float ft_i0ef(float x) { return (float)ft_bessel_i(0, (double)x, 1); }
FT_FN float ft_i1ef(float x) { return (float)ft_bessel_i(1, (double)x, 1); }
"""


def _vjp_i0(b, n, g):  # I0' = I1
    return (b.op("mul", g, b.op("i1", b.value(arg(n)))),)


def _i1_over_x(b, n, i1):
    """I1(x) / x (or its scaled twin), 1/2 at x = 0, where both vanish."""
    x = b.value(arg(n))
    zero = b.zero(n.dtype)
    is0 = b.op("eq", x, zero)
    safe = b.op("where", is0, b.const(1.0, n.dtype), x)
    return is0, b.op("div", i1, safe)


def _vjp_i1(b, n, g):  # I1' = I0 - I1 / x, 1/2 at 0
    is0, ratio = _i1_over_x(b, n, b.value(n))
    d = b.op("sub", b.op("i0", b.value(arg(n))), ratio)
    return (b.op("mul", g, b.op("where", is0, b.const(0.5, n.dtype), d)),)


def _vjp_i0e(b, n, g):  # (e^-|x| I0)' = i1e - sign(x) i0e
    x = b.value(arg(n))
    return (b.op("mul", g, b.op("sub", b.op("i1e", x), b.op("mul", b.op("sign", x),
                                                             b.value(n)))),)


def _vjp_i1e(b, n, g):  # (e^-|x| I1)' = i0e - i1e (sign(x) + 1/x), 1/2 at 0
    x = b.value(arg(n))
    y = b.value(n)
    is0, ratio = _i1_over_x(b, n, y)
    d = b.op("sub", b.op("i0e", x), b.op("add", b.op("mul", b.op("sign", x), y), ratio))
    return (b.op("mul", g, b.op("where", is0, b.const(0.5, n.dtype), d)),)


for _name, _vjp, _saves in (("i0", _vjp_i0, (0,)), ("i1", _vjp_i1, (0, "out")),
                            ("i0e", _vjp_i0e, (0, "out")), ("i1e", _vjp_i1e, (0, "out"))):
    elementwise(_name, 1, "float", f"ft_{_name}{{f}}({{0}})", scipy_ufunc(_name), vjp=_vjp,
                saves=_saves, c_helper=_BESSEL_I_C, unary_api=_name == "i0")
