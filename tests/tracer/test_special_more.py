"""torch.special's functions added by issue 27 against references computed here in float64
(series, asymptotic expansions, quadrature, bisection: none of them scipy, which eager uses),
the compiled kernels' C helpers against eager, and gradients against central differences."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

S = torch.special


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def _erfcx_ref(x: float) -> float:
    if x < 5:
        return math.exp(x * x) * math.erfc(x)
    s, term = 0.0, 1.0
    for k in range(12):  # 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k
        s += term
        term *= -(2 * k + 1) / (2 * x * x)
    return s / (x * math.sqrt(math.pi))


def _log_ndtr_ref(x: float) -> float:
    if x > 0:
        return math.log1p(-0.5 * math.erfc(x / math.sqrt(2)))
    if x > -20:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2)))
    s, term = 0.0, 1.0
    for k in range(10):  # Mills ratio: 1 - 1/x^2 + 3/x^4 - ...
        s += term
        term *= -(2 * k + 1) / (x * x)
    return -x * x / 2 - math.log(-x) - 0.5 * math.log(2 * math.pi) + math.log(s)


def _ndtri_ref(p: float) -> float:
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 0.5 * math.erfc(-mid / math.sqrt(2)) < p else (lo, mid)
    return (lo + hi) / 2


def _bessel_k_ref(nu: float, x: float) -> float:
    # K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt: the trapezoid rule converges
    # exponentially for this analytic, fast-decaying integrand
    t = np.linspace(0, 12, 24001)
    f = np.exp(-x * np.cosh(t)) * np.cosh(nu * t)
    return float(np.trapezoid(f, t))


def _j_ref(nu: int, x: float) -> float:
    return sum((-1) ** k * (x / 2) ** (2 * k + nu) / (math.factorial(k) * math.factorial(k + nu))
               for k in range(60))


def _zeta_ref(s: float, q: float) -> float:
    n = 2000
    k = np.arange(n)
    head = float(np.sum((q + k) ** -s))
    a = q + n  # Euler-Maclaurin tail
    return head + a ** (1 - s) / (s - 1) + 0.5 * a ** -s + s * a ** (-s - 1) / 12


def _igamma_ref(a: float, x: float) -> float:
    term = s = 1.0 / a
    for k in range(1, 400):
        term *= x / (a + k)
        s += term
    return s * math.exp(-x + a * math.log(x) - math.lgamma(a))


def test_erfcx_log_ndtr_ndtr_ndtri_against_series():
    x = [-26.0, -5.0, -1.0, -0.1, 0.0, 0.7, 2.4, 2.6, 8.0, 40.0, 1e4]
    np.testing.assert_allclose(S.erfcx(t64(x)).numpy(), [_erfcx_ref(v) for v in x], rtol=2e-13)
    y = [-300.0, -38.0, -10.0, -1.5, -0.5, 0.0, 3.0, 9.0]
    np.testing.assert_allclose(S.log_ndtr(t64(y)).numpy(), [_log_ndtr_ref(v) for v in y],
                               rtol=1e-13)
    np.testing.assert_allclose(S.ndtr(t64(y)).numpy(),
                               [0.5 * math.erfc(-v / math.sqrt(2)) for v in y], rtol=5e-14,
                               atol=1e-300)  # (x / sqrt 2 rounds: 2 x^2 ulps in the tail)
    p = [1e-300, 1e-10, 0.01, 0.3, 0.5, 0.8, 0.999]
    np.testing.assert_allclose(S.ndtri(t64(p)).numpy(), [_ndtri_ref(v) for v in p], rtol=1e-13,
                               atol=1e-15)  # (the bisection stops near, not at, 0)
    assert S.ndtri(t64([0.0, 1.0])).tolist() == [-math.inf, math.inf]


def test_bessel_functions_against_series_and_quadrature():
    x = [0.0, 0.3, 1.0, 2.5, 5.0]
    np.testing.assert_allclose(S.bessel_j0(t64(x)).numpy(), [_j_ref(0, v) for v in x],
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(S.bessel_j1(t64(x)).numpy(), [_j_ref(1, v) for v in x],
                               rtol=1e-13, atol=1e-15)
    xs = [0.1, 0.5, 1.0, 3.0, 10.0]
    np.testing.assert_allclose(S.modified_bessel_k0(t64(xs)).numpy(),
                               [_bessel_k_ref(0, v) for v in xs], rtol=1e-12)
    np.testing.assert_allclose(S.modified_bessel_k1(t64(xs)).numpy(),
                               [_bessel_k_ref(1, v) for v in xs], rtol=1e-12)
    np.testing.assert_allclose(S.scaled_modified_bessel_k1(t64(xs)).numpy(),
                               [_bessel_k_ref(1, v) * math.exp(v) for v in xs], rtol=1e-12)
    # Ai(x) = sqrt(x / 3) / pi K_{1/3}(2/3 x^(3/2)) for x > 0; Ai(0) = 3^(-2/3) / Gamma(2/3)
    xa = [0.5, 1.0, 3.0]
    want = [math.sqrt(v / 3) / math.pi * _bessel_k_ref(1 / 3, 2 / 3 * v ** 1.5) for v in xa]
    np.testing.assert_allclose(S.airy_ai(t64(xa)).numpy(), want, rtol=1e-12)
    assert S.airy_ai(t64(0.0)).item() == pytest.approx(3 ** (-2 / 3) / math.gamma(2 / 3),
                                                       rel=1e-15)
    assert math.isnan(S.bessel_y0(t64(-1.0)).item()) and S.bessel_y1(t64(0.0)).item() == -math.inf
    np.testing.assert_allclose(S.spherical_bessel_j0(t64([0.0, 1e-5, 3.0])).numpy(),
                               [1.0, math.sin(1e-5) / 1e-5, math.sin(3.0) / 3.0], rtol=1e-15)
    assert not S.bessel_j0(t64([1.0]).requires_grad_()).requires_grad  # PyTorch's: no gradient


def test_zeta_and_incomplete_gamma_against_sums():
    s, q = [2.0, 3.5, 1.5], [1.0, 0.5, 4.0]
    np.testing.assert_allclose(S.zeta(t64(s), t64(q)).numpy(),
                               [_zeta_ref(a, b) for a, b in zip(s, q)], rtol=1e-12)
    assert S.zeta(t64(2.0), t64(1.0)).item() == pytest.approx(math.pi ** 2 / 6, rel=1e-15)
    a, x = [0.5, 2.0, 7.5], [1.0, 3.0, 0.4]
    want = [_igamma_ref(u, v) for u, v in zip(a, x)]
    np.testing.assert_allclose(S.gammainc(t64(a), t64(x)).numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(S.gammaincc(t64(a), t64(x)).numpy(), 1 - np.array(want),
                               rtol=1e-13)
    np.testing.assert_allclose(torch.igamma(t64(a), t64(x)).numpy(), want, rtol=1e-13)


def test_entr_xlog1py():
    x = [-1.0, 0.0, 0.5, 3.0, math.nan]
    got = S.entr(t64(x)).numpy()
    assert got[0] == -math.inf and got[1] == 0.0 and math.isnan(got[4])
    np.testing.assert_allclose(got[2:4], [-0.5 * math.log(0.5), -3 * math.log(3.0)], rtol=1e-15)
    got = S.xlog1py(t64([0.0, 0.0, 2.0]), t64([math.nan, 3.0, 1.0])).numpy()
    assert math.isnan(got[0]) and got[1] == 0.0 and got[2] == pytest.approx(2 * math.log(2.0))


def test_compiled_kernels_agree_with_eager():
    x = t64(np.concatenate([np.linspace(-30, 30, 241), [0.0, 2.5, -1.0]]))

    def f(v):
        return (S.erfcx(v), S.log_ndtr(v), S.ndtr(v), S.bessel_j0(v), S.bessel_j1(v),
                S.bessel_y0(v.abs() + 0.1), S.bessel_y1(v.abs() + 0.1))

    cf = torch.compile(f)
    cf(x)
    for got, want in zip(cf(x), f(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-15)  # (zeros)


GRADCHECKS = {
    "erfcx": lambda v: S.erfcx(v), "log_ndtr": lambda v: S.log_ndtr(v * 3),
    "ndtr": lambda v: S.ndtr(v), "ndtri": lambda v: S.ndtri(v.abs() * 0.3 + 0.1),
    "entr": lambda v: S.entr(v.abs() + 0.2), "xlog1py": lambda v: S.xlog1py(v, v.abs()),
    "gammainc": lambda v: S.gammainc(torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64),
                                     v.abs() + 0.3),
    "gammaincc": lambda v: S.gammaincc(torch.tensor([1.5, 2.0, 0.7], dtype=torch.float64),
                                       v.abs() + 0.3),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradients_match_central_differences(name):
    v = t64([-0.8, 0.3, 1.4]).requires_grad_()
    assert gradcheck(GRADCHECKS[name], (v,), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_zeta_has_no_derivative_as_in_pytorch():
    v = t64([2.0, 3.0]).requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        S.zeta(v, 1.0).sum().backward()


def test_orthogonal_polynomials_against_numpy_and_closed_forms():
    from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre
    r = np.random.default_rng(8)
    x = r.uniform(-0.99, 0.99, 40)
    n = r.integers(0, 14, 40)
    th = np.arccos(x)
    closed = {
        "chebyshev_polynomial_t": np.cos(n * th),
        "chebyshev_polynomial_u": np.sin((n + 1) * th) / np.sin(th),
        "chebyshev_polynomial_v": np.cos((n + 0.5) * th) / np.cos(th / 2),
        "chebyshev_polynomial_w": np.sin((n + 0.5) * th) / np.sin(th / 2),
    }
    for name, want in closed.items():
        got = getattr(S, name)(t64(x), t64(n)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-11, err_msg=name)
        shifted = getattr(S, "shifted_" + name)(t64((x + 1) / 2), t64(n)).numpy()
        np.testing.assert_allclose(shifted, want, rtol=1e-9, atol=1e-9, err_msg=name)
    y = r.uniform(-3, 3, 40)
    basis = {"hermite_polynomial_h": hermite.hermval, "hermite_polynomial_he": hermite_e.hermeval,
             "laguerre_polynomial_l": laguerre.lagval, "legendre_polynomial_p": legendre.legval}
    for name, val in basis.items():
        want = [val(v, np.eye(k + 1)[k]) for v, k in zip(y, n)]
        np.testing.assert_allclose(getattr(S, name)(t64(y), t64(n)).numpy(), want, rtol=1e-9,
                                   atol=1e-9, err_msg=name)
    # ATen's special cases: |x| = 1, negative n, the degree truncated; and no gradient
    assert S.chebyshev_polynomial_t(t64([1.0, -1.0, -1.0]), t64([5, 5, 4])).tolist() == \
        [1.0, -1.0, 1.0]
    assert S.chebyshev_polynomial_u(t64([-1.0]), 3).tolist() == [-4.0]
    assert S.legendre_polynomial_p(t64([0.5, 0.5]), t64([-1.0, 2.7])).tolist() == [0.0, -0.125]
    assert S.chebyshev_polynomial_t(torch.tensor([1, 2]), torch.tensor([2, 3])).dtype == \
        torch.float32
    assert not S.hermite_polynomial_h(t64([0.5]).requires_grad_(), 3).requires_grad
    np.testing.assert_allclose(chebyshev.chebval(0.3, np.eye(6)[5]),
                               S.chebyshev_polynomial_t(t64(0.3), 5).item(), rtol=1e-14)


POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p")


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials_of_transposed_inputs(name):
    # a transposed x kept its layout through `where`, and the lanes' results went into a copy
    from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre
    r = np.random.default_rng(9)
    x = r.uniform(-0.9, 0.9, (7, 5))
    n = r.integers(0, 9, (7, 5)).astype(np.float64)
    kind = name.replace("shifted_", "")
    val = {"chebyshev_polynomial_t": chebyshev.chebval, "hermite_polynomial_h": hermite.hermval,
           "hermite_polynomial_he": hermite_e.hermeval, "laguerre_polynomial_l": laguerre.lagval,
           "legendre_polynomial_p": legendre.legval}.get(kind)
    arg = x  # a shifted polynomial's input is (x + 1) / 2
    if name.startswith("shifted_"):
        x = (x + 1) / 2
    th = np.arccos(arg)
    closed = {"chebyshev_polynomial_u": lambda k: np.sin((k + 1) * th) / np.sin(th),
              "chebyshev_polynomial_v": lambda k: np.cos((k + 0.5) * th) / np.cos(th / 2),
              "chebyshev_polynomial_w": lambda k: np.sin((k + 0.5) * th) / np.sin(th / 2)}
    if val is not None:
        want = np.vectorize(lambda v, k: val(v, np.eye(int(k) + 1)[int(k)]))(arg, n)
    else:
        want = closed[kind](n)
    fn = getattr(S, name)
    xt, nt = t64(np.ascontiguousarray(x.T)).t(), t64(np.ascontiguousarray(n.T)).t()
    assert not xt.is_contiguous()
    for a, b in ((xt, nt), (xt, t64(n)), (t64(x), nt), (xt[::2], nt[::2])):
        ref = want if a.shape[0] == 7 else want[::2]
        np.testing.assert_allclose(fn(a, b).numpy(), ref, rtol=1e-9, atol=1e-9, err_msg=name)
    assert fn(t64(np.zeros((0, 3))).t(), 4).shape == (3, 0)


def _recurrence_ref(name: str, x: float, n: int) -> float:
    """P_n(x) by the three-term recurrence in 50-digit decimal arithmetic: the exact value to
    float64 rounding at every n the tests use (no rounding error accumulates at this width);
    NaN where float64 cannot hold it."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 50
        X = Decimal(x)
        p, q = Decimal(1), {"laguerre_polynomial_l": 1 - X, "legendre_polynomial_p": X,
                            "chebyshev_polynomial_t": X, "chebyshev_polynomial_u": 2 * X,
                            "chebyshev_polynomial_v": 2 * X - 1,
                            "chebyshev_polynomial_w": 2 * X + 1}[name]
        for k in range(1, n):
            if name == "laguerre_polynomial_l":
                p, q = q, ((2 * k + 1 - X) * q - k * p) / (k + 1)
            elif name == "legendre_polynomial_p":
                p, q = q, ((2 * k + 1) * X * q - k * p) / (k + 1)
            else:
                p, q = q, 2 * X * q - p
        v = float(q) if n else 1.0
        return v if math.isfinite(v) else math.nan  # (ATen's loop: inf, then inf - inf)


