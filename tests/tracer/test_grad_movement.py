"""Gradients of movement, indexing, joining and casting ops, and of chains of them, against
central finite differences (`fusetorch.autograd.gradcheck`, float64 inputs) over
hypothesis-drawn shapes, dims (negative included), keys and index tensors (with repeats).

Also: `x[key] = v` into a clone (gradients for the base and the value), several outputs sharing
inputs, and values used twice (their gradients accumulate). Where PyTorch's answer is written
literally it was observed by hand in PyTorch 2.13.0 (CPU); torch is not imported here.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import fusetorch as torch
from fusetorch.autograd import gradcheck

F64 = torch.float64
SET = settings(max_examples=8, deadline=None)
SEEDS = st.integers(0, 2**32 - 1)
SHAPES = array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
SHAPES1 = array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


def leaf(a, dtype=F64):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=True)


def rand(seed, shape):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape)


def check(fn, *arrays, **kw):
    assert gradcheck(fn, tuple(leaf(a) for a in arrays), **kw)


def idx(a):
    return torch.tensor(np.asarray(a, dtype=np.int64))


# ---------------------------------------------------------------- views and shape changes

@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_reshape_view_flatten_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    n = a.size
    target = data.draw(st.sampled_from([(-1,), (n, 1), (1, -1), (1,) + shape, shape[::-1],
                                        (n,) if n > 1 else ()]))
    check(lambda x: x.reshape(target), a)
    check(lambda x: torch.reshape(x * 1.5, target), a)
    check(lambda x: x.view(*target) if target else x.view(()), a)
    check(lambda x: x.view(-1), a)
    check(torch.flatten, a)
    if shape:
        nd = len(shape)
        s = data.draw(st.integers(-nd, nd - 1))
        e = data.draw(st.integers(s % nd, nd - 1))
        e = e - nd if data.draw(st.booleans()) else e
        check(lambda x: x.flatten(s, e), a)
        check(lambda x: x.unflatten(0, (1, shape[0], 1)), a)


@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_permute_transpose_t_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    nd = len(shape)
    perm = data.draw(st.permutations(range(nd)))
    perm = [p - nd if data.draw(st.booleans()) else p for p in perm]
    check(lambda x: x.permute(*perm), a)
    check(lambda x: torch.permute(x, tuple(perm)), a)
    if nd:
        d0, d1 = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        check(lambda x: x.transpose(d0, d1), a)
        check(lambda x: torch.swapaxes(x, d0, d1) * 2, a)
    if nd <= 2:
        check(lambda x: x.t(), a)
        check(torch.t, a)
        if nd == 2:
            check(lambda x: x.T @ x, a)


@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_squeeze_unsqueeze_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    nd = len(shape)
    check(lambda x: x.squeeze(), a)
    d = data.draw(st.integers(-max(nd, 1), max(nd, 1) - 1))
    check(lambda x: x.squeeze(d), a)
    u = data.draw(st.integers(-nd - 1, nd))
    check(lambda x: x.unsqueeze(u), a)
    check(lambda x: torch.unsqueeze(x, u).squeeze(u).unsqueeze(0), a)


@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_expand_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    lead = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    rest = tuple(data.draw(st.sampled_from([-1, 1, 2, 3])) if s == 1 else
                 data.draw(st.sampled_from([-1, s])) for s in shape)
    target = lead + rest
    check(lambda x: x.expand(*target), a)
    check(lambda x: x.expand(target) * 2, a)
    ref = np.zeros(tuple(t if t != -1 else s for t, s in zip(target, (1,) * len(lead) + shape)))
    check(lambda x: x.expand_as(torch.tensor(ref)), a)


# ---------------------------------------------------------------- indexing

@st.composite
def basic_keys(draw, shape):
    key = []
    for i, n in enumerate(shape):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            key.append(slice(start, stop, draw(st.none() | st.integers(1, 3))))
        elif kind == "none":
            key.extend([None, slice(None)])
        else:
            key.append(Ellipsis)
            if draw(st.booleans()):
                key.append(None)
            break
    return tuple(key)


@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_getitem_basic_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    key = data.draw(basic_keys(shape))
    check(lambda x: x[key], a)
    check(lambda x: x[key] * x[key], a)  # the same slice used twice


@SET
@given(shape=SHAPES1, seed=SEEDS, data=st.data())
def test_getitem_int_tensor_with_repeats_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    n = shape[0]
    ints = st.integers(-n, n - 1)
    i1 = data.draw(st.lists(ints, min_size=1, max_size=5))
    check(lambda x: x[idx(i1)], a)
    check(lambda x: x[i1], a)  # a Python list is an index tensor too
    i2 = np.array(data.draw(st.lists(ints, min_size=4, max_size=4))).reshape(2, 2)
    check(lambda x: x[idx(i2)], a)
    check(lambda x: x[idx(i1)] * x[idx(i1)][..., :1], a)
    if len(shape) >= 2:
        m = shape[1]
        j = data.draw(st.lists(st.integers(-m, m - 1), min_size=1, max_size=4))
        check(lambda x: x[:, idx(j)], a)
        check(lambda x: x[idx(i1[:1]), idx(j)], a)  # two broadcast advanced indices
        check(lambda x: x[idx(i1), 1:], a)
        check(lambda x: x[:, idx(j), ...].sum(-1), a)
        check(lambda x: x.transpose(0, -1)[..., idx(i1)], a)
        check(lambda x: x[None, idx(i1), ::2], a)
    if len(shape) == 3:
        k = data.draw(st.lists(st.integers(0, shape[2] - 1), min_size=1, max_size=1))
        check(lambda x: x[idx(i1[:1]), :, idx(k)], a)  # separated: PyTorch moves them first
        check(lambda x: x[0, :, idx(k * 2)], a)


@SET
@given(shape=SHAPES1, seed=SEEDS, data=st.data())
def test_getitem_bool_mask_gradcheck(shape, seed, data):
    rng = np.random.default_rng(seed)
    a = rand(seed, shape)
    full = torch.tensor(rng.random(shape) < 0.5)
    first = torch.tensor(rng.random(shape[:1]) < 0.5)
    check(lambda x: x[full], a)
    check(lambda x: x[first], a)
    check(lambda x: x[x > 0].exp(), a)
    if len(shape) >= 2:
        second = torch.tensor(rng.random(shape[1:2]) < 0.6)
        check(lambda x: x[:, second], a)


def test_getitem_gradient_values_accumulate_repeats():
    x = leaf([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x[idx([0, 2, 0, -1])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 2.0], [0.0, 0.0], [2.0, 2.0]])
    x.grad = None
    x[::2, 1].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0], [0.0, 0.0], [0.0, 1.0]])
    x.grad = None
    x[torch.tensor([[True, False], [False, False], [True, True]])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])


SET_KEYS = [  # (key, shape of the value) for an x of shape (3, 4)
    ((slice(None, None, 2),), (4,)),
    ((slice(None, None, 2),), (2, 4)),
    ((1,), (4,)),
    ((1,), ()),
    ((slice(None), slice(1, None, 2)), (3, 1)),
    ((Ellipsis, 0), (3,)),
    ((None, 2), (1, 4)),
    (("idx", [2, 0]), (2, 4)),
    (("idx", [2, 0]), (4,)),
    ((slice(None), "idx", [3, 1, 0]), (3, 3)),
    (("mask",), ()),
]


@pytest.mark.parametrize("key,vshape", SET_KEYS, ids=[str(k) for k, _ in SET_KEYS])
def test_setitem_into_a_clone_gradcheck(key, vshape):
    mask = torch.tensor([[True, False, False, True], [False, True, False, False],
                         [True, True, False, False]])

    def real(k):
        if k and k[0] == "mask":
            return mask
        if k and k[0] == "idx":
            return idx(k[1])
        if len(k) == 3 and k[1] == "idx":
            return (k[0], idx(k[2]))
        return k

    rng = np.random.default_rng(1)
    a, v = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, vshape)
    w = torch.tensor(rng.uniform(-2, 2, (3, 4)))

    def f(x, val):
        b = x.clone()
        b[real(key)] = val
        return b * w

    check(f, a, v)

    def g(x):  # a Python scalar written: no gradient where it landed
        b = x * 2
        b[real(key)] = 0.5
        return b.exp()

    check(g, a)


def test_setitem_gradient_values():
    # PyTorch 2.13: b = x.clone(); b[::2] = v; b.sum().backward()
    x, v = leaf(np.zeros((3, 4))), leaf(np.zeros(4))
    b = x.clone()
    b[::2] = v
    b.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0] * 4, [1] * 4, [0] * 4])
    np.testing.assert_array_equal(v.grad.numpy(), [2.0, 2.0, 2.0, 2.0])


def test_setitem_through_a_view_of_a_clone():
    # PyTorch 2.13: the write through b[1] lands in b, and backward sees it
    x, v = leaf(np.ones((2, 3))), leaf(5.0)
    b = x.clone()
    b[1][0] = v
    (b * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=F64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0, 3.0], [0.0, 5.0, 6.0]])
    assert v.grad.item() == 4.0


# ---------------------------------------------------------------- joining and splitting

@SET
@given(shape=SHAPES1, seed=SEEDS, data=st.data())
def test_cat_stack_gradcheck(shape, seed, data):
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1))
    other = list(shape)
    other[d] = data.draw(st.integers(1, 3))
    a, b = rand(seed, shape), rand(seed + 1, tuple(other))
    check(lambda x, y: torch.cat([x, y, x], d), a, b)
    check(lambda x, y: torch.cat((x * y.sum(), y), dim=d), a, b)
    s = data.draw(st.integers(-nd - 1, nd))
    c = rand(seed + 2, shape)
    check(lambda x, y: torch.stack([x, y, x], s), a, c)
    check(lambda x, y: torch.stack((x.exp(), y), dim=s), a, c)


@SET
@given(shape=SHAPES1, seed=SEEDS, data=st.data())
def test_split_chunk_narrow_unbind_gradcheck(shape, seed, data):
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1))
    n = shape[d]
    a = rand(seed, shape)
    size = data.draw(st.integers(1, n + 1))
    check(lambda x: x.split(size, d), a)
    sections = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=3))
    sections.append(n - sum(sections)) if sum(sections) <= n else None
    if sum(sections) == n:
        check(lambda x: torch.split(x, sections, dim=d), a)
    chunks = data.draw(st.integers(1, 4))
    check(lambda x: x.chunk(chunks, d), a)
    check(lambda x: torch.chunk(x * x, chunks, dim=d)[0], a)
    start = data.draw(st.integers(-n, n - 1))
    length = data.draw(st.integers(0, n - (start % n)))
    check(lambda x: x.narrow(d, start, length), a)
    check(lambda x: torch.narrow(x, d, start, length).sum(), a)
    check(lambda x: x.unbind(d), a)
    check(lambda x: torch.unbind(x, d)[-1] * 3, a)


def test_split_outputs_used_separately_accumulate():
    x = leaf(np.arange(6.0))
    a, b, c = x.split(2)
    (a * 1 + c * 3).sum().backward()  # b unused: its part of the gradient is 0
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 0, 0, 3, 3])


# ---------------------------------------------------------------- gather / scatter / select

@SET
@given(shape=SHAPES1, seed=SEEDS, data=st.data())
def test_gather_scatter_add_index_select_gradcheck(shape, seed, data):
    rng = np.random.default_rng(seed)
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1))
    a = rand(seed, shape)
    ishape = tuple(data.draw(st.integers(1, 3)) if i == d % nd else
                   data.draw(st.integers(1, s)) for i, s in enumerate(shape))
    index = idx(rng.integers(0, shape[d], ishape))  # repeats likely
    check(lambda x: x.gather(d, index), a)
    check(lambda x: torch.gather(x.exp(), d, index), a)
    src = rand(seed + 1, ishape)
    check(lambda x, s: x.scatter_add(d, index, s), a, src)
    check(lambda x, s: torch.scatter_add(x * 2, d, index, s * s), a, src)
    sel = idx(rng.integers(0, shape[d], data.draw(st.integers(1, 4))))
    check(lambda x: x.index_select(d, sel), a)
    check(lambda x: torch.index_select(x, d, sel) ** 2, a)


def test_index_select_of_a_0d_tensor_gradcheck():
    check(lambda x: x.index_select(0, idx([0])), 1.5)
    check(lambda x: torch.zeros(2, 3, dtype=F64).index_select(0, idx(1)) * x, [1.0, 2.0, 3.0])


@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_masked_fill_gradcheck(shape, seed, data):
    rng = np.random.default_rng(seed)
    drop = data.draw(st.integers(0, len(shape)))
    mshape = tuple(s if data.draw(st.booleans()) else 1 for s in shape[drop:])
    mask = torch.tensor(rng.random(mshape) < 0.5)
    a = rand(seed, shape)
    check(lambda x: x.masked_fill(mask, 0.25), a)
    check(lambda x: torch.masked_fill(x.exp(), mask, -1.0), a)
    check(lambda x, v: x.masked_fill(mask, v), a, 0.75)  # a 0-d tensor value gets a gradient


def test_masked_fill_value_gradient():
    # PyTorch 2.13: x.masked_fill(m, v).sum() with m = [True, False, True] broadcast over [2, 3]
    x, v = leaf(np.zeros((2, 3))), leaf(2.0)
    x.masked_fill(torch.tensor([True, False, True]), v).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [0, 1, 0]])
    assert v.grad.item() == 4.0 and v.grad.shape == ()


# ---------------------------------------------------------------- flip / repeat / copies

@SET
@given(shape=SHAPES, seed=SEEDS, data=st.data())
def test_flip_repeat_clone_contiguous_gradcheck(shape, seed, data):
    a = rand(seed, shape)
    nd = len(shape)
    if nd:
        dims = data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        dims = [x - nd if data.draw(st.booleans()) else x for x in dims]
        check(lambda x: x.flip(dims), a)
        check(lambda x: torch.flip(x * x, dims=dims), a)
    reps = tuple(data.draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd + 2)))
    check(lambda x: x.repeat(*reps), a)
    check(lambda x: x.repeat(reps).sum(0), a)
    check(lambda x: x.clone() * x, a)
    check(torch.clone, a)
    check(lambda x: x.permute(*range(nd)[::-1]).contiguous().reshape(-1), a)
    check(lambda x: x.contiguous(), a)


# ---------------------------------------------------------------- casts in a chain

def test_casts_in_the_middle_of_a_chain():
    a = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])
    # through float32: finite differences need a larger step
    assert gradcheck(lambda x: (x.float() * 2).exp().double().sum(1), (leaf(a),), eps=1e-3,
                     atol=1e-3, rtol=1e-2)
    assert gradcheck(lambda x: x.to(torch.float32).sin().to(F64) * x, (leaf(a),), eps=1e-3,
                     atol=1e-3, rtol=1e-2)
    check(lambda x: x.double().tanh(), a)  # float64 -> float64: a no-op cast
    check(lambda x: x.type(F64) * 3, a)
    x = leaf(a)
    y = (x.float() ** 2).sum()
    assert y.dtype is torch.float32
    y.backward()
    assert x.grad.dtype is F64
    np.testing.assert_allclose(x.grad.numpy(), 2 * a, rtol=1e-6)
    # integer casts stop the gradient (float -> long -> float is piecewise constant)
    x = leaf(a)
    ((x.long().double() + 1) * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.trunc(a) + 1)


# ---------------------------------------------------------------- chains, shared inputs

def test_chain_mixing_movement_and_reductions():
    rng = np.random.default_rng(7)
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (1, 2))
    check(lambda x, y: x.t().reshape(6, 2)[1:].sum(0).exp() * y.expand(3, 2), a, b)
    check(lambda x, y: (x[:, None, ::2] * y.t()).flatten(1).amax(-1).prod(0), a, b)
    c = rng.uniform(-1, 1, (2, 3, 4))
    check(lambda x: x.permute(2, 0, 1)[..., 1:].reshape(4, -1).mean(1, keepdim=True)
          .expand(4, 3).t().contiguous().view(-1).sigmoid(), c)
    check(lambda x: torch.stack(x.unbind(1), -1).transpose(0, 2).flip(0)[idx([1, 1, 0])]
          .var(0).sqrt(), c)
    check(lambda x: (x @ x.transpose(-1, -2))[:, 0].max(-1).values.unsqueeze(-1) - x.mean(), c)


def test_several_outputs_sharing_inputs():
    rng = np.random.default_rng(8)
    a, b = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,))
    check(lambda x, y: (x * y, x.exp(), (x + y).sum(0), y[1:] * 2), a, b)
    check(lambda x: x.chunk(2, 1) + (x.t(),), a)


def test_a_value_used_twice_accumulates():
    a = np.array([0.5, -1.0, 2.0])
    x = leaf(a)
    (x + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    x = leaf(a)
    y = x.exp()
    (y * y + y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * a) + np.exp(a), rtol=1e-12)
    x = leaf(a)
    ((x[0] * x).sum() + x.sum() + x[idx([2, 2])].sum()).backward(torch.tensor(1.0, dtype=F64))
    np.testing.assert_allclose(x.grad.numpy(), [a.sum() + a[0] + 1, a[0] + 1, a[0] + 3])
    # two backward calls accumulate into .grad
    x = leaf(a)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 + 2 * a)
    # backward of several roots at once
    x = leaf(a)
    torch.autograd.backward([x.sin().sum(), (x * 2).sum()])
    np.testing.assert_allclose(x.grad.numpy(), np.cos(a) + 2)
