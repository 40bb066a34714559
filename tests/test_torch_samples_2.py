"""More regressions from PyTorch 2.13's OpInfo samples (tools/torch_opinfo_check.py): gradients
at NaN, infinities and domain edges.

Expected gradients are PyTorch's backward formulas (derivatives.yaml / its CPU kernels, checked by
hand in a PyTorch 2.13 CPU venv) evaluated here in numpy float64, never read from fusetorch.
Each case also runs compiled, against the same expectation.
"""
import math

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F

NAN, INF = math.nan, math.inf
X = np.array([NAN, INF, -INF, -3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 30.0, -0.5, 1e-300])


def _grads(fn, *arrays, compiled=False):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    f = torch.compile(fn) if compiled else fn
    out = f(*ts)
    g = torch.tensor(np.full(out.shape, 2.0), dtype=torch.float64)
    return torch.autograd.grad(out, ts, g)


def _check(fn, arrays, expected):
    for compiled in (False, True):
        got = _grads(fn, *arrays, compiled=compiled)
        for gt, e in zip(got, expected):
            np.testing.assert_allclose(gt.numpy(), 2.0 * np.asarray(e), rtol=1e-12, atol=0,
                                       err_msg=f"compiled={compiled}")


def _np(f):
    with np.errstate(all="ignore"):
        return f()


def test_softplus_and_logsigmoid_gradient_is_nan_at_nan():
    # softplus_backward: z = exp(x beta); x beta > threshold ? g : g z / (z + 1)
    x = X
    z = _np(lambda: np.exp(x))
    sp = _np(lambda: np.where(x > 20, 1.0, z / (z + 1)))
    _check(F.softplus, [x], [sp])
    # logsigmoid(x) = -softplus(-x): d/dx = sigmoid(-x) (NaN at NaN)
    zn = _np(lambda: np.exp(-x))
    _check(F.logsigmoid, [x], [_np(lambda: np.where(-x > 20, 1.0, zn / (zn + 1)))])


def test_hardsigmoid_hardtanh_relu6_pass_nothing_at_nan():
    # hardsigmoid_backward: (x > -3 && x < 3) ? g / 6 : 0; hardtanh's vectorised kernel:
    # (x > min) & (x < max) & g, both false at NaN
    x = X
    _check(F.hardsigmoid, [x], [_np(lambda: np.where((x > -3) & (x < 3), 1 / 6, 0.0))])
    _check(F.hardtanh, [x], [_np(lambda: np.where((x > -1) & (x < 1), 1.0, 0.0))])
    _check(F.relu6, [x], [_np(lambda: np.where((x > 0) & (x < 6), 1.0, 0.0))])
    y = torch.tensor(X)
    np.testing.assert_array_equal(np.isnan(F.hardsigmoid(y).numpy()), np.isnan(X))
    np.testing.assert_array_equal(np.isnan(F.hardtanh(y).numpy()), np.isnan(X))
    with pytest.raises(NotImplementedError, match="'Long'"):
        F.hardsigmoid(torch.tensor([-4, 0, 2]))
    np.testing.assert_array_equal(F.hardtanh(torch.tensor([-4, 0, 2])).numpy(), [-1, 0, 1])


def test_logit_gradient_at_and_outside_the_unit_interval():
    # logit_backward: (x < 0 || x > 1) ? NaN : g / (x (1 - x)); with eps the clamp's
    # (x < eps || x > 1 - eps) ? 0 : g / (x (1 - x)), NaN passing
    x = np.array([NAN, -1.0, 0.0, 1e-3, 0.25, 0.5, 1.0, 1.5, INF, -INF])
    _check(torch.logit, [x],
           [_np(lambda: np.where((x < 0) | (x > 1), NAN, 1 / (x * (1 - x))))])
    _check(lambda t: torch.logit(t, 0.1), [x],
           [_np(lambda: np.where((x < 0.1) | (x > 0.9), 0.0, 1 / (x * (1 - x))))])
    v = torch.logit(torch.tensor(x)).numpy()
    expected = _np(lambda: np.where((x < 0) | (x > 1), NAN, np.log(x / (1 - x))))
    np.testing.assert_allclose(v, expected, rtol=1e-14)


