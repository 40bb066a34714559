"""Gumbel(loc, scale)."""
from __future__ import annotations

import math

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Size, Tensor
from ..runtime.device import NP_DTYPES
from . import constraints
from ._params import batch_shape_of, expand_params
from .distribution import Distribution
from .utils import broadcast_all, finfo_eps

__all__ = ["Gumbel"]

_EULER = 0.57721566490153286060


class Gumbel(Distribution):
    """p(x) = exp(-(z + exp(-z))) / scale, z = (x - loc) / scale; rsample is
    loc - scale log(-log u) (PyTorch's transforms of a uniform draw)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of(self.loc, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Gumbel, ("loc", "scale"), batch_shape, _instance)

    def rsample(self, sample_shape=Size()) -> Tensor:
        import ml_dtypes
        shape = tuple(self._extended_shape(sample_shape))
        tiny = float(ml_dtypes.finfo(NP_DTYPES[self.loc.dtype]).tiny)
        u = C.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(
            tiny, 1 - finfo_eps(self.loc.dtype))
        return self.loc - self.scale * F.log(-F.log(u))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value: Tensor) -> Tensor:
        return F.exp(-F.exp(-(value - self.loc) / self.scale))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc - self.scale * F.log(-F.log(value))

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER)
