"""The LU/LDL family, triangular and Cholesky solves, geqrf/ormqr, lstsq and matrix_exp against
independent references: scipy's LAPACK wrappers and numpy in float64 for values, and what
PyTorch 2.13 does (checked by hand) for result fields, pivots, errors and refusals. Gradients
are checked by the registry (tests/opinfo_linalg_factor.py: float64 gradcheck)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import fusetorch as torch

RNG = np.random.default_rng(27)


def t(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def _np_pivots(a):
    """getrf's pivots, 1-based, straight from LAPACK."""
    return sl.lapack.dgetrf(a)[1] + 1


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3), (0, 2, 2), (3, 0)])
def test_lu_factor_is_lapacks_getrf_and_lu_rebuilds_a(shape):
    a = RNG.standard_normal(shape)
    LU, piv = torch.linalg.lu_factor(t(a))
    assert piv.dtype == torch.int32 and tuple(piv.shape) == shape[:-2] + (min(shape[-2:]),)
    flat = a.reshape((int(np.prod(shape[:-2])),) + shape[-2:])
    for e in range(flat.shape[0] if a.size else 0):
        lu, p, _ = sl.lapack.dgetrf(flat[e])
        np.testing.assert_allclose(LU.numpy().reshape(flat.shape)[e], lu, rtol=1e-12)
        assert piv.numpy().reshape((flat.shape[0], min(shape[-2:])))[e].tolist() == (p + 1).tolist()
    P, L, U = torch.linalg.lu(t(a))
    k = min(shape[-2:])
    assert L.shape == shape[:-1] + (k,) and U.shape == shape[:-2] + (k, shape[-1])
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    p2, l2, u2 = sl.lu(a) if len(shape) == 2 and a.size else (None, None, None)
    if p2 is not None:  # scipy's own P L U
        np.testing.assert_allclose(P.numpy(), p2)
        np.testing.assert_allclose(L.numpy(), l2, atol=1e-12)


def test_lu_results_are_pytorchs_named_tuples():
    a = t(RNG.standard_normal((3, 3)))
    r = torch.linalg.lu_factor_ex(a)
    assert type(r).__name__ == "linalg_lu_factor_ex" and r._fields == ("LU", "pivots", "info")
    assert r.info.dtype == torch.int32 and r.info.shape == ()
    assert torch.linalg.lu(a)._fields == ("P", "L", "U")
    assert repr(torch.linalg.lu_factor(a)).startswith("torch.return_types.linalg_lu_factor(")
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        plain = torch.lu(a)
    assert type(plain) is tuple and len(plain) == 2
    with pytest.warns(UserWarning):
        assert torch.lu(a, get_infos=True)._fields == ("LU", "pivots", "info")
    P, L, U = torch.lu_unpack(*torch.linalg.lu_factor(a), unpack_data=False)
    assert L.numel() == 0 and U.numel() == 0 and P.shape == (3, 3)


def test_decomposition_results_print_and_name_as_pytorchs():
    # every torch.linalg named tuple prints as torch.return_types.<name>( one field a line
    a = t(np.array([[2.0, 1.0], [1.0, 3.0]]))
    r = torch.linalg.slogdet(a)
    assert repr(r) == ("torch.return_types.linalg_slogdet(\nsign=tensor(1., dtype=torch.float64),"
                       "\nlogabsdet=tensor(1.6094, dtype=torch.float64))")
    for name, res in [("linalg_qr", torch.linalg.qr(a)), ("linalg_svd", torch.linalg.svd(a)),
                      ("linalg_eigh", torch.linalg.eigh(a)), ("svd", torch.svd(a)),
                      ("linalg_inv_ex", torch.linalg.inv_ex(a)),
                      ("linalg_cholesky_ex", torch.linalg.cholesky_ex(a)),
                      ("linalg_solve_ex", torch.linalg.solve_ex(a, a))]:
        assert repr(res).startswith(f"torch.return_types.{name}(\n{res._fields[0]}=tensor(")
        assert isinstance(res, getattr(torch.return_types, name))


