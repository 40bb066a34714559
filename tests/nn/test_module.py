"""nn.Module core: registration, walking, modes, state dicts, devices/dtypes, hooks, repr.

Expected strings were printed by PyTorch 2.13 for the same module definitions.
"""
import copy
import re
from collections import OrderedDict

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn


class Leaf(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3, 2))
        self.register_buffer("rm", torch.zeros(2))
        self.register_buffer("tmp", torch.zeros(1), persistent=False)

    def forward(self, x):
        return x @ self.w


def model():
    return nn.Sequential(Leaf(), nn.Sequential(Leaf()))


def test_registration_and_walking():
    m = model()
    assert [n for n, _ in m.named_parameters()] == ["0.w", "1.0.w"]
    assert [n for n, _ in m.named_buffers()] == ["0.rm", "0.tmp", "1.0.rm", "1.0.tmp"]
    assert [n for n, _ in m.named_modules()] == ["", "0", "1", "1.0"]
    assert [n for n, _ in m.named_children()] == ["0", "1"]
    assert len(list(m.modules())) == 4
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert m.get_submodule("1.0") is m[1][0]
    assert m.get_parameter("1.0.w") is m[1][0].w


def test_shared_parameter_is_listed_once():
    a = Leaf()
    m = nn.ModuleList([a, a])
    assert len(list(m.parameters())) == 1


def test_assignment_rules():
    m = Leaf()
    m.w = None
    assert m.w is None and "w" in m._parameters
    with pytest.raises(TypeError):
        m.w = torch.ones(2)  # a plain tensor is not a Parameter
    m.rm = torch.ones(2)  # a buffer may be replaced by a tensor
    assert m.rm.tolist() == [1.0, 1.0]
    with pytest.raises(AttributeError, match="'Leaf' object has no attribute 'nope'"):
        m.nope
    del m.rm
    assert "rm" not in m._buffers


def test_assign_before_init_is_an_error():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.ones(1))
            super().__init__()

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_forward_missing():
    class E(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        E()(1)


def test_repr():
    assert repr(model()) == ("Sequential(\n  (0): Leaf()\n  (1): Sequential(\n    (0): Leaf()\n"
                             "  )\n)")
    assert repr(nn.Parameter(torch.ones(2))) == ("Parameter containing:\n"
                                                 "tensor([1., 1.], requires_grad=True)")


def test_train_eval_propagate():
    m = model()
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())


def test_state_dict_shares_memory_and_skips_non_persistent():
    m = model()
    sd = m.state_dict()
    assert list(sd) == ["0.w", "0.rm", "1.0.w", "1.0.rm"]
    assert not sd["0.w"].requires_grad
    sd["0.w"].numpy()[0, 0] = 5.0
    assert m[0].w[0, 0].item() == 5.0  # the state dict aliases the parameters


def test_load_state_dict_of_something_not_a_mapping_is_a_type_error():
    for bad in ([1, 2], 3, None, "weight"):
        with pytest.raises(TypeError, match=f"^Expected state_dict to be dict-like, got "
                                            f"{re.escape(str(type(bad)))}\\.$"):
            model().load_state_dict(bad)


def test_load_state_dict_round_trip_and_errors():
    m, n = model(), model()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(*p.shape))
    assert repr(n.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    x = torch.randn(4, 3)
    np.testing.assert_array_equal(m[0](x).detach().numpy(), n[0](x).detach().numpy())

    sd = m.state_dict()
    del sd["0.w"]
    sd["extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as e:
        n.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in '
                            'state_dict: "0.w". \n\tUnexpected key(s) in state_dict: "extra". ')
    sd = m.state_dict()
    sd["0.w"] = torch.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for 0\.w: copying a param with shape "
                                           r"torch\.Size\(\[2, 2\]\) from checkpoint, the shape "
                                           r"in current model is torch\.Size\(\[3, 2\]\)\."):
        n.load_state_dict(sd)
    r = n.load_state_dict({"0.w": torch.zeros(3, 2)}, strict=False)
    assert repr(r) == ("_IncompatibleKeys(missing_keys=['0.rm', '1.0.w', '1.0.rm'], "
                       "unexpected_keys=[])")
    assert n[0].w.abs().sum().item() == 0


