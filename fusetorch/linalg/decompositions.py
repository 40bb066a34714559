"""torch.linalg's inverses, solves, determinants and factorizations: thin wrappers over the
primitives of `ir/linalg_ops.py` (argument checks, broadcasting of batch dims, vector right-hand
sides, PyTorch's named-tuple results), plus what composes from them (`pinv`, `matrix_power`,
`cross`)."""
from __future__ import annotations

from ..ir import dtypes as dt
from ..ir.linalg_ops import check_float, check_square
from ..ir.shapes import broadcast_many, broadcast_shapes, norm_dim
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer.functional import write_out
from ..tracer.functional_scan import _return_type
from ..tracer.out_args import write_outs
from ..tracer.tensor import Tensor
from ..tracer import autocast as _ac

SlogdetResult = _return_type("linalg_slogdet", ("sign", "logabsdet"))
QRResult = _return_type("linalg_qr", ("Q", "R"))
SVDResult = _return_type("linalg_svd", ("U", "S", "Vh"))
EighResult = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
OldSVDResult = _return_type("svd", ("U", "S", "V"))
OldQRResult = _return_type("qr", ("Q", "R"))


def _check(fn: str, A, square: bool = True) -> None:
    D.check_tensor(A, fn, "A", 1)
    if square:
        check_square(fn, tuple(A.shape))
    elif A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    check_float(fn, A._dtype)


@_ac.op("linalg_inv")
def inv(A: Tensor, *, out=None) -> Tensor:
    _check("linalg.inv", A)
    return write_out(D.apply("linalg_inv", [A], {}), out)


@_ac.op("linalg_solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """X with A X = B (X A = B when not `left`); B may be a vector (or a batch of vectors
    shaped like A's rows, as PyTorch reads them)."""
    _check("linalg.solve", A)
    D.check_tensor(B, "linalg.solve", "B", 2)
    if B._dtype is not A._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {dt.SCALAR_TYPE_NAMES[A._dtype.name]} and B of type "
                           f"{dt.SCALAR_TYPE_NAMES[B._dtype.name]} instead")
    if not left:
        return write_out(F.transpose(solve(F.transpose(A, -1, -2), F.transpose(B, -1, -2)),
                                     -1, -2), out)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = F.unsqueeze(B, -1) if vector else B
    n = A.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = "
                           f"B ({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    batch = broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2]))
    a = A if tuple(A.shape[:-2]) == batch else F.expand(A, batch + (n, n))
    b = b if tuple(b.shape[:-2]) == batch else F.expand(b, batch + tuple(b.shape[-2:]))
    x = D.apply("linalg_solve", [a, b], {})
    return write_out(F.squeeze(x, -1) if vector else x, out)


def det(A: Tensor, *, out=None) -> Tensor:
    _check("linalg.det", A)
    return write_out(D.apply("linalg_det", [A], {}), out)


def slogdet(A: Tensor, *, out=None) -> SlogdetResult:
    _check("linalg.slogdet", A)
    r = SlogdetResult(D.apply("linalg_slogdet_sign", [A], {}), D.apply("linalg_logabsdet", [A], {}))
    return write_outs(r, out, "linalg_slogdet", exact=True)


def logdet(input: Tensor) -> Tensor:
    """log(det): nan for a negative determinant, -inf for a singular matrix."""
    _check("linalg.slogdet", input)
    sign, logabs = slogdet(input)
    return D.elementwise("where", D.binary("lt", sign, 0), float("nan"), logabs)


@_ac.op("linalg_cholesky")
def cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    _check("linalg.cholesky", A)
    L = D.apply("linalg_cholesky", [A], {})
    return write_out(F.transpose(L, -1, -2) if upper else L, out)


@_ac.op("linalg_qr")
def qr(A: Tensor, mode: str = "reduced", *, out=None) -> QRResult:
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    _check("linalg.qr", A, square=False)
    R = D.apply("linalg_qr_r", [A], {"mode": mode})
    if mode == "r":  # PyTorch returns an empty Q
        Q = F._tensor([], A).to(A._dtype)
    else:
        Q = D.apply("linalg_qr_q", [A], {"mode": mode})
    return write_outs(QRResult(Q, R), out, "linalg_qr", exact=True)


@_ac.op("linalg_svd")
def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None) -> SVDResult:
    _check("linalg.svd", A, square=False)
    at = {"full_matrices": bool(full_matrices)}
    r = SVDResult(D.apply("linalg_svd_u", [A], at), D.apply("linalg_svd_s", [A], at),
                  D.apply("linalg_svd_vh", [A], at))
    return write_outs(r, out, "linalg_svd", exact=True)


@_ac.op("linalg_svdvals")
def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    _check("linalg.svdvals", A, square=False)
    return write_out(D.apply("linalg_svd_s", [A], {"full_matrices": False}), out)


