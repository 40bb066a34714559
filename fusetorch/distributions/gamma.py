"""Gamma(concentration, rate)."""
from __future__ import annotations

from ..tracer import functional as F
from ..tracer.functional_math import xlogy
from ..tracer.functional_more import igamma
from ..tracer.sampling_gamma import standard_gamma
from ..tracer.tensor import Size, Tensor
from ..runtime.device import NP_DTYPES
from . import constraints
from ._params import batch_shape_of, expand_params
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


def _tiny(d) -> float:
    import ml_dtypes
    return float(ml_dtypes.finfo(NP_DTYPES[d]).tiny)


class Gamma(ExponentialFamily):
    """p(x) = rate^a x^(a-1) exp(-rate x) / Gamma(a), a = concentration; rsample is a
    Gamma(a, 1) draw (implicitly reparameterized, tracer/sampling_gamma.py) over rate."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch_shape_of(self.concentration, concentration, rate),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Gamma, ("concentration", "rate"), batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=_tiny(value.dtype))  # (PyTorch's clamp, away from 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - F.lgamma(self.concentration))

    def entropy(self) -> Tensor:
        return (self.concentration - F.log(self.rate) + F.lgamma(self.concentration)
                + (1.0 - self.concentration) * F.digamma(self.concentration))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return F.lgamma(x + 1) + (x + 1) * F.log(-y.reciprocal())

    _mean_carrier_measure = 0
