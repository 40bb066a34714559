"""PyTorch's everyday catalogue (issue 27): values against numpy/math in float64, gradients
against central differences (gradcheck), PyTorch's errors, edge inputs (0-d, zero-size,
non-contiguous, signed zeros, NaN), and the C helpers of the new primitives against independent
references. Expected values are derived here (numpy, math, or PyTorch 2.13 by hand)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

R = np.random.default_rng(27)


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def leaf(a):
    return t64(a).requires_grad_()


# ----------------------------------------------------------------------------- values

def test_erfc_keeps_the_digits_of_small_results():
    x = np.array([-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 5.0, 10.0, 26.0, 30.0])
    want = np.array([math.erfc(v) for v in x])
    got = torch.erfc(t64(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
    assert got[-1] == 0.0 and got[-2] > 0  # erfc(26) ~ 5.7e-296 is still a double


def test_modified_bessel_functions_match_independent_sums():
    x = np.concatenate([np.linspace(-40, 40, 81), [0.0, 1e-3, 700.0]])
    np.testing.assert_allclose(torch.i0(t64(x)).numpy(), np.i0(x), rtol=1e-15)
    # I1 from its power series in exact rational steps (independent of scipy and of the code)
    small = np.array([-3.0, -0.25, 0.0, 0.5, 2.0, 6.0])
    want = [sum((v / 2) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1))
                for k in range(60)) for v in small]
    np.testing.assert_allclose(torch.special.i1(t64(small)).numpy(), want, rtol=1e-15)
    np.testing.assert_allclose(torch.special.i0e(t64(x[:-1])).numpy(),
                               np.i0(x[:-1]) * np.exp(-np.abs(x[:-1])), rtol=1e-14)
    np.testing.assert_allclose(torch.special.i1e(t64(small)).numpy(),
                               np.array(want) * np.exp(-np.abs(small)), rtol=1e-15)


def test_compiled_kernels_compute_the_primitives_as_eager():
    # the kernels call the C helpers (ft_i0 ...), eager calls scipy: two implementations
    x = np.concatenate([np.linspace(-30, 30, 601), [0.0, -0.0, 24.9, 25.1, 80.0, np.nan]])
    y = np.concatenate([R.uniform(-3, 3, 601), [-0.0, 0.0, -1.0, 1.0, 2.0, 1.0]])

    def f(a, b):
        return (torch.i0(a), torch.special.i1(a), torch.special.i0e(a), torch.special.i1e(a),
                torch.erfc(a / 4), torch.copysign(a, b), torch.nextafter(a, b))

    cf = torch.compile(f)
    a, b = t64(x), t64(y)
    cf(a, b)
    for got, want in zip(cf(a, b), f(a, b)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14, atol=0)  # (ulps)
    a32, b32 = a.float(), b.float()
    cf(a32, b32)
    for got, want in zip(cf(a32, b32), f(a32, b32)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=3e-7, atol=0)


def test_sign_bits_signed_zeros_and_nan():
    x = torch.tensor([-0.0, 0.0, -1.5, float("nan"), -float("nan"), float("-inf")])
    assert torch.signbit(x).tolist() == [True, False, True, False, True, True]
    assert torch.copysign(torch.tensor([2.0, 2.0]), torch.tensor([-0.0, 0.0])).tolist() == \
        [-2.0, 2.0]
    assert torch.copysign(torch.tensor([1, 2]), -1).dtype == torch.float32
    assert torch.signbit(torch.tensor([-1, 0, 3])).tolist() == [True, False, False]
    n = torch.nextafter(torch.tensor([1.0, 0.0], dtype=torch.float64),
                        torch.tensor([2.0, -1.0], dtype=torch.float64)).numpy()
    assert n[0] == np.nextafter(1.0, 2.0) and n[1] == -5e-324


def test_frexp_is_numpys():
    x = np.array([8.0, 0.0, -3.5, np.inf, -np.inf, np.nan, 1e-310, 3e300, 0.1])
    r = torch.frexp(t64(x))
    m, e = np.frexp(x)
    np.testing.assert_array_equal(r.mantissa.numpy(), m)
    np.testing.assert_array_equal(r.exponent.numpy(), e)
    assert r.exponent.dtype == torch.int32
    assert repr(r).startswith("torch.return_types.frexp(")
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        torch.frexp(torch.tensor([1]))


def test_nan_ignoring_extremes():
    a = torch.tensor([1.0, float("nan"), float("nan"), -2.0])
    b = torch.tensor([float("nan"), 3.0, float("nan"), 1.0])
    np.testing.assert_array_equal(torch.fmax(a, b).numpy(), [1.0, 3.0, np.nan, 1.0])
    np.testing.assert_array_equal(torch.fmin(a, b).numpy(), [1.0, 3.0, np.nan, -2.0])
    assert torch.fmax(torch.tensor([1, 5]), torch.tensor([2.0, 0.0])).tolist() == [2.0, 5.0]


def test_integer_functions():
    a, b = torch.tensor([12, -18, 0, 7]), torch.tensor([8, 12, 0, -21])
    assert torch.gcd(a, b).tolist() == [4, 6, 0, 7]
    assert torch.lcm(a, b).tolist() == [24, 36, 0, 21]
    assert torch.bitwise_not(torch.tensor([0, 1, 255], dtype=torch.uint8)).tolist() == [255, 254,
                                                                                          0]
    assert (~torch.tensor([3, -4], dtype=torch.int8)).tolist() == [-4, 3]
    assert torch.bitwise_and(2, torch.tensor([3])).tolist() == [2]
    assert torch.logical_xor(torch.tensor([1.0, 0.0, 2.0]), torch.tensor([1, 1, 0])).tolist() == \
        [False, True, True]
    x = torch.tensor([5, 6])
    x.gcd_(torch.tensor([15, 4]))
    assert x.tolist() == [5, 2]


def _c_gcd(a: int, b: int, bits: int) -> int:
    """ATen's Euclid in a signed width: abs of the minimum wraps, C's % truncates."""
    wrap = lambda v: (v + (1 << bits - 1)) % (1 << bits) - (1 << bits - 1)  # noqa: E731
    a, b = wrap(abs(a)), wrap(abs(b))
    while a:
        a, b = wrap(int(math.fmod(b, a))), a
    return b


def test_gcd_at_the_signed_minimum_is_atens():
    vals = [-128, 127, -1, 0, 64, -64, 6, -9, 1]
    for np_d, d, bits in ((np.int8, torch.int8, 8), (np.int16, torch.int16, 16)):
        lo = -(1 << bits - 1)
        row = [lo if v == -128 else v for v in vals]
        a = np.array([[x for x in row for _ in row]], dtype=np_d)
        b = np.array([[y for _ in row for y in row]], dtype=np_d)
        ref = [_c_gcd(int(x), int(y), bits) for x, y in zip(a[0], b[0])]
        assert torch.gcd(torch.tensor(a, dtype=d), torch.tensor(b, dtype=d))[0].tolist() == ref
        # non-contiguous operands and a 0-d one take the same path
        ta = torch.tensor(np.repeat(a, 2, 0), dtype=d).t()[:, 0]
        assert torch.gcd(ta, torch.tensor(b[0], dtype=d)).tolist() == ref
        assert torch.gcd(torch.tensor(lo, dtype=d), torch.tensor(127, dtype=d)).item() == \
            _c_gcd(lo, 127, bits)
    assert torch.gcd(torch.tensor([127], dtype=torch.int8),
                     torch.tensor([-128], dtype=torch.int8)).tolist() == [-1]
    assert torch.gcd(torch.zeros(0, dtype=torch.int8), torch.zeros(0, dtype=torch.int8)).shape \
        == (0,)


def test_powers_angles_and_sinc_against_numpy():
    x = R.uniform(-3, 3, (3, 4))
    np.testing.assert_allclose(torch.sinc(t64(x)).numpy(), np.sinc(x), rtol=1e-15)
    assert torch.sinc(torch.tensor([0.0])).item() == 1.0
    np.testing.assert_allclose(torch.deg2rad(t64(x)).numpy(), np.deg2rad(x), rtol=1e-15)
    np.testing.assert_allclose(torch.rad2deg(t64(x)).numpy(), np.rad2deg(x), rtol=1e-15)
    e = R.integers(-4, 5, (4,))
    np.testing.assert_array_equal(torch.ldexp(t64(x), torch.tensor(e)).numpy(), np.ldexp(x, e))
    fp = torch.float_power(torch.tensor([2, 3]), torch.tensor([0.5, 2.0]))
    assert fp.dtype == torch.float64
    np.testing.assert_allclose(fp.numpy(), [2 ** 0.5, 9.0], rtol=1e-16)
    a, b = R.uniform(-5, 5, 6), R.uniform(-5, 5, 6)
    np.testing.assert_allclose(torch.logaddexp2(t64(a), t64(b)).numpy(), np.logaddexp2(a, b),
                               rtol=1e-15)
    inf = torch.tensor([float("inf"), float("-inf")])
    assert torch.logaddexp2(inf, inf).tolist() == [math.inf, -math.inf]
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float"):
        torch.tensor([1.0]).float_power_(2)


def test_logit_and_clamps():
    p = np.array([0.0, 0.05, 0.3, 0.99, 1.0])
    with np.errstate(divide="ignore"):
        want = np.log(p / (1 - p))
    np.testing.assert_allclose(torch.logit(t64(p)).numpy(), want, rtol=1e-15)
    q = np.clip(p, 0.1, 0.9)
    np.testing.assert_allclose(torch.logit(t64(p), eps=0.1).numpy(), np.log(q / (1 - q)),
                               rtol=1e-15)
    x = t64([-1.0, 0.5, 2.0])
    assert torch.clamp_min(x, 0).tolist() == [0.0, 0.5, 2.0]
    assert x.clamp_max(torch.tensor(1.0, dtype=torch.float64)).tolist() == [-1.0, 0.5, 1.0]
    assert torch.clamp_min(x, 0).grad_fn is None


def test_real_identities():
    x = torch.tensor([1.0, -2.0, float("nan")])
    assert torch.conj(x) is x and torch.resolve_conj(x) is x and torch.resolve_neg(x) is x
    assert torch.positive(x) is x and x.conj_physical() is not x
    assert torch.isreal(x).tolist() == [True, True, True]
    np.testing.assert_array_equal(torch.angle(x).numpy(), [0.0, np.float32(np.pi), np.nan])
    assert torch.angle(torch.tensor([1, -1])).dtype == torch.float32
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        torch.positive(torch.tensor([True]))

# ----------------------------------------------------------------------------- statistics


def test_diff_with_prepend_append_and_orders():
    x = R.uniform(-2, 2, (3, 5))
    np.testing.assert_allclose(torch.diff(t64(x)).numpy(), np.diff(x))
    np.testing.assert_allclose(torch.diff(t64(x), n=2, dim=0).numpy(), np.diff(x, 2, axis=0))
    pre, app = x[:, :2], x[:, :1]
    np.testing.assert_allclose(
        torch.diff(t64(x), prepend=t64(pre), append=t64(app)).numpy(),
        np.diff(x, prepend=pre, append=app))
    assert torch.diff(t64(x), n=9).shape == (3, 0)
    assert torch.diff(t64(x), n=0).tolist() == t64(x).tolist()
    assert torch.diff(torch.tensor([True, False, False])).tolist() == [True, False]
    assert torch.diff(t64(x).t()).shape == (5, 2)  # non-contiguous
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        torch.diff(torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        torch.diff(t64(x), n=-1)


def test_isin():
    e, s = R.integers(0, 9, (4, 5)), np.array([1, 4, 4, 8])
    np.testing.assert_array_equal(torch.isin(torch.tensor(e), torch.tensor(s)).numpy(),
                                  np.isin(e, s))
    np.testing.assert_array_equal(torch.isin(torch.tensor(e), 4, invert=True).numpy(), e != 4)
    big = R.integers(-40, 40, 57)  # sorted and searched (more than 16 test elements)
    np.testing.assert_array_equal(torch.isin(torch.tensor(e - 4), torch.tensor(big)).numpy(),
                                  np.isin(e - 4, big))
    np.testing.assert_array_equal(
        torch.isin(t64(e * 0.5), torch.tensor(big, dtype=torch.float32) * 0.5,
                   invert=True).numpy(), ~np.isin(e * 0.5, big * 0.5))
    assert torch.isin(3, torch.tensor([1, 3])).item() is True
    assert torch.isin(torch.tensor([1.0]), torch.tensor([], dtype=torch.int64)).tolist() == \
        [False]


def test_cov_and_corrcoef_against_numpy():
    x = R.uniform(-2, 2, (3, 7))
    fw, aw = R.integers(1, 4, 7), R.uniform(0.1, 2, 7)
    np.testing.assert_allclose(torch.cov(t64(x)).numpy(), np.cov(x), rtol=1e-14)
    np.testing.assert_allclose(torch.cov(t64(x), correction=0).numpy(), np.cov(x, ddof=0),
                               rtol=1e-14)
    np.testing.assert_allclose(
        torch.cov(t64(x), fweights=torch.tensor(fw), aweights=t64(aw)).numpy(),
        np.cov(x, fweights=fw, aweights=aw), rtol=1e-14)
    np.testing.assert_allclose(torch.cov(t64(x[0])).numpy(), np.cov(x[0]), rtol=1e-14)
    np.testing.assert_allclose(torch.corrcoef(t64(x)).numpy(), np.corrcoef(x), rtol=1e-14)
    assert torch.cov(torch.tensor([[1, 2, 4], [3, 1, 0]])).dtype == torch.float32
    with pytest.raises(RuntimeError, match="two or fewer dimensions"):
        torch.cov(torch.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        torch.cov(t64(x), fweights=torch.tensor([1, -1, 1, 1, 1, 1, 1]))
    with pytest.raises(RuntimeError, match="integral dtype"):
        torch.cov(t64(x), fweights=t64(fw))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert math.isnan(torch.cov(torch.tensor([1.0])).item())


def test_var_mean_std_mean_and_aminmax():
    x = R.uniform(-2, 2, (3, 4))
    v, mu = torch.var_mean(t64(x), 1, keepdim=True)
    np.testing.assert_allclose(v.numpy(), x.var(1, ddof=1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(mu.numpy(), x.mean(1, keepdims=True), rtol=1e-14)
    s, mu = torch.std_mean(t64(x), correction=0)
    np.testing.assert_allclose([s.item(), mu.item()], [x.std(), x.mean()], rtol=1e-14)
    assert type(torch.var_mean(t64(x))) is tuple
    assert torch.var_mean(t64(x), False)[0].item() == pytest.approx(x.var())
    r = torch.aminmax(t64(x), dim=0)
    np.testing.assert_array_equal(r.min.numpy(), x.min(0))
    np.testing.assert_array_equal(r.max.numpy(), x.max(0))
    assert repr(torch.aminmax(torch.tensor([1.0, 5.0]))).startswith("torch.return_types.aminmax(")
    assert torch.aminmax(torch.zeros(0, 2), dim=1).min.shape == (0,)
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        torch.aminmax(torch.zeros(0))
    assert torch.argwhere(torch.tensor([[1, 0], [0, 2]])).tolist() == [[0, 0], [1, 1]]
    assert torch.argwhere(torch.tensor(3)).shape == (1, 0)

# ----------------------------------------------------------------------------- gradients


GRADCHECKS = {
    "erfc": (lambda x: torch.erfc(x), [R.uniform(-2, 2, (2, 3))]),
    "i0": (lambda x: torch.i0(x), [R.uniform(-3, 3, (2, 3))]),
    "i1": (lambda x: torch.special.i1(x), [np.array([-2.0, 0.0, 0.7, 3.0])]),
    "i0e": (lambda x: torch.special.i0e(x), [np.array([-2.0, -0.3, 0.7, 3.0])]),
    "i1e": (lambda x: torch.special.i1e(x), [np.array([-2.0, 0.0, 0.7, 3.0])]),
    "logit": (lambda x: torch.logit(x), [R.uniform(0.1, 0.9, (5,))]),
    "logit_eps": (lambda x: torch.logit(x, 0.2), [np.array([0.1, 0.3, 0.5, 0.9])]),
    "sinc": (lambda x: torch.sinc(x), [np.array([-1.3, -0.2, 0.4, 2.1])]),
    "deg2rad": (lambda x: torch.deg2rad(x).t(), [R.uniform(-9, 9, (2, 3))]),
    "copysign": (lambda x, y: torch.copysign(x, y), [np.array([0.5, -1.2, 2.0]),
                                                     np.array([-1.0, -2.0, 3.0])]),
    "fmax": (lambda x, y: torch.fmax(x, y), [np.array([0.5, -1.2, 2.0]),
                                             np.array([1.0, -2.0, 3.0])]),
    "fmin": (lambda x, y: torch.fmin(x, y), [R.uniform(-1, 1, (3, 1)), R.uniform(-1, 1, 4)]),
    "logaddexp2": (lambda x, y: torch.logaddexp2(x, y), [R.uniform(-3, 3, 4),
                                                         R.uniform(-3, 3, 4)]),
    "ldexp": (lambda x: torch.ldexp(x, torch.tensor([1, -2, 3])), [R.uniform(-1, 1, 3)]),
    "float_power": (lambda x, y: torch.float_power(x, y), [R.uniform(0.5, 2, 3),
                                                           R.uniform(-1, 1, 3)]),
    "diff": (lambda x, p: torch.diff(x, n=2, prepend=p), [R.uniform(-1, 1, (2, 5)),
                                                          R.uniform(-1, 1, (2, 1))]),
    "cov": (lambda x, w: torch.cov(x, aweights=w), [R.uniform(-1, 1, (2, 5)),
                                                    R.uniform(0.5, 2, 5)]),
    "corrcoef": (lambda x: torch.corrcoef(x), [R.uniform(-1, 1, (3, 5))]),
    "var_mean": (lambda x: torch.var_mean(x, 0), [R.uniform(-1, 1, (3, 2))]),
    "std_mean": (lambda x: torch.std_mean(x, 1, keepdim=True), [R.uniform(-1, 1, (3, 2))]),
    "aminmax": (lambda x: torch.aminmax(x, dim=1), [R.permutation(12).reshape(3, 4) * 0.1]),
    "frexp": (lambda x: torch.frexp(x).mantissa, [np.array([0.3, -1.7, 5.0, 100.0])]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradients_match_central_differences(name):
    fn, arrays = GRADCHECKS[name]
    assert gradcheck(fn, tuple(leaf(a) for a in arrays), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_gradients_at_the_special_points_are_pytorchs():
    # PyTorch 2.13 by hand: sinc'(0) = 0, copysign'(0) = 0, i1'(0) = 1/2, nextafter's to
    # input where input != other, fmax's tie to the input
    x = leaf([0.0, 0.5])
    torch.sinc(x).sum().backward()
    assert x.grad[0].item() == 0.0
    x = leaf([0.0, -1.5])
    torch.copysign(x, t64([-1.0, 1.0])).sum().backward()
    assert x.grad.tolist() == [0.0, -1.0]
    x = leaf([0.0])
    torch.special.i1(x).backward()
    assert x.grad.item() == 0.5
    x, y = leaf([1.0, 2.0]), leaf([2.0, 2.0])
    torch.nextafter(x, y).backward(t64([3.0, 4.0]))
    assert x.grad.tolist() == [3.0, 0.0] and y.grad.tolist() == [0.0, 0.0]
    x, y = leaf([1.0]), leaf([1.0])
    torch.fmax(x, y).backward()
    assert (x.grad.item(), y.grad.item()) == (1.0, 0.0)
    x = leaf([1.5, 3.0])
    assert torch.fmax(x, x).grad_fn.name() == "FmaxBackward0"
    assert torch.logit(x).grad_fn.name() == "LogitBackward0"


def test_errors_are_pytorchs():
    with pytest.raises(NotImplementedError, match='"gcd_cpu" not implemented for \'Float\''):
        torch.gcd(torch.tensor([1.0]), torch.tensor([2.0]))
    with pytest.raises(NotImplementedError, match="bitwise_not_cpu"):
        torch.bitwise_not(torch.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu"):
        torch.bitwise_and(torch.tensor([3]), 2.5)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        torch.logical_xor(torch.tensor([1.0]), 1)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        torch.fmax(torch.tensor([1.0]), 1)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2]).erfc_()


def test_zero_size_and_zero_dim_inputs():
    e = torch.zeros(0, 3, dtype=torch.float64)
    for fn in (torch.erfc, torch.i0, torch.sinc, torch.signbit, torch.logit):
        assert fn(e).shape == (0, 3)
        assert fn(torch.tensor(0.25, dtype=torch.float64)).shape == ()
    assert torch.fmax(e, e).shape == (0, 3)
    assert torch.isin(e, e).shape == (0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.var_mean(e, 0)[1].shape == (3,)
