"""In-place writes through views of tensors that require grad: PyTorch's "rebase" of the view's
history onto its base (the base becomes CopySlices, the view AsStridedBackward0), other views of
a written base seeing the write, and PyTorch's refusals (views of leaves, outputs of
split/chunk/unbind, views made in no_grad mode).

Gradients are checked against central finite differences (`gradcheck`, float64) and numpy
float64 references; values written literally, grad_fn names and error messages were observed by
hand in PyTorch 2.13.0 (CPU). torch is not imported here.
"""
import re

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck
from fusetorch.tracer import capture, run

F64 = torch.float64
X = np.arange(1.0, 13.0).reshape(3, 4)

VIEW_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
MULTI = (" This view is the output of a function that returns multiple views. Such functions do "
         "not allow the output views to be modified inplace. You should replace the inplace "
         "operation by an out-of-place one.")
NO_GRAD = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
           "clarify your code by moving both the view and the inplace either both inside the "
           "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
           "want the inplace to be tracked).")
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def leaf(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=True)


def rand(seed, shape):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape)


def check(fn, *arrays):
    assert gradcheck(fn, tuple(leaf(a) for a in arrays))


def name(t):
    return type(t.grad_fn).__name__


def nexts(t):
    return [None if f is None else type(f).__name__ for f, _ in t.grad_fn.next_functions]


def raises(msg):
    return pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$")


# ---------------------------------------------------------------- PyTorch's values

def test_zero_through_a_slice():
    x = leaf(X)
    y = x * 2
    y[:, :2].zero_()
    assert name(y) == "CopySlices" and nexts(y) == ["MulBackward0"]
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 24, 32], [0, 0, 56, 64],
                                                   [0, 0, 88, 96]])


def test_writes_through_view_and_slice_operator():
    x = leaf(X)
    y = x * 2
    v = y.view(-1)
    v.mul_(3)
    y[1:] *= 2
    assert name(y) == "CopySlices" and name(v) == "AsStridedBackward0"
    assert nexts(v) == ["CopySlices"]
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[72, 144, 216, 288],
                                                   [1440, 1728, 2016, 2304],
                                                   [2592, 2880, 3168, 3456]])


def test_chain_of_views_with_a_value_that_requires_grad():
    x, t = leaf(X), leaf([1.0, -1.0])
    y = x * 1
    w = y[1:][:, 0]
    w.add_(t * t)
    assert nexts(y) == ["MulBackward0", "MulBackward0"]
    assert name(w) == "AsStridedBackward0"
    (y ** 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3, 12, 27, 48], [108, 108, 147, 192],
                                                   [300, 300, 363, 432]])
    np.testing.assert_array_equal(t.grad.numpy(), [216.0, -600.0])


def test_setitem_through_a_view_of_a_clone():
    # PyTorch 2.13: the write through b[1] lands in b, and backward sees it
    x, v = leaf(np.ones((2, 3))), leaf(5.0)
    b = x.clone()
    b[1][0] = v
    assert name(b) == "CopySlices" and nexts(b) == ["CloneBackward0", "AccumulateGrad"]
    (b * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=F64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0, 3.0], [0.0, 5.0, 6.0]])
    assert v.grad.item() == 4.0


def test_view_read_after_its_base_was_written():
    # the view's grad_fn is regenerated on the base's new history (AsStridedBackward0)
    x = leaf(X)
    y = x.clone()
    a = y[0]
    y.mul_(2)
    assert name(a) == "AsStridedBackward0"
    (a * a).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[8, 16, 24, 32], [0] * 4, [0] * 4])


def test_sibling_view_sees_a_write_through_another_view():
    xv = rand(1, (3, 4))
    x = leaf(xv)
    y = x * 2
    a, b = y[0], y[:, 1]
    b.mul_(3)  # writes a[1] too
    (a * a).sum().backward()
    want = 8 * xv[0]
    want[1] *= 9
    np.testing.assert_allclose(x.grad.numpy()[0], want, rtol=1e-12)
    assert np.all(x.grad.numpy()[1:] == 0)


