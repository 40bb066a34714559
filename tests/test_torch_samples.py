"""Regressions found by running PyTorch 2.13's own OpInfo samples (tools/torch_opinfo_check.py).

Expected values are PyTorch's documented or hand-checked behaviour (PyTorch 2.13, CPU), derived
here from the definitions, never read from fusetorch's output.
"""
import math

import numpy as np
import pytest

import fusetorch as torch

NAN, INF = math.nan, math.inf


def _same(t, expected):
    np.testing.assert_array_equal(t.detach().numpy(), np.asarray(expected, dtype=t.detach().numpy().dtype))


def test_sign_of_nan_is_zero_eager_and_compiled():
    # PyTorch's sign is (x > 0) - (x < 0): sign(NaN) = 0, so abs' gradient at NaN is 0
    x = [NAN, -INF, -2.0, -0.0, 0.0, 3.0, INF]
    expected = [0.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0]
    for dtype in (torch.float32, torch.float64):
        t = torch.tensor(x, dtype=dtype)
        _same(torch.sign(t), expected)
        _same(t.sgn(), expected)
        _same(torch.compile(lambda a: (a * 1.0).sign())(t), expected)


def test_abs_gradient_at_nan_is_zero():
    x = torch.tensor([NAN, -3.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    x.abs().backward(torch.tensor([5.0, 5.0, 5.0, 5.0], dtype=torch.float64))
    _same(x.grad, [0.0, -5.0, 0.0, 5.0])


@pytest.mark.parametrize("fn", ["clamp_min", "clamp_max"])
def test_clamp_with_tensor_bound_gives_ties_to_input(fn):
    # PyTorch: d clamp_min(x, m)/dx = [x >= m], d/dm = [x < m] (ties belong to x, whole)
    x = torch.tensor([1.0, 2.0, 3.0, 0.5], dtype=torch.float64, requires_grad=True)
    m = torch.tensor([1.0, 1.0, 3.0, 2.0], dtype=torch.float64, requires_grad=True)
    gx, gm = torch.autograd.grad(getattr(torch, fn)(x, m).sum(), [x, m])
    xs, ms = np.array([1.0, 2.0, 3.0, 0.5]), np.array([1.0, 1.0, 3.0, 2.0])
    keep = xs >= ms if fn == "clamp_min" else xs <= ms
    _same(gx, keep.astype(float))
    _same(gm, (~keep).astype(float))


def test_clamp_with_both_tensor_bounds_routes_the_gradient_as_pytorch():
    x = torch.tensor([1.0, 2.0, 3.0, NAN, 0.0], dtype=torch.float64, requires_grad=True)
    lo = torch.tensor([1.0, 1.0, 3.0, 0.0, NAN], dtype=torch.float64, requires_grad=True)
    hi = torch.tensor([1.0, 1.5, 3.0, 1.0, 1.0], dtype=torch.float64, requires_grad=True)
    y = torch.clamp(x, lo, hi)
    _same(y, [1.0, 1.5, 3.0, NAN, NAN])  # NaN from any operand, as min(max(x, lo), hi)
    gx, glo, ghi = torch.autograd.grad(y.sum(), [x, lo, hi])
    _same(gx, [1.0, 0.0, 1.0, 0.0, 0.0])   # inside [lo, hi], ties included
    _same(glo, [0.0, 0.0, 0.0, 0.0, 0.0])
    _same(ghi, [0.0, 1.0, 0.0, 0.0, 0.0])  # above hi
