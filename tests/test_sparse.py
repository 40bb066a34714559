"""The sparse COO subset (fusetorch/sparse): creation, coalesce, to_dense, to_sparse,
indices/values, sparse @ dense with gradients for the values and the dense operand.
References: numpy float64 (np.add.at over the entries) for values, central finite differences
in float64 (gradcheck) for gradients; printed forms and errors are PyTorch 2.13's, read by
hand."""
import re

import numpy as np
import pytest

import fusetorch as torch
from fusetorch._out_of_scope import OutOfScopeError

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) repeats: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0]


def _dense_ref(idx, val, size):
    out = np.zeros(size, dtype=np.float64)
    np.add.at(out, tuple(np.asarray(idx)), np.asarray(val, dtype=np.float64))
    return out


def test_creation_coalesce_and_to_dense():
    s = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (2, 3))
    assert s.is_sparse and s.layout is torch.sparse_coo and torch.ones(1).layout is torch.strided
    assert (s.is_coalesced(), s.sparse_dim(), s.dense_dim(), s._nnz(), s.shape) == \
        (False, 2, 0, 4, (2, 3))
    np.testing.assert_array_equal(s.to_dense().numpy(), _dense_ref(IDX, VAL, (2, 3)))
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert c.indices().tolist() == [[0, 1, 1], [2, 0, 2]] and c.values().tolist() == [4, 4, 5]
    with pytest.raises(RuntimeError, match=re.escape("Cannot get indices on an uncoalesced "
                                                     "tensor, please call .coalesce() first")):
        s.indices()
    with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
        s.values()
    assert s._indices().tolist() == IDX and s._values().tolist() == VAL
    # lists, an inferred size, a dtype, is_coalesced=
    t = torch.sparse_coo_tensor(IDX, VAL, dtype=torch.float64, is_coalesced=True)
    assert t.shape == (2, 3) and t.dtype is torch.float64 and t.is_coalesced()
    # hybrid: one sparse dim, dense rows
    h = torch.sparse_coo_tensor([[2, 0, 2]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], (3, 2))
    assert h.dense_dim() == 1
    np.testing.assert_array_equal(h.to_dense().numpy(), [[3, 4], [0, 0], [6, 8]])
    assert h.coalesce().values().tolist() == [[3, 4], [6, 8]]
    e = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 3))
    assert e._nnz() == 0 and e.to_dense().tolist() == [[0.0] * 3] * 2
    assert e.coalesce()._nnz() == 0


def test_to_sparse_of_dense():
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    x = torch.tensor(a)
    s = x.to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert s.values().tolist() == [1.5, 2.0, -3.0]
    np.testing.assert_array_equal(s.to_dense().numpy(), a)
    rows = torch.tensor([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]]).to_sparse(1)
    assert rows.indices().tolist() == [[0, 2]] and rows.values().tolist() == [[0, 1], [2, 0]]
    t = x.t().to_sparse()  # non-contiguous input
    np.testing.assert_array_equal(t.to_dense().numpy(), a.T)
    z = torch.tensor(3.0).to_sparse()  # 0-d
    assert (z.shape, z._nnz(), z.to_dense().item()) == ((), 1, 3.0)
    assert torch.zeros(0, 4).to_sparse()._nnz() == 0
    assert torch.zeros(0, 4).to_sparse().to_dense().shape == (0, 4)
    assert torch.ones(2).to_dense().tolist() == [1.0, 1.0]  # dense: itself
    with pytest.raises(RuntimeError, match=re.escape("dense_to_sparse: sparse_dim argument must "
                                                     "be in [0,2] range, but 3 is given")):
        x.to_sparse(3)


def test_sparse_times_dense_values():
    rng = np.random.default_rng(0)
    d = rng.standard_normal((3, 4))
    want = _dense_ref(IDX, VAL, (2, 3)) @ d
    s = torch.sparse_coo_tensor(IDX, VAL, (2, 3), dtype=torch.float64)
    dt = torch.tensor(d)
    for got in (torch.sparse.mm(s, dt), torch.spmm(s, dt), s @ dt, torch.mm(s, dt),
                torch.matmul(s, dt), s.coalesce() @ dt):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    s32 = torch.sparse_coo_tensor(IDX, VAL, (2, 3))
    np.testing.assert_allclose((s32 @ dt.float()).numpy(), want, rtol=1e-5)


def test_gradients_reach_values_and_dense():
    idx = torch.tensor(IDX)

    def f(v, d):
        return torch.sparse.mm(torch.sparse_coo_tensor(idx, v, (2, 3)), d)
    v = torch.tensor(VAL, dtype=torch.float64, requires_grad=True)
    d = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(f, (v, d))
    # by hand: d(sum(w * S @ d)) / dv_k = (w @ d^T)[r_k, c_k]; / dd = S^T w
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    (f(v, d) * torch.tensor(w)).sum().backward()
    dn = d.detach().numpy()
    np.testing.assert_allclose(v.grad.numpy(), (w @ dn.T)[tuple(np.asarray(IDX))], rtol=1e-12)
    np.testing.assert_allclose(d.grad.numpy(), _dense_ref(IDX, VAL, (2, 3)).T @ w, rtol=1e-12)
    # through coalesce and to_dense too, and into a dense tensor made sparse
    assert torch.autograd.gradcheck(
        lambda v: torch.sparse_coo_tensor(idx, v, (2, 3)).coalesce().to_dense(), (v,))
    x = torch.tensor([[0.0, 1.0], [2.0, 0.0]], dtype=torch.float64, requires_grad=True)
    (x.to_sparse().to_dense() * torch.tensor([[5.0, 6.0], [7.0, 8.0]])).sum().backward()
    assert x.grad.tolist() == [[0.0, 6.0], [7.0, 0.0]]  # only the stored entries