def test_base_that_did_not_require_grad_takes_the_written_gradient():
    w = leaf([1.0, 2.0, 3.0, 4.0])
    b = torch.zeros(3, 4, dtype=F64)
    v, other = b[0], b[:, 1]
    v.copy_(w * 3)
    assert b.requires_grad and not b.is_leaf and name(b) == "CopySlices"
    assert nexts(b) == [None, "MulBackward0"]
    assert other.requires_grad and name(other) == "AsStridedBackward0"  # a view taken before
    (b.sum() + (other * 10).sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 33.0, 3.0, 3.0])


def test_view_taken_before_its_base_gained_a_gradient_is_differentiable():
    w = leaf(X)
    b = torch.zeros(3, 4, dtype=F64)
    v = b[1]
    b.copy_(w * 1)
    z = v * 2  # the fast path of `*` sees the view's base has a gradient now
    assert z.requires_grad
    z.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0] * 4, [2] * 4, [0] * 4])


def test_write_under_no_grad_keeps_the_history():
    x = leaf(X)
    y = x * 2
    v = y[0]
    with torch.no_grad():
        v.add_(1)
    assert name(y) == "MulBackward0" and y._version == 1
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 4 * (2 * X + np.array([[1], [0], [0]])))


def test_view_of_a_parameter_after_an_optimizer_step():
    w = leaf(X)
    v = w[0]
    with torch.no_grad():
        w.sub_(0.5)
    (v * v).sum().backward()  # v reads w's new values
    np.testing.assert_array_equal(w.grad.numpy()[0], 2 * (X[0] - 0.5))
    assert name(v) == "AsStridedBackward0"


def test_setitem_on_a_base_is_copyslices_and_advanced_is_indexput():
    x, t = leaf(X), leaf([2.0, 3.0])
    y = x * 2
    y[0, 1:3] = t.sum()
    assert name(y) == "CopySlices" and nexts(y) == ["MulBackward0", "SumBackward0"]
    z = x * 2
    z[[0, 2]] = 1.0
    assert name(z) == "IndexPutBackward0" and nexts(z) == ["MulBackward0", None]


def test_retain_grad_follows_the_base_and_leaves_the_view():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y.retain_grad()
    y[0].mul_(3)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [12.0, 8.0, 12.0])
    np.testing.assert_array_equal(x.grad.numpy(), [72.0, 16.0, 24.0])
    x.grad = None
    y = x * 2
    v = y[1:]
    v.retain_grad()
    v.mul_(3)
    (y * y).sum().backward()
    assert v.grad is None  # its new grad_fn is not on the path from y (PyTorch)
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 144.0, 216.0])


def test_version_counter_shared_and_saved_views_checked():
    x = leaf(X)
    y = x * 2
    v = y[0]
    v.mul_(2)
    assert (y._version, v._version) == (1, 1)
    y = x.clone()
    a, b = y[0], y[1]
    b.mul_(a)  # saves a, which shares b's storage: the write moves its version
    with raises("one of the variables needed for gradient computation has been modified by an "
                "inplace operation: [torch.DoubleTensor [4]], which is output 0 of AsStrided, "
                "is at version 1; expected version 0 instead. " + HINT):
        (b * y[2]).sum().backward()
    y = x * 1
    z = y * y  # saves y
    y[0].mul_(2)
    with raises("one of the variables needed for gradient computation has been modified by an "
                "inplace operation: [torch.DoubleTensor [3, 4]], which is output 0 of "
                "torch::autograd::CopySlices, is at version 1; expected version 0 instead. "
                + HINT):
        z.sum().backward()