def test_to_double_keeps_parameter_objects():
    m = Leaf()
    w = m.w
    m.double()
    assert m.w is w and m.w.dtype is torch.float64 and m.rm.dtype is torch.float64
    m.to(torch.float32)
    assert m.w.dtype is torch.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(torch.int64)


def test_zero_grad_and_requires_grad():
    m = Leaf()
    m(torch.ones(1, 3)).sum().backward()
    np.testing.assert_array_equal(m.w.grad.numpy(), np.ones((3, 2)))
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.w.grad.numpy(), np.zeros((3, 2)))
    m.zero_grad()
    assert m.w.grad is None
    m.requires_grad_(False)
    assert not m.w.requires_grad


def test_apply_visits_children_first():
    order = []
    model().apply(lambda mod: order.append(type(mod).__name__))
    assert order == ["Leaf", "Leaf", "Sequential", "Sequential"]


def test_forward_hooks():
    m = Leaf()
    seen = []
    h = m.register_forward_hook(lambda mod, args, out: out * 2)
    pre = m.register_forward_pre_hook(lambda mod, args: seen.append(args[0].shape))
    out = m(torch.ones(1, 3))
    assert out.tolist() == [[6.0, 6.0]] and seen == [torch.Size([1, 3])]
    h.remove()
    pre.remove()
    assert m(torch.ones(1, 3)).tolist() == [[3.0, 3.0]] and len(seen) == 1


class _Shift(nn.Module):
    def forward(self, x, by=1.0, fail=False):
        if fail:
            raise ValueError("forward failed")
        return x + by


def test_forward_hooks_with_kwargs_prepend_and_always_call():
    # the behaviour PyTorch 2.13 showed for the same calls
    m = _Shift()
    calls = []
    m.register_forward_hook(lambda mod, a, o: calls.append("plain"))
    always = m.register_forward_hook(lambda mod, a, k, o: calls.append(("always", k, o)),
                                     with_kwargs=True, always_call=True)
    m.register_forward_hook(lambda mod, a, o: calls.append("first"), prepend=True)
    assert m(torch.tensor(1.0)).item() == 2.0
    assert calls[:2] == ["first", "plain"] and calls[2][0] == "always"
    calls.clear()
    with pytest.raises(ValueError, match="forward failed"):
        m(torch.tensor(1.0), fail=True)
    assert calls == [("always", {"fail": True}, None)]  # only always_call hooks, output None
    calls.clear()
    always.remove()
    assert not m._forward_hooks_with_kwargs and not m._forward_hooks_always_called
    with pytest.raises(ValueError, match="forward failed"):
        m(torch.tensor(1.0), fail=True)
    assert calls == []

    pre = m.register_forward_pre_hook(lambda mod, a, k: (a, {**k, "by": 10.0}), with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, a: (a[0] * 2,), prepend=True)
    assert m(torch.tensor(1.0), by=3.0).item() == 12.0  # doubled first, then by=10
    pre.remove()
    assert m(torch.tensor(1.0), by=3.0).item() == 5.0
    m.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=re.escape("forward pre-hook must return None or a "
                                                     "tuple of (new_args, new_kwargs), but "
                                                     "got 5.")):
        m(torch.tensor(1.0))


def test_a_failing_always_call_hook_warns_and_the_forward_error_is_raised():
    m = _Shift()

    def bad(mod, args, out):
        raise KeyError("hook")
    m.register_forward_hook(bad, always_call=True)
    with pytest.warns(UserWarning, match="``always_call=True`` raised an exception that was "
                                         "silenced"):
        with pytest.raises(ValueError, match="forward failed"):
            m(torch.tensor(1.0), fail=True)


