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


class _Spy:
    """A run_graph hook noting, as each node starts, which watched arrays are still alive."""

    def __init__(self, refs):
        self.refs, self.alive = refs, []

    def begin(self, node):
        self.alive.append((node.op, [r() is not None for r in self.refs]))

    def end(self, node, value):
        pass


def _chain():
    from fusetorch.ir import dtypes as dt
    from fusetorch.ir.graph import Graph, make_node
    a = make_node("input", [], {"shape": (4,), "dtype": dt.float32})
    b = make_node("input", [], {"shape": (4,), "dtype": dt.float32})
    first = make_node("mul", [a, a], {})  # a's last reader
    second = make_node("add", [first, b], {})
    third = make_node("neg", [second], {})
    return Graph([a, b], [third, b])  # b is also an output: never let go


@pytest.mark.parametrize("consume", [False, True])
def test_handed_over_inputs_go_after_their_last_reader(consume):
    import weakref
    from fusetorch.runtime.eager import make_table
    from fusetorch.runtime.runner import run_graph
    arrays = [np.ones(4, np.float32), np.full(4, 2, np.float32)]
    spy = _Spy([weakref.ref(x) for x in arrays])
    out, b = run_graph(_chain(), arrays, make_table(np), np, hook=spy, consume=consume)
    np.testing.assert_array_equal(out, -np.full(4, 3.0))
    assert (arrays == []) is consume
    assert spy.alive[0] == ("mul", [True, True])
    assert spy.alive[-1] == ("neg", [not consume, True])  # a: dead once mul has read it


def test_backward_without_retain_graph_lets_saved_values_go():
    import weakref
    x = torch.randn(64, 64, requires_grad=True)
    w = torch.randn(64, 64, requires_grad=True)
    h = x @ w
    ref = weakref.ref(h._data)
    y = (h * h).sum()
    del h
    for _ in range(2):  # interpreted, then compiled
        y.backward(retain_graph=True)
    assert ref() is not None  # retained: the graph keeps its saved values
    y.backward()
    assert ref() is None
    xd, wd = (t.detach().numpy().astype(np.float64) for t in (x, w))
    want = 3 * 2 * (xd @ wd) @ wd.T
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-5 * abs(want).max())
