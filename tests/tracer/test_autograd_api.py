"""The autograd API as PyTorch defines it: backward(), requires_grad, leaves, .grad, retain_grad,
detach/.data, grad modes, in-place rules and version counters, grad_fn names and
next_functions, autograd.Function, Variable, autograd.grad, and the backward graph as text.

Gradients are compared with values derived by hand in numpy float64 (or central finite
differences through `gradcheck`). Error types and messages, warnings and grad_fn names were
observed by hand in PyTorch 2.13.0 (CPU) and are written in literally; torch is not imported here.
"""
import re
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import Tensor
from fusetorch.autograd import backward_graph_text

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_LEAF_INPLACE = ("a view of a leaf Variable that requires grad is being used in an in-place "
                     "operation.")
NON_LEAF_FLAG = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = "
    "var.detach().")
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def leaf(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def host(t):
    return t.detach().numpy().astype(np.float64)


def close(t, expected, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(host(t), np.asarray(expected, dtype=np.float64), rtol=rtol,
                               atol=atol)


# ---------------------------------------------------------------- Tensor.backward

def test_backward_scalar_root_gives_gradient():
    xv = np.array([0.5, -1.5, 2.0])
    x = leaf(xv, torch.float64)
    (x * x * x).sum().backward()
    close(x.grad, 3 * xv ** 2, rtol=1e-12)


def test_backward_nonscalar_root_needs_gradient():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar "
                                           "outputs$"):
        (x * 2).backward()
    assert x.grad is None


def test_backward_with_gradient_argument():
    xv = np.array([1.0, -2.0, 3.0])
    gv = np.array([1.0, 10.0, 100.0])
    x = leaf(xv, torch.float64)
    (x * x).backward(torch.tensor(gv, dtype=torch.float64))
    close(x.grad, 2 * xv * gv, rtol=1e-12)


def test_backward_of_a_leaf_itself():
    x = leaf([1.0, 2.0])
    x.backward(torch.tensor([3.0, 4.0]))
    close(x.grad, [3.0, 4.0])


def test_backward_gradient_of_other_dtype_is_cast():
    x = leaf([1.0, 2.0])
    (x * 3).backward(torch.ones(2, dtype=torch.float64))
    assert x.grad.dtype is torch.float32
    close(x.grad, [3.0, 3.0])


def test_backward_gradient_of_wrong_shape():
    x = leaf([1.0, 2.0])
    msg = ("Mismatch in shape: grad_output[0] has a shape of torch.Size([2, 1]) and output[0] "
           "has a shape of torch.Size([2]).")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        (x * 2).backward(torch.ones(2, 1))


def test_backward_of_root_without_grad():
    msg = "element 0 of tensors does not require grad and does not have a grad_fn"
    with pytest.raises(RuntimeError, match="^" + msg + "$"):
        torch.randn(3).sum().backward()
    with pytest.raises(RuntimeError, match="^" + msg + "$"):
        leaf([1.0]).detach().sum().backward()


def test_second_backward_through_freed_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="^" + re.escape(SECOND_BACKWARD) + "$"):
        y.backward()
    close(x.grad, [2.0, 4.0])  # the failed call added nothing


def test_retain_graph_allows_second_backward_and_accumulates():
    xv = np.array([1.0, 2.0, -0.5])
    x = leaf(xv, torch.float64)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    close(x.grad, (xv + 1) * np.exp(xv), rtol=1e-12)
    y.backward(retain_graph=True)
    close(x.grad, 2 * (xv + 1) * np.exp(xv), rtol=1e-12)
    y.backward()
    close(x.grad, 3 * (xv + 1) * np.exp(xv), rtol=1e-12)
    with pytest.raises(RuntimeError, match=re.escape("Trying to backward through the graph a "
                                                     "second time")):
        y.backward()


def test_autograd_backward_function_several_roots():
    xv = np.array([1.0, 2.0, 3.0])
    x = leaf(xv, torch.float64)
    torch.autograd.backward([(x * 2).sum(), (x * x).sum()])
    close(x.grad, 2 + 2 * xv, rtol=1e-12)


# ---------------------------------------------------------------- requires_grad

@pytest.mark.parametrize("op", [
    lambda x: x + 1, lambda x: 1 - x, lambda x: x * x, lambda x: x / 3, lambda x: x ** 2,
    lambda x: -x, lambda x: x.exp(), lambda x: x.sum(), lambda x: x.mean(), lambda x: x.t(),
    lambda x: x[0], lambda x: x[:, 1:], lambda x: x.reshape(-1), lambda x: x.clamp(min=0),
    lambda x: x.mm(torch.ones(3, 2)), lambda x: torch.cat([x, torch.zeros(1, 3)]),
    lambda x: x.max(), lambda x: x.sign(), lambda x: x.double(), lambda x: x.clone(),
], ids=["add", "rsub", "mul", "div", "pow", "neg", "exp", "sum", "mean", "t", "select",
        "slice", "reshape", "clamp", "mm", "cat", "max", "sign", "double", "clone"])
def test_requires_grad_propagates(op):
    x = torch.randn(2, 3, requires_grad=True)
    y = op(x)
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    z = op(x.detach())
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None


@pytest.mark.parametrize("op", [
    lambda x: x.argmax(), lambda x: x.argmin(dim=1), lambda x: x > 0, lambda x: x == x,
    lambda x: x.long(), lambda x: x.max(dim=1)[1], lambda x: (x < 0).sum(),
], ids=["argmax", "argmin", "gt", "eq", "long", "max_indices", "count"])
def test_integer_and_bool_results_do_not_require_grad(op):
    x = torch.randn(2, 3, requires_grad=True)
    y = op(x)
    assert not y.dtype.is_floating_point
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_requires_grad_mixed_inputs():
    a = torch.randn(3)
    b = torch.randn(3, requires_grad=True)
    assert not (a * 2).requires_grad
    assert (a * b).requires_grad and (a + b).requires_grad
    assert not (a * b.detach()).requires_grad


def test_requires_grad_inplace_method():
    x = torch.randn(3)
    assert x.requires_grad_() is x
    assert x.requires_grad and x.is_leaf
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad


def test_requires_grad_false_on_non_leaf_errors():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match="^" + re.escape(NON_LEAF_FLAG) + "$"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="^" + re.escape(NON_LEAF_FLAG) + "$"):
        y.requires_grad = False
    assert y.requires_grad


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require "
                                           "gradients$"):
        torch.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype "
                                           "can require gradients$"):
        torch.tensor([True]).requires_grad = True  # the setter words it as the constructor
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype "
                                           "can require gradients$"):
        torch.tensor([1, 2], requires_grad=True)
    t = torch.tensor([1, 2])
    assert t.requires_grad_(False) is t  # turning it off is allowed


