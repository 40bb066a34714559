"""Index writes and reads (index_add/copy/fill, scatter*, gather) on 0-d and zero-size inputs,
scatter_reduce's prod/amax/amin, and PyTorch's errors for their bad inputs (issue 26).
References: numpy loops in float64, central differences for gradients, and PyTorch 2.13's
behaviour checked by hand."""
import numpy as np
import pytest

import fusetorch as torch


def _fd_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar f at x (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (f(a) - f(b)) / (2 * eps)
    return g


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self):
    out = x.astype(np.float64).copy()
    fold = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    seen = set()
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[dim] = index[pos]
        target = tuple(target)
        if not include_self and target not in seen:
            out[target] = src[pos]
        else:
            out[target] = fold(out[target], src[pos])
        seen.add(target)
    return out


def test_logsumexp_of_integers_computes_in_the_default_float():
    r = torch.logsumexp(torch.tensor([1, 2, 3]), 0)
    assert r.dtype == torch.float32
    assert abs(r.item() - np.log(np.exp([1.0, 2.0, 3.0]).sum())) < 1e-5
    assert torch.logsumexp(torch.tensor(3), 0).item() == 3.0
    assert torch.logsumexp(torch.tensor([[True, False]]), 1).shape == (1,)


@pytest.mark.parametrize("call, want", [
    (lambda x: x.index_fill(0, torch.tensor([0, 0]), 2.0), 2.0),
    (lambda x: x.index_fill(-1, torch.tensor(0), 2.0), 2.0),
    (lambda x: x.index_copy(0, torch.tensor([0]), torch.tensor(3.0)), 3.0),
    (lambda x: x.index_add(0, torch.tensor(0), torch.tensor(3.0)), 4.5),
    (lambda x: x.index_add(0, torch.tensor([0]), torch.tensor(3.0), alpha=2), 7.5),
    (lambda x: x.scatter(0, torch.tensor(0), torch.tensor(3.0)), 3.0),
    (lambda x: x.scatter(0, torch.tensor([0, 0]), torch.tensor([3.0, 4.0])), 4.0),
    (lambda x: x.scatter(0, torch.tensor([0]), 3.0), 3.0),
    (lambda x: x.scatter_add(0, torch.tensor([0, 0]), torch.tensor([3.0, 4.0])), 8.5),
    (lambda x: x.scatter_reduce(0, torch.tensor(0), torch.tensor(3.0), "sum"), 4.5),
    (lambda x: x.scatter_reduce(0, torch.tensor(0), torch.tensor(3.0), "mean"), 2.25),
    (lambda x: x.scatter_reduce(0, torch.tensor([0, 0]), torch.tensor([3.0, 4.0]), "amax"),
     4.0),
    (lambda x: x.scatter_reduce(0, torch.tensor([0]), torch.tensor([4.0]), "prod"), 6.0),
    (lambda x: x.gather(0, torch.tensor(0)), 1.5),
])
def test_zero_dim_self_is_one_element(call, want):
    r = call(torch.tensor(1.5))
    assert r.shape == () and r.item() == want


