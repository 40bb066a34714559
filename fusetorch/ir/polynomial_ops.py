"""The orthogonal polynomials of torch.special (issue 27) as elementwise primitives of (x, n):
`chebyshev_polynomial_t/u/v/w hermite_polynomial_h/he laguerre_polynomial_l
legendre_polynomial_p` (the shifted Chebyshev ones are these at 2x - 1, composed in
fusetorch/special.py). Each follows ATen's algorithm step for step (its special cases at
|x| = 1, its cos/sin closed forms for large n inside (-1, 1), then the three-term recurrence),
so values round as PyTorch's do; n is truncated to an integer. PyTorch gives them no
gradient. Kernels call the C helpers (one loop per element); eager runs the same recurrence
over whole arrays, each lane leaving as it ends, for up to 1024 steps; lanes still going then
(|x| < 1 Legendre, x > 0 or near 0 Laguerre, |x| a little over 1 Chebyshev) get a float64
evaluation: scipy's loop in C or the hyperbolic closed forms, within ~1e-10 of ATen's float64
loop and nearer the exact value than its float32 one."""
from __future__ import annotations

import importlib

from .elementwise import elementwise
from .fma import fma
from .ops import vjp_zero

# ---------------------------------------------------------------- C helpers
#
# written once for double; the float twin is the same text with float types and libm's f names

# each loop stops at a NaN, as ATen's do (r starts as q, so a NaN first term is the result)
_C_DOUBLE = """
FT_FN double ft_chebyshev_polynomial_t(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (fabs(x) == 1.0) return (x > 0.0 || n % 2 == 0) ? 1.0 : -1.0;
    if (n > 6 && fabs(x) < 1.0) return cos(n * acos(x));
    if (n == 0) return 1.0;
    if (n == 1) return x;
    double p = 1.0, q = x, r = q;
    for (double k = 2; k <= n && !isnan(q); k++) { r = (x + x) * q - p; p = q; q = r; }
    return r;
}
FT_FN double ft_chebyshev_polynomial_u(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (fabs(x) == 1.0) return (x > 0.0 || n % 2 == 0) ? n + 1.0 : -(n + 1.0);
    if (n > 8 && fabs(x) < 1.0) {
        if (sin(acos(x)) != 0.0) return sin((n + 1) * acos(x)) / sin(acos(x));
        return (n + 1) * cos((n + 1) * acos(x)) * x;
    }
    if (n == 0) return 1.0;
    if (n == 1) return x + x;
    double p = 1.0, q = x + x, r = q;
    for (double k = 2; k <= n && !isnan(q); k++) { r = (x + x) * q - p; p = q; q = r; }
    return r;
}
FT_FN double ft_chebyshev_polynomial_v(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (fabs(x) == 1.0) {
        if (x > 0.0) return 1.0;
        return n % 2 == 0 ? n + n + 1.0 : -(n + n + 1.0);
    }
    if (n > 8 && fabs(x) < 1.0) {
        if (sin(acos(x) / 2) != 1.0) return cos((n + 0.5) * acos(x)) / cos(acos(x) / 2);
        return n % 2 == 0 ? n + n + 1.0 : -(n + n + 1.0);
    }
    if (n == 0) return 1.0;
    if (n == 1) return x + x - 1.0;
    double p = 1.0, q = x + x - 1.0, r = q;
    for (double k = 2; k <= n && !isnan(q); k++) { r = (x + x) * q - p; p = q; q = r; }
    return r;
}
FT_FN double ft_chebyshev_polynomial_w(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (fabs(x) == 1.0) {
        if (x > 0.0) return n + n + 1.0;
        return n % 2 == 0 ? 1.0 : -1.0;
    }
    if (n > 8 && fabs(x) < 1.0) {
        if (cos(acos(x) / 2) != 1.0) return sin((n + 0.5) * acos(x)) / sin(acos(x) / 2);
        if (x > 0.0) return n + n + 1.0;
        return n % 2 == 0 ? 1.0 : -1.0;
    }
    if (n == 0) return 1.0;
    if (n == 1) return x + x + 1.0;
    double p = 1.0, q = x + x + 1.0, r = q;
    for (double k = 2; k <= n && !isnan(q); k++) { r = (x + x) * q - p; p = q; q = r; }
    return r;
}
FT_FN double ft_hermite_polynomial_h(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (n == 0) return 1.0;
    if (n == 1) return x + x;
    double p = 1.0, q = x + x, r = q;
    for (double k = 2; k < n + n && !isnan(q); k += 2) {
        r = (x + x) * q - k * p;
        p = q;
        q = r;
    }
    return r;
}
FT_FN double ft_hermite_polynomial_he(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (n == 0) return 1.0;
    if (n == 1) return x;
    double p = 1.0, q = x, r = q;
    for (double k = 1; k < n && !isnan(q); k++) { r = x * q - k * p; p = q; q = r; }
    return r;
}
FT_FN double ft_laguerre_polynomial_l(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (fabs(x) == 0.0) return 1.0;
    if (n == 0) return 1.0;
    if (n == 1) return 1.0 - x;
    double p = 1.0, q = 1.0 - x, r = q;
    for (double k = 1; k < n && !isnan(q); k++) {
        r = (((k + k) + (1.0 - x)) * q - k * p) / (k + 1);
        p = q;
        q = r;
    }
    return r;
}
FT_FN double ft_legendre_polynomial_p(double x, double nf)
{
    const long long n = (long long)nf;
    if (n < 0) return 0.0;
    if (fabs(x) == 1.0) {
        if (x > 0.0 || n == 0) return 1.0;
        return n % 2 == 0 ? 1.0 : -1.0;
    }
    if (n == 0) return 1.0;
    if (n == 1) return x;
    double p = 1.0, q = x, r = q;
    for (double k = 1; k < n && !isnan(q); k++) {
        r = ((k + k + 1) * x * q - k * p) / (k + 1);
        p = q;
        q = r;
    }
    return r;
}
"""


