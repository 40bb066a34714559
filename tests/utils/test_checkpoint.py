"""torch.utils.checkpoint: gradients equal the plain call's (backward, autograd.grad, closure
parameters, dropout with the random state preserved, double backward), the activations are
really dropped after forward and recomputed in backward, and PyTorch 2.13's warnings and
errors (use_reentrant not passed, keyword arguments with the reentrant variant, inputs that
do not require grad)."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

REENTRANT = [True, False]


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8),
                         nn.GELU(), nn.Linear(8, 3))


def grads(m, x):
    return [p.grad.numpy().copy() for p in m.parameters()] + [x.grad.numpy().copy()]


def reference(m, x, seed=1):
    torch.manual_seed(seed)
    y = m(x)
    (y ** 2).sum().backward()
    out = y.detach().numpy().copy(), grads(m, x)
    m.zero_grad()
    x.grad = None
    return out


def same(a, b):
    return all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("use_reentrant", REENTRANT)
def test_gradients_equal_the_plain_call(use_reentrant):
    m = model()
    x = torch.randn(5, 4, requires_grad=True)
    y_ref, g_ref = reference(m, x)
    torch.manual_seed(1)
    y = checkpoint(m, x, use_reentrant=use_reentrant)
    assert np.array_equal(y.detach().numpy(), y_ref)
    (y ** 2).sum().backward()
    assert same(grads(m, x), g_ref)  # dropout's mask was drawn again from the same state


@pytest.mark.parametrize("segments", [1, 2, 3, 6])
@pytest.mark.parametrize("use_reentrant", REENTRANT)
def test_checkpoint_sequential(segments, use_reentrant):
    m = model()
    x = torch.randn(5, 4, requires_grad=True)
    y_ref, g_ref = reference(m, x)
    torch.manual_seed(1)
    y = checkpoint_sequential(m, segments, x, use_reentrant=use_reentrant)
    assert np.array_equal(y.detach().numpy(), y_ref)
    (y ** 2).sum().backward()
    assert same(grads(m, x), g_ref)
    # a list of callables works the same
    torch.manual_seed(1)
    y = checkpoint_sequential(list(m), segments, x, use_reentrant=use_reentrant,
                              preserve_rng_state=True)
    assert np.array_equal(y.detach().numpy(), y_ref)


def test_autograd_grad_reaches_closure_parameters():
    m = model()
    x = torch.randn(5, 4, requires_grad=True)
    _, g_ref = reference(m, x)
    torch.manual_seed(1)
    y = checkpoint(lambda a: m(a), x, use_reentrant=False)
    got = torch.autograd.grad((y ** 2).sum(), list(m.parameters()) + [x])
    assert same([g.numpy() for g in got], g_ref)


def test_activations_are_dropped_and_recomputed():
    calls = []
    inner = {}

    def block(a):
        calls.append(1)
        h = a.exp() * 3.0  # mul saves h's value... only until checkpoint drops it
        inner["h"] = weakref.ref(h._data)
        return (h * h).sum(dim=1)

    x = torch.randn(3, 4, requires_grad=True)
    plain = block(x)
    gc.collect()
    assert inner["h"]() is not None  # the plain graph keeps its activation alive
    y = checkpoint(block, x, use_reentrant=False)
    gc.collect()
    assert inner["h"]() is None and len(calls) == 2  # dropped after forward
    y.sum().backward()
    assert len(calls) == 3  # recomputed in backward
    g = x.grad.numpy().copy()
    x.grad = None
    plain.sum().backward()
    assert np.allclose(g, x.grad.numpy(), rtol=1e-6)


def test_preserve_rng_state_false_draws_anew():
    def noisy(a):
        return a * torch.rand(a.shape)

    x = torch.ones(1000, requires_grad=True)
    torch.manual_seed(3)
    y = checkpoint(noisy, x, use_reentrant=False)
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), y.detach().numpy())  # the same random numbers
    x.grad = None
    y = checkpoint(noisy, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()  # the recomputation drew new numbers: its gradient is another draw
    assert not np.array_equal(x.grad.numpy(), y.detach().numpy())


def test_random_state_around_recomputation_is_the_callers():
    x = torch.ones(4, requires_grad=True)
    torch.manual_seed(5)
    y = checkpoint(lambda a: a * torch.rand(4), x, use_reentrant=False)
    state_draw = torch.rand(2)
    torch.manual_seed(5)
    torch.rand(4)
    assert np.array_equal(torch.rand(2).numpy(), state_draw.numpy())
    torch.manual_seed(9)
    y.sum().backward()  # recomputes with seed 5's state, then gives the seed-9 state back
    after = torch.rand(2)
    torch.manual_seed(9)
    assert np.array_equal(torch.rand(2).numpy(), after.numpy())


def test_use_reentrant_warnings_are_pytorchs():
    x = torch.randn(3, requires_grad=True)
    with pytest.warns(UserWarning) as rec:
        checkpoint(torch.sin, x)
    assert [str(w.message) for w in rec] == [
        "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
        "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
        "exception. use_reentrant=False is recommended, but if you need to preserve the "
        "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
        "details on the differences between the two variants."]
    with pytest.warns(UserWarning) as rec:
        checkpoint_sequential([torch.sin, torch.cos], 2, x)
    assert [str(w.message) for w in rec] == [
        "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
        "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
        "passed. use_reentrant=False is recommended, but if you need to preserve the current "
        "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
        "the differences between the two variants."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(torch.sin, x, use_reentrant=True)
        checkpoint(torch.sin, x, use_reentrant=False)
        checkpoint_sequential([torch.sin, torch.cos], 2, x, use_reentrant=False)


def test_reentrant_variant_refusals_and_inputs_without_grad():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: b,c$"):
        checkpoint(lambda a, b, c: a * b, x, b=2.0, c=1, use_reentrant=True)
    y = checkpoint(lambda a, b: a * b, x, b=2.0, use_reentrant=False)
    assert np.allclose(y.detach().numpy(), 2 * x.detach().numpy())
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(torch.sin, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: other$"):
        checkpoint_sequential([torch.sin], 1, x, use_reentrant=False, other=1)
    lin = nn.Linear(3, 2)
    with pytest.warns(UserWarning, match="^None of the inputs have requires_grad=True. "
                                         "Gradients will be None$"):
        out = checkpoint(lin, torch.randn(3), use_reentrant=True)
    assert not out.requires_grad  # as PyTorch's reentrant Function: no graph at all
    out = checkpoint(lin, torch.randn(3), use_reentrant=False)
    assert out.requires_grad


def test_tuple_outputs_kwargs_and_context_fn():
    entered = []

    class Mark:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            entered.append(self.name)

        def __exit__(self, *exc):
            return False

    def two(a, scale=1.0):
        return a.sin() * scale, (a * a).sum()

    x = torch.randn(4, requires_grad=True)
    s, t = checkpoint(two, x, scale=2.0, use_reentrant=False,
                      context_fn=lambda: (Mark("forward"), Mark("recompute")))
    (s.sum() + t).backward()
    assert entered == ["forward", "recompute"]
    xd = x.detach().numpy()
    assert np.allclose(x.grad.numpy(), 2 * np.cos(xd) + 2 * xd)


def test_double_backward_through_checkpoint():
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = checkpoint(lambda a: (a ** 3).sum(), x, use_reentrant=False)
    g, = torch.autograd.grad(y, x, create_graph=True)
    h, = torch.autograd.grad(g.sum(), x)
    assert np.allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    assert np.allclose(h.numpy(), 6 * x.detach().numpy())


def test_nested_checkpoints_and_retain_graph():
    m = model()
    x = torch.randn(5, 4, requires_grad=True)
    _, g_ref = reference(m, x)

    def outer(a):
        h = checkpoint(lambda b: m[1](m[0](b)), a, use_reentrant=False)
        return checkpoint(lambda b: m[5](m[4](m[3](m[2](b)))), h, use_reentrant=False)

    torch.manual_seed(1)
    y = checkpoint(outer, x, use_reentrant=False)
    loss = (y ** 2).sum()
    loss.backward(retain_graph=True)
    assert same(grads(m, x), g_ref)
    m.zero_grad()
    x.grad = None
    loss.backward()
    assert same(grads(m, x), g_ref)


def test_inputs_modified_in_place_and_nondeterministic_functions_raise():
    x = torch.randn(3, requires_grad=True)
    a = x * 1.0
    y = checkpoint(torch.exp, a, use_reentrant=False)
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    calls = []

    def shifty(b):
        calls.append(1)
        return (b[: len(calls) + 1] ** 2).sum()

    y = checkpoint(shifty, torch.randn(4, requires_grad=True), use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata than during the forward"):
        y.backward()
    calls.clear()
    y = checkpoint(lambda b: b.exp().sum() if calls.append(1) or len(calls) == 1
                   else b.sin().sum(), torch.randn(4, requires_grad=True), use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.backward()


def test_without_grad_it_just_runs():
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        y = checkpoint(torch.sin, x, use_reentrant=False)
    assert not y.requires_grad and np.allclose(y.numpy(), np.sin(x.detach().numpy()))
