"""Arithmetic on sparse COO tensors (fusetorch/sparse/arith.py): sums, products, scaling,
transposes, torch.sparse.sum, products with dense matrices on either side, the legacy
constructors. References: numpy float64 on the densified operands for values, central finite
differences (gradcheck) in float64 for gradients; which results are coalesced, the entries'
order of coalesced results and the error texts are PyTorch 2.13's, read by hand."""
import numpy as np
import pytest

import fusetorch as torch

IDX = [[0, 1, 1], [2, 0, 2]]
VAL = [3.0, 4.0, 5.0]
UNC_IDX = [[1, 0, 1], [2, 0, 2]]  # (1, 2) twice: uncoalesced


def _dense(idx, val, size) -> np.ndarray:
    out = np.zeros(size, dtype=np.float64)
    np.add.at(out, tuple(np.asarray(idx)), np.asarray(val, dtype=np.float64))
    return out


def _sp(idx=IDX, val=VAL, size=(2, 3), coalesce=True, dtype=torch.float32):
    s = torch.sparse_coo_tensor(idx, torch.tensor(val, dtype=dtype), size)
    return s.coalesce() if coalesce else s


A = _dense(IDX, VAL, (2, 3))
B_IDX, B_VAL = [[0, 1], [2, 1]], [1.0, 2.0]
B = _dense(B_IDX, B_VAL, (2, 3))


def test_sum_of_coalesced_tensors_merges_their_entries():
    s = _sp() + _sp(B_IDX, B_VAL)
    assert s.is_coalesced()
    assert s.indices().tolist() == [[0, 1, 1, 1], [2, 0, 1, 2]]  # row-major order
    assert s.values().tolist() == [4.0, 4.0, 2.0, 5.0]
    np.testing.assert_allclose(s.to_dense().numpy(), A + B)
    d = _sp() - _sp()  # entries that cancel stay, as zeros
    assert d._nnz() == 3 and d.values().tolist() == [0.0, 0.0, 0.0]
    twice = _sp().add(_sp(B_IDX, B_VAL), alpha=2)
    np.testing.assert_allclose(twice.to_dense().numpy(), A + 2 * B)


def test_sum_with_an_uncoalesced_tensor_keeps_every_entry():
    u = _sp(UNC_IDX, VAL, coalesce=False)
    s = u + _sp()
    assert not s.is_coalesced() and s._nnz() == 6
    np.testing.assert_allclose(s.to_dense().numpy(), _dense(UNC_IDX, VAL, (2, 3)) + A)


def test_scaling_keeps_the_pattern_and_the_flag():
    for s in (_sp(), _sp(UNC_IDX, VAL, coalesce=False)):
        ref = s.to_dense().numpy().astype(np.float64)
        for out, want in ((s * 2, ref * 2), (2 * s, ref * 2), (s / 2, ref / 2), (-s, -ref),
                          (s * torch.tensor(3.0), ref * 3)):
            assert out.is_coalesced() == s.is_coalesced() and out._nnz() == s._nnz()
            np.testing.assert_allclose(out.to_dense().numpy(), want)
    np.testing.assert_allclose((_sp() ** 2).to_dense().numpy(), A ** 2)
    ints = _sp(val=[1, 2, 3], dtype=torch.int64)
    assert (ints * 2).dtype == torch.int64 and (ints / 2).dtype == torch.float32
    assert (ints + _sp()).dtype == torch.float32
    assert (ints / 2)._values().tolist() == [0.5, 1.0, 1.5]


def test_products_with_sparse_and_dense_tensors():
    both = _sp() * _sp(B_IDX, B_VAL)  # only (0, 2) is in both
    assert both.is_coalesced() and both.indices().tolist() == [[0], [2]]
    np.testing.assert_allclose(both.to_dense().numpy(), A * B)
    u = _sp(UNC_IDX, VAL, coalesce=False)
    np.testing.assert_allclose((u * _sp()).to_dense().numpy(), _dense(UNC_IDX, VAL, (2, 3)) * A)
    d = np.arange(6.0).reshape(2, 3)
    out = _sp() * torch.tensor(d, dtype=torch.float32)
    assert out.layout == torch.sparse_coo and out._nnz() == 3
    np.testing.assert_allclose(out.to_dense().numpy(), A * d)
    row = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose((_sp() * torch.tensor(row)).to_dense().numpy(), A * row)