@pytest.mark.parametrize("name,x", [
    ("legendre_polynomial_p", [-0.99, -0.5, 0.0, 1e-7, 0.3, 0.7071, 0.999]),
    ("laguerre_polynomial_l", [-0.01, 1e-3, 0.5, 3.0, 40.0, 501.0]),
    ("chebyshev_polynomial_t", [1.001, -1.0002, 1 + 2 ** -40]),
    ("chebyshev_polynomial_u", [1.001, -1.0002, 1 + 2 ** -40]),
    ("chebyshev_polynomial_v", [1.001, -1.0002, 1 + 2 ** -40]),
    ("chebyshev_polynomial_w", [1.001, -1.0002, 1 + 2 ** -40])])
def test_orthogonal_polynomials_at_large_degree(name, x):
    # past the eager loop's hand-off (1024 steps) the values come from a float64 evaluation
    # that must agree with the exact recurrence; n = 5e6 (PyTorch's sample) takes seconds, not
    # a minute
    fn = getattr(S, name)
    n = [1023, 1024, 1025, 3001, 20000]
    xs, ns = np.repeat(x, len(n)), np.tile(n, len(x))
    want = np.array([_recurrence_ref(name, a, k) for a, k in zip(xs, ns)])
    got = fn(t64(xs), t64(ns)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)
    # float32 past the hand-off: the float64 value rounded once (ATen's float32 loop, which
    # runs up to n = 1024 here as there, drifts by ~1e-3 at these degrees)
    ok = (np.abs(want) < 1e38) & (ns > 1024)
    got32 = fn(torch.tensor(xs.astype(np.float32)), torch.tensor(ns.astype(np.float32)))
    assert got32.dtype == torch.float32
    want32 = np.array([_recurrence_ref(name, float(np.float32(a)), k) if big else 0.0
                       for a, k, big in zip(xs, ns, ok)])
    np.testing.assert_allclose(got32.numpy()[ok], want32[ok], rtol=1e-6, atol=1e-7,
                               err_msg=name)
    # 0-d, non-contiguous, zero-size and broadcast operands take the same path
    assert fn(t64(xs[-1]), t64(ns[-1])).shape == ()
    np.testing.assert_allclose(fn(t64(xs[-1]), t64(ns[-1])).item(), want[-1], rtol=1e-9,
                               atol=1e-12)
    wide = t64(np.stack([xs, xs], 1))[:, 0]
    assert not wide.is_contiguous()
    np.testing.assert_allclose(fn(wide, t64(ns)).numpy(), want, rtol=1e-9, atol=1e-12)
    assert fn(t64(np.zeros((0, 3))), t64(20000.0)).shape == (0, 3)
    grid = fn(t64(np.array(x)[:, None]), t64(np.array(n, dtype=np.float64)[None, :])).numpy()
    np.testing.assert_allclose(grid.reshape(-1), want, rtol=1e-9, atol=1e-12)