def test_is_leaf():
    x = leaf([1.0, 2.0])
    assert x.is_leaf
    assert torch.ones(2).is_leaf and torch.ones(2, requires_grad=True).is_leaf
    assert x.detach().is_leaf
    assert not x.clone().is_leaf and not x.sum().is_leaf and not (x * 1).is_leaf
    with torch.no_grad():
        y = x * 2
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


# ---------------------------------------------------------------- .grad

def test_grad_accumulates_and_zero():
    x = leaf([1.0, 2.0])
    assert x.grad is None
    (x * 3).sum().backward()
    close(x.grad, [3.0, 3.0])
    (x * 3).sum().backward()
    close(x.grad, [6.0, 6.0])
    g = x.grad
    g.zero_()
    close(x.grad, [0.0, 0.0])
    (x * x).sum().backward()
    assert x.grad is g  # accumulated into the same tensor
    close(x.grad, [2.0, 4.0])
    assert not x.grad.requires_grad and x.grad.is_leaf


def test_grad_can_be_assigned_and_deleted():
    x = leaf([1.0, 2.0])
    x.grad = torch.tensor([1.0, 1.0])
    (x * 2).sum().backward()
    close(x.grad, [3.0, 3.0])
    msg = ("attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. Please "
           "ensure that the gradient and the tensor are the same size")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        x.grad = torch.ones(3)
    x.grad = None
    assert x.grad is None


class _Plain:
    pass


@pytest.mark.parametrize("value, name", [([1, 2], "list"), (3.0, "float"), (1, "int"),
                                         (np.zeros(2), "numpy.ndarray"),
                                         (np.float64(1.0), "numpy.float64"), (_Plain(), "_Plain")])
def test_assigning_a_non_tensor_grad_is_pytorchs_type_error(value, name):
    x = leaf([1.0, 2.0])
    msg = f"assigned grad expected to be a Tensor or None but got grad of type {name}"
    with pytest.raises(TypeError, match="^" + re.escape(msg) + "$"):
        x.grad = value
    assert x.grad is None


def test_assigning_a_grad_of_another_dtype_or_itself_is_pytorchs_runtime_error():
    x = leaf([1.0, 2.0])
    tail = (". The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). "
            "You can set the tensor's grad_dtype attribute with a specific dtype, or None to "
            "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
            "its gradient may break downstream systems that assume they match.")
    for dtype, cpp in ((torch.float64, "double"), (torch.int64, "long int"),
                       (torch.bfloat16, "c10::BFloat16"), (torch.float16, "c10::Half")):
        msg = f"attempting to assign a gradient with dtype '{cpp}' to a tensor with grad_dtype 'Float'"
        with pytest.raises(RuntimeError, match="^" + re.escape(msg + tail) + "$"):
            x.grad = torch.zeros(2, dtype=dtype)
    y = torch.zeros(2, dtype=torch.int64)
    msg = "attempting to assign a gradient with dtype 'float' to a tensor with grad_dtype 'Long'"
    with pytest.raises(RuntimeError, match="^" + re.escape(msg + tail) + "$"):
        y.grad = torch.zeros(2)
    with pytest.raises(RuntimeError, match="^can't assign Variable as its own grad$"):
        x.grad = x
    # dtype is checked before size, as in PyTorch
    with pytest.raises(RuntimeError, match="with dtype 'double'"):
        x.grad = torch.zeros(5, dtype=torch.float64)
    assert x.grad is None
    x.grad = torch.zeros(2, 3)[:, 0]  # any layout of the right size is accepted
    assert x.grad.shape == (2,)


def test_assigning_a_grad_on_another_device_type_is_pytorchs_runtime_error():
    from fusetorch.runtime import device as D
    from fusetorch.runtime.eager import CUDA_GENERATOR, make_table
    if D._cupy() is None:  # a stand-in cuda:0 over numpy (as tests/runtime does)
        D.register_backend("cuda:0", D.Backend(D.device("cuda", 0), np,
                                               make_table(np, CUDA_GENERATOR)))
    try:
        x = leaf([1.0, 2.0])
        msg = ("attempting to assign a gradient with device type 'cuda' to a tensor with device "
               "type 'cpu'. Please ensure that the gradient and the tensor are on the same device")
        with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
            x.grad = torch.zeros(2, device="cuda")
    finally:
        if D._cupy() is None:
            D.register_backend("cuda:0", None)


def test_grad_of_broadcast_input_is_summed():
    av, bv = np.random.randn(3, 4), np.random.randn(4)
    a, b = leaf(av, torch.float64), leaf(bv, torch.float64)
    (a * b).sum().backward()
    close(a.grad, np.broadcast_to(bv, (3, 4)), rtol=1e-12)
    close(b.grad, av.sum(0), rtol=1e-12)


def test_non_leaf_grad_warns_and_is_none():
    x = leaf([1.0, 2.0])
    y = x * 3
    (y * y).sum().backward()
    with pytest.warns(UserWarning) as rec:
        assert y.grad is None
    message = str(rec[0].message)
    assert message.startswith("The .grad attribute of a Tensor that is not a leaf Tensor is "
                              "being accessed. Its .grad attribute won't be populated during "
                              "autograd.backward().")
    assert "for more information." in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.grad  # a leaf: no warning


def test_retain_grad():
    xv = np.array([1.0, 2.0])
    x = leaf(xv, torch.float64)
    y = x * 3
    assert not y.retains_grad and not x.retains_grad
    y.retain_grad()
    assert y.retains_grad
    x.retain_grad()  # a no-op on a leaf
    assert not x.retains_grad
    (y * y).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(y.grad, 2 * 3 * xv, rtol=1e-12)
    close(x.grad, 18 * xv, rtol=1e-12)
    with pytest.raises(RuntimeError, match="^can't retain_grad on Tensor that has "
                                           "requires_grad=False$"):
        torch.randn(2).retain_grad()


def test_retain_grad_accumulates():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    z = y.sum()
    z.backward(retain_graph=True)
    z.backward()
    close(y.grad, [2.0, 2.0])
    close(x.grad, [4.0, 4.0])


# ---------------------------------------------------------------- detach and .data

def test_detach_shares_memory_without_grad():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == x.data_ptr()
    d[0] = 7.0
    close(x, [7.0, 2.0])
    assert x.requires_grad
    assert d.requires_grad_() is d and d.requires_grad  # a new leaf of its own


