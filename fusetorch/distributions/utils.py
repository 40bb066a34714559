"""Helpers of torch.distributions.utils: broadcast_all, probs/logits conversions,
lazy_property."""
from __future__ import annotations

import numbers

import ml_dtypes
import numpy as np

from ..ir import dtypes as dt
from ..ir.shapes import broadcast_many
from ..runtime.device import NP_DTYPES
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from ..nn import functional as NF

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "tril_matrix_to_vec", "vec_to_tril_matrix",
           "probs_to_logits"]

_Number = (numbers.Number, np.number)


def broadcast_all(*values) -> tuple:
    """Tensors broadcast to one shape; numbers become tensors of the first tensor's dtype and
    device (the default dtype when all are numbers)."""
    if not all(isinstance(v, (Tensor,) + _Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    first = next((v for v in values if isinstance(v, Tensor)), None)
    opts = ({"dtype": first.dtype, "device": first.device} if first is not None
            else {"dtype": dt.default_float()})
    ts = [v if isinstance(v, Tensor) else C.tensor(v, **opts) for v in values]
    shape = broadcast_many([tuple(t.shape) for t in ts])
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in ts)


def finfo_eps(d: dt.DType) -> float:
    return float(ml_dtypes.finfo(NP_DTYPES[d]).eps)  # numpy's knows no bfloat16


def finfo_min(d: dt.DType) -> float:
    return float(ml_dtypes.finfo(NP_DTYPES[d]).min)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into [eps, 1 - eps] of their dtype."""
    eps = finfo_eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps = clamp_probs(probs)
    if is_binary:
        return F.log(ps) - F.log1p(-ps)
    return F.log(ps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return F.sigmoid(logits)
    return NF.softmax(logits, dim=-1)


def _tril_mask(n: int, diag: int, device) -> Tensor:
    arange = C.arange(n, device=device)
    return F.lt(arange, arange.view(-1, 1) + (diag + 1))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle of `mat` from diagonal `diag` down, row by row, as its last dim.

    >>> tril_matrix_to_vec(torch.arange(9.).view(3, 3), diag=-1)
    tensor([3., 6., 7.])
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of `tril_matrix_to_vec`: a square matrix, zero outside its lower triangle."""
    # +ve root of D**2 + (1+2*diag)*D - |diag| * (diag+1) - 2*vec.shape[-1] = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                            + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > finfo_eps(vec.dtype):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum over the `dim` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


class lazy_property:
    """A property computed on first access and then stored on the instance (so `probs` and
    `logits` are computed from each other only when asked for)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