def test_matrix_products_on_either_side():
    d = np.arange(6.0).reshape(3, 2)
    m = torch.tensor(np.arange(4.0).reshape(2, 2), dtype=torch.float32)
    np.testing.assert_allclose((m @ _sp()).numpy(), m.numpy() @ A, rtol=1e-6)
    np.testing.assert_allclose(torch.mm(m, _sp()).numpy(), m.numpy() @ A, rtol=1e-6)
    ss = torch.sparse.mm(_sp(), _sp().t())
    assert ss.layout == torch.sparse_coo
    np.testing.assert_allclose(ss.to_dense().numpy(), A @ A.T)
    got = torch.sparse.addmm(torch.ones(2, 2), _sp(), torch.tensor(d, dtype=torch.float32),
                             beta=0.5, alpha=2)
    np.testing.assert_allclose(got.numpy(), 0.5 + 2 * (A @ d), rtol=1e-6)


def test_transposes():
    t = _sp().t()
    assert t.shape == (3, 2) and not t.is_coalesced()
    assert t._indices().tolist() == [[2, 0, 2], [0, 1, 1]]
    np.testing.assert_allclose(t.to_dense().numpy(), A.T)
    np.testing.assert_allclose(_sp().T.to_dense().numpy(), A.T)
    np.testing.assert_allclose(_sp().transpose(0, 1).to_dense().numpy(), A.T)
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 sparse and 0 "
                                           r"dense dimensions, but got 3 sparse"):
        torch.sparse_coo_tensor([[0], [0], [0]], [1.0], (1, 1, 1)).t()


def test_sparse_sum():
    u = _sp(UNC_IDX, VAL, coalesce=False)
    ref = _dense(UNC_IDX, VAL, (2, 3))
    total = torch.sparse.sum(u)
    assert total.layout == torch.strided and total.item() == pytest.approx(ref.sum())
    for dim in (0, 1, -1):
        s = torch.sparse.sum(u, dim=dim)
        assert s.layout == torch.sparse_coo and s.is_coalesced()
        np.testing.assert_allclose(s.to_dense().numpy(), ref.sum(dim))
    assert torch.sparse.sum(_sp(), dim=1).indices().tolist() == [[0, 1]]
    assert torch.sparse.sum(u, dim=[0, 1]).layout == torch.strided
    k = u.sum(1, keepdim=True)
    assert k.shape == (2, 1) and k.indices().tolist() == [[0, 1], [0, 0]]
    np.testing.assert_allclose(k.to_dense().numpy(), ref.sum(1, keepdims=True))
    assert torch.sparse.sum(u, dtype=torch.float64).dtype == torch.float64
    assert torch.sparse.sum(_sp(val=[1, 2, 3], dtype=torch.int64)).dtype == torch.int64
    # dense dims: summed sparse dims leave a dense tensor
    h = torch.sparse_coo_tensor(IDX, torch.ones(3, 2), (2, 3, 2))
    hd = _dense(IDX, np.ones((3, 2)), (2, 3, 2))
    np.testing.assert_allclose(torch.sparse.sum(h, dim=1).to_dense().numpy(), hd.sum(1))
    np.testing.assert_allclose(torch.sparse.sum(h, dim=2).to_dense().numpy(), hd.sum(2))
    both = torch.sparse.sum(h, dim=[0, 1])
    assert both.layout == torch.strided
    np.testing.assert_allclose(both.numpy(), hd.sum((0, 1)))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        torch.sparse.sum(_sp(), dim=2)


def test_errors_as_pytorch():
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use "
                                           r"add\(dense, sparse\) instead."):
        _sp() + torch.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"expected sizes of 'self' and 'other' to match, "
                                           r"but \[2, 3\] != \[2, 4\]"):
        _sp() + _sp(size=(2, 4))
    with pytest.raises(RuntimeError, match="to have same density, but 'self' has 2 sparse "
                                           "dimensions while 'other' has 1"):
        _sp() + torch.sparse_coo_tensor([[0]], torch.ones(1, 3), (2, 3))
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim "
                                           r"dense tensor divisor \(got shape \[2, 3\]"):
        _sp() / _sp()