def test_full_backward_hooks_see_and_replace_gradients():
    # PyTorch 2.13: the pre-hook sees grad_output first and may replace it; the full hook then
    # sees grad_input (w.r.t. the positional input) with the replaced grad_output
    m = nn.Linear(3, 2)
    w = m.weight.detach().numpy().astype(np.float64)
    log = []

    def pre(mod, grad_output):
        log.append(("pre", [tuple(g.shape) for g in grad_output]))
        return (grad_output[0] * 3,)

    def full(mod, grad_input, grad_output):
        assert mod is m and grad_output[0].tolist() == [[3.0, 3.0]] * 4
        log.append(("full", [None if g is None else tuple(g.shape) for g in grad_input]))
        return None if grad_input[0] is None else (grad_input[0] * 2,)

    h1, h2 = m.register_full_backward_hook(full), m.register_full_backward_pre_hook(pre)
    x = torch.ones(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert log == [("pre", [(4, 2)]), ("full", [(4, 3)])]
    np.testing.assert_allclose(x.grad.numpy(), np.tile(6 * w.sum(0), (4, 1)), rtol=1e-6)
    assert m.weight.grad.tolist() == [[12.0] * 3] * 2  # 3 * (ones(4, 2).T @ ones(4, 3))
    log.clear()
    with pytest.warns(UserWarning, match="since no inputs require gradients"):
        m(torch.ones(4, 3)).sum().backward()
    assert log == [("pre", [(4, 2)]), ("full", [None])]
    h1.remove()
    h2.remove()
    log.clear()
    m(x).sum().backward()
    assert log == []


def test_full_backward_hook_with_several_inputs():
    class Scale(nn.Module):
        def forward(self, a, k, b):
            return a * b * k

    seen = []
    s = Scale()
    s.register_full_backward_hook(lambda mod, gi, go: seen.append(
        [None if g is None else g.tolist() for g in gi]))
    a, b = torch.ones(2, requires_grad=True), torch.full((2,), 2.0, requires_grad=True)
    s(a, 3, b).sum().backward()
    assert seen == [[[6.0, 6.0], None, [3.0, 3.0]]]

    class FirstOnly(nn.Module):
        def forward(self, a, b):
            return a * 2

    seen.clear()
    f = FirstOnly()  # b gets no gradient: PyTorch materializes zeros for it
    f.register_full_backward_hook(lambda mod, gi, go: seen.append([g.tolist() for g in gi]))
    f(a, b).sum().backward()
    assert seen == [[[2.0, 2.0], [0.0, 0.0]]]
    # replacing an input's gradient after it has flowed on is refused, not silently dropped
    s2 = Scale()
    s2.register_full_backward_hook(lambda mod, gi, go: tuple(
        None if g is None else g * 0 for g in gi))
    with pytest.raises(NotImplementedError, match="replaced the gradient"):
        s2(a, 3, b).sum().backward()
    with pytest.raises(NotImplementedError, match="register_full_backward_hook"):
        s.register_backward_hook(lambda *a: None)


def test_deepcopy_is_independent():
    m = Leaf()
    c = copy.deepcopy(m)
    assert isinstance(c.w, nn.Parameter) and c.w is not m.w
    with torch.no_grad():
        c.w.add_(1)
    assert m.w.sum().item() == 6.0


def test_containers():
    s = nn.Sequential(Leaf(), Leaf(), Leaf())
    assert len(s) == 3 and isinstance(s[1:], nn.Sequential) and len(s[1:]) == 2
    s.append(Leaf())
    assert list(s._modules) == ["0", "1", "2", "3"]
    del s[0]
    assert list(s._modules) == ["0", "1", "2"]
    ml = nn.ModuleList([Leaf()])
    ml.append(Leaf())
    ml += [Leaf()]
    assert len(ml) == 3 and len(list(ml.parameters())) == 3
    with pytest.raises(IndexError):
        ml[3]
    md = nn.ModuleDict({"a": Leaf()})
    md["b"] = Leaf()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    assert [n for n, _ in md.named_parameters()] == ["a.w", "b.w"]
    pl = nn.ParameterList([nn.Parameter(torch.ones(1)), torch.zeros(2)])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2


def test_parameter_containers_print_and_order_as_pytorchs():
    # printed by PyTorch 2.13: the list shows dtypes, the dict torch.typename; a plain dict
    # goes in sorted by key, an OrderedDict in its order
    pl = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(2, 3, dtype=torch.float64)])
    assert repr(pl) == ("ParameterList(\n    (0): Parameter containing: [torch.float32 of size 2]"
                        "\n    (1): Parameter containing: [torch.float64 of size 2x3]\n)")
    assert repr(nn.ParameterList()) == "ParameterList()"
    pd = nn.ParameterDict({"w": nn.Parameter(torch.ones(2)), "b": torch.ones(0, 3).double()})
    assert list(pd.keys()) == ["b", "w"]
    assert repr(pd) == ("ParameterDict(\n    (b): Parameter containing: [torch.DoubleTensor of "
                        "size 0x3]\n    (w): Parameter containing: [torch.FloatTensor of size 2]\n)")
    assert list(nn.ParameterDict(OrderedDict([("w", torch.ones(1)), ("b", torch.ones(1))]))) == \
        ["w", "b"]
    holder = nn.Module()
    holder.p = nn.ParameterList([torch.ones(())])
    assert repr(holder) == ("Module(\n  (p): ParameterList(  (0): Parameter containing: "
                            "[torch.float32 of size ])\n)")
    assert [tuple(p.shape) for p in pl[1:]] == [(2, 3)] and isinstance(pl[1:], nn.ParameterList)
    assert pd.get("w") is pd["w"] and pd.get("z") is None
    del pd["w"]
    assert list(pd) == ["b"] and pd.pop("b").shape == (0, 3) and len(pd) == 0


