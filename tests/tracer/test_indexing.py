"""`tensor[key]`, `tensor[key] = value`, and the index functions, against numpy on float64 arrays.

Where PyTorch differs from numpy (ints are applied before advanced indices, so `x[0, :, [0, 1]]`
is [3, 2]; error types and messages; numbering of dims in out-of-bounds errors), the expected
answer was observed by hand in torch 2.13 and is written literally.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch


def arr(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def T(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def check(t, expected):
    assert isinstance(t, torch.Tensor)
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)


A = arr((2, 3, 4))

# ---------------------------------------------------------------- basic indexing

BASIC_KEYS = [
    0, 1, -1, -2, (1, 2), (-1, -2, -3), (0, 1, 3), slice(None), slice(1, None),
    slice(None, None, 2), slice(0, 1), slice(5, 10), slice(-10, 1), slice(1, 1),
    (slice(None), 1), (slice(None), slice(None), -1), (Ellipsis, 1), (Ellipsis, slice(1, 3)),
    (0, Ellipsis), (1, Ellipsis, 2), None, (None, 0), (0, None, slice(1, 3)), (Ellipsis, None),
    (slice(None), None, slice(None), None), (slice(None, None, 3), slice(1, None, 2), 0),
    Ellipsis, (), (None, None),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_getitem_matches_numpy(key):
    check(T(A)[key], A[key])


@settings(max_examples=50, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple))
def test_basic_getitem_random(data, shape):
    a = arr(shape)
    key = []
    for n in shape:
        kinds = ["slice", "none", "skip"] + (["int"] if n else [])
        kind = data.draw(st.sampled_from(kinds))
        if kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = data.draw(st.none() | st.integers(-n - 2, n + 2))
            stop = data.draw(st.none() | st.integers(-n - 2, n + 2))
            step = data.draw(st.none() | st.integers(1, 3))
            key.append(slice(start, stop, step))
        elif kind == "none":
            key.extend([None, slice(None)])
        else:
            key.append(Ellipsis)
            break  # the ellipsis covers the rest
    check(T(a)[tuple(key)], a[tuple(key)])


def test_0d_and_1d_special_cases():
    z = torch.tensor(3.0)
    check(z[...], np.array(3.0))
    check(z[None], np.array([3.0]))
    check(z[None, None], np.array([[3.0]]))
    y = T(np.arange(5.0))
    r = y[2]
    assert r.shape == () and r.dim() == 0
    assert r.item() == 2.0
    check(y[torch.tensor(1)], np.array(1.0))  # a 0-d integer tensor acts as an int
    check(y[np.int64(3)], np.array(3.0))
    check(T(np.zeros((0, 3)))[:, 1], np.zeros(0))


def test_0d_mask_adds_a_dim():
    y = T(np.arange(5.0))
    check(y[True], np.arange(5.0)[None])
    check(y[torch.tensor(True)], np.arange(5.0)[None])
    check(y[False], np.zeros((0, 5)))
    check(torch.tensor(3.0)[torch.tensor(True)], np.array([3.0]))


def test_indexing_a_0d_tensor_errors():
    z = torch.tensor(3.0)
    with pytest.raises(IndexError, match=r"invalid index of a 0-dim tensor\. Use "
                                         r"`tensor\.item\(\)`"):
        z[0]
    with pytest.raises(IndexError, match=r"slice\(\) cannot be applied to a 0-dim tensor\."):
        z[0:1]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        z[..., 0]


def test_slice_steps():
    x = T(A)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[:, 3:0:-1]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]


def test_out_of_range_and_too_many_indices():
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        torch.arange(2)[5]
    with pytest.raises(IndexError, match="index -3 is out of bounds for dimension 0 with size 2"):
        torch.arange(2)[-3]
    x = T(A)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        x[0, 5]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 2 with size 4"):
        x[:, :, 4]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        x[0, 0, 0, 0]


# ---------------------------------------------------------------- views

def test_basic_indexing_returns_views():
    x = T(np.zeros((2, 3)))
    x[0].fill_(1.0)
    np.testing.assert_array_equal(x.numpy(), [[1, 1, 1], [0, 0, 0]])
    col = x[:, 1]
    col.mul_(0).add_(7.0)
    np.testing.assert_array_equal(x.numpy(), [[1, 7, 1], [0, 7, 0]])
    x[..., ::2].zero_()
    np.testing.assert_array_equal(x.numpy(), [[0, 7, 0], [0, 7, 0]])
    x[None, 1].add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [[0, 7, 0], [1, 8, 1]])


def test_element_of_1d_tensor_is_a_0d_view():
    x = T(np.arange(4.0))
    e = x[1]
    assert e.dim() == 0
    e.fill_(10.0)
    assert x[1].item() == 10.0
    x[1] = 20.0
    assert e.item() == 20.0


def test_advanced_indexing_returns_copies():
    x = T(np.zeros((2, 3)))
    x[[0]].fill_(5.0)
    x[x == 0].fill_(5.0)
    x[:, [1, 2]].fill_(5.0)
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3)))


# ---------------------------------------------------------------- boolean masks

def test_full_shape_mask_matches_numpy():
    x = T(A)
    check(x[x > 0], A[A > 0])
    check(x[x > 100], A[A > 100])  # selects nothing
    m = np.random.default_rng(1).random((2, 3, 4)) > 0.5
    check(x[torch.tensor(m)], A[m])


@pytest.mark.parametrize("key_fn", [
    lambda m1, m2, m3: (m1,),
    lambda m1, m2, m3: (m2,),
    lambda m1, m2, m3: (slice(None), m3),
    lambda m1, m2, m3: (Ellipsis, np.array([True, False, False, True])),
    lambda m1, m2, m3: (1, m3),
    lambda m1, m2, m3: (m1, slice(1, None)),
    lambda m1, m2, m3: (slice(None), m3, slice(None, None, 2)),
])
def test_partial_masks_match_numpy(key_fn):
    m1 = np.array([True, False])
    m2 = np.array([[True, False, True], [False, False, True]])
    m3 = np.array([True, False, True])
    key = key_fn(m1, m2, m3)
    tkey = tuple(torch.tensor(k) if isinstance(k, np.ndarray) else k for k in key)
    check(T(A)[tkey], A[key])


def test_mask_as_list_of_bools():
    check(T(A)[[True, False]], A[[True, False]])
    check(T(A)[:, [True, False, True]], A[:, [True, False, True]])


def test_mask_shape_mismatch():
    x = T(A)
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not match "
                                         r"the shape of the indexed tensor \[2, 3, 4\] at index 0"):
        x[torch.tensor([True, False, True])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match "
                                         r"the shape of the indexed tensor \[2, 3, 4\] at index 1"):
        x[:, torch.tensor([True, False])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3, 3\] at index 0 does not "
                                         r"match the shape of the indexed tensor \[2, 3, 4\]"):
        x[torch.ones(3, 3, dtype=torch.bool)]


# ---------------------------------------------------------------- integer tensors and lists

@pytest.mark.parametrize("key", [
    [0, 1], [1, 0, 1], [-1], [], ([0, 1], [1, 2]), ([0, 1], [1, 2], [3, 0]),
    (slice(None), [0, 2]), (slice(None), [0, -3]), (Ellipsis, [0, 3, 3]),
    ([[0], [1]], [0, 1, 2]), ([[0, 1], [1, 0]],), (slice(1, None), [0, 2]),
    (slice(None, None, 2), [[0], [1]]), (slice(None), [0, 1], [1, 2]),
    ([0, 1], slice(None), [1, 2]), ([[0], [1]], slice(None), [0, 1, 2]),
    (slice(None), slice(None), [[0, 1], [2, 3]]), (None, [0, 1], slice(None), [0, 1]),
    ([0, 1], None, [1, 2]), (slice(None), None, [0, 2]), ([1, 0], None),
], ids=repr)
def test_integer_indices_without_ints_match_numpy(key):
    # with no int in the key, PyTorch's advanced indexing is numpy's (adjacent advanced indices
    # stay in place, separated ones go first)
    key = key if isinstance(key, tuple) else (key,)
    tkey = tuple(torch.tensor(k, dtype=torch.int64) if isinstance(k, list) else k for k in key)
    lkey = tuple(k for k in key)
    npkey = tuple(np.array(k, dtype=np.int64) if isinstance(k, list) else k for k in key)
    check(T(A)[tkey], A[npkey])
    check(T(A)[lkey], A[npkey])


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_advanced_indices_random(data):
    shape = (2, 3, 4)
    key, npkey = [], []
    bshape = data.draw(st.sampled_from([(2,), (1,), (2, 1), (1, 3), (2, 3)]))
    for n in shape:
        kind = data.draw(st.sampled_from(["tensor", "slice", "none"]))
        if kind == "tensor":
            idx = data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(bshape)),
                                     max_size=int(np.prod(bshape))))
            ix = np.array(idx, dtype=np.int64).reshape(bshape)
            key.append(torch.tensor(ix))
            npkey.append(ix)
        elif kind == "slice":
            s = slice(data.draw(st.integers(0, n)), None, data.draw(st.integers(1, 2)))
            key.append(s)
            npkey.append(s)
        else:
            key.extend([None, slice(None)])
            npkey.extend([None, slice(None)])
    check(T(A)[tuple(key)], A[tuple(npkey)])


@pytest.mark.parametrize("key,shape,expected", [
    # PyTorch applies ints first, then the advanced indices on what is left
    ((0, slice(None), [0, 1]), (3, 2), lambda a: a[0][:, [0, 1]]),
    (([1], slice(None), [0, 1]), (2, 3), lambda a: a[[1, 1], :, [0, 1]]),
    ((slice(None), 0, [1, 2]), (2, 2), lambda a: a[:, 0][:, [1, 2]]),
    (([0, 1], 0), (2, 4), lambda a: a[:, 0][[0, 1]]),
    ((0, [0, 1], 1), (2,), lambda a: a[0][:, 1][[0, 1]]),
    (([0, 1], 1, [2, 3]), (2,), lambda a: a[:, 1][[0, 1], [2, 3]]),
    ((1, slice(None), [[0], [2]]), (3, 2, 1), lambda a: a[1][:, [[0], [2]]]),
    ((slice(None), [0, 2], 3), (2, 2), lambda a: a[:, :, 3][:, [0, 2]]),
])
def test_ints_mixed_with_advanced_indices_follow_pytorch(key, shape, expected):
    r = T(A)[key]
    assert tuple(r.shape) == shape
    check(r, expected(A))


def test_index_tensor_dtypes_and_sources():
    check(T(A)[torch.tensor([1, 0], dtype=torch.int32)], A[[1, 0]])
    check(T(A)[np.array([1, 1])], A[[1, 1]])
    check(T(A)[torch.tensor([[0, 1], [1, 0]]), 1:], A[np.array([[0, 1], [1, 0]]), 1:])
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        T(A)[torch.tensor([0.5])]


def test_advanced_index_errors():
    x = T(A)
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        x[[0, 2]]
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        x[torch.tensor([0, 2])]
    # PyTorch numbers the dim by the index tensor's position among the index tensors
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[:, [0, 3]]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x[:, [0, -4]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[[0, 1], [0, 3]]
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 1 with size 4"):
        x[[0, 1], :, [0, 7]]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be "
                                         r"broadcast together with shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]


# ---------------------------------------------------------------- setitem

SET_CASES = [
    (0, 5.0), ((1, 2), -1.0), ((slice(None), 1), 3.0), ((Ellipsis, slice(None, None, 2)), 2.0),
    ((slice(1, None), slice(None), 0), 4.0), (slice(None), 0.5), ((None, 0), 8.0),
    (([0, 1], [1, 2]), 9.0), (([1],), 6.0), ((slice(None), [0, 2]), 1.5),
    (([0, 1], slice(None), [3, 0]), 2.5),
]


@pytest.mark.parametrize("key,value", SET_CASES, ids=repr)
def test_setitem_scalar_matches_numpy(key, value):
    a = A.copy()
    x = T(A)
    x[key] = value
    npkey = tuple(np.array(k) if isinstance(k, list) else k for k in key) \
        if isinstance(key, tuple) else key
    a[npkey] = value
    check(x, a)


@pytest.mark.parametrize("key,vshape", [
    (0, (3, 4)), (0, (4,)), (0, (1, 4)), (0, (3, 1)), ((slice(None), 1), (2, 4)),
    ((slice(None), 1), (1, 1, 4)), (slice(None), (3, 4)), ((Ellipsis, 0), (2, 1)),
    ((slice(None), slice(1, 3)), (2, 1, 4)), ((), (1, 2, 3, 4)),
])
def test_setitem_tensor_broadcasts(key, vshape):
    v = arr(vshape, seed=3)
    a = A.copy()
    x = T(A)
    x[key] = T(v)
    # PyTorch drops the value's leading 1-sized dims, then broadcasts
    trimmed = v.reshape(np.shape(v)[next((i for i, d in enumerate(vshape) if d != 1),
                                          len(vshape)):])
    a[key] = trimmed
    check(x, a)


def test_setitem_with_masks():
    # the ReLU backward idiom
    rng = np.random.default_rng(4)
    h = rng.standard_normal((5, 4))
    g = rng.standard_normal((5, 4))
    grad_h = T(g).clone()
    grad_h[T(h) < 0] = 0
    expected = g.copy()
    expected[h < 0] = 0
    check(grad_h, expected)
    # a mask over the leading dim with a row broadcast to each selected row
    x = T(A)
    x[torch.tensor([False, True])] = T(np.arange(4.0))
    a = A.copy()
    a[np.array([False, True])] = np.arange(4.0)
    check(x, a)
    # one value per selected element
    m = A > 0
    x = T(A)
    x[torch.tensor(m)] = T(np.arange(float(m.sum())))
    a = A.copy()
    a[m] = np.arange(float(m.sum()))
    check(x, a)
    # a 0-d tensor value
    x = T(A)
    x[x < 0] = torch.tensor(-7.0)
    a = A.copy()
    a[a < 0] = -7.0
    check(x, a)
    # a partial mask inside a tuple
    x = T(A)
    x[:, torch.tensor([True, False, True])] = 0.25
    a = A.copy()
    a[:, [0, 2]] = 0.25
    check(x, a)


def test_setitem_integer_tensor_indices():
    x = T(np.zeros((2, 3)))
    x[torch.tensor([0, 1]), torch.tensor([1, 2])] = T([5.0, 6.0])
    np.testing.assert_array_equal(x.numpy(), [[0, 5, 0], [0, 0, 6]])
    x = T(np.zeros((2, 3)))
    x[:, [0, 2]] = T([[1.0], [2.0]])
    np.testing.assert_array_equal(x.numpy(), [[1, 0, 1], [2, 0, 2]])
    x = T(np.zeros((2, 3)))
    x[:, [0, 2]] = T([[1.0, 2.0]])
    np.testing.assert_array_equal(x.numpy(), [[1, 0, 2], [1, 0, 2]])
    x = T(np.zeros(4))
    x[torch.tensor([-1, 0])] = T([3.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), [4, 0, 0, 3])


def test_setitem_value_shape_mismatch():
    x = torch.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(2\) at non-singleton dimension "
                                           r"0\.  Target sizes: \[3\]\.  Tensor sizes: \[2\]"):
        x[0] = torch.ones(2)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(2\) at non-singleton dimension "
                                           r"1\.  Target sizes: \[2, 3\]\.  Tensor sizes: "
                                           r"\[3, 2\]"):
        x[:] = torch.ones(3, 2)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot "
                                           r"be broadcast to indexing result of shape \[2\]"):
        x[[0, 1], [1, 2]] = torch.tensor([5.0, 6.0, 7.0])
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape \[3\]"):
        x[torch.tensor([[True, False, True], [False, False, True]])] = torch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape \[2, 3\]"):
        x[[0, 1]] = torch.ones(1, 1, 2)
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3)))  # nothing was written


def test_setitem_out_of_range():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[5] = 1.0
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[0, 3] = 1.0
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[[0, 5]] = 1.0
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[:, [0, 5]] = 1.0


def test_setitem_on_a_view_writes_into_the_base():
    x = T(np.zeros((2, 3)))
    row = x[0]
    row[1] = 9.0
    col = x[:, 2]
    col[[0, 1]] = T([3.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), [[0, 9, 3], [0, 0, 4]])
    x.view(-1)[[0, 5]] = 1.0
    np.testing.assert_array_equal(x.numpy(), [[1, 9, 3], [0, 0, 1]])
    xt = x.t()
    xt[xt == 0] = 2.0
    np.testing.assert_array_equal(x.numpy(), [[1, 9, 3], [2, 2, 1]])
    x[1][x[1] == 2.0] = -1.0
    np.testing.assert_array_equal(x.numpy(), [[1, 9, 3], [-1, -1, 1]])


def test_setitem_casts_the_value_to_the_tensor_dtype():
    x = torch.zeros(2, 3, dtype=torch.int64)
    x[0] = 2.7
    x[1] = torch.tensor([1.7, 2.2, 3.9])
    assert x.dtype == torch.int64
    np.testing.assert_array_equal(x.numpy(), [[2, 2, 2], [1, 2, 3]])
    f = torch.zeros(2, 3)
    f[0] = torch.tensor([1.5, 2.5, 3.5], dtype=torch.float64)
    f[1] = torch.tensor([1, 2, 3])
    assert f.dtype == torch.float32
    np.testing.assert_array_equal(f.numpy(), [[1.5, 2.5, 3.5], [1, 2, 3]])
    b = torch.zeros(2, 3, dtype=torch.bool)
    b[0] = torch.tensor([0.0, 2.0, 0.0])
    b[1, 2] = True
    np.testing.assert_array_equal(b.numpy(), [[False, True, False], [False, False, True]])
    i = torch.zeros(3, dtype=torch.int32)
    i[torch.tensor([True, False, True])] = 2.9
    np.testing.assert_array_equal(i.numpy(), [2, 0, 2])
    i[1] = torch.tensor(1.5)
    assert i.dtype == torch.int32 and i[1].item() == 1


# ---------------------------------------------------------------- index_select, gather, scatter_add

@pytest.mark.parametrize("dim,idx", [(0, [1, 0, 1]), (1, [2]), (-1, [3, 0, 3]), (2, []),
                                     (1, [0, 0, 2])])
def test_index_select(dim, idx):
    ix = np.array(idx, dtype=np.int64)
    check(T(A).index_select(dim, torch.tensor(ix)), np.take(A, ix, axis=dim))
    check(torch.index_select(T(A), dim, torch.tensor(ix, dtype=torch.int32)),
          np.take(A, ix, axis=dim))


def test_index_select_0d_and_errors():
    check(torch.tensor(5.0).index_select(0, torch.tensor([0])), np.array(5.0))
    x = T(A)
    with pytest.raises(IndexError, match=r"index_select\(\): Index is supposed to be a vector"):
        x.index_select(1, torch.tensor([[0, 2]]))
    with pytest.raises(RuntimeError, match=r"index_select\(\): Expected dtype int32 or int64 for "
                                           r"index"):
        x.index_select(1, torch.tensor([0.0, 2.0]))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, torch.tensor([0, 2]))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, torch.tensor([-1]))
    with pytest.raises(IndexError, match=r"\[-3, 2\], but got 3\)"):
        x.index_select(3, torch.tensor([0]))
    with pytest.raises(RuntimeError, match=r"index_select\(\): Index to scalar can have only 1 "
                                           r"value, got 2 value\(s\)"):
        torch.tensor(5.0).index_select(0, torch.tensor([0, 0]))


def _gather_ref(a, dim, index):
    out = np.empty(index.shape)
    for pos in np.ndindex(*index.shape):
        src = list(pos)
        src[dim] = index[pos]
        out[pos] = a[tuple(src)]
    return out


@pytest.mark.parametrize("dim,ishape", [(0, (2, 3, 4)), (1, (2, 5, 4)), (2, (1, 2, 3)),
                                        (-1, (2, 3, 1)), (1, (2, 0, 4))])
def test_gather(dim, ishape):
    rng = np.random.default_rng(5)
    index = rng.integers(0, A.shape[dim], size=ishape)
    expected = _gather_ref(A, dim, index)
    check(T(A).gather(dim, torch.tensor(index)), expected)
    check(torch.gather(T(A), dim, torch.tensor(index, dtype=torch.int32)), expected)


def test_gather_errors():
    x = T(np.arange(6.0).reshape(2, 3))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, torch.tensor([[0, 3]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size "
                                           "3"):
        x.gather(1, torch.tensor([[-1, 0]]))
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        x.gather(1, torch.zeros(2, 1))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions "
                                           "as input tensor"):
        x.gather(1, torch.tensor([0, 2]))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0 expected index "
                                           r"\[3, 1\] to be no larger than self \[2, 3\] apart "
                                           r"from dimension 1"):
        x.gather(1, torch.zeros(3, 1, dtype=torch.long))


def _scatter_add_ref(base, dim, index, src):
    out = base.copy()
    for pos in np.ndindex(*index.shape):
        dst = list(pos)
        dst[dim] = index[pos]
        out[tuple(dst)] += src[pos]
    return out


@pytest.mark.parametrize("dim,ishape,sshape", [
    (0, (2, 3, 4), (2, 3, 4)), (1, (2, 5, 4), (2, 5, 4)), (2, (1, 2, 6), (2, 3, 7)),
    (-1, (2, 3, 2), (2, 3, 2)), (0, (0, 3, 4), (1, 3, 4)),
])
def test_scatter_add(dim, ishape, sshape):
    rng = np.random.default_rng(6)
    index = rng.integers(0, A.shape[dim], size=ishape)  # repeats: they must accumulate
    src = rng.standard_normal(sshape)
    expected = _scatter_add_ref(A, dim, index, src)
    r = T(A).scatter_add(dim, torch.tensor(index), T(src))
    assert r.shape == A.shape
    np.testing.assert_allclose(r.numpy(), expected, rtol=1e-12, atol=1e-12)
    r = torch.scatter_add(T(A), dim, torch.tensor(index, dtype=torch.int32), T(src))
    np.testing.assert_allclose(r.numpy(), expected, rtol=1e-12, atol=1e-12)
    x = T(A)
    out = x.scatter_add_(dim, torch.tensor(index), T(src))
    assert out is x
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_scatter_add_errors():
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self\.dtype to be equal to "
                                           r"src\.dtype"):
        torch.zeros(2, 3).scatter_add(0, torch.tensor([[0, 1, 1]]),
                                      torch.ones(1, 3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        torch.zeros(3).scatter_add(0, torch.tensor([0, 0, 3]), torch.ones(3))
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 3\] to be no larger than self "
                                           r"\[2, 3\] apart from dimension 0 and to be no larger "
                                           r"size than src \[1, 2\]"):
        torch.zeros(2, 3).scatter_add(0, torch.tensor([[0, 1, 1]]), torch.ones(1, 2))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions "
                                           "as self tensor"):
        torch.zeros(2, 3).scatter_add(0, torch.tensor([0, 1, 1]), torch.ones(1, 3))
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected dtype int32/int64 for index"):
        torch.zeros(3).scatter_add(0, torch.zeros(3), torch.ones(3))


# ---------------------------------------------------------------- masked_fill / nonzero / where

def test_masked_fill():
    m = A > 0.3
    check(T(A).masked_fill(torch.tensor(m), 2.5), np.where(m, 2.5, A))
    check(torch.masked_fill(T(A), torch.tensor(m), float("-inf")), np.where(m, -np.inf, A))
    m3 = np.array([True, False, True, False])  # broadcast over the leading dims
    check(T(A).masked_fill(torch.tensor(m3), -1.0), np.where(m3, -1.0, A))
    check(T(A).masked_fill(torch.tensor(m3), torch.tensor(4.0)), np.where(m3, 4.0, A))
    # the mask may also broadcast the result (out of place only)
    r = T([1.0, 2.0]).masked_fill(torch.tensor([[True], [False]]), 0.0)
    check(r, [[0.0, 0.0], [1.0, 2.0]])
    i = torch.zeros(3, dtype=torch.int64).masked_fill(torch.tensor([True, False, True]), 2.7)
    assert i.dtype == torch.int64
    np.testing.assert_array_equal(i.numpy(), [2, 0, 2])


def test_masked_fill_in_place_and_errors():
    x = T(A)
    r = x.masked_fill_(x < 0, 0.0)
    assert r is x
    check(x, np.maximum(A, 0.0))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype"):
        torch.zeros(3).masked_fill(torch.tensor([1, 0, 1]), 2.0)
    with pytest.raises(RuntimeError, match=r"masked_fill_ only supports a 0-dimensional value "
                                           r"tensor, but got tensor with 1 dimension\(s\)\."):
        torch.zeros(3).masked_fill(torch.tensor([True, False, True]), torch.tensor([3.0]))
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast "
                                           r"shape \[2, 2\]"):
        torch.tensor([1.0, 2.0]).masked_fill_(torch.tensor([[True], [False]]), 0.0)


@pytest.mark.parametrize("a", [
    np.array([[0.0, 1.0], [2.0, 0.0]]), np.array([0.0, 3.0, 0.0, 1.0]), np.zeros((0, 3)),
    np.zeros((2, 3)), (A > 0).astype(np.float64), np.array([[[1.0]]]),
])
def test_nonzero_and_where_match_numpy(a):
    x = T(a)
    r = x.nonzero()
    assert r.dtype == torch.int64
    check(r, np.argwhere(a))
    check(torch.nonzero(x), np.argwhere(a))
    for got, exp in zip(x.nonzero(as_tuple=True), np.nonzero(a)):
        check(got, exp)
    w = torch.where(x)
    assert isinstance(w, tuple) and len(w) == a.ndim
    for got, exp in zip(w, np.nonzero(a)):
        assert got.dtype == torch.int64
        check(got, exp)
    b = torch.tensor(a != 0)  # bool input
    check(b.nonzero(), np.argwhere(a))


def test_nonzero_of_0d_tensors():
    # observed in PyTorch: shape (1, 0) or (0, 0); as a tuple the 0-d tensor counts as 1-d
    check(torch.tensor(1.0).nonzero(), np.zeros((1, 0), dtype=np.int64))
    check(torch.tensor(0.0).nonzero(), np.zeros((0, 0), dtype=np.int64))
    (t,) = torch.tensor(1.0).nonzero(as_tuple=True)
    check(t, [0])
    (w,) = torch.where(torch.tensor(0.0))
    check(w, np.zeros(0, dtype=np.int64))
    (w,) = torch.where(torch.tensor(True))
    check(w, [0])


def test_scatter_refuses_an_index_larger_than_self_or_src():
    # found by the registry's zero-size samples (was an internal AssertionError); PyTorch
    # 2.13's messages
    i = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    for fn, tail in [
        (lambda: torch.scatter(torch.ones(3, 0), 0, i, torch.ones(2, 4)),
         "self [3, 0] apart from dimension 0 and to be no larger size than src [2, 4]"),
        (lambda: torch.ones(3, 2).scatter(0, i, 2.5), "self [3, 2] apart from dimension 0"),
        (lambda: torch.scatter(torch.ones(3, 5), 0, i, torch.ones(2, 3)),
         "self [3, 5] apart from dimension 0 and to be no larger size than src [2, 3]"),
        (lambda: torch.scatter_reduce(torch.ones(3, 2), 0, i, torch.ones(2, 4), "sum"),
         "self [3, 2] apart from dimension 0 and to be no larger size than src [2, 4]")]:
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == "Expected index [2, 4] to be no larger than " + tail


def test_trailing_new_dims_after_advanced_indices():
    # YOLOv5's non_max_suppression: `x[i, j + 5, None]`; numpy's shapes and values
    a = np.arange(24.0).reshape(2, 3, 4)
    x = torch.tensor(a)
    i, j = torch.tensor([0, 1, 1]), torch.tensor([2, 0, 2])
    for key, np_key in (((i, j, None), ([0, 1, 1], [2, 0, 2], None)),
                        ((i, j, None, None), ([0, 1, 1], [2, 0, 2], None, None)),
                        ((i, j, Ellipsis, None), ([0, 1, 1], [2, 0, 2], Ellipsis, None))):
        got = x[key]
        want = a[np_key]
        assert got.shape == want.shape and np.array_equal(got.numpy(), want)
    w = torch.tensor(a, requires_grad=True)
    w[i, j, None].sum().backward()
    ref = np.zeros_like(a)
    np.add.at(ref, ([0, 1, 1], [2, 0, 2]), 1.0)
    assert np.array_equal(w.grad.numpy(), ref)
    y = torch.zeros(2, 3, 4)
    y[i, j, None] = torch.ones(3, 1, 4)
    assert y.sum().item() == 12.0
