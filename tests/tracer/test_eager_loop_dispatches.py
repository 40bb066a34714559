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
