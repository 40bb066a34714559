"""A scalar beside a float16/bfloat16 tensor, as PyTorch's CPU kernels read it (checked by hand in
PyTorch 2.13): mul and div take a second operand that is a Python number, or a 0-d tensor of
another dtype, at float32 with its value as given, and round the float32 result once; add and
sub, and a scalar first operand (`torch.mul(0.1, x)`), round the scalar to the tensor's dtype
first. Before, every case rounded the scalar first: `x * 0.1` differed from PyTorch in the last
bit of one element in three, and `x * 1e5` of a float16 0 was NaN (0 * inf)."""
import ml_dtypes
import numpy as np
import pytest

import fusetorch as torch

LOW = [(torch.float16, np.float16), (torch.bfloat16, ml_dtypes.bfloat16)]
X = np.random.default_rng(0).standard_normal(5000).astype(np.float32)


def _at_float32(x, s, op):
    return op(x.astype(np.float32), np.float32(s))


@pytest.mark.parametrize("dtype, np_dtype", LOW)
@pytest.mark.parametrize("s", [0.1, 1 / 3, 3, 1e5, -7.25])
@pytest.mark.parametrize("name, op", [("mul", np.multiply), ("div", np.divide)])
def test_mul_and_div_read_a_second_scalar_at_float32(dtype, np_dtype, s, name, op):
    x = torch.tensor(X).to(dtype)
    xn = X.astype(np_dtype)
    want = _at_float32(xn, s, op).astype(np_dtype).astype(np.float32)
    for other in (s, torch.tensor(float(s)), torch.tensor(float(s), dtype=torch.float64)):
        got = getattr(torch, name)(x, other)
        assert got.dtype is dtype
        np.testing.assert_array_equal(got.float().numpy(), want)
    got = x * s if name == "mul" else x / s
    np.testing.assert_array_equal(got.float().numpy(), want)


@pytest.mark.parametrize("dtype, np_dtype", LOW)
def test_add_sub_and_a_first_scalar_round_the_scalar_first(dtype, np_dtype):
    x = torch.tensor(X).to(dtype)
    xn = X.astype(np_dtype).astype(np.float32)
    s = np.float32(np_dtype(0.1))  # 0.1 rounded to the tensor's dtype
    for got, op in ((x + 0.1, np.add), (x - 0.1, np.subtract), (torch.mul(0.1, x), np.multiply)):
        want = (op(s, xn) if op is np.multiply else op(xn, s)).astype(np_dtype).astype(np.float32)
        np.testing.assert_array_equal(got.float().numpy(), want)
    same = torch.tensor(0.1).to(dtype)  # a 0-d tensor of the same dtype is already rounded
    np.testing.assert_array_equal((x * same).float().numpy(),
                                  np.multiply(xn, s).astype(np_dtype).astype(np.float32))


def test_a_large_scalar_beside_float16():
    zero = torch.zeros(3, dtype=torch.float16)
    assert (zero * 1048576).tolist() == [0.0, 0.0, 0.0]  # not 0 * inf
    assert (zero * torch.tensor(1048576)).tolist() == [0.0, 0.0, 0.0]
    small = torch.tensor([1.5], dtype=torch.float16) / 1048576  # a float16 subnormal, not 0
    assert small.item() == float(np.float16(np.float32(1.5) / np.float32(1048576)))
    assert small.item() > 0
