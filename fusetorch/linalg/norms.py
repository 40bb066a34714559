"""Norms and distances: torch.linalg.vector_norm / matrix_norm / norm, the deprecated
torch.norm (and Tensor.norm), torch.dist and torch.cdist, composed of reductions and the SVD
primitive (spectral and nuclear norms)."""
from __future__ import annotations

import math

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from ..tracer import autograd as _A
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer.functional import write_out
from ..tracer.tensor import Tensor
from ..tracer import autocast as _ac


def _dims(dim, ndim: int) -> tuple:
    if dim is None:
        return tuple(range(ndim))
    return tuple(norm_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim))


def _squeeze_dims(x: Tensor, dims: tuple) -> Tensor:
    for d in sorted(dims, reverse=True):
        x = F.squeeze(x, d)
    return x


def _zero_safe(fn, t: Tensor, zero_value: float) -> Tensor:
    """fn(t), with a zero gradient where t == 0 (PyTorch's subgradient of a norm at 0, where the
    chain rule would give 0 * inf): fn sees 1 there and the result is `zero_value`, fn(0)."""
    at_zero = D.binary("eq", t, 0)
    inner = fn(D.elementwise("where", at_zero, 1.0, t))
    return D.elementwise("where", at_zero, zero_value, inner)


def p_norm(x: Tensor, ord, dim, keepdim: bool = False) -> Tensor:
    """The `ord`-norm of float `x` (at least 1-d) over `dim` (an int or a tuple), with PyTorch's
    gradient: 0 where the chain rule meets 0 * inf (an all-zero vector, or a zero element for
    ord < 1). The guards are taken only where a gradient can be asked for."""
    if x._dtype in (dt.float16, dt.bfloat16) and ord not in (math.inf, -math.inf):
        # PyTorch's norm kernels accumulate half precision in float32 and round once: the sum
        # of powers may pass float16's range (65504) where the norm does not
        return D.cast(p_norm(D.cast(x, dt.float32), ord, dim, keepdim), x._dtype)
    dims = _dims(dim, x.ndim)
    a = D.unary("abs", x)
    if ord == math.inf:
        return F.amax(a, dims, keepdim)
    if ord == -math.inf:
        return F.amin(a, dims, keepdim)
    if ord == 1:
        return F.sum(a, dims, keepdim)
    guarded = D.RECORDER is not None or (D.GRAD_ENABLED and D.needs_grad(x))
    if ord == 0:
        nonzero = D.binary("ne", x, 0)
        if not guarded:
            return F.sum(D.cast(nonzero, x._dtype), dims, keepdim)
        # a count is differentiable with a zero gradient (PyTorch's backward runs, and
        # leaves nothing); x * 0 is 0 exactly where it is taken, so values do not change
        return F.sum(D.elementwise("where", nonzero, 1, D.binary("mul", x, 0)), dims, keepdim)
    if ord == 2:
        s = F.sum(D.binary("mul", x, x), dims, keepdim)
        return _zero_safe(lambda v: D.unary("sqrt", v), s, 0.0) if guarded else D.unary("sqrt", s)
    if not guarded:
        return D.binary("pow", F.sum(D.binary("pow", a, ord), dims, keepdim), 1.0 / ord)
    # PyTorch masks |x|^(p-1) where x == 0 and 1 / norm^(p-1) where the norm is 0; a zero
    # element adds 0 (ord > 0) or inf (ord < 0) to the sum
    at_zero = 0.0 if ord > 0 else math.inf
    s = F.sum(_zero_safe(lambda v: D.binary("pow", v, ord), a, at_zero), dims, keepdim)
    root = lambda v: D.binary("pow", v, 1.0 / ord)  # noqa: E731
    return _zero_safe(root, s, at_zero) if ord > 1 else root(s)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None,
                out=None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over `dim` (all dims by default); inf/-inf are max/min of |x|,
    0 counts the non-zeros."""
    D.check_tensor(x, "linalg.vector_norm", "input", 1)
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not str")
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dt.SCALAR_TYPE_NAMES[x._dtype.name]}")
    if dtype is not None:
        x = D.cast(x, dtype)
    if x.ndim == 0:
        _dims(dim, 0)  # a 0-d input takes dim 0 or -1, and its norm is 0-d with keepdim too
        return write_out(F.reshape(p_norm(F.reshape(x, (1,)), ord, (0,), False), ()), out)
    return write_out(p_norm(x, ord, dim, keepdim), out)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None,
                out=None) -> Tensor:
    """'fro', 'nuc', +-2 (extreme singular values), +-1 (column sums), +-inf (row sums)."""
    D.check_tensor(A, "linalg.matrix_norm", "A", 1)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if dtype is not None:
        A = D.cast(A, dtype)
    d0, d1 = (norm_dim(d, A.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    if ord == "fro":
        return write_out(vector_norm(A, 2, (d0, d1), keepdim), out)
    if ord in ("nuc", 2, -2):
        # move the two dims last, reduce the singular values, then put kept dims back
        rest = [i for i in range(A.ndim) if i not in (d0, d1)]
        s = D.apply("linalg_svd_s", [F.permute(A, *rest, d0, d1)], {"full_matrices": False})
        # (the largest of no singular values is 0, as PyTorch's; a norm is never negative)
        r = F.sum(s, -1) if ord == "nuc" or ord == 2 and s.shape[-1] == 0 else \
            F.amax(s, -1) if ord == 2 else F.amin(s, -1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = F.unsqueeze(r, d)
        return write_out(r, out)
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
    s = F.sum(D.unary("abs", A), summed, keepdim=True)
    if ord > 0 and s.shape[other] == 0:  # the largest of no sums is 0, as PyTorch's
        r = F.sum(s, other, keepdim=True)
    else:
        r = F.amax(s, other, keepdim=True) if ord > 0 else F.amin(s, other, keepdim=True)
    return write_out(r if keepdim else _squeeze_dims(r, (d0, d1)), out)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None,
         out=None) -> Tensor:
    """torch.linalg.norm: a vector norm for 1 dim (or a flattened input when ord is None), a
    matrix norm for 2 dims."""
    D.check_tensor(A, "linalg.norm", "A", 1)
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype, out=out)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if dim is None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


def torch_norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None,
               dtype=None) -> Tensor:
    """torch.norm (deprecated, still common): 'fro' over any dims is the 2-norm of the entries;
    'nuc' needs two dims; a number is a vector norm over `dim` (all entries by default)."""
    if isinstance(dim, int):
        dim = (dim,)
    if p == "fro" or p is None:
        return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
    if p == "nuc":
        return matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim,
                           dtype=dtype, out=out)
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    D.check_tensor(input, "dist", "input", 1)
    D.check_tensor(other, "dist", "other", 2)
    out = vector_norm(D.binary("sub", input, other), p)
    if D.GRAD_ENABLED and out._requires_grad:
        _A.label(out, "DistBackward0", input, other)  # PyTorch's grad_fn for the composite
    return out


@_ac.op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    """Pairwise p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M]."""
    D.check_tensor(x1, "cdist", "x1", 1)
    D.check_tensor(x2, "cdist", "x2", 2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = D.binary("sub", F.unsqueeze(x1, -2), F.unsqueeze(x2, -3))
    return vector_norm(diff, p, -1)
