"""Tensor.register_hook (leaf and non-leaf tensors) and register_post_accumulate_grad_hook, and
the order in which backward finishes leaves (the order DistributedDataParallel's buckets rely
on). Values written literally were observed by hand in PyTorch 2.13.0 (CPU)."""
import re

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.tracer import autograd


def test_register_hook_replaces_gradient_before_accumulation():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    h = a.register_hook(lambda g: g * 10)
    (a * a).sum().backward()                      # d/da = 2a
    np.testing.assert_allclose(a.grad.numpy(), [20.0, 40.0])
    h.remove()
    a.register_hook(lambda g: None)               # None keeps the gradient
    (a * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [22.0, 44.0])


def test_register_hook_applies_to_autograd_grad():
    a = torch.tensor([3.0], requires_grad=True)
    a.register_hook(lambda g: g + 1)
    (g,) = torch.autograd.grad((a * a).sum(), a)
    np.testing.assert_allclose(g.numpy(), [7.0])
    assert a.grad is None


def test_post_accumulate_hook_sees_accumulated_grad():
    a = torch.tensor([1.0, -1.0], requires_grad=True)
    seen = []
    h = a.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.numpy().copy()))
    (3 * a).sum().backward()
    (3 * a).sum().backward()
    np.testing.assert_allclose(seen, [[3.0, 3.0], [6.0, 6.0]])
    h.remove()
    (3 * a).sum().backward()
    assert len(seen) == 2


def test_hook_errors_as_pytorch():
    a = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (a * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    for bad, err, msg in [(lambda g: g[:1], RuntimeError, "hook 'bad' has changed the size of "
                                                           "value"),
                          (lambda g: 5, TypeError, "expected Variable, but hook returned 'int'"),
                          (lambda g: g.double(), RuntimeError, "hook 'bad' has changed the type "
                           "of value (was torch.FloatTensor got torch.DoubleTensor)")]:
        bad.__name__ = "bad"
        for t in (a, a * 2):  # leaf and non-leaf
            h = t.register_hook(bad)
            with pytest.raises(err, match="^" + re.escape(msg) + "$"):
                (t * 1).sum().backward()
            h.remove()


def test_non_leaf_hook_sees_the_whole_gradient_and_replaces_it():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(("y", g.numpy().copy())) or g * 10)
    z = y * y
    z.register_hook(lambda g: seen.append(("z", g.numpy().copy())))  # None: kept
    (z.sum() + y.sum()).backward()  # y's gradient: 2y from z, 1 from the sum
    assert [s[0] for s in seen] == ["z", "y"]  # nearest the loss first
    np.testing.assert_array_equal(seen[1][1], [5.0, 9.0, 13.0])
    np.testing.assert_array_equal(x.grad.numpy(), [100.0, 180.0, 260.0])


def test_non_leaf_hooks_in_order_with_retain_grad_and_inputs():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: g * 10)  # registration order
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [100.0, 180.0, 260.0])
    z = x * 6
    z.retain_grad()
    z.register_hook(lambda g: g * 2)
    x.grad = None
    z.sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), [2.0, 2.0, 2.0])  # after the hook
    np.testing.assert_array_equal(x.grad.numpy(), [12.0, 12.0, 12.0])
    w = x * 2
    w.register_hook(lambda g: g * 2)
    torch.autograd.backward(w.sum(), inputs=[w])
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])
    (g,) = torch.autograd.grad((w * w).sum(), x)  # autograd.grad runs them too
    np.testing.assert_array_equal(g.numpy(), [16.0, 32.0, 48.0])


def test_non_leaf_hook_on_the_root_nan_cleaning_and_removal():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = (x * 2).sum()
    s.register_hook(lambda g: g * 7)
    s.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [14.0, 14.0, 14.0])
    x.grad = None
    y = x * 0
    y.register_hook(torch.nan_to_num)  # 0 * log(0) = nan: the hook cleans y's gradient
    (y.log() * 0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    x.grad = None
    y = x * 2
    y.register_hook(lambda g: g * 5).remove()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_non_leaf_hook_stays_with_the_value_it_was_registered_on():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(("before", g.numpy().copy())) or g * 0)
    y.mul_(3)
    y.register_hook(lambda g: seen.append(("after", g.numpy().copy())))
    (y * y).sum().backward()
    assert seen[0][0] == "after" and seen[1][0] == "before"
    np.testing.assert_array_equal(seen[0][1], [12.0, 24.0, 36.0])
    np.testing.assert_array_equal(seen[1][1], [36.0, 72.0, 108.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_non_leaf_hook_with_create_graph():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.register_hook(lambda g: g * y)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [2.0, 16.0, 54.0])
    g.sum().backward()  # through y's node again: its hook runs again (PyTorch)
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 72.0, 342.0])


def test_non_leaf_hook_gradcheck():
    from fusetorch.autograd import gradcheck

    def f(a):
        y = a.sin()
        if y.requires_grad:  # (not under gradcheck's no_grad finite differences)
            y.register_hook(lambda g: g * 1.0)  # replaces it by an equal tensor
        return (y * a).cumsum(0)
    assert gradcheck(f, (torch.tensor(np.linspace(-1, 1, 5), dtype=torch.float64,
                                      requires_grad=True),))


def test_leaves_finish_last_used_first_then_callbacks_run():
    w1 = torch.randn(3, 4, requires_grad=True)
    w2 = torch.randn(4, 2, requires_grad=True)
    events = []
    w1.register_post_accumulate_grad_hook(lambda p: events.append("w1"))

    def on_w2(p):
        events.append("w2")
        autograd.queue_callback(lambda: events.append("done"))
    w2.register_post_accumulate_grad_hook(on_w2)
    (torch.randn(5, 3) @ w1 @ w2).sum().backward()
    assert events == ["w2", "w1", "done"]


def test_failing_hook_drops_queued_callbacks():
    a = torch.ones(1, requires_grad=True)
    ran = []

    def bad(p):
        autograd.queue_callback(lambda: ran.append(1))
        raise ValueError("boom")
    h = a.register_post_accumulate_grad_hook(bad)
    with pytest.raises(ValueError):
        (a * 2).sum().backward()
    h.remove()
    (a * 2).sum().backward()
    assert ran == []
