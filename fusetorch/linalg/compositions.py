"""torch.linalg functions composed of the factorization primitives and tensor ops: products
(`multi_dot`, `vecdot`, `householder_product`), `vander`, `diagonal`, ranks and condition
numbers, tensor inverses and solves, and the `_ex` forms that report LAPACK's
`info` instead of raising. Gradients come from the pieces."""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes as dt
from ..ir.linalg_ops import LinAlgError
from ..tracer import creation as C
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer import functional_shape as FS
from ..tracer.autograd import no_grad
from ..tracer.functional import write_out
from ..tracer.out_args import write_outs
from ..tracer.functional_scan import _return_type, cumprod
from ..tracer.tensor import Tensor
from .decompositions import _check, cholesky, inv, solve, svdvals, eigvalsh
from .norms import matrix_norm

__all__ = ["multi_dot", "vecdot", "vander", "diagonal", "matrix_rank", "cond", "tensorinv",
           "tensorsolve", "householder_product", "inv_ex", "cholesky_ex",
           "solve_ex"]

InvExResult = _return_type("linalg_inv_ex", ("inverse", "info"))
CholeskyExResult = _return_type("linalg_cholesky_ex", ("L", "info"))
SolveExResult = _return_type("linalg_solve_ex", ("result", "info"))


# ---------------------------------------------------------------- products

def _chain_order(dims: list) -> list:
    """The cheapest parenthesisation of a matrix chain (the textbook dynamic programme, which
    PyTorch's multi_dot also runs): split[i][j] is where the product of i..j splits."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of a chain of matrices in the cheapest order; the first and last may be
    vectors (a row and a column)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        D.check_tensor(t, "linalg.multi_dot", "tensors", 1)
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            which = ("first" if i == 0 else "last") if len(allowed) == 2 else None
            raise RuntimeError(
                f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.ndim}D" if which
                else f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    dtype = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {dtype} and tensor {tensors.index(t)} {t._dtype}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = F.unsqueeze(mats[0], 0)
    if last_vec:
        mats[-1] = F.unsqueeze(mats[-1], 1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return mats[i]
        k = split[i][j]
        return F.matmul(product(i, k), product(k + 1, j))

    r = product(0, len(mats) - 1)
    if first_vec:
        r = F.squeeze(r, 0)
    if last_vec:
        r = F.squeeze(r, -1)
    return write_out(r, out)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """sum(x * y) along `dim`, broadcasting the other dims (real tensors: no conjugate)."""
    D.check_tensor(x, "linalg.vecdot", "x", 1)
    D.check_tensor(y, "linalg.vecdot", "y", 2)
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {dt.SCALAR_TYPE_NAMES[x._dtype.name]} and y of type "
                           f"{dt.SCALAR_TYPE_NAMES[y._dtype.name]} instead")
    return write_out(F.sum(x * y, dim), out)


def householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of
    A below the diagonal and a unit on it (LAPACK's orgqr)."""
    D.check_tensor(A, "linalg.householder_product", "A", 1)
    D.check_tensor(tau, "linalg.householder_product", "tau", 2)
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 "
                           "dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"torch.linalg.householder_product: Expected tau to have one "
                           f"dimension less than input, but got tau.ndim equal to {tau.ndim} "
                           f"and input.ndim is equal to {A.ndim}")
    below = C.tensor(np.tril(np.ones((m, n)), -1), dtype=A.dtype, device=A.device)
    eye = C.tensor(np.eye(m, n), dtype=A.dtype, device=A.device)
    V = A * below + eye  # the reflectors' vectors, unit diagonal
    Q = C.tensor(np.eye(m, n), dtype=A.dtype, device=A.device)
    batch = tuple(A.shape[:-2])
    if batch:
        Q = F.expand(Q, batch + (m, n))
    for i in reversed(range(k)):  # H_i applied to the product of the later ones
        v = V[..., :, i:i + 1]
        t = F.unsqueeze(F.unsqueeze(tau[..., i], -1), -1)
        Q = Q - t * F.matmul(v, F.matmul(F.transpose(v, -1, -2), Q))
    return write_out(F.with_zero_grad(Q, A, tau, grad_fn="LinalgHouseholderProductBackward0")
                     if k == 0 else Q, out)


# ---------------------------------------------------------------- shapes

def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """[..., n] -> [..., n, N]: columns x^0, x^1, ..., x^(N-1) (increasing powers), as
    PyTorch builds them (a cumulative product)."""
    D.check_tensor(x, "linalg.vander", "x", 1)
    if x.ndim == 0:  # PyTorch reads a 0-d x as one value: [1, N]
        x = F.unsqueeze(x, 0)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = F.unsqueeze(C.ones_like(x), -1)
    powers = F.expand(F.unsqueeze(x, -1), tuple(x.shape) + (n - 1,))
    return cumprod(F.cat([ones, powers], -1), -1)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """`torch.diagonal` with torch.linalg's defaults (the last two dims)."""
    return FS.diagonal(A, offset, dim1, dim2)


# ---------------------------------------------------------------- ranks and conditions