def test_softmax_is_also_a_tensor_method_and_a_torch_function():
    x = torch.randn(3, 4, dtype=torch.float64)
    e = np.exp(x.numpy() - x.numpy().max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(x.softmax(1).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(torch.softmax(x, dim=1).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(x.log_softmax(dim=1).numpy(), np.log(ref), rtol=1e-12)
    np.testing.assert_allclose(torch.log_softmax(x, 1).numpy(), np.log(ref), rtol=1e-12)


def test_a_replaced_member_keeps_its_place():
    # PyTorch: assigning a new Parameter, buffer or submodule under an existing name keeps its
    # position, so forward's order, parameters() and state_dict() do not change
    seq = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    seq[0] = nn.Linear(4, 3)
    assert list(seq._modules) == ["0", "1", "2"]
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[1], nn.ReLU)
    lin = nn.Linear(2, 2)
    lin.weight = nn.Parameter(torch.ones(2, 2))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    bn = nn.BatchNorm1d(3)
    bn.running_mean = nn.Buffer(torch.zeros(3))
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]


def test_registration_errors_are_pytorchs():
    # the messages PyTorch 2.13 raises, torch.typename of the value included
    m = nn.Linear(1, 1)
    cases = [
        (lambda: setattr(m, "weight", torch.ones(1, 1)), TypeError,
         "cannot assign 'torch.FloatTensor' as parameter 'weight' (torch.nn.Parameter or None "
         "expected)"),
        (lambda: m.register_parameter("a.b", None), KeyError, 'parameter name can\'t contain "."'),
        (lambda: m.register_parameter("", None), KeyError,
         'parameter name can\'t be empty string ""'),
        (lambda: m.register_parameter(1, None), TypeError,
         "parameter name should be a string. Got int"),
        (lambda: m.register_parameter("p", torch.ones(1)), TypeError,
         "cannot assign 'torch.FloatTensor' object to parameter 'p' (torch.nn.Parameter or None "
         "required)"),
        (lambda: m.register_buffer("a.b", None), KeyError, 'buffer name can\'t contain "."'),
        (lambda: m.register_buffer("x", 3), TypeError,
         "cannot assign 'int' object to buffer 'x' (torch Tensor or None required)"),
        (lambda: m.register_buffer("weight", None), KeyError, "attribute 'weight' already exists"),
        (lambda: m.add_module("a.b", nn.ReLU()), KeyError, 'module name can\'t contain ".", got: '
                                                           'a.b'),
        (lambda: m.add_module("", nn.ReLU()), KeyError, 'module name can\'t be empty string ""'),
        (lambda: m.add_module(3, nn.ReLU()), TypeError, "module name should be a string. Got int"),
        (lambda: m.add_module("r", 3), TypeError, "int is not a Module subclass"),
    ]
    for call, error, message in cases:
        with pytest.raises(error) as info:
            call()
        got = info.value.args[0]
        assert got == message, (got, message)
    holder = nn.Module()
    holder.sub = nn.ReLU()
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as child module "
                                        r"'sub' \(torch.nn.Module or None expected\)"):
        holder.sub = torch.ones(1)
    holder.register_buffer("buf", torch.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'str' as buffer 'buf' \(torch.nn.Buffer, "
                                        r"torch.Tensor or None expected\)"):
        holder.buf = "x"
