"""lgamma, digamma, polygamma and mvlgamma against independent float64 references.

References: Python's math.lgamma; closed forms (digamma(1) = -gamma, digamma(1/2) = -gamma -
2 ln 2, harmonic numbers at integers); identities (recurrence, reflection); and a 40-digit
`decimal` evaluation written here from the definitions, with its own Bernoulli numbers (from
their recurrence, not the implementation's table) and its own shift (x >= 60, where the
asymptotic series converges far beyond double precision). Gradients: gradcheck (central
differences in float64). Compiled-vs-eager on ordinary samples are the opinfo entries; the
edge values (poles, infinities, NaN, tiny and negative arguments) are compiled here.
"""
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck, gradgradcheck

INF, NAN = float("inf"), float("nan")
EULER = 0.57721566490153286060651209008240243
LN2 = 0.69314718055994530941723212145817657
PI_40 = Decimal("3.141592653589793238462643383279502884197")


def _bernoulli(n: int) -> list:
    """B_0..B_n as Fractions, from sum_{k<m} C(m+1, k) B_k = -(m+1) B_m (B_1 = -1/2)."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


B = _bernoulli(24)


def _dec(f: Fraction) -> Decimal:
    return Decimal(f.numerator) / Decimal(f.denominator)


def ref_digamma(x: float) -> float:
    """digamma(x) for x > 0: recurrence up to X >= 60, then log X - 1/(2X) - sum B2k/(2k X^2k),
    in 40 digits."""
    with localcontext() as ctx:
        ctx.prec = 40
        X, acc = Decimal(x), Decimal(0)
        while X < 60:
            acc -= 1 / X
            X += 1
        s = X.ln() - 1 / (2 * X)
        for k in range(1, 12):
            s -= _dec(B[2 * k]) / (2 * k * X ** (2 * k))
        return float(acc + s)


def ref_lgamma(x: float) -> float:
    """lgamma(x) for x > 0: recurrence up to X >= 60, then Stirling's series, in 40 digits."""
    with localcontext() as ctx:
        ctx.prec = 40
        X, prod = Decimal(x), Decimal(1)
        while X < 60:
            prod *= X
            X += 1
        s = (X - Decimal("0.5")) * X.ln() - X + (2 * PI_40).ln() / 2
        for k in range(1, 12):
            s += _dec(B[2 * k]) / (2 * k * (2 * k - 1) * X ** (2 * k - 1))
        return float(s - prod.ln())


def ref_polygamma(n: int, x: float) -> float:
    """(-1)^(n+1) n! zeta(n+1, x) for x > 0: sum of (x+k)^-(n+1) up to X >= 60, then the
    Euler-Maclaurin tail, in 40 digits."""
    s = n + 1
    with localcontext() as ctx:
        ctx.prec = 40
        X, acc = Decimal(x), Decimal(0)
        while X < 60:
            acc += X ** -s
            X += 1
        acc += X ** (1 - s) / (s - 1) + X ** -s / 2
        rising = Decimal(s)  # s (s+1) ... (s+2j-2)
        for j in range(1, 12):
            acc += _dec(B[2 * j]) / math.factorial(2 * j) * rising * X ** (-s - 2 * j + 1)
            rising *= (s + 2 * j - 1) * (s + 2 * j)
        return float((-1) ** (n + 1) * math.factorial(n) * acc)


def _f64(values) -> torch.Tensor:
    return torch.tensor(np.asarray(values, dtype=np.float64))


def _points(seed: int = 0) -> np.ndarray:
    r = np.random.default_rng(seed)
    return np.concatenate([r.uniform(0.01, 3.0, 60), r.uniform(3.0, 40.0, 30),
                           10.0 ** r.uniform(-8, 6, 30), [0.5, 1.0, 1.5, 2.0, 2.5, 8.0, 10.0]])


def _assert_rel(got, want, rtol):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    zero = want == 0  # lgamma(1) = lgamma(2) = 0 exactly
    err = np.abs(got - want) / np.where(zero, 1.0, np.abs(want))
    assert err.max() <= rtol, (err.max(), got[np.argmax(err)], want[np.argmax(err)])