def test_detach_shares_version_counter():
    x = leaf([1.0, 2.0])
    y = x * x
    x.detach().add_(1)
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation: [torch.FloatTensor [2]] is at version 1; expected version 0 "
           "instead. " + HINT)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        y.sum().backward()


def test_data_shares_memory_and_is_untracked():
    x = leaf([1.0, 2.0])
    d = x.data
    assert not d.requires_grad and d.is_leaf
    assert d.data_ptr() == x.data_ptr()
    y = x * x
    x.data.mul_(10)  # not seen by autograd: no version bump, no error
    assert x._version == 0
    y.sum().backward()
    close(x.grad, [20.0, 40.0])  # 2 * x, with x's new values


def test_data_update_step():
    xv = np.array([1.0, -2.0])
    x = leaf(xv)
    (x * x).sum().backward()
    x.data -= 0.25 * x.grad.data
    close(x, xv - 0.25 * 2 * xv)
    assert x.is_leaf and x.requires_grad


# ---------------------------------------------------------------- grad modes

def test_no_grad_context():
    x = leaf([1.0])
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        y = x * 2
        with torch.enable_grad():
            assert torch.is_grad_enabled()
            z = x * 2
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad


def test_no_grad_restores_on_exception():
    with pytest.raises(ValueError):
        with torch.no_grad():
            raise ValueError("boom")
    assert torch.is_grad_enabled()


def test_no_grad_decorators():
    x = leaf([1.0])

    @torch.no_grad()
    def f(a):
        return a * 2

    @torch.no_grad
    def f_bare(a):
        return a * 2

    @torch.enable_grad()
    def g(a):
        return a * 2

    assert f.__name__ == "f"
    assert not f(x).requires_grad and not f_bare(x).requires_grad
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert g(x).requires_grad
        assert not torch.is_grad_enabled()


def test_grad_mode_module_path():
    from fusetorch.autograd import grad_mode
    assert grad_mode.no_grad is torch.no_grad and grad_mode.enable_grad is torch.enable_grad
    assert grad_mode.inference_mode is torch.inference_mode
    with grad_mode.set_multithreading_enabled(False):  # (backward runs on the calling thread)
        y = torch.ones(2, requires_grad=True) * 3
    y.sum().backward()
    assert grad_mode.set_multithreading_enabled(True).clone().mode is True


def test_set_grad_enabled_call_context_decorator():
    x = leaf([1.0])
    try:
        torch.set_grad_enabled(False)  # a plain call switches at once
        assert not torch.is_grad_enabled() and not (x * 2).requires_grad
        torch.set_grad_enabled(True)
        assert torch.is_grad_enabled() and (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    with torch.set_grad_enabled(True):
        assert (x * 2).requires_grad

    @torch.set_grad_enabled(False)
    def h(a):
        return a * 2

    assert torch.is_grad_enabled()  # decorating does not switch grad mode
    assert not h(x).requires_grad
    assert torch.is_grad_enabled()


def test_inplace_update_of_leaf_under_no_grad():
    wv = np.array([1.0, -2.0, 0.5])
    w = leaf(wv)
    (w * w).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    close(w, wv - 0.1 * 2 * wv)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    w.grad.zero_()
    (w * w).sum().backward()  # the updated leaf is used as usual
    close(w.grad, 2 * (wv - 0.2 * wv), rtol=1e-6)


@pytest.mark.parametrize("inplace, msg", [
    (lambda x: x.add_(1), LEAF_INPLACE), (lambda x: x.mul_(2), LEAF_INPLACE),
    (lambda x: x.sub_(1), LEAF_INPLACE), (lambda x: x.div_(2), LEAF_INPLACE),
    (lambda x: x.zero_(), LEAF_INPLACE), (lambda x: x.clamp_(min=0), LEAF_INPLACE),
    (lambda x: x.copy_(torch.zeros(2)), LEAF_INPLACE),
    (lambda x: x.__iadd__(1), LEAF_INPLACE),
    (lambda x: x.__setitem__(slice(None), 0.0), LEAF_INPLACE),
    (lambda x: x.__setitem__(x > 1, 0.0), LEAF_INPLACE),
    (lambda x: x.__setitem__([0], 0.0), LEAF_INPLACE),
    (lambda x: x.__setitem__(0, 5.0), VIEW_LEAF_INPLACE),
    (lambda x: x.__setitem__(slice(1, None), 5.0), VIEW_LEAF_INPLACE),
], ids=["add_", "mul_", "sub_", "div_", "zero_", "clamp_", "copy_", "iadd", "set_full_slice",
        "set_mask", "set_list", "set_int", "set_slice"])
def test_inplace_on_leaf_requiring_grad_errors(inplace, msg):
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        inplace(x)
    close(x, [1.0, 2.0])  # nothing written
    with torch.no_grad():
        inplace(x)  # allowed without grad mode


def test_inplace_ops_on_non_leaf_are_differentiated():
    xv = np.array([1.0, -2.0, 3.0])
    x = leaf(xv, torch.float64)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    close(y, (2 * xv + 1) * 3, rtol=1e-12)
    (y * y).sum().backward()  # d/dx ((6x + 3)^2) = 12 (6x + 3)
    close(x.grad, 12 * (6 * xv + 3), rtol=1e-12)
    x.grad = None
    y = x * 1
    y.pow_(2)  # needs y's value from before the write
    y.exp_()
    y.sum().backward()
    close(x.grad, np.exp(xv ** 2) * 2 * xv, rtol=1e-12)


def test_inplace_with_grad_tensor_argument():
    av, bv = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    a, b = leaf(av, torch.float64), leaf(bv, torch.float64)
    y = a.sin()  # saves a, not its output
    y.mul_(b)  # y = sin(a) * b
    y.sum().backward()
    close(a.grad, np.cos(av) * bv, rtol=1e-12)
    close(b.grad, np.sin(av), rtol=1e-12)
    c = leaf(av, torch.float64)
    z = c * 1
    z.mul_(c)  # z = c * c through an in-place op
    z.sum().backward()
    close(c.grad, 2 * av, rtol=1e-12)


def test_inplace_into_tensor_without_grad_makes_it_require_grad():
    av = np.array([1.0, 2.0])
    a = leaf(av, torch.float64)
    buf = torch.zeros(2, dtype=torch.float64)
    buf.add_(a * a)
    assert buf.requires_grad and not buf.is_leaf
    buf.sum().backward()
    close(a.grad, 2 * av, rtol=1e-12)


def test_mask_assignment_on_non_leaf():
    xv = np.array([1.0, -2.0, 3.0])
    x = leaf(xv, torch.float64)
    y = x * x
    y[y > 3] = 0
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    close(y, np.where(xv * xv > 3, 0, xv * xv), rtol=1e-12)
    y.sum().backward()
    close(x.grad, np.where(xv * xv > 3, 0, 2 * xv), rtol=1e-12)


def test_index_assignment_on_non_leaf():
    xv, vv = np.array([1.0, 2.0, 3.0]), np.array(4.0)
    x, v = leaf(xv, torch.float64), leaf(vv, torch.float64)
    y = x * 1
    y[0] = v
    (y * y).sum().backward()
    close(x.grad, [0.0, 4.0, 6.0], rtol=1e-12)
    close(v.grad, 2 * vv, rtol=1e-12)


def test_inplace_through_view_of_non_leaf():
    x = leaf([1.0, 2.0, 3.0], torch.float64)
    y = x * 1
    y[1:] *= 2
    y.sum().backward()
    close(x.grad, [1.0, 2.0, 2.0])


def test_version_counter_saved_output():
    x = leaf([1.0, -2.0, 3.0])
    y = x.exp()  # exp saves its output
    y.add_(1)
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation: [torch.FloatTensor [3]], which is output 0 of Exp, is at version "
           "1; expected version 0 instead. " + HINT)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        y.sum().backward()


