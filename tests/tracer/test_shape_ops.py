"""Shape queries and movement ops (view/reshape/permute/squeeze/expand/cat/split/...) against numpy.

Expected values come from numpy on the same float64 arrays; PyTorch-only facts (error types and
messages, chunk sizes, cat's type promotion, strides) were observed by hand in torch 2.13.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch

SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 3), (1, 3, 1), (2, 3, 4), (2, 1, 3, 2)]


def arr(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def T(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def check(t, expected):
    assert isinstance(t, torch.Tensor)
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)


settings.register_profile("shape_ops", max_examples=40, deadline=None)
small_shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


# ---------------------------------------------------------------- size, shape, dim, numel

def test_size_is_a_tuple_subclass_printing_like_torch():
    s = torch.zeros(2, 3).size()
    assert isinstance(s, tuple)
    assert isinstance(s, torch.Size)
    assert s == (2, 3)
    assert repr(s) == "torch.Size([2, 3])"
    assert str(s) == "torch.Size([2, 3])"
    assert repr(torch.tensor(1.0).size()) == "torch.Size([])"
    assert repr(torch.Size((4, 5))) == "torch.Size([4, 5])"


def test_size_slicing_and_concatenation_stay_sizes():
    s = torch.zeros(2, 3).size()
    assert repr(s[1:]) == "torch.Size([3])"
    assert repr(s + (4,)) == "torch.Size([2, 3, 4])"
    assert repr((4,) + s) == "torch.Size([4, 2, 3])"
    assert s[0] == 2 and type(s[0]) is int
    assert s.numel() == 6


@pytest.mark.parametrize("shape", SHAPES)
def test_size_shape_dim_numel_match_numpy(shape):
    a = arr(shape)
    x = T(a)
    assert x.size() == a.shape
    assert x.shape == a.shape
    assert isinstance(x.shape, torch.Size)
    assert x.dim() == a.ndim
    assert x.ndim == a.ndim
    assert x.numel() == a.size
    assert torch.numel(x) == a.size
    for d in range(-a.ndim, a.ndim):
        assert x.size(d) == a.shape[d]
        assert x.shape[d] == a.shape[d]


def test_size_dim_out_of_range():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        x.size(2)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got -3"):
        x.size(-3)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        torch.tensor(1.0).size(0)


def test_stride():
    assert torch.zeros(2, 3, 4).stride() == (12, 4, 1)
    assert torch.zeros(2, 3, 4).stride(1) == 4
    assert torch.zeros(2, 3, 4).stride(-1) == 1
    assert torch.zeros(2, 3).t().stride() == (1, 3)
    assert torch.zeros(2, 3, 4).permute(2, 0, 1).stride() == (1, 12, 4)
    assert torch.zeros(2, 3, 4)[:, :, 1].stride() == (12, 4)
    assert torch.zeros(2, 3, 4)[..., ::2].stride() == (12, 4, 2)
    assert torch.zeros(3).expand(2, 3).stride() == (0, 1)
    assert torch.zeros(2, 0, 3).stride() == (3, 3, 1)  # PyTorch's strides for empty tensors
    assert torch.tensor(1.0).stride() == ()
    assert torch.zeros(2, 3, dtype=torch.float64).stride() == (3, 1)  # elements, not bytes
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2"):
        torch.zeros(2, 3).stride(2)


def test_is_contiguous():
    x = torch.zeros(2, 3)
    assert x.is_contiguous()
    assert not x.t().is_contiguous()
    assert x.t().contiguous().is_contiguous()
    assert not torch.zeros(2, 4)[:, ::2].is_contiguous()
    assert torch.zeros(2, 3, 4)[1].is_contiguous()
    assert not torch.zeros(2, 3, 4)[:, 1].is_contiguous()
    assert not torch.zeros(3).expand(2, 3).is_contiguous()
    assert torch.zeros(1, 3).t().is_contiguous()  # size-1 dims do not count
    assert torch.zeros(2, 0).t().is_contiguous()  # nor do empty tensors
    assert torch.tensor(1.0).is_contiguous()


# ---------------------------------------------------------------- view / reshape

@pytest.mark.parametrize("shape,new", [
    ((2, 3), (3, 2)), ((2, 3), (-1,)), ((2, 3), (6, -1)), ((2, 3, 4), (4, -1, 2)),
    ((), (1, 1)), ((1,), ()), ((), (-1,)), ((0,), (2, 0)), ((2, 0, 3), (-1, 3)),
    ((2, 0, 3), (0,)), ((24,), (2, 3, 4)),
])
def test_view_and_reshape_values(shape, new):
    a = arr(shape)
    expected = a.reshape(new)
    if new:  # PyTorch takes view() and reshape() with no sizes as a missing argument
        check(T(a).view(*new), expected)
        check(T(a).reshape(*new), expected)
    check(T(a).view(new), expected)
    check(T(a).reshape(new), expected)
    check(torch.reshape(T(a), new), expected)


@settings(settings.get_profile("shape_ops"))
@given(shape=small_shapes, data=st.data())
def test_reshape_random_factorisations(shape, data):
    a = arr(shape)
    n = a.size
    # a random target shape with the same number of elements, maybe with one -1
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [0]
    first = data.draw(st.sampled_from(divisors))
    rest = n // first if first else 0
    target = data.draw(st.sampled_from([(first, rest), (first, -1) if first else (0, rest),
                                        (n,), (-1,)]))
    check(T(a).reshape(target), a.reshape(target))
    check(T(a).view(target), a.reshape(target))


def test_view_shares_memory_with_its_base():
    x = T(np.arange(6.0).reshape(2, 3))
    v = x.view(-1)
    v[4] = 100.0
    assert x[1, 1].item() == 100.0
    x.add_(1)
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3, 4, 101, 6])
    w = x.view(3, 2)
    w.zero_()
    np.testing.assert_array_equal(x.numpy(), np.zeros((2, 3)))


def test_reshape_of_contiguous_tensor_is_a_view_and_of_transposed_a_copy():
    x = T(np.arange(6.0).reshape(2, 3))
    r = x.reshape(3, 2)
    r[0, 0] = -5.0
    assert x[0, 0].item() == -5.0
    a = np.arange(6.0).reshape(2, 3)
    xt = T(a).t()
    r2 = xt.reshape(6)
    check(r2, a.T.reshape(6))  # row-major order of the transposed values
    r2[0] = 99.0
    assert xt[0, 0].item() == 0.0


def test_view_of_non_contiguous_tensor_is_an_error():
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's "
                                           r"size and stride .*Use \.reshape\(\.\.\.\) instead"):
        torch.zeros(2, 3).t().view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.zeros(4, 3, 4)[::2].view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.zeros(2, 3).expand(4, 2, 3).view(8, 3)


def test_view_of_non_contiguous_tensor_where_strides_allow():
    a = arr((4, 3, 4))
    check(T(a)[::2].view(2, 12), a[::2].reshape(2, 12))
    check(T(a)[:, ::2].view(4, 2, 2, 2), a[:, ::2].reshape(4, 2, 2, 2))
    b = arr((2, 3))
    check(T(b).t().view(3, 1, 2), b.T.reshape(3, 1, 2))
    check(T(b).expand(4, 2, 3).view(4, 6), np.broadcast_to(b, (4, 2, 3)).reshape(4, 6))


def test_view_and_reshape_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        x.view(4, 2)
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 4\]' is invalid for input of size 6"):
        x.view(-1, 4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5\]' is invalid for input of size 6"):
        x.reshape(5)
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 0\]' is invalid for input of size 6"):
        x.reshape(-1, 0)
    with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape "
                                           r"\[-1, 0\] because the unspecified dimension size -1 "
                                           r"can be any value and is ambiguous"):
        torch.zeros(0, 3).reshape(-1, 0)


def test_view_as_and_reshape_as():
    a = arr((2, 3))
    check(T(a).view_as(torch.zeros(3, 2)), a.reshape(3, 2))
    check(T(a).reshape_as(torch.zeros(6)), a.reshape(6))


# ---------------------------------------------------------------- t / transpose / permute

@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (0, 3)])
def test_t(shape):
    a = arr(shape)
    check(T(a).t(), a.T)
    check(torch.t(T(a)), a.T)


def test_t_of_3d_is_an_error():
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but "
                                           r"self is 3D"):
        torch.zeros(2, 3, 4).t()


def test_t_and_transpose_and_permute_are_views():
    x = T(np.zeros((2, 3)))
    x.t()[2, 1] = 7.0
    assert x[1, 2].item() == 7.0
    x.transpose(0, 1)[0, 1] = 8.0
    assert x[1, 0].item() == 8.0
    y = T(np.zeros((2, 3, 4)))
    y.permute(2, 0, 1)[3, 1, 2] = 9.0
    assert y[1, 2, 3].item() == 9.0


@settings(settings.get_profile("shape_ops"))
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_transpose_random(shape, data):
    a = arr(shape)
    n = len(shape)
    d0 = data.draw(st.integers(-n, n - 1))
    d1 = data.draw(st.integers(-n, n - 1))
    check(T(a).transpose(d0, d1), np.swapaxes(a, d0, d1))
    check(torch.transpose(T(a), d0, d1), np.swapaxes(a, d0, d1))


@settings(settings.get_profile("shape_ops"))
@given(shape=small_shapes, data=st.data())
def test_permute_random(shape, data):
    a = arr(shape)
    perm = data.draw(st.permutations(range(a.ndim)))
    # spell some dims negatively: they mean the same axes
    signs = data.draw(st.lists(st.booleans(), min_size=a.ndim, max_size=a.ndim))
    spelled = [p - a.ndim if neg else p for p, neg in zip(perm, signs)]
    expected = np.transpose(a, perm)
    if spelled:
        check(T(a).permute(*spelled), expected)
    check(T(a).permute(spelled), expected)
    check(torch.permute(T(a), tuple(spelled)), expected)


def test_transpose_and_permute_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match=r"number of dimensions in the tensor input does not "
                                           r"match the length of the desired ordering of "
                                           r"dimensions i\.e\. input\.dim\(\) = 2 is not equal "
                                           r"to len\(dims\) = 1"):
        x.permute(0)
    with pytest.raises(RuntimeError, match=r"input\.dim\(\) = 2 is not equal to len\(dims\) = 3"):
        x.permute(0, 1, 2)
    with pytest.raises(RuntimeError, match=r"permute\(\): duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match=r"permute\(\): duplicate dims are not allowed"):
        x.permute(1, -1)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        x.permute(0, 2)


def test_T_and_mT():
    a = arr((2, 3, 4))
    check(T(a).mT, np.swapaxes(a, -1, -2))
    b = arr((2, 3))
    check(T(b).T, b.T)


# ---------------------------------------------------------------- squeeze / unsqueeze / flatten

@pytest.mark.parametrize("shape", [(), (1,), (1, 2, 1, 3), (0, 1), (2, 3), (1, 1, 1)])
def test_squeeze_all(shape):
    a = arr(shape)
    check(T(a).squeeze(), np.squeeze(a))
    check(torch.squeeze(T(a)), np.squeeze(a))


@pytest.mark.parametrize("shape,dim,expected_shape", [
    ((1, 2, 1, 3), 0, (2, 1, 3)), ((1, 2, 1, 3), 2, (1, 2, 3)), ((1, 2, 1, 3), -2, (1, 2, 3)),
    ((1, 2, 1, 3), 1, (1, 2, 1, 3)),  # not size 1: unchanged
    ((1, 2, 1, 3), (0, 2), (2, 3)), ((1, 2, 1, 3), (0, 1), (2, 1, 3)),
    ((1, 2, 1), (-1, 0), (2,)), ((), 0, ()), ((), -1, ()), ((0, 1), 1, (0,)),
])
def test_squeeze_dims(shape, dim, expected_shape):
    a = arr(shape)
    check(T(a).squeeze(dim), a.reshape(expected_shape))


def test_squeeze_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        x.squeeze(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        torch.zeros(1, 2, 1).squeeze((0, 0))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 0, 3)])
def test_unsqueeze_every_position(shape):
    a = arr(shape)
    n = a.ndim
    for d in range(-n - 1, n + 1):
        check(T(a).unsqueeze(d), np.expand_dims(a, d))
        check(torch.unsqueeze(T(a), d), np.expand_dims(a, d))


def test_unsqueeze_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-3, 2\], but got 3\)"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match=r"\[-3, 2\], but got -4\)"):
        x.unsqueeze(-4)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1\)"):
        torch.tensor(1.0).unsqueeze(1)


def test_squeeze_and_unsqueeze_are_views():
    x = T(np.zeros((1, 3)))
    x.squeeze(0)[1] = 4.0
    x.unsqueeze(-1)[0, 2, 0] = 5.0
    np.testing.assert_array_equal(x.numpy(), [[0.0, 4.0, 5.0]])


@pytest.mark.parametrize("shape,start,end", [
    ((2, 3, 4), 0, -1), ((2, 3, 4), 1, -1), ((2, 3, 4), 0, 1), ((2, 3, 4), -2, -1),
    ((2, 3, 4), 1, 1), ((2, 0, 3), 1, -1), ((2, 1, 3, 2), 1, 2), ((5,), 0, 0),
])
def test_flatten(shape, start, end):
    a = arr(shape)
    s = start % a.ndim
    e = end % a.ndim
    new = a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:]
    check(T(a).flatten(start, end), a.reshape(new))
    check(torch.flatten(T(a), start_dim=start, end_dim=end), a.reshape(new))


def test_flatten_defaults_and_0d():
    a = arr((2, 3, 4))
    check(T(a).flatten(), a.reshape(-1))
    check(T(a).flatten(1), a.reshape(2, 12))
    check(torch.tensor(3.0).flatten(), np.array([3.0]))


def test_flatten_errors():
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot "
                                           "come after end_dim"):
        torch.zeros(2, 3).flatten(1, 0)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        torch.zeros(2, 3).flatten(0, 2)


# ---------------------------------------------------------------- expand / contiguous

@pytest.mark.parametrize("shape,sizes,expected", [
    ((1, 3), (4, 3), (4, 3)), ((1, 3), (4, -1), (4, 3)), ((1, 3), (2, 4, -1), (2, 4, 3)),
    ((3,), (2, 3), (2, 3)), ((), (2, 2), (2, 2)), ((3, 1), (3, 5), (3, 5)),
    ((2, 3), (-1, -1), (2, 3)), ((1, 0), (4, 0), (4, 0)), ((1,), (0,), (0,)),
])
def test_expand(shape, sizes, expected):
    a = arr(shape)
    e = np.broadcast_to(a, expected)
    check(T(a).expand(*sizes), e)
    check(T(a).expand(sizes), e)
    check(T(a).expand(torch.Size(expected)), e)
    check(T(a).expand_as(torch.zeros(expected)), e)


def test_expand_is_a_view_with_zero_strides():
    x = T(np.arange(3.0))
    e = x.expand(2, 3)
    assert e.stride() == (0, 1)
    x[1] = 10.0
    np.testing.assert_array_equal(e.numpy(), [[0.0, 10.0, 2.0], [0.0, 10.0, 2.0]])


def test_expand_past_int64_elements_is_pytorchs_runtime_error():
    for sizes in ((2**62, 3), (2**32, 2**32, 3), (2**63 - 1, 2, 3)):
        with pytest.raises(RuntimeError, match="^numel: integer multiplication overflow$"):
            torch.ones(3).expand(*sizes)
    # a count PyTorch holds but numpy's arrays (views too) cannot: a RuntimeError saying so
    with pytest.raises(RuntimeError, match=r"span at most 2\*\*63 - 1 bytes"):
        torch.ones(3).expand(2**61, 3)
    big = torch.ones(3).expand(2**40, 3)
    assert big.shape == (2**40, 3) and big.stride() == (0, 1)


def test_expand_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(2\) at non-singleton dimension "
                                           r"0\.  Target sizes: \[3, 3\]\.  Tensor sizes: "
                                           r"\[2, 3\]"):
        x.expand(3, 3)
    # PyTorch checks from the last dim, so it names dim 1 here
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(2\) at non-singleton dimension "
                                           r"1\."):
        torch.zeros(3, 2).expand(2, 3)
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(1\) must be greater "
                                           r"or equal to the number of dimensions in the tensor "
                                           r"\(2\)"):
        x.expand(3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(-1\) isn't "
                                           r"allowed in a leading, non-existing dimension 0"):
        x.expand(-1, 2, 3)


def test_contiguous_copies_only_when_needed():
    x = T(np.arange(6.0).reshape(2, 3))
    assert x.contiguous() is x
    xt = x.t()
    c = xt.contiguous()
    assert c is not xt
    assert c.is_contiguous()
    assert c.stride() == (2, 1)
    check(c, np.arange(6.0).reshape(2, 3).T)
    c[0, 0] = 50.0
    assert x[0, 0].item() == 0.0  # the copy does not alias x


# ---------------------------------------------------------------- cat / stack

@pytest.mark.parametrize("shapes,dim", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1), ([(2, 3), (2, 4)], -1),
    ([(2, 3, 4), (2, 3, 4)], -2), ([(0, 3), (2, 3)], 0), ([(2, 0), (2, 3)], 1),
    ([(3,)], 0), ([(2,), (0,), (3,)], 0),
])
def test_cat_values(shapes, dim):
    arrays = [arr(s, seed=i) for i, s in enumerate(shapes)]
    expected = np.concatenate(arrays, axis=dim)
    check(torch.cat([T(a) for a in arrays], dim), expected)
    check(torch.cat(tuple(T(a) for a in arrays), dim=dim), expected)
    check(torch.concat([T(a) for a in arrays], dim), expected)


def test_cat_skips_legacy_empty_1d_tensors():
    a = arr((2, 3))
    check(torch.cat([T(a), torch.zeros(0)], 1), a)
    check(torch.cat([torch.zeros(0), T(a)]), a)


@pytest.mark.parametrize("d1,d2,expected", [
    (torch.int64, torch.float32, torch.float32),
    (torch.int32, torch.int64, torch.int64),
    (torch.bool, torch.uint8, torch.uint8),
    (torch.float16, torch.int64, torch.float16),
    (torch.float32, torch.float64, torch.float64),
    (torch.bool, torch.bool, torch.bool),
])
def test_cat_promotes_dtypes(d1, d2, expected):
    a = np.array([[1, 0, 1], [0, 1, 1]])
    b = np.array([[1, 1], [0, 0]])
    r = torch.cat([torch.tensor(a).to(d1), torch.tensor(b).to(d2)], 1)
    assert r.dtype == expected
    np.testing.assert_array_equal(r.numpy().astype(np.float64), np.concatenate([a, b], 1))


def test_cat_errors():
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 0\. "
                                           r"Expected size 3 but got size 4 for tensor number 1 "
                                           r"in the list"):
        torch.cat([torch.zeros(2, 3), torch.zeros(3, 4)])
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 1\. "
                                           r"Expected size 2 but got size 3 for tensor number 2"):
        torch.cat([torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3, 3)], 1)
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 "
                                           "and 3"):
        torch.cat([torch.zeros(2, 3), torch.zeros(2, 3, 1)])
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)], 2)
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be "
                                           r"concatenated"):
        torch.cat([torch.tensor(1.0), torch.tensor(2.0)])
    with pytest.raises(ValueError, match=r"torch\.cat\(\): expected a non-empty list of Tensors"):
        torch.cat([])


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 2)])
def test_stack_values(shape):
    arrays = [arr(shape, seed=i) for i in range(3)]
    for d in range(-len(shape) - 1, len(shape) + 1):
        check(torch.stack([T(a) for a in arrays], d), np.stack(arrays, axis=d))
    check(torch.stack(tuple(T(a) for a in arrays), dim=0), np.stack(arrays))


def test_stack_promotes_and_errors():
    r = torch.stack([torch.tensor(1.0), torch.tensor(2)])
    assert r.dtype == torch.float32
    np.testing.assert_array_equal(r.numpy(), [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2, 3\] at entry 0 and \[3, 2\] at entry 1"):
        torch.stack([torch.zeros(2, 3), torch.zeros(3, 2)])
    with pytest.raises(IndexError, match=r"\[-3, 2\], but got 3\)"):
        torch.stack([torch.zeros(2, 3), torch.zeros(2, 3)], 3)
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        torch.stack([])


# ---------------------------------------------------------------- chunk / split / narrow / unbind

@pytest.mark.parametrize("n,chunks,sizes", [
    # observed in PyTorch: chunk size is ceil(n / chunks), so fewer chunks may come back
    (10, 4, [3, 3, 3, 1]), (5, 3, [2, 2, 1]), (6, 4, [2, 2, 2]), (3, 5, [1, 1, 1]),
    (6, 3, [2, 2, 2]), (6, 1, [6]), (0, 3, [0, 0, 0]),
])
def test_chunk_sizes(n, chunks, sizes):
    a = np.arange(float(n))
    parts = torch.tensor(a).chunk(chunks)
    assert isinstance(parts, tuple)
    assert [p.shape[0] for p in parts] == sizes
    offsets = np.cumsum([0] + sizes)
    for p, lo, hi in zip(parts, offsets, offsets[1:]):
        check(p, a[lo:hi])
    assert [p.shape[0] for p in torch.chunk(torch.tensor(a), chunks)] == sizes


def test_chunk_along_other_dims_and_views():
    a = arr((2, 7, 3))
    parts = T(a).chunk(3, dim=1)
    for p, e in zip(parts, np.split(a, [3, 6], axis=1)):
        check(p, e)
    parts = T(a).chunk(2, -1)
    for p, e in zip(parts, np.split(a, [2], axis=-1)):
        check(p, e)
    x = T(np.zeros(4))
    x.chunk(2)[1][0] = 3.0
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.0, 3.0, 0.0])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        x.chunk(0)


@pytest.mark.parametrize("n,arg,sizes", [
    (10, 3, [3, 3, 3, 1]), (10, 5, [5, 5]), (10, 20, [10]), (10, [3, 7], [3, 7]),
    (6, [1, 0, 5], [1, 0, 5]), (0, 2, [0]), (0, 0, [0]), (4, (2, 2), [2, 2]),
])
def test_split_sizes(n, arg, sizes):
    a = np.arange(float(n))
    parts = torch.tensor(a).split(arg)
    assert [p.shape[0] for p in parts] == sizes
    offsets = np.cumsum([0] + sizes)
    for p, lo, hi in zip(parts, offsets, offsets[1:]):
        check(p, a[lo:hi])
    assert [p.shape[0] for p in torch.split(torch.tensor(a), arg)] == sizes


def test_split_along_dim():
    a = arr((2, 3, 5))
    parts = T(a).split(2, dim=2)
    for p, e in zip(parts, np.split(a, [2, 4], axis=2)):
        check(p, e)
    parts = torch.split(T(a), [1, 2], dim=-2)
    for p, e in zip(parts, np.split(a, [1], axis=1)):
        check(p, e)


def test_split_errors():
    x = torch.arange(10)
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly "
                                           r"to 10 \(input tensor's size at dimension 0\), but "
                                           r"got split_sizes=\[3, 6\]"):
        x.split([3, 6])
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0, but "
                                           "got dimension size of 10"):
        x.split(0)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative, but got "
                                           "split_size=-1"):
        x.split(-1)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1\)"):
        x.split(2, 1)


@pytest.mark.parametrize("shape,dim,start,length", [
    ((10,), 0, 2, 5), ((10,), 0, -3, 2), ((10,), 0, 10, 0), ((10,), 0, -10, 10),
    ((2, 3), 1, 1, 2), ((2, 3), -1, 0, 0), ((2, 3), 0, 1, 1), ((2, 0, 3), 2, 1, 2),
])
def test_narrow(shape, dim, start, length):
    a = arr(shape)
    s = start % a.shape[dim] if start < 0 else start
    expected = np.take(a, np.arange(s, s + length), axis=dim)
    check(T(a).narrow(dim, start, length), expected)
    check(torch.narrow(T(a), dim, start, length), expected)


def test_narrow_is_a_view_and_errors():
    x = T(np.zeros(5))
    x.narrow(0, 2, 2).fill_(1.0)
    np.testing.assert_array_equal(x.numpy(), [0, 0, 1, 1, 0])
    y = torch.arange(10)
    with pytest.raises(RuntimeError, match=r"start \(8\) \+ length \(3\) exceeds dimension size "
                                           r"\(10\)\."):
        y.narrow(0, 8, 3)
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of "
                                         r"\[-10, 10\], but got 11\)"):
        y.narrow(0, 11, 0)
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of "
                                         r"\[-10, 10\], but got -11\)"):
        y.narrow(0, -11, 0)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1\)"):
        y.narrow(1, 0, 1)


@pytest.mark.parametrize("shape,dim", [((3,), 0), ((2, 3), 0), ((2, 3), 1), ((2, 3, 4), -1),
                                       ((0, 3), 1), ((2, 0), 0)])
def test_unbind(shape, dim):
    a = arr(shape)
    parts = T(a).unbind(dim)
    assert isinstance(parts, tuple)
    assert len(parts) == a.shape[dim]
    for i, p in enumerate(parts):
        check(p, np.take(a, i, axis=dim))
    assert len(torch.unbind(T(a), dim)) == a.shape[dim]


def test_unbind_errors_and_views():
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        torch.zeros(2, 3).unbind(2)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        torch.tensor(1.0).unbind(0)
    x = T(np.zeros((2, 2)))
    x.unbind(1)[1][0] = 6.0
    assert x[0, 1].item() == 6.0


# ---------------------------------------------------------------- flip / repeat

@pytest.mark.parametrize("shape,dims", [
    ((5,), (0,)), ((2, 3), (0,)), ((2, 3), (1,)), ((2, 3), (0, 1)), ((2, 3, 4), (-1, 0)),
    ((2, 3, 4), ()), ((2, 0, 3), (1, 2)), ((), ()),
])
def test_flip(shape, dims):
    a = arr(shape)
    expected = np.flip(a, dims) if dims else a
    check(T(a).flip(dims), expected)
    check(torch.flip(T(a), dims), expected)
    check(torch.flip(T(a), dims=list(dims)), expected)
    if dims:
        check(T(a).flip(*dims), expected)


def test_flip_errors():
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        torch.zeros(2, 3).flip(0, 0)
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        torch.zeros(2, 3).flip((1, -1))
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2\)"):
        torch.zeros(2, 3).flip(2)


@pytest.mark.parametrize("shape,reps", [
    ((2, 3), (2, 2)), ((2, 3), (1, 1)), ((2, 3), (2, 1, 3)), ((3,), (2,)), ((3,), (2, 2)),
    ((), (3,)), ((), (2, 2)), ((2, 3), (0, 1)), ((0, 2), (2, 3)), ((2, 1, 3), (1, 4, 1)),
])
def test_repeat_matches_tile(shape, reps):
    a = arr(shape)
    check(T(a).repeat(*reps), np.tile(a, reps))
    check(T(a).repeat(reps), np.tile(a, reps))


def test_repeat_errors_and_copies():
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be "
                                           "smaller than number of dimensions of tensor"):
        torch.zeros(2, 3).repeat(2)
    x = T(np.zeros(2))
    r = x.repeat(2)
    r[0] = 1.0
    assert x[0].item() == 0.0


# ---------------------------------------------------------------- dims out of range everywhere

@pytest.mark.parametrize("fn", [
    lambda x: x.size(3), lambda x: x.transpose(3, 0), lambda x: x.transpose(0, -4),
    lambda x: x.squeeze(3), lambda x: x.flatten(3), lambda x: x.flatten(0, -4),
    lambda x: x.unbind(-4), lambda x: x.narrow(3, 0, 1), lambda x: x.flip(3),
    lambda x: x.split(1, 3), lambda x: x.chunk(2, -4), lambda x: torch.cat([x, x], 3),
    lambda x: x.permute(0, 1, 3),
])
def test_dimension_out_of_range_is_an_index_error(fn):
    x = torch.zeros(2, 3, 4)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-3, 2\], but got -?[34]\)"):
        fn(x)
