"""Linear-algebra primitives: LAPACK through the array module's `linalg` (numpy's, or cupy's),
batched over leading dims, each with PyTorch's VJP.

One output per node, so the factorizations with several results are several primitives
(`linalg_qr_q`/`linalg_qr_r`, `linalg_eigh_values`/`_vectors`, `linalg_svd_u`/`_s`/`_vh`,
`linalg_slogdet_sign`/`linalg_logabsdet`). Their VJPs are linear in the cotangents of the
results, so each result's rule is PyTorch's joint formula with the other cotangents zero, and
autograd's sum over the results is PyTorch's gradient. Each rule recomputes the sibling results
from the saved input (LAPACK is deterministic, so the signs of vectors agree with the forward);
eager pays one factorization per result used, which is cheap next to packing results of
different shapes into one array. No numpy here: eager implementations receive `xp`.

Errors: a singular or non-positive-definite input raises `LinAlgError` (a RuntimeError, as
`torch.linalg.LinAlgError` is) with PyTorch's message, in eager and in compiled replays alike
(these are extern nodes, run by the eager implementation inside compiled programs).
"""
from __future__ import annotations

from . import dtypes as dt
from .ops import _def, _transpose_last, arg


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a factorization failed on the values of its input."""


# ---------------------------------------------------------------- shape and dtype rules

def check_square(fn: str, shape: tuple, name: str = "A") -> None:
    if len(shape) < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are "
                           f"{shape[-2]} by {shape[-1]} matrices")


def check_float(fn: str, d: dt.DType) -> None:
    if not d.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{dt.SCALAR_TYPE_NAMES[d.name]}")
    if d is dt.float16:
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got Half")


def _float_rule(fn: str):
    def rule(dtypes, _a):
        check_float(fn, dtypes[0])
        if len(dtypes) > 1 and dtypes[1] is not dtypes[0]:
            raise RuntimeError(f"{fn}: Expected A and B to have the same dtype, but found A of "
                               f"type {dt.SCALAR_TYPE_NAMES[dtypes[0].name]} and B of type "
                               f"{dt.SCALAR_TYPE_NAMES[dtypes[1].name]} instead")
        return dtypes[0]
    return rule


def _square(fn: str, drop: int = 0):
    def rule(shapes, _a):
        check_square(fn, shapes[0])
        return tuple(shapes[0][:len(shapes[0]) - drop])
    return rule


def _solve_shape(shapes, _a):
    a, b_ = shapes
    check_square("linalg.solve", a)
    if len(b_) < 2 or b_[-2] != a[-1] or tuple(b_[:-2]) != tuple(a[:-2]):
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({a[-2]}x{a[-1]} and {'x'.join(map(str, b_[-2:]))})")
    return tuple(b_)


def _k(shape) -> int:
    return min(shape[-2], shape[-1])


def _qr_q_shape(shapes, a):
    s = shapes[0]
    if len(s) < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    cols = s[-2] if a["mode"] == "complete" else _k(s)
    return tuple(s[:-1]) + (cols,)


def _qr_r_shape(shapes, a):
    s = shapes[0]
    if len(s) < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    rows = s[-2] if a["mode"] == "complete" else _k(s)
    return tuple(s[:-2]) + (rows, s[-1])


def _svd_shape(part: str):
    def rule(shapes, a):
        s = shapes[0]
        if len(s) < 2:
            raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
        m, n, k = s[-2], s[-1], _k(s)
        full = a.get("full_matrices", False)
        if part == "s":
            return tuple(s[:-2]) + (k,)
        if part == "u":
            return tuple(s[:-2]) + (m, m if full else k)
        return tuple(s[:-2]) + (n if full else k, n)
    return rule


# ---------------------------------------------------------------- eager (generic over xp)

def _batch_prefix(shape: tuple, flat: int) -> str:
    return f"(Batch element {flat}): " if len(shape) > 2 else ""


def _first_zero_pivot(xp, a) -> tuple:
    """(batch element, 1-based pivot) where LU with partial pivoting meets its first zero
    pivot: the numbers PyTorch's messages give. Only run once numpy has already failed."""
    batch = a.reshape((-1,) + a.shape[-2:]).astype("float64")
    for e in range(batch.shape[0]):
        m = batch[e].copy()
        n = m.shape[0]
        for j in range(n):
            p = j + int(xp.argmax(xp.abs(m[j:, j])))
            if m[p, j] == 0:
                return e, j + 1
            if p != j:
                m[[j, p]] = m[[p, j]]
            m[j + 1:] -= xp.outer(m[j + 1:, j] / m[j, j], m[j])
    return 0, n