def _float_twin(src: str) -> str:
    out = src.replace("double", "float")
    for fn in ("fabs", "cos", "acos", "sin"):
        out = out.replace(f"{fn}(", f"{fn}f(")
    for name in _NAMES:
        out = out.replace(f"ft_{name}(", f"ft_{name}f(")
    return out


_NAMES = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
          "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p")
_C = ("/* torch.special's orthogonal polynomials: ATen's special cases, closed forms and "
      "recurrences */" + _C_DOUBLE + _float_twin(_C_DOUBLE))

# ---------------------------------------------------------------- eager (whole arrays)

# Steps the numpy loop runs before lanes still going are handed to `finish`: each step costs
# ~10 us of numpy calls whatever the number of lanes, so PyTorch's samples at n = 5e6 would
# take a minute; by here every lane that overflows fast (|x| > 1 Legendre, Hermite, x < 0
# Laguerre far from 0) is NaN, and what is left is a value the evaluations below give as
# accurately as the recurrence in float64 (and more so than it in float32).
_HANDOFF = 1024


def _recurrence(xp, x, n, first, coef, step, start: int = 2, skip=None, finish=None):
    """P_n from P_0 = 1, P_1 = first, P_m = step(m, P_{m-1}, P_{m-2}, coef) for m >= start,
    `coef` an array of x's shape the step reads (its lanes follow them). Lanes in `skip` (a
    closed form replaces them) do not run. Each lane leaves the running set when it reaches its
    n or turns NaN (which every later step keeps; ATen's loops stop at a NaN too): lanes are
    sorted by n, so the running ones are a prefix the steps compute on. Lanes running past
    _HANDOFF steps get `finish`'s values (`_finished`; None: the loop goes on)."""
    # C order: `where` keeps a transposed x's layout, and reshape(-1) of that is a copy, which
    # the lanes' results below would be written into and lost
    out = xp.where(n == 0, 1, xp.where(n == 1, first, 0 * x)).astype(x.dtype, order="C")
    run = n if skip is None else xp.where(skip, 0, n)
    lanes = xp.flatnonzero(run >= start)
    if lanes.size == 0:
        return out
    flat = out.reshape(-1)  # a view of out
    lanes = lanes[xp.argsort(-run.reshape(-1)[lanes])]
    need = run.reshape(-1)[lanes]  # descending
    c = xp.broadcast_to(coef, x.shape).reshape(-1)[lanes]
    p, q = xp.ones_like(c), xp.broadcast_to(first, x.shape).reshape(-1)[lanes]
    k = lanes.size
    m = start
    while k:
        if finish is not None and m > _HANDOFF:
            xs = x.reshape(-1)[lanes[:k]]
            r = _finished(xp, finish, need[:k], xs.astype("float64"), x.dtype)
            if r is not None:
                flat[lanes[:k]] = r
                return out
            finish = None
        r = step(m, q[:k], p[:k], c[:k])
        p, q = q[:k], r
        if need[k - 1] == m:  # the lanes ending here are the prefix's tail
            k2 = int(xp.searchsorted(-need[:k], -m, side="left"))
            flat[lanes[k2:k]] = r[k2:k]
            k = k2
        if m % 16 == 0 and k:
            bad = xp.isnan(q[:k])
            if bool(bad.any()):
                flat[lanes[:k][bad]] = xp.nan
                keep = ~bad
                lanes, need, c = lanes[:k][keep], need[:k][keep], c[:k][keep]
                p, q = p[:k][keep], q[:k][keep]
                k = lanes.size
        m += 1
    return out


