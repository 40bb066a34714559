"""torch.svd_lowrank and torch.pca_lowrank: Halko, Martinsson and Tropp's randomized range
finder (their algorithms 4.4 and 5.1) in PyTorch's steps, composed of randn, matmul, QR and SVD,
so they differentiate and trace like any composition. Random draws come from fusetorch's
generator: results match PyTorch's to the accuracy of the approximation, not bit for bit.
torch.lobpcg: the eigenpairs its iteration converges to, from a dense eigendecomposition."""
from __future__ import annotations

from ..ir import dtypes as dt
from ..tracer import creation as C
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from .decompositions import cholesky, eigh, qr, svd
from .factorizations import solve_triangular

__all__ = ["svd_lowrank", "pca_lowrank", "lobpcg"]


def _mH(x: Tensor) -> Tensor:
    return F.transpose(x, -1, -2)


def _approximate_basis(A: Tensor, q: int, niter: int | None, M: Tensor | None) -> Tensor:
    """Q [..., m, q] with orthonormal columns such that Q Q^T (A - M) approximates A - M."""
    niter = 2 if niter is None else niter
    dtype = A._dtype if A._dtype.is_floating_point else dt.float32
    R = C.randn(A.shape[-1], q, dtype=dtype, device=A.device)

    def times(X: Tensor, Y: Tensor, Mx: Tensor | None) -> Tensor:
        return F.matmul(X, Y) if Mx is None else F.matmul(X, Y) - F.matmul(Mx, Y)

    Q = qr(times(A, R, M)).Q
    for _ in range(niter):
        Q = qr(times(_mH(A), Q, None if M is None else _mH(M))).Q
        Q = qr(times(A, Q, M)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int | None, niter: int | None, M: Tensor | None) -> tuple:
    q = 6 if q is None else q
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = F.expand(M, tuple(A.shape))
    if m < n:
        A = _mH(A)
        M = None if M is None else _mH(M)
    Q = _approximate_basis(A, q, niter, M)
    B = F.matmul(_mH(Q), A)
    if M is not None:
        B = B - F.matmul(_mH(Q), M)
    U, S, Vh = svd(B, full_matrices=False)
    V, U = _mH(Vh), F.matmul(Q, U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple:
    """(U, S, V) with A - M ~ U diag(S) V^T of rank q (a randomized method)."""
    D.check_tensor(A, "svd_lowrank", "A", 1)
    if A.ndim < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """(U, S, V) of the column-centred A (V's columns: the principal directions)."""
    D.check_tensor(A, "pca_lowrank", "A", 1)
    if A.ndim < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - F.mean(A, -2, keepdim=True), q, niter, None)


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK: Tensor | None = None, niter: int | None = None,
           tol: float | None = None, largest: bool | None = None, method: str | None = None,
           tracker=None, ortho_iparams: dict | None = None, ortho_fparams: dict | None = None,
           ortho_bparams: dict | None = None) -> tuple:
    """(E, X): the k largest (smallest when not `largest`) eigenpairs of A X = E B X, A
    symmetric and B positive definite, E descending (ascending). Computed exactly, by a dense
    (generalized) symmetric eigendecomposition: what PyTorch's iteration converges to, for
    the dense tensors fusetorch has. X, iK, niter, tol, method, tracker and the ortho_*
    parameters steer only the iteration, so they are checked and otherwise unused; the
    eigenvectors' signs are LAPACK's. Gradients: the eigendecomposition's (with B = I, the
    derivative PyTorch's symeig backward gives)."""
    D.check_tensor(A, "lobpcg", "A", 1)
    if A.ndim < 2:
        raise RuntimeError(f"lobpcg: A must have at least 2 dimensions, got {A.ndim}")
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    if X is not None and tuple(X.shape[-2:]) != (m, n):
        raise AssertionError(f"X_ shape mismatch: got {X.shape}, expected {(m, n)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"method must be 'basic' or 'ortho', got {method!r}")
    largest = True if largest is None else largest
    if B is None:
        E, V = eigh(A)
    else:  # B = L L^T: L^-1 A L^-T W = E W, V = L^-T W
        L = cholesky(B)
        C = solve_triangular(L, _mH(solve_triangular(L, A, upper=False)), upper=False)
        E, W = eigh(C)
        V = solve_triangular(_mH(L), W, upper=True)
    if largest:
        return F.flip(E[..., m - k:], (-1,)), F.flip(V[..., :, m - k:], (-1,))
    return E[..., :k], V[..., :, :k]
