"""Loop ops that make fewer dispatches per call (issue 29, item 1): unbind as one `index` per
piece, an embedding or index_select by a vector without reshapes, the backward cache's structure
key built with fewer calls. Each must give what the longer form gave: values against numpy in
float64, gradients against central differences, PyTorch's shapes, names and refusals (checked
by hand against PyTorch 2.13), and keys that tell apart what the key rule tells apart."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.ir.identity import value_key
from fusetorch.tracer import autograd as A


def _central(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 1), ((2, 3, 4), -1), ((5,), 0),
                                       ((2, 3, 4), 1)])
def test_unbind_values_views_and_gradient(shape, dim):
    a = np.random.default_rng(0).standard_normal(shape)
    w = np.arange(1.0, shape[dim] + 1)  # a weight per piece: each piece's gradient differs
    x = torch.tensor(a, requires_grad=True)
    parts = torch.unbind(x.transpose(0, -1) if len(shape) > 1 and dim == 1 else x, dim)
    src = a.swapaxes(0, -1) if len(shape) > 1 and dim == 1 else a
    assert len(parts) == src.shape[dim]
    for k, p in enumerate(parts):
        np.testing.assert_array_equal(p.detach().numpy(), np.take(src, k, axis=dim))
        assert p.grad_fn.name() == "UnbindBackward0"
        assert p._base is not None  # a view of x, as PyTorch's select
    sum(float(w[k]) * p.sum() for k, p in enumerate(parts)).backward()

    def f(v):
        s = v.swapaxes(0, -1) if len(shape) > 1 and dim == 1 else v
        return sum(w[k] * np.take(s, k, axis=dim).sum() for k in range(s.shape[dim]))
    np.testing.assert_allclose(x.grad.numpy(), _central(f, a), rtol=1e-6, atol=1e-8)


def test_unbind_of_an_empty_dim_gives_no_pieces_and_pieces_refuse_inplace():
    assert torch.unbind(torch.zeros(0, 3)) == ()  # PyTorch: () (was one empty piece)
    assert torch.unbind(torch.zeros(3, 0), 1) == ()
    assert [tuple(p.shape) for p in torch.unbind(torch.zeros(2, 0), 0)] == [(0,), (0,)]
    x = torch.randn(3, 2, requires_grad=True)
    u = torch.unbind(x * 1, 1)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and is being modified "
                                           "inplace. This view is the output of a function"):
        u[0].add_(1)
    with pytest.raises(IndexError):
        torch.unbind(torch.tensor(1.0))
    with pytest.raises(IndexError):
        torch.unbind(torch.zeros(2, 3), 2)


@pytest.mark.parametrize("index", [[1, 2, 2, 0], 3, [[1, 4], [4, 4]], []])
def test_embedding_rows_and_gradient_for_every_index_rank(index):
    rng = np.random.default_rng(1)
    table = rng.standard_normal((5, 3))
    idx = np.asarray(index, dtype=np.int64)
    emb = torch.nn.Embedding(5, 3).double()
    with torch.no_grad():
        emb.weight.copy_(torch.tensor(table))
    out = emb(torch.tensor(idx))
    assert tuple(out.shape) == idx.shape + (3,)
    np.testing.assert_array_equal(out.detach().numpy(), table[idx])
    assert out.grad_fn.name() == "EmbeddingBackward0"
    g = rng.standard_normal(idx.shape + (3,))
    (out * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(emb.weight.grad.numpy(),
                               _central(lambda t: (t[idx] * g).sum(), table), atol=1e-8)


def test_index_select_by_a_vector_and_by_a_0d_index():
    a = np.arange(12.0).reshape(3, 4)
    x = torch.tensor(a)
    np.testing.assert_array_equal(torch.index_select(x, 1, torch.tensor([3, 0, 3])).numpy(),
                                  a[:, [3, 0, 3]])
    np.testing.assert_array_equal(torch.index_select(x, 0, torch.tensor(2)).numpy(), a[[2]])
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.index_select(x, 0, torch.tensor([3]))


def test_structure_keys_of_nested_tuples_keep_numbers_apart():
    spec = (("slice", 0, 5, 1), ("int", 2), ("none",))
    assert value_key(spec) == spec
    assert value_key((("x", 1),)) != value_key((("x", 1.0),))
    assert value_key((("x", 1),)) != value_key((("x", True),))
    assert value_key((("x", 0.0),)) != value_key((("x", -0.0),))
    assert value_key(((1, (2,)),)) == value_key(((1, (2,)),))
    assert value_key(((1, [2]),)) != value_key(((1, (2,)),))


def test_backward_cache_tells_index_specs_apart():
    x = torch.randn(4, 3, requires_grad=True)
    keys = []
    for i in (1, 2, 1):
        y = x[i] * 2.0
        order = A.toposort([y._node])
        key, pos = A._structure_key(order, [x._node], [])
        assert pos[order[-1]] == len(order) - 1
        keys.append(key)
    assert keys[0] != keys[1] and keys[0] == keys[2]


# the view ops whose callers make their attributes valid for the op's shape rule, so that apply
# skips its rules cache (`checked=True`): (fusetorch call, numpy reference)
_CHECKED_VIEWS = [
    (lambda t: t[2], lambda a: a[2]),
    (lambda t: t[-1, 1:3], lambda a: a[-1, 1:3]),
    (lambda t: t[0, 0, 0], lambda a: a[0, 0, 0]),
    (lambda t: t.view(3, -1), lambda a: a.reshape(3, -1)),
    (lambda t: t.reshape(-1), lambda a: a.reshape(-1)),
    (lambda t: t[1].expand(2, 3, 4), lambda a: np.broadcast_to(a[1], (2, 3, 4))),
    (lambda t: t[:, :1].expand(-1, 5, 4), lambda a: np.broadcast_to(a[:, :1], (4, 5, 4))),
    (lambda t: t.unsqueeze(1).squeeze(1), lambda a: a),
    (lambda t: t[:, :1].squeeze(), lambda a: a[:, 0]),
    (lambda t: t.flatten(1), lambda a: a.reshape(4, 12)),
    (lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
]


@pytest.mark.parametrize("k", range(len(_CHECKED_VIEWS)))
def test_checked_view_ops_give_the_rules_shapes_values_and_gradients(k):
    from fusetorch.ir.graph import make_node
    f, ref = _CHECKED_VIEWS[k]
    a = np.random.default_rng(k).standard_normal((4, 3, 4))
    x = torch.tensor(a, requires_grad=True)
    y = f(x)
    want = ref(a)
    assert tuple(y.shape) == want.shape and y.dtype == torch.float64
    np.testing.assert_array_equal(y.detach().numpy(), want)
    node = y._node
    assert node.shape == make_node(node.op, node.inputs, node.attrs).shape  # the rule's shape
    if want.ndim and y._data.size:  # (numpy's 0-d result is a scalar, not a view)
        assert y._base is x
    w = np.arange(1.0, want.size + 1).reshape(want.shape)
    (y * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _central(lambda v: (ref(v) * w).sum(), a),
                               rtol=1e-6, atol=1e-8)


def test_cat_of_one_dtype_skipped_empties_and_promotion():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((1, 3)), rng.standard_normal((1, 2))
    x, y = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    parts = [x, y, x]
    got = torch.cat(parts, 1)
    np.testing.assert_array_equal(got.detach().numpy(), np.concatenate([a, b, a], 1))
    (got * torch.arange(1.0, 9.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[7.0, 9.0, 11.0]])  # 1..3 + 6..8
    np.testing.assert_array_equal(y.grad.numpy(), [[4.0, 5.0]])
    # PyTorch's legacy skip of 1-d empty tensors, and its promotion (checked by hand)
    e = torch.zeros(0, dtype=torch.float64)
    np.testing.assert_array_equal(torch.cat([e, torch.tensor(a[0]), e]).numpy(), a[0])
    mixed = torch.cat([torch.tensor([1, 2]), torch.tensor([0.5], dtype=torch.float32)])
    assert mixed.dtype == torch.float32
    np.testing.assert_array_equal(mixed.numpy(), [1.0, 2.0, 0.5])
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got int"):
        torch.cat([x, 3])


def test_split_chunk_narrow_pieces_and_split_refuses_negative_sizes():
    a = np.random.default_rng(2).standard_normal((2, 8))
    x = torch.tensor(a, requires_grad=True)
    pieces = list(x.chunk(4, 1)) + list(torch.split(x, [3, 0, 5], 1)) + [x.narrow(1, 2, 3)]
    want = [a[:, 0:2], a[:, 2:4], a[:, 4:6], a[:, 6:8], a[:, 0:3], a[:, 3:3], a[:, 3:8],
            a[:, 2:5]]
    for p, w in zip(pieces, want):
        np.testing.assert_array_equal(p.detach().numpy(), w)
        assert p._base is x or not w.size
    sum((k + 1) * p.sum() for k, p in enumerate(pieces)).backward()
    np.testing.assert_allclose(
        x.grad.numpy(),
        _central(lambda v: sum((k + 1) * v[:, s].sum() for k, s in enumerate(
            [slice(0, 2), slice(2, 4), slice(4, 6), slice(6, 8), slice(0, 3), slice(3, 3),
             slice(3, 8), slice(2, 5)])), a), rtol=1e-6, atol=1e-8)
    # PyTorch's refusal, before the sum's (checked by hand against PyTorch 2.13)
    for sizes in ([5, -1], [-1, 2]):
        with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes have only "
                                               r"non-negative entries, but got split_sizes=\["):
            torch.split(torch.arange(4.0), sizes)


@pytest.mark.parametrize("dtypes, want", [
    ((torch.float32, torch.int64), torch.float32),   # the skipped empty decides the dtype
    ((torch.int64, torch.float64), torch.float64),
    ((torch.bool, torch.int64), torch.int64),
])
def test_cat_promotes_over_the_empty_tensors_it_skips(dtypes, want):
    # (checked by hand against PyTorch 2.13: torch.cat([torch.empty(0), torch.tensor([1, 2])])
    # is tensor([1., 2.]))
    empty = torch.empty(0, dtype=dtypes[0])
    full = torch.tensor([1, 2]).to(dtypes[1])
    for parts in ([empty, full], [full, empty]):
        out = torch.cat(parts)
        assert out.dtype == want
        np.testing.assert_array_equal(out.numpy(), np.array([1, 2]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_where_without_promotion_matches_numpy_and_its_gradient(dtype):
    """where's direct path (one float dtype, or a Python number beside a tensor): numpy's
    values in the tensor's dtype, broadcasting, the gradient to each tensor branch, and
    PyTorch's broadcast error; other dtypes and mixes take the promoting path."""
    rng = np.random.default_rng(1)
    cv = rng.random((3, 4)) > 0.5
    xv, yv = rng.standard_normal((3, 4)), rng.standard_normal((1, 4))
    c = torch.tensor(cv)
    x = torch.tensor(xv, dtype=dtype, requires_grad=True)
    y = torch.tensor(yv, dtype=dtype, requires_grad=True)
    np_dt = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16}[dtype]
    out = torch.where(c, x, y)
    assert out.dtype == dtype and out.grad_fn.name() == "WhereBackward0"
    np.testing.assert_array_equal(out.detach().numpy(), np.where(cv, xv.astype(np_dt),
                                                                 yv.astype(np_dt)))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), cv.astype(np_dt))
    np.testing.assert_array_equal(y.grad.numpy(), (~cv).sum(0, keepdims=True).astype(np_dt))
    left, right = torch.where(c, x, 0.5), torch.where(c, -2, x)
    assert left.dtype == right.dtype == dtype
    np.testing.assert_array_equal(left.detach().numpy(), np.where(cv, xv.astype(np_dt), 0.5))
    np.testing.assert_array_equal(right.detach().numpy(), np.where(cv, -2.0, xv.astype(np_dt)))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of "
                                           r"tensor b \(5\) at non-singleton dimension 1"):
        torch.where(c, x, torch.ones(3, 5, dtype=dtype))
    mixed = torch.where(c, x, torch.tensor(yv))  # float64 beside dtype: promoted
    assert mixed.dtype == torch.float64
    ints = torch.where(c, torch.tensor([1, 2, 3, 4]), 0.5)  # an integer branch and a float
    assert ints.dtype == torch.float32


