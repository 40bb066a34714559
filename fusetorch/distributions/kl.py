"""kl_divergence(p, q) and register_kl, with closed forms for pairs of the same family."""
from __future__ import annotations

import math

from ..nn import functional as NF
from ..tracer import functional as F
from .bernoulli import Bernoulli
from .categorical import Categorical
from .independent import Independent
from .normal import Normal
from .uniform import Uniform
from .utils import _sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for these two distribution types."""
    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn
    return decorator


def _dispatch(type_p, type_q):
    """The registered pair most specific to (type_p, type_q) along both MROs."""
    best = None
    for i, sp in enumerate(type_p.__mro__):
        for j, sq in enumerate(type_q.__mro__):
            fn = _KL_REGISTRY.get((sp, sq))
            if fn is not None and (best is None or i + j < best[0]):
                best = (i + j, fn)
    return None if best is None else best[1]


def kl_divergence(p, q):
    """KL(p || q), batched over the batch shape."""
    fn = _dispatch(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = F.where((q.probs == 0).expand_as(t), math.inf, t)
    return F.where((p.probs == 0).expand_as(t), 0.0, t).sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (NF.softplus(-q.logits) - NF.softplus(-p.logits))
    t1 = F.where(p.probs == 0, 0.0, F.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (NF.softplus(q.logits) - NF.softplus(p.logits))
    t2 = F.where(p.probs == 1, 0.0, F.where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = F.logical_or(q.low > p.low, q.high < p.high)
    return F.where(outside, math.inf, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
