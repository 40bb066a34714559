"""The LU and LDL families, triangular and Cholesky solves, geqrf/ormqr, least squares and the
matrix exponential, with PyTorch's signatures, checks and named-tuple results. The packed
factorizations and the triangular solve are primitives (`ir/linalg_factor_ops.py`); L, U, P,
triangular_solve, cholesky_solve/inverse and `ormqr` (through `householder_product`) compose,
so their gradients come from the pieces; lu_solve and lstsq's solution are primitives with
PyTorch's backward (lstsq's through pinv)."""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt
from ..ir.linalg_ops import check_float, check_square
from ..ir.shapes import broadcast_many
from ..tracer import creation as C
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer import functional_shape as FS
from ..tracer.autograd import label_recorded, no_grad
from ..tracer.functional import write_out
from ..tracer.functional_scan import _return_type
from ..tracer.tensor import Tensor
from .compositions import householder_product
from .decompositions import svdvals

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex",
           "ldl_solve", "lstsq", "matrix_exp", "solve_triangular"]

LuFactorResult = _return_type("linalg_lu_factor", ("LU", "pivots"))
LuFactorExResult = _return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
LuResult = _return_type("linalg_lu", ("P", "L", "U"))
LuUnpackResult = _return_type("lu_unpack", ("P", "L", "U"))
LuWithInfo = _return_type("_lu_with_info", ("LU", "pivots", "info"))
LdlFactorResult = _return_type("linalg_ldl_factor", ("LD", "pivots"))
LdlFactorExResult = _return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
LstsqResult = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
TriangularSolveResult = _return_type("triangular_solve", ("solution", "cloned_coefficient"))
GeqrfResult = _return_type("geqrf", ("a", "tau"))


def _name(d: dt.DType) -> str:
    return dt.SCALAR_TYPE_NAMES[d.name]


def _at_least_2d(fn: str, x: Tensor, arg: str = "input") -> None:
    if x.ndim < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(x.shape)} instead")


def _same_batch(*xs: Tensor, tails: tuple) -> list:
    """Each x expanded to the broadcast of their batch dims (all but the last `tail` dims)."""
    batch = broadcast_many([tuple(x.shape[:x.ndim - t]) for x, t in zip(xs, tails)])
    return [x if tuple(x.shape[:x.ndim - t]) == batch else
            F.expand(x, batch + tuple(x.shape[x.ndim - t:])) for x, t in zip(xs, tails)]


def _tri_solve(A: Tensor, B: Tensor, upper: bool, unitriangular: bool = False) -> Tensor:
    """A^-1 B reading A's one triangle (A and B already share their batch dims)."""
    return D.apply("linalg_solve_triangular", [A, B],
                   {"upper": bool(upper), "unitriangular": bool(unitriangular)})


# ---------------------------------------------------------------- LU

def _lu_checks(fn: str, A: Tensor, pivot: bool) -> None:
    D.check_tensor(A, fn, "A", 1)
    _at_least_2d("torch.lu_factor", A)
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")


def _lu_info(LU: Tensor) -> Tensor:
    """getrf's info from its result: the 1-based index of the first zero on U's diagonal,
    else 0 (int32, the batch's shape), composed so a compiled replay computes it too."""
    k = min(LU.shape[-2], LU.shape[-1])
    batch = tuple(LU.shape[:-2])
    if k == 0:
        return C.zeros(batch, dtype=dt.int32, device=LU.device)
    zero = D.binary("eq", FS.diagonal(LU, 0, -2, -1), 0)
    first = F.argmax(zero.to(dt.int32), -1) + 1
    return F.where(F.any(zero, -1), first, 0).to(dt.int32)


def lu_factor(A: Tensor, *, pivot: bool = True, out=None) -> LuFactorResult:
    """(LU, pivots) as LAPACK's getrf packs them; an exactly singular matrix raises (use
    lu_factor_ex for its info)."""
    _lu_checks("linalg.lu_factor", A, pivot)
    r = LuFactorResult(D.apply("linalg_lu_factor", [A], {"check_errors": True}),
                       D.apply("linalg_lu_pivots", [A], {}))
    return _outs(r, out)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                 out=None) -> LuFactorExResult:
    _lu_checks("linalg.lu_factor_ex", A, pivot)
    if check_errors:
        _check_lu_errors(A, "torch.linalg.lu_factor_ex")
    LU = D.apply("linalg_lu_factor", [A], {"check_errors": False})
    r = LuFactorExResult(LU, D.apply("linalg_lu_pivots", [A], {}), _lu_info(LU))
    return _outs(r, out)