def test_version_counter_saved_input():
    x = leaf([1.0, -2.0, 3.0])
    b = x * 2
    c = b * b  # saves b
    b.add_(1)
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation: [torch.FloatTensor [3]], which is output 0 of Add, is at version "
           "1; expected version 0 instead. " + HINT)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        c.sum().backward()


def test_version_counter_leaf_modified_under_no_grad():
    x = leaf([1.0, 2.0], torch.float64)
    y = x * x
    with torch.no_grad():
        x.mul_(10)
    assert x._version == 1
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation: [torch.DoubleTensor [2]] is at version 1; expected version 0 "
           "instead. " + HINT)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        y.sum().backward()


def test_version_counter_ignores_values_not_needed():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * 3  # needs neither y nor 3 to differentiate towards x
    y.add_(100)
    z.sum().backward()
    close(x.grad, [6.0, 6.0])


# ---------------------------------------------------------------- grad_fn

def _grad_fn_cases():
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 5, requires_grad=True)
    v = torch.randn(4, requires_grad=True)
    return {
        "AddBackward0": lambda: x + 1, "SubBackward0": lambda: x - 1,
        "MulBackward0": lambda: x * 2, "DivBackward0": lambda: x / 2,
        "NegBackward0": lambda: -x, "ExpBackward0": lambda: x.exp(),
        "LogBackward0": lambda: x.log(), "SqrtBackward0": lambda: x.sqrt(),
        "TanhBackward0": lambda: x.tanh(), "SigmoidBackward0": lambda: x.sigmoid(),
        "ReluBackward0": lambda: x.relu(), "ClampBackward1": lambda: x.clamp(min=0),
        "PowBackward0": lambda: x.pow(2), "PowBackward1": lambda: x.pow(x),
        "AbsBackward0": lambda: x.abs(), "MeanBackward0": lambda: x.mean(),
        "MeanBackward1": lambda: x.mean(0), "SumBackward0": lambda: x.sum(),
        "SumBackward1": lambda: x.sum(1), "MmBackward0": lambda: x.mm(w),
        "TBackward0": lambda: x.t(), "ViewBackward0": lambda: x.view(12),
        "ExpandBackward0": lambda: x[:, :1].expand(3, 4), "SelectBackward0": lambda: x[0],
        "SliceBackward0": lambda: x[1:], "IndexBackward0": lambda: x[[0, 2]],
        "CatBackward0": lambda: torch.cat([x, x]), "StackBackward0": lambda: torch.stack([x, x]),
        "TransposeBackward0": lambda: x.transpose(0, 1),
        "PermuteBackward0": lambda: x.permute(1, 0),
        "UnsqueezeBackward0": lambda: x.unsqueeze(0),
        "SqueezeBackward1": lambda: x[None].squeeze(0), "MaxBackward1": lambda: x.max(),
        "CloneBackward0": lambda: x.clone(), "ToCopyBackward0": lambda: x.double(),
        "VarBackward0": lambda: x.var(), "StdBackward0": lambda: x.std(),
        "WhereBackward0": lambda: torch.where(x > 0, x, 0 * x),
        "MaximumBackward0": lambda: torch.maximum(x, x * 2),
        "SinBackward0": lambda: x.sin(), "CosBackward0": lambda: x.cos(),
        "ProdBackward0": lambda: x.prod(), "BmmBackward0": lambda: torch.bmm(x[None], w[None]),
        "DotBackward0": lambda: v.dot(v), "GatherBackward0":
            lambda: x.gather(1, torch.zeros(3, 1, dtype=torch.long)),
        "FlipBackward0": lambda: x.flip(0), "RepeatBackward0": lambda: x.repeat(2, 1),
        "AmaxBackward0": lambda: x.amax(1), "ReciprocalBackward0": lambda: x.reciprocal(),
        "SplitBackward0": lambda: x.split(2)[1], "UnbindBackward0": lambda: x.unbind()[0],
    }


@pytest.mark.parametrize("name", list(_grad_fn_cases()))
def test_grad_fn_names(name):
    y = _grad_fn_cases()[name]()
    assert type(y.grad_fn).__name__ == name
    assert y.grad_fn.name() == name
    assert re.fullmatch(f"<{name} object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert repr(y).endswith(f"grad_fn=<{name}>)")


def test_grad_fn_of_leaf_is_none():
    x = leaf([1.0])
    assert x.grad_fn is None and torch.ones(1).grad_fn is None


def test_next_functions_walk_to_accumulate_grad():
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).sum()
    assert type(y.grad_fn).__name__ == "SumBackward0"
    (mul, k), = y.grad_fn.next_functions
    assert type(mul).__name__ == "MulBackward0" and k == 0
    (acc, k0), (const, k1) = mul.next_functions
    assert type(acc).__name__ == "AccumulateGrad" and k0 == 0
    assert const is None and k1 == 0  # the Python scalar 2 has no grad_fn
    assert acc.variable is x
    assert acc.next_functions == ()
    assert acc.name() == "torch::autograd::AccumulateGrad"


def test_next_functions_of_two_branches():
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 3, requires_grad=True)
    z = x * w.t()
    (a, _), (b, _) = z.grad_fn.next_functions
    assert type(a).__name__ == "AccumulateGrad" and a.variable is x
    assert type(b).__name__ == "TBackward0"
    (c, _), = b.next_functions
    assert c.variable is w
    u = x * 2 + torch.randn(3, 4)  # the constant operand has no function
    assert [type(f).__name__ if f is not None else None for f, _ in u.grad_fn.next_functions] \
        == ["MulBackward0", None]