def test_the_decimal_references_reproduce_known_values():
    assert ref_digamma(1.0) == pytest.approx(-EULER, rel=1e-15)
    assert ref_lgamma(0.5) == pytest.approx(0.5 * math.log(math.pi), rel=1e-15)
    assert ref_polygamma(1, 1.0) == pytest.approx(math.pi ** 2 / 6, rel=1e-15)
    assert ref_polygamma(2, 1.0) == pytest.approx(-2 * 1.2020569031595942, rel=1e-15)


def test_lgamma_matches_math_lgamma():
    r = np.random.default_rng(1)
    xs = np.concatenate([_points(), -r.uniform(0.01, 30.0, 80), [1e-300, -1e-300, 1e300]])
    xs = xs[np.abs(xs - np.round(xs)) > 1e-3]  # (and away from the poles)
    want = np.array([math.lgamma(v) for v in xs])
    got = torch.lgamma(_f64(xs)).numpy()
    # math.lgamma itself is good to about 1e-15 absolute where lgamma crosses 0
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=2e-15)


def test_lgamma_keeps_relative_precision_near_its_roots_1_and_2():
    xs = np.array([1 - 1e-3, 1 + 1e-6, 1 - 1e-9, 1 + 1e-12, 2 - 1e-3, 2 + 1e-6, 2 - 1e-10,
                   1.4616321449683622])
    _assert_rel(torch.lgamma(_f64(xs)).numpy(), [ref_lgamma(v) for v in xs], 1e-14)


def test_lgamma_against_the_decimal_reference():
    xs = _points(2)
    _assert_rel(torch.lgamma(_f64(xs)).numpy(), [ref_lgamma(v) for v in xs], 1e-14)


def test_lgamma_poles_and_infinities_are_pytorchs():
    x = _f64([0.0, -0.0, -1.0, -2.0, -1e20, INF, -INF, NAN])
    got = torch.lgamma(x).tolist()
    assert got[:7] == [INF] * 7 and math.isnan(got[7])
    assert torch.lgamma(_f64([1.0, 2.0])).tolist() == [0.0, 0.0]
    # tiny arguments: -log|x|
    assert torch.lgamma(_f64([5e-324])).item() == pytest.approx(744.4400719213812, rel=1e-15)


def test_digamma_closed_forms():
    ints = np.arange(1, 30)
    harmonic = [float(sum(Fraction(1, k) for k in range(1, n))) for n in ints]
    _assert_rel(torch.digamma(_f64(ints)).numpy(), np.array(harmonic) - EULER, 2e-15)
    halves = ints - 0.5  # digamma(n + 1/2) = -gamma - 2 ln 2 + sum_{k=1}^{n} 2 / (2k - 1)
    want = [-EULER - 2 * LN2 + float(sum(Fraction(2, 2 * k - 1) for k in range(1, n)))
            for n in ints]
    _assert_rel(torch.digamma(_f64(halves)).numpy(), want, 2e-15)
    assert torch.digamma(_f64([1.0])).item() == pytest.approx(-EULER, rel=1e-15)


def test_digamma_against_the_decimal_reference():
    xs = np.concatenate([_points(3), np.linspace(1.2, 1.75, 23)])  # across the root 1.4616
    _assert_rel(torch.digamma(_f64(xs)).numpy(), [ref_digamma(v) for v in xs], 1e-14)


def test_digamma_recurrence_and_reflection():
    r = np.random.default_rng(4)
    x = r.uniform(-30, 30, 200)
    x = x[np.abs(x - np.round(x)) > 0.01]
    d = lambda v: torch.digamma(_f64(v)).numpy()  # noqa: E731
    np.testing.assert_allclose(d(x + 1) - d(x), 1 / x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d(1 - x) - d(x), np.pi / np.tan(np.pi * x), rtol=1e-10,
                               atol=1e-10)
    # negative arguments against the reference on 1 - x
    neg = -r.uniform(0.01, 20, 50)
    neg = neg[np.abs(neg - np.round(neg)) > 0.01]
    want = [ref_digamma(1 - v) - math.pi / math.tan(math.pi * v) for v in neg]
    np.testing.assert_allclose(d(neg), want, rtol=1e-12, atol=1e-13)


