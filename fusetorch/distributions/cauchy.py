"""Cauchy(loc, scale)."""
from __future__ import annotations

import math

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import batch_shape_of, expand_params
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """p(x) = 1 / (pi scale (1 + ((x - loc) / scale)^2)); no mean or variance (NaN, inf)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of(self.loc, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Cauchy, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return C.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype,
                      device=self.loc.device)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return C.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype,
                      device=self.loc.device)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps = C.empty(shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - F.log1p(((value - self.loc) / self.scale) ** 2))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return F.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return F.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