def _check_lu_errors(A: Tensor, fn: str) -> None:
    try:
        D.apply("linalg_lu_factor", [A.detach()], {"check_errors": True})
    except RuntimeError as e:
        raise type(e)(str(e).replace("torch.linalg.lu_factor:", f"{fn}:", 1)) from None


def lu(A: Tensor, *, pivot: bool = True, out=None) -> LuResult:
    """(P, L, U) with A = P L U: L [..., m, k] unit lower, U [..., k, n] upper, k = min(m, n)."""
    _lu_checks("linalg.lu", A, pivot)
    LU = D.apply("linalg_lu_factor", [A], {"check_errors": False})
    P, L, U = lu_unpack(LU, D.apply("linalg_lu_pivots", [A], {}))
    return _outs(LuResult(P, L, U), out)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out=None) -> LuUnpackResult:
    D.check_tensor(LU_data, "lu_unpack", "LU_data", 1)
    D.check_tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    _at_least_2d("torch.lu_unpack", LU_data)
    if LU_pivots._dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots.shape == {list(LU_data.shape[:-2]) + [k]} "
                           f"(LU_data's batch and min(m, n)), got {list(LU_pivots.shape)}")
    empty = F._tensor([], LU_data).to(LU_data._dtype)
    if unpack_data:
        eye = C.tensor(np.eye(m, k), dtype=LU_data.dtype, device=LU_data.device)
        L = FS.tril(LU_data, -1)[..., :, :k] + eye
        U = FS.triu(LU_data)[..., :k, :]
    else:
        L = U = empty
    if unpack_pivots:
        P = D.apply("lu_pivots_to_permutation", [LU_pivots], {"m": m, "dtype": LU_data._dtype})
    else:
        P = empty
    return _outs(LuUnpackResult(P, L, U), out)


def _check_pivots(fn: str, pivots: Tensor, n: int) -> None:
    if pivots._dtype is not dt.int32:
        raise RuntimeError(f"{fn}: pivots should be a Tensor of scalar type torch.int32")
    if pivots.ndim == 0 or pivots.shape[-1] != n:
        raise RuntimeError(f"{fn}: Number of pivots per batch should be same as the dimension "
                           f"of the matrix")


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False, out=None) -> Tensor:
    """X with A X = B (X A = B when not `left`; A^T in A's place when `adjoint`) for A = P L U
    as lu_factor returns it."""
    for i, (x, a) in enumerate(((LU, "LU"), (pivots, "pivots"), (B, "B"))):
        D.check_tensor(x, "linalg.lu_solve", a, i + 1)
    check_square("torch.linalg.lu_solve", tuple(LU.shape), "A")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    _check_pivots("linalg.lu_solve", pivots, LU.shape[-1])
    if B._dtype is not LU._dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {_name(LU._dtype)} and B of type "
                           f"{_name(B._dtype)} instead")
    check_float("linalg.lu_solve", LU._dtype)
    n = LU.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{eq} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        x = lu_solve(LU, pivots, F.transpose(B, -1, -2), adjoint=not adjoint)
        return write_out(F.transpose(x, -1, -2), out)
    LU, pivots, B = _same_batch(LU, pivots, B, tails=(2, 1, 2))
    x = D.apply("linalg_lu_solve", [LU, pivots, B], {"adjoint": bool(adjoint)})
    return write_out(x, out)


# ---------------------------------------------------------------- the older torch.* spellings

def torch_lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    """torch.lu: (LU, pivots), with info as a third result when `get_infos` (and no error
    for a singular matrix then)."""
    import warnings
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                  "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.",
                  UserWarning, stacklevel=2)
    if get_infos:
        LU, piv, info = lu_factor_ex(A, pivot=pivot)
        return _outs(LuWithInfo(LU, piv, info), out)
    LU, piv = lu_factor(A, pivot=pivot)
    return _outs((LU, piv), out)


