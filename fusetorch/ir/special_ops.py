"""Special functions as elementwise primitives (issue 27), in the form of `elementwise.py`:
the modified Bessel functions `i0 i1 i0e i1e`, `erfcx log_ndtr` and `entr xlogy xlog1py` (fused,
with C helpers; the last three are primitives for PyTorch's gradients at their edges);
`bessel_j0 bessel_j1 bessel_y0 bessel_y1` (fused, libm's); `ndtri zeta igamma igammac airy_ai
modified_bessel_k0/k1 scaled_modified_bessel_k0/k1` (scipy's only: never fused).

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


def scipy_ufunc(name: str, part: int | None = None):
    """`eager(xp)` for scipy.special's ufunc `name` (output `part` of one with several), in the
    input's dtype (0-d stays an array)."""
    def make(xp):
        module = "cupyx.scipy.special" if xp.__name__.startswith("cupy") else "scipy.special"
        found = []

        def run(*args):
            if not found:
                found.append(getattr(importlib.import_module(module), name))
            first = next(a for a in args if hasattr(a, "dtype"))
            out = found[0](*args)
            return xp.asarray(out if part is None else out[part], dtype=first.dtype)
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


_EPS = {"float64": 2.220446049250313e-16, "float16": 0.0009765625, "bfloat16": 0.0078125}


def _i1_over_x(b, n, i1):
    """I1(x) / x (or its scaled twin), and where PyTorch takes 1/2 instead: not |x| > eps (the
    dtype's machine epsilon), so at 0, where both vanish, and at NaN as PyTorch's backward."""
    x = b.value(arg(n))
    tiny = b.op("logical_not", b.op("gt", b.op("abs", x),
                                    b.const(_EPS.get(n.dtype.name, 1.1920928955078125e-07), n.dtype)))
    safe = b.op("where", tiny, b.const(1.0, n.dtype), x)
    return tiny, b.op("div", i1, safe)


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
                saves=_saves, c_helper=_BESSEL_I_C, unary_api=_name == "i0", eager_kernel=True)


# ---------------------------------------------------------------- erfcx, log_ndtr
#
# erfcx(x) = exp(x^2) erfc(x): directly below x = 2.5 (both factors accurate there; it overflows
# where the value does, for x below about -26.6), erfc's continued fraction above (50 levels,
# more than the 25 that reach double precision at 2.5). log_ndtr from erfcx in the lower tail,
# where ndtr itself underflows, log1p(-erfc / 2) elsewhere.
_ERFCX_C = """/* erfcx(x) = exp(x^2) erfc(x) and log(ndtr(x)) without underflow */
FT_FN double ft_erfcx(double x)
{
    if (!(x >= 2.5))
        return exp(x * x) * erfc(x);
    double f = x;
    for (int k = 50; k > 0; k--)
        f = x + (0.5 * k) / f;
    return 0.5641895835477563 / f;
}
FT_FN double ft_log_ndtr(double x)
{
    const double t = x * 0.7071067811865476;
    if (x < -1.0)
        return log(0.5 * ft_erfcx(-t)) - t * t;
    return log1p(-0.5 * erfc(t));
}
FT_FN float ft_erfcxf(float x) { return (float)ft_erfcx((double)x); }
FT_FN float ft_log_ndtrf(float x) { return (float)ft_log_ndtr((double)x); }
"""
_INV_SQRT_PI2 = 1.1283791670955126  # 2 / sqrt(pi)
_INV_SQRT_2PI = 0.3989422804014327


def _vjp_erfcx(b, n, g):  # erfcx' = 2 x erfcx(x) - 2 / sqrt(pi)
    x = b.value(arg(n))
    d = b.op("sub", b.op("mul", b.op("mul", b.const(2.0, n.dtype), x), b.value(n)),
             b.const(_INV_SQRT_PI2, n.dtype))
    return (b.op("mul", g, d),)


def _vjp_log_ndtr(b, n, g):  # pdf / ndtr = exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)
    x = b.value(arg(n))
    e = b.op("sub", b.op("mul", b.const(-0.5, n.dtype), b.op("mul", x, x)), b.value(n))
    return (b.op("mul", g, b.op("mul", b.const(_INV_SQRT_2PI, n.dtype), b.op("exp", e))),)


elementwise("erfcx", 1, "float", "ft_erfcx{f}({0})", scipy_ufunc("erfcx"), vjp=_vjp_erfcx,
            saves=(0, "out"), c_helper=_ERFCX_C, eager_kernel=True)