def test_zero_dim_self_gradients_and_gather_shapes():
    x = torch.tensor(1.5, requires_grad=True)
    x.index_add(0, torch.tensor([0]), torch.tensor(2.0)).backward()
    assert x.grad.item() == 1.0
    assert torch.tensor(1.5).gather(0, torch.tensor([0, 0])).tolist() == [1.5, 1.5]
    # a 1-d self with a 0-d index (a 0-d tensor counts as 1-d)
    assert torch.zeros(3).scatter(0, torch.tensor(1), torch.tensor(5.0)).tolist() == [0, 5, 0]
    assert torch.zeros(3).scatter_add(0, torch.tensor(1), torch.tensor(5.0)).tolist() == \
        [0, 5, 0]
    g = torch.arange(3.0).gather(0, torch.tensor(1))
    assert g.shape == () and g.item() == 1.0
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.tensor(1.5).index_add(1, torch.tensor([0]), torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="index 1 is out of bounds for dimension 0 with size 1"):
        torch.tensor(1.5).scatter(0, torch.tensor([1]), torch.tensor([3.0]))


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extremes_and_prod_values_and_gradients(reduce, include_self):
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (3, 4))
    src = rng.uniform(-2, 2, (2, 4))
    index = np.array([[1, 0, 2, 2], [1, 2, 1, 0]])  # repeated targets
    want = _scatter_reduce_ref(x, 0, index, src[:, :4], reduce, include_self)
    w = rng.uniform(0.5, 1.5, (3, 4))
    tx = torch.tensor(x, requires_grad=True)
    ts = torch.tensor(src, requires_grad=True)
    r = tx.scatter_reduce(0, torch.tensor(index), ts, reduce, include_self=include_self)
    np.testing.assert_allclose(r.detach().numpy(), want, rtol=1e-12)
    assert type(r.grad_fn).__name__ == "ScatterReduceBackward0"
    (r * torch.tensor(w)).sum().backward()

    def loss_x(v):
        return (_scatter_reduce_ref(v, 0, index, src[:, :4], reduce, include_self) * w).sum()

    def loss_s(v):
        return (_scatter_reduce_ref(x, 0, index, v[:, :4], reduce, include_self) * w).sum()

    np.testing.assert_allclose(tx.grad.numpy(), _fd_grad(loss_x, x), atol=1e-6)
    np.testing.assert_allclose(ts.grad.numpy(), _fd_grad(loss_s, src), atol=1e-6)


def test_scatter_reduce_reads_only_the_index_box_of_a_larger_src():
    x = torch.zeros(2, 2)
    src = torch.arange(6.0).reshape(2, 3)
    r = x.scatter_reduce(0, torch.tensor([[1, 0]]), src, "amax", include_self=False)
    assert r.tolist() == [[0.0, 1.0], [0.0, 0.0]]


def test_scatter_reduce_ties_share_the_gradient_and_zeros_in_prod():
    # amax with a tie between self and src: PyTorch splits the gradient evenly
    x = torch.tensor([2.0, 1.0], requires_grad=True)
    s = torch.tensor([2.0, 0.5], requires_grad=True)
    x.scatter_reduce(0, torch.tensor([0, 1]), s, "amax").sum().backward()
    assert x.grad.tolist() == [0.5, 1.0] and s.grad.tolist() == [0.5, 0.0]
    # prod with one zero: the zero's gradient is the product of the others
    x = torch.tensor([3.0], requires_grad=True)
    s = torch.tensor([0.0, 2.0], requires_grad=True)
    r = x.scatter_reduce(0, torch.tensor([0, 0]), s, "prod")
    r.backward()
    assert r.item() == 0.0 and x.grad.tolist() == [0.0] and s.grad.tolist() == [6.0, 0.0]


