"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): the distribution of
X = sum_k x_k x_k^T over df draws x_k ~ N(0, Sigma), kept as Sigma's lower Cholesky factor L;
rsample by the Bartlett decomposition (chi-square diagonal, normal lower triangle), as
PyTorch's code, translated."""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import linalg
from ..linalg.factorizations import cholesky_solve
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.functional_shape import einsum, tril_indices
from ..tracer.tensor import Size, Tensor
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .utils import finfo_eps, lazy_property

__all__ = ["Wishart"]

_log_2 = math.log(2)
_Number = (numbers.Number, np.number)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    if not bool(F.gt(x, (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shift = C.arange(p, dtype=x.dtype, device=x.device) / 2
    return F.digamma(x.unsqueeze(-1) - shift.expand(*x.shape, -1)).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    # L^-T from the Cholesky factor of P with rows and columns reversed: L lower-triangular
    Lf = linalg.cholesky(P.flip(-2, -1))
    L_inv = Lf.flip(-2, -1).transpose(-2, -1)
    Id = C.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return linalg.solve_triangular(L_inv, Id, upper=False)


class Wishart(ExponentialFamily):
    """Wishart distribution over positive-definite matrices: mean df * Sigma, df > dim - 1.

    >>> m = Wishart(torch.tensor([2.]), covariance_matrix=torch.eye(2))
    >>> m.sample().shape
    torch.Size([1, 2, 2])
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args=None) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, _Number):
            batch_shape = Size(param.shape[:-2])
            self.df = C.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(F.broadcast_shapes(param.shape[:-2], df.shape))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool(F.le(self.df, event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if bool(F.lt(self.df, event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape) -> Chi2:
        """The Bartlett decomposition's diagonal: chi-square with df - i degrees, i < dim."""
        L = self._unbroadcasted_scale_tril
        steps = C.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(*batch_shape, -1))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._chi2(batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        identity = C.eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return cholesky_solve(identity, L).expand(self._batch_shape + self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = F.where(F.le(factor, 0), math.nan, factor)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (
            V.pow(2) + einsum("...i,...j->...ij", diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=Size()) -> Tensor:
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        noise = chi.clamp(min=finfo_eps(chi.dtype)).diag_embed(dim1=-2, dim2=-1)
        i, j = tril_indices(p, p, offset=-1)
        noise[..., i, j] = C.randn(Size(sample_shape) + self._batch_shape + (p * (p - 1) // 2,),
                                   dtype=noise.dtype, device=noise.device)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=Size(), max_try_correction=None) -> Tensor:
        """A Bartlett-decomposition draw; singular draws (possible for df < dim) are drawn
        again up to `max_try_correction` (10) times, and may still return singular (their
        log_prob is -inf). PyTorch 2.13 tests the draws that are *not* singular here, so warns
        "Singular sample detected." on every draw and draws again; this tests the singular
        ones, as its tracing branch does."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = F.logical_not(self.support.check(sample))
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(sample_shape)
                sample = F.where(is_singular.view(*is_singular.shape,
                                                  *([1] * (sample.dim() - is_singular.dim()))),
                                 sample_new, sample)
                is_singular = F.logical_not(self.support.check(sample))
                if self._batch_shape:
                    is_singular = is_singular.amax(self._batch_dims)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - (nu / 2).mvlgamma(p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
                - cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self) -> Tensor:
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + (nu / 2).mvlgamma(p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
                + nu * p / 2)

    @property
    def _natural_params(self) -> tuple:
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _log_2 * p) + \
            (y + (p + 1) / 2).mvlgamma(p)
