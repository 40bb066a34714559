"""torch.masked (issue 27): reductions, scans and normalisations that ignore the elements where
a boolean `mask=` (broadcast to the input) is False. Each is a composition: the masked-out
elements are replaced by the operation's identity (0 for sums, 1 for products, -inf for
maxima and softmax, NaN for the median, which skips NaNs), then the plain operation runs; so
gradients reach only the elements that count. A slice with nothing unmasked gives what
PyTorch gives: the identity (sum 0, amax -inf), NaN (mean, var, median, softmax) or 0
(normalize). MaskedTensor is not built (PyTorch's prototype)."""
from __future__ import annotations

import math

from ..ir import dtypes as dt
from ..linalg.norms import vector_norm
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer import functional_math as M
from ..tracer import functional_scan as scans
from ..tracer import softmax as _softmax
from ..tracer.tensor import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]


def _input(input: Tensor, fn: str, dtype) -> Tensor:
    D.check_tensor(input, fn, "input", 1)
    return input if dtype is None else D.cast(input, dt.to_dtype(dtype, fn))


def _mask(input: Tensor, mask, fn: str) -> Tensor | None:
    """The mask broadcast to the input's shape (None: nothing masked out)."""
    if mask is None:
        return None
    D.check_tensor(mask, fn, "mask")
    if mask._dtype is not dt.bool_:
        raise ValueError(f"{fn}(): expected mask to be a bool tensor, got "
                         f"{D._torch_name(mask._dtype)}")
    return F.expand(mask, *input.shape) if tuple(mask.shape) != tuple(input.shape) else mask


def _fill(x: Tensor, mask: Tensor | None, value) -> Tensor:
    return x if mask is None else D.elementwise("where", mask, x, value)


