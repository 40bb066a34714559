"""StudentT(df, loc=0, scale=1)."""
from __future__ import annotations

import math

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import batch_shape_of, expand_params
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom; rsample is loc + scale * X / sqrt(Z / df), X
    standard normal, Z ~ Chi2(df)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(batch_shape_of(self.df, df, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = expand_params(self, StudentT, ("df", "loc", "scale"), batch_shape, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return F.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return F.where(df > 2, finite, F.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        x = C.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * F.rsqrt(z / self.df))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + F.lgamma(0.5 * self.df) - F.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * F.log1p(y ** 2.0 / self.df) - z

    def entropy(self) -> Tensor:
        lbeta = (F.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - F.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log() + 0.5 * (self.df + 1)
                * (F.digamma(0.5 * (self.df + 1)) - F.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
