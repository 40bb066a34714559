"""Issue 26/27 leftovers, each as PyTorch 2.13 behaves (checked by hand in a scratch venv):
creation without a size, scatter(reduce=) refusing backward, free functions on a lazy
placeholder, vector_norm(ord=0)'s zero gradient. Expected values come from numpy."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_creation_without_a_size_raises_pytorchs_type_error(fn):
    with pytest.raises(TypeError, match=f'{fn}\\(\\) missing 1 required positional arguments: '
                                        f'"size"'):
        getattr(torch, fn)()
    with pytest.raises(TypeError, match="missing 1 required"):
        getattr(torch, fn)(dtype=torch.float64)
    assert getattr(torch, fn)(()).shape == () and getattr(torch, fn)(size=()).shape == ()


@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_random_creation_without_a_size_raises(fn):
    with pytest.raises(TypeError, match=f"{fn}\\(\\) received an invalid combination of "
                                        f"arguments"):
        getattr(torch, fn)()
    assert getattr(torch, fn)(()).shape == ()


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("scalar_src", [False, True])
def test_scatter_with_reduce_refuses_backward(reduce, scalar_src):
    base = np.arange(12.0).reshape(3, 4)
    index = np.array([[0, 1, 2, 0], [0, 0, 0, 0]])
    srcv = np.full((3, 4), 2.0) if scalar_src else np.arange(1.0, 13.0).reshape(3, 4)
    want = base.copy()
    for i in range(2):  # the reference loop: self[index[i][j]][j] op= src[i][j]
        for j in range(4):
            if reduce == "add":
                want[index[i, j], j] += srcv[i, j]
            else:
                want[index[i, j], j] *= srcv[i, j]
    x = torch.tensor(base, requires_grad=True)
    src = 2.0 if scalar_src else torch.tensor(srcv, requires_grad=True)
    y = x.scatter(0, torch.tensor(index), src, reduce=reduce)
    np.testing.assert_allclose(y.detach().numpy(), want)
    assert type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()
    # without a gradient asked for, the in-place form and the plain form just compute
    z = torch.tensor(base)
    z.scatter_(0, torch.tensor(index), src if scalar_src else torch.tensor(srcv),
               reduce=reduce)
    np.testing.assert_allclose(z.numpy(), want)


def test_scatter_without_reduce_keeps_its_gradient():
    x = torch.zeros(3, requires_grad=True)
    x.scatter(0, torch.tensor([0, 2]), 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])  # overwritten: no grad


_UNINIT = "Attempted to use an uninitialized parameter in"


@pytest.mark.parametrize("use", [
    lambda w: torch.sin(w), lambda w: torch.add(w, 1), lambda w: torch.mean(w),
    lambda w: torch.matmul(w, w), lambda w: F.linear(torch.ones(2, 2), w),
    lambda w: F.relu(w), lambda w: torch.cat([w, w]), lambda w: torch.reshape(w, (0,)),
    lambda w: torch.zeros_like(w), lambda w: torch.where(w > 0, w, 0.0),
])
def test_free_functions_refuse_an_uninitialized_parameter(use):
    m = nn.LazyLinear(3)
    with pytest.raises(ValueError, match=_UNINIT):
        use(m.weight)
    with pytest.raises(ValueError, match=_UNINIT):
        use(nn.LazyBatchNorm1d().running_mean)


def test_the_function_named_is_the_one_called():
    with pytest.raises(ValueError, match="in <built-in method sin>"):
        torch.sin(nn.LazyLinear(3).weight)


def test_a_lazy_module_still_converts_and_materializes():
    m = nn.LazyLinear(3).double()
    assert m.weight.dtype == torch.float64
    y = m(torch.ones(2, 4, dtype=torch.float64))
    assert y.shape == (2, 3) and type(m.weight) is nn.Parameter
    x = np.ones((2, 4))
    np.testing.assert_allclose(y.detach().numpy(), x @ m.weight.detach().numpy().T
                               + m.bias.detach().numpy())


@pytest.mark.parametrize("values", [[1.0, 0.0, -2.0, 0.0], [0.0, 0.0], [np.inf, np.nan, 0.0]])
def test_vector_norm_ord_0_counts_and_has_a_zero_gradient(values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y = torch.linalg.vector_norm(x, ord=0)
    assert y.requires_grad and float(y) == np.count_nonzero(np.asarray(values))
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(len(values)))
    x.grad = None
    x.norm(p=0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(len(values)))


def test_vector_norm_ord_0_over_a_dim():
    a = np.array([[1.0, 0.0, 3.0], [0.0, 0.0, -1.0]])
    x = torch.tensor(a, requires_grad=True)
    y = torch.linalg.vector_norm(x, ord=0, dim=1, keepdim=True)
    np.testing.assert_array_equal(y.detach().numpy(), [[2.0], [1.0]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