def torch_lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    return lu_solve(LU_data, LU_pivots, b, out=out)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out=None) -> TriangularSolveResult:
    """(X, A's copy) with op(A) X = b, op(A) = A^T when `transpose`, reading A's `upper` or
    lower triangle."""
    D.check_tensor(b, "triangular_solve", "input", 1)
    D.check_tensor(A, "triangular_solve", "A", 2)
    for x, nm in ((b, "b"), (A, "A")):
        if x.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {nm} to have at least 2 "
                               f"dimensions, but it has {x.ndim} dimensions instead")
    if b._dtype is not A._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_name(b._dtype)} and A of type {_name(A._dtype)} instead.")
    _square_sizes("triangular_solve", A, b)
    check_float("triangular_solve", A._dtype)
    b, A = _same_batch(b, A, tails=(2, 2))
    T = F.transpose(A, -1, -2) if transpose else A
    x = _tri_solve(T, b, upper != bool(transpose), unitriangular)
    return _outs(TriangularSolveResult(x, A.clone()), out)


def _square_sizes(fn: str, A: Tensor, b: Tensor) -> None:
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} "
                           f"by {A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {fn}: each A matrix is "
                           f"{A.shape[-1]} by {A.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out=None) -> Tensor:
    """X with A X = B (X A = B when not `left`) reading only A's upper or lower triangle (its
    diagonal taken as ones when `unitriangular`); the gradient reaches only that triangle."""
    D.check_tensor(A, "linalg.solve_triangular", "A", 1)
    D.check_tensor(B, "linalg.solve_triangular", "B", 2)
    check_square("linalg.solve_triangular", tuple(A.shape))
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    check_float("linalg.solve_triangular", A._dtype)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        x = solve_triangular(F.transpose(A, -1, -2), F.transpose(B, -1, -2), upper=not upper,
                             unitriangular=unitriangular)
        return write_out(F.transpose(x, -1, -2), out)
    n = A.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation AX = B ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    A, B = _same_batch(A, B, tails=(2, 2))
    return write_out(_tri_solve(A, B, upper, unitriangular), out)


# ---------------------------------------------------------------- Cholesky solves

def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """X with A X = B for A = L L^T (U^T U when `upper`) from A's Cholesky factor."""
    D.check_tensor(B, "cholesky_solve", "input", 1)
    D.check_tensor(L, "cholesky_solve", "input2", 2)
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           f"instead")
    if L.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.ndim} dimensions "
                           f"instead")
    if B._dtype is not L._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_name(B._dtype)} and A of type {_name(L._dtype)} instead.")
    _square_sizes("cholesky_solve", L, B)
    _lapack_float("cholesky_solve_cpu", L._dtype)
    B, L = _same_batch(B, L, tails=(2, 2))
    full = D.GRAD_ENABLED and L._requires_grad
    T = L.detach() if full else L
    Tt = F.transpose(T, -1, -2)
    if upper:  # A = U^T U: X = U^-1 U^-T B
        X = _tri_solve(T, _tri_solve(Tt, B, False), True)
    else:
        X = _tri_solve(Tt, _tri_solve(T, B, False), True)
    if full:
        X = F.add(X, _full_factor_gradient(X, B, L, upper))
    return write_out(X, out)


def _full_factor_gradient(X: Tensor, B: Tensor, L: Tensor, upper: bool) -> Tensor:
    """Zeros whose gradient with respect to L is PyTorch's cholesky_solve backward,
    -(G_B X^T + X G_B^T) L (U (...) when upper): the derivative of (L L^T)^-1 B over the whole
    of L, where the triangular solves above read (and differentiate) only its triangle. It is
    the same solve through `linalg.solve` of L L^T, minus itself held constant."""
    from .decompositions import solve
    Lt = F.transpose(L, -1, -2)
    A = F.matmul(Lt, L) if upper else F.matmul(L, Lt)
    Y = solve(A, B.detach())
    zero = F.sub(Y, Y.detach())
    return F.where(zero != zero, 0.0, zero)  # (inf - inf is NaN where X overflowed)


