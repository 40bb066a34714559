"""An in-place write (a method, `+=`, `copy_`, `x[i] = v`, `out=`) that reads a tensor sharing
part of the written tensor's memory is refused, as PyTorch refuses it (its
`assert_no_partial_overlap`): the same elements in the same order, disjoint elements, and
layouts PyTorch calls too hard to tell (gaps, negative strides) go through, with numpy's
float64 values. Which calls PyTorch 2.13 refuses, and its message, were observed by
hand; torch is not imported here."""
import numpy as np
import pytest

import fusetorch as torch

MESSAGE = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")

REFUSED = {
    "add_": lambda x: x[1:].add_(x[:-1]),
    "add_ the other way": lambda x: x[:-1].add_(x[1:]),
    "sub_ alpha": lambda x: x[1:].sub_(x[:-1], alpha=2),
    "mul_": lambda x: x[1:].mul_(x[:-1]),
    "pow_": lambda x: x[1:].pow_(x[:-1]),
    "iadd": lambda x: x[1:].__iadd__(x[:-1]),
    "copy_": lambda x: x[1:].copy_(x[:-1]),
    "setitem": lambda x: x.__setitem__(slice(1, None), x[:-1]),
    "clamp_ min tensor": lambda x: x[1:].clamp_(min=x[:-1]),
    "addcmul_": lambda x: x[1:].addcmul_(x[:-1], x[:-1]),
    "lerp_": lambda x: x[1:].lerp_(x[:-1], 0.5),
    "add out=": lambda x: torch.add(x[:-1], 1, out=x[1:]),
    "exp out=": lambda x: torch.exp(x[:-1], out=x[1:]),
    "transposed": lambda x: x[:4].view(2, 2).add_(x[:4].view(2, 2).t()),
    "a row and a window": lambda x: x[:6].view(2, 3)[1].add_(x[1:4]),
    "broadcast operand": lambda x: x.view(2, 4).add_(x[:4]),  # (checked before broadcasting)
}


@pytest.mark.parametrize("write", list(REFUSED.values()), ids=list(REFUSED))
def test_a_partial_overlap_is_refused_and_writes_nothing(write):
    x = torch.arange(8.0)
    with pytest.raises(RuntimeError) as e:
        write(x)
    assert str(e.value) == MESSAGE
    np.testing.assert_array_equal(x.numpy(), np.arange(8.0))


def test_writes_pytorch_allows_keep_numpys_values():
    a = np.arange(8.0)
    x = torch.arange(8.0, dtype=torch.float64)
    x.add_(x)  # the very same elements
    a += a
    x[:4].add_(x[4:])  # disjoint halves of one buffer
    a[:4] += a[4:]
    x[::2].mul_(x[1::2])  # interleaved: gaps, "too hard" for PyTorch's check
    a[::2] *= a[1::2]
    x.copy_(x.flip(0))  # a negative stride
    a[:] = a[::-1].copy()
    np.testing.assert_array_equal(x.numpy(), a)
    z = torch.zeros(0)
    z.add_(z[:0])  # empty
    w = torch.ones(3)
    w[1:].add_(torch.ones(3)[:-1])  # another tensor's memory
    assert w.tolist() == [1.0, 2.0, 2.0]


def test_zero_dim_and_a_clone_are_fine():
    x = torch.arange(4.0)
    x[1].add_(x[0])  # one element each, disjoint
    x[1:].add_(x[:-1].clone())  # what the message asks for
    np.testing.assert_array_equal(x.numpy(), [0.0, 1.0, 3.0, 5.0])


def test_a_compiled_function_keeps_the_check():
    """Compiled for disjoint views of one buffer, a call with overlapping ones still refuses
    (as eager does), and the disjoint call keeps numpy's values."""
    def step(a, b):
        a.add_(b)
        return a * 1
    cf = torch.compile(step)
    for _ in range(3):
        y = torch.arange(6.0)
        np.testing.assert_array_equal(cf(y[:3], y[3:]).numpy(), [3.0, 5.0, 7.0])
    x = torch.arange(6.0)
    with pytest.raises(RuntimeError) as e:
        cf(x[1:], x[:-1])
    assert str(e.value) == MESSAGE
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0))


def test_setitem_of_a_view_over_itself_with_unit_dims_is_a_full_overlap():
    # `adj[:] += g` on a (1, n) tensor: Python writes back the view with its leading unit dim
    # stripped, the same elements in the same order (PyTorch lets it through)
    a = torch.zeros(1, 4)
    a[:] += torch.ones(1, 4)
    assert a.tolist() == [[1.0] * 4]
    c = torch.arange(8.0).view(2, 1, 4)
    c[0] = c[0].view(4)
    assert c.view(-1).tolist() == list(map(float, range(8)))
    d = torch.zeros(4)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        d[1:] = d[:3]
