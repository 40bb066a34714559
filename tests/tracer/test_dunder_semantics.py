"""Python-level operators as PyTorch's Tensor defines them (checked by hand in PyTorch 2.13)."""
import numpy as np
import pytest

import fusetorch as torch


def test_reversed_is_a_flip_along_dim_0_not_an_iterator():
    x = torch.arange(6).reshape(3, 2)
    r = reversed(x)
    assert isinstance(r, torch.Tensor)
    np.testing.assert_array_equal(r.numpy(), np.arange(6).reshape(3, 2)[::-1])
    z = torch.tensor(3.0)
    assert reversed(z) is z


@pytest.mark.parametrize("call", [torch.abs, torch.absolute, abs, lambda t: t.abs(),
                                  lambda t: t.abs_()])
def test_abs_of_bool_is_refused_as_pytorch_does(call):
    with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
        call(torch.tensor([True, False]))


def test_a_number_divided_by_a_tensor_is_its_reciprocal_times_the_number():
    """PyTorch's `__rtruediv__` is `self.reciprocal() * other`: two roundings, where
    torch.div(3.0, x) rounds once (they differ in the last bit of about a third of float32
    results), and the result's grad_fn is MulBackward0."""
    a = np.arange(1, 20001, dtype=np.float32) / np.float32(7)
    x = torch.tensor(a, requires_grad=True)
    y = 3.0 / x
    np.testing.assert_array_equal(y.detach().numpy(), (np.float32(1) / a) * np.float32(3))
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert not np.array_equal(torch.div(3.0, x).detach().numpy(), y.detach().numpy())
    np.testing.assert_array_equal((7 / torch.tensor([3, -4])).numpy(),
                                  (np.float32(1) / np.float32([3, -4])) * np.float32(7))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -3.0 / a.astype(np.float64) ** 2, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int32, torch.int64])
@pytest.mark.parametrize("call", [lambda a: a ** -2, lambda a: torch.pow(a, -2),
                                  lambda a: a.pow(-2), lambda a: a.clone().pow_(-1)])
def test_an_integer_tensor_to_a_negative_int_power_is_refused(dtype, call):
    """PyTorch refuses before converting the exponent: uint8 took -2 as 254 (3 ** 254 wrapped)."""
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        call(torch.tensor([2, 3], dtype=dtype))


def test_integer_powers_that_pytorch_allows():
    np.testing.assert_array_equal((torch.tensor([2, 3], dtype=torch.uint8) ** 2).numpy(), [4, 9])
    assert (torch.tensor([2.0]) ** -2).tolist() == [0.25]
    # a tensor exponent: PyTorch's integer power, 2 ** -1 == 0, (-1) ** -1 == -1
    np.testing.assert_array_equal((torch.tensor([2, -1]) ** torch.tensor([-1, -1])).numpy(),
                                  [0, -1])