def test_singular_lu_info_and_errors():
    s = np.stack([np.eye(2), np.zeros((2, 2)), [[1.0, 2.0], [2.0, 4.0]]])
    LU, piv, info = torch.linalg.lu_factor_ex(t(s))
    assert info.tolist() == [0, 1, 2]  # getrf's info: the first exactly zero U[i,i]
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\): U\[1,1\] is zero"):
        torch.linalg.lu_factor(t(s))
    with pytest.raises(RuntimeError, match=r"lu_factor_ex: \(Batch element 1\)"):
        torch.linalg.lu_factor_ex(t(s), check_errors=True)
    P, L, U = torch.linalg.lu(t(s))  # linalg.lu factors singular matrices without complaint
    np.testing.assert_allclose((P @ L @ U).numpy(), s)
    with pytest.raises(RuntimeError, match="without pivoting is not implemented on the CPU"):
        torch.linalg.lu_factor(t(s), pivot=False)
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Int'"):
        torch.linalg.lu_factor(torch.ones(2, 2, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="Expected tensor with 2 or more dimensions"):
        torch.linalg.lu_factor(t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of "
                                           "torch.int32"):
        torch.lu_unpack(LU, piv.long())
    with pytest.raises(RuntimeError, match="pivots"):
        torch.lu_unpack(LU, piv + 5)


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve_against_numpy(left, adjoint):
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 3)) if left else RNG.standard_normal((3, 4))
    LU, piv = torch.linalg.lu_factor(t(a))
    x = torch.linalg.lu_solve(LU, piv, t(b), left=left, adjoint=adjoint).numpy()
    m = np.swapaxes(a, -1, -2) if adjoint else a
    want = np.linalg.solve(m, np.broadcast_to(b, (2, 4, 3))) if left else \
        np.swapaxes(np.linalg.solve(np.swapaxes(m, -1, -2), np.broadcast_to(b.T, (2, 4, 3))),
                    -1, -2)
    np.testing.assert_allclose(x, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(torch.lu_solve(t(b if left else b.T), LU, piv).numpy()
                               if left and not adjoint else x, x)


def test_lu_solve_checks():
    LU, piv = torch.linalg.lu_factor(t(np.eye(3)))
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type torch.int32"):
        torch.linalg.lu_solve(LU, piv.long(), t(np.ones((3, 1))))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation "
                                           r"AX = B \(3x3 and 4x2\)"):
        torch.linalg.lu_solve(LU, piv, t(np.ones((4, 2))))
    with pytest.raises(RuntimeError, match="Expected LU and B to have the same dtype"):
        torch.linalg.lu_solve(LU, piv, torch.ones(3, 1))
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        torch.linalg.lu_solve(LU, piv, t(np.ones(3)))


def test_triangular_and_cholesky_solves_against_scipy():
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3, 2))
    for upper in (True, False):
        for trans in (False, True):
            for unit in (False, True):
                x, coef = torch.triangular_solve(t(b), t(a), upper, trans, unit)
                for e in range(2):
                    want = sl.solve_triangular(a, b[e], lower=not upper, trans=int(trans),
                                               unit_diagonal=unit)
                    np.testing.assert_allclose(x.numpy()[e], want, rtol=1e-12)
                assert coef.shape == (2, 3, 3)  # A broadcast to b's batch, as PyTorch
    # a zero on the diagonal gives inf, not an error (BLAS trsm, as PyTorch)
    z = torch.linalg.solve_triangular(t(np.diag([1.0, 0.0])), t(np.ones((2, 1))), upper=True)
    assert np.isinf(z.numpy()).any()
    spd = a @ a.T
    L = np.linalg.cholesky(spd)
    np.testing.assert_allclose(torch.cholesky_solve(t(b), t(L)).numpy(),
                               np.linalg.solve(spd, b), rtol=1e-10)
    np.testing.assert_allclose(torch.cholesky_solve(t(b), t(L.T), upper=True).numpy(),
                               np.linalg.solve(spd, b), rtol=1e-10)
    noisy = L + np.triu(RNG.standard_normal((3, 3)), 1)  # the other triangle is never read
    np.testing.assert_allclose(torch.cholesky_inverse(t(noisy)).numpy(), np.linalg.inv(spd),
                               rtol=1e-10)
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for cholesky_solve"):
        torch.cholesky_solve(t(np.ones((4, 1))), t(L))
    with pytest.raises(NotImplementedError, match="cholesky_inverse_out_cpu"):
        torch.cholesky_inverse(torch.ones(2, 2, dtype=torch.int64))