def test_every_function_of_a_graph_walk_is_an_autograd_graph_node():
    from fusetorch.autograd.graph import Node
    x = torch.randn(3, requires_grad=True)
    y = (x.exp() * 2).sum()
    seen, todo = [], [y.grad_fn]
    while todo:  # the graph walk of visualisation scripts
        fn = todo.pop()
        assert isinstance(fn, Node)
        seen.append(fn.name())
        todo += [f for f, _ in fn.next_functions if f is not None]
    assert seen == ["SumBackward0", "MulBackward0", "ExpBackward0",
                    "torch::autograd::AccumulateGrad"]
    assert not isinstance(x, Node) and not isinstance(None, Node)


def test_tutorial_reprs():
    x = torch.ones(2, 2, requires_grad=True)
    assert repr(x) == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
    y = x + 2
    assert repr(y) == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
    z = y * y * 3
    out = z.mean()
    assert repr(z) == "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)"
    assert repr(out) == "tensor(27., grad_fn=<MeanBackward0>)"


# ---------------------------------------------------------------- autograd.Function

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


def test_myrelu_matches_clamp():
    xv = np.random.randn(5, 7)
    xv[0, :3] = 0.0  # ties at zero: MyReLU passes the gradient there (input < 0 masks)
    gv = np.random.randn(5, 7)
    x1, x2 = leaf(xv), leaf(xv)
    y1 = MyReLU.apply(x1)
    y2 = x2.clamp(min=0)
    close(y1, np.maximum(xv, 0))
    close(y2, np.maximum(xv, 0))
    y1.backward(torch.tensor(gv, dtype=torch.float32))
    y2.backward(torch.tensor(gv, dtype=torch.float32))
    close(x1.grad, np.where(xv < 0, 0, gv))
    close(x2.grad, np.where(xv < 0, 0, gv))  # clamp passes at the bound too


def test_myrelu_grad_fn_and_graph():
    x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    y = MyReLU.apply(x)
    assert type(y.grad_fn).__name__ == "MyReLUBackward"
    assert repr(y) == "tensor([0., 0., 2.], grad_fn=<MyReLUBackward>)"
    (acc, _), = y.grad_fn.next_functions
    assert acc.variable is x
    (y * y).sum().backward()
    close(x.grad, [0.0, 0.0, 4.0])
    with pytest.raises(RuntimeError, match=re.escape("Trying to backward through the graph a "
                                                     "second time")):
        y.sum().backward()


def test_myrelu_inside_a_larger_graph():
    xv = np.random.randn(4, 3)
    wv = np.random.randn(3, 2)
    x, w = leaf(xv, torch.float64), leaf(wv, torch.float64)
    h = MyReLU.apply(x.mm(w))
    (h.exp()).sum().backward()
    pre = xv @ wv
    g_pre = np.where(pre < 0, 0, np.exp(np.maximum(pre, 0)))
    close(w.grad, xv.T @ g_pre, rtol=1e-10)
    close(x.grad, g_pre @ wv.T, rtol=1e-10)


def test_function_without_grad_returns_plain_tensor():
    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        y = MyReLU.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    z = MyReLU.apply(torch.tensor([-1.0, 2.0]))
    assert not z.requires_grad and z.grad_fn is None
    close(z, [0.0, 2.0])


class ScaledMul(torch.autograd.Function):
    """a * b * k for tensors a, b and a Python number k; records what ctx says."""
    seen = {}

    @staticmethod
    def forward(ctx, a, b, k):
        ctx.save_for_backward(a, b)
        ctx.k = k
        ScaledMul.seen["forward"] = ctx.needs_input_grad
        ScaledMul.seen["grad_in_forward"] = torch.is_grad_enabled()
        return a * b * k

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ScaledMul.seen["backward"] = ctx.needs_input_grad
        return (g * b * ctx.k if ctx.needs_input_grad[0] else None,
                g * a * ctx.k if ctx.needs_input_grad[1] else None, None)


def test_function_two_tensor_inputs_and_a_number():
    av, bv = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    a, b = leaf(av, torch.float64), leaf(bv, torch.float64)
    y = ScaledMul.apply(a, b, 5.0)
    assert ScaledMul.seen["forward"] == (True, True, False)
    assert ScaledMul.seen["grad_in_forward"] is False  # forward runs without recording
    close(y, av * bv * 5, rtol=1e-12)
    (y * y).sum().backward()
    close(a.grad, 2 * av * bv * 5 * bv * 5, rtol=1e-12)
    close(b.grad, 2 * av * bv * 5 * av * 5, rtol=1e-12)


def test_function_needs_input_grad_partial():
    av, bv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    a, b = leaf(av, torch.float64), torch.tensor(bv)
    ScaledMul.apply(a, b, 5.0).sum().backward()
    assert ScaledMul.seen["backward"] == (True, False, False)
    close(a.grad, bv * 5, rtol=1e-12)
    assert b.grad is None


def test_function_gradcheck():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, c: ScaledMul.apply(a, c, 0.5), (x, w))
    # shift away from the kink so central differences are valid
    xs = torch.tensor(np.random.randn(6) + np.sign(np.random.randn(6)) * 0.5,
                      requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: MyReLU.apply(a * 2.0) * a, (xs,))


def test_gradcheck_catches_a_wrong_backward():
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * a  # should be 2 * g * a

    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        torch.autograd.gradcheck(Wrong.apply, (x,))


def test_function_wrong_number_of_gradients():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g

    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^" + re.escape(
            "function BadBackward returned an incorrect number of gradients (expected 2, got 1)")
            + "$"):
        Bad.apply(a, 2.0).sum().backward()

    class TrailingNones(torch.autograd.Function):  # the conv-bn fusion tutorial's backward
        @staticmethod
        def forward(ctx, a, k=3.0):
            ctx.k = k
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None, None  # (PyTorch drops the Nones past the inputs)

    a = leaf([1.0, 2.0])
    TrailingNones.apply(a).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]

    class Extra(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, g

    b = leaf([1.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "function ExtraBackward returned an incorrect number of gradients (expected 1, "
            "got 3)")):
        Extra.apply(b).sum().backward()


def test_function_saved_tensor_modified():
    c = leaf([1.0, -2.0])
    h = c * 1
    y = MyReLU.apply(h)
    h.add_(1)
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation: [torch.FloatTensor [2]], which is output 0 of Add, is at version "
           "1; expected version 0 instead. " + HINT)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        y.sum().backward()