def cholesky_inverse(L: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """(L L^T)^-1 (or (U^T U)^-1) from A's Cholesky factor."""
    D.check_tensor(L, "cholesky_inverse", "input", 1)
    check_square("cholesky_inverse", tuple(L.shape))
    _lapack_float("cholesky_inverse_out_cpu", L._dtype)
    n = L.shape[-1]
    eye = F.expand(C.tensor(np.eye(n), dtype=L.dtype, device=L.device), tuple(L.shape))
    return write_out(cholesky_solve(eye, L, upper), out)


def _lapack_float(kernel: str, d: dt.DType) -> None:
    if d not in (dt.float32, dt.float64):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_name(d)}\'')


# ---------------------------------------------------------------- LDL

def _ldl_checks(fn: str, A: Tensor) -> None:
    D.check_tensor(A, fn, "A", 1)
    check_square("torch.linalg.ldl_factor_ex", tuple(A.shape))
    check_float("torch.linalg.ldl_factor_ex", A._dtype)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False,
                  out=None) -> LdlFactorExResult:
    """(LD, pivots, info) as LAPACK's sytrf writes them (lower triangle read)."""
    _ldl_checks("linalg.ldl_factor_ex", A)
    at = {"hermitian": bool(hermitian)}
    LD = D.apply("linalg_ldl_factor_ld", [A], {**at, "check_errors": bool(check_errors)})
    r = LdlFactorExResult(LD, D.apply("linalg_ldl_pivots", [A], at),
                          D.apply("linalg_ldl_info", [A], at))
    return _outs(r, out)


def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None) -> LdlFactorResult:
    """(LD, pivots); an exactly zero D[i,i] raises."""
    _ldl_checks("linalg.ldl_factor", A)
    at = {"hermitian": bool(hermitian)}
    r = LdlFactorResult(D.apply("linalg_ldl_factor_ld", [A], {**at, "check_errors": True}),
                        D.apply("linalg_ldl_pivots", [A], at))
    return _outs(r, out)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False,
              out=None) -> Tensor:
    for i, (x, a) in enumerate(((LD, "LD"), (pivots, "pivots"), (B, "B"))):
        D.check_tensor(x, "linalg.ldl_solve", a, i + 1)
    check_square("torch.linalg.ldl_solve", tuple(LD.shape), "LD")
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(B.ndim, 1)}"
                         f", {max(B.ndim, 1) - 1}], but got -2)")
    if pivots._dtype not in (dt.int32, dt.int64) or pivots.ndim == 0 or \
            pivots.shape[-1] != LD.shape[-1]:
        raise RuntimeError("torch.linalg.ldl_solve: Expected pivots to be an integer tensor of "
                           "LD's batch shape and size LD.shape[-1]")
    if B._dtype is not LD._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_name(B._dtype)} and A of type {_name(LD._dtype)} instead.")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the "
                           f"equation AX = B ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    LD, pivots, B = _same_batch(LD, pivots.to(dt.int32), B, tails=(2, 1, 2))
    return write_out(D.apply("linalg_ldl_solve", [LD, pivots, B],
                             {"hermitian": bool(hermitian)}), out)


# ---------------------------------------------------------------- QR by reflectors

def geqrf(input: Tensor, *, out=None) -> GeqrfResult:
    """(a, tau) as LAPACK's geqrf writes them: R on and above the diagonal, the reflectors'
    vectors below it (not differentiable, as in PyTorch)."""
    D.check_tensor(input, "geqrf", "input", 1)
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    return _outs(GeqrfResult(D.apply("geqrf_a", [input], {}),
                             D.apply("geqrf_tau", [input], {})), out)


