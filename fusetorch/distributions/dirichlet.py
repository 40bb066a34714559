"""Dirichlet(concentration): distributions over the simplex of the last dim."""
from __future__ import annotations

from ..nn import functional as NF
from ..tracer import functional as F
from ..tracer.functional_math import xlogy
from ..tracer.sampling_gamma import sample_dirichlet
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import expand_params
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """p(x) = Gamma(sum a) / prod Gamma(a_i) * prod x_i^(a_i - 1); rsample normalizes Gamma
    draws (each implicitly reparameterized)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args=None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(Size(shape[:-1]), Size(shape[-1:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Dirichlet, ("concentration",), batch_shape, _instance,
                             self.event_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return (xlogy(a - 1.0, value).sum(-1) + F.lgamma(a.sum(-1))
                - F.lgamma(a).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        am1 = (self.concentration - 1).clamp(min=0.0)
        mode = am1 / am1.sum(-1, True)
        # every a_i < 1: PyTorch's one-hot of the argmax of 0/0 (NaN everywhere: the first)
        corner = NF.one_hot(mode.argmax(-1), am1.shape[-1]).to(mode.dtype)
        return F.where((self.concentration < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self) -> Tensor:
        a0 = self.concentration.sum(-1, True)
        return self.concentration * (a0 - self.concentration) / (a0.pow(2) * (a0 + 1))

    def entropy(self) -> Tensor:
        a = self.concentration
        k = a.size(-1)
        a0 = a.sum(-1)
        return (F.lgamma(a).sum(-1) - F.lgamma(a0) - (k - a0) * F.digamma(a0)
                - ((a - 1.0) * F.digamma(a)).sum(-1))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - F.lgamma(x.sum(-1))
