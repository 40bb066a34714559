"""compile keys a call's Python arguments by their structural identity (ir/identity.py
`value_key`): values Python finds equal that trace to different programs get variants of
their own."""
import math

import numpy as np
import pytest

import fusetorch as torch


@pytest.mark.parametrize("scalars", [(2, 2.0, True, 2), (2.0, 2, 2.0), (True, 1, 1.0)])
def test_int_float_and_bool_arguments_keep_their_dtypes(scalars):
    f = torch.compile(lambda t, s: t * s)
    x = torch.tensor([1, 2, 3])
    for s in scalars:
        got, want = f(x, s), x * s
        assert got.dtype == want.dtype, (s, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.numpy(), np.array([1, 2, 3]) * s)


def test_signed_zero_arguments_keep_their_sign():
    f = torch.compile(lambda t, s: t / s)
    y = torch.tensor([1.0, -2.0])
    for s in (0.0, -0.0, 0.0):
        with np.errstate(divide="ignore"):
            want = np.array([1.0, -2.0], np.float32) / np.float32(s)
        np.testing.assert_array_equal(f(y, s).numpy(), want)


def test_equal_arguments_share_one_variant():
    f = torch.compile(lambda t, s: t * s)
    x = torch.randn(4)
    for _ in range(3):
        f(x, 0.5)
        f(x, float("nan"))  # two NaN objects: the same bits, the same variant
    assert len(f._variants) == 2


SCALE = 0.0


def test_a_global_rebound_to_the_other_zero_retraces():
    global SCALE
    f = torch.compile(lambda t: t / SCALE)
    y = torch.tensor([1.0])
    for s in (0.0, -0.0, 0.0):
        SCALE = s
        assert f(y).item() == (math.inf if math.copysign(1, s) > 0 else -math.inf), s
