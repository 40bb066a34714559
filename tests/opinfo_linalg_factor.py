"""Registry entries for the LU/LDL family, triangular and Cholesky solves, geqrf/orgqr/ormqr,
lstsq, matrix_exp and the low-rank SVD/PCA (fusetorch/linalg/factorizations.py, lowrank.py).

Matrices are well conditioned (a scaled identity plus noise) and, for LU, have their rows
rolled so that partial pivoting swaps rows with a clear winner in every column: the pivots do
not change under a finite-difference step, so float64 gradients are checked against central
differences of the same branch. Integer results (pivots, info, rank) are checked by entries
without gradients."""
from __future__ import annotations

import numpy as np

import fusetorch as torch
from opinfo import F32, F64, _NP, add, fixed, make


def _mat(r, shape, dtype=F64, roll=True, scale=None):
    """Noise in [-0.5, 0.5] plus max(m, n) on the diagonal, rows rolled by one."""
    shape = tuple(shape)
    m, n = shape[-2], shape[-1]
    a = r.uniform(-0.5, 0.5, shape) + (scale or max(m, n)) * np.eye(m, n)
    if roll:
        a = np.roll(a, 1, axis=-2)
    return torch.from_numpy(a.astype(_NP[dtype]))


def _lower(r, n=3, dtype=F64, batch=()):
    """A Cholesky-like factor: a positive diagonal, noise below it (and above: never read)."""
    a = r.uniform(-0.5, 0.5, batch + (n, n)) + 2 * np.eye(n)
    return torch.from_numpy(a.astype(_NP[dtype]))


def _flat(*ts):
    return torch.cat([t.reshape(tuple(t.shape[:-2]) + (t.shape[-2] * t.shape[-1],)) for t in ts],
                     -1)


SQUARE = fixed(
    ("f32", lambda r: [_mat(r, (3, 3), F32), make(r, (3, 2))]),
    ("f64_batch_bcast", lambda r: [_mat(r, (2, 3, 3)), make(r, (3, 2), F64)]),
    ("f64_perm", lambda r: [_mat(r, (4, 4)).mT, make(r, (4, 1), F64, layout="s")]),
    ("f64_empty_batch", lambda r: [_mat(r, (0, 3, 3)), make(r, (0, 3, 2), F64)]))

add("linalg_lu", {
    "torch.linalg.lu_factor": lambda a, b: torch.linalg.lu_factor(a).LU,
    "torch.linalg.lu_factor_ex": lambda a, b: torch.linalg.lu_factor_ex(a)[0],
    "torch.linalg.lu": lambda a, b: _flat(*torch.linalg.lu(a)[1:]),
    "torch.lu_unpack": lambda a, b: _flat(*torch.lu_unpack(*torch.linalg.lu_factor(a))),
    "torch.lu": lambda a, b: torch.lu(a)[0],
    "Tensor.lu": lambda a, b: a.lu(get_infos=True)[0],
    "torch.linalg.lu_solve": lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b),
    "torch.linalg.lu_solve(adjoint)": lambda a, b: torch.linalg.lu_solve(
        *torch.linalg.lu_factor(a), b, adjoint=True),
    "torch.linalg.lu_solve(right)": lambda a, b: torch.linalg.lu_solve(
        *torch.linalg.lu_factor(a), b.mT, left=False),
    "torch.lu_solve": lambda a, b: torch.lu_solve(b, *torch.linalg.lu_factor(a)),
    "Tensor.lu_solve": lambda a, b: b.lu_solve(*torch.linalg.lu_factor(a))},
    SQUARE, grad_rtol=1e-3)
add("linalg_lu(rectangular)", {
    "torch.linalg.lu_factor(rect)": lambda a: torch.linalg.lu_factor(a).LU,
    "torch.linalg.lu(rect)": lambda a: _flat(*torch.linalg.lu(a))},
    fixed(("f32_tall", lambda r: [_mat(r, (5, 3), F32)]),
          ("f64_wide_batch", lambda r: [_mat(r, (2, 3, 5))])), grad_rtol=1e-3)
