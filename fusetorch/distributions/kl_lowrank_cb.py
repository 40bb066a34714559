"""The closed-form KLs PyTorch registers for ContinuousBernoulli and LowRankMultivariateNormal
(infinite where p's support leaves q's)."""
from __future__ import annotations

import math

from .. import linalg
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.functional_shape import diag_embed
from .beta import Beta
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .kl import register_kl
from .laplace import Laplace
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                          _batch_lowrank_mahalanobis)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .pareto import Pareto
from .uniform import Uniform


def _infinite_like(t):
    return C.full_like(t, math.inf)


def _batch_trace_XXT(X):
    """trace(X X^T) over the last two dims."""
    return X.pow(2).sum((-2, -1))


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + F.log1p(-p.probs)
            - q._cont_bern_log_norm() - F.log1p(-q.probs))


@register_kl(ContinuousBernoulli, Pareto)
def _kl_cb_infinity(p, q):
    return _infinite_like(p.probs)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - F.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + F.log(q.scale)
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # (PyTorch's test, kept as it is: infinite unless q covers [0, 1] strictly inside)
    outside = (q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound)
    return F.where(outside, C.ones_like(result) * math.inf, result)


def _cross_term(p, q):
    """-H(p) - E_p[log q's unnormalised density] for a q = ContinuousBernoulli."""
    return -p.entropy() - p.mean * q.logits - F.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return _cross_term(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    result = _cross_term(p, q)
    outside = (p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound)
    return F.where(outside, C.ones_like(result) * math.inf, result)


for _p, _param in ((Exponential, "rate"), (Gamma, "concentration"), (Gumbel, "loc"),
                   (Laplace, "loc"), (Normal, "loc"), (Pareto, "scale")):
    register_kl(_p, ContinuousBernoulli)(
        lambda p, q, _param=_param: _infinite_like(getattr(p, _param)))


def _check_events(p, q, low_rank_both: bool) -> None:
    if p.event_shape != q.event_shape:
        kind = "Low Rank" if low_rank_both else "(Low Rank)"
        raise ValueError(f"KL-divergence between two {kind} Multivariate Normals with "
                         "different event shapes cannot be computed")


def _q_woodbury_A(q):
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


def _q_terms(p, q):
    logdet_q = _batch_lowrank_logdet(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                     q._capacitance_tril)
    m = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                   q.loc - p.loc, q._capacitance_tril)
    return logdet_q, m


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _check_events(p, q, True)
    logdet_q, term3 = _q_terms(p, q)
    term1 = logdet_q - _batch_lowrank_logdet(p._unbroadcasted_cov_factor,
                                             p._unbroadcasted_cov_diag, p._capacitance_tril)
    # tr(inv(qcov) pcov) with inv(qcov) = inv(qD) - A^T A (Woodbury)
    A = _q_woodbury_A(q)
    term2 = ((p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
             + _batch_trace_XXT(p._unbroadcasted_cov_factor
                                * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
             - _batch_trace_XXT(A @ p._unbroadcasted_cov_factor))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_events(p, q, False)
    logdet_q, term3 = _q_terms(p, q)
    L = p._unbroadcasted_scale_tril
    term1 = logdet_q - 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    A = _q_woodbury_A(q)
    term2 = (_batch_trace_XXT(L * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(A @ L))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_events(p, q, False)
    Lq = q._unbroadcasted_scale_tril
    term1 = 2 * Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _batch_lowrank_logdet(
        p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    batch = F.broadcast_shapes(Lq.shape[:-2], p._unbroadcasted_cov_factor.shape[:-2])
    n = p.event_shape[0]
    Lq = Lq.expand(*batch, n, n)
    W = p._unbroadcasted_cov_factor.expand(*batch, n, p.cov_factor.size(-1))
    Dsqrt = diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(*batch, n, n)
    term2 = (_batch_trace_XXT(linalg.solve_triangular(Lq, W, upper=False))
             + _batch_trace_XXT(linalg.solve_triangular(Lq, Dsqrt, upper=False)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])