class SinCos(torch.autograd.Function):
    """(sin x, cos x, 3): two differentiable outputs and a number; backward records its
    cotangents."""
    seen = []

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos(), 3

    @staticmethod
    def backward(ctx, gs, gc, gk):
        SinCos.seen.append((gs, gc, gk))
        x, = ctx.saved_tensors
        return gs * x.cos() - gc * x.sin()


def test_function_several_outputs_one_backward_call():
    xv = np.array([0.5, -1.0, 2.0])
    x = leaf(xv, torch.float64)
    s, c, k = SinCos.apply(x)
    assert k == 3 and s.requires_grad and c.requires_grad
    assert type(s.grad_fn).__name__ == type(c.grad_fn).__name__ == "SinCosBackward"
    (acc, _), = s.grad_fn.next_functions
    assert acc.variable is x
    close(s, np.sin(xv), rtol=1e-12)
    close(c, np.cos(xv), rtol=1e-12)
    SinCos.seen.clear()
    (2 * s + 3 * c).sum().backward()
    (gs, gc, gk), = SinCos.seen  # one call with every cotangent
    close(gs, [2.0] * 3)
    close(gc, [3.0] * 3)
    assert gk is None
    close(x.grad, 2 * np.cos(xv) - 3 * np.sin(xv), rtol=1e-12)


def test_function_output_without_gradient_gets_zeros():
    x = leaf([0.5, 1.0], torch.float64)
    s, c, _ = SinCos.apply(x)
    SinCos.seen.clear()
    s.sum().backward()
    (gs, gc, _), = SinCos.seen
    assert gc.tolist() == [0.0, 0.0] and gs.tolist() == [1.0, 1.0]
    close(x.grad, np.cos([0.5, 1.0]), rtol=1e-12)


def test_function_set_materialize_grads_false_gives_none():
    seen = []

    class Pair(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            seen.append((ga, gb))
            return (0 if ga is None else ga * 2) + (0 if gb is None else gb * 3)

    x = leaf([1.0, 2.0])
    a, b = Pair.apply(x)
    b.sum().backward()
    assert seen[-1][0] is None and seen[-1][1].tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [3.0, 3.0]
    a, b = Pair.apply(x)
    (a + b).sum().backward()  # both received: neither is None
    assert seen[-1][0].tolist() == [1.0, 1.0] and seen[-1][1].tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [8.0, 8.0]


def test_function_non_differentiable_output():
    class MaxAt(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            v, i = x.max(0)
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            ctx.n = x.shape[0]
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            i, = ctx.saved_tensors
            assert gi.dtype == torch.int64 and gi.tolist() == 0
            g = torch.zeros(ctx.n, dtype=gv.dtype)
            g[i] = gv
            return g

    x = leaf([0.5, 3.0, 2.0])
    v, i = MaxAt.apply(x)
    assert not i.requires_grad and i.tolist() == 1
    assert type(v.grad_fn).__name__ == "MaxAtBackward"
    (v * 4).backward()
    assert x.grad.tolist() == [0.0, 4.0, 0.0]


def test_function_outputs_of_two_dtypes_two_inputs():
    class SumProd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b, (a * b).float()

        @staticmethod
        def backward(ctx, gs, gp):
            a, b = ctx.saved_tensors
            assert gs.dtype == torch.float64 and gp.dtype == torch.float32
            return gs + gp * b, gs + gp * a

    av, bv = np.array([1.0, -2.0]), np.array([3.0, 0.5])
    a, b = leaf(av, torch.float64), leaf(bv, torch.float64)
    s, p = SumProd.apply(a, b)
    assert s.dtype == torch.float64 and p.dtype == torch.float32
    close(p, av * bv)
    (s * 2 + p * 5).sum().backward()
    close(a.grad, 2 + 5 * bv, rtol=1e-6)
    close(b.grad, 2 + 5 * av, rtol=1e-6)


def test_function_several_outputs_create_graph():
    xv = np.array([0.3, 1.2])
    x = leaf(xv, torch.float64)
    s, c, _ = SinCos.apply(x)
    g, = torch.autograd.grad((s * c).sum(), x, create_graph=True)
    close(g, np.cos(2 * xv), rtol=1e-12)  # d/dx sin x cos x = cos 2x
    g2, = torch.autograd.grad(g.sum(), x)
    close(g2, -2 * np.sin(2 * xv), rtol=1e-12)


def test_function_list_and_one_tuple_outputs():
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2,)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class AsList(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2]

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0, 2.0])
    out = Twice.apply(x)
    assert type(out) is tuple and type(out[0].grad_fn).__name__ == "TwiceBackward"
    out[0].sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    listed = AsList.apply(x)  # PyTorch: a list is one non-tensor output, not differentiated
    assert type(listed) is list and not listed[0].requires_grad


def test_function_create_graph():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return 3 * g * a * a

    xv = np.array([1.0, -2.0, 0.5])
    x = leaf(xv, torch.float64)
    g, = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    close(g, 3 * xv ** 2, rtol=1e-12)
    g2, = torch.autograd.grad(g.sum(), x)
    close(g2, 6 * xv, rtol=1e-12)


def test_function_with_setup_context():
    # "Extending PyTorch": forward without ctx, setup_context(ctx, inputs, output) with
    # forward's defaults bound into inputs (and so one gradient per parameter of forward)
    seen = {}

    class LinearFunction(torch.autograd.Function):
        @staticmethod
        def forward(input, weight, bias=None):
            out = input.mm(weight.t())
            return out if bias is None else out + bias

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen["inputs"] = len(inputs)
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight)
            ctx.has_bias = bias is not None

        @staticmethod
        def backward(ctx, g):
            input, weight = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, True, False)
            return g.mm(weight), g.t().mm(input), g.sum(0) if ctx.has_bias else None

    xv, wv = np.arange(6.0).reshape(2, 3) / 4, np.array([[1.0, -1.0, 2.0]])
    x, w = leaf(xv, torch.float64), leaf(wv, torch.float64)
    out = LinearFunction.apply(x, w)
    assert seen["inputs"] == 3 and out.grad_fn.name() == "LinearFunctionBackward"
    out.sum().backward()
    close(x.grad, np.ones((2, 1)) @ wv, rtol=1e-12)
    close(w.grad, np.ones((1, 2)) @ xv, rtol=1e-12)
    close(LinearFunction.apply(x, w, bias=w[0, :1]), xv @ wv.T + 1.0, rtol=1e-12)

    class MyCube(torch.autograd.Function):  # a second output: the derivative, saved
        @staticmethod
        def forward(x):
            return x ** 3, 3 * x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output[1])

        @staticmethod
        def backward(ctx, g, g_dx):
            x, dx = ctx.saved_tensors
            return g * dx + g_dx * 6 * x

    x = leaf(np.array([1.0, -2.0, 0.5]), torch.float64)
    g, = torch.autograd.grad(MyCube.apply(x)[0].sum(), x, create_graph=True)
    close(g, 3 * x.detach().numpy() ** 2, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="setup_context is not implemented."):
        torch.autograd.Function.setup_context(None, (), None)