add("linalg_lu(integers)", {
    "torch.linalg.lu_factor_ex(pivots)": lambda a: torch.linalg.lu_factor_ex(a).pivots,
    "torch.linalg.lu_factor_ex(info)": lambda a: torch.linalg.lu_factor_ex(a).info,
    "torch.lu(pivots)": lambda a: torch.lu(a, get_infos=True)[1]},
    fixed(("f64_square", lambda r: [_mat(r, (2, 4, 4))]),
          ("f32_singular", lambda r: [torch.tensor([[0.0, 1.0], [0.0, 2.0]])]),
          ("f64_tall", lambda r: [_mat(r, (5, 3))])), grad=False)

add("triangular_solve", {
    "torch.triangular_solve": lambda a, b: torch.triangular_solve(b, a).solution,
    "torch.triangular_solve(lower_t_unit)": lambda a, b: torch.triangular_solve(
        b, a, upper=False, transpose=True, unitriangular=True)[0],
    "Tensor.triangular_solve": lambda a, b: b.triangular_solve(a, False)[0],
    "torch.triangular_solve(coefficient)": lambda a, b: torch.triangular_solve(b, a)[1],
    "torch.linalg.solve_triangular(right)": lambda a, b: torch.linalg.solve_triangular(
        a, b.mT, upper=False, left=False, unitriangular=True)},
    SQUARE, grad_rtol=1e-3)

add("cholesky_solve", {
    "torch.cholesky_solve": lambda L, b: torch.cholesky_solve(b, L),
    "Tensor.cholesky_solve": lambda L, b: b.cholesky_solve(L, upper=True),
    "torch.cholesky_inverse": lambda L, b: torch.cholesky_inverse(L),
    "Tensor.cholesky_inverse": lambda L, b: L.cholesky_inverse(upper=True)},
    fixed(("f32", lambda r: [_lower(r, 3, F32), make(r, (3, 2))]),
          ("f64_batch", lambda r: [_lower(r, 3, batch=(2,)), make(r, (2, 3, 1), F64)]),
          ("f64_perm", lambda r: [_lower(r, 4).mT, make(r, (4, 2), F64, layout="t")]),
          ("f64_empty_batch", lambda r: [_lower(r, 3, batch=(0,)), make(r, (3, 2), F64)])),
    grad_rtol=1e-3)

add("matrix_exp", {"torch.matrix_exp": torch.matrix_exp,
                   "Tensor.matrix_exp": lambda a: a.matrix_exp(),
                   "torch.linalg.matrix_exp": torch.linalg.matrix_exp},
    fixed(("f32", lambda r: [make(r, (3, 3), F32, -1.0, 1.0)]),
          ("f64_batch_perm", lambda r: [make(r, (2, 4, 4), F64, -1.0, 1.0, layout="t")]),
          ("f64_1x1", lambda r: [make(r, (1, 1), F64)]),
          ("f64_0x0", lambda r: [make(r, (0, 0), F64)]),
          ("f64_empty_batch", lambda r: [make(r, (0, 2, 2), F64)])),
    grad_rtol=1e-3)

add("linalg.lstsq", {
    "torch.linalg.lstsq": lambda a, b: torch.linalg.lstsq(a, b).solution,
    "torch.linalg.lstsq(residuals)": lambda a, b: torch.linalg.lstsq(a, b, driver="gels")[1],
    "torch.linalg.lstsq(vector)": lambda a, b: torch.linalg.lstsq(a, b[..., 0]).solution},
    fixed(("f32_tall", lambda r: [make(r, (5, 3)), make(r, (5, 2))]),
          ("f64_batch_bcast", lambda r: [make(r, (2, 4, 3), F64), make(r, (1, 4, 2), F64,
                                                                        layout="t")])),
    grad_rtol=1e-3)