def test_a_compiled_gcn_layer_matches_eager():
    torch.manual_seed(0)
    adj = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]).to_sparse()
    w = torch.randn(4, 2, requires_grad=True)
    x = torch.randn(3, 4)

    def layer(x, w):
        return torch.relu(torch.spmm(adj, x @ w)).sum()
    eager = layer(x, w)
    (g,) = torch.autograd.grad(eager, w)
    compiled = torch.compile(layer)
    for _ in range(2):
        out = compiled(x, w)
        (gc,) = torch.autograd.grad(out, w)
        np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-6)
        np.testing.assert_allclose(gc.numpy(), g.numpy(), rtol=1e-6)
    assert compiled.graph() != ""  # a compiled program ran (no graph break)


def test_printed_form_is_pytorchs():
    s = torch.sparse_coo_tensor(IDX, VAL, (2, 3))
    assert repr(s) == ("tensor(indices=tensor([[0, 1, 1, 0],\n"
                       "                       [2, 0, 2, 2]]),\n"
                       "       values=tensor([3., 4., 5., 1.]),\n"
                       "       size=(2, 3), nnz=4, layout=torch.sparse_coo)")
    v = torch.tensor(VAL, dtype=torch.float64, requires_grad=True)
    text = repr(torch.sparse_coo_tensor(IDX, v, (2, 3)))
    assert text.endswith("size=(2, 3), nnz=4, dtype=torch.float64, layout=torch.sparse_coo, "
                         "requires_grad=True)")
    text = repr(torch.sparse_coo_tensor(IDX, v * 2, (2, 3)))
    assert text.endswith("layout=torch.sparse_coo,\n       grad_fn=<MulBackward0>)")
    e = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 3))
    assert repr(e) == ("tensor(indices=tensor([], size=(2, 0)),\n"
                       "       values=tensor([], size=(0,)),\n"
                       "       size=(2, 3), nnz=0, layout=torch.sparse_coo)")


def test_errors_as_pytorch():
    i = torch.tensor(IDX)
    v = torch.tensor(VAL)
    cases = [
        (lambda: torch.sparse_coo_tensor(i, v, (1, 3)),
         "size is inconsistent with indices: for dim 0, size is 1 but found index 1"),
        (lambda: torch.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (3,)),
         "found negative index -1 for dim 0"),
        (lambda: torch.sparse_coo_tensor(i, v[:3], (2, 3)),
         "indices and values must have same nnz, but got nnz from indices: 4, nnz from values: 3"),
        (lambda: torch.sparse_coo_tensor(torch.tensor([0, 1]), v[:2]),
         "indices must be sparse_dim x nnz, but got: [2]"),
        (lambda: torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3, 3)),
         "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = 2, sparse_dim = 1, "
         "dense_dim = 0"),
        (lambda: torch.sparse.mm(torch.sparse_coo_tensor(i, v, (2, 3)), torch.ones(4, 2)),
         "addmm: Argument #3 (dense): Expected dim 0 size 3, got 4"),
        (lambda: torch.sparse.mm(torch.sparse_coo_tensor(i, v, (2, 3)),
                                 torch.ones(3, 2, dtype=torch.float64)),
         "expected scalar type Float but found Double"),
        (lambda: torch.ones(2).coalesce(),
         "coalesce expected sparse coordinate tensor layout but got Strided"),
        (lambda: torch.ones(2).indices(),
         "indices expected sparse coordinate tensor layout but got Strided"),
    ]
    for fn, message in cases:
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == message
    with pytest.raises(IndexError, match=re.escape("Dimension out of range (expected to be in "
                                                   "range of [-1, 0], but got 1)")):
        torch.spmm(torch.sparse_coo_tensor(i, v, (2, 3)), torch.ones(3))


def test_the_rest_of_sparse_is_out_of_scope():
    s = torch.sparse_coo_tensor(IDX, VAL, (2, 3))
    for fn in (lambda: s.abs(), lambda: s.exp(), lambda: torch.sparse.softmax,
               lambda: torch.sparse_csr_tensor, lambda: torch.ones(2, 2).to_sparse_csr(),
               lambda: s ** torch.ones(2, 3)):
        with pytest.raises(OutOfScopeError, match="sparse tensors beyond the COO subset"):
            fn()
    with pytest.raises(NotImplementedError, match="make its values require grad instead"):
        torch.sparse_coo_tensor(IDX, VAL, (2, 3), requires_grad=True)