def test_split_keywords_are_pytorchs():
    # mamba-minimal's `x_and_res.split(split_size=[d, d], dim=-1)`: the method's argument is
    # split_size, torch.split's split_size_or_sections (each refuses the other's, as PyTorch)
    x = torch.arange(6.0)
    assert [t.tolist() for t in x.split(split_size=[2, 4], dim=-1)] == [[0.0, 1.0],
                                                                      [2.0, 3.0, 4.0, 5.0]]
    assert [t.tolist() for t in torch.split(x, split_size_or_sections=3)] == [[0.0, 1.0, 2.0],
                                                                            [3.0, 4.0, 5.0]]
    with pytest.raises(TypeError, match="split_size_or_sections"):
        x.split(split_size_or_sections=2)
    with pytest.raises(TypeError, match="split_size"):
        torch.split(x, split_size=2)


def test_contains_and_reversed_are_pytorchs():
    t = torch.tensor([[1, 2], [3, 4]])
    assert 2 in t and 5 not in t and torch.tensor(3) in t and 2.0 in t
    with pytest.raises(RuntimeError, match="Tensor.__contains__ only supports Tensor or scalar, "
                                           "but you passed in a <class 'str'>."):
        "a" in t
    assert reversed(t).tolist() == [[3, 4], [1, 2]]
    s = torch.tensor(1.0)
    assert reversed(s) is s