def test_orthogonal_polynomials_overflow_to_nan_as_aten():
    # ATen's loops overflow to inf and then inf - inf: NaN, also where a lane is handed off
    # (the value the dtype cannot hold); Hermite overflows within a few hundred steps anywhere
    assert math.isnan(S.hermite_polynomial_h(t64(0.5), 2000).item())
    assert math.isnan(S.hermite_polynomial_he(t64(-0.5), 2000).item())
    assert math.isnan(S.legendre_polynomial_p(t64(1.2), 5000).item())
    assert math.isnan(S.chebyshev_polynomial_t(t64(1.2), 5000).item())
    assert math.isnan(S.laguerre_polynomial_l(torch.tensor(-501.0), 5000).item())
    big = S.laguerre_polynomial_l(t64([501.0, -5.0]), t64([4988429.0, 5000.0])).numpy()
    np.testing.assert_allclose(big[1], _recurrence_ref("laguerre_polynomial_l", -5.0, 5000),
                               rtol=1e-9)
    assert 1e105 < big[0] < 2e105  # (e^(x/2) times a decaying oscillation)
    # past the hand-off ATen's loop overflows where the last step's numerator n P_n does (its
    # products fused into the sums: Chebyshev's T_n itself), which PyTorch 2.13 shows at these
    # points; and a lane sure to overflow (a positive term of the sum beyond float64) is NaN at
    # once, not after scipy's loop of 1e12 steps
    ref = _recurrence_ref("legendre_polynomial_p", 1.05, 2200)
    got = S.legendre_polynomial_p(t64([1.05, 1.05, 1.1, -1.1]), t64([2200, 2290, 1e12, 1e12]))
    assert got[0].item() == pytest.approx(ref, rel=1e-9) and 2200 * ref < 1.7e308
    assert all(math.isnan(v) for v in got.tolist()[1:])
    assert math.isnan(S.laguerre_polynomial_l(t64(-10.0), 1e12).item())
    assert S.laguerre_polynomial_l(t64(-10.0), 12400).item() == pytest.approx(
        _recurrence_ref("laguerre_polynomial_l", -10.0, 12400), rel=1e-9)
    assert S.chebyshev_polynomial_t(t64(-1.1), 1601).item() == pytest.approx(
        _recurrence_ref("chebyshev_polynomial_t", -1.1, 1601), rel=1e-9)
    assert S.chebyshev_polynomial_t(t64(-1.1), t64([1602, 1603, 1604])).tolist()[:2] == \
        [math.inf, -math.inf]
    # float32 holds neither: NaN
    assert np.isnan(S.laguerre_polynomial_l(torch.tensor([501.0, -5.0]),
                                            torch.tensor([4988429.0, 5000.0])).numpy()).all()


def test_orthogonal_polynomials_degree_int64_cannot_hold_is_negative():
    # NaN, inf and 1e20 convert as ATen's static_cast does on x86 (INT64_MIN): the value is 0
    for name in ("chebyshev_polynomial_t", "hermite_polynomial_h", "laguerre_polynomial_l",
                 "legendre_polynomial_p"):
        got = getattr(S, name)(t64([0.3, 0.3, 0.3, 0.3]), t64([math.nan, math.inf, -math.inf,
                                                                1e20]))
        assert got.tolist() == [0.0, 0.0, 0.0, 0.0], name
