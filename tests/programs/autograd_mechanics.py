"""In the style of PyTorch's "Autograd mechanics" notes (notes/autograd.rst): saved tensors seen
through `grad_fn._saved_self` / `_saved_result` (an input saved is the input itself, an output
saved is a new tensor equal to it), a pair of hooks on one saved tensor through
`grad_fn._raw_saved_self.register_hooks(pack, unpack)` (pack at once, unpack at each access),
default hooks (`saved_tensors_hooks`) that store saved tensors in self-deleting temporary files
through torch.save/torch.load, `save_on_cpu`, and the backward hooks: Tensor.register_hook,
register_post_accumulate_grad_hook, Node.register_prehook and Node.register_hook (their order,
their replacing of gradients, removal through the handle), torch.autograd.graph.
register_multi_grad_hook (mode "all" and "any"), and a hook registered after an in-place op."""
import os
import tempfile
import uuid

import fusetorch as torch


class SelfDeletingTempFile():
    def __init__(self):
        self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

    def __del__(self):
        os.remove(self.name)


def pack_hook(tensor):
    temp_file = SelfDeletingTempFile()
    torch.save(tensor, temp_file.name)
    return temp_file


def unpack_hook(temp_file):
    return torch.load(temp_file.name)


tmp_dir = None


def saved_tensors():
    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    assert x.equal(y.grad_fn._saved_self)  # True
    assert x is y.grad_fn._saved_self  # True
    assert y.grad_fn._saved_exponent == 2

    x = torch.randn(5, requires_grad=True)
    y = x.exp()
    assert y.equal(y.grad_fn._saved_result)  # True
    assert y is not y.grad_fn._saved_result  # False

    # only what the inputs needing grad read is saved
    a, b = torch.randn(3, requires_grad=True), torch.randn(3)
    z = a * b
    assert z.grad_fn._saved_self is None and z.grad_fn._saved_other is b
    try:
        z.grad_fn._saved_result
        raise AssertionError("MulBackward0 saves no result")
    except AttributeError:
        pass
    z.sum().backward()
    try:
        z.grad_fn._saved_other
        raise AssertionError("the saved tensors were freed by backward")
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)


def hooks_on_one_saved_tensor():
    calls = []

    def pack(t):
        calls.append("pack")
        return t.clone()

    def unpack(t):
        calls.append("unpack")
        return t * 10  # (what backward sees)

    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
    assert calls == ["pack"]
    assert torch.allclose(y.grad_fn._saved_self, x * 10) and calls == ["pack", "unpack"]
    try:
        y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
        raise AssertionError("one pair of hooks per saved tensor")
    except RuntimeError as e:
        assert "hooks have already been set" in str(e)
    y.sum().backward()
    assert calls[-1] == "unpack"
    assert torch.allclose(x.grad, 2 * (x * 10))


def default_hooks():
    global tmp_dir
    with tempfile.TemporaryDirectory() as tmp_dir:
        x = torch.randn(5, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            y = x.pow(2)
        assert len(os.listdir(tmp_dir)) >= 1
        y.sum().backward()
        assert torch.allclose(x.grad, 2 * x)
        del y
    log = []

    def pack(x):
        log.append(("Packing", x.tolist()))
        return x

    def unpack(x):
        log.append(("Unpacking", x.tolist()))
        return x

    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a * b
    y.sum().backward()
    assert [k for k, _ in log] == ["Packing", "Packing", "Unpacking", "Unpacking"], log
    assert a.grad.tolist() == [2.0] * 5
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        w = torch.randn(4, 4, requires_grad=True)
        out = (w @ w).tanh().sum()
    out.backward()
    assert w.grad.shape == (4, 4)


def backward_hooks():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    c = b.exp()
    log = []
    pre = b.grad_fn.register_prehook(lambda grad_outputs: log.append("node pre-hook"))
    post = b.grad_fn.register_hook(
        lambda grad_inputs, grad_outputs: log.append(("node post-hook", len(grad_inputs),
                                                      grad_inputs[1] is None)))
    b.register_hook(lambda grad: log.append("tensor hook"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("post-accumulate"))
    c.sum().backward()
    # tensor hooks, then the node's pre-hooks, the node, its post-hooks; the leaf's
    # post-accumulate hook when its AccumulateGrad runs after
    assert log == ["tensor hook", "node pre-hook", ("node post-hook", 2, True),
                   "post-accumulate"], log
    assert torch.allclose(a.grad, 3 * torch.exp(3 * a))
    pre.remove()
    post.remove()

    # hooks that replace gradients: a pre-hook its grad_outputs, a post-hook its grad_inputs
    a.grad = None
    b = a * 3
    c = b.exp()
    b.grad_fn.register_prehook(lambda grad_outputs: (torch.ones_like(grad_outputs[0]),))
    b.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 2, None))
    c.sum().backward()
    assert a.grad.tolist() == [6.0, 6.0], a.grad

    # register_multi_grad_hook: "all" sees every gradient at once (None for one not computed)
    x = torch.randn(3, requires_grad=True)
    y = torch.randn(3, requires_grad=True)
    u = torch.randn(3, requires_grad=True)
    seen = []
    handle = torch.autograd.graph.register_multi_grad_hook(
        (x, y, u), lambda grads: seen.append([g is None for g in grads]))
    (x * y).sum().backward()
    assert seen == [[False, False, True]], seen
    handle.remove()
    (x * y).sum().backward()
    assert len(seen) == 1
    first = []
    torch.autograd.graph.register_multi_grad_hook(
        (x, y), lambda grad: first.append(grad.shape), mode="any")
    (x * y).sum().backward()
    assert first == [torch.Size([3])], first

    # a hook registered after an in-place op sees the gradient of the new value
    t = torch.tensor(1., requires_grad=True).sin()
    t.cos_()
    got = []
    t.register_hook(lambda g: got.append(g.item()))
    t.backward()
    assert got == [1.0]


def main():
    torch.manual_seed(0)
    saved_tensors()
    hooks_on_one_saved_tensor()
    default_hooks()
    backward_hooks()
    x = torch.randn(4, requires_grad=True)
    loss = (x.sin() * x.exp()).sum()
    loss.backward()
    assert torch.allclose(x.grad, x.cos() * x.exp() + x.sin() * x.exp())
    return loss.item()
