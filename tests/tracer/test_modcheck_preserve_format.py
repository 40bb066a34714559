"""memory_format=torch.preserve_format as PyTorch 2.13's empty_like rule (the strides below
were read from PyTorch 2.13 by hand): a dense non-overlapping input keeps its strides, any
other input keeps the order of its strides, densely (infer_dense_strides). The creation-like
ops follow it (*_like, clone, to); contiguous() does not. A leaf's .grad follows its leaf's
layout (PyTorch's gradient layout contract), so optimizer state made from it does too."""
import numpy as np
import pytest

import fusetorch as torch

CASES = {  # name: (make, PyTorch's strides of a preserve_format copy)
    "transposed_3d": (lambda: torch.randn(2, 3, 4).transpose(0, 2), (1, 4, 12)),
    "sliced": (lambda: torch.randn(2, 3, 8)[:, :, ::2], (12, 4, 1)),
    "transposed_2d": (lambda: torch.randn(4, 3).t(), (1, 3)),
    "permuted_4d": (lambda: torch.randn(2, 3, 4, 5).permute(0, 2, 3, 1), (60, 5, 1, 20)),
    "channels_last": (lambda: torch.randn(2, 3, 4, 5).contiguous(
        memory_format=torch.channels_last), (60, 1, 15, 3)),
    "size_1_dim": (lambda: torch.randn(3, 1, 4).transpose(0, 2), (1, 4, 4)),
    "expanded": (lambda: torch.randn(3, 1).expand(3, 4), (4, 1)),
    "sliced_transposed": (lambda: torch.randn(4, 6)[:, ::2].t(), (1, 3)),
    "sliced_permuted_4d": (lambda: torch.randn(2, 5, 4, 3).permute(0, 3, 1, 2)[:, :, :, ::2],
                           (30, 1, 6, 3)),
}

COPIES = {
    "empty_like": lambda t: torch.empty_like(t),
    "zeros_like": lambda t: torch.zeros_like(t),
    "ones_like": lambda t: torch.ones_like(t, memory_format=torch.preserve_format),
    "full_like": lambda t: torch.full_like(t, 2.0),
    "rand_like": lambda t: torch.rand_like(t),
    "randn_like": lambda t: torch.randn_like(t),
    "clone": lambda t: t.clone(),
    "torch.clone(preserve)": lambda t: torch.clone(t, memory_format=torch.preserve_format),
    "to(dtype)": lambda t: t.to(torch.float64),
    "to(copy)": lambda t: t.to(torch.float32, copy=True),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("copy", COPIES)
def test_preserve_format_copies_keep_pytorchs_strides(case, copy):
    make, strides = CASES[case]
    t = make()
    r = COPIES[copy](t)
    assert r.stride() == strides and r.shape == t.shape
    if copy in ("clone", "torch.clone(preserve)", "to(dtype)", "to(copy)"):
        np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("case", CASES)
def test_contiguous_is_contiguous(case):
    t = CASES[case][0]()
    c = t.contiguous()
    assert c.is_contiguous()
    np.testing.assert_array_equal(c.numpy(), t.numpy())


def test_a_leafs_grad_has_the_leafs_layout():
    x = torch.randn(5, 3)
    lin = torch.nn.Linear(3, 4)
    lin(x).sum().backward()  # a matmul's weight gradient is computed as a transposed view
    assert lin.weight.grad.stride() == (3, 1)
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.ones((5, 4)).T @ x.numpy(),
                               rtol=1e-6)
    w = torch.randn(3, 4).t().requires_grad_()  # a transposed leaf keeps its grad transposed
    (x @ w.t()).sum().backward()
    assert w.grad.stride() == w.stride() == (1, 4)
    cl = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    cl.requires_grad_()
    (cl * 2).sum().backward()
    assert cl.grad.stride() == cl.stride()
    np.testing.assert_array_equal(cl.grad.numpy(), np.full((2, 3, 4, 5), 2.0))


def test_optimizer_state_follows_its_parameter():
    lin = torch.nn.Linear(3, 4)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        lin(torch.randn(5, 3)).sum().backward()
        opt.step()
    assert opt.state[lin.weight]["momentum_buffer"].stride() == lin.weight.stride() == (3, 1)


def test_a_traced_backward_gives_a_row_major_leaf_a_row_major_grad():
    # a backward run under a trace (compile's first call of a training step) can hand a leaf
    # a transposed array that is no view; its first .grad still takes the leaf's layout, so the
    # optimizer state cloned from it lets compiled steps update the parameter in place
    from fusetorch.tracer.trace import trace
    w = torch.randn(3, 16, requires_grad=True)
    g = torch.from_numpy(np.asfortranarray(np.arange(48.0, dtype=np.float32).reshape(3, 16)))
    assert g.stride() == (1, 3)
    with trace(w):
        (w * 1.0).backward(g)
    assert w.grad.stride() == (16, 1)
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(48.0).reshape(3, 16))