def _finished(xp, finish, n, x, dtype):
    """`finish(xp, n, x)` = (float64 values, their `reach`: how far the last step's intermediate
    exceeds the value) as ATen's loop in `dtype` leaves them: the value where the intermediate
    fits; where it does not, the loop overflowed, giving +-inf if that was at one of its last
    two steps (inf - finite) and NaN if earlier (inf - inf), as PyTorch's T_1602(-1.1) = inf,
    T_1603 = -inf, P_2245(1.05) = NaN."""
    done = finish(xp, n, x)
    if done is None:
        return None

    def fits(v, reach):
        return xp.isfinite((xp.abs(v) * reach).astype(dtype))  # (under _eager's errstate)

    r, reach = done
    ok = fits(r, reach)
    out = xp.where(ok, r, xp.nan)
    over = xp.flatnonzero(~ok & ~xp.isnan(r))
    if over.size:
        late = xp.zeros(over.shape, dtype=bool)
        for back in (1, 2):
            late |= fits(*finish(xp, n[over] - back, x[over]))
        out[over] = xp.where(late, xp.copysign(xp.inf, r[over]), xp.nan)
    return out


def _scipy_eval(name: str, log_term, reach):
    """`finish` by scipy.special's `name` at integer n: its own float64 recurrence, in C
    (cupyx's on cupy; None where the module lacks it, and the numpy loop goes on). Its loop runs
    all n steps where ATen's stops at the overflow's NaN, so lanes where `log_term(xp, sp, n, x)`,
    the log of one positive term of a sum the value is, shows float64 overflowing are NaN
    without it. `reach(xp, n, x)`: see _finished."""
    def finish(xp, n, x):
        module = "cupyx.scipy.special" if xp.__name__.startswith("cupy") else "scipy.special"
        try:
            sp = importlib.import_module(module)
            fn = getattr(sp, name)
        except (ImportError, AttributeError):
            return None
        over = log_term(xp, sp, n, x) > _LOG_DOUBLE_MAX
        return xp.where(over, xp.nan, fn(xp.where(over, 0, n), x)), reach(xp, n, x)
    return finish


_LOG_DOUBLE_MAX = 712.0  # log(DBL_MAX) = 709.78, with room for gammaln's rounding at large n


def _log_binomial(sp, n, k):
    return sp.gammaln(n + 1.0) - sp.gammaln(k + 1.0) - sp.gammaln(n - k + 1.0)


def _laguerre_term(xp, sp, n, x):
    """L_n(-y) = sum_k C(n, k) y^k / k!, every term positive for y = -x > 0: the one at
    k ~ sqrt(n y), near the largest (x >= 0: -inf, never overflowing)."""
    y = xp.maximum(-x, 0.0)
    k = xp.minimum(xp.floor(xp.sqrt(n * y)), n)
    return xp.where(y > 0, _log_binomial(sp, n, k) + k * xp.log(xp.where(y > 0, y, 1.0)) -
                    sp.gammaln(k + 1.0), -xp.inf)


