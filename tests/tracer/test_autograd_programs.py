"""Whole programs on autograd: the tutorial seed, the two-layer network trained with raw autograd
(plain ops and a custom Function), checked step by step against a hand-written numpy float64
forward and backward, and memory: a long training loop does not grow, and backward releases the
values it saved.

PyTorch's printed forms were observed by hand in PyTorch 2.13.0 (CPU); torch is not imported.
"""
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import Tensor
from fusetorch.ir.graph import Node

N, D_IN, H, D_OUT = 64, 1000, 100, 10
LR = 1e-6


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def plain_relu(h):
    return h.clamp(min=0)


# ---------------------------------------------------------------- the tutorial seed

def test_tutorial_seed():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    assert repr(y).endswith("grad_fn=<AddBackward0>)")
    assert repr(z).endswith("grad_fn=<MulBackward0>)")
    assert repr(out) == "tensor(27., grad_fn=<MeanBackward0>)"
    out.backward()
    # out = mean(3 (x+2)^2): d/dx = 6 (x+2) / 4 = 4.5 at x = 1
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 4.5), rtol=1e-7)
    assert repr(x.grad) == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"


def test_tutorial_vector_jacobian_product():
    # y = x * 2^k doubled until its norm passes 1000; v^T J = 2^k v
    xv = np.array([0.3, -1.2, 0.5], dtype=np.float32)
    x = torch.tensor(xv, requires_grad=True)
    y = x * 2
    k = 1
    while y.data.pow(2).sum().sqrt() < 1000:
        y = y * 2
        k += 1
    assert k == int(np.ceil(np.log2(1000 / np.linalg.norm(xv.astype(np.float64)))))
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
    y.backward(v)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 ** k * v.numpy(), rtol=1e-6)


# ---------------------------------------------------------------- the two-layer network

def _data():
    torch.manual_seed(0)
    x = torch.randn(N, D_IN)
    y = torch.randn(N, D_OUT)
    w1 = torch.randn(D_IN, H, requires_grad=True)
    w2 = torch.randn(H, D_OUT, requires_grad=True)
    return x, y, w1, w2


def _train(relu, steps, x, y, w1, w2, every=1):
    losses, weights = [], []
    for t in range(steps):
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= LR * w1.grad
            w2 -= LR * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
        if t < every:
            weights.append((w1.detach().numpy().copy(), w2.detach().numpy().copy()))
    return losses, weights


def _numpy_steps(x, y, w1, w2, steps):
    """The same network and updates by hand in float64."""
    x, y, w1, w2 = (a.astype(np.float64) for a in (x, y, w1, w2))
    out, losses = [], []
    for _ in range(steps):
        h = x @ w1
        h_relu = np.maximum(h, 0)
        y_pred = h_relu @ w2
        losses.append(((y_pred - y) ** 2).sum())
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.T @ grad_y_pred
        grad_h_relu = grad_y_pred @ w2.T
        grad_h = grad_h_relu.copy()
        grad_h[h < 0] = 0
        grad_w1 = x.T @ grad_h
        w1 = w1 - LR * grad_w1
        w2 = w2 - LR * grad_w2
        out.append((w1, w2))
    return losses, out


@pytest.mark.parametrize("relu", [plain_relu, MyReLU.apply], ids=["clamp", "MyReLU"])
def test_two_layer_net_first_steps_match_numpy(relu):
    x, y, w1, w2 = _data()
    start = [w.detach().numpy().astype(np.float64) for w in (w1, w2)]
    ref_losses, ref = _numpy_steps(x.numpy(), y.numpy(), start[0], start[1], 3)
    losses, weights = _train(relu, 3, x, y, w1, w2, every=3)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for got, want in zip(weights, ref):
        for a, r, s0 in zip(got, want, start):
            np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-5)
            # the update itself (w - w0), which is small next to w: within float32 rounding of
            # w plus a small relative error of the step
            step, ref_step = a - s0, r - s0
            assert np.abs(ref_step).max() > 1e-2  # the step is far above float32 rounding
            np.testing.assert_allclose(step, ref_step,
                                       atol=4e-7 * np.abs(s0).max() + 1e-4 * np.abs(ref_step).max())


