"""An outer-axis float32 sum whose innermost loop is reduced (a conv layer's bias gradient,
sum over dims (0, 2, 3), beside its ReLU backward's mask): the innermost loop sums in float,
then into the double row. In double next to a bool input gcc left the loop scalar (8-15x
slower); the float partials must keep the value within float32 accuracy of the float64 sum."""
import numpy as np
import pytest

import fusetorch as torch


def _relu_backward_bias_sum(mask, g):
    masked = torch.where(mask, torch.zeros((), dtype=g.dtype), g)
    return masked, masked.sum((0, 2, 3))


@pytest.mark.parametrize("shape", [(4, 3, 7, 9), (2, 5, 1, 1), (3, 2, 64, 64)])
def test_bias_gradient_sum_beside_a_bool_mask_matches_float64(shape):
    rng = np.random.default_rng(0)
    g = rng.standard_normal(shape).astype(np.float32) * 100
    mask = rng.random(shape) < 0.5
    f = torch.compile(_relu_backward_bias_sum)
    masked, sums = f(torch.from_numpy(mask), torch.from_numpy(g))
    want = np.where(mask, 0.0, g.astype(np.float64))
    np.testing.assert_array_equal(masked.numpy(), want.astype(np.float32))
    ref = want.sum((0, 2, 3))
    scale = np.abs(want).sum((0, 2, 3))  # float32 sums are good to a few eps of this
    assert np.all(np.abs(sums.numpy().astype(np.float64) - ref) <= 4e-7 * scale + 1e-30)
    assert sums.dtype == torch.float32


def test_its_kernel_sums_the_innermost_loop_in_float():
    g = torch.randn(4, 3, 8, 8)
    mask = g > 0
    f = torch.compile(_relu_backward_bias_sum)
    f(mask, g)
    src = f.source()
    assert "into rows of 3" in src  # the outer-axis reduction kernel
    assert "float part = 0;  /* a float sum (full-width SIMD), then double */" in src
