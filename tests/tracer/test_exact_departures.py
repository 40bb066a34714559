"""Departures from PyTorch 2.13 found by hand after the OpInfo checker passed, each observed in
PyTorch by hand (torch is not imported here); values from Python floats or numpy float64."""
import math

import numpy as np
import pytest

import fusetorch as torch


def _signs(t) -> list:
    return [math.copysign(1.0, v) for v in t.reshape(-1).tolist()]


# remainder's zero keeps the dividend's sign (ATen: fmod, then moved onto the divisor's sign only
# where nonzero), so remainder(-2., 1.) is -0.0; a nonzero result takes the divisor's sign.
ZEROS = [(-2.0, 1.0, -1.0), (2.0, -1.0, 1.0), (-0.0, 1.0, -1.0), (0.0, -1.0, 1.0), (3.0, 1.5, 1.0),
         (-3.0, -1.5, -1.0)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_remainder_zero_takes_the_dividend_sign(dtype):
    a = torch.tensor([z[0] for z in ZEROS], dtype=dtype)
    b = torch.tensor([z[1] for z in ZEROS], dtype=dtype)
    for r in (torch.remainder(a, b), a % b, torch.compile(lambda u, v: u % v)(a, b)):
        assert r.tolist() == [0.0] * len(ZEROS)
        assert _signs(r) == [z[2] for z in ZEROS]
    assert _signs(torch.remainder(torch.tensor(-2.0), 1.0)) == [-1.0]  # 0-d, scalar divisor
    assert torch.remainder(torch.zeros(0, 3), 2.0).shape == (0, 3)


def test_remainder_nonzero_values_follow_python():
    rng = np.random.default_rng(0)
    a = rng.uniform(-9, 9, (6, 8))
    b = rng.uniform(-3, 3, (8, 6)).T  # non-contiguous divisor
    got = torch.remainder(torch.tensor(a), torch.tensor(b)).numpy()
    want = np.array([[x % y for x, y in zip(r, s)] for r, s in zip(a.tolist(), b.tolist())])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert (np.sign(got) == np.sign(want)).all()
