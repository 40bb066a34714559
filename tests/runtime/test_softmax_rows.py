"""softmax and log_softmax of small arrays by one C call (runtime/softmax_rows.py), and their
VJP primitives (ir/norm_ops.py): values against numpy float64, gradients (first and second,
forward AD) against float64 central differences, the kernel taken where it applies (every dim
of a small C-contiguous array) and the numpy reference elsewhere (strided, empty, large, half
precision), with the reference's NaN and infinity behaviour; the VJPs' references equal
their compositions bit for bit."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch._policy import POLICY
from fusetorch.ir.ops import OPS
from fusetorch.runtime import eager_kernels as ek
from fusetorch.runtime import softmax_rows


@pytest.fixture(autouse=True)
def _kernels_on():
    on = POLICY.eager_kernels
    POLICY.eager_kernels = True
    ek.clear()
    if softmax_rows._build(np.dtype(np.float32)) is False:
        pytest.skip("no C compiler")
    yield
    POLICY.eager_kernels = on
    ek.clear()


def _softmax64(a, dim):
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _log_softmax64(a, dim):
    z = a - a.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))


REF = {"softmax": _softmax64, "log_softmax": _log_softmax64}


def _central(f, x, g, h=1e-6):
    """d(sum(f(x) * g))/dx by central differences, in float64."""
    x, out = x.copy(), np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        up = (f(x) * g).sum()
        x[i] = old - h
        down = (f(x) * g).sum()
        x[i] = old
        out[i] = (up - down) / (2 * h)
    return out


def _used_kernel() -> bool:
    return any(k[0] == "softmax_rows" for k in ek._PROGRAMS)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (np.float64, 1e-14)])
@pytest.mark.parametrize("shape,dim", [((1, 57), 1), ((1, 57), -1), ((4, 3), 0),
                                       ((3, 4, 5), 1), ((1,), 0), ((2, 1), 1)])
def test_kernel_values_against_float64(name, dtype, tol, shape, dim):
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype) * 3
    impl = torch.randn(1)._be.impl[name]
    got = impl(a, dim % len(shape))
    assert _used_kernel() and got.dtype == dtype and got.shape == shape
    np.testing.assert_allclose(got, REF[name](a.astype(np.float64), dim % len(shape)),
                               rtol=tol, atol=tol)
    want = impl.__wrapped__(a, dim % len(shape))  # (numpy's reference: the same to rounding)
    np.testing.assert_allclose(got, want, rtol=4 * tol, atol=4 * tol)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((1, 7), 1), ((4, 3), 0), ((2, 3, 4), -1), ((), 0)])
def test_gradients_against_central_differences(name, shape, dim):
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    fn = getattr(F, name)
    t = torch.tensor(x, requires_grad=True)
    fn(t, dim).backward(torch.tensor(g))
    want = _central(lambda a: REF[name](a.reshape(a.shape or (1,)), dim).reshape(a.shape),
                    x, g)
    np.testing.assert_allclose(t.grad.numpy(), want, atol=1e-8)
    assert _used_kernel()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_double_backward_of_the_vjp_primitives(name):
    # (grad of <grad_x(sum(f(x) * g)), v>: the VJP primitives' own VJPs, in g and in y)
    rng = np.random.default_rng(2)
    x, g, v = (rng.standard_normal((3, 5)) for _ in range(3))
    fn = getattr(F, name)

    def grad_x(a, create=False):
        t = torch.tensor(a, requires_grad=True)
        (q,) = torch.autograd.grad((fn(t, 1) * torch.tensor(g)).sum(), t, create_graph=create)
        return t, q
    t, q = grad_x(x, True)
    assert q.grad_fn.name() == OPS[name + "_grad"].grad_name  # (PyTorch 2.13's, by hand)
    (q * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), _central(
        lambda a: grad_x(a)[1].numpy(), x, v), atol=1e-6)
    # and in the cotangent: d<grad_x(g), v>/dg
    gt = torch.tensor(g, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    (q,) = torch.autograd.grad((fn(xt, 1) * gt).sum(), xt, create_graph=True)
    (q * torch.tensor(v)).sum().backward()

    def of_g(b):
        t = torch.tensor(x, requires_grad=True)
        (fn(t, 1) * torch.tensor(b)).sum().backward()
        return t.grad.numpy()
    np.testing.assert_allclose(gt.grad.numpy(), _central(of_g, g, v), atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_forward_ad_through_the_vjp_primitive(name):
    import fusetorch.autograd.forward_ad as fwAD
    rng = np.random.default_rng(5)
    x, u = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    with fwAD.dual_level():
        y = getattr(F, name)(fwAD.make_dual(torch.tensor(x), torch.tensor(u)), 1)
        tangent = fwAD.unpack_dual(y).tangent.numpy()
    h = 1e-6
    want = (REF[name](x + h * u, 1) - REF[name](x - h * u, 1)) / (2 * h)
    np.testing.assert_allclose(tangent, want, atol=1e-7)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_rows_with_nan_and_infinities_as_the_reference(name):
    a = np.array([[0.0, np.nan, 1.0], [np.inf, 0.0, 1.0], [-np.inf, 0.0, 1.0],
                  [-np.inf, -np.inf, -np.inf], [1e30, -1e30, 0.0]], np.float32)
    impl = torch.randn(1)._be.impl[name]
    got = impl(a, 1)
    assert _used_kernel()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(impl.__wrapped__(a, 1)))
    np.testing.assert_allclose(got, impl.__wrapped__(a, 1), rtol=1e-6)


def test_the_reference_computes_what_the_kernel_does_not():
    impl = torch.randn(1)._be.impl
    rng = np.random.default_rng(3)
    strided = rng.standard_normal((5, 8)).astype(np.float32)[:, ::2]
    big = rng.standard_normal((1, softmax_rows.MAX_ELEMENTS + 1))
    cases = [strided, np.zeros((0, 3), np.float32), big,
             rng.standard_normal((2, 3)).astype(np.float16)]
    for a in cases:
        for name in ("softmax", "log_softmax"):
            ek.clear()
            got = impl[name](a, 1)
            assert not _used_kernel()
            np.testing.assert_array_equal(got, impl[name].__wrapped__(a, 1))


def test_switched_off_the_reference_runs():
    POLICY.eager_kernels = False
    a = np.random.default_rng(4).standard_normal((2, 9)).astype(np.float32)
    impl = torch.randn(1)._be.impl["log_softmax"]
    np.testing.assert_array_equal(impl(a, 1), impl.__wrapped__(a, 1))
    assert not _used_kernel()


@pytest.mark.parametrize("name", ["softmax_grad", "log_softmax_grad"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((3, 5), 1), ((4, 3, 2), 0), ((70, 80), 1)])
def test_the_vjp_references_equal_their_compositions_bit_for_bit(name, dtype, shape, dim):
    # (numpy's reference is the composition's operations in its order: what the interpreted
    # backward computed before the VJPs were primitives; compiled graphs run the composition)
    from fusetorch.ir import dtypes as dt
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.ir.passes import decompose
    from fusetorch.runtime.runner import run_graph
    rng = np.random.default_rng(6)
    g = rng.standard_normal(shape).astype(dtype)
    y = torch.randn(1)._be.impl[name[:-len("_grad")]](
        rng.standard_normal(shape).astype(dtype), dim)
    d = dt.float32 if dtype == np.float32 else dt.float64
    ins = [make_node("input", [], {"shape": shape, "dtype": d}) for _ in range(2)]
    node = make_node(name, ins, {"dim": dim})
    impl = torch.randn(1)._be.impl
    (want,) = run_graph(decompose(Graph(ins, [node])), [g, y], impl, np)
    assert impl[name](g, y, dim).tobytes() == np.asarray(want).tobytes()