def _singular(xp, fn: str, a) -> LinAlgError:
    e, j = _first_zero_pivot(xp, a)
    return LinAlgError(f"{fn}: {_batch_prefix(a.shape, e)}The diagonal element {j} is zero, "
                       f"the inversion could not be completed because the input matrix is "
                       f"singular.")


def _inv(xp):
    def inv(a):
        try:
            return xp.linalg.inv(a)
        except xp.linalg.LinAlgError:
            raise _singular(xp, "linalg.inv", a) from None
    return inv


def _solve(xp):
    def solve(a, b_):
        try:
            return xp.linalg.solve(a, b_)
        except xp.linalg.LinAlgError:
            e, _ = _first_zero_pivot(xp, a)
            raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(a.shape, e)}The solver "
                              f"failed because the input matrix is singular.") from None
    return solve


def _cholesky(xp):
    def cholesky(a):
        try:
            return xp.linalg.cholesky(a)
        except xp.linalg.LinAlgError:
            batch = a.reshape((-1,) + a.shape[-2:])
            for e in range(batch.shape[0]):
                for j in range(1, a.shape[-1] + 1):  # the first minor that is not PD
                    try:
                        xp.linalg.cholesky(batch[e, :j, :j])
                    except xp.linalg.LinAlgError:
                        raise LinAlgError(
                            f"linalg.cholesky: {_batch_prefix(a.shape, e)}The factorization "
                            f"could not be completed because the input is not positive-definite "
                            f"(the leading minor of order {j} is not positive-definite)."
                        ) from None
            raise
    return cholesky


def _qr(xp, which: int):
    def qr(a, mode):
        m = "complete" if mode == "complete" else "reduced"
        return xp.linalg.qr(a, mode=m)[which]
    return qr


def _eigh(xp, which: int):
    return lambda a, UPLO: xp.linalg.eigh(a, UPLO=UPLO)[which]


def _svd(xp, which: int):
    def svd(a, full_matrices):
        if which == 1:
            return xp.linalg.svd(a, compute_uv=False)
        return xp.linalg.svd(a, full_matrices=full_matrices)[which]
    return svd


def _pinv(xp):
    def pinv(a, atol, rtol, hermitian):
        """Singular values (|eigenvalues| of the lower triangle when hermitian) above
        max(atol, rtol * the largest) are inverted, the others dropped, as PyTorch."""
        m, n = a.shape[-2], a.shape[-1]
        if a.size == 0:
            return xp.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
        if hermitian:
            w, v = xp.linalg.eigh(a, UPLO="L")
            s, left, right = xp.abs(w), v, xp.swapaxes(v, -1, -2)
        else:
            u, s, vh = xp.linalg.svd(a, full_matrices=False)
            w, left, right = s, xp.swapaxes(vh, -1, -2), xp.swapaxes(u, -1, -2)
        cut = xp.maximum(atol, rtol * s.max(-1))[..., None]
        keep = s > cut
        inv = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(a.dtype)
        return (left * inv[..., None, :]) @ right
    return pinv


def _pinv_shape(shapes, a):
    s = shapes[0]
    if len(s) < 2:
        raise RuntimeError("linalg.pinv: The input tensor A must have at least 2 dimensions.")
    if a["hermitian"]:
        check_square("linalg.eigh", s)
    return tuple(s[:-2]) + (s[-1], s[-2])


def _slogdet(xp, which: int):
    return lambda a: xp.linalg.slogdet(a)[which]


# ---------------------------------------------------------------- IR helpers for the VJPs