def _uplo(UPLO: str) -> str:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


@_ac.op("linalg_eigh")
def eigh(A: Tensor, UPLO: str = "L", *, out=None) -> EighResult:
    u = _uplo(UPLO)
    _check("linalg.eigh", A)
    r = EighResult(D.apply("linalg_eigh_values", [A], {"UPLO": u}),
                   D.apply("linalg_eigh_vectors", [A], {"UPLO": u}))
    return write_outs(r, out, "linalg_eigh", exact=True)


@_ac.op("linalg_eigvalsh")
def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    u = _uplo(UPLO)
    _check("linalg.eigvalsh", A)
    return write_out(D.apply("linalg_eigh_values", [A], {"UPLO": u}), out)


_EPS = {dt.float32: 1.1920928955078125e-07, dt.float64: 2.220446049250313e-16}


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, out=None) -> Tensor:
    """V diag(1/s) U^T over the singular values above max(atol, rtol * s_max); rtol defaults
    to eps * max(m, n) when atol is not given (PyTorch's rule). hermitian=True reads only the
    lower triangle (an eigendecomposition, |eigenvalues| as the singular values)."""
    _check("linalg.pinv", A, square=False)
    if rtol is None:
        rtol = _EPS[A._dtype] * max(A.shape[-2], A.shape[-1]) if atol is None else 0.0
    tol = [_tolerance(v, A) for v in (0.0 if atol is None else atol, rtol)]
    batch = broadcast_many([tuple(A.shape[:-2])] + [tuple(t.shape) for t in tol])
    if batch != tuple(A.shape[:-2]):  # tensor tolerances broadcast with the batch
        A = F.expand(A, *(batch + tuple(A.shape[-2:])))
    return write_out(D.apply("linalg_pinv", [A] + tol, {"hermitian": bool(hermitian)}), out)


def _tolerance(v, A: Tensor) -> Tensor:
    """atol or rtol as a tensor of A's dtype (no gradient flows into a tolerance)."""
    if isinstance(v, Tensor):
        return D.cast(v, A._dtype).detach()
    return D.source("full", {"shape": (), "dtype": A._dtype, "value": float(v)}, A._be)


def matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    D.check_tensor(A, "linalg.matrix_power", "A", 1)
    check_square("linalg.matrix_power", tuple(A.shape))
    if n == 0:
        from ..tracer.creation import eye as _eye
        eye = _eye(A.shape[-1], dtype=A._dtype, device=A.device)
        return write_out(F.with_zero_grad(F.expand(eye, tuple(A.shape)).clone(), A,
                                                  grad_fn="CopyBackwards"), out)
    base = inv(A) if n < 0 else A
    k, result = abs(n), None
    while k:  # binary powering: log2(n) products
        if k & 1:
            result = base if result is None else F.matmul(result, base)
        k >>= 1
        if k:
            base = F.matmul(base, base)
    return write_out(result, out)


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out=None) -> Tensor:
    D.check_tensor(input, "linalg.cross", "input", 1)
    D.check_tensor(other, "linalg.cross", "other", 2)
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = norm_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    a = [F.narrow(input, d, i, 1) for i in range(3)]
    b = [F.narrow(other, d, i, 1) for i in range(3)]
    parts = [D.binary("sub", D.binary("mul", a[(i + 1) % 3], b[(i + 2) % 3]),
                      D.binary("mul", a[(i + 2) % 3], b[(i + 1) % 3])) for i in range(3)]
    return write_out(F.cat(parts, d), out)


# ---------------------------------------------------------------- the older torch.* spellings

@_ac.op("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    return pinv(input, rtol=rcond)


def torch_qr(input: Tensor, some: bool = True, *, out=None) -> tuple:
    q, r = qr(input, "reduced" if some else "complete")
    return write_outs(OldQRResult(q, r), out, "qr", exact=True)


def torch_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out=None) -> tuple:
    """torch.svd: V (not Vh); `some` is reduced; without compute_uv U and V are zeros."""
    u, s, vh = svd(input, full_matrices=not some)
    if not compute_uv:
        from ..tracer.creation import zeros_like
        r = OldSVDResult(zeros_like(u), s, zeros_like(F.transpose(vh, -1, -2)))
    else:
        r = OldSVDResult(u, s, F.transpose(vh, -1, -2))
    return write_outs(r, out, "svd", exact=True)


def torch_cholesky(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    return cholesky(input, upper=upper, out=out)


def torch_cross(input: Tensor, other: Tensor, dim=None, *, out=None) -> Tensor:
    """torch.cross: without `dim`, the first dim of size 3 (PyTorch's deprecated default)."""
    D.check_tensor(input, "cross", "input", 1)
    D.check_tensor(other, "cross", "other", 2)
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), -1)
    return cross(input, other, dim=dim, out=out)
