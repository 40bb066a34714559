"""Autograd's backward cache keys a recorded forward by its structural identity
(ir/identity.py): structures Python finds equal but that differentiate differently are two
entries, and a loop over one structure differentiates once."""
from collections import OrderedDict

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.ir.graph import Graph, toposort
from fusetorch.tracer import autograd as A


@pytest.mark.parametrize("scales", [(-0.0, 0.0, -0.0), (0.0, -0.0, 0.0)])
def test_a_signed_zero_scale_keeps_its_sign_in_the_gradient(scales):
    # d(x * s)/dx = s: the backward graph holds s, so 0.0 and -0.0 must not share one
    for s in scales:
        x = torch.ones(3, requires_grad=True)
        (x * s).sum().backward()
        g = x.grad.numpy()
        assert np.array_equal(g, np.full(3, s)) and np.all(np.signbit(g) == np.signbit(s)), (s, g)


def _recorded(fn):
    x = torch.ones(2, 3, requires_grad=True)
    out = fn(x)
    return toposort([out._node]), x._node, out._node


@pytest.mark.parametrize("fa, fb, same", [
    (lambda x: (x * 0.0).sum(), lambda x: (x * -0.0).sum(), False),
    (lambda x: (x * 2.0).exp().sum(), lambda x: (x * 2.0).exp().sum(), True),
    (lambda x: x.sum(1, keepdim=True), lambda x: x.sum(1, keepdim=False), False),
    (lambda x: x.sum(1), lambda x: x.sum(0), False),
    (lambda x: (x + float("nan")).sum(), lambda x: (x + float("nan")).sum(), True),
])
def test_the_cache_key_agrees_with_the_structural_hash(fa, fb, same):
    (oa, xa, ra), (ob, xb, rb) = _recorded(fa), _recorded(fb)
    ka, _ = A._structure_key(oa, [xa], [])
    kb, _ = A._structure_key(ob, [xb], [])
    assert ka is not None and kb is not None
    assert (ka == kb) == same
    ga, gb = Graph([xa], [ra]), Graph([xb], [rb])
    assert (ga.structural_hash() == gb.structural_hash()) == same


def test_a_loop_over_one_structure_differentiates_once(monkeypatch):
    derived = []
    monkeypatch.setattr(A, "_CACHE", OrderedDict())
    orig = A.backward_graph
    monkeypatch.setattr(A, "backward_graph", lambda *a: derived.append(1) or orig(*a))
    w = torch.randn(4, 3, requires_grad=True)
    for step in range(4):
        x = torch.randn(5, 4)
        (x.mm(w).relu() * 0.5 + float(step)).sum().backward()  # a new constant each step...
    assert len(derived) == 4  # ...is a new structure each step
    for _ in range(4):
        (torch.randn(5, 4).mm(w).relu() * 0.5 + 1.0).sum().backward()
    assert len(derived) == 4  # (1.0 was seen at step 1)


def test_a_cached_plan_does_not_keep_its_forward_graph_alive():
    """The cache keys structures, not graphs: once the user drops an output differentiated
    with retain_graph=True, its forward nodes and their saved arrays go (the cached plan held
    the first graph of each structure, up to 256 of them, with their activations)."""
    import gc
    import weakref

    x = torch.randn(64, 64, dtype=torch.float64, requires_grad=True)
    t = (x @ x).tanh()  # (its output is saved: the value tanh's gradient reads)
    y = t.sum()
    torch.autograd.grad(y, x, retain_graph=True)
    y.backward(retain_graph=True)
    node = weakref.ref(t._node)
    del t, y
    gc.collect()
    assert node() is None
    z = (x @ x).tanh().sum()  # the same structure: the cached plan still serves it
    g, = torch.autograd.grad(z, x)
    xv = x.detach().numpy()
    t = np.tanh(xv @ xv)
    d = 1 - t ** 2
    np.testing.assert_allclose(g.numpy(), d @ xv.T + xv.T @ d, rtol=1e-10)