def test_write_through_a_view_of_a_detached_tensor_rebases_onto_it():
    x, w = leaf(X), leaf(rand(3, (3, 4)))
    y = x * 2
    d = y.detach()
    d2 = d[1:]
    d2.copy_(w[1:] * 1)
    assert name(y) == "MulBackward0" and name(d) == "CopySlices" and d.requires_grad
    (d.sum() + y.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))
    np.testing.assert_array_equal(w.grad.numpy(), [[0] * 4, [1] * 4, [1] * 4])


# ---------------------------------------------------------------- gradcheck

def _writes(x, w):
    y = x.tanh() + 0.0  # tanh saves its output: write into a copy
    y[1:3].mul_(w)                                   # slice, broadcast value
    y[:, 1:4].t()[0].add_(y[0, :4] * 0.5)            # transpose of a slice
    y.narrow(1, 0, 2).unsqueeze(0).mul_(x[0, :2])    # narrow + unsqueeze
    y.select(0, 3).sub_(w.exp())                     # select
    y.permute(1, 0)[4].sigmoid_()                    # permute
    y.reshape(20)[::3].div_(2.0)                     # reshape that is a view, stepped slice
    y[None, 2, None].pow_(2)                         # None in the key
    return y


def test_gradcheck_writes_through_every_kind_of_view():
    check(_writes, rand(0, (4, 5)), rand(1, (5,)) + 3)


def test_gradcheck_view_used_after_writes_and_a_written_value_that_is_a_view():
    def f(x):
        y = x * 1
        a, b = y[0], y[:, 2]
        a.mul_(x[1])
        b.add_(a[1:5].clone())
        y.t()[3].sin_()
        return y.sum() + (a * b[0]).sum(), a, b
    check(f, rand(2, (4, 5)))


def test_gradcheck_setitem_forms_through_views():
    def f(x, v):
        y = x.clone()
        y[1][2] = v.sum()
        y[2:][:, [0, 3]] = v[:2]
        r = y.view(2, 10)
        r[r[:, 0] > 0] = 0.5          # a mask on a view
        y[:, 1:][y[:, 1:] < -1] = v[0]
        return y * y
    check(f, rand(3, (4, 5)), rand(4, (3,)))


def test_numpy_reference_for_a_chain_of_writes():
    xv, wv = rand(5, (4, 5)), rand(6, (5,)) + 3
    y = _writes(leaf(xv), leaf(wv))
    ref = np.tanh(xv)
    ref[1:3] *= wv
    ref[:, 1:4].T[0] += ref[0, :4] * 0.5
    ref[:, 0:2][None] *= xv[0, :2]
    ref[3] -= np.exp(wv)
    ref.T[4] = 1 / (1 + np.exp(-ref.T[4]))
    ref.reshape(20)[::3] /= 2.0
    ref[None, 2, None] **= 2
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12)


def test_double_backward_through_a_rebased_base():
    xv = np.array([0.5, -1.5, 2.0])
    x = leaf(xv)
    y = x * x
    y[1:].mul_(x[:2])
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2 * xv[0] + xv[1] ** 2,
                                                    2 * xv[1] * xv[0] + xv[2] ** 2,
                                                    2 * xv[2] * xv[1]], rtol=1e-12)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 + 2 * xv[1], 2 * xv[1] + 2 * xv[0] + 2 * xv[2],
                                                2 * xv[2] + 2 * xv[1]], rtol=1e-12)


def test_backward_reuses_no_buffer_that_a_live_view_reads():
    # the interpreter writes index_put into a dead input's buffer; an index (view) of that
    # buffer still to be read keeps it alive (two writes through one view read its cotangent)
    x = leaf(np.ones((2, 3)))
    y = x * 2
    v = y[1]
    v.mul_(x[0])
    v.add_(v * 2)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[8.0] * 3, [6.0] * 3])


# ---------------------------------------------------------------- PyTorch's refusals

