"""Laplace(loc, scale)."""
from __future__ import annotations


from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import batch_shape_of, expand_params
from .distribution import Distribution
from .utils import broadcast_all, finfo_eps

__all__ = ["Laplace"]


class Laplace(Distribution):
    """p(x) = exp(-|x - loc| / scale) / (2 scale); rsample inverts the CDF at a uniform draw."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of(self.loc, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Laplace, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps = finfo_eps(self.loc.dtype)
        u = C.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * F.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -F.log(2 * self.scale) - F.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * F.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * F.log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + F.log(2 * self.scale)
