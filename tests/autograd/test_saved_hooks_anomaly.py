"""torch.autograd.graph's saved-tensor hooks and anomaly mode, as PyTorch 2.13 behaves (checked
by hand in a scratch venv); gradients against numpy formulas."""
import re
import threading
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd.graph import (disable_saved_tensors_hooks, increment_version,
                                      save_on_cpu, saved_tensors_hooks)


def _ab():
    a = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([1.5, 0.25, -0.5], dtype=torch.float64, requires_grad=True)
    return a, b


def test_every_saved_value_is_packed_once_and_unpacked_at_each_backward():
    a, b = _ab()
    log = []

    def pack(t):
        log.append(("pack", t.requires_grad, torch.is_grad_enabled()))
        return ("box", t.detach().numpy().copy())  # only the box is kept

    def unpack(p):
        log.append(("unpack", torch.is_grad_enabled()))
        return torch.tensor(p[1])

    with saved_tensors_hooks(pack, unpack):
        y = (a * b).exp().sum()  # mul saves a and b, exp its output: three, as in PyTorch
    assert log == [("pack", True, False)] * 3
    log.clear()
    y.backward(retain_graph=True)
    assert log == [("unpack", False)] * 3
    an, bn = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(a.grad.numpy(), bn * np.exp(an * bn), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), an * np.exp(an * bn), rtol=1e-12)
    y.backward()
    assert len(log) == 6
    np.testing.assert_allclose(a.grad.numpy(), 2 * bn * np.exp(an * bn), rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_only_what_a_gradient_needs_is_packed_and_the_innermost_pair_applies():
    a, _ = _ab()
    z = torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64)
    seen = []
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda p: p):
        with saved_tensors_hooks(lambda t: seen.append(t is z) or t, lambda p: p):
            y = (a * z).sum()  # a's gradient reads z only
    assert seen == [True]
    y.backward()
    assert a.grad.tolist() == [3.0, 4.0, 5.0]


def test_unpack_must_return_a_tensor_of_the_saved_shape():
    a, b = _ab()
    with saved_tensors_hooks(lambda t: 1, lambda p: 3):
        y = (a * b).sum()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a "
                                        "Tensor but got result of type int"):
        y.backward()
    with saved_tensors_hooks(lambda t: t, lambda p: torch.zeros(2, dtype=torch.float64)):
        y = (a * b).sum()
    with pytest.raises(RuntimeError, match="shape"):
        y.backward()
    with saved_tensors_hooks(lambda t: t, lambda p: p.float()):  # PyTorch promotes: works
        y = (a * b).sum()
    y.backward()
    assert a.grad.dtype is torch.float64 and a.grad.tolist() == [1.5, 0.25, -0.5]


def test_pack_may_not_write_its_input_and_hooks_skip_the_version_check():
    c = torch.ones(3, requires_grad=True)
    d = c * 1
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in "
                                           "place"):
        with saved_tensors_hooks(lambda t: t.mul_(2), lambda p: p):
            d * d
    d = c * 1
    with saved_tensors_hooks(lambda t: t, lambda p: p):
        e = (d * d).sum()
    d.add_(1)  # PyTorch: no version error under hooks; the unpacked (written) value is used
    e.backward()
    assert c.grad.tolist() == [4.0, 4.0, 4.0]
    d = c * 1
    f = (d * d).sum()
    increment_version(d)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f.backward()


def test_disable_saved_tensors_hooks_refuses_hooks_inside_and_around():
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with saved_tensors_hooks(lambda t: t, lambda p: p):
                pass
    with saved_tensors_hooks(lambda t: t, lambda p: p):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with disable_saved_tensors_hooks("no hooks here"):
                pass

    @disable_saved_tensors_hooks("msg2")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda p: p):
            pass
    with pytest.raises(RuntimeError, match="^msg2$"):
        f()
    with saved_tensors_hooks(lambda t: t, lambda p: p):  # enabled again after the block
        pass


def test_hooks_belong_to_their_thread_and_save_on_cpu_keeps_gradients():
    a, b = _ab()
    packed = []
    done = threading.Event()
    inside = threading.Event()

    def other():
        with saved_tensors_hooks(lambda t: packed.append(1) or t, lambda p: p):
            inside.set()
            done.wait(5)
    th = threading.Thread(target=other)
    th.start()
    inside.wait(5)
    y = (a * b).sum()  # recorded in this thread: the other thread's hooks do not see it
    done.set()
    th.join()
    assert packed == []
    with save_on_cpu():
        y2 = (a * b).sum()
    (y + y2).backward()
    assert a.grad.tolist() == [3.0, 0.5, -1.0]


def test_custom_function_save_for_backward_goes_through_the_hooks():
    log = []

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 7)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, seven = ctx.saved_tensors
            assert seven == 7
            return g * x

    a = torch.tensor([1.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: log.append("pack") or t.detach().clone(),
                             lambda p: log.append("unpack") or p):
        y = Double.apply(a).sum()
    y.backward()
    assert log == ["pack", "unpack"] and a.grad.tolist() == [1.0, 3.0]


def test_anomaly_mode_names_the_forward_op_whose_rule_returned_nan():
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            assert torch.is_anomaly_enabled()
            y = torch.where(x > 0, x.sqrt(), torch.zeros(2)).sum()  # the user's line
            with pytest.raises(RuntimeError, match=re.escape(
                    "Function 'SqrtBackward0' returned nan values in its 0th output.")):
                y.backward()
    assert not torch.is_anomaly_enabled()
    texts = [str(m.message) for m in w if m.category is UserWarning]
    assert texts[0].startswith("Anomaly Detection has been enabled.")
    forward = [t for t in texts if t.startswith("Error detected in SqrtBackward0")]
    assert forward and "y = torch.where(x > 0, x.sqrt()" in forward[0]
    assert "fusetorch" not in forward[0].split("\n", 1)[1]  # the user's frames only


def test_anomaly_mode_checks_each_input_of_a_rule_and_the_create_graph_path():
    b = torch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            z = (b * b.log()).sum()  # Mul's cotangents are finite; Log's is 0/0 at 0
            with pytest.raises(RuntimeError, match="'LogBackward0' returned nan values in its "
                                                   "0th output"):
                z.backward()
            z = (torch.tensor([1.0, 1.0]) / b).sum()  # -inf is no NaN: no error
            z.backward()
            assert b.grad.tolist()[0] == -np.inf
            z = (torch.tensor([float("nan"), 1.0]) * b).sum()
            with pytest.raises(RuntimeError, match="'MulBackward0' returned nan values in its "
                                                   "1th output"):
                torch.autograd.grad(z, [b], create_graph=True)
        with torch.autograd.detect_anomaly(check_nan=False):
            y = (b.sqrt() * 0).sum()
            y.backward()  # no check: the NaN reaches .grad, as in PyTorch
            assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()


def test_set_detect_anomaly_is_a_call_and_a_context_manager():
    torch.autograd.set_detect_anomaly(True)
    assert torch.is_anomaly_enabled()
    torch.autograd.set_detect_anomaly(False)
    assert not torch.is_anomaly_enabled()
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    torch.set_anomaly_enabled(True)
    assert torch.autograd.anomaly_mode is not None and torch.is_anomaly_enabled()
    torch.set_anomaly_enabled(False)


def test_graph_names_not_built_say_so():
    import fusetorch.autograd.graph as g
    with pytest.raises(NotImplementedError, match="does not implement"):
        g.get_gradient_edge
    assert not hasattr(g, "no_such_name")
