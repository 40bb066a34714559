"""The math added for issue 11 against independent references: numpy or Python in float64 for
values, PyTorch's documented integer-division semantics, gradcheck (central differences in
float64) for gradients. Compiled-vs-eager runs of the same ops are the opinfo entries."""
import math

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

INF, NAN = float("inf"), float("nan")


def test_integer_division_follows_python_floor_semantics():
    a = list(range(-9, 10))
    for b in (-4, -3, -1, 1, 2, 5):
        ta, tb = torch.tensor(a), torch.tensor([b] * len(a))
        assert (ta // tb).tolist() == [x // b for x in a]
        assert (ta % tb).tolist() == [x % b for x in a]
        assert torch.fmod(ta, tb).tolist() == [int(math.fmod(x, b)) for x in a]
        assert torch.div(ta, tb, rounding_mode="trunc").tolist() == [int(x / b) for x in a]
        assert torch.div(ta, b, rounding_mode="floor").tolist() == [x // b for x in a]


def test_integer_division_by_zero_raises_as_pytorch():
    for fn in (lambda a, b: a // b, lambda a, b: a % b, torch.fmod):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(torch.tensor([3, 4]), torch.tensor([1, 0]))
    # floats follow IEEE
    r = torch.tensor([1.0, -1.0, 0.0]) // torch.tensor([0.0, 0.0, 0.0])
    assert r.tolist()[:2] == [INF, -INF] and math.isnan(r.tolist()[2])


def test_float_division_family_matches_python():
    xs = [-7.5, -2.25, -0.5, 0.0, 0.75, 3.0, 5.5]
    for y in (-2.0, -0.75, 1.5, 4.0):
        t = torch.tensor(xs, dtype=torch.float64)
        assert (t % y).tolist() == [x % y for x in xs]
        assert (t // y).tolist() == [x // y for x in xs]
        assert torch.fmod(t, y).tolist() == [math.fmod(x, y) for x in xs]
    with pytest.raises(RuntimeError, match="rounding_mode"):
        torch.div(torch.ones(2), 2, rounding_mode="round")


def test_rounding_keeps_dtype_and_rounds_half_to_even():
    x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7], dtype=torch.float64)
    assert torch.round(x).tolist() == [round(v) for v in x.tolist()]
    assert torch.floor(x).tolist() == [math.floor(v) for v in x.tolist()]
    assert torch.ceil(x).tolist() == [math.ceil(v) for v in x.tolist()]
    assert torch.trunc(x).tolist() == [math.trunc(v) for v in x.tolist()]
    np.testing.assert_allclose(torch.frac(x).numpy(), [v - math.trunc(v) for v in x.tolist()])
    assert torch.round(torch.tensor([1.2345, 67.891]), decimals=2).tolist() == \
        pytest.approx([1.23, 67.89], abs=1e-5)
    i = torch.tensor([3, -4])
    assert torch.floor(i).dtype == torch.int64 and torch.floor(i).tolist() == [3, -4]


def test_nan_and_inf_predicates_and_repairs():
    x = torch.tensor([1.0, NAN, INF, -INF, -0.0])
    assert torch.isnan(x).tolist() == [False, True, False, False, False]
    assert torch.isinf(x).tolist() == [False, False, True, True, False]
    assert torch.isfinite(x).tolist() == [True, False, False, False, True]
    assert torch.isposinf(x).tolist() == [False, False, True, False, False]
    assert torch.isneginf(x).tolist() == [False, False, False, True, False]
    assert torch.nan_to_num(x).tolist() == np.nan_to_num(x.numpy()).tolist()
    assert torch.nan_to_num(x, nan=2.0, posinf=3.0, neginf=-3.0).tolist() == \
        [1.0, 2.0, 3.0, -3.0, -0.0]
    assert torch.isfinite(torch.tensor([1, 2])).tolist() == [True, True]


def test_isclose_matches_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(50)
    b = a + rng.standard_normal(50) * np.logspace(-9, 0, 50)
    a[:3], b[:3] = [INF, NAN, -INF], [INF, NAN, INF]
    for kw in (dict(), dict(rtol=1e-3, atol=0.0), dict(equal_nan=True)):
        got = torch.isclose(torch.tensor(a), torch.tensor(b), **kw).numpy()
        np.testing.assert_array_equal(got, np.isclose(a, b, **kw))


def test_isclose_of_bools_compares_them_as_0_and_1():
    a, b = torch.tensor([True, False, False]), torch.tensor([True, True, False])
    assert torch.isclose(a, b).tolist() == [True, False, True]
    assert torch.isclose(a, b, rtol=0.5, atol=1).tolist() == [True, True, True]  # as PyTorch


def test_logsumexp_nansum_nanmean_xlogy_heaviside_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)) * 50
    np.testing.assert_allclose(torch.logsumexp(torch.tensor(a), 1).numpy(),
                               np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1))
    minf = torch.full((2, 3), -INF, dtype=torch.float64)
    assert torch.logsumexp(minf, 1).tolist() == [-INF, -INF]
    n = a.copy()
    n[0, 1] = n[2, 2] = NAN
    np.testing.assert_allclose(torch.nansum(torch.tensor(n), 1).numpy(), np.nansum(n, 1))
    np.testing.assert_allclose(torch.nanmean(torch.tensor(n), 0).numpy(), np.nanmean(n, 0))
    x = np.array([0.0, 0.0, 2.0, 3.0, 0.0])
    y = np.array([0.0, 5.0, 0.5, 2.0, NAN])
    got = torch.xlogy(torch.tensor(x), torch.tensor(y)).numpy()
    np.testing.assert_array_equal(got[:2], [0.0, 0.0])
    np.testing.assert_allclose(got[2:4], x[2:4] * np.log(y[2:4]))
    assert math.isnan(got[4])
    h = torch.heaviside(torch.tensor([-1.5, 0.0, 2.0]), torch.tensor([0.5, 0.5, 0.5]))
    np.testing.assert_array_equal(h.numpy(), np.heaviside([-1.5, 0.0, 2.0], 0.5))