def mT(b, x):
    return _transpose_last(b, x)


def _mm(b, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = b.op("matmul", out, x)
    return out


def _int_const(b, v: int):
    return b.const(v, dt.int64)


def _tri_mask(b, n: int, m: int, k: int, lower: bool):
    """bool [n, m]: j <= i + k (tril) or j >= i + k (triu)."""
    rows = b.op("reshape", b.op("iota", shape=(n,), dtype=dt.int64, start=k, step=1),
                shape=(n, 1))
    cols = b.op("reshape", b.op("iota", shape=(m,), dtype=dt.int64, start=0, step=1),
                shape=(1, m))
    return b.op("le" if lower else "ge", cols, rows)


def tril(b, x, k: int = 0):
    return b.op("where", _tri_mask(b, x.shape[-2], x.shape[-1], k, True), x, b.zero(x.dtype))


def _eye_mask(b, n: int):
    return b.op(
        "eq", b.op("reshape", b.op("iota", shape=(n,), dtype=dt.int64, start=0, step=1),
                   shape=(n, 1)),
        b.op("reshape", b.op("iota", shape=(n,), dtype=dt.int64, start=0, step=1),
             shape=(1, n)))


def _row(b, v):
    """[..., k] -> [..., 1, k]"""
    return b.op("reshape", v, shape=tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _col(b, v):
    """[..., k] -> [..., k, 1]"""
    return b.op("reshape", v, shape=tuple(v.shape) + (1,))


def _scalar_mat(b, v):
    """[...] -> [..., 1, 1]"""
    return b.op("reshape", v, shape=tuple(v.shape) + (1, 1))


def _narrow_last(b, x, k: int, axis: int):
    """x[..., :k] (axis -1) or x[..., :k, :] (axis -2) as an `index` node."""
    spec = tuple(("slice", 0, s, 1) for s in x.shape[:-2])
    if axis == -1:
        spec += (("slice", 0, x.shape[-2], 1), ("slice", 0, k, 1))
    else:
        spec += (("slice", 0, k, 1), ("slice", 0, x.shape[-1], 1))
    return x if x.shape[axis] == k else b.op("index", x, spec=spec)


def _skew(b, x):
    return b.op("sub", x, mT(b, x))


# ---------------------------------------------------------------- VJP rules

def _vjp_inv(b, n, g):
    # gA = -A^-T g A^-T
    x = mT(b, b.value(n))
    return (b.op("neg", _mm(b, x, g, x)),)


def _vjp_solve(b, n, g):
    # X = A^-1 B: gB = A^-T g, gA = -gB X^T
    a, x = b.value(arg(n, 0)), b.value(n)
    gb = b.op("linalg_solve", mT(b, a), g)
    return (b.op("neg", b.op("matmul", gb, mT(b, x))), gb)


def _vjp_det(b, n, g):
    # gA = g det(A) A^-T (an exactly singular A fails in the inverse, unlike PyTorch's SVD path)
    a = b.value(arg(n))
    scale = _scalar_mat(b, b.op("mul", g, b.value(n)))
    return (b.op("mul", scale, mT(b, b.op("linalg_inv", a))),)


def _vjp_logabsdet(b, n, g):
    a = b.value(arg(n))
    return (b.op("mul", _scalar_mat(b, g), mT(b, b.op("linalg_inv", a))),)


def _vjp_cholesky(b, n, g):
    # PyTorch's: phi = tril(L^T g); gA = L^-T (phi + tril(phi, -1)^T) / 2 L^-1
    L = b.value(n)
    phi = tril(b, b.op("matmul", mT(b, L), g))
    half = b.op("mul", b.op("add", phi, mT(b, tril(b, phi, -1))), b.const(0.5, n.dtype))
    linv = b.op("linalg_inv", L)
    return (_mm(b, mT(b, linv), half, linv),)


def _copyltu(b, m):
    """tril(M) + tril(M, -1)^T: the symmetric matrix with M's lower triangle."""
    return b.op("add", tril(b, m), mT(b, tril(b, m, -1)))


def _qr_backward(b, n, gq, gr):
    """PyTorch's QR backward; gq or gr may be None (that result's cotangent is zero)."""
    a, mode = arg(n), n.attrs["mode"]
    rows, cols = a.shape[-2], a.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    if mode == "complete" and rows > cols:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    av = b.value(a)
    q = b.op("linalg_qr_q", av, mode=mode)
    r = b.op("linalg_qr_r", av, mode=mode)
    if rows >= cols:
        return (_qr_tall_backward(b, q, r, gq, gr),)
    # wide: A = [X | Y] with X = Q R1 square and R2 = Q^T Y, so gY = Q gR2, and X's QR takes
    # gQ + Y gR2^T and gR1 (PyTorch's reduction to the square case)
    batch = tuple(("slice", 0, s, 1) for s in a.shape[:-2])
    cut = lambda x, lo, hi: b.op("index", x, spec=batch + (  # noqa: E731
        ("slice", 0, rows, 1), ("slice", lo, hi, 1)))
    r1 = cut(r, 0, rows)
    if gr is None:
        gx = _qr_tall_backward(b, q, r1, gq, None)
        return (b.op("cat", gx, b.zeros(tuple(a.shape[:-1]) + (cols - rows,), n.dtype),
                     dim=len(a.shape) - 1),)
    gr2 = cut(gr, rows, cols)
    gq2 = b.op("matmul", cut(av, rows, cols), mT(b, gr2))
    gx = _qr_tall_backward(b, q, r1, gq2 if gq is None else b.op("add", gq, gq2),
                           cut(gr, 0, rows))
    return (b.op("cat", gx, b.op("matmul", q, gr2), dim=len(a.shape) - 1),)


def _qr_tall_backward(b, q, r, gq, gr):
    # m >= n, reduced (Walter and Lehmann; Liao et al.): M = R gR^T - gQ^T Q,
    # gA = (gQ + Q copyltu(M)) R^-T
    m = None if gr is None else b.op("matmul", r, mT(b, gr))
    if gq is not None:
        mq = b.op("neg", b.op("matmul", mT(b, gq), q))
        m = mq if m is None else b.op("add", m, mq)
    inner = b.op("matmul", q, _copyltu(b, m))
    if gq is not None:
        inner = b.op("add", gq, inner)
    return b.op("matmul", inner, mT(b, b.op("linalg_inv", r)))


def _vjp_qr_q(b, n, g):
    return _qr_backward(b, n, g, None)


def _vjp_qr_r(b, n, g):
    return _qr_backward(b, n, None, g)


def _eigh_parts(b, n):
    a, uplo = b.value(arg(n)), n.attrs["UPLO"]
    return b.op("linalg_eigh_values", a, UPLO=uplo), b.op("linalg_eigh_vectors", a, UPLO=uplo)


def _vjp_eigh_values(b, n, g):
    # gA = V diag(gL) V^T
    _, v = _eigh_parts(b, n)
    return (b.op("matmul", b.op("mul", v, _row(b, g)), mT(b, v)),)


def _vjp_eigh_vectors(b, n, g):
    # PyTorch's: gA = V (skew(V^T gV) / 2 / E) V^T, E_ij = L_j - L_i (1 on the diagonal)
    lam, v = _eigh_parts(b, n)
    size = v.shape[-1]
    s = b.op("mul", _skew(b, b.op("matmul", mT(b, v), g)), b.const(0.5, n.dtype))
    e = b.op("sub", _row(b, lam), _col(b, lam))
    e = b.op("where", _eye_mask(b, size), b.const(1.0, n.dtype), e)
    return (_mm(b, v, b.op("div", s, e), mT(b, v)),)


def _svd_parts(b, n):
    """U and Vh narrowed to k = min(m, n) columns / rows, and S."""
    a = b.value(arg(n))
    k = _k(a.shape)
    full = n.attrs.get("full_matrices", False)
    u = _narrow_last(b, b.op("linalg_svd_u", a, full_matrices=full), k, -1)
    vh = _narrow_last(b, b.op("linalg_svd_vh", a, full_matrices=full), k, -2)
    return u, b.op("linalg_svd_s", a, full_matrices=False), vh


def _svd_e(b, s, dtype):
    sq = b.op("mul", s, s)
    e = b.op("sub", _row(b, sq), _col(b, sq))  # E_jk = S_k^2 - S_j^2
    return b.op("where", _eye_mask(b, s.shape[-1]), b.const(1.0, dtype), e)


def _vjp_svd_s(b, n, g):
    u, _, vh = _svd_parts(b, n)
    return (b.op("matmul", b.op("mul", u, _row(b, g)), vh),)


def _vjp_svd_u(b, n, g):
    # gA = U (skew(U^T gU) / E) S V^T + (I - U U^T) gU S^-1 V^T   (the last term when m > n)
    u, s, vh = _svd_parts(b, n)
    gu = _narrow_last(b, g, s.shape[-1], -1)
    ret = b.op("div", b.op("mul", _skew(b, b.op("matmul", mT(b, u), gu)), _row(b, s)),
               _svd_e(b, s, n.dtype))
    inner = b.op("matmul", u, ret)
    if u.shape[-2] > s.shape[-1]:
        gus = b.op("div", gu, _row(b, s))
        inner = b.op("add", inner, b.op("sub", gus, _mm(b, u, mT(b, u), gus)))
    return (b.op("matmul", inner, vh),)


def _vjp_svd_vh(b, n, g):
    # gA = U S (skew(V^T gV) / E) V^T + U S^-1 gV^T (I - V V^T)   (the last term when m < n)
    u, s, vh = _svd_parts(b, n)
    gv = mT(b, _narrow_last(b, g, s.shape[-1], -2))
    v = mT(b, vh)
    ret = b.op("div", b.op("mul", _col(b, s), _skew(b, b.op("matmul", vh, gv))),
               _svd_e(b, s, n.dtype))
    inner = b.op("matmul", ret, vh)
    if vh.shape[-1] > s.shape[-1]:
        gvs = mT(b, b.op("div", gv, _row(b, s)))
        inner = b.op("add", inner, b.op("sub", gvs, _mm(b, gvs, v, vh)))
    return (b.op("matmul", u, inner),)


def _vjp_pinv(b, n, g):
    # PyTorch's pinv_backward (Golub and Pereyra), which holds for rank-deficient A too, where
    # the SVD's own VJP divides by differences of repeated (zero) singular values:
    # gA = -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A), P = pinv(A), for the
    # A given (its upper triangle included when hermitian, as in PyTorch)
    return (pinv_backward(b, b.value(arg(n, 0)), b.value(n), g), None, None)


def pinv_backward(b, a, p, g):
    """The cotangent of A from g, the cotangent of P = pinv(A) (lstsq's backward too)."""
    pt, gt = mT(b, p), mT(b, g)
    first = b.op("neg", _mm(b, pt, g, pt))
    left = b.op("sub", b.op("matmul", gt, p), _mm(b, a, p, gt, p))  # (I - A P) g^T P
    right = b.op("sub", gt, _mm(b, gt, p, a))  # g^T (I - P A)
    return b.op("add", b.op("add", first, b.op("matmul", left, pt)), _mm(b, pt, p, right))


# ---------------------------------------------------------------- the table

_def("linalg_inv", "extern", 1, _square("linalg.inv"), _float_rule("linalg.inv"),
     eager=_inv, vjp=_vjp_inv, saves=("out",), grad_name="LinalgInvExBackward0",
     doc="the inverse of each square matrix (LinAlgError when singular)")
_def("linalg_solve", "extern", 2, _solve_shape, _float_rule("linalg.solve"),
     eager=_solve, vjp=_vjp_solve, saves=(0, "out"), grad_name="LinalgSolveExBackward0",
     doc="X with A X = B; inputs A [..., n, n], B [..., n, k] with A's batch dims")
_def("linalg_det", "extern", 1, _square("linalg.det", 2), _float_rule("linalg.det"),
     eager=lambda xp: xp.linalg.det, vjp=_vjp_det, saves=(0, "out"),
     grad_name="LinalgDetBackward0", doc="the determinant of each square matrix")
_def("linalg_slogdet_sign", "extern", 1, _square("linalg.slogdet", 2),
     _float_rule("linalg.slogdet"), eager=lambda xp: _slogdet(xp, 0),
     vjp=lambda b, n, g: (None,), doc="the sign of the determinant (0 when singular)")
_def("linalg_logabsdet", "extern", 1, _square("linalg.slogdet", 2),
     _float_rule("linalg.slogdet"), eager=lambda xp: _slogdet(xp, 1), vjp=_vjp_logabsdet,
     saves=(0,), grad_name="LinalgSlogdetBackward0",
     doc="log |det A| (-inf when singular)")
_def("linalg_cholesky", "extern", 1, _square("linalg.cholesky"), _float_rule("linalg.cholesky"),
     eager=_cholesky, vjp=_vjp_cholesky, saves=("out",), grad_name="LinalgCholeskyExBackward0",
     doc="the lower Cholesky factor L, A = L L^T (LinAlgError when not positive-definite)")
_def("linalg_qr_q", "extern", 1, _qr_q_shape, _float_rule("linalg.qr"),
     eager=lambda xp: _qr(xp, 0), vjp=_vjp_qr_q, saves=(0,), attrs=("mode",),
     grad_name="LinalgQrBackward0", doc="Q of A = QR; attrs mode 'reduced' or 'complete'")
_def("linalg_qr_r", "extern", 1, _qr_r_shape, _float_rule("linalg.qr"),
     eager=lambda xp: _qr(xp, 1), vjp=_vjp_qr_r, saves=(0,), attrs=("mode",),
     grad_name="LinalgQrBackward0", doc="R of A = QR; attrs mode 'reduced', 'complete' or 'r'")
_def("linalg_eigh_values", "extern", 1, _square("linalg.eigh", 1), _float_rule("linalg.eigh"),
     eager=lambda xp: _eigh(xp, 0), vjp=_vjp_eigh_values, saves=(0,), attrs=("UPLO",),
     grad_name="LinalgEighBackward0",
     doc="ascending eigenvalues of a symmetric matrix read from its UPLO triangle")
_def("linalg_eigh_vectors", "extern", 1, _square("linalg.eigh"), _float_rule("linalg.eigh"),
     eager=lambda xp: _eigh(xp, 1), vjp=_vjp_eigh_vectors, saves=(0,), attrs=("UPLO",),
     grad_name="LinalgEighBackward0", doc="orthonormal eigenvectors (columns), as LAPACK signs")
_def("linalg_svd_u", "extern", 1, _svd_shape("u"), _float_rule("linalg.svd"),
     eager=lambda xp: _svd(xp, 0), vjp=_vjp_svd_u, saves=(0,), attrs=("full_matrices",),
     grad_name="LinalgSvdBackward0", doc="U of A = U diag(S) Vh")
_def("linalg_svd_s", "extern", 1, _svd_shape("s"), _float_rule("linalg.svd"),
     eager=lambda xp: _svd(xp, 1), vjp=_vjp_svd_s, saves=(0,), attrs=("full_matrices",),
     grad_name="LinalgSvdBackward0", doc="the singular values, descending")
_def("linalg_svd_vh", "extern", 1, _svd_shape("vh"), _float_rule("linalg.svd"),
     eager=lambda xp: _svd(xp, 2), vjp=_vjp_svd_vh, saves=(0,), attrs=("full_matrices",),
     grad_name="LinalgSvdBackward0", doc="Vh of A = U diag(S) Vh")
_def("linalg_pinv", "extern", 3, _pinv_shape, _float_rule("linalg.pinv"),
     eager=_pinv, vjp=_vjp_pinv, saves=(0, "out"), attrs=("hermitian",),
     grad_name="LinalgPinvBackward0",
     doc="the pseudo-inverse of A [..., m, n]; inputs 2 and 3 are atol and rtol (0-d or the "
         "batch shape); hermitian reads A's lower triangle")
