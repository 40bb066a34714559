"""A node that saves its own output holds that tensor weakly (tracer/autograd._saved_output):
the tensor holds the node, so a strong reference was a cycle only the cyclic collector freed.
Backward, in-place checks, saved-tensor hooks and in-place writes after the tensor is gone
behave as before."""
import gc

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd.graph import saved_tensors_hooks


def _x():
    return torch.tensor(np.linspace(-1.5, 2.0, 12).reshape(3, 4), requires_grad=True)


@pytest.mark.parametrize("op", ["tanh", "exp", "sigmoid", "softmax"])
def test_recorded_ops_leave_no_cyclic_garbage(op):
    x = _x()
    f = (lambda: x.softmax(1)) if op == "softmax" else (lambda: getattr(torch, op)(x))
    for _ in range(5):
        f()
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            f()
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_gradient_through_an_output_whose_tensor_is_gone():
    x = _x()
    loss = (torch.tanh(x) * 2.0).sum()  # (the tanh tensor itself is freed at once)
    loss.backward()
    a = np.linspace(-1.5, 2.0, 12).reshape(3, 4)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (1.0 - np.tanh(a) ** 2), rtol=1e-6)


def test_in_place_write_to_a_saved_output_is_still_refused():
    x = _x()
    y = x.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_pack_hook_sees_the_output_tensor_itself():
    x = _x()
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        y = x.exp()
    assert any(t is y for t in packed)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.linspace(-1.5, 2.0, 12)).reshape(3, 4),
                               rtol=1e-6)


def test_create_graph_through_a_saved_output():
    x = _x()
    (g,) = torch.autograd.grad(torch.tanh(x).sum(), x, create_graph=True)
    g.sum().backward()  # d/dx sum(1 - tanh^2) = -2 tanh (1 - tanh^2)
    t = np.tanh(np.linspace(-1.5, 2.0, 12).reshape(3, 4))
    np.testing.assert_allclose(x.grad.numpy(), -2.0 * t * (1.0 - t ** 2), rtol=1e-5, atol=1e-7)


def test_compiled_step_whose_intermediates_die_before_backward():
    # the traced backward reads tanh's and exp's outputs, which the step drops at once: the
    # trace must still know them (a stale value as a graph input would replay the first call's)
    w0 = np.linspace(-0.5, 0.5, 12).reshape(4, 3)

    def step(x, w):
        loss = (torch.tanh(x @ w).exp() * 0.5).sum()
        loss.backward()
        return loss

    compiled = torch.compile(step)
    rng = np.random.default_rng(3)
    for _ in range(4):
        a = rng.standard_normal((5, 4))
        we, wc = (torch.tensor(w0, requires_grad=True) for _ in range(2))
        want = step(torch.tensor(a), we)
        got = compiled(torch.tensor(a), wc)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
        np.testing.assert_allclose(wc.grad.numpy(), we.grad.numpy(), rtol=1e-10)
