"""nn.functional: margin, ranking and embedding losses (cosine_embedding, margin_ranking,
hinge_embedding, soft_margin, triplet_margin (+ with_distance), multi_margin,
multilabel_margin, multilabel_soft_margin), composed from tensor operations with PyTorch's
ATen formulas, so ties, zero targets and the legacy `size_average` / `reduce` arguments give
PyTorch's numbers.
"""
from __future__ import annotations

from typing import Callable

from ...ir import dtypes as dt
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .distance import pairwise_distance
from .loss import _apply_reduction, _get_enum, _reduction
from ...tracer import autocast as _ac

__all__ = ["cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss"]


@_ac.op("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """`1 - cos` where target == 1, `max(0, cos - margin)` where target == -1, 0 elsewhere; cos
    along the last dim, each squared norm plus 1e-12 (ATen's EPSILON)."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    d = input1.ndim - 1 if input1.ndim else 0
    prod = F.sum(input1 * input2, d)
    m1 = F.sum(input1 * input1, d) + 1e-12
    m2 = F.sum(input2 * input2, d) + 1e-12
    cos = prod / F.sqrt(m1 * m2)
    pos = F.where(target == 1, 1 - cos, 0.0)
    neg = F.where(target == -1, F.clamp(cos - margin, min=0.0), 0.0)
    return _apply_reduction(pos + neg, reduction)


@_ac.op("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """`max(0, -target * (input1 - input2) + margin)`."""
    reduction = _reduction(size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.size()}, input2: {input2.size()}, "
                           f"target: {target.size()} ")
    loss = F.clamp(-target * (input1 - input2) + margin, min=0.0)
    return _apply_reduction(loss, reduction)


@_ac.op("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """`max(0, margin - x)` where target != 1 plus `x` where target != -1."""
    reduction = _reduction(size_average, reduce, reduction)
    out_margin = F.where(target != 1, F.clamp(margin - input, min=0.0), 0.0)
    out_self = F.where(target != -1, input, 0.0)
    return _apply_reduction(out_margin + out_self, reduction)


@_ac.op("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """`log(1 + exp(-target * input))`."""
    reduction = _reduction(size_average, reduce, reduction)
    _get_enum(reduction)
    loss = F.log1p(F.exp(-input * target))
    return A.label_recorded(_apply_reduction(loss, reduction), "SoftMarginLossBackward0", input)


def _same_ndims(a: Tensor, p: Tensor, n: Tensor) -> None:
    if not (a.ndim == p.ndim == n.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a.ndim}D, positive "
                           f"{p.ndim}D, and negative {n.ndim}D inputs")


@_ac.op("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """`max(0, margin + d(a, p) - d(a, n))` with d the pairwise p-distance (and with `swap`,
    d(a, n) replaced by min(d(a, n), d(p, n)))."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = F.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _apply_reduction(F.clamp(margin + d_pos - d_neg, min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance (default: pairwise_distance)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndims(anchor, positive, negative)
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = F.minimum(d_neg, dist(positive, negative))
    return _apply_reduction(F.clamp(margin + d_pos - d_neg, min=0.0), reduction)


def _as_batch(input: Tensor) -> Tensor:
    """[N, C] (a vector is one sample); PyTorch's error for no classes or more dims."""
    if input.ndim > 2 or input.ndim and input.shape[-1] == 0:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    return F.reshape(input, (1, -1)) if input.ndim <= 1 else input


@_ac.op("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Per sample: `sum over i != y of max(0, margin - x[y] + x[i]) ** p / C`, times
    weight[y]."""
    reduction = _reduction(size_average, reduce, reduction)
    _get_enum(reduction)  # PyTorch validates it before anything else
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x = _as_batch(input)
    n, c = x.shape
    t = target.reshape(-1) if target.ndim <= 1 else target
    if t.ndim != 1 or t.shape[0] != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{n}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    t = D.check_values(D.cast(t, dt.int64), "target out of range", lo=0, hi=c)
    x_y = F.gather(x, 1, t.unsqueeze(1))
    z = F.clamp(x - x_y + margin, min=0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * F.index_select(weight, 0, t).unsqueeze(1)
    from ...tracer.creation import arange
    others = t.unsqueeze(1) != arange(c, device=x.device).unsqueeze(0)
    loss = F.sum(F.where(others, z, 0.0), 1) / c
    if input.ndim <= 1 and reduction == "none":
        loss = loss.reshape(()) if input.ndim == 0 or target.ndim == 0 else loss
    return _apply_reduction(loss, reduction)


@_ac.op("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Per sample: `sum over target entries j and non-target classes i of
    max(0, 1 - (x[j] - x[i])) / C`; the target entries are target's values before its first
    -1."""
    reduction = _reduction(size_average, reduce, reduction)
    _get_enum(reduction)  # PyTorch validates it before anything else
    x = _as_batch(input)
    n, c = x.shape
    if tuple(target.shape) != tuple(input.shape) and not (input.ndim <= 1 and target.numel()
                                                          == c and target.ndim <= 1):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    t = D.check_values(D.cast(target, dt.int64).reshape((n, c)),
                       "argument #2 'target' is out of range", lo=-1, hi=c)
    neg = D.cast(t < 0, x._dtype)
    from ...tracer.creation import arange
    # a target entry counts while no -1 came at or before it: a running count of the -1s by
    # one matmul with an upper-triangular matrix of ones
    upper = D.cast(arange(c, device=x.device).unsqueeze(1) <= arange(c, device=x.device)
                   .unsqueeze(0), x._dtype)
    live = F.matmul(neg, upper) == 0
    classes = arange(c, device=x.device)
    hit = F.logical_and(live.unsqueeze(2), t.unsqueeze(2) == classes.reshape((1, 1, c)))
    is_target = F.any(hit, 1)  # [n, c]
    # one term per live target entry (a label listed twice counts twice, as in PyTorch)
    x_t = F.gather(x, 1, F.clamp(t, min=0))  # [n, k]
    pair = F.logical_and(live.unsqueeze(2), F.logical_not(is_target).unsqueeze(1))
    z = F.clamp(1 - (x_t.unsqueeze(2) - x.unsqueeze(1)), min=0.0)  # [n, k, i]
    loss = F.sum(F.where(pair, z, 0.0), (1, 2)) / c
    if input.ndim <= 1 and reduction == "none":
        loss = loss.reshape(())
    return A.label_recorded(_apply_reduction(loss, reduction), "MultilabelMarginLossBackward0", input)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """The mean over classes of `-(y log sigmoid(x) + (1 - y) log sigmoid(-x))` (times
    weight), one value per sample."""
    reduction = _reduction(size_average, reduce, reduction)
    if input.ndim == 0:  # PyTorch's input.size(-1)
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    from .activation import logsigmoid
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    c = input.shape[class_dim]
    loss = F.sum(loss, class_dim) / c
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")
