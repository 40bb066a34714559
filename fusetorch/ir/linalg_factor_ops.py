"""Linear-algebra primitives of the LU/LDL/QR-by-reflector family, triangular solves and the
matrix exponential, each with PyTorch's VJP or PyTorch's refusal to differentiate.

LAPACK's packed results are what PyTorch returns (`linalg.lu_factor`'s LU and 1-based int32
pivots, `ldl_factor`'s LD and sytrf pivots, `geqrf`'s reflectors and tau), so those are the
primitives; L, U, P and Q are compositions over them (fusetorch/linalg/factorizations.py).
As in linalg_ops.py, a factorization with two results is two primitives that recompute the
sibling from the saved input. Eager implementations run scipy's LAPACK/BLAS wrappers, which
take one matrix at a time (loops over the batch), on the host: cupy arrays make the trip.
"""
from __future__ import annotations

import functools
import importlib
import math

from . import dtypes as dt
from .linalg_ops import (LinAlgError, check_float, check_square, mT, pinv_backward,
                         _tri_mask, tril)
from .ops import _def, arg


# ---------------------------------------------------------------- dtype and shape rules

def _lapack_dtype(kernel: str):
    """float32/float64 only, else NotImplementedError naming ATen's CPU kernel (PyTorch's)."""
    def rule(dtypes, _a):
        d = dtypes[0]
        if d not in (dt.float32, dt.float64):
            raise NotImplementedError(f'"{kernel}" not implemented for '
                                      f"'{dt.SCALAR_TYPE_NAMES[d.name]}'")
        return d
    return rule


def _float_pair(fn: str, first: str = "A", second: str = "B"):
    def rule(dtypes, _a):
        check_float(fn, dtypes[0])
        if dtypes[-1] is not dtypes[0]:
            raise RuntimeError(f"{fn}: Expected {first} and {second} to have the same dtype, "
                               f"but found {first} of type "
                               f"{dt.SCALAR_TYPE_NAMES[dtypes[0].name]} and {second} of type "
                               f"{dt.SCALAR_TYPE_NAMES[dtypes[-1].name]} instead")
        if dtypes[0] not in (dt.float32, dt.float64):
            raise NotImplementedError(f"{fn}: not implemented for "
                                      f"'{dt.SCALAR_TYPE_NAMES[dtypes[0].name]}'")
        return dtypes[0]
    return rule


def _int32(_dtypes, _a):
    return dt.int32


def _matrix(fn: str):
    def rule(shapes, _a):
        if len(shapes[0]) < 2:
            raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
        return tuple(shapes[0])
    return rule


def _square(fn: str):
    def rule(shapes, _a):
        check_square(fn, tuple(shapes[0]))
        return tuple(shapes[0])
    return rule


def _pivots_shape(shapes, _a):
    s = shapes[0]
    return tuple(s[:-2]) + (min(s[-2], s[-1]),)


def _ldl_pivots_shape(shapes, _a):
    check_square("torch.linalg.ldl_factor_ex", tuple(shapes[0]))
    return tuple(shapes[0][:-1])


def _permutation_shape(shapes, a):
    return tuple(shapes[0][:-1]) + (a["m"], a["m"])


def _solve_shape(fn: str):
    def rule(shapes, _a):
        a, b_ = shapes[0], shapes[-1]
        check_square(fn, tuple(a))
        if len(b_) < 2 or b_[-2] != a[-1] or tuple(b_[:-2]) != tuple(a[:-2]):
            raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation AX = B "
                               f"({a[-2]}x{a[-1]} and {'x'.join(map(str, b_[-2:]))})")
        return tuple(b_)
    return rule


# ---------------------------------------------------------------- eager (scipy, on the host)

