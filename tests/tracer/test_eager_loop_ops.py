"""The small ops of RNN loops after their per-call work became once-per-layout work (issue 29,
item 1): cached strides, shape rules, index specs and position grids must give what the
uncached computation gives on every call, including the second one with the same layout, and
keep raising PyTorch's errors. References: numpy in float64, PyTorch's documented names."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.runtime import eager


def _twice(fn):
    """fn() twice: the first call fills a cache, the second reads it."""
    fn()
    return fn()


@pytest.mark.parametrize("shape,target", [
    ((1, 5), (4, 5)), ((3, 1), (3, 6)), ((), (2, 3)), ((5,), (2, 1, 5)), ((0, 1), (0, 4)),
    ((2, 1, 3), (2, 4, 3))])
def test_expand_view_matches_broadcast_to(shape, target):
    a = np.asarray(np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 0.5)
    out = _twice(lambda: eager._expand(a, target))
    ref = np.broadcast_to(a, target)
    assert out.shape == ref.shape and out.strides == ref.strides
    np.testing.assert_array_equal(out, ref)
    assert not out.flags.writeable  # a write would land on repeated elements
    assert out.size == 0 or np.shares_memory(out, a)


def test_expand_of_non_contiguous_and_offset_arrays():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for a in (base[:, 2:3], base[1:2, ::2], base.T[:1]):
        out = _twice(lambda: eager._expand(a, (3,) + a.shape[1:]) if a.shape[0] == 1
                     else eager._expand(a, a.shape[:1] + (5,)))
        np.testing.assert_array_equal(out, np.broadcast_to(a, out.shape))


def test_expand_gradient_and_errors_repeat():
    x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    for _ in range(2):
        y = x.expand(4, -1)
        assert y.grad_fn.name() == "ExpandBackward0"
        (y * torch.arange(4.0, dtype=torch.float64).view(4, 1)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 3), 2 * (0 + 1 + 2 + 3.0)))
    for _ in range(2):  # the cached rule does not cache its error
        with pytest.raises(RuntimeError, match="must match the existing size"):
            x.expand(4, 4)
    with pytest.raises(RuntimeError, match="more than one element"):
        x.detach().expand(2, 3).add_(1)


def test_view_and_reshape_errors_repeat():
    x = torch.randn(2, 3)
    for _ in range(2):
        assert x.view(1, -1).shape == (1, 6) and x.reshape(-1, 2).shape == (3, 2)
        with pytest.raises(RuntimeError, match=r"shape '\[4, -1\]' is invalid for input of size 6"):
            x.view(4, -1)


def test_int_index_of_each_shape():
    a = np.arange(24.0).reshape(4, 6)
    x = torch.tensor(a, requires_grad=True)
    for k in (0, 3, -1, -4):
        r = _twice(lambda: x[k])
        np.testing.assert_array_equal(r.detach().numpy(), a[k])
        assert r.grad_fn.name() == "SelectBackward0"
    y = torch.tensor(a[:2])  # the same int keys over another shape: its own spec
    np.testing.assert_array_equal(y[-1].numpy(), a[1])
    for k in (4, -5):
        with pytest.raises(IndexError, match="out of range|out of bounds"):
            x[k]
    with pytest.raises(IndexError):
        torch.tensor(2.0)[0]


def test_index_grad_fn_names_from_the_op_table():
    x = torch.randn(4, 3, requires_grad=True)
    names = {"SelectBackward0": x[1], "SliceBackward0": x[1:3], "UnsqueezeBackward0": x[None],
             "IndexBackward0": x[[0, 2, 2]]}
    for name, r in names.items():
        assert r.grad_fn.name() == name
        assert r.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_max_dim_values_indices_and_gradient_on_repeated_shapes():
    rng = np.random.default_rng(0)
    for _ in range(2):
        a = rng.standard_normal((4, 7))
        a[1, 2] = a[1, 5] = 9.0  # a tie: the first index, which takes the gradient
        x = torch.tensor(a, requires_grad=True)
        v, i = torch.max(x, 1)
        np.testing.assert_array_equal(v.detach().numpy(), a.max(1))
        np.testing.assert_array_equal(i.numpy(), a.argmax(1))
        v.sum().backward()
        g = np.zeros_like(a)
        g[np.arange(4), a.argmax(1)] = 1
        np.testing.assert_array_equal(x.grad.numpy(), g)
        m, j = torch.min(x, 0, keepdim=True)
        np.testing.assert_array_equal(m.detach().numpy(), a.min(0, keepdims=True))
        np.testing.assert_array_equal(j.numpy(), a.argmin(0)[None])


def test_cat_skips_empty_and_promotes():
    a, b = torch.ones(2, dtype=torch.float32), torch.arange(3)
    e = torch.tensor([])
    r = torch.cat([e, a, b])
    assert r.dtype == torch.float32 and r.tolist() == [1, 1, 0, 1, 2]
    assert torch.cat([e, b]).dtype == torch.float32  # (the skipped empty one still promotes)
    parts = [torch.randn(1, 2, requires_grad=True) for _ in range(5)]
    for _ in range(2):
        c = torch.cat(parts, 1)
        assert c.shape == (1, 10) and c.grad_fn.name() == "CatBackward0"


def test_elementwise_common_case_and_general_case_agree():
    x = torch.tensor([1.5, -2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.5, 4.0], dtype=torch.float64, requires_grad=True)
    z = (x * y + x * 2 - 1) / y  # tensors, an int, a Python number
    np.testing.assert_allclose(z.detach().numpy(), (np.array([1.5, -2.0]) * [0.5, 4.0]
                                                    + [3.0, -4.0] - 1) / [0.5, 4.0])
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 + 2 / np.array([0.5, 4.0]))
    i = torch.tensor([250, 3], dtype=torch.uint8)
    assert (i + i).tolist() == [244, 6]  # two uint8 tensors: uint8 wraps, as PyTorch does
    assert (i + 10).tolist() == [4, 13] and (i + 10).dtype == torch.uint8
    assert (x.detach() > y.detach()).dtype == torch.bool
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        x + torch.ones(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        torch.tensor([True]) - torch.tensor([False])
    w = torch.zeros(3, requires_grad=True).clone()
    v = w[1:]
    w.mul_(2)  # the view's node is stale: the one rule (needs_grad) refreshes it
    assert (v + v).grad_fn.name() == "AddBackward0" and torch.tanh(v).grad_fn is not None
    (v + v).sum().backward()