def test_matrix_exp_against_scipy_and_its_gradient_by_the_block_trick():
    a = RNG.standard_normal((2, 4, 4))
    np.testing.assert_allclose(torch.matrix_exp(t(a)).numpy(), sl.expm(a), rtol=1e-12)
    assert torch.linalg.matrix_exp(torch.zeros(0, 0)).shape == (0, 0)
    # the VJP against a directional finite difference of scipy's expm
    g, d = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4))
    x = t(a[0], grad=True)
    (torch.matrix_exp(x) * t(g)).sum().backward()
    h = 1e-6
    fd = ((sl.expm(a[0] + h * d) - sl.expm(a[0] - h * d)) * g).sum() / (2 * h)
    assert abs((x.grad.numpy() * d).sum() - fd) < 1e-6 * max(1.0, abs(fd))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        torch.matrix_exp(t(np.ones((2, 3))))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matrix_exp_in_half_precision_is_float32s_value_rounded_once(dtype):
    # PyTorch's CPU kernel gives NaN here (its polynomial evaluated in the half type); the
    # value is scipy's expm of the same (rounded) entries, rounded once to the dtype
    a = RNG.uniform(-3, 3, (2, 5, 5))
    x = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
    e = torch.matrix_exp(x)
    assert e.dtype == x.dtype and e.grad_fn.name() == "LinalgMatrixExpBackward0"
    want = sl.expm(x.detach().double().numpy())
    eps = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7
    np.testing.assert_allclose(e.detach().double().numpy(), want, rtol=eps, atol=eps * 1e-2)
    assert torch.linalg.matrix_exp(torch.zeros(0, 0, dtype=x.dtype)).shape == (0, 0)
    e.sum().backward()  # against central differences of scipy's expm, entry by entry
    a0, h, fd = x.detach().double().numpy()[0], 1e-6, np.empty((5, 5))
    for i, j in np.ndindex(5, 5):
        d = np.zeros((5, 5))
        d[i, j] = h
        fd[i, j] = (sl.expm(a0 + d).sum() - sl.expm(a0 - d).sum()) / (2 * h)
    np.testing.assert_allclose(x.grad.double().numpy()[0], fd, rtol=4 * eps,
                               atol=4 * eps * np.abs(fd).max())
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        torch.matrix_exp(torch.zeros(2, 2, dtype=torch.int64))


def test_ldl_is_lapacks_sytrf_and_refuses_gradients():
    s = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.2], [0.5, 0.2, 3.0]])  # a 2x2 pivot block
    LD, piv = torch.linalg.ldl_factor(t(s))
    ld, p, _ = sl.lapack.dsytrf(s, lower=1)
    np.testing.assert_allclose(LD.numpy(), np.tril(ld))
    assert piv.dtype == torch.int32 and piv.tolist() == p.tolist() and min(p) < 0
    b = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(torch.linalg.ldl_solve(LD, piv, t(b)).numpy(),
                               np.linalg.solve(s, b), rtol=1e-10)
    LD0, piv0, info = torch.linalg.ldl_factor_ex(torch.zeros(2, 2, 2))
    assert info.tolist() == [1, 1]
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor(torch.zeros(2, 2))
    x = t(s + 3 * np.eye(3), grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not "
                                           "implemented"):
        torch.linalg.ldl_factor(x).LD.sum().backward()


def test_geqrf_and_ormqr_against_lapack():
    a = RNG.standard_normal((5, 3))
    qr, tau = torch.geqrf(t(a))
    want_qr, want_tau = sl.qr(a, mode="raw")[0]
    np.testing.assert_allclose(qr.numpy(), want_qr, rtol=1e-12)
    np.testing.assert_allclose(tau.numpy(), want_tau, rtol=1e-12)
    c = RNG.standard_normal((5, 2))
    for trans in ("N", "T"):
        want = sl.lapack.dormqr("L", trans, want_qr, want_tau, c, 64)[0]
        got = torch.ormqr(qr, tau, t(c), transpose=trans == "T").numpy()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    want = sl.lapack.dormqr("R", "N", want_qr, want_tau, c.T.copy(), 64)[0]
    np.testing.assert_allclose(torch.ormqr(qr, tau, t(c.T), left=False).numpy(), want,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(torch.orgqr(qr, tau).numpy(), np.linalg.qr(a)[0] *
                               np.sign(np.diag(np.linalg.qr(a)[1]) * np.diag(want_qr)),
                               rtol=1e-10, atol=1e-12)
    x = t(a, grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not "
                                                  "implemented"):
        torch.geqrf(x).a.sum().backward()
    with pytest.raises(RuntimeError, match="other.shape\\[-2\\] must be equal to "
                                           "input.shape\\[-2\\]"):
        torch.ormqr(qr, tau, t(np.ones((4, 2))))


def test_lstsq_fields_per_driver_as_pytorch():
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 2))
    x_ref, res_ref, _, s_ref = np.linalg.lstsq(a, b, rcond=None)
    fields = {}
    for driver in ("gelsy", "gels", "gelsd", "gelss"):
        r = torch.linalg.lstsq(t(a), t(b), driver=driver)
        np.testing.assert_allclose(r.solution.numpy(), x_ref, rtol=1e-10)
        fields[driver] = (r.residuals.numel(), r.rank.shape, r.singular_values.numel())
    # PyTorch 2.13 on the CPU: gelsy (the default) leaves residuals empty; gels has no rank
    assert fields == {"gelsy": (0, (), 0), "gels": (2, (0,), 0), "gelsd": (2, (), 3),
                      "gelss": (2, (), 3)}
    r = torch.linalg.lstsq(t(a), t(b), driver="gelsd")
    np.testing.assert_allclose(r.residuals.numpy(), res_ref, rtol=1e-10)
    np.testing.assert_allclose(r.singular_values.numpy(), s_ref, rtol=1e-12)
    assert r.rank.dtype == torch.int64 and int(r.rank) == 3
    deficient = a.copy()
    deficient[:, 2] = deficient[:, 1]
    r = torch.linalg.lstsq(t(deficient), t(b), driver="gelsd")
    assert int(r.rank) == 2 and r.residuals.numel() == 0  # no residuals below full rank
    np.testing.assert_allclose(r.solution.numpy(), np.linalg.pinv(deficient) @ b, rtol=1e-8)
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        torch.linalg.lstsq(t(a), t(b), driver="gelsx")
    with pytest.raises(RuntimeError, match="input.size\\(-2\\) should match other.size\\(-2\\)"):
        torch.linalg.lstsq(t(a), t(b[:4]))
    assert torch.linalg.lstsq(t(a), t(b[:, 0])).solution.shape == (3,)