def test_gradients_reach_values_and_dense_operands():
    idx = torch.tensor(IDX)

    def f(vals, dense, m):
        s = torch.sparse_coo_tensor(idx, vals, (2, 3))
        h = (s * s) * 2 + s - s * dense
        return (torch.sparse.sum(h) + (m @ s).sum() + torch.sparse.sum(s.t(), 0).to_dense()
                .pow(2).sum())
    args = (torch.tensor(VAL, dtype=torch.float64, requires_grad=True),
            torch.randn(2, 3, dtype=torch.float64, requires_grad=True),
            torch.randn(4, 2, dtype=torch.float64, requires_grad=True))
    assert torch.autograd.gradcheck(f, args)


def test_legacy_constructors():
    s = torch.sparse.FloatTensor(torch.tensor(IDX), torch.tensor(VAL), torch.Size([2, 3]))
    assert s.dtype == torch.float32 and not s.is_coalesced()
    assert isinstance(s, torch.sparse.FloatTensor) and not isinstance(s, torch.sparse.DoubleTensor)
    np.testing.assert_allclose(torch.spmm(s, torch.eye(3)).numpy(), A)
    e = torch.sparse.FloatTensor(2, 3)
    assert e.shape == (2, 3) and e._nnz() == 0 and e.dtype == torch.float32
    assert repr(torch.sparse.FloatTensor) == "<class 'torch.sparse.FloatTensor'>"


def test_dense_with_sparse_second_operand_as_pytorch():
    d_np = np.arange(6.0).reshape(2, 3)
    d = torch.tensor(d_np)
    for got, want in [(d + _sp(), d_np + A), (torch.add(d, _sp()), d_np + A),
                      (d - _sp(), d_np - A), (d.add(_sp()), d_np + A),
                      (torch.sub(d, _sp(), alpha=2), d_np - 2 * A),
                      (torch.add(d, _sp(UNC_IDX, coalesce=False), alpha=2),
                       d_np + 2 * _dense(UNC_IDX, VAL, (2, 3)))]:
        assert got.layout == torch.strided  # dense + sparse is dense
        np.testing.assert_allclose(got.numpy(), want)
    prod = d * _sp()  # dense * sparse is sparse: the entries scaled by the dense elements
    assert prod.layout == torch.sparse_coo
    np.testing.assert_allclose(prod.to_dense().numpy(), d_np * A)
    scaled = torch.mul(torch.tensor(2.0), _sp())  # a 0-d dense operand scales
    assert scaled.layout == torch.sparse_coo
    np.testing.assert_allclose(scaled.to_dense().numpy(), 2 * A)


def test_dense_with_sparse_second_operand_errors_as_pytorch():
    no_broadcast = (r"add: expected 'self' and 'other' to have same size, but self has size "
                    r"{} while other has size \[2, 3\] \(FYI: dense-sparse addition does not "
                    r"currently support broadcasting\)")
    with pytest.raises(RuntimeError, match=no_broadcast.format(r"\[\]")):
        torch.tensor(2.0) + _sp()
    with pytest.raises(RuntimeError, match=no_broadcast.format(r"\[\]")):
        2 - _sp()
    with pytest.raises(RuntimeError, match=no_broadcast.format(r"\[3\]")):
        torch.ones(3) + _sp()
    divisor = (r"Sparse division requires a scalar or zero-dim dense tensor divisor \(got "
               r"shape \[2, 3\] for divisor\)")
    with pytest.raises(RuntimeError, match=divisor):
        torch.ones(2, 3) / _sp()
    with pytest.raises(RuntimeError, match=divisor):  # a 0-d dense dividend does not help
        torch.tensor(2.0) / _sp()
    with pytest.raises(NotImplementedError):
        2 / _sp()
    with pytest.raises(NotImplementedError):
        torch.ones(2, 3) > _sp()  # PyTorch has no sparse kernel for the comparison


def test_dense_plus_sparse_gradient_reaches_both():
    vals = torch.tensor(VAL, dtype=torch.float64, requires_grad=True)
    dense = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    w = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    ((dense + torch.sparse_coo_tensor(IDX, vals, (2, 3))) * w).sum().backward()
    np.testing.assert_allclose(dense.grad.numpy(), w.numpy())
    np.testing.assert_allclose(vals.grad.numpy(), [w[0, 2].item(), w[1, 0].item(),
                                                   w[1, 2].item()])