@pytest.mark.parametrize("write", [
    lambda x: x[0].add_(1),
    lambda x: x[1:][0].add_(1),
    lambda x: x[1:].__setitem__(0, 1.0),
    lambda x: x.view(3, 1).mul_(2),
    lambda x: x.t().zero_(),
], ids=["select", "slice_of_slice", "setitem_on_view", "view", "t"])
def test_view_of_a_leaf(write):
    with raises(VIEW_LEAF):
        write(leaf([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("write,msg", [
    (lambda y: y.unbind(0)[1].add_(1), "Output 1 of Unbind is a view and is being modified "
     "inplace."),
    (lambda y: y.split(1)[2].mul_(2), "Output 2 of Split is a view and is being modified "
     "inplace."),
    (lambda y: y.split([1, 2])[0].mul_(2), "Output 0 of SplitWithSizes is a view and is being "
     "modified inplace."),
    (lambda y: y.chunk(3, 1)[1].zero_(), "Output 1 of Split is a view and is being modified "
     "inplace."),
    (lambda y: y.unbind(0)[1][1:].add_(1), "Output 0 of Slice is a view and is being modified "
     "inplace."),
    (lambda y: y.split(1)[0].__setitem__(0, 1.0), "Output 0 of Select is a view and is being "
     "modified inplace."),
    (lambda y: y.split(1)[0].__setitem__(slice(None), 1.0), "Output 0 of Split is a view and "
     "is being modified inplace."),
    (lambda y: y.detach().unbind(0)[0].copy_(torch.ones(4, dtype=F64, requires_grad=True)),
     "A view was created in no_grad mode and is being modified inplace with grad mode "
     "enabled."),
], ids=["unbind", "split", "split_with_sizes", "chunk", "slice_of_unbind", "setitem_select",
        "setitem_whole", "no_grad_fn"])
def test_outputs_of_functions_returning_several_views(write, msg):
    with raises(msg + MULTI):
        write(leaf(X) * 2)


def test_several_views_outputs_writes_allowed_without_grad():
    x = leaf(X)
    with raises("Output 0 of Unbind is a view and is being modified inplace." + MULTI):
        x.unbind(0)[0].add_(1)  # checked before the leaf
    b = torch.zeros(3, 4, dtype=F64)
    b.unbind(0)[0].add_(1)  # nothing requires grad
    y = x * 2
    with torch.no_grad():
        y.unbind(0)[0].zero_()
    np.testing.assert_array_equal(y.detach().numpy()[0], 0)


def test_outputs_of_several_views_after_their_base_was_written():
    y = leaf(X) * 2
    u = y.unbind(0)
    y.mul_(2)
    with raises("Output 1 of Unbind is a view and its base or another view of its base has been "
                "modified inplace." + MULTI):
        u[1] * 2


def test_views_made_in_no_grad_mode():
    y = leaf(X) * 2
    with torch.no_grad():
        v = y[0]
    assert v.requires_grad and v.grad_fn is None  # as PyTorch
    z = v * 2
    assert z.requires_grad
    with raises("A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled." + NO_GRAD):
        v.add_(1)
    y.mul_(2)
    with raises("A view was created in no_grad mode and its base or another view of its base "
                "has been modified inplace with grad mode enabled." + NO_GRAD):
        v * 2
    with torch.no_grad():
        np.testing.assert_array_equal((v * 2).numpy(), 8 * X[0])
    b = torch.zeros(3, 4, dtype=F64)
    with torch.no_grad():
        v = b[0]
    with raises("A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled." + NO_GRAD):
        v.copy_(leaf(X[0]))


def test_as_strided_views_are_not_rebased_yet():
    y = leaf(X) * 2
    s = y.as_strided((2, 2), (1, 4))
    with pytest.raises(NotImplementedError, match="as_strided"):
        s.mul_(2)


# ---------------------------------------------------------------- recordings follow views

def _traced_matches_eager(fn, *arrays):
    args = [torch.tensor(a) for a in arrays]
    g, out = capture(fn, *[a.clone() for a in args])
    g.verify()
    for seed in (7, 8):
        new = [torch.tensor(rand(seed + i, a.shape)) for i, a in enumerate(arrays)]
        got = run(g, *[a.clone() for a in new])
        want = fn(*[a.clone() for a in new])
        want = want if isinstance(want, tuple) else (want,)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_recording_sees_writes_through_views_and_views_of_written_bases():
    def f(x, w):
        y = x * 1
        r = y[0]                 # read after the writes below
        y[1:][:, 0].add_(w[:3])  # chain of views
        y.t()[2].mul_(w)         # a transpose
        y.mul_(2)                # the base itself
        return y, r * 1, y.view(-1)[3:7] + 0
    _traced_matches_eager(f, rand(0, (4, 4)), rand(1, (4,)))


def test_recording_of_a_detached_alias_written_in_place():
    def f(x):
        y = x * 1
        d = y.detach()
        d[0].zero_()
        return y + 0
    _traced_matches_eager(f, rand(2, (3, 2)))


# ---------------------------------------------------------------- diagonal() is a view

@pytest.mark.parametrize("shape, offset, dims", [
    ((3, 4), 0, (0, 1)), ((3, 4), 2, (0, 1)), ((3, 4), -2, (1, 0)), ((2, 3, 4), 1, (-1, 0)),
    ((2, 3, 4), -5, (0, 2)), ((0, 3), 0, (0, 1)), ((4, 4), 9, (0, 1))])
def test_a_write_through_diagonal_reaches_the_base(shape, offset, dims):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = torch.tensor(a)
    d = x.diagonal(offset, *dims)
    d.mul_(-1.0)
    want = a.copy()
    for k in range(d.shape[-1]):  # element k: dim1 at k + max(-offset, 0), dim2 k + max(offset, 0)
        idx = [slice(None)] * len(shape)
        idx[dims[0] % len(shape)] = k + max(-offset, 0)
        idx[dims[1] % len(shape)] = k + max(offset, 0)
        want[tuple(idx)] *= -1
    np.testing.assert_array_equal(x.numpy(), want)
    assert d.shape == np.diagonal(a, offset, *dims).shape


def test_diagonal_of_a_transposed_base_and_its_strides():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = torch.tensor(a).permute(2, 0, 1)  # [4, 2, 3], not contiguous
    d = torch.diagonal(x, 0, 1, 2)
    np.testing.assert_array_equal(d.numpy(), np.diagonal(a.transpose(2, 0, 1), 0, 1, 2))
    assert d.stride() == (1, 16)  # (dim 0 of x; x's strides of dims 1 and 2 added: 12 + 4)
    d.fill_(0.5)
    assert (x.numpy()[:, [0, 1], [0, 1]] == 0.5).all()


def test_the_gradient_through_a_written_diagonal():
    def f(t):
        y = t * 1.0
        y.diagonal(-1, 0, 2).mul_(t.diagonal(-1, 0, 2).sin())  # (not y's: mul_ writes it)
        return y * y
    x = torch.tensor(np.random.default_rng(3).standard_normal((4, 2, 3)), requires_grad=True)
    assert gradcheck(f, (x,))
    y = x * 1.0
    d = y.diagonal()
    assert type(d.grad_fn).__name__ == "DiagonalBackward0"
    d.add_(1.0)
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((4, 2, 3)))


def test_a_diagonal_of_a_leaf_refuses_a_write():
    x = torch.zeros(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(VIEW_LEAF)):
        x.diagonal().fill_(1.0)


def test_compiled_writes_through_a_diagonal_equal_eager():
    def f(a, b):
        c = a @ b
        c.diagonal().add_(1.0)
        return c.diagonal(1) * 3 + c[0, 1:]
    rng = np.random.default_rng(5)
    a, b = (torch.tensor(rng.standard_normal((5, 5))) for _ in range(2))
    cf = torch.compile(f)
    for _ in range(3):
        np.testing.assert_allclose(cf(a, b).numpy(), f(a, b).numpy(), rtol=1e-12)
    c = a.numpy() @ b.numpy() + np.eye(5)
    np.testing.assert_allclose(f(a, b).numpy(), np.diagonal(c, 1) * 3 + c[0, 1:], rtol=1e-12)


# ---------------------------------------------------------------- unfold() is a view

@pytest.mark.parametrize("shape, dim, size, step", [
    ((7,), 0, 3, 2), ((7,), 0, 3, 4), ((3, 8, 2), 1, 4, 3), ((4, 5), 0, 4, 4), ((2, 6), -1, 2, 2)])
def test_a_write_through_unfold_reaches_the_base(shape, dim, size, step):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = torch.tensor(a)
    u = x.unfold(dim, size, step)
    u.mul_(-1.0)
    d = dim % len(shape)
    windows = (shape[d] - size) // step + 1
    want = a.copy()
    hit = np.zeros(shape[d], bool)
    for j in range(windows):
        hit[j * step:j * step + size] = True
    want[(slice(None),) * d + (hit,)] *= -1
    np.testing.assert_array_equal(x.numpy(), want)
    first = np.moveaxis(a.take(range(size), axis=d), d, -1)  # window 0, size last
    np.testing.assert_array_equal(u.select(d, 0).numpy(), -first)


def test_unfold_strides_and_the_gradient_of_overlapping_windows():
    x = torch.tensor(np.random.default_rng(4).standard_normal((3, 9)), requires_grad=True)
    u = x.unfold(1, 4, 2)  # windows at 0, 2, 4: elements 2..5 are in two of them
    assert u.shape == (3, 3, 4) and u.stride() == (9, 2, 1)
    assert gradcheck(lambda t: t.unfold(1, 4, 2).sin() * 2, (x,))
    u.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0], [1, 1, 2, 2, 2, 2, 1, 1, 0])