def test_saved_outputs_of_a_function_differentiate_through_it_again():
    # the double-backward tutorial: intermediates returned as outputs and saved are unpacked
    # as the recorded outputs, so the second derivative reaches x through them
    class Sinh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx, expnegx = torch.exp(x), torch.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, g, g_exp, g_negexp):
            expx, expnegx = ctx.saved_tensors
            return g * (expx + expnegx) / 2 + g_exp * expx - g_negexp * expnegx

    class MyCube(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3, 3 * x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output[1])

        @staticmethod
        def backward(ctx, g, g_dx):
            x, dx = ctx.saved_tensors
            return g * dx + g_dx * 6 * x

    xv = np.array([[0.3, -1.2], [2.0, 0.0]])
    x = leaf(xv, torch.float64)
    g, = torch.autograd.grad(Sinh.apply(x)[0].sum(), x, create_graph=True)
    close(g, np.cosh(xv), rtol=1e-12)
    gg, = torch.autograd.grad(g.sum(), x)
    close(gg, np.sinh(xv), rtol=1e-12, atol=1e-15)
    g, = torch.autograd.grad(MyCube.apply(x)[0].sum(), x, create_graph=True)
    gg, = torch.autograd.grad(g.sum(), x)
    close(gg, 6 * xv, rtol=1e-12)
    # the saved output is the returned tensor's value: writing it in place is seen
    y, ex, _ = Sinh.apply(x)
    with torch.no_grad():
        ex.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---------------------------------------------------------------- Variable

def test_variable_returns_a_tensor_leaf():
    base = torch.tensor([1.0, 2.0])
    v = torch.autograd.Variable(base, requires_grad=True)
    assert type(v) is Tensor and isinstance(v, Tensor)
    assert v.is_leaf and v.requires_grad and v.grad_fn is None
    assert not base.requires_grad
    (v * v).sum().backward()
    close(v.grad, [2.0, 4.0])
    plain = torch.autograd.Variable(torch.ones(2))
    assert not plain.requires_grad and plain.is_leaf


def test_variable_volatile_warns():
    with pytest.warns(UserWarning, match="^" + re.escape(
            "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.")
            + "$"):
        v = torch.autograd.Variable(torch.randn(2), volatile=True)
    assert type(v) is Tensor and not v.requires_grad


# ---------------------------------------------------------------- autograd.grad

def test_grad_returns_and_does_not_touch_dot_grad():
    xv = np.array([1.0, 2.0, -3.0])
    x = leaf(xv, torch.float64)
    g, = torch.autograd.grad((x * x).sum(), x)
    close(g, 2 * xv, rtol=1e-12)
    assert x.grad is None
    assert not g.requires_grad
    single = torch.autograd.grad((x * 3).sum(), [x])
    assert isinstance(single, tuple) and len(single) == 1
    close(single[0], [3.0, 3.0, 3.0])


def test_grad_several_inputs_and_outputs():
    av, bv = np.array([1.0, 2.0]), np.array([-1.0, 0.5])
    a, b = leaf(av, torch.float64), leaf(bv, torch.float64)
    ga, gb = torch.autograd.grad((a * b).sum(), (a, b))
    close(ga, bv, rtol=1e-12)
    close(gb, av, rtol=1e-12)
    g, = torch.autograd.grad([(a * 2).sum(), (a * a).sum()], a)
    close(g, 2 + 2 * av, rtol=1e-12)
    g1, g2 = torch.autograd.grad((a * 2).sum(), [a, a])
    close(g1, [2.0, 2.0])
    close(g2, [2.0, 2.0])


def test_grad_outputs():
    av = np.array([1.0, 2.0])
    a = leaf(av, torch.float64)
    g, = torch.autograd.grad(a * a, a, grad_outputs=torch.tensor([1.0, 10.0],
                                                                 dtype=torch.float64))
    close(g, 2 * av * [1.0, 10.0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar "
                                           "outputs$"):
        torch.autograd.grad(a * 2, a)
    msg = ("Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has "
           "a shape of torch.Size([]).")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        torch.autograd.grad((a * 2).sum(), a, grad_outputs=torch.ones(3))


def test_grad_unused_input():
    a = leaf([1.0, 2.0])
    b = leaf([1.0, 2.0])
    msg = ("The differentiated Tensor at index 1 appears to not have been used in the graph. "
           "Set allow_unused=True if this is the desired behavior.")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        torch.autograd.grad((a * 2).sum(), [a, b])
    ga, gb = torch.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    close(ga, [2.0, 2.0])
    assert gb is None


def test_grad_input_without_grad():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require "
                                           "grad$"):
        torch.autograd.grad((a * 2).sum(), [torch.randn(2)])


def test_grad_non_leaf_inputs():
    av = np.array([1.0, -2.0])
    a = leaf(av, torch.float64)
    m = a * 3
    h = m.exp()
    gm, gh = torch.autograd.grad((h * m).sum(), [m, h])
    mv = 3 * av
    close(gm, np.exp(mv) * mv + np.exp(mv), rtol=1e-12)
    close(gh, mv, rtol=1e-12)
    assert a.grad is None


def test_grad_frees_graph_unless_retained():
    a = leaf([1.0, 2.0])
    y = (a * a).sum()
    torch.autograd.grad(y, a, retain_graph=True)
    g, = torch.autograd.grad(y, a)
    close(g, [2.0, 4.0])
    with pytest.raises(RuntimeError, match=re.escape("Trying to backward through the graph a "
                                                     "second time")):
        torch.autograd.grad(y, a)


def test_higher_order_derivatives():
    xv = np.array([1.0, 2.0, -0.5])
    x = leaf(xv, torch.float64)
    y = (x ** 3).sum()
    g, = torch.autograd.grad(y, x, create_graph=True)
    close(g, 3 * xv ** 2, rtol=1e-12)
    assert g.requires_grad and type(g.grad_fn).__name__ == "MulBackward0"
    g2, = torch.autograd.grad(g.sum(), x, create_graph=True)
    close(g2, 6 * xv, rtol=1e-12)
    g3, = torch.autograd.grad(g2.sum(), x)
    close(g3, [6.0, 6.0, 6.0], rtol=1e-12)
    assert x.grad is None