def test_scatter_reduce_integers_and_scatter_multiply():
    x = torch.tensor([5, 1, 7])
    idx = torch.tensor([0, 0, 2])
    s = torch.tensor([3, 9, 2])
    assert x.scatter_reduce(0, idx, s, "amax").tolist() == [9, 1, 7]
    assert x.scatter_reduce(0, idx, s, "amin", include_self=False).tolist() == [3, 1, 2]
    assert x.scatter_reduce(0, idx, s, "prod").tolist() == [135, 1, 14]
    assert x.scatter(0, idx, s, reduce="multiply").tolist() == [135, 1, 14]
    assert x.scatter(0, idx, 2, reduce="multiply").tolist() == [20, 1, 14]
    assert x.scatter_(0, idx, s, reduce="multiply").tolist() == [135, 1, 14]
    assert x.tolist() == [135, 1, 14]
    e = torch.tensor([1.0, 2.0]).scatter_reduce(0, torch.zeros(0, dtype=torch.long),
                                                 torch.zeros(0), "amax")
    assert e.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("call, err, msg", [
    (lambda: torch.zeros(3, 2).index_add(0, torch.tensor([0, 1]), torch.ones(2, 3)),
     RuntimeError, r"source tensor shape must match self tensor shape, excluding the "
                   r"specified dimension. Got self.shape = \[3, 2\] source.shape = \[2, 3\]"),
    (lambda: torch.zeros(3, 2).index_add(0, torch.tensor([0, 1]), torch.ones(3, 2)),
     RuntimeError, r"Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"),
    (lambda: torch.zeros(3, 2).index_add(1, torch.tensor([0, 1]), torch.ones(2)),
     RuntimeError, "Indexing dim 1 is out of bounds of the source tensor with dim 1"),
    (lambda: torch.zeros(3).index_add(0, torch.tensor([1.0]), torch.ones(1)),
     RuntimeError, "Expected dtype int32/int64 for index but got: Float"),
    (lambda: torch.zeros(3, dtype=torch.float64).index_add(0, torch.tensor([0]), torch.ones(1)),
     RuntimeError, r"self \(Double\) and source \(Float\) must have the same scalar type"),
    (lambda: torch.zeros(3).index_add(0, torch.tensor([3]), torch.ones(1)),
     IndexError, "index out of range in self"),
    (lambda: torch.zeros(3, 2).index_copy(0, torch.tensor([0, 1]), torch.ones(2, 3)),
     RuntimeError, "Source/destination tensor must have same slice shapes"),
    (lambda: torch.zeros(3, 2).index_copy(0, torch.tensor([0, 1]), torch.ones(3, 2)),
     IndexError, r"Number of indices \(2\) should be equal to source.size\(dim\) \(3\)"),
    (lambda: torch.zeros(3).index_copy(0, torch.tensor([0, 1]), torch.tensor(1.0)),
     IndexError, r"When source is scalar, index should have one element \(got 2\)"),
    (lambda: torch.zeros(3).index_copy(0, torch.tensor([0], dtype=torch.int32), torch.ones(1)),
     RuntimeError, "Expected a long tensor for index, but got Int"),
    (lambda: torch.zeros(3).index_copy(0, torch.tensor([3]), torch.ones(1)),
     IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    (lambda: torch.zeros(3).index_fill(0, torch.tensor([1.0]), 2.0),
     IndexError, "Expected dtype int64 for index"),
    (lambda: torch.zeros(3).index_fill(0, torch.tensor([1]), torch.tensor([2.0])),
     RuntimeError, "only supports a 0-dimensional value tensor"),
    (lambda: torch.zeros(3).index_fill(0, torch.tensor([[1]]), 2.0),
     RuntimeError, "Index has to be a vector/scalar"),
    (lambda: torch.zeros(3, dtype=torch.float64).scatter(0, torch.tensor([0]), torch.ones(1)),
     RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda: torch.zeros(3, dtype=torch.float64).scatter_reduce(0, torch.tensor([0]),
                                                                torch.ones(1), "amax"),
     RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda: torch.zeros(3).scatter(0, torch.tensor([0.0]), torch.ones(1)),
     RuntimeError, "Expected dtype int32/int64 for index"),
    (lambda: torch.zeros(3, 2).scatter(0, torch.tensor([[-1, 0]]), 1.0),
     RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: torch.zeros(3, 2).scatter(0, torch.tensor([[0, 0]]), torch.ones(1, 1)),
     RuntimeError, r"Expected index \[1, 2\] to be no larger than self \[3, 2\] apart from "
                   r"dimension 0 and to be no larger size than src \[1, 1\]"),
    (lambda: torch.zeros(3, 2).scatter(0, torch.tensor([[0, 0, 0]]), 1.0),
     RuntimeError, r"Expected index \[1, 3\] to be no larger than self \[3, 2\]"),
    (lambda: torch.zeros(3).scatter(0, torch.tensor([0]), 1.0, reduce="max"),
     RuntimeError, "reduce argument must be either add or multiply"),
])
def test_index_write_errors_are_pytorchs(call, err, msg):
    with pytest.raises(err, match=msg):
        call()
