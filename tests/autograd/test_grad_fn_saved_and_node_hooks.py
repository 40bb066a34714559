"""grad_fn's saved values (`_saved_<name>`, `_raw_saved_<name>.register_hooks`), Node pre- and
post-hooks and register_multi_grad_hook, against PyTorch 2.13's behaviour as observed by hand
(names, identities, errors) and gradients derived by hand."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd.graph import register_multi_grad_hook


def test_saved_names_and_identities():
    x = (torch.rand(5) + 0.1).requires_grad_()
    a = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_exponent == 2
    p = x ** a  # PowBackward1: self, exponent and result tensors
    assert p.grad_fn._saved_self is x and p.grad_fn._saved_exponent is a
    assert p.grad_fn._saved_result.equal(p) and p.grad_fn._saved_result is not p
    e = x.exp()
    r = e.grad_fn._saved_result
    assert r is not e and r.equal(e) and r.requires_grad and type(r.grad_fn) is type(e.grad_fn)
    for f in (x.sin(), x.cos(), x.log(), x.abs()):
        assert f.grad_fn._saved_self is x
    for f in (x.relu(), x.sigmoid(), x.tanh(), x.sqrt()):
        assert f.grad_fn._saved_result.equal(f)
    w = torch.where(x > 0, x, a)
    assert w.grad_fn._saved_condition.tolist() == (x > 0).tolist()


def test_only_what_the_inputs_needing_grad_read_is_saved():
    x, b = torch.randn(3, requires_grad=True), torch.randn(3)
    z = x * b
    assert z.grad_fn._saved_self is None and z.grad_fn._saved_other is b
    # a Python float: a 0-d float64 tensor, PyTorch's wrapped number
    assert (x * 2).grad_fn._saved_other.item() == 2
    assert (x * 2.5).grad_fn._saved_other.dtype == torch.float64
    assert (x * 2.5).grad_fn._saved_other.item() == 2.5
    d = x / b
    assert d.grad_fn._saved_self is None and d.grad_fn._saved_other is b


def test_missing_names_and_freed_values():
    x = torch.randn(3, requires_grad=True)
    z = x * x
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute "
                                             "'_saved_result'"):
        z.grad_fn._saved_result
    with pytest.raises(AttributeError):
        z.grad_fn._saved_foo
    z.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        z.grad_fn._saved_self
    # with retain_graph the values stay readable
    y = x.exp()
    y.sum().backward(retain_graph=True)
    assert y.grad_fn._saved_result.equal(y)


def test_saved_value_modified_in_place_is_refused_on_access():
    x = torch.randn(3, requires_grad=True)
    h = x * 1.0
    y = h.sin()
    with torch.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.grad_fn._saved_self


def test_raw_saved_register_hooks():
    calls = []
    x = torch.randn(4, requires_grad=True)
    y = x.pow(3)
    raw = y.grad_fn._raw_saved_self
    assert "SavedTensor" in repr(raw)
    raw.register_hooks(lambda t: (calls.append("pack"), t.clone())[1],
                       lambda t: (calls.append("unpack"), t * 2)[1])
    assert calls == ["pack"]
    assert torch.allclose(y.grad_fn._saved_self, 2 * x)
    assert calls == ["pack", "unpack"]
    with pytest.raises(RuntimeError, match="hooks have already been set"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    y.sum().backward()
    # d/dx x^3 = 3 x^2, computed from the unpacked (doubled) x
    assert np.allclose(x.grad.numpy(), 3 * (2 * x.detach().numpy()) ** 2, rtol=1e-5)
    z = x * torch.ones(4)
    with pytest.raises(RuntimeError, match="with value None is forbidden"):
        z.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(TypeError):
        z.grad_fn._raw_saved_other.register_hooks(1, 2)


def test_raw_saved_hooks_under_default_hooks_refused():
    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.sin()
    with pytest.raises(RuntimeError, match="hooks have already been set"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    assert y.grad_fn._saved_self.equal(x)


def test_node_hooks_order_and_arguments():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    c = b.exp()
    log = []
    b.grad_fn.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
    b.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi), gi[1] is None,
                                                        gi[0].tolist(), go[0].tolist())))
    b.register_hook(lambda g: log.append("tensor"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("acc"))
    c.sum().backward()
    e = np.exp(3 * np.array([1.0, 2.0]))
    assert log[0] == "tensor" and log[3] == "acc"
    assert log[1][0] == "pre" and np.allclose(log[1][1], e)
    assert log[2][:3] == ("post", 2, True) and np.allclose(log[2][3], 3 * e)
    assert np.allclose(log[2][4], e)
    assert np.allclose(a.grad.numpy(), 3 * e)


def test_node_hooks_replace_gradients_and_remove():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    c = b.exp()
    h1 = b.grad_fn.register_prehook(lambda go: (torch.ones_like(go[0]),))
    h2 = b.grad_fn.register_hook(lambda gi, go: (gi[0] * 2, None))
    c.sum().backward(retain_graph=True)
    assert a.grad.tolist() == [6.0, 6.0]
    h1.remove()
    h2.remove()
    a.grad = None
    c.sum().backward()
    assert np.allclose(a.grad.numpy(), 3 * np.exp([3.0, 6.0]))


def test_node_post_hook_wrong_count_is_refused():
    a = torch.ones(2, requires_grad=True)
    b = a * 3

    def bad(gi, go):
        return (gi[0],)

    b.grad_fn.register_hook(bad)
    with pytest.raises(RuntimeError, match=r"hook 'bad' has returned an incorrect number of "
                                           r"values \(got 1, but expected 2\)"):
        b.sum().backward()


def test_post_hook_in_a_longer_chain_with_a_shared_input():
    # x feeds both the hooked node and another branch: both contributions arrive
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    h = x.sin()
    y = (h * x).sum() + x.sum()
    h.grad_fn.register_hook(lambda gi, go: (gi[0] * 10,))
    y.backward()
    xs = np.array([0.5, -1.0])
    # d/dx [sin(x) x + x] with the path through sin scaled by 10
    want = 10 * np.cos(xs) * xs + np.sin(xs) + 1
    assert np.allclose(x.grad.numpy(), want)


def test_post_hook_under_autograd_grad():
    x = torch.tensor([2.0], requires_grad=True)
    y = x.exp()
    seen = []
    y.grad_fn.register_hook(lambda gi, go: seen.append(gi[0].item()))
    (g,) = torch.autograd.grad(y.sum(), x)
    assert np.isclose(seen[0], np.exp(2.0)) and np.isclose(g.item(), np.exp(2.0))


def test_multi_grad_hook_all_and_any():
    x, y, u = (torch.randn(3, requires_grad=True) for _ in range(3))
    seen = []
    h = register_multi_grad_hook((x, y, u), lambda grads: seen.append(
        [None if g is None else g.tolist() for g in grads]))
    (x * y).sum().backward()
    assert len(seen) == 1 and seen[0][2] is None
    assert np.allclose(seen[0][0], y.tolist()) and np.allclose(seen[0][1], x.tolist())
    (x * 2).sum().backward()
    assert seen[1][1] is None and seen[1][0] == [2.0] * 3
    h.remove()
    (x * y).sum().backward()
    assert len(seen) == 2
    first = []
    register_multi_grad_hook((x, y), lambda g: first.append(g.shape), mode="any")
    (x * y).sum().backward()
    (y * 3).sum().backward()
    assert first == [torch.Size([3])] * 2
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got "
                                         r"some"):
        register_multi_grad_hook((x,), print, mode="some")


def test_multi_grad_hook_on_non_leaves_in_autograd_grad():
    x = torch.randn(3, requires_grad=True)
    a, b = x * 2, x.sin()
    seen = []
    register_multi_grad_hook((a, b), lambda grads: seen.append(len(grads)))
    torch.autograd.grad((a + b).sum(), x)
    assert seen == [2]
