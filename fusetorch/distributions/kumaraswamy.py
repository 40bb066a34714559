"""Kumaraswamy(concentration1, concentration0): (1 - U^(1/b))^(1/a), U uniform."""
from __future__ import annotations

import math

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import constraints
from .gumbel import _EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    arg1 = 1 + n / a
    return b * F.exp(F.lgamma(arg1) + F.lgamma(b) - F.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(C.full_like(self.concentration0, 0), C.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        super().__init__(base, [PowerTransform(exponent=self.concentration0.reciprocal()),
                                AffineTransform(loc=1.0, scale=-1.0),
                                PowerTransform(exponent=self.concentration1.reciprocal())],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return F.where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = F.digamma(self.concentration0 + 1) + _EULER
        return t0 + t1 * h0 - F.log(self.concentration1) - F.log(self.concentration0)
