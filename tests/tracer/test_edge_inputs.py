"""Valid inputs PyTorch accepts and fusetorch used to refuse (issue 26): zero-size tensors,
broadcasting contractions, integer bitwise not, out= on index reductions. Expected values
are derived by hand or with numpy in float64; PyTorch 2.13's behaviour was checked by hand."""
import math

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F


def test_group_norm_and_batch_norm_of_zero_size_inputs():
    r = F.group_norm(torch.zeros(0, 2), 1)
    assert r.shape == (0, 2)
    assert F.group_norm(torch.zeros(0, 4, 3), 2, torch.ones(4), torch.zeros(4)).shape == (0, 4, 3)
    r = F.batch_norm(torch.zeros(0), torch.zeros(0), torch.ones(0))
    assert r.shape == (0,)
    # PyTorch counts no channels in a non-empty 1-d input
    with pytest.raises(RuntimeError, match="running_mean should contain 0 elements not 3"):
        F.batch_norm(torch.zeros(3), torch.zeros(3), torch.ones(3))


def test_searchsorted_with_zero_size_rows():
    r = torch.searchsorted(torch.zeros(0, 0), torch.zeros(0, 0))
    assert r.shape == (0, 0) and r.dtype == torch.int64
    r = torch.searchsorted(torch.zeros(2, 0), torch.zeros(2, 3))
    assert r.tolist() == [[0, 0, 0], [0, 0, 0]]


def test_unique_along_a_zero_size_dim():
    v, inv, cnt = torch.unique_consecutive(torch.zeros(5, 0, 5), return_inverse=True,
                                           return_counts=True, dim=1)
    assert v.shape == (5, 0, 5) and inv.shape == (0,) and cnt.shape == (0,)
    v = torch.unique_consecutive(torch.zeros(0, 3), dim=0)
    assert v.shape == (0, 3)
    for fn in (torch.unique, torch.unique_consecutive):
        with pytest.raises(RuntimeError, match="0 sized dimensions, and they aren't selected"):
            fn(torch.zeros(5, 0, 5), dim=0)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 3), (2, 0, 0)])
@pytest.mark.parametrize("ord", [1, math.inf, 2])
def test_positive_matrix_norms_of_empty_matrices_are_zero(shape, ord):
    r = torch.linalg.matrix_norm(torch.zeros(shape), ord)
    assert r.shape == shape[:-2] and r.tolist() == ([0.0] * shape[0] if len(shape) == 3 else 0.0)
    assert torch.linalg.norm(torch.zeros(shape[-2:]), ord).item() == 0.0


def test_negative_matrix_norms_of_empty_matrices_still_raise():
    with pytest.raises(IndexError, match="amin"):
        torch.linalg.matrix_norm(torch.zeros(0, 0), -1)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32, torch.bool])
def test_an_empty_index_of_any_dtype_gathers_and_scatters_nothing(dtype):
    idx = torch.zeros(0, dtype=dtype)
    assert torch.gather(torch.zeros(3), 0, idx).shape == (0,)
    assert torch.zeros(3, 2).gather(0, torch.zeros(0, 2, dtype=dtype)).shape == (0, 2)
    assert torch.zeros(3).scatter(0, idx, 1.0).tolist() == [0, 0, 0]
    assert torch.zeros(3).scatter_add(0, idx, torch.zeros(0)).tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        torch.gather(torch.zeros(3), 0, torch.zeros(2, dtype=torch.uint8))


def test_tensordot_broadcasts_a_size_one_contracted_dim():
    a = np.arange(2.0).reshape(2, 1) + 1
    b = np.arange(6.0).reshape(2, 3)
    r = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=([1], [0]))
    np.testing.assert_allclose(r.numpy(), a @ np.ones((1, 2)) @ b)
    r = torch.tensordot(torch.tensor(b.T), torch.tensor(a.T), dims=([1], [0]))
    np.testing.assert_allclose(r.numpy(), b.T @ np.broadcast_to(a.T, (2, 2)))
    assert torch.tensordot(torch.ones(2, 0), torch.ones(0, 3), dims=1).tolist() == [[0] * 3] * 2
    with pytest.raises(RuntimeError, match="first has size 3 in dim 1 and second has size 2"):
        torch.tensordot(torch.ones(2, 3), torch.ones(2, 3), dims=([1], [0]))
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        torch.tensordot(torch.ones(2, 3), torch.ones(2, 3), dims=([1], [0, 1]))


def test_out_on_index_reductions_and_selections():
    x = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
    r = torch.kthvalue(x, 2, 1, out=(v, i))
    assert r[0] is v and r[1] is i and v.tolist() == [2.0, 4.0] and i.tolist() == [2, 2]
    o = torch.empty(5)
    assert torch.amax(x, 1, out=o) is o and o.tolist() == [3.0, 5.0]
    assert torch.amin(x, (0, 1), out=o).tolist() == 0.0 and o.shape == ()
    o = torch.empty(0)
    assert torch.gather(x, 1, torch.tensor([[1], [0]]), out=o).tolist() == [[1.0], [0.0]]
    o = torch.empty(0)
    assert torch.index_select(x, 1, torch.tensor([2, 0]), out=o).tolist() == [[2, 3], [4, 0]]
    for fn in (torch.sort, torch.cummax, torch.cummin):
        v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
        want = fn(x, 1)
        r = fn(x, 1, out=(v, i))
        assert r[0] is v and v.tolist() == want[0].tolist() and i.tolist() == want[1].tolist()
    v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
    assert torch.max(x, 1, out=(v, i))[0] is v and i.tolist() == [0, 1]
    o = torch.empty(0, dtype=torch.long)
    assert torch.argmax(x, 1, out=o) is o and o.tolist() == [0, 1]


