"""Weibull(scale, concentration): scale * Exponential(1) ** (1 / concentration)."""
from __future__ import annotations

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import constraints
from .exponential import Exponential
from .gumbel import _EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(C.ones_like(self.scale), validate_args=validate_args),
                         [PowerTransform(exponent=self.concentration_reciprocal),
                          AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        shape = tuple(batch_shape)
        new.scale = self.scale.expand(shape)
        new.concentration = self.concentration.expand(shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(
            new, self.base_dist.expand(shape),
            [PowerTransform(exponent=new.concentration_reciprocal),
             AffineTransform(loc=0, scale=new.scale)], validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * F.exp(F.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) \
            ** self.concentration.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (F.exp(F.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - F.exp(2 * F.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self) -> Tensor:
        return (_EULER * (1 - self.concentration_reciprocal)
                + F.log(self.scale * self.concentration_reciprocal) + 1)