def _legendre_term(xp, sp, n, x):
    """P_n(x) = sum_k C(n, k)^2 a^(n-k) b^k, a = (|x| - 1)/2, b = (|x| + 1)/2, every term positive
    for |x| > 1: the one at k ~ n / (1 + sqrt(a / b)), near the largest (|x| <= 1: -inf)."""
    ax = xp.abs(x)
    a, b = xp.where(ax > 1, (ax - 1) / 2, 1.0), (ax + 1) / 2
    k = xp.minimum(xp.round(n / (1 + xp.sqrt(a / b))), n)
    return xp.where(ax > 1, 2 * _log_binomial(sp, n, k) + (n - k) * xp.log(a) + k * xp.log(b),
                    -xp.inf)


def _numerator_reach(xp, n, x):
    """Laguerre's and Legendre's last step divides n P_n by n, and that numerator is what
    overflows first: ATen's CPU kernel fuses its products into the sums (PyTorch's last finite
    P_n(1.05) is at n P_n = 0.95 DBL_MAX, where (2n - 1) x P_{n-1} is 1.5 DBL_MAX)."""
    return n.astype("float64")


def _fused(xp, a, q, b):
    """a * q - b as ATen's CPU kernels compute each step, contracted by the compiler into
    fma(a, q, -b), rounded once (the plain loop's float32 L_182(9) differs from PyTorch's from
    the fifth digit on): in float32 the product is exact in float64."""
    if q.dtype.itemsize == 4:
        return (a.astype("float64") * q - b).astype(q.dtype)
    return fma(xp, a, q, -b)


def _chebyshev_step(xp):
    return lambda m, q, p, two_x: _fused(xp, two_x, q, p)


def _chebyshev_far(kind: str):
    """`finish` for Chebyshev lanes, which run the recurrence only at |x| > 1 (closed forms
    take |x| <= 1): x = +-cosh t, and V_n(-y) = (-1)^n W_n(y)."""
    def finish(xp, n, x):
        neg = x < 0
        t = xp.arccosh(xp.abs(x))
        if kind == "t":
            r = xp.cosh(n * t)
        elif kind == "u":
            r = xp.sinh((n + 1) * t) / xp.sinh(t)
        else:
            v = xp.cosh((n + 0.5) * t) / xp.cosh(t / 2)
            w = xp.sinh((n + 0.5) * t) / xp.sinh(t / 2)
            r = xp.where(neg, w, v) if kind == "v" else xp.where(neg, v, w)
        # (2x T_{n-1} - T_{n-2} rounds once in ATen's fused kernel: only the value overflows)
        return xp.where(neg & (n % 2 == 1), -r, r), 1.0
    return finish


def _eager(value):
    def make(xp):
        def run(x, nf):
            x, nf = xp.broadcast_arrays(x, nf)
            with xp.errstate(invalid="ignore", over="ignore"):
                # a degree int64 cannot hold (NaN, inf, 1e20) converts as x86 does, to INT64_MIN:
                # negative, so 0 (ATen's static_cast and the C helpers' (long long) alike)
                n = xp.where(xp.isfinite(nf), nf, -1).astype("int64")
                r = value(xp, x, n).astype(x.dtype, copy=False)
            return xp.where(n < 0, 0, r).astype(x.dtype, copy=False)
        return run
    return make


def _common(xp, x, n):
    """n in x's type where it multiplies x's values (as ATen's T(n)), 2x, |x|, odd n, |x| < 1."""
    ax = xp.abs(x)
    return n.astype(x.dtype), x + x, ax, n % 2 == 1, ax < 1


def _chebyshev_t(xp, x, n):
    nx, two_x, ax, odd, inner = _common(xp, x, n)
    r = _recurrence(xp, x, n, x, two_x, _chebyshev_step(xp), skip=((n > 6) & inner) | (ax == 1),
                    finish=_chebyshev_far("t"))
    r = xp.where((n > 6) & inner, xp.cos(nx * xp.arccos(xp.where(inner, x, 0))), r)
    return xp.where(ax == 1, xp.where((x > 0) | ~odd, 1, -1), r)


