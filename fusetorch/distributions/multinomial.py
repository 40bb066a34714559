"""Multinomial(total_count=1, probs | logits): counts of `total_count` categorical draws."""
from __future__ import annotations

import math

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.autograd import no_grad
from ..tracer.tensor import Size, Tensor
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()) -> Tensor:
        sample_shape = Size(sample_shape)
        with no_grad():
            samples = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
            order = list(range(samples.dim()))
            order.append(order.pop(0))
            samples = samples.permute(*order)
            counts = C.zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype,
                             device=samples.device)
            counts = counts.scatter_add(-1, samples, C.ones_like(samples))
            return counts.to(self.probs.dtype)

    def entropy(self) -> Tensor:
        n = C.tensor(self.total_count)  # (int64: lgamma in the default dtype, as PyTorch)
        term1 = n * self._categorical.entropy() - F.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = F.exp(self._binomial.log_prob(support))
        weights = F.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = F.lgamma(value.sum(-1) + 1)
        log_factorial_xs = F.lgamma(value + 1).sum(-1)
        # a category of probability 0 drawn 0 times contributes 0 (not 0 * -inf)
        logits = F.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