def test_xlogy_and_xlog1py_gradients_at_x_zero():
    # xlogy: d/dx = xlogy(g, y) masked to 0 where x == 0 and y <= 0; d/dy = g x / y
    # xlog1py: d/dx = xlog1py(g, y) masked where x == 0 and y <= -1; d/dy = g x / (y + 1)
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0, 2.0, NAN, 1.0])
    y = np.array([0.0, -1.0, INF, -INF, 1.0, 3.0, 0.0, 3.0, 0.0, INF])
    dx = _np(lambda: np.where((x == 0) & (y <= 0), 0.0, np.log(y)))
    _check(torch.xlogy, [x, y], [dx, _np(lambda: x / y)])
    dx1 = _np(lambda: np.where((x == 0) & (y <= -1), 0.0, np.log1p(y)))
    _check(torch.special.xlog1py, [x, y], [dx1, _np(lambda: x / (y + 1))])
    # values: 0 where x == 0 unless y is NaN
    v = torch.xlogy(torch.tensor([0.0, 0.0, 2.0]), torch.tensor([INF, NAN, 0.0])).numpy()
    np.testing.assert_array_equal(v, np.array([0.0, NAN, -INF], dtype=np.float32))
    assert torch.xlogy(torch.tensor([1, 2]), torch.tensor([3, 4])).dtype == torch.float32


def test_entr_gradient_is_minus_one_plus_log_everywhere():
    # entr's backward: g * -(1 + log x): inf at 0, NaN below 0 and at NaN, -inf at inf
    x = np.array([NAN, INF, -INF, -1.0, 0.0, 0.5, 1.0, 2.0])
    _check(torch.special.entr, [x], [_np(lambda: -(1 + np.log(x)))])
    v = torch.special.entr(torch.tensor(x)).numpy()
    expected = _np(lambda: np.where(x > 0, -x * np.log(x), np.where(x == 0, 0.0, -INF)))
    np.testing.assert_allclose(v, np.where(np.isnan(x), NAN, expected), rtol=1e-15)


def test_atan2_gradient_is_zero_at_the_origin():
    # atan2_backward masks 1 / (x^2 + y^2) to 0 where the denominator is 0
    y = np.array([0.0, -0.0, 0.0, 1.0, 2.0, INF, 1.0])
    x = np.array([0.0, 0.0, -0.0, 0.0, 3.0, 2.0, INF])
    r2 = x * x + y * y
    recip = _np(lambda: np.where(r2 == 0, 0.0, 1 / r2))
    _check(torch.atan2, [y, x], [_np(lambda: x * recip), _np(lambda: -y * recip)])


def test_logaddexp_gradient_at_infinities():
    # logaddexp_backward: g / (1 + exp(b - a)) and g / (1 + exp(a - b))
    a = np.array([INF, -INF, INF, 0.0, 1.0, INF, -INF, 2.0, 0.0])
    b = np.array([-INF, INF, 2.0, INF, INF, INF, -INF, 3.0, 0.0])
    _check(torch.logaddexp, [a, b], [_np(lambda: 1 / (1 + np.exp(b - a))),
                                      _np(lambda: 1 / (1 + np.exp(a - b)))])


@pytest.mark.parametrize("name", ["i1", "i1e"])
def test_i1_gradient_is_half_where_x_is_tiny_or_nan(name):
    # i1_backward: where(|x| > eps, i0(x) - i1(x) / x, 1/2) (i1e: i0e - i1e (sgn x + 1 / x))
    import scipy.special as sp
    x = np.array([NAN, 0.0, -0.0, 1e-300, -1e-17, 0.5, -2.0, 4.0])
    tiny = ~(np.abs(x) > np.finfo(np.float64).eps)
    s = np.where(tiny, 1.0, x)
    if name == "i1":
        d = sp.i0(s) - sp.i1(s) / s
    else:
        d = sp.i0e(s) - sp.i1e(s) * (np.sign(s) + 1 / s)
    _check(getattr(torch.special, name), [x], [np.where(tiny, 0.5, d)])


# ------------------------------------------------------------ zero gradients, not "no gradient"
# PyTorch's backward runs through a result that does not depend on an input requiring grad
# and writes zeros (checked by hand: matrix_power(A, 0) -> CopyBackwards, fill -> FillBackward0/1,
# householder_product with an empty tau -> LinalgHouseholderProductBackward0).

@pytest.mark.parametrize("compiled", [False, True])
def test_matrix_power_zero_backward_gives_zeros(compiled):
    a = torch.tensor(np.arange(18.0).reshape(2, 3, 3), requires_grad=True)
    f = (lambda t: torch.linalg.matrix_power(t, 0))
    y = (torch.compile(f) if compiled else f)(a)
    np.testing.assert_array_equal(y.detach().numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 3, 3)))