def test_shifts_and_operators():
    a = torch.tensor([1, -8, 5])
    assert (a << 2).tolist() == [4, -32, 20] and (a >> 1).tolist() == [0, -4, 2]
    assert (3 << torch.tensor([1, 2])).tolist() == [6, 12]
    b = a.clone()
    b <<= 1
    assert b.tolist() == [2, -16, 10]


@pytest.mark.parametrize("fn, lo, hi", [
    (torch.tan, -1.2, 1.2), (torch.asin, -0.9, 0.9), (torch.acos, -0.9, 0.9),
    (torch.atan, -3, 3), (torch.sinh, -2, 2), (torch.cosh, -2, 2), (torch.asinh, -3, 3),
    (torch.acosh, 1.2, 3), (torch.atanh, -0.9, 0.9), (torch.log10, 0.2, 3),
    (torch.exp2, -2, 2), (torch.log2, 0.2, 3), (torch.erfinv, -0.95, 0.95),
    (torch.frac, 0.1, 0.9),
    (lambda x: torch.atan2(x, x.flip(0) + 3), -2, 2),
    (lambda x: torch.hypot(x, x.flip(0) + 3), -2, 2),
    (lambda x: torch.logaddexp(x, x.flip(0) * 2), -2, 2),
    (lambda x: torch.remainder(x, 0.7), 0.05, 0.6),
    (lambda x: torch.fmod(x, x.flip(0) + 3), 0.1, 0.6),
    (lambda x: torch.logsumexp(x.reshape(2, 3), 1), -2, 2),
    (lambda x: torch.xlogy(x, x + 2), 0.1, 2),
])
def test_gradients_match_central_differences(fn, lo, hi):
    x = torch.tensor(np.random.default_rng(2).uniform(lo, hi, 6), dtype=torch.float64,
                     requires_grad=True)
    assert gradcheck(fn, (x,))


def test_rounding_ops_have_zero_gradient():
    x = torch.tensor([0.3, 1.7], requires_grad=True)
    (torch.floor(x) + torch.ceil(x) + torch.round(x) + torch.trunc(x)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