def orgqr(input: Tensor, tau: Tensor, *, out=None) -> Tensor:
    return householder_product(input, tau, out=out)


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,
          transpose: bool = False, *, out=None) -> Tensor:
    """Q other (other Q when not `left`; Q^T when `transpose`) for Q = H_1 ... H_k of the
    reflectors geqrf wrote into `input` and `tau`, without forming Q in LAPACK's way (here Q
    is formed: householder_product over `input` padded to a square)."""
    for i, (x, a) in enumerate(((input, "input"), (tau, "tau"), (other, "other"))):
        D.check_tensor(x, "ormqr", a, i + 1)
    if input.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    m = input.shape[-2]
    if other.shape[side] != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to "
                           f"input.shape[-2]")
    k = tau.shape[-1] if tau.ndim else -1
    if k != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to "
                           f"min(other.shape[{side}], input.shape[-1])")
    for x, nm in ((tau, "tau"), (other, "other")):
        if x._dtype is not input._dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {nm} to have the same dtype, "
                               f"but input has dtype{_name(input._dtype)} and {nm} has dtype "
                               f"{_name(x._dtype)}")
    _lapack_float("ormqr_cpu", input._dtype)
    v = input[..., :, :k]
    if k < m:
        v = F.cat([v, C.zeros(tuple(input.shape[:-1]) + (m - k,), dtype=input.dtype,
                                device=input.device)], -1)
    Q = householder_product(v, tau)
    if transpose:
        Q = F.transpose(Q, -1, -2)
    return write_out(F.matmul(Q, other) if left else F.matmul(other, Q), out)


# ---------------------------------------------------------------- least squares

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")
_EPS = {dt.float32: float(np.finfo(np.float32).eps), dt.float64: float(np.finfo(np.float64).eps)}


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None,
          out=None) -> LstsqResult:
    """The least-squares solution by LAPACK's driver (the minimum-norm one where A is
    rank-deficient; rcond scales what counts as zero), with PyTorch's CPU fields per driver:
    rank for all but gels, singular values for gelsd and gelss, residuals (squared column norms
    of A X - B) for all but gelsy where m > n and A has full rank."""
    D.check_tensor(A, "linalg.lstsq", "input", 1)
    D.check_tensor(B, "linalg.lstsq", "b", 2)
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_name(A._dtype)} and other's dtype "
                           f"{_name(B._dtype)}")
    if A._dtype not in (dt.float32, dt.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    vector = B.ndim == A.ndim - 1
    b = F.unsqueeze(B, -1) if vector else B
    if b.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2], A.shape[-1]
    A, b = _same_batch(A, b, tails=(2, 2))
    if rcond is None:
        rcond = _EPS[A._dtype] * max(m, n)
    at = {"driver": driver, "rcond": float(rcond)}
    x = D.apply("linalg_lstsq_solution", [A, b], at)
    empty = F._tensor([], A).to(A._dtype)
    with no_grad():
        if driver == "gels":
            rank = C.zeros((0,), dtype=dt.int64, device=A.device)
        else:
            rank = D.apply("linalg_lstsq_rank", [A.detach()], at)
        s = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    # PyTorch's empty residuals are an output of the differentiable function all the same
    residuals = F.reshape(x, (-1,))[:0]
    if driver != "gelsy" and m > n and n > 0:
        full = bool(F.all(rank == n)) if driver != "gels" else True
        if full:
            r = F.matmul(A, x) - b
            residuals = F.sum(r * r, -2)
    return _outs(LstsqResult(F.squeeze(x, -1) if vector else x, residuals, rank, s), out)


# ---------------------------------------------------------------- matrix exponential

def matrix_exp(A: Tensor, *, out=None) -> Tensor:
    """exp(A) of each square matrix A [..., n, n]. float16/bfloat16 compute in float32 and
    round once: PyTorch's CPU kernel evaluates its float64-tuned degree-18 polynomial in the
    half type, which overflows to NaN or garbage for all but tiny norms (its own Inductor
    test skips Half); the value is the one thing a caller can use.

    >>> torch.linalg.matrix_exp(torch.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])"""
    D.check_tensor(A, "linalg.matrix_exp", "A", 1)
    check_square("linalg.matrix_exp", tuple(A.shape))
    if A._dtype in (dt.float16, dt.bfloat16):
        r = D.cast(D.apply("linalg_matrix_exp", [D.cast(A, dt.float32)], {}), A._dtype)
        return write_out(label_recorded(r, "LinalgMatrixExpBackward0", A), out)
    check_float("linalg.matrix_exp", A._dtype)
    return write_out(D.apply("linalg_matrix_exp", [A], {}), out)


def _outs(result: tuple, out):
    from ..tracer.out_args import write_outs
    return write_outs(result, out, type(result).__name__)