def test_digamma_poles_are_pytorchs():
    got = torch.digamma(_f64([0.0, -0.0, -1.0, -5.0, -INF, INF, NAN, 5e-324])).tolist()
    assert got[0] == -INF and got[1] == INF and got[5] == INF and got[7] == -INF
    assert all(math.isnan(v) for v in (got[2], got[3], got[4], got[6]))


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma_against_the_decimal_reference(n):
    xs = _points(5 + n)
    xs = xs[xs < 1e5]  # (beyond, the values underflow to subnormals for large n)
    _assert_rel(torch.polygamma(n, _f64(xs)).numpy(), [ref_polygamma(n, v) for v in xs],
                2e-14)


def test_polygamma_reflection_for_negative_arguments():
    # psi'(x) + psi'(1 - x) = pi^2 / sin^2(pi x); psi''(1 - x) - psi''(x) = 2 pi^3 cot / sin^2
    r = np.random.default_rng(6)
    x = -r.uniform(0.05, 25, 60)
    x = x[np.abs(x - np.round(x)) > 0.05]
    s2 = np.sin(np.pi * x) ** 2
    t1 = torch.polygamma(1, _f64(x)).numpy()
    want1 = np.pi ** 2 / s2 - np.array([ref_polygamma(1, 1 - v) for v in x])
    np.testing.assert_allclose(t1, want1, rtol=1e-12)
    t2 = torch.polygamma(2, _f64(x)).numpy()
    want2 = np.array([ref_polygamma(2, 1 - v) for v in x]) - \
        2 * np.pi ** 3 * np.cos(np.pi * x) / np.sin(np.pi * x) ** 3
    np.testing.assert_allclose(t2, want2, rtol=1e-11, atol=1e-12)


def test_polygamma_order_zero_poles_and_errors():
    x = _f64([0.3, 2.5])
    assert torch.polygamma(0, x).tolist() == torch.digamma(x).tolist()
    poles = _f64([0.0, -3.0])
    assert torch.polygamma(1, poles).tolist() == [INF, INF]
    assert torch.polygamma(2, poles).tolist() == [-INF, -INF]
    assert torch.polygamma(3, _f64([INF])).tolist() == [0.0]
    assert math.isnan(torch.polygamma(1, _f64([NAN])).item())
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, x)
    with pytest.raises(TypeError, match=r"argument 'n' \(position 1\) must be int, not float"):
        torch.polygamma(1.0, x)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 2\) must be Tensor"):
        torch.polygamma(1, 2.0)


def test_dtypes_methods_and_special_names():
    i = torch.tensor([1, 2, 3])
    assert torch.lgamma(i).dtype == torch.float32 and torch.digamma(i).dtype == torch.float32
    assert torch.polygamma(1, torch.tensor([True])).dtype == torch.float32
    h = torch.tensor([1.5, 3.0], dtype=torch.float16)
    assert torch.lgamma(h).dtype == torch.float16
    assert torch.lgamma(h).tolist() == pytest.approx([math.lgamma(1.5), math.lgamma(3.0)],
                                                     rel=1e-3)
    x = torch.tensor([0.7, 2.5], dtype=torch.float64)
    assert x.lgamma().tolist() == torch.lgamma(x).tolist()
    assert x.polygamma(2).tolist() == torch.polygamma(2, x).tolist()
    y = x.clone()
    assert y.digamma_() is y and y.tolist() == torch.digamma(x).tolist()
    y = x.clone()
    y.polygamma_(1)
    assert y.tolist() == torch.polygamma(1, x).tolist()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.lgamma_()
    assert torch.special.gammaln(x).tolist() == torch.lgamma(x).tolist()
    assert torch.special.psi(x).tolist() == torch.special.digamma(x).tolist()
    assert torch.special.polygamma(1, x).tolist() == torch.polygamma(1, x).tolist()
    assert torch.special.multigammaln(x + 1, 2).tolist() == torch.mvlgamma(x + 1, 2).tolist()