def _dims(dim, ndim: int) -> tuple:
    if dim is None:
        return tuple(range(ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _extreme(x: Tensor, largest: bool):
    """The identity of amax (largest) or amin for x's dtype."""
    if x._dtype.is_floating_point:
        return -math.inf if largest else math.inf
    if x._dtype is dt.bool_:
        return not largest
    bits = 8 * x._data.itemsize
    lo, hi = (0, 2 ** bits - 1) if x._dtype is dt.uint8 else (-2 ** (bits - 1),
                                                                 2 ** (bits - 1) - 1)
    return lo if largest else hi


def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    x = _input(input, "sum", dtype)
    return F.sum(_fill(x, _mask(x, mask, "sum"), 0), _dims(dim, x.ndim), keepdim)


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    if dtype is None and (input._dtype is dt.bool_ or input._dtype.category == 1 and
                          input._dtype is not dt.int64):
        dtype = dt.int64  # PyTorch's: integers and bools multiply in int64, as torch.prod
    x = _fill(_input(input, "prod", dtype), _mask(input, mask, "prod"), 1)
    for d in sorted((d % max(x.ndim, 1) for d in _dims(dim, x.ndim)), reverse=True):
        x = F.prod(x, d, keepdim=True)
    dims = _dims(dim, input.ndim)
    if not keepdim and input.ndim:
        x = F.reshape(x, tuple(s for i, s in enumerate(x.shape)
                               if i not in {d % input.ndim for d in dims}))
    return x


def amax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    x = _input(input, "amax", dtype)
    return F.amax(_fill(x, _mask(x, mask, "amax"), _extreme(x, True)), _dims(dim, x.ndim),
                  keepdim)


def amin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    x = _input(input, "amin", dtype)
    return F.amin(_fill(x, _mask(x, mask, "amin"), _extreme(x, False)), _dims(dim, x.ndim),
                  keepdim)


def _arg(name: str, largest: bool, input, dim, keepdim, dtype, mask) -> Tensor:
    x = _input(input, name, dtype)
    r = getattr(F, name)(_fill(x, _mask(x, mask, name), _extreme(x, largest)), dim, keepdim)
    return D.cast(r, x._dtype)  # (PyTorch returns the index in the input's dtype)


def argmax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    return _arg("argmax", True, input, dim, keepdim, dtype, mask)


def argmin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    return _arg("argmin", False, input, dim, keepdim, dtype, mask)


def _count(x: Tensor, mask: Tensor | None, dims: tuple, keepdim: bool):
    if mask is None:
        n = 1
        for d in dims:
            n *= x.shape[d] if x.ndim else 1
        return float(n)
    return F.sum(D.cast(mask, x._dtype), dims, keepdim)


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    x = _input(input, "mean", dtype)
    m = _mask(x, mask, "mean")
    dims = _dims(dim, x.ndim)
    return D.binary("div", F.sum(_fill(x, m, 0), dims, keepdim), _count(x, m, dims, keepdim))


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None,
           mask=None) -> Tensor:
    """The lower median of the unmasked values (NaN for none), as nanmedian of the input with
    NaN where masked out."""
    x = _input(input, "median", dtype)
    if not x._dtype.is_floating_point:
        raise ValueError("masked median expects a floating point input")
    r = scans.nanmedian(_fill(x, _mask(x, mask, "median"), math.nan), dim, keepdim)
    return r.values


def norm(input: Tensor, ord=2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask=None) -> Tensor:
    x = _input(input, "norm", dtype)
    fill = math.inf if ord == -math.inf else 0.0
    return vector_norm(_fill(x, _mask(x, mask, "norm"), fill), ord, _dims(dim, x.ndim), keepdim)


def var(input: Tensor, dim=None, unbiased=None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    x = _input(input, "var", dtype)
    if not x._dtype.is_floating_point:
        x = D.cast(x, dt.default_float())
    if correction is None:
        correction = 0 if unbiased is False else 1
    m = _mask(x, mask, "var")
    dims = _dims(dim, x.ndim)
    count = _count(x, m, dims, True)
    centered = D.binary("sub", x, D.binary("div", F.sum(_fill(x, m, 0), dims, True), count))
    ss = F.sum(_fill(D.binary("mul", centered, centered), m, 0), dims, keepdim)
    n = _count(x, m, dims, keepdim)
    dof = D.binary("sub", n, correction) if isinstance(n, Tensor) else n - correction
    dof = F.clamp(dof, min=0) if isinstance(dof, Tensor) else max(dof, 0.0)
    return D.binary("div", ss, dof)


def std(input: Tensor, dim=None, unbiased=None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    return F.sqrt(var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype,
                      mask=mask))


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
              mask=None) -> Tensor:
    # PyTorch's: the plain logsumexp of the input (integers masked with their minimum), then
    # cast to `dtype`, by default the input's own (an integer input gives an integer result)
    D.check_tensor(input, "logsumexp", "input", 1)
    want = input._dtype if dtype is None else dt.to_dtype(dtype, "logsumexp")
    fill = -math.inf if input._dtype.is_floating_point else _extreme(input, True)
    r = M.logsumexp(_fill(input, _mask(input, mask, "logsumexp"), fill), _dims(dim, input.ndim),
                    keepdim)
    return r if r._dtype is want else D.cast(r, want)


def cumsum(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    x = _input(input, "cumsum", dtype)
    return scans.cumsum(_fill(x, _mask(x, mask, "cumsum"), 0), dim, dtype=x.dtype)  # int32 stays


def cumprod(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    x = _input(input, "cumprod", dtype)
    return scans.cumprod(_fill(x, _mask(x, mask, "cumprod"), 1), dim, dtype=x.dtype)  # int32 stays


def softmax(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    x = _input(input, "softmax", dtype)
    return _softmax.softmax(_fill(x, _mask(x, mask, "softmax"), -math.inf), dim)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    x = _input(input, "log_softmax", dtype)
    return _softmax.log_softmax(_fill(x, _mask(x, mask, "log_softmax"), -math.inf), dim)


def softmin(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    x = _input(input, "softmin", dtype)
    return _softmax.softmax(_fill(D.unary("neg", x), _mask(x, mask, "softmin"), -math.inf), dim)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None,
              mask=None) -> Tensor:
    """input / max(norm, eps) along dim, over the unmasked elements (0 where masked out)."""
    x = _input(input, "normalize", dtype)
    m = _mask(x, mask, "normalize")
    nrm = norm(x, ord, dim, keepdim=True, mask=mask)
    return D.binary("div", _fill(x, m, 0), F.clamp(nrm, min=eps))


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask=None,
              other_mask=None) -> Tensor:
    """logaddexp with masked-out elements of either side counting as -inf."""
    x, y = _input(input, "logaddexp", dtype), _input(other, "logaddexp", dtype)
    return M.logaddexp(_fill(x, _mask(x, input_mask, "logaddexp"), -math.inf),
                       _fill(y, _mask(y, other_mask, "logaddexp"), -math.inf))