def test_higher_order_of_composite():
    # f(x) = sum(sin(x) * x^2); f' = cos x x^2 + 2x sin x; f'' = -sin x x^2 + 4x cos x + 2 sin x
    xv = np.array([0.3, -1.2, 2.0])
    x = leaf(xv, torch.float64)
    g, = torch.autograd.grad((x.sin() * x * x).sum(), x, create_graph=True)
    close(g, np.cos(xv) * xv ** 2 + 2 * xv * np.sin(xv), rtol=1e-12)
    g2, = torch.autograd.grad(g.sum(), x)
    close(g2, -np.sin(xv) * xv ** 2 + 4 * xv * np.cos(xv) + 2 * np.sin(xv), rtol=1e-12)


def test_backward_create_graph_then_grad_of_grad():
    xv = np.array([1.0, 3.0])
    x = leaf(xv, torch.float64)
    (x ** 3).sum().backward(create_graph=True)
    close(x.grad, 3 * xv ** 2, rtol=1e-12)
    assert x.grad.requires_grad
    g2, = torch.autograd.grad(x.grad.sum(), x)
    close(g2, 6 * xv, rtol=1e-12)


def test_gradgradcheck():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: (t.tanh() * t).sum(), (x,))


# ---------------------------------------------------------------- backward graph text

def test_backward_graph_text_lines():
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, 2, requires_grad=True)
    text = backward_graph_text(x[None].mm(w).clamp(min=0).sum())
    lines = text.strip().splitlines()
    assert lines[-1].startswith("return (")
    body = lines[:-1]
    assert all(re.match(r"^%\d+ = \w+\(", ln) for ln in body)
    assert [int(re.match(r"^%(\d+)", ln).group(1)) for ln in body] == list(range(len(body)))
    ops = [re.match(r"^%\d+ = (\w+)\(", ln).group(1) for ln in body]
    assert "matmul" in ops and "input" in ops
    assert lines[-1].count("%") == 2  # one gradient per leaf (x and w)


def test_backward_graph_text_differs_between_programs():
    x = torch.randn(3, requires_grad=True)
    t1 = backward_graph_text((x * x).sum())
    t2 = backward_graph_text(x.sin().sum())
    t3 = backward_graph_text((x * x).sum())
    assert t1 != t2
    assert t1 == t3  # the same program gives the same text
    assert " = cos(" not in t1 and " = cos(" in t2  # d sin(x) = cos(x)
    with pytest.raises(RuntimeError, match="does not require grad"):
        backward_graph_text(torch.randn(3).sum())


def test_backward_graph_text_does_not_run_backward():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    backward_graph_text(y)
    assert x.grad is None
    y.backward()  # the graph was not freed
    close(x.grad, [2.0, 4.0])


# ---------------------------------------------------------------- PyTorch's deprecated arguments


def test_grad_accepts_only_inputs_with_pytorchs_warning():
    import warnings
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # True is the default: no warning
        (g,) = torch.autograd.grad((x * x).sum(), x, only_inputs=True, retain_graph=True)
    assert g.tolist() == [2.0, 4.0]
    with pytest.warns(FutureWarning, match=r"only_inputs argument is deprecated and is ignored "
                      r"now \(defaults to True\)\. To accumulate gradient for other parts of the "
                      r"graph, please use torch\.autograd\.backward\."):
        (g,) = torch.autograd.grad((x * x).sum(), x, None, None, False, False)
    assert g.tolist() == [2.0, 4.0] and x.grad is None  # still not accumulated


def test_grad_positional_order_is_pytorchs():
    x = torch.tensor([3.0], requires_grad=True)
    y = torch.tensor([1.0], requires_grad=True)
    # outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused
    gx, gy = torch.autograd.grad((x * x).sum(), [x, y], None, None, False, True, True)
    assert gx.tolist() == [6.0] and gy is None
    gx, gy = torch.autograd.grad((x * x).sum(), [x, y], materialize_grads=True)
    assert gy.tolist() == [0.0]
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
        torch.autograd.grad((x * x).sum(), [x, y], allow_unused=False, materialize_grads=True)
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        torch.autograd.grad((x * x).sum(), x, is_grads_batched=True)


def test_backward_accepts_grad_variables_with_pytorchs_warning():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated. Use `grad_tensors` "
                                           "instead."):
        torch.autograd.backward([x * 3], grad_variables=[torch.tensor([1.0, 10.0])])
    assert x.grad.tolist() == [3.0, 30.0]
    with pytest.raises(RuntimeError, match="`grad_tensors` and `grad_variables` \\(deprecated\\) "
                                           "arguments both passed"), pytest.warns(FutureWarning):
        torch.autograd.backward([x * 3], torch.ones(2), None, False, torch.ones(2))
    # inputs= stays a keyword after the deprecated one, as in PyTorch
    y = torch.tensor([2.0], requires_grad=True)
    torch.autograd.backward((x * y).sum(), None, None, False, None, [y])
    assert y.grad.tolist() == [3.0]


def test_once_differentiable_backward():
    # `from torch.autograd.function import once_differentiable` (custom-op code): the backward
    # runs unrecorded; PyTorch 2.13 gives x.grad 6 here and, differentiating the gradient
    # again, "element 0 of tensors does not require grad" (its grad_output does not require it)
    from fusetorch.autograd.function import Function, once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x = torch.tensor([3.0], requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [6.0]
    g, = torch.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad and g.tolist() == [6.0]
    # a grad_output that requires grad would need the backward recorded: refused, not dropped
    y = Square.apply(x)
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        torch.autograd.grad(y, x, torch.ones(1, requires_grad=True), create_graph=True)


def test_custom_function_gradient_broadcast_is_summed_back_and_wrong_shapes_refused():
    # PyTorch's engine (validate_outputs): a gradient with extra leading dims, or broadcast
    # over an input's unit dims, is summed to the input's shape; anything else is an error
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, grad_shape):
            ctx.grad_shape = grad_shape
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return torch.ones(ctx.grad_shape), None

    x = torch.ones(2, requires_grad=True)
    Twice.apply(x, (4, 2)).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]
    u = torch.ones(2, 1, requires_grad=True)
    Twice.apply(u, (2, 3)).sum().backward()
    assert u.grad.tolist() == [[3.0], [3.0]]
    s = torch.tensor(1.0, requires_grad=True)
    Twice.apply(s, (5,)).backward()
    assert s.grad.item() == 5.0
    w = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function TwiceBackward returned an invalid "
                                           r"gradient at index 0 - got \[3, 2\] but expected "
                                           r"shape compatible with \[2, 3\]"):
        Twice.apply(w, (3, 2)).sum().backward()