elementwise("log_ndtr", 1, "float", "ft_log_ndtr{f}({0})", scipy_ufunc("log_ndtr"),
            vjp=_vjp_log_ndtr, saves=(0, "out"), c_helper=_ERFCX_C, eager_kernel=True)


# ---------------------------------------------------------------- without kernels
#
# scipy's implementations only (Cephes' rational approximations and series would have to be
# written out in C): each runs as an eager step of a compiled program, never fused.

def _vjp_ndtri(b, n, g):  # ndtri' = sqrt(2 pi) exp(ndtri^2 / 2)
    y = b.value(n)
    e = b.op("exp", b.op("mul", b.const(0.5, n.dtype), b.op("mul", y, y)))
    return (b.op("mul", g, b.op("mul", b.const(2.5066282746310002, n.dtype), e)),)


def _vjp_refused(what: str):
    def rule(b, n, g):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
    return rule


def _vjp_gammainc(sign: float):
    # d/dx P(a, x) = exp(-x) x^(a-1) / Gamma(a) (and Q = 1 - P); PyTorch has none for a
    def rule(b, n, g):
        a, x = b.value(arg(n, 0)), b.value(arg(n, 1))
        one = b.const(1.0, n.dtype)
        e = b.op("sub", b.op("sub", b.op("mul", b.op("sub", a, one), b.op("log", x)), x),
                 b.op("lgamma", a))
        d = b.op("mul", b.const(sign, n.dtype), b.op("exp", e))
        return (None, b.sum_to(b.op("mul", g, d), arg(n, 1).shape))
    return rule


def _gammainc(name: str, upper: bool):
    """scipy's regularized incomplete gamma with PyTorch's edge rules at NaN, which its
    calc_igamma(c) applies in order before any series: x == 0 gives P = 0, a = inf with a finite
    (or NaN) x gives P = 0, x = inf gives P = 1; scipy gives NaN wherever an input is NaN."""
    scipy_run = scipy_ufunc(name)

    def make(xp):
        plain = scipy_run(xp)

        def run(a, x):
            r = plain(a, x)
            lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
            an, xn = xp.isnan(a), xp.isnan(x)
            if not bool((an | xn).any()):
                return r
            r = xp.where(an & (x == 0), lo, r)
            r = xp.where(an & (x == xp.inf), hi, r)
            return xp.asarray(xp.where(xn & (a == xp.inf), lo, r), dtype=r.dtype)
        run.__name__ = name
        return run
    return make


# (their C expressions name functions no kernel defines: fusible=False keeps them out of kernels)
elementwise("ndtri", 1, "float", "ft_ndtri{f}({0})", scipy_ufunc("ndtri"), vjp=_vjp_ndtri, saves=("out",),
            fusible=False)
elementwise("zeta", 2, "float", "ft_zeta{f}({0}, {1})", scipy_ufunc("zeta"), vjp=_vjp_refused("zeta"),
            fusible=False)
elementwise("igamma", 2, "float", "ft_igamma{f}({0}, {1})", _gammainc("gammainc", False), vjp=_vjp_gammainc(1.0),
            saves=(0, 1), fusible=False)
elementwise("igammac", 2, "float", "ft_igammac{f}({0}, {1})", _gammainc("gammaincc", True), vjp=_vjp_gammainc(-1.0),
            saves=(0, 1), fusible=False)
# PyTorch gives these no gradient at all (torch.special wraps them in no_grad)
elementwise("airy_ai", 1, "float", "ft_airy_ai{f}({0})", scipy_ufunc("airy", 0), vjp=_vjp_refused("airy_ai"),
            fusible=False)
