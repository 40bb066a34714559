"""ContinuousBernoulli(probs=... or logits=...): p(x) = C(probs) probs^x (1 - probs)^(1 - x)
on [0, 1]. Near probs = 1/2 the closed forms divide 0 by 0, so inside `lims` the normaliser,
mean and variance are PyTorch's Taylor expansions and the cdf/icdf are the uniform's."""
from __future__ import annotations

import math
import numbers

from ..nn import functional as NF
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.autograd import no_grad
from ..tracer.tensor import Size, Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli of Loaiza-Ganem and Cunningham (2019), supported on [0, 1]."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims: tuple = (0.499, 0.501),
                 validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            # (PyTorch checks here, before clamping hides the bad values, whenever
            # validate_args is given at all, even False)
            if validate_args is not None and \
                    not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        # (inside the region the closed forms are evaluated at lims[0], a finite stand-in, so
        # that `where` never back-propagates a NaN from the branch it drops)
        return F.where(self._outside_unstable_region(), self.probs,
                       C.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below = F.where(cut <= 0.5, cut, C.zeros_like(cut))
        above = F.where(cut >= 0.5, cut, C.ones_like(cut))
        log_norm = F.log(F.abs(F.log1p(-cut) - F.log(cut))) - F.where(
            cut <= 0.5, F.log1p(-2.0 * below), F.log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return F.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (F.log1p(-cut) - F.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return F.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return F.sqrt(self.variance)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        vs = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) \
            + 1.0 / (F.log1p(-cut) - F.log(cut)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return F.where(self._outside_unstable_region(), vs, taylor)

    def sample(self, sample_shape=Size()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = C.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -NF.binary_cross_entropy_with_logits(logits, value, reduction="none") \
            + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = F.where(self._outside_unstable_region(), cdfs, value)
        return F.where(value <= 0.0, C.zeros_like(value),
                       F.where(value >= 1.0, C.ones_like(value), unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        return F.where(self._outside_unstable_region(),
                       (F.log1p(-cut + value * (2.0 * cut - 1.0)) - F.log1p(-cut))
                       / (F.log(cut) - F.log1p(-cut)),
                       value)

    def entropy(self) -> Tensor:
        log_p0 = F.log1p(-self.probs)
        log_p1 = F.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = F.where(outside, x, C.full_like(x, self._lims[0] - 0.5))
        log_norm = F.log(F.abs(F.expm1(cut))) - F.log(F.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return F.where(outside, log_norm, taylor)