def test_mvlgamma_matches_its_definition():
    x = np.array([1.2, 2.5, 7.0])
    for p in (1, 2, 3, 5):
        want = [p * (p - 1) / 4 * math.log(math.pi) +
                sum(math.lgamma(v - i / 2) for i in range(p)) for v in x]
        np.testing.assert_allclose(torch.mvlgamma(_f64(x), p).numpy(), want, rtol=1e-13)
    assert torch.mvlgamma(torch.tensor([3]), 2).dtype == torch.float32
    y = _f64(x)
    y.mvlgamma_(2)
    assert y.tolist() == torch.mvlgamma(_f64(x), 2).tolist()
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        torch.mvlgamma(_f64(x), 0)
    with pytest.raises(TypeError, match=r"argument 'p' \(position 2\) must be int"):
        torch.mvlgamma(_f64(x), 1.5)


@pytest.mark.parametrize("fn, lo, hi", [
    (torch.lgamma, 0.1, 5.0), (torch.lgamma, -2.9, -2.1), (torch.digamma, 0.1, 5.0),
    (torch.digamma, -0.9, -0.1), (lambda x: torch.polygamma(1, x), 0.2, 4.0),
    (lambda x: torch.polygamma(2, x), -1.8, -1.2), (lambda x: torch.polygamma(3, x), 0.5, 3.0),
    (lambda x: torch.mvlgamma(x, 3), 1.2, 4.0),
])
def test_gradients_match_central_differences(fn, lo, hi):
    x = torch.tensor(np.random.default_rng(7).uniform(lo, hi, 6), dtype=torch.float64,
                     requires_grad=True)
    assert gradcheck(fn, (x,))


def test_second_derivatives_and_grad_fn_names():
    x = torch.tensor([0.6, 2.2, 3.7], dtype=torch.float64, requires_grad=True)
    assert gradgradcheck(torch.lgamma, (x,))
    assert gradgradcheck(torch.digamma, (x,))
    names = [torch.lgamma(x), torch.digamma(x), torch.polygamma(0, x), torch.polygamma(2, x),
             torch.mvlgamma(x, 2)]
    assert [type(y.grad_fn).__name__ for y in names] == [
        "LgammaBackward0", "DigammaBackward0", "PolygammaBackward0", "PolygammaBackward0",
        "MvlgammaBackward0"]
    (g,) = torch.autograd.grad(torch.lgamma(x).sum(), x)
    assert g.tolist() == torch.digamma(x).tolist()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_compiled_kernels_agree_with_eager_at_the_edges(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    r = np.random.default_rng(8)
    xs = np.concatenate([[0.0, -0.0, -1.0, -4.0, INF, -INF, NAN, 5e-324, -5e-324, 1e-300,
                          1e300, 1.4616321449683622, 0.5, -2.5], r.uniform(-30, 30, 200),
                         10.0 ** r.uniform(-5, 5, 50)])

    def f(x):
        return (torch.lgamma(x), torch.digamma(x), torch.polygamma(1, x),
                torch.polygamma(4, x))

    cf = torch.compile(f)
    x = torch.tensor(xs, dtype=dtype)
    cf(x)
    got = cf(x)
    assert cf.kernels(), "nothing compiled"
    for g, w in zip(got, f(x)):
        g, w = g.numpy().astype(np.float64), w.numpy().astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        big = ~np.isfinite(w) | ~np.isfinite(g)
        np.testing.assert_array_equal(g[big], w[big])
        # float32: libm's lgammaf against eager's float64 rounded; float64: the C polygamma
        # sums the series for x < 0 where eager reflects
        np.testing.assert_allclose(g[~big], w[~big], rtol=1e-5 if dtype == torch.float32
                                   else 1e-11)