def _host(xp, fn):
    """fn(np, *arrays) with np the host array module: xp itself, except that cupy's arrays make
    the trip to numpy's (cupy has no sytrf, geqrf or batched trsm) and the results come back."""
    if xp.__name__ != "cupy":
        return functools.partial(fn, xp)
    np = importlib.import_module("numpy")

    def run(*args, **kw):
        out = fn(np, *[xp.asnumpy(a) if hasattr(a, "__cuda_array_interface__") else a
                       for a in args], **kw)
        return xp.asarray(out)
    return run


def _scipy(part: str):
    """scipy.linalg's `part` (lapack or blas), imported at the first call (~0.2 s a script
    that never factorizes should not pay)."""
    return importlib.import_module(f"scipy.linalg.{part}" if part else "scipy.linalg")


def _lapack(name: str, dtype):
    return _scipy("lapack").get_lapack_funcs(name, dtype=dtype)


def _threads():
    from .. import _threads  # (a leaf, imported at the first call: ir loads without numpy)
    return _threads


def _each(np, a, fn, out_tail: tuple, dtype, flops: float):
    """fn over every matrix of a's batch, into an array of batch + out_tail; each call of
    about `flops` operations runs on one BLAS thread by matmul's rule (_threads)."""
    batch = a.shape[:-2]
    out = np.empty(batch + out_tail, dtype=dtype)
    flat_in = a.reshape((math.prod(batch),) + a.shape[-2:])
    flat_out = out.reshape((math.prod(batch),) + out_tail)
    with _threads().lapack_threads(flops):
        for e in range(flat_in.shape[0]):
            flat_out[e] = fn(e, flat_in[e])
    return out


def _prefix(a, e: int) -> str:
    return f"(Batch element {e}): " if a.ndim > 2 else ""