add("linalg.lstsq(wide)", {
    "torch.linalg.lstsq(wide)": lambda a, b: torch.linalg.lstsq(a, b).solution,
    # (tall, gelsd's residuals exist only at full rank: a data read, so a graph break)
    "torch.linalg.lstsq(gelsd)": lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd")[0]},
    fixed(("f64", lambda r: [make(r, (2, 4), F64), make(r, (2, 3), F64)])), grad_rtol=1e-3)
add("linalg.lstsq(integers)", {
    "torch.linalg.lstsq(rank)": lambda a, b: torch.linalg.lstsq(a, b).rank,
    "torch.linalg.lstsq(singular_values)": lambda a, b: torch.linalg.lstsq(
        a, b, driver="gelss").singular_values},
    # (wide: where m > n, whether residuals exist depends on the rank, a data read)
    fixed(("f64_rank2", lambda r: [torch.tensor([[1.0, 2.0, 0.0, 1.0], [2.0, 4.0, 1.0, 0.0],
                                                 [3.0, 6.0, 1.0, 1.0]], dtype=F64),
                                   make(r, (3, 2), F64)]),
          ("f32", lambda r: [make(r, (3, 5)), make(r, (3, 2))])), grad=False)

add("ormqr_orgqr", {
    "torch.ormqr": lambda a, tau, c: torch.ormqr(a, tau, c),
    "torch.ormqr(transpose)": lambda a, tau, c: torch.ormqr(a, tau, c, transpose=True),
    "Tensor.ormqr(right)": lambda a, tau, c: a.ormqr(tau, c.mT, left=False),
    "torch.orgqr": lambda a, tau, c: torch.orgqr(a, tau),
    "Tensor.orgqr": lambda a, tau, c: a.orgqr(tau)},
    fixed(("f32", lambda r: [make(r, (4, 3)), make(r, (3,), F32, 0.5, 1.5), make(r, (4, 2))]),
          ("f64_batch", lambda r: [make(r, (2, 4, 3), F64), make(r, (2, 3), F64, 0.5, 1.5),
                                   make(r, (2, 4, 2), F64, layout="t")])),
    grad_rtol=1e-3)

add("linalg_ldl_geqrf", {
    "torch.linalg.ldl_factor": lambda a, b: torch.linalg.ldl_factor(a).LD,
    "torch.linalg.ldl_factor(pivots)": lambda a, b: torch.linalg.ldl_factor(a).pivots,
    "torch.linalg.ldl_factor_ex": lambda a, b: torch.linalg.ldl_factor_ex(a)[0],
    "torch.linalg.ldl_factor_ex(info)": lambda a, b: torch.linalg.ldl_factor_ex(a).info,
    "torch.linalg.ldl_solve": lambda a, b: torch.linalg.ldl_solve(
        *torch.linalg.ldl_factor(a + a.mT), b),
    "torch.geqrf": lambda a, b: torch.geqrf(a).a,
    "torch.geqrf(tau)": lambda a, b: torch.geqrf(a)[1],
    "Tensor.geqrf": lambda a, b: a.geqrf().tau},
    fixed(("f32", lambda r: [_mat(r, (3, 3), F32), make(r, (3, 2))]),
          ("f64_batch", lambda r: [_mat(r, (2, 4, 4)), make(r, (4, 1), F64)]),
          ("f64_2x2_block", lambda r: [torch.tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 0.2],
                                                     [0.5, 0.2, 3.0]], dtype=F64),
                                       make(r, (3, 2), F64)]),
          ("f64_empty_batch", lambda r: [_mat(r, (0, 3, 3)), make(r, (3, 2), F64)])),
    grad=False)

add("lowrank", {
    "torch.svd_lowrank": lambda a: torch.svd_lowrank(a, q=3)[1],
    "torch.pca_lowrank": lambda a: torch.pca_lowrank(a, q=3, center=False)[1],
    "torch.pca_lowrank(center)": lambda a: torch.pca_lowrank(a)[1][..., :2]},
    fixed(("f32", lambda r: [make(r, (5, 3))]),
          ("f64_wide_batch", lambda r: [make(r, (2, 3, 6), F64)])),
    rtol=1e-4, atol=1e-5, grad_rtol=1e-3)

add("lobpcg", {
    "torch.lobpcg": lambda a: torch.lobpcg(a @ a.mT, k=2)[0],
    "torch.lobpcg(B_smallest)": lambda a: torch.lobpcg(
        a @ a.mT, k=2, B=a @ a.mT * 0.1 + torch.eye(7, dtype=a.dtype, device=a.device),
        largest=False)[0],
    "torch.lobpcg(vectors)": lambda a: torch.lobpcg(a @ a.mT, k=1)[1].abs()},
    fixed(("f64", lambda r: [make(r, (7, 7), F64)]),
          ("f32_batch", lambda r: [make(r, (2, 7, 7))])),
    rtol=1e-4, atol=1e-4, grad_rtol=1e-3)
