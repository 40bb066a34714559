"""In-place shape changes (unsqueeze_, squeeze_, t_, transpose_, swapdims_/swapaxes_),
masked_scatter(_) and fill_diagonal_, against PyTorch 2.13's behaviour (checked by hand) and
numpy references; gradients by gradcheck (central differences in float64). Compiled-vs-eager
runs on ordinary samples are the opinfo entries."""
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."


# ---------------------------------------------------------------- unsqueeze_ and friends

@pytest.mark.parametrize("call, like, strides", [  # (PyTorch's strides)
    (lambda x: x.unsqueeze_(1), lambda a: a[:, None], (3, 3, 1)),
    (lambda x: x.unsqueeze_(-1), lambda a: a[:, :, None], (3, 1, 1)),
    (lambda x: x.t_(), lambda a: a.T, (1, 3)),
    (lambda x: x.transpose_(0, 1), lambda a: a.T, (1, 3)),
    (lambda x: x.swapdims_(1, 0), lambda a: a.T, (1, 3)),
    (lambda x: x.swapaxes_(0, -1), lambda a: a.T, (1, 3)),
    (lambda x: x.unsqueeze_(0).squeeze_(), lambda a: a, (3, 1)),
    (lambda x: x.unsqueeze_(0).squeeze_(0), lambda a: a, (3, 1)),
    (lambda x: x.unsqueeze_(2).squeeze_((0, 2)), lambda a: a, (3, 1)),
])
def test_shape_changes_in_place_share_memory_and_bump_the_version(call, like, strides):
    x = torch.arange(6.0).reshape(2, 3)
    want = like(x.numpy().copy())
    view = x.view(6)  # an older view keeps its own layout
    assert call(x) is x
    assert tuple(x.shape) == want.shape and x.stride() == strides
    np.testing.assert_array_equal(x.numpy(), want)
    assert x._version >= 1
    x.zero_()
    assert view.tolist() == [0.0] * 6 and tuple(view.shape) == (6,)  # the same memory


def test_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but "
                                           r"self is 3D"):
        torch.zeros(2, 3, 4).t_()
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        torch.zeros(2, 3).unsqueeze_(3)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        torch.zeros(2, 3).transpose_(0, 2)
    x = torch.zeros(3)
    assert x.t_() is x and tuple(x.shape) == (3,)
    leaf = torch.ones(3, requires_grad=True)
    for f in (lambda t: t.unsqueeze_(0), lambda t: t.squeeze_(), lambda t: t.t_(),
              lambda t: t.transpose_(0, 0)):
        with pytest.raises(RuntimeError, match=LEAF):
            f(leaf)
    with torch.no_grad():  # allowed without grad mode, as in PyTorch
        leaf.unsqueeze_(0)
    assert tuple(leaf.shape) == (1, 3) and leaf.is_leaf and leaf.requires_grad


def test_autograd_follows_the_new_shape():
    b = torch.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = torch.arange(6.0, dtype=torch.float64).reshape(3, 2)
    y = b * 2
    assert y.t_() is y and type(y.grad_fn).__name__ == "TBackward1"
    (y * w).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), 2 * w.numpy().T)
    names = []
    for f in (lambda t: t.unsqueeze_(1), lambda t: t.transpose_(0, 1),
              lambda t: t.unsqueeze_(0).squeeze_(0), lambda t: t.unsqueeze_(0).squeeze_(),
              lambda t: t.unsqueeze_(0).squeeze_((0,)), lambda t: t.swapdims_(0, 1)):
        names.append(type(f(b * 2).grad_fn).__name__)
    assert names == ["UnsqueezeBackward1", "TransposeBackward1", "SqueezeBackward4",
                     "SqueezeBackward3", "SqueezeBackward5", "TransposeBackward1"]

    def fn(x):
        y = x.exp()
        y = y * 1  # (exp saves its output: the shape change must not touch it)
        y.unsqueeze_(0).transpose_(0, 2)
        return y * torch.arange(6.0, dtype=torch.float64).reshape(3, 2, 1)

    assert gradcheck(fn, (torch.rand(2, 3, dtype=torch.float64, requires_grad=True),))


