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


# PyTorch 2.13's activations at NaN (checked by hand): the comparison that picks a branch is
# false at NaN, so threshold, hardshrink and softshrink return NaN, and relu, elu, celu, selu
# and threshold pass NaN's gradient (elu's x-branch), while the shrinks' backward gives 0.
_X = [NAN, INF, -INF, -1.0, 0.0, 0.3, 0.7, -0.7, 2.0]


def _value_and_grad(fn):
    x = torch.tensor(_X, dtype=torch.float64, requires_grad=True)
    y = fn(x)
    (g,) = torch.autograd.grad(y, [x], torch.ones_like(y))
    return y.detach().numpy(), g.numpy()


@pytest.mark.parametrize("name, kw, value, grad", [
    ("threshold", dict(threshold=0.5, value=-9.0),
     [NAN, INF, -9, -9, -9, -9, 0.7, -9, 2], [1, 1, 0, 0, 0, 0, 1, 0, 1]),
    ("hardshrink", {}, [NAN, INF, -INF, -1, 0, 0, 0.7, -0.7, 2], [0, 1, 1, 1, 0, 0, 1, 1, 1]),
    ("softshrink", {}, [NAN, INF, -INF, -0.5, 0, 0, 0.2, -0.2, 1.5], [0, 1, 1, 1, 0, 0, 1, 1, 1]),
    ("relu", {}, [NAN, INF, 0, 0, 0, 0.3, 0.7, 0, 2], [1, 1, 0, 0, 0, 1, 1, 0, 1]),
    ("elu", dict(alpha=0.5), None, [1, 1, 0, 0.5 * math.exp(-1), 0.5, 1, 1, 0.5 * math.exp(-0.7), 1]),
])
def test_activations_at_nan_as_pytorch(name, kw, value, grad):
    import fusetorch.nn.functional as F
    v, g = _value_and_grad(lambda x: getattr(F, name)(x, **kw))
    if value is not None:
        np.testing.assert_allclose(v, value, rtol=1e-12)
    np.testing.assert_allclose(g, grad, rtol=1e-12)


def test_addr_of_bools_is_bool_logic():
    # PyTorch: for bool operands addr is (beta and input) or (alpha and vec1[:, None] and vec2)
    inp = np.array([[True, False, False], [False, False, True]])
    v1, v2 = np.array([True, False]), np.array([False, True, True])
    for beta, alpha in ((3, 2), (0, 1), (1, 0), (True, False)):
        r = torch.addr(torch.tensor(inp), torch.tensor(v1), torch.tensor(v2), beta=beta, alpha=alpha)
        assert r.dtype is torch.bool
        _same(r, (inp & bool(beta)) | (np.outer(v1, v2) & bool(alpha)))


@pytest.mark.parametrize("fn", ["addcmul", "addcdiv"])
def test_addc_ops_compute_in_the_result_type(fn):
    # a bfloat16 tensor1 beside float32 operands: PyTorch computes in float32, no bfloat16 rounding
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (3, 4), (1, 4)))
    b16 = torch.tensor(b).bfloat16()
    b_rounded = b16.float().numpy().astype(np.float64)
    op = np.multiply if fn == "addcmul" else np.divide
    expected = a + 3.14 * op(b_rounded, c.astype(np.float64))
    r = getattr(torch, fn)(torch.tensor(a), b16, torch.tensor(c), value=3.14)
    assert r.dtype is torch.float32
    np.testing.assert_allclose(r.numpy(), expected, rtol=2e-6, atol=1e-6)


def test_small_api_corners_as_pytorch():
    # sum_to_size(()) is a full sum, so a 0-d bool becomes int64; an equal size is self
    r = torch.tensor(True).sum_to_size([])
    assert r.dtype is torch.int64 and r.item() == 1
    assert torch.ones(3, dtype=torch.bool).sum_to_size(3).dtype is torch.bool
    # diff with n=0 is a copy of input; prepend/append are checked but unused
    x = torch.arange(6.0).reshape(2, 3)
    _same(torch.diff(x, 0, 0, torch.ones(1, 3), torch.ones(2, 3)), np.arange(6.0).reshape(2, 3))
    # gradient's documented defaults may be passed explicitly
    (g,) = torch.gradient(torch.arange(5.0) ** 2, spacing=None, dim=None)
    _same(g, [1.0, 2.0, 4.0, 6.0, 7.0])
    # the rank of empty matrices is 0
    _same(torch.linalg.matrix_rank(torch.zeros(2, 0, 0)), [0, 0])
    _same(torch.linalg.matrix_rank(torch.zeros(0, 3)), 0)
    # the dtype methods take memory_format
    y = torch.zeros(2, 3, 2, 3).double(memory_format=torch.channels_last)
    assert y.dtype is torch.float64 and y.stride() == (18, 1, 9, 3)


def test_error_types_as_pytorch():
    # PyTorch 2.13's exception types for these error inputs of its OpInfo entries
    x = torch.zeros(10, 5, 20)
    with pytest.raises(RuntimeError):
        torch.narrow_copy(x, 3, 0, 0)  # an assertion in ATen, not the dim-wrapping IndexError
    with pytest.raises(TypeError):
        torch.hsplit(x, "abc")
    with pytest.raises(TypeError):
        torch.vsplit(x, "abc")
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.aminmax(torch.zeros(5, 0, 5), dim=1)
    with pytest.raises(TypeError):
        torch.copysign(2, torch.tensor([1, 2, 3]))
    assert len(torch.hsplit(x, [1, 2])) == 3 and len(torch.vsplit(x, np.int64(2))) == 2


def test_out_with_internal_overlap_is_refused():
    # PyTorch's assert_no_internal_overlap: an expanded out= (stride 0 over 2 elements)
    x = torch.arange(18.0).reshape(3, 6)
    for call in (lambda o: torch.index_select(x, 0, torch.tensor([0, 1]), out=o),
                 lambda o: torch.add(x[:2], 1.0, out=o)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            call(torch.zeros(1, 6).expand(2, 6))
    with pytest.raises(TypeError):
        torch.clamp_min(2, torch.tensor([1, 2, 3]))


def test_vander_of_a_0d_tensor_is_one_row():
    # PyTorch 2.13 reads a 0-d x as [x]: vander(2., N=3) = [[1, 2, 4]]
    x = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    y = torch.linalg.vander(x, N=3)
    _same(y, [[1.0, 2.0, 4.0]])
    (g,) = torch.autograd.grad(y.sum(), [x])
    assert g.item() == 1.0 + 2 * 2.0  # d/dx (1 + x + x^2)
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        torch.linalg.vander(x)


def test_gradient_refuses_a_repeated_dim():
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times"):
        torch.gradient(torch.zeros(3, 3), spacing=0.1, dim=[1, -1])


def test_spherical_bessel_j0_at_infinity_is_zero():
    # lim sin(x)/x = 0 as |x| -> inf (PyTorch's kernel returns 0 there)
    x = torch.tensor([INF, -INF, NAN, 0.0, math.pi], dtype=torch.float64)
    np.testing.assert_allclose(torch.special.spherical_bessel_j0(x).numpy(), [0.0, 0.0, NAN, 1.0, 0.0],
                               atol=1e-16)
