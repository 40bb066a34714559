"""torch.linalg's composed functions against numpy float64 references and central
differences (PyTorch's semantics checked by hand against PyTorch 2.13)."""
import numpy as np
import pytest

import fusetorch as torch

RNG = np.random.default_rng(11)
A = RNG.standard_normal((4, 4))
B = RNG.standard_normal((4, 3))
V = RNG.standard_normal(4)


def t(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


def test_products():
    C = RNG.standard_normal((3, 5))
    np.testing.assert_allclose(torch.linalg.multi_dot([t(V), t(A), t(B), t(C)]).numpy(),
                               V @ A @ B @ C, rtol=1e-12)
    assert torch.linalg.multi_dot([t(A), t(B)]).shape == (4, 3)
    np.testing.assert_allclose(torch.linalg.vecdot(t(A), t(V)).numpy(), (A * V).sum(-1))
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        torch.linalg.multi_dot([t(A)])
    assert torch.autograd.gradcheck(lambda a, b: torch.linalg.multi_dot([a, b, a.mT]),
                                    (t(A, True), t(B[:, :4] if B.shape[1] >= 4 else A, True)))


def test_householder_product_is_lapacks_orgqr():
    a = RNG.standard_normal((5, 3))
    tau = RNG.standard_normal(2)
    q = np.eye(5)
    for i in range(2):
        v = np.zeros(5)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(5) - tau[i] * np.outer(v, v))
    np.testing.assert_allclose(torch.linalg.householder_product(t(a), t(tau)).numpy(),
                               q[:, :3], rtol=1e-12, atol=1e-14)
    assert torch.autograd.gradcheck(torch.linalg.householder_product, (t(a, True), t(tau, True)))


def test_vander_diagonal_rank_and_cond():
    np.testing.assert_allclose(torch.linalg.vander(t(V)).numpy(), np.vander(V, increasing=True))
    assert torch.linalg.vander(t(V), N=6).shape == (4, 6)
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        torch.linalg.vander(t(V), N=1)
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(torch.linalg.diagonal(t(x), offset=1).numpy(),
                                  np.diagonal(x, 1, -2, -1))
    low = B @ B.T  # rank 3
    assert torch.linalg.matrix_rank(t(low)).item() == 3 == np.linalg.matrix_rank(low)
    assert torch.linalg.matrix_rank(t(low), hermitian=True).item() == 3
    s = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(torch.linalg.cond(t(A)).item(), s[0] / s[-1], rtol=1e-12)
    np.testing.assert_allclose(torch.linalg.cond(t(A), -2).item(), s[-1] / s[0], rtol=1e-12)
    np.testing.assert_allclose(torch.linalg.cond(t(A), "fro").item(), np.linalg.cond(A, "fro"),
                               rtol=1e-12)
    np.testing.assert_allclose(torch.linalg.cond(t(A), 1).item(), np.linalg.cond(A, 1),
                               rtol=1e-12)


def test_tensor_inverse_solve_and_triangular_solve():
    a = RNG.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(torch.linalg.tensorinv(t(a)).numpy(), np.linalg.tensorinv(a),
                               rtol=1e-9, atol=1e-12)
    m = RNG.standard_normal((2, 3, 6))
    b = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(torch.linalg.tensorsolve(t(m), t(b)).numpy(),
                               np.linalg.tensorsolve(m, b), rtol=1e-9)
    with pytest.raises(RuntimeError, match="prod\\(self.shape\\[ind:\\]\\)"):
        torch.linalg.tensorinv(t(a), ind=1)
    T = A + 4 * np.eye(4)
    for upper, unit in ((True, False), (False, True)):
        tri = np.triu(T) if upper else np.tril(T)
        if unit:
            tri = tri - np.diag(np.diag(tri)) + np.eye(4)
        got = torch.linalg.solve_triangular(t(T), t(B), upper=upper, unitriangular=unit)
        np.testing.assert_allclose(got.numpy(), np.linalg.solve(tri, B), rtol=1e-10)
    tt = t(T, True)
    torch.linalg.solve_triangular(tt, t(B), upper=True).sum().backward()
    assert (np.tril(tt.grad.numpy(), -1) == 0).all()  # only the triangle it reads


def test_ex_forms_report_info_instead_of_raising():
    S = np.stack([A, np.zeros((4, 4)), A @ A.T + np.eye(4)])
    inv, info = torch.linalg.inv_ex(t(S))
    assert info.dtype == torch.int32 and info.tolist() == [0, 1, 0]
    np.testing.assert_allclose(inv.numpy()[0], np.linalg.inv(A), rtol=1e-10)
    assert np.isnan(inv.numpy()[1]).all()
    L, info = torch.linalg.cholesky_ex(t(S))
    assert info[1].item() == 1 and info[2].item() == 0 and info[0].item() > 0
    np.testing.assert_allclose(L.numpy()[2], np.linalg.cholesky(S[2]), rtol=1e-10)
    x, info = torch.linalg.solve_ex(t(S), t(RNG.standard_normal((3, 4, 2))))
    assert info.tolist() == [0, 1, 0] and x.shape == (3, 4, 2)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.inv_ex(t(S), check_errors=True)
    inv, info = torch.linalg.inv_ex(t(A, True))
    inv.sum().backward()  # no failure: an ordinary differentiable inverse


def test_missing_names_say_why():
    with pytest.raises(NotImplementedError, match="complex"):
        torch.linalg.eig
    assert not hasattr(torch.linalg, "no_such_function")
