"""Eager autograd saves only what the cotangents of the inputs needing grad read
(`OpDef.saves_for`), as PyTorch's generated autograd does: a frozen operand's partner is not
kept alive, and may be written in place before backward (PyTorch allows it too)."""
import numpy as np
import pytest

import fusetorch as torch


def _saved_arrays(t):
    return [e[0] for e in t._node.saved.values()]


@pytest.mark.parametrize("op", ["mul", "div", "matmul"])
def test_frozen_right_operand_keeps_no_left_operand(op):
    a = torch.randn(3, 3, requires_grad=True)
    h = a * 1  # a non-leaf, so an in-place write to it is legal
    w = torch.rand(3, 3) + 1
    r = {"mul": lambda: h * w, "div": lambda: h / w, "matmul": lambda: h @ w}[op]()
    assert not any(x is h._data for x in _saved_arrays(r))
    wd = w.numpy().astype(np.float64)
    h.add_(1)  # not saved: backward still runs, with the gradient w.r.t. a alone
    r.sum().backward()
    g = {"mul": lambda: wd, "div": lambda: 1 / wd,
         "matmul": lambda: np.ones((3, 3)) @ wd.T}[op]()
    np.testing.assert_allclose(a.grad.numpy(), g, rtol=1e-6)


def test_scalar_operand_keeps_nothing():
    x = torch.randn(4, requires_grad=True) * 1
    assert _saved_arrays(x * 0.5) == []


def test_frozen_left_operand_is_still_checked():
    a = torch.randn(3, requires_grad=True)
    h = a * 1
    w = torch.ones(3)
    r = w * h  # h's cotangent reads w: w is saved and version-checked
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()


def test_both_needing_grad_save_both():
    a = torch.randn(2, 3, requires_grad=True)
    b = torch.randn(3, 2, requires_grad=True)
    r = a @ b
    assert {id(x) for x in _saved_arrays(r)} == {id(a._data), id(b._data)}
    r.sum().backward()
    ad, bd = (t.detach().numpy().astype(np.float64) for t in (a, b))
    np.testing.assert_allclose(a.grad.numpy(), np.ones((2, 2)) @ bd.T, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), ad.T @ np.ones((2, 2)), rtol=1e-6)