# libm's j0 j1 y0 y1 (POSIX, not C11: declared here), in double for float32 as well
_BESSEL_JY_C = """/* libm's Bessel functions of the first and second kind (POSIX; kernels are -std=c11);
 * NaN at +-inf as PyTorch's (libm's limit there is 0) */
#ifndef __CUDACC__
double j0(double); double j1(double); double y0(double); double y1(double);
#endif
FT_FN double ft_bessel_j0(double x) { return isinf(x) ? NAN : j0(x); }
FT_FN double ft_bessel_j1(double x) { return isinf(x) ? NAN : j1(x); }
FT_FN double ft_bessel_y0(double x) { return isinf(x) ? NAN : y0(x); }
FT_FN double ft_bessel_y1(double x) { return isinf(x) ? NAN : y1(x); }
FT_FN float ft_bessel_j0f(float x) { return (float)ft_bessel_j0((double)x); }
FT_FN float ft_bessel_j1f(float x) { return (float)ft_bessel_j1((double)x); }
FT_FN float ft_bessel_y0f(float x) { return (float)ft_bessel_y0((double)x); }
FT_FN float ft_bessel_y1f(float x) { return (float)ft_bessel_y1((double)x); }
"""
for _name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"):
    elementwise(_name, 1, "float", f"ft_{_name}{{f}}({{0}})", scipy_ufunc(_name[-2:]),
                vjp=_vjp_refused(_name), c_helper=_BESSEL_JY_C, eager_kernel=True)
for _name, _scipy in (("modified_bessel_k0", "k0"), ("modified_bessel_k1", "k1"),
                      ("scaled_modified_bessel_k0", "k0e"), ("scaled_modified_bessel_k1", "k1e")):
    elementwise(_name, 1, "float", f"ft_{_name}{{f}}({{0}})", scipy_ufunc(_scipy),
                vjp=_vjp_refused(_name), fusible=False)


# entr: a primitive, not a composition, for PyTorch's gradient -(1 + log x) everywhere (inf at
# 0, NaN below 0), which no `where` of -x log x can carry: a masked branch passes no gradient.
_ENTR_C = """/* -x log x for x > 0, 0 at 0, -inf below 0, NaN for NaN (scipy's and PyTorch's entr) */
FT_FN double ft_entr(double x)
{
    return x > 0 ? -x * log(x) : (x == 0 ? 0.0 : (x != x ? x : -INFINITY));
}
FT_FN float ft_entrf(float x)
{
    return x > 0 ? -x * logf(x) : (x == 0 ? 0.0f : (x != x ? x : -INFINITY));
}
"""


def _vjp_entr(b, n, g):
    x = b.value(arg(n))
    return (b.op("neg", b.op("mul", g, b.op("add", b.const(1.0, n.dtype), b.op("log", x)))),)


elementwise("entr", 1, "float", "ft_entr{f}({0})", scipy_ufunc("entr"), vjp=_vjp_entr, saves=(0,),
            c_helper=_ENTR_C, grad_name="SpecialEntrBackward0", eager_kernel=True)


# xlogy, xlog1py: primitives for PyTorch's gradients: d/dx = xlogy(g, y), 0 where x == 0 and y
# is outside log's domain, d/dy = g x / y (or / (y + 1)); a `where` of x log y passes none at
# x == 0, and the masked product's 0 * log(0) makes NaN.
_XLOGY_C = """/* x log(y) (x log1p(y)), 0 where x == 0 unless y is NaN (scipy's and PyTorch's) */
FT_FN double ft_xlogy(double x, double y) { return x == 0 && y == y ? 0.0 : x * log(y); }
FT_FN float ft_xlogyf(float x, float y) { return x == 0 && y == y ? 0.0f : x * logf(y); }
FT_FN double ft_xlog1py(double x, double y) { return x == 0 && y == y ? 0.0 : x * log1p(y); }
FT_FN float ft_xlog1pyf(float x, float y) { return x == 0 && y == y ? 0.0f : x * log1pf(y); }
"""


def _vjp_xlog(edge: float):
    def vjp(b, n, g):
        x, y = arg(n, 0), arg(n, 1)
        xv, yv = b.value(x), b.value(y)
        masked = b.op("bitwise_and", b.op("eq", xv, b.zero(n.dtype)),
                      b.op("le", yv, b.const(edge, n.dtype)))
        dx = b.op("where", masked, b.zero(n.dtype), b.op(n.op, g, yv))
        dy = b.op("div", b.op("mul", g, xv),
                  yv if edge == 0.0 else b.op("add", yv, b.const(1.0, n.dtype)))
        return b.sum_to(dx, x.shape), b.sum_to(dy, y.shape)
    return vjp


for _name, _edge, _grad in (("xlogy", 0.0, "XlogyBackward0"),
                           ("xlog1py", -1.0, "SpecialXlog1PyBackward0")):
    elementwise(_name, 2, "float", f"ft_{_name}{{f}}({{0}}, {{1}})", scipy_ufunc(_name),
                vjp=_vjp_xlog(_edge), saves=(0, 1), c_helper=_XLOGY_C, grad_name=_grad)