def test_fill_backward_gives_zeros_to_input_and_the_sum_to_the_value():
    x = torch.tensor([INF, NAN, 1.0], dtype=torch.float64, requires_grad=True)
    v = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    y = torch.fill(x, v)
    assert type(y.grad_fn).__name__ == "FillBackward1"
    (y * torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    assert v.grad.item() == 7.0
    x.grad = None
    torch.fill(x, 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    # in place on a non-leaf: its history gets zeros, a tensor value its gradient
    w = torch.tensor(5.0, requires_grad=True)
    b = torch.ones(4, requires_grad=True)
    c = b * 2
    c.fill_(w)
    c.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), np.zeros(4, dtype=np.float32))
    assert w.grad.item() == 4.0
    with pytest.raises(RuntimeError, match="leaf Variable"):
        b.fill_(1.0)


def test_householder_product_with_no_reflectors_backward_gives_zeros():
    a = torch.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    tau = torch.zeros(0, dtype=torch.float64, requires_grad=True)
    q = torch.linalg.householder_product(a, tau)
    np.testing.assert_array_equal(q.detach().numpy(), np.eye(3, 2))
    q.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((3, 2)))
    assert tau.grad.shape == (0,)


# ------------------------------------------------------------ error types (PyTorch's, by hand)

def test_aminmax_out_must_have_the_input_dtype():
    x = torch.ones(3, 4)
    with pytest.raises(RuntimeError, match="dtype float, but got double"):
        torch.aminmax(x, dim=0, out=(torch.empty(4), torch.empty(4, dtype=torch.float64)))
    with pytest.raises(RuntimeError, match="dtype double, but got float"):
        torch.aminmax(x.double(), dim=0, out=(torch.empty(4, dtype=torch.float64), torch.empty(4)))
    lo, hi = torch.empty(4), torch.empty(4)
    torch.aminmax(torch.tensor([[1.0, 5, -2, 0], [3, 4, 7, -1]]), dim=0, out=(lo, hi))
    _same = np.testing.assert_array_equal
    _same(lo.numpy(), [1.0, 4, -2, -1])
    _same(hi.numpy(), [3.0, 5, 7, 0])


def test_arange_computes_in_outs_dtype():
    # PyTorch: without dtype=, out's dtype is the dtype (bool: not implemented, an integer
    # step truncated to 0: ValueError)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        torch.arange(3, out=torch.empty(0, dtype=torch.bool))
    with pytest.raises(ValueError, match="step must be nonzero"):
        torch.arange(0, 1, 0.25, out=torch.empty(0, dtype=torch.int64))
    o = torch.empty(0, dtype=torch.int64)
    torch.arange(0.5, 3, out=o)
    np.testing.assert_array_equal(o.numpy(), [0, 1, 2])
    f = torch.empty(0, dtype=torch.float64)
    torch.arange(0, 1, 0.25, out=f)
    np.testing.assert_array_equal(f.numpy(), [0.0, 0.25, 0.5, 0.75])


def test_narrow_copy_dim_errors():
    x = torch.ones(2, 3)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got -4"):
        torch.narrow_copy(x, -4, 0, 1)
    with pytest.raises(RuntimeError, match="Expected dim <"):
        torch.narrow_copy(x, 2, 0, 1)


def test_adaptive_max_pool3d_errors_and_empty_output():
    F3 = F.adaptive_max_pool3d
    with pytest.raises(ValueError, match="at least 4"):
        F3(torch.ones(2, 2, 2), [2, 2, 2])
    with pytest.raises(RuntimeError, match="Expected 4D or 5D"):
        F3(torch.ones(2, 2, 2), 2)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[1, 1, -1, 0, 2\]"):
        F3(torch.ones(1, 1, 1, 1, 1), [-1, 0, 2])
    with pytest.raises(RuntimeError, match="dimension 2 being empty"):
        F3(torch.ones(1, 2, 0, 3, 3), 2)
    x = torch.ones(1, 2, 3, 3, 3, requires_grad=True)
    v, i = F3(x, (0, 2, 2), return_indices=True)
    assert tuple(v.shape) == (1, 2, 0, 2, 2) and tuple(i.shape) == (1, 2, 0, 2, 2)
    assert i.dtype == torch.int64
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 2, 3, 3, 3), dtype=np.float32))
