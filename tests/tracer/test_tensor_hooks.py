"""Tensor.register_hook (leaf tensors) and register_post_accumulate_grad_hook, and the order in
which backward finishes leaves (the order DistributedDataParallel's buckets rely on)."""
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
    with pytest.raises(NotImplementedError):
        (a * 2).register_hook(lambda g: g)


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
