"""The gamma-function family as elementwise primitives: `lgamma`, `digamma`, `polygamma`.

One `elementwise(...)` definition each, as in elementwise.py (whose header explains every
field); they live here because that file is long. numpy has no gamma functions and scipy is
not a dependency, so the eager implementations are written out below, vectorised over an array
module `xp` (no numpy import here either). Kernels call libm's `lgamma` and the C helpers
`ft_digamma`/`ft_polygamma`, which follow the same algorithms as the eager code.

Constants (series coefficients) are computed at import from exact Bernoulli numbers and a
scalar Hurwitz zeta (`_hurwitz`), so every number below can be re-derived from this file.

Values at the poles follow PyTorch 2.13: lgamma(0, -1, -2, ..., -inf) = +inf; digamma(+0) =
-inf, digamma(-0) = +inf, digamma(-1, -2, ..., -inf) = nan; polygamma(n, pole) = (-1)^(n+1) inf
for poles 0, -1, -2, ... and -inf. Departures: PyTorch's trigamma gives a huge finite number at
negative integers (sin(pi x) is not exactly 0 in floating point) and NaN at -inf, here +inf (the
limit from both sides, as its higher orders give); polygamma(n >= 2, +inf) is 0 here, NaN in
PyTorch.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from .elementwise import elementwise
from .ops import arg

# B_2, B_4, ..., B_24: the Bernoulli numbers every asymptotic series below is built from
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
              Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
              Fraction(-236364091, 2730))
_EULER = 0.5772156649015329  # Euler-Mascheroni constant: digamma(1) = -_EULER
_PI = 3.141592653589793
_LOG_PI = 1.1447298858494002
_HALF_LOG_2PI = 0.9189385332046728


# ---------------------------------------------------------------- Hurwitz zeta

_ZETA_SHIFT = 8.0


def _zeta_shift(s: int) -> float:
    """Where the Euler-Maclaurin tail of zeta(s, .) takes over: its terms shrink like
    ((s + 2j) / (2 pi w))^2, so w >= s + 8 keeps the 12th Bernoulli term below 1e-17 of the
    tail for every order s."""
    return s + _ZETA_SHIFT


@lru_cache(maxsize=None)
def _em_coefficients(s: int) -> tuple:
    """c_j = B_2j / (2j)! * s (s+1) ... (s+2j-2), j = 1..12: the Euler-Maclaurin tail is
    zeta(s, w) ~ w^(1-s) / (s-1) + w^-s (1/2 + sum_j c_j w^(1-2j))."""
    out, rising = [], Fraction(s)  # s (s+1) ... (s+2j-2)
    for j, b in enumerate(_BERNOULLI, start=1):
        out.append(float(b / math.factorial(2 * j) * rising))
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return tuple(out)


def _hurwitz(s: int, q: float) -> float:
    """zeta(s, q) = sum_{k >= 0} (q + k)^-s for an integer s >= 2 and q > 0, in Python floats
    (import-time constants): terms summed until q + k >= s + 8, then Euler-Maclaurin."""
    terms, w = [], q
    while w < _zeta_shift(s):
        terms.append(w ** -s)
        w += 1.0
    tail = sum(c * w ** (1 - 2 * j) for j, c in enumerate(_em_coefficients(s), start=1))
    terms += [w ** (1 - s) / (s - 1), w ** -s * 0.5, w ** -s * tail]
    return math.fsum(terms)


def _zeta_tail(xp, s: int, w):
    """The Euler-Maclaurin tail zeta(s, w) for arrays w >= s + 8 (or +inf: 0)."""
    c = _em_coefficients(s)
    z = 1.0 / (w * w)
    p = xp.full_like(w, c[-1])
    for cj in reversed(c[:-1]):
        p = p * z + cj
    return xp.power(w, float(1 - s)) / (s - 1) + xp.power(w, float(-s)) * (0.5 + p / w)


def _int_power(xp, t, s: int):
    """t**s for an integer s >= 1 by squaring: a few multiplications where pow is a libm call
    per element (the sum's terms, at most ~2 log2(s) ulp apart from pow's)."""
    out, base = None, t
    while True:
        if s & 1:
            out = base if out is None else out * base
        s >>= 1
        if not s:
            return out
        base = base * base


def _zeta_pos(xp, s: int, q):
    """zeta(s, q) for float64 arrays q >= 0 (the eager twin of ft_polygamma's loop). Every lane
    takes as many terms as the lowest one needs (zeta(s, q) = sum_{k < J} (q + k)^-s +
    zeta(s, q + J) for every J, and a lane at the shift or above adds terms far below its
    tail), so the loop is whole-array arithmetic without masks."""
    shift = _zeta_shift(s)
    lowest = float(xp.where(q < shift, q, shift).min()) if q.size else shift  # (NaN: shift)
    acc, w = xp.zeros_like(q), q
    for k in range(math.ceil(shift - lowest)):
        acc += _int_power(xp, 1.0 / w, s)
        w = w + 1.0 if k == 0 else xp.add(w, 1.0, out=w)  # (q itself is the caller's)
    return acc + _zeta_tail(xp, s, w)


def _cot_pi(xp, r):
    """cot(pi r) for r in [-1/2, 1/2] (exact 0 at +-1/2, where tan(pi/2) is merely huge)."""
    return xp.where(xp.abs(r) == 0.5, 0.0, xp.cos(_PI * r) / xp.sin(_PI * r))


def _poles(xp, a):
    """x = 0, -1, -2, ..., and -inf."""
    return (a <= 0) & (a == xp.floor(a))


def _flat64(x):
    """A float64 1-d copy (numpy turns 0-d results into scalars) and the shape to restore."""
    return x.reshape(-1).astype("float64"), x.shape


# ---------------------------------------------------------------- lgamma

# lgamma(2 + z) = (1 - gamma) z + sum_{k >= 2} (-1)^k (zeta(k) - 1) / k z^k, |z| <= 1/2: the
# terms shrink like 4^-k / k, so 30 reach double precision, and near the roots of lgamma (1
# and 2) the result keeps its relative precision (no difference of large numbers).
_LG2_COEFS = (1.0 - _EULER,) + tuple((-1) ** k * _hurwitz(k, 2.0) / k for k in range(2, 31))
# Stirling: lgamma(y) = (y - 1/2) log y - y + log(2 pi) / 2 + sum_k B_2k / (2k (2k-1) y^(2k-1));
# for y >= 8 the 10th term is below 1e-17 of the value
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI[:9],
                                                                          start=1))


def _lgamma2(xp, z):
    """lgamma(2 + z) for |z| <= 1/2."""
    p = xp.full_like(z, _LG2_COEFS[-1])
    for c in reversed(_LG2_COEFS[:-1]):
        p = p * z + c
    return p * z


def _lgamma_pos(xp, a):
    """lgamma(a) for float64 arrays a >= 1/2 (+inf included)."""
    out = xp.empty_like(a)
    m = a < 1.5  # lgamma(1 + z) = lgamma(2 + z) - log(1 + z)
    z = a[m] - 1.0
    out[m] = _lgamma2(xp, z) - xp.log1p(z)
    m = (a >= 1.5) & (a < 2.5)
    out[m] = _lgamma2(xp, a[m] - 2.0)
    m = (a >= 2.5) & (a < 8.0)  # down to y in [1.5, 2.5): lgamma(y + n) = lgamma(y) + log(y...)
    y = a[m]
    steps = xp.floor(y - 1.5)
    base = y - steps  # exact
    prod, t = xp.ones_like(y), base
    for k in range(6):
        prod = xp.where(k < steps, prod * t, prod)
        t = t + 1.0
    out[m] = _lgamma2(xp, base - 2.0) + xp.log(prod)
    m = a >= 8.0
    y = a[m]
    r = 1.0 / y
    z = r * r
    p = xp.full_like(y, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        p = p * z + c
    # (y - 1/2) log y - y written as (y - 1/2)(log y - 1) - 1/2: +inf stays +inf, not inf - inf
    out[m] = (y - 0.5) * (xp.log(y) - 1.0) + (_HALF_LOG_2PI - 0.5) + p * r
    return out


def _lgamma(xp):
    def lgamma(x):
        a, shape = _flat64(x)
        out = xp.full_like(a, float("nan"))
        m = xp.abs(a) < 0.5  # lgamma(a) = lgamma(a + 2) - log|a (a + 1)|: no sin(pi a) near 0
        s = a[m]
        out[m] = _lgamma2(xp, s) - xp.log(xp.abs(s)) - xp.log1p(s)
        m = a >= 0.5
        out[m] = _lgamma_pos(xp, a[m])
        m = a <= -0.5  # reflection: lgamma(a) = log(pi / |sin(pi a)|) - lgamma(1 - a)
        s = a[m]
        r = s - xp.round(s)  # exact; sin(pi a) = +-sin(pi r) without pi a's rounding
        out[m] = _LOG_PI - xp.log(xp.abs(xp.sin(_PI * r))) - _lgamma_pos(xp, 1.0 - s)
        out[_poles(xp, a)] = float("inf")
        return out.astype(x.dtype, copy=False).reshape(shape)
    return lgamma


def _vjp_lgamma(b, n, g):
    return (b.op("mul", g, b.op("digamma", b.value(arg(n)))),)


# libm's lgamma writes the global `signgam`: a harmless race between OpenMP threads (PyTorch's
# CPU kernels call std::lgamma the same way)
elementwise("lgamma", 1, "float", "lgamma{f}({0})", _lgamma, vjp=_vjp_lgamma, saves=(0,),
            unary_api=True, eager_kernel=True)


# ---------------------------------------------------------------- digamma

_DIGAMMA_BIG = 10.0  # the recurrence climbs to here, then the asymptotic series
# digamma(y) ~ log y - 1/(2y) - sum_k B_2k / (2k y^2k): at y >= 10 the 9th term is 3e-18
_DIGAMMA_ASYM = tuple(float(b / (2 * k)) for k, b in enumerate(_BERNOULLI[:8], start=1))
# digamma's positive root, as a double plus the rest (from mpmath at 50 digits:
# 1.4616321449683623412626595423257213284681962040064)
_ROOT_HI, _ROOT_LO = 1.4616321449683622, 9.549995429965697e-17
_ROOT_RADIUS = 0.25
# Taylor series about the root: digamma(x0 + t) = sum_k (-1)^(k+1) zeta(k + 1, x0) t^k. The
# recurrence would subtract numbers near 2.3 there and lose the relative precision of a value
# near 0; for |t| < 1/4 the terms shrink like (t / x0)^k and 24 reach double precision.
_ROOT_COEFS = tuple((-1) ** (k + 1) * _hurwitz(k + 1, _ROOT_HI) for k in range(1, 25))


def _horner_c(coefs: tuple, var: str, indent: str) -> str:
    """C statements `p = ...;` evaluating sum_k coefs[k] var^k (lowest first)."""
    lines = [f"p = {coefs[-1]!r};"] + [f"p = {c!r} + p * {var};" for c in reversed(coefs[:-1])]
    return ("\n" + indent).join(lines)


_DIGAMMA_C = f"""/* digamma: the Taylor series about the positive root within {_ROOT_RADIUS} of it;
 * else digamma(x) = digamma(x + n) - sum 1/(x + k) up to x + n >= {_DIGAMMA_BIG}, then the
 * asymptotic series; reflection for x < 0. PyTorch's values at the poles: -+inf at +-0, NaN at
 * negative integers and -inf. */
FT_FN double ft_digamma_pos(double x)
{{
    double p;
    if (fabs(x - {_ROOT_HI!r}) < {_ROOT_RADIUS!r}) {{
        const double t = (x - {_ROOT_HI!r}) - {_ROOT_LO!r};
        {_horner_c(_ROOT_COEFS, "t", "        ")}
        return p * t;
    }}
    double acc = 0.0;
    while (x < {_DIGAMMA_BIG!r}) {{
        acc -= 1.0 / x;
        x += 1.0;
    }}
    const double z = 1.0 / (x * x);
    {_horner_c(_DIGAMMA_ASYM, "z", "    ")}
    return acc + (log(x) - 0.5 / x - p * z);
}}
FT_FN double ft_digamma(double x)
{{
    if (x == 0.0)
        return copysign(INFINITY, -x);
    if (x < 0.0) {{
        if (x == floor(x))
            return NAN;
        const double pi = {_PI!r};
        const double r = x - round(x);  /* exact: cot(pi x) = cot(pi r) */
        const double cot = fabs(r) == 0.5 ? 0.0 : cos(pi * r) / sin(pi * r);
        return ft_digamma_pos(1.0 - x) - pi * cot;
    }}
    return ft_digamma_pos(x);
}}
FT_FN float ft_digammaf(float x) {{ return (float)ft_digamma((double)x); }}
"""


def _digamma_pos(xp, x):
    """digamma for float64 arrays x > 0 (+inf, NaN pass through): ft_digamma_pos's steps."""
    acc, y = xp.zeros_like(x), x
    while True:
        low = y < _DIGAMMA_BIG
        if not bool(low.any()):
            break
        acc = acc - xp.where(low, 1.0 / y, 0.0)
        y = xp.where(low, y + 1.0, y)
    z = 1.0 / (y * y)
    p = xp.full_like(y, _DIGAMMA_ASYM[-1])
    for c in reversed(_DIGAMMA_ASYM[:-1]):
        p = p * z + c
    out = acc + (xp.log(y) - 0.5 / y - p * z)
    near = xp.abs(x - _ROOT_HI) < _ROOT_RADIUS
    if bool(near.any()):
        t = (x[near] - _ROOT_HI) - _ROOT_LO
        q = xp.full_like(t, _ROOT_COEFS[-1])
        for c in reversed(_ROOT_COEFS[:-1]):
            q = q * t + c
        out[near] = q * t
    return out


def _digamma(xp):
    def digamma(x):
        a, shape = _flat64(x)
        neg = a < 0
        r = a - xp.round(a)
        out = _digamma_pos(xp, xp.where(neg, 1.0 - a, a))
        out = xp.where(neg, out - _PI * _cot_pi(xp, r), out)
        out = xp.where(_poles(xp, a), xp.where(a == 0, xp.copysign(float("inf"), -a),
                                              float("nan")), out)
        return out.astype(x.dtype, copy=False).reshape(shape)
    return digamma


def _vjp_digamma(b, n, g):
    return (b.op("mul", g, b.op("polygamma", b.value(arg(n)), n=1)),)


elementwise("digamma", 1, "float", "ft_digamma{f}({0})", _digamma, vjp=_vjp_digamma,
            saves=(0,), c_helper=_DIGAMMA_C, unary_api=True, eager_kernel=True)


# ---------------------------------------------------------------- polygamma (order n >= 1)

def _em_c() -> str:
    """The C initialiser of B_2j / (2j)!, j = 1..12 (ft_polygamma forms c_j from them), three
    to a line."""
    v = [repr(float(b / math.factorial(2 * j))) for j, b in enumerate(_BERNOULLI, start=1)]
    return ",\n        ".join(", ".join(v[i:i + 3]) for i in range(0, len(v), 3))


_POLYGAMMA_C = f"""/* polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x), n >= 1: the Hurwitz zeta's terms
 * summed until x + k >= n + 9, then its Euler-Maclaurin tail (12 Bernoulli terms). For x < 0
 * the sum starts at x and runs about |x| terms, as PyTorch's does (eager uses the reflection
 * formula). Poles (0, -1, -2, ..., -inf) give (-1)^(n+1) inf. */
FT_FN double ft_polygamma(int n, double x)
{{
    const double b2j[12] = {{  /* B_2j / (2j)! */
        {_em_c()}}};
    const double s = n + 1.0, sign = (n % 2) ? 1.0 : -1.0;
    double fact = 1.0;
    for (int k = 2; k <= n; k++)
        fact *= k;
    if (x <= 0.0 && x == floor(x))
        return sign * INFINITY;
    double acc = 0.0, w = x;
    while (w < s + {_ZETA_SHIFT!r}) {{
        acc += pow(w, -s);
        w += 1.0;
    }}
    const double r = 1.0 / w, z = r * r;
    double tail = 0.0, rising = s, wpow = r;  /* rising = s (s+1) ... (s+2j-2), wpow = w^(1-2j) */
    for (int j = 0; j < 12; j++) {{
        tail += b2j[j] * rising * wpow;
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
        wpow *= z;
    }}
    acc += pow(w, 1.0 - s) / (s - 1.0) + pow(w, -s) * (0.5 + tail);
    return sign * fact * acc;
}}
FT_FN float ft_polygammaf(int n, float x) {{ return (float)ft_polygamma(n, (double)x); }}
"""


@lru_cache(maxsize=None)
def _cot_derivative(n: int) -> tuple:
    """Integer coefficients (lowest first) of P_n with d^n/dx^n cot(x) = P_n(cot x):
    P_0(c) = c, P_{k+1}(c) = -(1 + c^2) P_k'(c)."""
    p = [0, 1]
    for _ in range(n):
        d = [i * p[i] for i in range(1, len(p))] + [0, 0]  # P'
        p = [-(d[i] + (d[i - 2] if i >= 2 else 0)) for i in range(len(d))]
    while len(p) > 1 and p[-1] == 0:
        p.pop()
    return tuple(p)


def _polygamma(xp):
    def polygamma(x, n):
        a, shape = _flat64(x)
        s = n + 1
        sign = 1.0 if n % 2 else -1.0
        fact = float(math.factorial(n)) if n <= 170 else float("inf")
        neg = a < 0
        out = sign * fact * _zeta_pos(xp, s, xp.where(neg, 1.0 - a, a))
        if bool(neg.any()):
            # reflection: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)); P_n's
            # coefficients share one sign per parity, so its sum does not cancel
            c = _cot_pi(xp, a[neg] - xp.round(a[neg]))
            coefs = _cot_derivative(n)
            poly = xp.full_like(c, float(coefs[-1]))
            for k in reversed(coefs[:-1]):
                poly = poly * c + float(k)
            out[neg] = (-1) ** n * out[neg] - _PI ** (n + 1) * poly
        out = xp.where(_poles(xp, a), sign * float("inf"), out)
        return out.astype(x.dtype, copy=False).reshape(shape)
    return polygamma


def _vjp_polygamma(b, n, g):
    k = n.attrs["n"]
    return (b.op("mul", g, b.op("polygamma", b.value(arg(n)), n=k + 1)),)


elementwise("polygamma", 1, "float", "ft_polygamma{f}({n}, {0})", _polygamma,
            vjp=_vjp_polygamma, saves=(0,), attrs=("n",), c_helper=_POLYGAMMA_C,
            doc="the n-th derivative of digamma, attrs['n'] >= 1 (order 0 is `digamma`)")
