"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril), kept as its
lower Cholesky factor L (cov = L L^T): rsample is loc + L eps, log_prob solves with L."""
from __future__ import annotations

import math

from .. import linalg
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """x^T (L L^T)^-1 x over the last dim, L broadcast against x's batch dims."""
    shape = F.broadcast_shapes(L.shape[:-2], x.shape[:-1])
    L = L.expand(*shape, *L.shape[-2:])
    x = x.expand(*shape, x.shape[-1])
    y = linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return y.pow(2).sum(-1)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution with mean `loc` (at least 1-d: the last dim is the
    event) and exactly one of a covariance matrix, a precision matrix or the covariance's
    lower Cholesky factor."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args=None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) \
                + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        given = next(m for m in (scale_tril, covariance_matrix, precision_matrix)
                     if m is not None)
        name = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                if covariance_matrix is not None else "precision_matrix")
        if given.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = F.broadcast_shapes(given.shape[:-2], loc.shape[:-1])
        setattr(self, name, given.expand(*batch_shape, -1, -1))
        self.loc = loc.expand(*batch_shape, -1)
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = linalg.cholesky(linalg.inv(precision_matrix))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(
            self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return linalg.inv(self.covariance_matrix)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = C.randn(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