def _getrf(np, a, which: int, check_errors: bool):
    """LAPACK getrf per matrix: the packed LU (which 0) or 1-based int32 pivots (which 1);
    with check_errors, PyTorch's error at the first exactly zero U[i,i]."""
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    if a.size == 0:
        return np.zeros(a.shape, a.dtype) if which == 0 else \
            np.ones(a.shape[:-2] + (k,), np.int32) * np.arange(1, k + 1, dtype=np.int32)
    getrf = _lapack("getrf", a.dtype)

    def one(e, x):
        lu, piv, info = getrf(x)
        if info > 0 and check_errors:
            raise LinAlgError(f"torch.linalg.lu_factor: {_prefix(a, e)}U[{info},{info}] is "
                              f"zero and using it on lu_solve would result in a division by "
                              f"zero. If you still want to perform the factorization, consider "
                              f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
        return lu if which == 0 else piv + 1
    return _each(np, a, one, (m, n) if which == 0 else (k,), a.dtype if which == 0 else np.int32,
                 2 * m * n * k)


def _permutation(np, pivots, m: int, dtype):
    """P with A = P L U from LAPACK's 1-based row interchanges."""
    k = pivots.shape[-1]
    flat = pivots.reshape((math.prod(pivots.shape[:-1]), k)).astype(np.int64) - 1
    if flat.size and (flat.min() < 0 or flat.max() >= m):
        raise RuntimeError("lu_unpack: pivots must be in the range [1, LU.size(-2)], but some "
                           "are out of it")
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    rows = np.arange(flat.shape[0])
    for i in range(k):  # LAPACK applies the interchanges in order
        j = flat[:, i]
        held = perm[rows, i].copy()
        perm[rows, i] = perm[rows, j]
        perm[rows, j] = held
    p = (perm[:, None, :] == np.arange(m)[None, :, None]).astype(dtype.name)
    return p.reshape(pivots.shape[:-1] + (m, m))


def _getrs(np, lu, pivots, b_, adjoint: bool):
    """A^-1 B (A^-T B when adjoint) from getrf's LU and 1-based pivots, per matrix."""
    n = lu.shape[-1]
    flat = pivots.reshape((math.prod(pivots.shape[:-1]), n)).astype(np.int32) - 1
    if flat.size and (flat.min() < 0 or flat.max() >= n):
        raise RuntimeError("linalg.lu_solve: pivots must be between 1 and LU.size(-2) "
                           "inclusive, as lu_factor returns them")
    if b_.size == 0 or lu.size == 0:
        return np.zeros(b_.shape, b_.dtype)
    getrs = _lapack("getrs", lu.dtype)
    bf = b_.reshape((-1,) + b_.shape[-2:])
    return _each(np, lu, lambda e, x: getrs(x, flat[e], bf[e], trans=int(adjoint))[0],
                 b_.shape[-2:], lu.dtype, 2 * n * n * b_.shape[-1])


def _gelsy(np, a, b_, driver: str, rcond: float, which: int):
    """scipy's lstsq per matrix (gels's solution taken from gelsy: equal at full rank, which
    gels assumes): the solution (which 0) or LAPACK's rank (which 1, b_ None)."""
    m, n = a.shape[-2], a.shape[-1]
    if which == 1:
        b_ = np.zeros(a.shape[:-1] + (1,), a.dtype)
    k = b_.shape[-1]
    tail, dtype = ((n, k), a.dtype) if which == 0 else ((), np.int64)
    if a.size == 0 or b_.size == 0:
        return np.zeros(a.shape[:-2] + tail, dtype)
    lstsq = _scipy("").lstsq
    drv = "gelsy" if driver == "gels" else driver
    bf = b_.reshape((-1,) + b_.shape[-2:])
    part = 0 if which == 0 else 2
    return _each(np, a, lambda e, x: lstsq(x, bf[e], cond=rcond, lapack_driver=drv,
                                           check_finite=False)[part],
                 tail, dtype, 4 * m * n * min(m, n))


def _trsm(np, a, b_, upper: bool, unitriangular: bool):
    """A^-1 B through BLAS trsm per matrix: reads one triangle, no singularity check (a zero
    on the diagonal gives inf/nan, as PyTorch's)."""
    if b_.size == 0 or a.size == 0:
        return np.zeros(b_.shape, b_.dtype)
    trsm = _scipy("blas").get_blas_funcs("trsm", dtype=a.dtype)
    bf = b_.reshape((-1,) + b_.shape[-2:])
    return _each(np, a, lambda e, x: trsm(1.0, x, bf[e], lower=not upper,
                                          diag=int(unitriangular)), b_.shape[-2:], a.dtype,
                 b_.shape[-2] ** 2 * b_.shape[-1])


def _expm(np, a):
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    with _threads().lapack_threads(20 * a.shape[-1] ** 3):  # (~10 products and a solve)
        return _scipy("").expm(a).astype(a.dtype, copy=False)


def _sytrf(np, a, which: int, hermitian: bool, check_errors: bool):
    """LAPACK sytrf (lower) per matrix: LD with its strict upper triangle zeroed (which 0),
    the pivots as LAPACK writes them (1-based; negative pairs for 2x2 blocks; which 1) or its
    info (the first exactly zero D[i,i], 1-based, else 0; which 2)."""
    n = a.shape[-1]
    if a.size == 0:
        return np.zeros(a.shape if which == 0 else a.shape[:-1] if which == 1 else
                        a.shape[:-2], a.dtype if which == 0 else np.int32)
    sytrf = _lapack("sytrf", a.dtype)

    def one(e, x):
        ld, piv, info = sytrf(x, lower=1)
        if info > 0 and check_errors:
            raise LinAlgError(f"torch.linalg.ldl_factor: {_prefix(a, e)}The factorization "
                              f"could not be completed because D[{info},{info}] is zero.")
        return (np.tril(ld), piv, info)[which]
    tail = ((n, n), (n,), ())[which]
    return _each(np, a, one, tail, a.dtype if which == 0 else np.int32, n ** 3)


def _sytrs(np, ld, pivots, b_, hermitian: bool):
    n = ld.shape[-1]
    flat = pivots.reshape((math.prod(pivots.shape[:-1]), n))
    if flat.size and (np.abs(flat).min() < 1 or np.abs(flat).max() > n):
        raise RuntimeError("torch.linalg.ldl_solve: pivots must be in the range [1, n] as "
                           "ldl_factor writes them")
    if b_.size == 0 or ld.size == 0:
        return np.zeros(b_.shape, b_.dtype)
    sytrs = _lapack("sytrs", ld.dtype)
    bf = b_.reshape((-1,) + b_.shape[-2:])
    return _each(np, ld, lambda e, x: sytrs(x, flat[e], bf[e], lower=1)[0], b_.shape[-2:],
                 ld.dtype, 2 * n * n * b_.shape[-1])


def _geqrf(np, a, which: int):
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    if a.size == 0:
        return np.zeros(a.shape if which == 0 else a.shape[:-2] + (k,), a.dtype)
    geqrf = _lapack("geqrf", a.dtype)
    return _each(np, a, lambda e, x: geqrf(x)[which], (m, n) if which == 0 else (k,), a.dtype,
                 4 * m * n * k)


# ---------------------------------------------------------------- IR helpers for the VJPs

def triu(b, x, k: int = 0):
    return b.op("where", _tri_mask(b, x.shape[-2], x.shape[-1], k, False), x, b.zero(x.dtype))


def _part(b, x, rows: tuple, cols: tuple):
    """x[..., r0:r1, c0:c1]"""
    if rows == (0, x.shape[-2]) and cols == (0, x.shape[-1]):
        return x
    spec = tuple(("slice", 0, s, 1) for s in x.shape[:-2])
    return b.op("index", x, spec=spec + (("slice",) + rows + (1,), ("slice",) + cols + (1,)))


def _unit_lower(b, lu, k: int):
    """L [..., m, k]: lu's strict lower triangle with ones on the diagonal."""
    m = lu.shape[-2]
    strict = _part(b, tril(b, lu, -1), (0, m), (0, k))
    rows = b.op("reshape", b.op("iota", shape=(m,), dtype=dt.int64, start=0, step=1),
                shape=(m, 1))
    cols = b.op("reshape", b.op("iota", shape=(k,), dtype=dt.int64, start=0, step=1),
                shape=(1, k))
    return b.op("where", b.op("eq", rows, cols), b.const(1.0, lu.dtype), strict)


def solve_tri(b, a, y, upper: bool, unit: bool = False, left: bool = True):
    """A^-1 Y (left) or Y A^-1 (not left) for triangular A."""
    if left:
        return b.op("linalg_solve_triangular", a, y, upper=upper, unitriangular=unit)
    return mT(b, b.op("linalg_solve_triangular", mT(b, a), mT(b, y), upper=not upper,
                      unitriangular=unit))


# ---------------------------------------------------------------- VJP rules

def _vjp_lu_factor(b, n, g):
    """PyTorch's linalg_lu_backward on the packed factors: gL = tril(gLU, -1), gU = triu(gLU).
    Square: gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T. Wide (m < n, U = [U1 U2]):
    the square rule on A's first m columns with L^T gL - gU2 U2^T in L^T gL's place, and
    gA2 = P L^-T gU2. Tall (m > n, L = [L1; L2]): the transpose of that."""
    a = b.value(arg(n))
    lu = b.value(n)
    m, cols = a.shape[-2], a.shape[-1]
    k = min(m, cols)
    p = b.op("lu_pivots_to_permutation", b.op("linalg_lu_pivots", a), m=m, dtype=n.dtype)
    L, U = _unit_lower(b, lu, k), _part(b, triu(b, lu), (0, k), (0, cols))
    gL = _part(b, tril(b, g, -1), (0, m), (0, k))
    gU = _part(b, triu(b, g), (0, k), (0, cols))
    last = len(a.shape) - 1
    if m <= cols:
        u1, gu1 = _part(b, U, (0, k), (0, k)), _part(b, gU, (0, k), (0, k))
        inner = b.op("matmul", mT(b, L), gL)
        if cols > m:
            u2, gu2 = _part(b, U, (0, k), (k, cols)), _part(b, gU, (0, k), (k, cols))
            inner = b.op("sub", inner, b.op("matmul", gu2, mT(b, u2)))
        phi = b.op("add", tril(b, inner, -1), triu(b, b.op("matmul", gu1, mT(b, u1))))
        ga = solve_tri(b, mT(b, u1), solve_tri(b, mT(b, L), phi, True, True), False, left=False)
        if cols > m:
            ga = b.op("cat", ga, solve_tri(b, mT(b, L), gu2, True, True), dim=last)
    else:
        l1, gl1 = _part(b, L, (0, k), (0, k)), _part(b, gL, (0, k), (0, k))
        l2, gl2 = _part(b, L, (k, m), (0, k)), _part(b, gL, (k, m), (0, k))
        inner = b.op("sub", b.op("matmul", gU, mT(b, U)), b.op("matmul", mT(b, l2), gl2))
        phi = b.op("add", tril(b, b.op("matmul", mT(b, l1), gl1), -1), triu(b, inner))
        ga1 = solve_tri(b, mT(b, U), solve_tri(b, mT(b, l1), phi, True, True), False, left=False)
        ga2 = solve_tri(b, mT(b, U), gl2, False, left=False)
        ga = b.op("cat", ga1, ga2, dim=last - 1)
    return (b.op("matmul", p, ga),)


def _vjp_solve_triangular(b, n, g):
    # X = T^-1 B: gB = T^-T g (the other triangle), gT = -gB X^T on T's triangle (strict when
    # unitriangular: its diagonal is not read)
    t, x = b.value(arg(n, 0)), b.value(n)
    upper, unit = n.attrs["upper"], n.attrs["unitriangular"]
    gb = b.op("linalg_solve_triangular", mT(b, t), g, upper=not upper, unitriangular=unit)
    full = b.op("neg", b.op("matmul", gb, mT(b, x)))
    off = 1 if unit else 0
    return (triu(b, full, off) if upper else tril(b, full, -off), gb)


def _vjp_lu_solve(b, n, g):
    """X = A^-1 B (A^-T B when adjoint), A = P L U packed in LU: gB is the other solve of g;
    gLU = gL + gU, from dA = P (dL U + L dU):
    not adjoint: Z = U^-T g, gU = -triu(Z X^T), gL = -tril(L^-T Z (U X)^T, -1);
    adjoint: W = P^T X, V = L^-1 P^T g, gL = -tril(W V^T, -1), gU = -triu(L^T W (U^-1 V)^T)."""
    lu, piv, x = b.value(arg(n, 0)), b.value(arg(n, 1)), b.value(n)
    adjoint = n.attrs["adjoint"]
    size = lu.shape[-1]
    gb = b.op("linalg_lu_solve", lu, piv, g, adjoint=not adjoint)
    U = triu(b, lu)
    if not adjoint:
        z = solve_tri(b, mT(b, lu), g, False)
        gu = triu(b, b.op("matmul", z, mT(b, x)))
        gl = tril(b, solve_tri(b, mT(b, lu), b.op("matmul", z, mT(b, b.op("matmul", U, x))),
                               True, True), -1)
    else:
        p = b.op("lu_pivots_to_permutation", piv, m=size, dtype=n.dtype)
        w = b.op("matmul", mT(b, p), x)
        v = solve_tri(b, lu, b.op("matmul", mT(b, p), g), False, True)
        gl = tril(b, b.op("matmul", w, mT(b, v)), -1)
        lt_w = b.op("matmul", mT(b, _unit_lower(b, lu, size)), w)
        gu = triu(b, b.op("matmul", lt_w, mT(b, solve_tri(b, lu, v, True))))
    return (b.op("neg", b.op("add", gl, gu)), None, gb)


def _vjp_lstsq(b, n, g):
    # PyTorch's linalg_lstsq_backward: through P = pinv(A) (its default tolerance), X = P B:
    # gB = P^T g, gA = pinv's backward of g B^T
    a, rhs = b.value(arg(n, 0)), b.value(arg(n, 1))
    m, cols = a.shape[-2], a.shape[-1]
    eps = 1.1920928955078125e-07 if n.dtype is dt.float32 else 2.220446049250313e-16
    p = b.op("linalg_pinv", a, b.const(0.0, n.dtype), b.const(eps * max(m, cols), n.dtype),
             hermitian=False)
    return (pinv_backward(b, a, p, b.op("matmul", g, mT(b, rhs))),
            b.op("matmul", mT(b, p), g))


def _lstsq_shape(shapes, _a):
    a, b_ = shapes
    return tuple(a[:-2]) + (a[-1], b_[-1])


def _vjp_matrix_exp(b, n, g):
    # the Frechet derivative's adjoint: exp([[A^T, G], [0, A^T]]) holds it in the upper right
    a = b.value(arg(n))
    size, last = a.shape[-1], len(a.shape) - 1
    at = mT(b, a)
    top = b.op("cat", at, g, dim=last)
    bottom = b.op("cat", b.zeros(a.shape, n.dtype), at, dim=last)
    e = b.op("linalg_matrix_exp", b.op("cat", top, bottom, dim=last - 1))
    return (_part(b, e, (0, size), (size, 2 * size)),)


def _no_derivative(message: str, error=RuntimeError):
    def vjp(b, n, g):
        raise error(message)
    return vjp


# ---------------------------------------------------------------- the table

_def("linalg_lu_factor", "extern", 1, _matrix("torch.lu_factor"), _lapack_dtype("lu_cpu"),
     eager=lambda xp: _host(xp, lambda np, a, check_errors: _getrf(np, a, 0, check_errors)),
     vjp=_vjp_lu_factor, saves=(0, "out"), attrs=("check_errors",),
     grad_name="LinalgLuFactorExBackward0",
     doc="LAPACK getrf's packed LU of A [..., m, n] (L's unit diagonal implied); attrs "
         "check_errors raises PyTorch's error at an exactly zero pivot")
_def("linalg_lu_pivots", "extern", 1, _pivots_shape, _int32,
     eager=lambda xp: _host(xp, lambda np, a: _getrf(np, a, 1, False)),
     doc="getrf's row interchanges, 1-based int32 [..., min(m, n)]")
_def("lu_pivots_to_permutation", "extern", 1, _permutation_shape, lambda _d, a: a["dtype"],
     eager=lambda xp: _host(xp, _permutation), attrs=("m", "dtype"),
     doc="P [..., m, m] with A = P L U from 1-based pivots")
_def("linalg_lu_solve", "extern", 3, _solve_shape("linalg.lu_solve"),
     _float_pair("linalg.lu_solve", "LU", "B"), eager=lambda xp: _host(xp, _getrs),
     vjp=_vjp_lu_solve, saves=(0, 1, "out"), attrs=("adjoint",),
     grad_name="LinalgLuSolveBackward0",
     doc="X = A^-1 B (A^-T B when adjoint) for A = P L U as lu_factor packs it (getrs); LU, "
         "pivots and B share their batch dims")
_def("linalg_lstsq_solution", "extern", 2, _lstsq_shape,
     _float_pair("torch.linalg.lstsq", "input", "other"),
     eager=lambda xp: _host(xp, lambda np, a, b_, driver, rcond: _gelsy(np, a, b_, driver,
                                                                         rcond, 0)),
     vjp=_vjp_lstsq, saves=(0, 1), attrs=("driver", "rcond"), grad_name="LinalgLstsqBackward0",
     doc="the least-squares solution of A X = B by LAPACK's driver (gels: gelsy's), singular "
         "values or condition below rcond treated as zero; A and B share their batch dims")
_def("linalg_lstsq_rank", "extern", 1, lambda s, a: tuple(s[0][:-2]), lambda d, a: dt.int64,
     eager=lambda xp: _host(xp, lambda np, a, driver, rcond: _gelsy(np, a, None, driver, rcond,
                                                                    1)),
     attrs=("driver", "rcond"), doc="the effective rank LAPACK's lstsq driver finds (int64)")
_def("linalg_solve_triangular", "extern", 2, _solve_shape("linalg.solve_triangular"),
     _float_pair("linalg.solve_triangular"),
     eager=lambda xp: _host(xp, _trsm), vjp=_vjp_solve_triangular, saves=(0, "out"),
     attrs=("upper", "unitriangular"), grad_name="LinalgSolveTriangularBackward0",
     doc="X = A^-1 B reading A's upper or lower triangle (unit diagonal if unitriangular); "
         "A and B share their batch dims")
_def("linalg_matrix_exp", "extern", 1, _square("linalg.matrix_exp"),
     _lapack_dtype("linalg_matrix_exp_cpu"), eager=lambda xp: _host(xp, _expm),
     vjp=_vjp_matrix_exp, saves=(0,), grad_name="LinalgMatrixExpBackward0",
     doc="the matrix exponential of each square matrix (scipy's Pade approximant)")
_def("linalg_ldl_factor_ld", "extern", 1, _square("torch.linalg.ldl_factor_ex"),
     _lapack_dtype("linalg_ldl_factor_ex_cpu"),
     eager=lambda xp: _host(xp, lambda np, a, hermitian, check_errors: _sytrf(
         np, a, 0, hermitian, check_errors)), attrs=("hermitian", "check_errors"),
     vjp=_no_derivative("derivative for aten::linalg_ldl_factor_ex is not implemented"),
     grad_name="LinalgLdlFactorExBackward0",
     doc="LAPACK sytrf's L and D (lower), strict upper triangle zero")
_def("linalg_ldl_pivots", "extern", 1, _ldl_pivots_shape, _int32,
     eager=lambda xp: _host(xp, lambda np, a, hermitian: _sytrf(np, a, 1, hermitian, False)),
     attrs=("hermitian",), doc="sytrf's pivots (1-based; negative pairs mark 2x2 blocks)")
_def("linalg_ldl_info", "extern", 1, lambda s, a: _ldl_pivots_shape(s, a)[:-1], _int32,
     eager=lambda xp: _host(xp, lambda np, a, hermitian: _sytrf(np, a, 2, hermitian, False)),
     attrs=("hermitian",), doc="sytrf's info per matrix (int32, the batch's shape)")
_def("linalg_ldl_solve", "extern", 3, _solve_shape("torch.linalg.ldl_solve"),
     _float_pair("torch.linalg.ldl_solve", "LD", "B"), eager=lambda xp: _host(xp, _sytrs),
     attrs=("hermitian",),
     vjp=_no_derivative("derivative for aten::linalg_ldl_solve is not implemented"),
     grad_name="LinalgLdlSolveBackward0",
     doc="X with A X = B from ldl_factor's LD and pivots (LAPACK sytrs)")
_def("geqrf_a", "extern", 1, _matrix("geqrf"), _lapack_dtype("geqrf_cpu"),
     eager=lambda xp: _host(xp, lambda np, a: _geqrf(np, a, 0)),
     vjp=_no_derivative("the derivative for 'geqrf' is not implemented.", NotImplementedError),
     grad_name="GeqrfBackward0",
     doc="LAPACK geqrf: R above the diagonal, the reflectors' vectors below")
_def("geqrf_tau", "extern", 1, _pivots_shape, _lapack_dtype("geqrf_cpu"),
     eager=lambda xp: _host(xp, lambda np, a: _geqrf(np, a, 1)),
     vjp=_no_derivative("the derivative for 'geqrf' is not implemented.", NotImplementedError),
     grad_name="GeqrfBackward0",
     doc="geqrf's reflector scales tau [..., min(m, n)]")
