"""Loop ops whose fixed costs were cut (issue 29, item 1): the target check of nll_loss run
without a dispatch when no graph can hold it, max/min(dim)'s pair, the in-range fast answers
of norm_dim and of plain int sizes, and the collector's freeze at import. Each must keep what
the longer form gave: values against numpy in float64, gradients against central differences,
PyTorch's errors, names and printed forms (checked by hand against PyTorch 2.13)."""
import gc

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.ir.shapes import norm_dim


def _central(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _log_softmax(v: np.ndarray) -> np.ndarray:
    m = v.max(axis=-1, keepdims=True)
    return v - m - np.log(np.exp(v - m).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("shape,target", [((1, 7), [3]), ((7,), 0), ((3, 5), [4, 0, 4])])
def test_nll_loss_of_log_softmax_values_and_gradient(shape, target):
    a = np.random.default_rng(1).standard_normal(shape)
    t = np.array(target)
    x = torch.tensor(a, requires_grad=True)
    for _ in range(3):  # (a loop's repeated call: the same answer each time)
        loss = F.nll_loss(F.log_softmax(x, -1), torch.tensor(target))
    assert loss.grad_fn.name() == "NllLossBackward0"

    def f(v):
        lp = _log_softmax(v).reshape(-1, shape[-1])
        return -lp[np.arange(lp.shape[0]), t.reshape(-1)].mean()
    np.testing.assert_allclose(loss.item(), f(a), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), _central(f, a), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("grad", [True, False])
def test_nll_loss_target_out_of_range_raises_as_pytorch(grad):
    x = torch.randn(1, 5, requires_grad=grad).log_softmax(1)
    for bad in (5, -1):
        with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
            F.nll_loss(x, torch.tensor([bad]))
    with torch.no_grad():
        with pytest.raises(IndexError, match="^Target 7 is out of bounds.$"):
            F.nll_loss(x, torch.tensor([7]))
    # ignore_index is allowed whatever its value
    assert F.nll_loss(x, torch.tensor([-100])).isnan().item()


def test_a_checked_input_that_requires_grad_keeps_its_gradient():
    # binary_cross_entropy checks its input's values: the check is recorded, its gradient
    # passes through it
    a = np.array([[0.2, 0.7, 0.9]])
    y = np.array([[0.0, 1.0, 1.0]])
    p = torch.tensor(a, requires_grad=True)
    loss = F.binary_cross_entropy(p, torch.tensor(y))

    def f(v):
        return -(y * np.log(v) + (1 - y) * np.log(1 - v)).mean()
    np.testing.assert_allclose(loss.item(), f(a), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(p.grad.numpy(), _central(f, a), rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.tensor([[1.5]], requires_grad=True), torch.tensor([[1.0]]))


def test_a_compiled_loss_still_checks_its_targets_every_call():
    fn = torch.compile(lambda x, t: F.nll_loss(x, t))
    x = torch.randn(2, 4).log_softmax(1)
    fn(x, torch.tensor([1, 2]))
    fn(x, torch.tensor([3, 0]))
    with pytest.raises(IndexError, match="^Target 4 is out of bounds.$"):
        fn(x, torch.tensor([4, 0]))


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape,dim,keepdim", [((4, 6), 1, False), ((4, 6), 0, True),
                                                ((2, 3, 4), -1, False), ((5,), 0, False),
                                                ((), 0, False)])
def test_max_min_dim_values_indices_and_gradient(name, shape, dim, keepdim):
    a = np.random.default_rng(2).standard_normal(shape)
    if a.ndim == 2:
        a[1, :] = 0.5  # ties: the first index, as PyTorch's CPU kernel
    x = torch.tensor(a, requires_grad=True)
    r = getattr(torch, name)(x, dim, keepdim)
    assert type(r).__name__ == name and repr(r).startswith(f"torch.return_types.{name}(\n")
    values, indices = r
    assert r.values is values and r.indices is indices
    arg = np.argmax if name == "max" else np.argmin
    want_i = arg(a, axis=dim) if a.ndim else np.array(0)
    want_v = np.take_along_axis(a, np.expand_dims(want_i, dim), dim) if a.ndim else a
    if a.ndim and not keepdim:
        want_v = np.squeeze(want_v, dim)
    elif a.ndim:
        want_i = np.expand_dims(want_i, dim)
    np.testing.assert_array_equal(values.detach().numpy(), want_v)
    np.testing.assert_array_equal(indices.numpy(), want_i)
    assert indices.dtype is torch.int64
    assert values.grad_fn.name() == f"{name.capitalize()}Backward0"
    w = np.arange(1.0, values.numel() + 1).reshape(values.shape)
    (values * torch.tensor(w)).sum().backward()
    expect = np.zeros_like(a)  # the weight of each picked value, at its index only
    if a.ndim:
        np.put_along_axis(expect, want_i if keepdim else np.expand_dims(want_i, dim),
                          w if keepdim else np.expand_dims(w, dim), dim)
    else:
        expect = w
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_norm_dim_and_sizes_keep_pytorch_errors():
    assert norm_dim(1, 2) == 1 and norm_dim(-1, 2) == 1 and norm_dim(True, 2) == 1
    assert norm_dim(0, 0) == 0 and norm_dim(-1, 0) == 0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        norm_dim(2, 2)
    x = torch.randn(2, 3)
    assert tuple(x.view(3, 2).shape) == (3, 2)
    assert tuple(x.view([1, -1]).shape) == (1, 6)  # a list: the sizes as a tuple
    assert tuple(x.expand(4, 2, -1).shape) == (4, 2, 3)
    with pytest.raises(TypeError):  # (PyTorch's type; its text differs by spelling)
        x.view(1.0, -1)
    with pytest.raises(TypeError):
        x.expand(None)


def test_import_freezes_what_it_made_and_later_cycles_are_still_collected():
    assert gc.get_freeze_count() > 0

    class Cycle:
        pass
    c = Cycle()
    c.me = c
    t = torch.randn(3)
    c.t = t
    del c
    assert gc.collect() > 0  # the cycle (made after import) is found and freed