def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None,
                out=None) -> Tensor:
    """The number of singular values above max(atol, rtol * the largest); rtol defaults to
    eps * max(m, n) when neither is given (PyTorch's rule)."""
    _check("linalg.matrix_rank", A, square=False)
    if tol is not None:  # the deprecated spelling: an absolute tolerance
        atol, rtol = tol, 0.0
    with no_grad():
        s = F.abs(eigvalsh(A)) if hermitian else svdvals(A)
        if atol is None and rtol is None:
            rtol = float(np.finfo(np.float32 if A._dtype.itemsize <= 4
                                  else np.float64).eps) * max(A.shape[-2], A.shape[-1])
        smax = F.amax(s, -1, keepdim=True) if s.shape[-1] else C.zeros(tuple(s.shape[:-1]) + (1,), dtype=s.dtype,
                                                                 device=s.device)
        tol_t = F.maximum(_as(atol, s), _as(rtol, s) * smax)
        r = F.sum(s > tol_t, -1)
    return write_out(r, out)


def _as(v, like: Tensor) -> Tensor:
    if v is None:
        v = 0.0
    if isinstance(v, Tensor):
        return F.unsqueeze(v.to(like.dtype), -1) if v.ndim else v.to(like.dtype)
    return C.full((1,), float(v), dtype=like.dtype, device=like.device)


def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number in norm p: sigma_max / sigma_min for p None or 2 (-2 inverted),
    else norm(A, p) * norm(inv(A), p)."""
    _check("linalg.cond", A, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = F.amax(s, -1), F.amin(s, -1)
        return write_out(big / small if p != -2 else small / big, out)
    if p not in ("fro", "nuc", float("inf"), -float("inf"), 1, -1):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    return write_out(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


# ---------------------------------------------------------------- tensor inverses and solves

def tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of A as a linear map from its first `ind` dims to the rest."""
    D.check_tensor(A, "linalg.tensorinv", "A", 1)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A.shape)
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {cols} "
                           f"!= {rows}")
    r = inv(F.reshape(A, (rows, cols)))
    return write_out(F.reshape(r, shape[ind:] + shape[:ind]), out)


def tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B; `dims` are dims of A moved to the end first."""
    D.check_tensor(A, "linalg.tensorsolve", "A", 1)
    D.check_tensor(B, "linalg.tensorsolve", "B", 2)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        order = [d for d in range(A.ndim) if d not in dims] + dims
        A = F.permute(A, order)
    rest = tuple(A.shape[B.ndim:])
    rows, cols = math.prod(B.shape), math.prod(rest)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {cols} != {rows}")
    x = solve(F.reshape(A, (rows, cols)), F.reshape(B, (rows,)))
    return write_out(F.reshape(x, rest), out)


# ---------------------------------------------------------------- the _ex forms

def _lu_info(a: np.ndarray) -> int:
    """LAPACK getrf's info: the 1-based index of the first exactly zero pivot, 0 if none."""
    import scipy.linalg
    lu, _ = scipy.linalg.lu_factor(a, check_finite=False)
    zero = np.flatnonzero(np.diag(lu) == 0)
    return int(zero[0]) + 1 if zero.size else 0


def _chol_info(a: np.ndarray) -> int:
    """LAPACK potrf's info: the order of the first leading minor that is not positive
    definite, 0 if none."""
    for k in range(1, a.shape[0] + 1):
        try:
            np.linalg.cholesky(a[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return 0


def _failed(A: Tensor, info_of) -> np.ndarray:
    """LAPACK's info per matrix of A's batch (int32, batch-shaped)."""
    a = A.detach().numpy().reshape((-1,) + tuple(A.shape[-2:]))
    return np.array([info_of(m) for m in a], np.int32).reshape(tuple(A.shape[:-2]))


def _ex(fn, A: Tensor, info_of, check_errors: bool):
    """(fn(A), int32 info per matrix): where a matrix fails, its LAPACK info and a NaN result
    (PyTorch leaves LAPACK's partial work there) instead of the error; the others' values,
    computed with the failed matrices replaced by the identity (no gradient then)."""
    try:
        return fn(A), C.zeros(tuple(A.shape[:-2]), dtype=dt.int32, device=A.device)
    except LinAlgError:
        if check_errors:
            raise
    info = _failed(A, info_of)
    batch = tuple(A.shape[:-2])
    bad = C.tensor(info != 0, device=A.device)
    eye = C.tensor(np.eye(A.shape[-1]), dtype=A.dtype, device=A.device)
    with no_grad():
        r = fn(F.where(F.reshape(bad, batch + (1, 1)), eye, A.detach()))
        bad = F.reshape(bad, batch + (1,) * (r.ndim - len(batch)))
        r = F.where(bad, C.full((), float("nan"), dtype=A.dtype, device=A.device), r)
    return r, C.tensor(info, device=A.device)


def inv_ex(A: Tensor, *, check_errors: bool = False, out=None) -> InvExResult:
    """(inverse, info): info is LAPACK's (0 for an invertible matrix) instead of an error."""
    _check("linalg.inv_ex", A)
    r, info = _ex(inv, A, _lu_info, check_errors)
    return write_outs(InvExResult(r, info), out, InvExResult.__name__, exact=True)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                out=None) -> CholeskyExResult:
    """(L, info): info is the order of the first leading minor that is not positive definite
    (0 when A is), instead of an error."""
    _check("linalg.cholesky_ex", A)
    r, info = _ex(lambda a: cholesky(a, upper=upper), A, _chol_info, check_errors)
    return write_outs(CholeskyExResult(r, info), out, CholeskyExResult.__name__, exact=True)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
             out=None) -> SolveExResult:
    """(result, info) of linalg.solve, with LAPACK's info instead of an error."""
    _check("linalg.solve_ex", A)
    r, info = _ex(lambda a: solve(a, B, left=left), A, _lu_info, check_errors)
    return write_outs(SolveExResult(r, info), out, SolveExResult.__name__, exact=True)
