"""torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp against analytic
derivatives and float64 central differences, PyTorch's return structures (a Tensor or tuples
following the inputs and outputs) and its errors (compared by hand with PyTorch 2.13)."""
import numpy as np
import pytest

import fusetorch as torch

AF = torch.autograd.functional
D = torch.float64


def t(a) -> torch.Tensor:
    return torch.tensor(np.asarray(a, dtype=np.float64))


def arr(x) -> np.ndarray:
    return x.detach().numpy()


def numeric_jacobian(func, inputs, eps=1e-6):
    """Central differences in float64: jac[i][j] of shape out_i.shape + in_j.shape."""
    base = [arr(x).copy() for x in inputs]

    def call(values):
        with torch.no_grad():
            out = func(*[t(v) for v in values])
        return [arr(o) for o in (out if isinstance(out, tuple) else (out,))]

    outs = call(base)
    jac = [[np.zeros(o.shape + b.shape) for b in base] for o in outs]
    for j, b in enumerate(base):
        for k in np.ndindex(*b.shape):
            up = [v.copy() for v in base]
            down = [v.copy() for v in base]
            up[j][k] += eps
            down[j][k] -= eps
            for i, (hi, lo) in enumerate(zip(call(up), call(down))):
                jac[i][j][(Ellipsis,) + k] = (hi - lo) / (2 * eps)
    return jac


def f_pair(a, b):
    """Two inputs, two outputs, nothing linear."""
    return torch.tanh(a @ b), (a.sin() * a).sum() + b.exp().sum() * a.sum()


def scalar(a, b):
    return (a.sin() * b.sum()).sum() + (a ** 2).sum() * (b ** 3).sum()


A = t([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]])
B = t([[0.9, -0.1], [0.4, 0.6], [-0.8, 0.3]])


# ----------------------------------------------------------------------------- jacobian

def test_jacobian_analytic_single_tensor():
    x = t([0.5, -1.0, 2.0])
    jac = AF.jacobian(lambda a: a.exp() * a, x)
    assert isinstance(jac, torch.Tensor) and jac.shape == (3, 3) and not jac.requires_grad
    assert np.allclose(arr(jac), np.diag(np.exp(arr(x)) * (1 + arr(x))))
    W = t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert np.array_equal(arr(AF.jacobian(lambda a: W @ a, x)), arr(W))


def test_jacobian_structures_and_finite_differences():
    jac = AF.jacobian(f_pair, (A, B))
    assert isinstance(jac, tuple) and len(jac) == 2 and all(len(r) == 2 for r in jac)
    num = numeric_jacobian(f_pair, (A, B))
    shapes = [[(2, 2, 2, 3), (2, 2, 3, 2)], [(2, 3), (3, 2)]]
    for i in range(2):
        for j in range(2):
            assert tuple(jac[i][j].shape) == shapes[i][j] and jac[i][j].dtype == D
            assert np.allclose(arr(jac[i][j]), num[i][j], atol=1e-7)
    # a tuple of one input keeps its level of tuple; a single output drops its level
    one = AF.jacobian(lambda a: a.exp(), (A,))
    assert isinstance(one, tuple) and len(one) == 1 and one[0].shape == (2, 3, 2, 3)
    outs = AF.jacobian(lambda a: (a * 2, a.sum()), A)
    assert isinstance(outs, tuple) and outs[0].shape == (2, 3, 2, 3) and outs[1].shape == (2, 3)


def test_jacobian_independent_outputs_are_zero_or_strict_errors():
    x, y = t([1.0, 2.0]), t([3.0])
    jac = AF.jacobian(lambda a, b: a * 2, (x, y))
    assert np.array_equal(arr(jac[1]), np.zeros((2, 1)))
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode.$"):
        AF.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function does not "
                                           "require gradients"):
        AF.jacobian(lambda a: torch.ones(2, dtype=D), x, strict=True)
    assert np.array_equal(arr(AF.jacobian(lambda a: torch.ones(2, dtype=D), x)), np.zeros((2, 2)))


def test_jacobian_create_graph_is_differentiable():
    x = t([0.5, -1.0, 2.0]).requires_grad_(True)
    jac = AF.jacobian(lambda a: a ** 3, x, create_graph=True)
    assert jac.requires_grad
    g, = torch.autograd.grad(jac.sum(), x)
    assert np.allclose(arr(g), 6 * arr(x))
    # without create_graph the inputs' own graph is cut: a tensor captured by closure is a
    # constant, the argument is the variable
    jac = AF.jacobian(lambda a: a * x, x)
    assert not jac.requires_grad and np.allclose(arr(jac), np.diag(arr(x)))