def test_unfold_errors_and_a_write_with_grad():
    x = torch.arange(5.0)
    with pytest.raises(RuntimeError, match="size is -1 but must be >= 0"):
        x.unfold(0, -1, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        x.unfold(0, 2, 0)
    assert torch.tensor(3.0).unfold(0, 1, 1).shape == (1,)
    y = torch.ones(6, requires_grad=True) * 1
    with pytest.raises(NotImplementedError, match="write into a clone"):
        y.unfold(0, 2, 2).mul_(3)


def test_compiled_unfold_equals_eager():
    def f(x):
        p = x.unfold(2, 4, 4).unfold(3, 4, 4)  # ViT-style patches [N, C, 2, 2, 4, 4]
        return p.reshape(2, 3, 4, 16).sum(-1) * x.mean()
    x = torch.tensor(np.random.default_rng(6).standard_normal((2, 3, 8, 8)))
    cf = torch.compile(f)
    for _ in range(3):
        np.testing.assert_allclose(cf(x).numpy(), f(x).numpy(), rtol=1e-12)
    a = x.numpy()
    want = a.reshape(2, 3, 2, 4, 2, 4).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 4, 16).sum(-1)
    np.testing.assert_allclose(f(x).numpy(), want * a.mean(), rtol=1e-12)


def test_a_view_names_how_it_was_made():
    """views.info: the base, the steps from it and the kind, by name (a view of a view points
    at the storage root with both steps; a split's outputs are ('multi', k); detach an alias;
    a view made under no_grad 'no_grad'; a tensor of its own memory none)."""
    from fusetorch.tracer import views
    x = torch.tensor(X, requires_grad=True).clone()
    v = views.info(x[1][1:3])
    assert v.base is x and v.kind == "diff" and [op for op, _ in v.steps] == ["index", "index"]
    assert views.info(x.detach()).kind == "alias"
    assert [views.info(p).kind for p in x.split(2)] == [("multi", 0), ("multi", 1)]
    with torch.no_grad():
        assert views.info(x.t()).kind == "no_grad"
    assert views.info(x) is None and views.info(x.t().contiguous()) is None