def test_low_rank_svd_and_pca_recover_an_exact_low_rank_matrix():
    torch.manual_seed(0)
    a = RNG.standard_normal((8, 2)) @ RNG.standard_normal((2, 6))
    U, S, V = torch.svd_lowrank(t(a), q=4)
    assert U.shape == (8, 4) and S.shape == (4,) and V.shape == (6, 4)
    np.testing.assert_allclose(S.numpy()[:2], np.linalg.svd(a, compute_uv=False)[:2],
                               rtol=1e-10)
    np.testing.assert_allclose((U[:, :2] * S[:2]) @ V[:, :2].mT, a, atol=1e-10)
    c = a - a.mean(0)
    _, S, _ = torch.pca_lowrank(t(a), q=2)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(c, compute_uv=False)[:2], rtol=1e-10)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
        torch.pca_lowrank(t(a), q=7)


def test_lobpcg_gives_the_extreme_eigenpairs():
    m = RNG.standard_normal((9, 9))
    a, b = m @ m.T, np.eye(9) + 0.1 * (m.T @ m)
    E, X = torch.lobpcg(t(a), k=2)
    w, v = np.linalg.eigh(a)
    np.testing.assert_allclose(E.numpy(), w[::-1][:2], rtol=1e-10)
    np.testing.assert_allclose(np.abs(X.numpy()), np.abs(v[:, ::-1][:, :2]), atol=1e-10)
    E, X = torch.lobpcg(t(a), k=3, B=t(b), largest=False)
    np.testing.assert_allclose(E.numpy(), sl.eigh(a, b, eigvals_only=True)[:3], rtol=1e-10)
    np.testing.assert_allclose(a @ X.numpy(), b @ X.numpy() * E.numpy(), atol=1e-10)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        torch.lobpcg(t(a[:5, :5]), k=2)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_gradients_reach_the_whole_factor_as_pytorchs(upper):
    """PyTorch differentiates (L L^T)^-1 B over all of L (cholesky_solve_backward:
    -(G_B X^T + X G_B^T) L), although LAPACK reads only L's triangle: derived here in numpy."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((4, 4))
    low = np.linalg.cholesky(m @ m.T + 4 * np.eye(4))
    f = low.T.copy() if upper else low
    a = f.T @ f if upper else f @ f.T
    b, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    L = torch.tensor(f, requires_grad=True)
    B = torch.tensor(b, requires_grad=True)
    torch.cholesky_solve(B, L, upper).backward(torch.tensor(g))
    x, gb = np.linalg.solve(a, b), np.linalg.solve(a, g)
    common = gb @ x.T + x @ gb.T
    np.testing.assert_allclose(L.grad.numpy(), -f @ common if upper else -common @ f, atol=1e-12)
    np.testing.assert_allclose(B.grad.numpy(), gb, atol=1e-12)
    L2 = torch.tensor(f, requires_grad=True)
    g2 = rng.standard_normal((4, 4))
    torch.cholesky_inverse(L2, upper).backward(torch.tensor(g2))
    c = np.linalg.inv(a)
    common = c @ (g2 + g2.T) @ c
    np.testing.assert_allclose(L2.grad.numpy(), -f @ common if upper else -common @ f, atol=1e-12)
