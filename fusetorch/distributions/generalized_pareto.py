"""GeneralizedPareto(loc, scale, concentration): survival (1 + xi z)^(-1/xi), z = (x - loc) /
scale, exp(-z) at xi = 0. Concentrations `isclose` to 0 take the exponential branch, the
others a safe stand-in there, so `where` never back-propagates a NaN (TFP's form, as
PyTorch's)."""
from __future__ import annotations

import math

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.functional_math import isclose
from ..tracer.functional_shape import broadcast_to
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import batch_shape_of, expand_params
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution: Exponential at loc = 0, concentration = 0;
    Pareto at concentration > 0, loc = scale / concentration; Uniform at concentration = -1."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(batch_shape_of(self.loc, loc, scale, concentration),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, GeneralizedPareto, ("loc", "scale", "concentration"),
                             batch_shape, _instance)

    def _eq_zero_and_safe(self) -> tuple:
        c = self.concentration
        eq_zero = isclose(c, C.zeros_like(c))
        return eq_zero, F.where(eq_zero, C.ones_like(c), c)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return self.icdf(C.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._eq_zero_and_safe()
        y = 1 / safe + C.ones_like(z)
        nonzero = F.where(y == 0, y, y * F.log1p(safe * z))
        return -self.scale.log() - F.where(eq_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._eq_zero_and_safe()
        return F.where(eq_zero, -z, -F.log1p(safe * z) / safe)

    def log_cdf(self, value: Tensor) -> Tensor:
        return F.log1p(-F.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return F.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero, safe = self._eq_zero_and_safe()
        logu = F.log1p(-value)
        nonzero = self.loc + self.scale / safe * F.expm1(-safe * logu)
        return F.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self) -> Tensor:
        c = self.concentration
        valid = c < 1
        safe = F.where(valid, c, C.full_like(c, 0.5))
        return F.where(valid, self.loc + self.scale / (1 - safe), C.full_like(c, math.nan))

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        valid = c < 0.5
        safe = F.where(valid, c, C.full_like(c, 0.25))
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return F.where(valid, result, C.full_like(c, math.nan))

    def entropy(self) -> Tensor:
        return broadcast_to(F.log(self.scale) + self.concentration + 1, tuple(self._batch_shape))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = F.where(self.concentration < 0, lower - self.scale / self.concentration,
                        C.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