@pytest.mark.parametrize("call, err, msg", [
    (lambda x: torch.amax(x, 0, out=torch.empty(0, dtype=torch.float64)), RuntimeError,
     "Expected the dtype for input and out to match, but got Float for input's dtype and "
     "Double for out's dtype"),
    (lambda x: torch.gather(x, 0, torch.tensor([0]), out=torch.empty(0, dtype=torch.long)),
     RuntimeError, "Expected out tensor to have dtype float, but got long int instead"),
    (lambda x: torch.index_select(x, 0, torch.tensor([0]), out=torch.empty(0, dtype=torch.int)),
     RuntimeError, "self and result must have the same scalar type"),
    (lambda x: torch.kthvalue(x, 1, out=(torch.empty(0), torch.empty(0))), RuntimeError,
     "output indices must be of scalar type Long"),
    (lambda x: torch.kthvalue(x, 1, out=torch.empty(0)), TypeError,
     "argument 'out' must be tuple of Tensors"),
    (lambda x: torch.max(x, 0, out=(torch.empty(0, dtype=torch.float64),
                                    torch.empty(0, dtype=torch.long))),
     RuntimeError, "Expected out tensor to have dtype float, but got double instead"),
    (lambda x: torch.cat([x, x], out=x), RuntimeError, "refer to a single memory location"),
    (lambda x: torch.stack([x[:2], x[1:]], out=x), RuntimeError, "single memory location"),
    (lambda x: torch.masked_select(x, x > 0, out=x), RuntimeError, "single memory location"),
    (lambda x: torch.take(x, torch.tensor([0, 1]), out=x[1:]), RuntimeError,
     "single memory location"),
    (lambda x: torch.gather(x, 0, torch.tensor([0]), out=x), RuntimeError,
     "single memory location"),
    (lambda x: torch.multinomial(x + 1, 2, out=x), RuntimeError,
     "multinomial expects Long tensor out, got: Float"),
    (lambda x: torch.amax(x.requires_grad_(), 0, out=torch.empty(0)), RuntimeError,
     r"amax\(\): functions with out=... arguments don't support automatic differentiation"),
    (lambda x: torch.add(x.requires_grad_(), 1, out=torch.empty(0)), RuntimeError,
     r"add\(\): functions with out=... arguments don't support automatic differentiation"),
])
def test_out_errors_are_pytorchs(call, err, msg):
    with pytest.raises(err, match=msg):
        call(torch.arange(3.0))


def test_out_may_be_an_input_where_pytorch_allows_it():
    x = torch.arange(3.0)
    assert torch.add(x, 1, out=x) is x and x.tolist() == [1.0, 2.0, 3.0]
    y = torch.tensor([3.0, 1.0, 2.0])
    torch.sort(y, out=(y, torch.empty(0, dtype=torch.long)))
    assert y.tolist() == [1.0, 2.0, 3.0]


def test_unfold_and_fold_of_bool():
    rng = np.random.default_rng(5)
    a = rng.random((1, 2, 3, 4)) > 0.5
    cols = F.unfold(torch.tensor(a), 2, padding=1)
    assert cols.dtype == torch.bool
    want = F.unfold(torch.tensor(a.astype(np.float64)), 2, padding=1).numpy() != 0
    np.testing.assert_array_equal(cols.numpy(), want)
    c = np.ones((1, 4, 4), dtype=bool)
    c[0, 0, 0] = False  # the only block covering the corner: it stays False
    r = F.fold(torch.tensor(c), (3, 3), 2)
    assert r.dtype == torch.bool
    assert r.numpy().astype(int).tolist() == [[[[0, 1, 1], [1, 1, 1], [1, 1, 1]]]]
    with pytest.raises(NotImplementedError, match="not implemented for 'Byte'"):
        F.unfold(torch.ones(1, 1, 3, 3, dtype=torch.uint8), 2)


def test_pair_outs_alias_the_input_only_where_pytorch_writes_in_place():
    for fn in (lambda x, o: torch.kthvalue(x, 1, 1, keepdim=True, out=o),
               lambda x, o: torch.max(x, 1, keepdim=True, out=o),
               lambda x, o: torch.median(x, 1, keepdim=True, out=o)):
        x = torch.tensor([[3.0, 1.0, 2.0]])
        with pytest.raises(RuntimeError, match="single memory location"):
            fn(x, (x[:, :1], torch.empty(0, dtype=torch.long)))
    x = torch.tensor([[3.0, 1.0, 2.0]])
    torch.cummax(x, 1, out=(x, torch.empty(0, dtype=torch.long)))
    assert x.tolist() == [[3.0, 3.0, 3.0]]


def test_logsumexp_over_an_empty_dim_is_minus_infinity():
    r = torch.logsumexp(torch.zeros(3, 0), 1)
    assert r.tolist() == [-math.inf] * 3
    assert torch.logsumexp(torch.zeros(0), 0).item() == -math.inf
    assert torch.logsumexp(torch.zeros(0, 3), 1).shape == (0,)


@pytest.mark.parametrize("call, msg", [
    (lambda: torch.chunk(torch.tensor(1.5), 1), "chunk expects at least a 1-dimensional tensor"),
    (lambda: torch.split(torch.tensor(1.5), 1), "split expects at least a 1-dimensional tensor"),
    (lambda: torch.outer(torch.tensor(1.5), torch.ones(2)),
     "outer: Expected 1-D argument self, but got 0-D"),
    (lambda: torch.outer(torch.ones(2), torch.ones(2, 1)),
     "outer: Expected 1-D argument vec2, but got 2-D"),
])
def test_zero_dim_inputs_of_one_d_ops_raise_pytorchs_error(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()