def test_a_view_of_a_tensor_that_requires_grad_may_change_shape():
    b = torch.ones(2, 3, requires_grad=True)
    base = b * 2
    v = base[0]
    v.unsqueeze_(0)
    assert tuple(v.shape) == (1, 3) and v._base is base
    assert type(v.grad_fn).__name__ == "UnsqueezeBackward1"
    (base.sum() + (v * 3).sum()).backward()
    np.testing.assert_array_equal(b.grad.numpy(), [[8, 8, 8], [2, 2, 2]])


def test_a_saved_tensor_changed_in_place_fails_backward_as_in_pytorch():
    a = torch.ones(3, requires_grad=True)
    y = a * 2
    z = y * y  # saves y
    y.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_compiled_shape_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))

    def inside(x):  # on a tensor made inside the function: part of the graph
        y = x * 2
        y.unsqueeze_(0).transpose_(0, 2)
        return y + 1

    cf = torch.compile(inside, fullgraph=True)
    x = torch.randn(3, 4)
    cf(x)
    np.testing.assert_allclose(cf(x).numpy(), inside(x).numpy())
    assert cf.kernels()

    def of_input(x):  # the input itself: a graph break, then eager (right shapes and values)
        x.unsqueeze_(0)
        return x * 2

    ch = torch.compile(of_input)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(2):
            a = torch.randn(3)
            out = ch(a)
            assert tuple(a.shape) == (1, 3) and tuple(out.shape) == (1, 3)
            np.testing.assert_array_equal(out.numpy(), a.numpy() * 2)
    assert any("in-place shape change of an input" in str(m.message) for m in w)


# ---------------------------------------------------------------- masked_scatter

def _np_masked_scatter(x, mask, src):
    x, mask = np.broadcast_arrays(x, mask)
    out = x.copy()
    out[mask] = src.reshape(-1)[:mask.sum()]
    return out


def test_masked_scatter_matches_numpy():
    r = np.random.default_rng(0)
    for xs, ms in [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((2, 1), (2, 3)), ((), (5,))]:
        x = r.standard_normal(xs)
        m = r.random(ms) > 0.4
        src = r.standard_normal(20)
        got = torch.masked_scatter(torch.tensor(x), torch.tensor(m), torch.tensor(src))
        np.testing.assert_array_equal(got.numpy(), _np_masked_scatter(x, m, src))
        assert torch.tensor(x).masked_scatter(torch.tensor(m), torch.tensor(src)).tolist() == \
            got.tolist()
    x = torch.zeros(2, 3, dtype=torch.int64)
    m = torch.tensor([[True, False, True], [False, True, True]])
    assert x.masked_scatter(m, torch.arange(10)).tolist() == [[0, 0, 1], [0, 2, 3]]
    y = torch.zeros(2, 3)
    assert y.masked_scatter_(m, torch.arange(1.0, 7.0).reshape(2, 3)) is y
    assert y.tolist() == [[1, 0, 2], [0, 3, 4]]
    empty = torch.zeros(2, 3).masked_scatter(torch.zeros(2, 3, dtype=torch.bool), torch.ones(0))
    assert empty.tolist() == [[0.0] * 3] * 2


def test_masked_scatter_errors_are_pytorchs():
    x = torch.zeros(2, 3)
    m = torch.tensor([[True, False, True], [False, True, True]])
    s = torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in "
                                           "mask"):
        x.masked_scatter(m, torch.ones(3))
    with pytest.raises(RuntimeError, match="only supports boolean masks, but got mask with "
                                           "dtype Long"):
        x.masked_scatter(m.long(), s)
    with pytest.raises(RuntimeError, match="same dtypes but gotFloat and Double"):
        x.masked_scatter(m, s.double())
    with pytest.raises(TypeError, match=r"argument 'source' \(position 2\) must be Tensor"):
        x.masked_scatter(m, 1.0)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match "
                                           r"the existing size \(3\)"):
        x.clone().masked_scatter_(torch.tensor([True, False, True]).reshape(3, 1), s)
    with pytest.raises(RuntimeError, match="the number of sizes provided"):
        torch.zeros(3).masked_scatter_(m, s)


