"""Statistics and differences of PyTorch's catalogue (issue 27), composed from primitives:
`diff isin cov corrcoef var_mean std_mean aminmax argwhere`. Each follows PyTorch's own
algorithm (ATen's composite), so values, promotion, errors and gradients agree."""
from __future__ import annotations

import warnings

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from . import dispatch as D
from . import functional as F
from .dispatch import binary, cast, elementwise
from .functional import _grad_name, write_out
from .out_args import exact_dtype, out_type
from .functional_scan import _return_type
from .tensor import Tensor
from .numpy_names import numpy_names

ReturnAminmax = _return_type("aminmax", ("min", "max"))


@numpy_names
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along `dim`, after concatenating `prepend` and `append`
    (bools: `!=`, as PyTorch)."""
    D.check_tensor(input, "diff", "input", 1)
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"diff(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = norm_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    for t in parts:
        D.check_tensor(t, "diff", "prepend" if t is prepend else "append")
        if t.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
    if n == 0:  # PyTorch: a copy of input, prepend and append unused
        return input.clone()
    x = F.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = F.narrow(x, d, 1, size - 1), F.narrow(x, d, 0, size - 1)
        x = binary("ne", hi, lo) if x._dtype is dt.bool_ else binary("sub", hi, lo)
    return x


# above this many test elements isin sorts them and searches (n log m), below it compares every
# pair (n m, but one fused kernel): PyTorch switches at about the same point
_ISIN_PAIRWISE = 16


def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element is one of `test_elements` (either may be a scalar), in their
    promoted dtype."""
    from .functional_scan import searchsorted, sort
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        D.check_tensor(elements, "isin", "elements", 1)
    if not isinstance(elements, Tensor):
        elements = F._tensor(elements, test_elements)
    if not isinstance(test_elements, Tensor):
        test_elements = F._tensor(test_elements, elements)
    flat, tests = F.reshape(elements, (-1,)), F.reshape(test_elements, (-1,))
    if tests.shape[0] <= _ISIN_PAIRWISE or flat.shape[0] == 0:
        found = F.any(binary("eq", F.unsqueeze(flat, 1), F.unsqueeze(tests, 0)), 1)
    else:
        compute, _ = D.promote_args("eq", [flat, tests])
        flat, ordered = cast(flat, compute), sort(cast(tests, compute)).values
        at = F.clamp(searchsorted(ordered, flat), max=ordered.shape[0] - 1)
        found = binary("eq", F.gather(ordered, 0, at), flat)
    found = F.reshape(found, tuple(elements.shape))
    return elementwise("logical_not", found) if invert else found


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance of the rows (variables) over the columns (observations), with frequency
    and observation weights, as numpy.cov and PyTorch."""
    D.check_tensor(input, "cov", "input", 1)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = F.reshape(input, (1, -1)) if input.ndim < 2 else input
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        D.check_tensor(fweights, "cov", "fweights")
        if fweights.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but "
                               f"got fweights with {fweights.ndim} dimensions")
        if fweights._dtype.is_floating_point or fweights._dtype is dt.bool_:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {D._torch_name(fweights._dtype)} dtype")
        w = fweights = _check_weights("fweights", fweights, n_obs)
    if aweights is not None:
        D.check_tensor(aweights, "cov", "aweights")
        if aweights.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but "
                               f"got aweights with {aweights.ndim} dimensions")
        if not aweights._dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {D._torch_name(aweights._dtype)} dtype")
        aweights = _check_weights("aweights", aweights, n_obs)
        w = aweights if w is None else binary("mul", w, aweights)
    if not x._dtype.is_floating_point:
        x = cast(x, dt.default_float())
    if w is None:
        w_sum = float(n_obs)
        avg = F.mean(x, 1)
        norm = w_sum - correction
    else:
        w_sum = F.sum(w)
        avg = binary("div", F.sum(binary("mul", x, w), 1), w_sum)
        if aweights is None:
            norm = binary("sub", w_sum, correction)
        else:
            norm = binary("sub", w_sum, binary("div", binary("mul", correction, F.sum(
                binary("mul", w, aweights))), w_sum))
    centered = binary("sub", x, F.unsqueeze(avg, 1))
    xw = centered if w is None else binary("mul", centered, w)
    norm = _clamped_norm(norm)
    c = binary("div", F.mm(centered, F.t(xw)), norm)
    return F.squeeze(c) if input.ndim < 2 or c.shape == (1, 1) else c


def _check_weights(name: str, w: Tensor, n_obs: int) -> Tensor:
    """`w`, checked (its values in the graph, so compiled calls check them too)."""
    if w.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n_obs}")
    return D.check_values(w, f"cov(): {name} cannot be negative", lo=0)


def _clamped_norm(norm):
    """PyTorch's degrees of freedom: at most zero warns, and divides by zero."""
    if isinstance(norm, Tensor):
        if norm._data.size and not D.RECORDER and float(norm._data.reshape(())) <= 0:
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the number of observations.", UserWarning, stacklevel=3)
        return F.clamp(norm, min=0)
    if norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=3)
        return 0.0
    return float(norm)


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the rows, clipped to [-1, 1] as PyTorch."""
    D.check_tensor(input, "corrcoef", "input", 1)
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:  # one variable: c / c (1, or NaN for a constant one)
        return binary("div", c, c)
    sd = F.sqrt(_diag(c))
    c = binary("div", c, F.unsqueeze(sd, 1))
    c = binary("div", c, F.unsqueeze(sd, 0))
    return F.clamp(c, -1, 1)


def _diag(c: Tensor) -> Tensor:
    from .functional_shape import diagonal
    return diagonal(c)


def _var_args(input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # var_mean(x, unbiased)
        dim, unbiased = None, dim
    return dim, unbiased, keepdim, correction


@numpy_names
@_grad_name("VarMeanBackward0")
def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """(var, mean) over `dim`, as a plain tuple (PyTorch's)."""
    D.check_tensor(input, "var_mean", "input", 1)
    dim, unbiased, keepdim, correction = _var_args(input, dim, unbiased, keepdim, correction)
    v = F.var(input, dim, unbiased, keepdim, correction=correction, _warn_as="var_mean")
    return v, F.mean(input, dim, keepdim)


@numpy_names
@_grad_name("StdMeanBackward0")
def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """(std, mean) over `dim`, as a plain tuple (PyTorch's)."""
    D.check_tensor(input, "std_mean", "input", 1)
    dim, unbiased, keepdim, correction = _var_args(input, dim, unbiased, keepdim, correction)
    s = F.std(input, dim, unbiased, keepdim, correction=correction, _warn_as="std_mean")
    return s, F.mean(input, dim, keepdim)


@numpy_names
@_grad_name("AminmaxBackward0")
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False, out=None):
    """(min, max) over `dim` or the whole tensor, a `torch.return_types.aminmax`."""
    D.check_tensor(input, "aminmax", "input", 1)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(input.ndim))
    else:
        d = norm_dim(dim, max(input.ndim, 1))
        if input.ndim and input.shape[d] == 0:  # PyTorch's type and text for a given dim
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,) if input.ndim else ()
    lo, hi = F.amin(input, dims, keepdim), F.amax(input, dims, keepdim)
    if out is not None:
        for o in out:  # PyTorch's aminmax out= does not cast: both exactly the input's dtype
            exact_dtype(o, input._dtype)
        write_out(lo, out[0])
        write_out(hi, out[1])
        return out_type(ReturnAminmax)(out[0], out[1])  # torch.return_types.aminmax_out
    return ReturnAminmax(lo, hi)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each (nonzero's layout)."""
    D.check_tensor(input, "argwhere", "input", 1)
    return F.nonzero(input)


PUBLIC = ("diff", "isin", "cov", "corrcoef", "var_mean", "std_mean", "aminmax", "argwhere")
# Tensor methods (PyTorch has no Tensor.isin, .var_mean or .std_mean)
METHODS = ("diff", "cov", "corrcoef", "aminmax", "argwhere")