@pytest.mark.parametrize("relu", [plain_relu, MyReLU.apply], ids=["clamp", "MyReLU"])
def test_two_layer_net_trains(relu):
    x, y, w1, w2 = _data()
    losses, _ = _train(relu, 500, x, y, w1, w2)
    assert all(np.isfinite(losses))
    assert losses[0] > 1e6  # the tutorial's starting point: random weights, loss ~ 1e7
    assert losses[-1] < losses[0] * 1e-4  # several orders of magnitude lower
    assert losses[-1] < losses[100] < losses[10]
    assert w1.is_leaf and w2.is_leaf and w1.requires_grad and w2.requires_grad


def test_custom_and_plain_relu_train_alike():
    a = _train(plain_relu, 20, *_data())[0]
    b = _train(MyReLU.apply, 20, *_data())[0]
    np.testing.assert_allclose(a, b, rtol=1e-5)


# ---------------------------------------------------------------- memory

def _small_loop(steps, checkpoints):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 20, generator=g)
    y = torch.randn(16, 3, generator=g)
    w1 = torch.randn(20, 8, generator=g, requires_grad=True)
    w2 = torch.randn(8, 3, generator=g, requires_grad=True)
    found = {}
    for t in range(1, steps + 1):
        h = MyReLU.apply(x.mm(w1)) if t % 2 else x.mm(w1).clamp(min=0)
        loss = (h.mm(w2) - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            w1 -= 1e-4 * w1.grad
            w2 -= 1e-4 * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
        if t in checkpoints:
            del h, loss
            found[t] = checkpoints[t]()
    return found


def _object_counts():
    gc.collect()
    objs = gc.get_objects()
    return sum(isinstance(o, Tensor) for o in objs), sum(isinstance(o, Node) for o in objs)


def test_training_loop_object_counts_do_not_grow():
    found = _small_loop(1000, {100: _object_counts, 1000: _object_counts})
    tensors100, nodes100 = found[100]
    tensors1000, nodes1000 = found[1000]
    # a leaked graph per step would add ~1 tensor and ~3 nodes each step: hundreds by step 1000
    assert tensors1000 <= tensors100 + 2
    assert nodes1000 <= nodes100 + 2


def test_training_loop_memory_does_not_grow():
    def traced():
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        found = _small_loop(1000, {100: traced, 1000: traced})
    finally:
        tracemalloc.stop()
    # one leaked step would keep ~ a dozen arrays and nodes (several KiB); 900 steps far more
    assert found[1000] - found[100] < 16 * 1024, found


def test_backward_releases_saved_values():
    w = torch.randn(50, requires_grad=True)
    r = w.exp()  # exp saves its output
    ref = weakref.ref(r._data)
    loss = (r * 3).sum()
    del r
    gc.collect()
    assert ref() is not None  # held by the graph for backward
    loss.backward()
    gc.collect()
    assert ref() is None  # released although `loss` and its graph are still alive
    assert loss.grad_fn is not None


def test_retain_graph_keeps_saved_values_until_last_backward():
    w = torch.randn(50, requires_grad=True)
    h = w.sin()  # sin saves its input w; h * h saves h
    ref = weakref.ref(h._data)
    loss = (h * h).sum()
    del h
    loss.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    loss.backward()
    gc.collect()
    assert ref() is None


def test_dropping_graph_without_backward_releases_values():
    w = torch.randn(50, requires_grad=True)
    h = w.sin()
    ref = weakref.ref(h._data)
    loss = (h * h).sum()
    del h, loss
    gc.collect()
    assert ref() is None


def test_custom_function_releases_saved_tensors():
    w = torch.randn(50, requires_grad=True)
    h = w * 2
    ref = weakref.ref(h._data)
    loss = MyReLU.apply(h).sum()
    del h
    gc.collect()
    assert ref() is not None  # ctx.save_for_backward holds it
    loss.backward()
    gc.collect()
    assert ref() is None
