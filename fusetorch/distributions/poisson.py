"""Poisson(rate)."""
from __future__ import annotations

from ..tracer import functional as F
from ..tracer.autograd import no_grad
from ..tracer.functional_math import xlogy
from ..tracer.sampling import poisson
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import batch_shape_of, expand_params
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """P(k) = rate^k exp(-rate) / k!."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch_shape_of(self.rate, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Poisson, ("rate",), batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return poisson(self.rate.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - F.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple:
        return (F.log(self.rate),)

    def _log_normalizer(self, x):
        return F.exp(x)