def test_masked_scatter_gradients():
    m = torch.tensor([[True, False, True, False], [False, True, True, False]])
    a = torch.rand(2, 4, dtype=torch.float64, requires_grad=True)
    b = torch.rand(9, dtype=torch.float64, requires_grad=True)
    w = torch.arange(8.0, dtype=torch.float64).reshape(2, 4)
    y = a.masked_scatter(m, b)
    assert type(y.grad_fn).__name__ == "MaskedScatterBackward0"
    (y * w).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.where(m.numpy(), 0, w.numpy()))
    np.testing.assert_array_equal(b.grad.numpy(), [0, 2, 5, 6, 0, 0, 0, 0, 0])
    assert gradcheck(lambda x, s: torch.masked_scatter(x, m, s), (a, b))
    row = torch.rand(4, dtype=torch.float64, requires_grad=True)  # broadcast input: summed
    assert gradcheck(lambda x, s: torch.masked_scatter(x, m, s), (row, b))
    assert gradcheck(lambda x, s: (x * 1).masked_scatter_(m, s), (a, b))


def test_masked_scatter_compiles_without_a_graph_break(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    f = torch.compile(lambda x, m, s: x.masked_scatter(m, s) * 2, fullgraph=True)
    x, s = torch.randn(3, 4), torch.randn(6)
    for k in (6, 2, 5):  # the mask's values change; the program stays
        m = np.zeros(12, dtype=bool)
        m[np.random.default_rng(k).permutation(12)[:k]] = True
        m = torch.from_numpy(m.reshape(3, 4))
        np.testing.assert_array_equal(f(x, m, s).numpy(), x.masked_scatter(m, s).numpy() * 2)
    assert f.kernels()
    with pytest.raises(RuntimeError, match="Number of elements of source"):  # in the replay
        f(x, torch.ones(3, 4, dtype=torch.bool), s)


# ---------------------------------------------------------------- fill_diagonal_

@pytest.mark.parametrize("shape, wrap", [((4, 4), False), ((7, 3), False), ((7, 3), True),
                                         ((9, 3), True), ((4, 3), True), ((3, 7), True),
                                         ((3, 3, 3), False), ((2, 2, 2, 2), True), ((0, 3), True)])
def test_fill_diagonal_matches_numpy(shape, wrap):
    want = np.arange(float(np.prod(shape))).reshape(shape)
    x = torch.tensor(want.copy())
    np.fill_diagonal(want, -1.5, wrap=wrap)
    assert x.fill_diagonal_(-1.5, wrap=wrap) is x
    np.testing.assert_array_equal(x.numpy(), want)


def test_fill_diagonal_dtypes_views_errors_and_gradient():
    i = torch.zeros(3, 3, dtype=torch.int64)
    assert i.fill_diagonal_(2.7).tolist() == [[2, 0, 0], [0, 2, 0], [0, 0, 2]]
    assert torch.zeros(2, 2).fill_diagonal_(True).tolist() == [[1, 0], [0, 1]]
    base = torch.zeros(4, 3)
    base[:, :2].fill_diagonal_(1)  # a view writes through to its base
    assert base.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]]
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        torch.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        torch.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match=LEAF):
        torch.ones(2, 2, requires_grad=True).fill_diagonal_(0)
    b = torch.ones(3, 3, requires_grad=True)
    y = b * 2
    y.fill_diagonal_(0)
    y.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), 2 * (1 - np.eye(3)))
    assert gradcheck(lambda x: (x * 1).fill_diagonal_(3.0, wrap=True),
                     (torch.rand(5, 2, dtype=torch.float64, requires_grad=True),))


def test_a_write_through_a_view_after_its_in_place_shape_change_reaches_the_base():
    # PyTorch 2.13: base.grad_fn is CopySlices and b.grad [[0, 6, 12], [0, 2, 4]]
    b = torch.ones(2, 3, requires_grad=True)
    base = b * 2
    v = base[0]
    v.unsqueeze_(0)
    v.mul_(3)
    assert type(base.grad_fn).__name__ == "CopySlices"
    assert base.tolist() == [[6.0, 6.0, 6.0], [2.0, 2.0, 2.0]]
    (base * torch.arange(3.0)).sum().backward()
    assert b.grad.tolist() == [[0.0, 6.0, 12.0], [0.0, 2.0, 4.0]]
