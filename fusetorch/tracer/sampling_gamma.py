"""Gamma draws with a gradient: what Gamma, Chi2, Beta, Dirichlet and StudentT's `rsample` use.

A Gamma(alpha, 1) draw is made on the host by numpy (a graph break when compiling, as
`poisson`). Its gradient is the implicit reparameterization one (Figurnov et al. 2018): holding
the draw's quantile u = P(alpha, x) fixed, dx/dalpha = -dP/dalpha / p(x; alpha), with P the
regularized lower incomplete gamma function (scipy's `gammainc`; its alpha-derivative by
Richardson-extrapolated central differences, ~1e-10 relative) and p the density. The result is
`x + (alpha - alpha.detach()) * dx/dalpha`: the value is the draw exactly, and backward sees
dx/dalpha. PyTorch's `_standard_gamma_grad` is an approximation of the same derivative.
"""
from __future__ import annotations

import numpy as np

from . import creation as C
from . import dispatch as D
from .autograd import label
from .sampling import _check_float, _host_break, _np_gen
from .tensor import Tensor
from ..runtime.device import NP_DTYPES


def _dx_dalpha(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    from scipy import special
    h = np.maximum(a, 1e-300) * 1e-3

    def central(step):
        return (special.gammainc(a + step, x) - special.gammainc(a - step, x)) / (2 * step)
    dp = (4 * central(h / 2) - central(h)) / 3
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_pdf = (a - 1) * np.log(x) - x - special.gammaln(a)
        g = -dp / np.exp(log_pdf)
    return np.nan_to_num(np.where(x > 0, g, 0.0), nan=0.0, posinf=0.0, neginf=0.0)


def standard_gamma(concentration: Tensor, generator=None) -> Tensor:
    """Gamma(concentration, 1) draws, one per element, differentiable in `concentration`."""
    D.check_tensor(concentration, "_standard_gamma", "self", 1)
    _check_float(concentration, "gamma_cpu")
    _host_break("_standard_gamma")
    a = concentration.detach()._host().astype(np.float64)
    if not np.all(a >= 0):  # numpy refuses these; PyTorch gives NaN for NaN
        a = np.where(a >= 0, a, np.nan)
    x = _np_gen(generator).standard_gamma(np.nan_to_num(a, nan=1.0))
    x = np.where(np.isnan(a), np.nan, x)
    np_dtype = NP_DTYPES[concentration._dtype]
    out = C._const(x.astype(np_dtype), concentration._dtype, concentration._be)
    if D.GRAD_ENABLED and concentration.requires_grad:
        slope = C._const(_dx_dalpha(a, x).astype(np_dtype), concentration._dtype,
                         concentration._be)
        out = out + (concentration - concentration.detach()) * slope
        label(out, "StandardGammaBackward0", concentration)
    return out


def sample_dirichlet(concentration: Tensor, generator=None) -> Tensor:
    """Dirichlet draws over the last dim: normalized Gamma draws (differentiable through both)."""
    g = standard_gamma(concentration, generator)
    return g / g.sum(-1, keepdim=True)
