"""Categorical(probs=... or logits=...) over the last dim's categories."""
from __future__ import annotations

import math

from ..ir import dtypes as dt
from ..ir.shapes import broadcast_shapes
from ..nn import functional as NF
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.autograd import no_grad
from ..tracer.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import finfo_min, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Indices 0..K-1 with probabilities `probs` (normalised along the last dim) or
    softmax(`logits`). Samples are Gumbel-max draws (argmax of log p plus Gumbel noise made
    from uniform draws), so they compile; a category of probability 0 is never drawn."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = NF.log_softmax(logits, dim=-1)  # logits - logsumexp(logits)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch = self._param.size()[:-1] if self._param.ndimension() > 1 else Size()
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(param_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(param_shape)
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return C.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                      device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return C.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                      device=self.probs.device)

    def sample(self, sample_shape=Size()) -> Tensor:
        with no_grad():
            # log(probs), not the clamped logits: a zero probability must stay -inf
            logp = F.log(self.probs) if "probs" in self.__dict__ else self.logits
            shape = tuple(sample_shape) + tuple(logp.shape)
            u = C.rand(shape, dtype=logp.dtype, device=logp.device)
            gumbel = F.neg(F.log(F.neg(F.log(u))))
            return F.argmax(logp + gumbel, dim=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = broadcast_shapes(tuple(value.shape), tuple(self.logits.shape))
        value = value.expand(shape)[..., :1]
        log_pmf = self.logits.expand(shape)
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = F.clamp(self.logits, min=finfo_min(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = C.arange(self._num_events, dtype=dt.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