def test_jacobian_options_and_errors():
    x = t([1.0, 2.0])
    ref = arr(AF.jacobian(f_pair, (A, B))[0][0])
    assert np.allclose(arr(AF.jacobian(f_pair, (A, B), vectorize=True)[0][0]), ref)
    fwd = AF.jacobian(f_pair, (A, B), vectorize=True, strategy="forward-mode")
    assert np.allclose(arr(fwd[0][0]), ref) and np.allclose(arr(fwd[1][1]),
                                                            arr(AF.jacobian(f_pair, (A, B))[1][1]))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="`create_graph=True` and `strategy="):
        AF.jacobian(lambda a: a, x, strategy="forward-mode", create_graph=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `strategy=\"forward-mode\"`"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode", strict=True, vectorize=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not"):
        AF.jacobian(lambda a: a * 2, x, vectorize=True, strict=True)
    with pytest.raises(AssertionError, match="Expected strategy to be either"):
        AF.jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(TypeError, match="^The inputs given to jacobian must be either a Tensor "
                                        "or a tuple of Tensors but the given inputs has type "
                                        "<class 'int'>.$"):
        AF.jacobian(lambda a: a, 3)
    with pytest.raises(TypeError, match="but the value at index 1 has type <class 'int'>"):
        AF.jacobian(lambda a, b: a, (x, 3))
    with pytest.raises(TypeError, match="^The outputs of the user-provided function given to "
                                        "jacobian must be"):
        AF.jacobian(lambda a: 3, x)


# ------------------------------------------------------------------------------ hessian

def test_hessian_analytic():
    x = t([0.5, -1.0, 2.0])
    M = t([[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 4.0, 1.0]])
    h = AF.hessian(lambda a: a @ M @ a, x)
    assert isinstance(h, torch.Tensor) and h.shape == (3, 3)
    assert np.allclose(arr(h), arr(M) + arr(M).T)
    assert np.allclose(arr(AF.hessian(lambda a: (a ** 3).sum(), x)), np.diag(6 * arr(x)))
    assert np.array_equal(arr(AF.hessian(lambda a: a.sum(), x)), np.zeros((3, 3)))


def test_hessian_of_two_inputs_matches_finite_differences_of_the_gradient():
    h = AF.hessian(scalar, (A, B))
    assert isinstance(h, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in h)

    def gradient(a, b):
        with torch.enable_grad():
            a, b = a.requires_grad_(True), b.requires_grad_(True)
            return torch.autograd.grad(scalar(a, b), (a, b))
    num = numeric_jacobian(gradient, (A, B), eps=1e-5)
    for i, x in enumerate((A, B)):
        for j, y in enumerate((A, B)):
            assert tuple(h[i][j].shape) == tuple(x.shape) + tuple(y.shape)
            assert np.allclose(arr(h[i][j]), num[i][j], atol=1e-6)
    assert np.allclose(arr(h[0][1]), np.moveaxis(arr(h[1][0]), [0, 1], [2, 3]))
    fwd = AF.hessian(scalar, (A, B), vectorize=True, outer_jacobian_strategy="forward-mode")
    assert np.allclose(arr(fwd[0][1]), arr(h[0][1]))


def test_hessian_errors():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^The Tensor returned by the function given to "
                                           "hessian should contain a single element$"):
        AF.hessian(lambda a: a ** 3, x)
    with pytest.raises(RuntimeError, match="^The function given to hessian should return a "
                                           "single Tensor$"):
        AF.hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(RuntimeError, match="^While computing the hessian, found that the "
                                           "jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        AF.hessian(lambda a: a.sum(), x, strict=True)
    h = AF.hessian(lambda a: (a ** 3).sum(), x, create_graph=True)
    assert h.requires_grad


# ------------------------------------------------------------------- products with vectors

def test_vjp_and_jvp_are_contractions_of_the_jacobian():
    jac = AF.jacobian(f_pair, (A, B))
    u = (t([[1.0, -2.0], [0.5, 3.0]]), t(0.7))
    v = (t([[0.2, 0.1, -0.3], [1.0, 0.0, 0.4]]), t([[0.5, -0.5], [1.0, 2.0], [0.0, 1.5]]))
    out, vj = AF.vjp(f_pair, (A, B), u)
    assert isinstance(out, tuple) and isinstance(vj, tuple) and len(vj) == 2
    for j in range(2):
        want = sum(np.tensordot(arr(u[i]), arr(jac[i][j]), axes=u[i].dim()) for i in range(2))
        assert vj[j].shape == (A, B)[j].shape and np.allclose(arr(vj[j]), want)
    out2, jv = AF.jvp(f_pair, (A, B), v)
    assert np.allclose(arr(out2[0]), arr(out[0]))
    for i in range(2):
        want = sum(np.tensordot(arr(jac[i][j]), arr(v[j]), axes=v[j].dim()) for j in range(2))
        assert jv[i].shape == out[i].shape and np.allclose(arr(jv[i]), want)


def test_vjp_jvp_single_tensors_and_defaults():
    x = t([0.5, -1.0, 2.0])
    out, vj = AF.vjp(lambda a: a.exp().sum(), x)  # v may be left out for one element
    assert isinstance(vj, torch.Tensor) and np.allclose(arr(vj), np.exp(arr(x)))
    assert out.shape == () and not out.requires_grad
    out, jv = AF.jvp(lambda a: a.exp(), t(0.5))
    assert np.allclose(jv.item(), np.exp(0.5))
    out, jv = AF.jvp(lambda a: a * 2, x, t([1.0, 1.0, 1.0]), strict=True)  # linear is fine
    assert np.array_equal(arr(jv), [2.0, 2.0, 2.0])
    out, vj = AF.vjp(lambda a: a.exp(), x, t([1.0, 0.0, 2.0]), create_graph=True)
    assert out.requires_grad and vj.requires_grad


def test_vjp_jvp_errors():
    x = t([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="^The vector v can only be None if the "
                                           "user-provided function returns a single Tensor "
                                           "with a single element.$"):
        AF.vjp(lambda a: a.exp(), x)
    with pytest.raises(RuntimeError, match="^The vector v can only be None if the input to "
                                           "the user-provided function is a single Tensor"):
        AF.jvp(lambda a: a.exp(), x)
    with pytest.raises(RuntimeError, match=r"^v has invalid size: should be "
                                           r"torch.Size\(\[3\]\) but got torch.Size\(\[2\]\).$"):
        AF.vjp(lambda a: a.exp(), x, t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="^v is a tuple of invalid length: should be 2 but "
                                           "got 1.$"):
        AF.vjp(lambda a: (a, a), x, (t([1.0, 2.0, 3.0]),))
    with pytest.raises(RuntimeError, match="^Entry 1 in v has invalid size"):
        AF.vjp(lambda a: (a, a), x, (t([1.0, 2.0, 3.0]), t([1.0])))
    with pytest.raises(RuntimeError, match="^The given v should contain a single Tensor.$"):
        AF.vjp(lambda a: a, x, (t([1.0, 2.0, 3.0]), t([1.0])))
    with pytest.raises(RuntimeError, match="^The output of the user-provided function is "
                                           "independent of input 1. This is not allowed"):
        AF.vjp(lambda a, b: a.exp(), (x, t([1.0])), x, strict=True)
    with pytest.raises(RuntimeError, match="^The jacobian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True.$"):
        AF.vjp(lambda a: a * 2, x, x, create_graph=True, strict=True)


def test_hvp_and_vhp_are_products_with_the_hessian():
    h = AF.hessian(scalar, (A, B))
    v = (t([[0.2, 0.1, -0.3], [1.0, 0.0, 0.4]]), t([[0.5, -0.5], [1.0, 2.0], [0.0, 1.5]]))
    out, hv = AF.hvp(scalar, (A, B), v)
    out2, vh = AF.vhp(scalar, (A, B), v)
    assert out.shape == () and np.allclose(out.item(), scalar(A, B).item())
    for i in range(2):
        want = sum(np.tensordot(arr(h[i][j]), arr(v[j]), axes=2) for j in range(2))
        assert np.allclose(arr(hv[i]), want) and np.allclose(arr(vh[i]), want)  # symmetric
    x = t([0.5, -1.0, 2.0])
    out, hv = AF.hvp(lambda a: (a ** 3).sum(), x, t([1.0, 2.0, 3.0]))
    assert isinstance(hv, torch.Tensor) and np.allclose(arr(hv), 6 * arr(x) * [1, 2, 3])
    out, vh = AF.vhp(lambda a: (a ** 3).sum(), x, t([1.0, 2.0, 3.0]), create_graph=True)
    assert vh.requires_grad and out.requires_grad


def test_hvp_vhp_errors():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^The Tensor returned by the function given to hvp "
                                           "should contain a single element$"):
        AF.hvp(lambda a: a ** 3, x, x)
    with pytest.raises(RuntimeError, match="^The function given to vhp should return a single "
                                           "Tensor$"):
        AF.vhp(lambda a: (a, a), x, x)
    with pytest.raises(RuntimeError, match="^The vector v can only be None"):
        AF.hvp(lambda a: (a ** 3).sum(), x)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        AF.vhp(lambda a: a.sum(), x, x, strict=True)
    with pytest.raises(RuntimeError, match="^The output of the user-provided function is "
                                           "independent of input 1"):
        AF.hvp(lambda a, b: (a ** 3).sum(), (x, t([1.0])), (x, t([1.0])), strict=True)