def _chebyshev_u(xp, x, n):
    nx, two_x, ax, odd, inner = _common(xp, x, n)
    r = _recurrence(xp, x, n, two_x, two_x, _chebyshev_step(xp),
                    skip=((n > 8) & inner) | (ax == 1),
                    finish=_chebyshev_far("u"))
    t = xp.arccos(xp.where(inner, x, 0))
    s = xp.sin(t)
    closed = xp.where(s != 0, xp.sin((nx + 1) * t) / xp.where(s != 0, s, 1),
                      (nx + 1) * xp.cos((nx + 1) * t) * x)
    r = xp.where((n > 8) & inner, closed, r)
    return xp.where(ax == 1, xp.where((x > 0) | ~odd, n + 1, -(n + 1)), r)


def _chebyshev_vw(v: bool):
    def value(xp, x, n):
        nx, two_x, ax, odd, inner = _common(xp, x, n)
        first = two_x - 1 if v else two_x + 1
        r = _recurrence(xp, x, n, first, two_x, _chebyshev_step(xp),
                        skip=((n > 8) & inner) | (ax == 1),
                        finish=_chebyshev_far("v" if v else "w"))
        t = xp.arccos(xp.where(inner, x, 0))
        big = n + n + 1
        parity = xp.where(odd, -big, big) if v else xp.where(odd, -1, 1)
        edge = (1 if v else big)
        if v:
            fine = xp.sin(t / 2) != 1
            closed = xp.where(fine, xp.cos((n + 0.5) * t) / xp.cos(t / 2), parity)  # (double)
        else:
            fine = xp.cos(t / 2) != 1
            closed = xp.where(fine, xp.sin((n + 0.5) * t) / xp.where(fine, xp.sin(t / 2), 1),
                              xp.where(x > 0, big, parity))
        r = xp.where((n > 8) & inner, closed, r)
        return xp.where(ax == 1, xp.where(x > 0, edge, parity), r)
    return value


def _hermite_h(xp, x, n):
    return _recurrence(xp, x, n, x + x, x + x,
                       lambda m, q, p, c: _fused(xp, c, q, (2 * (m - 1)) * p))


def _hermite_he(xp, x, n):
    return _recurrence(xp, x, n, x, x, lambda m, q, p, c: _fused(xp, c, q, (m - 1) * p))


def _laguerre_l(xp, x, n):
    first = 1 - x
    r = _recurrence(xp, x, n, first, first,
                    lambda m, q, p, c: _fused(xp, 2 * (m - 1) + c, q, (m - 1) * p) /
                    q.dtype.type(m),
                    skip=xp.abs(x) == 0, finish=_scipy_eval("eval_laguerre", _laguerre_term,
                                                        _numerator_reach))
    return xp.where(xp.abs(x) == 0, 1, r)


def _legendre_p(xp, x, n):
    _, _, ax, odd, _ = _common(xp, x, n)
    r = _recurrence(xp, x, n, x, x,
                    lambda m, q, p, c: _fused(xp, (2 * m - 1) * c, q, (m - 1) * p) /
                    q.dtype.type(m),
                    skip=ax == 1, finish=_scipy_eval("eval_legendre", _legendre_term,
                                                        _numerator_reach))
    return xp.where(ax == 1, xp.where((x > 0) | (n == 0) | ~odd, 1, -1), r)


_VALUES = {"chebyshev_polynomial_t": _chebyshev_t, "chebyshev_polynomial_u": _chebyshev_u,
           "chebyshev_polynomial_v": _chebyshev_vw(True),
           "chebyshev_polynomial_w": _chebyshev_vw(False),
           "hermite_polynomial_h": _hermite_h, "hermite_polynomial_he": _hermite_he,
           "laguerre_polynomial_l": _laguerre_l, "legendre_polynomial_p": _legendre_p}


for _name in _NAMES:
    elementwise(_name, 2, "float", f"ft_{_name}{{f}}({{0}}, {{1}})", _eager(_VALUES[_name]),
                vjp=vjp_zero, c_helper=_C)
