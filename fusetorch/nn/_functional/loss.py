"""nn.functional: losses, composed from tensor operations.

Each loss follows PyTorch's ATen formula (so weighted means, ignored targets, label smoothing
and the -100 log clamp give PyTorch's numbers), its argument checks and its error messages. The
legacy `size_average` / `reduce` arguments map to `reduction` with PyTorch's deprecation warning.
"""
from __future__ import annotations

import warnings

from ...ir import dtypes as dt
from ...ir.shapes import broadcast_shapes
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.opmath import in_float32
from ...tracer.tensor import Tensor
from ...tracer import autocast as _ac
from ...tracer.composite_programs import composite

# (bound once: a per-thread module's attributes are looked up unspecialized)
apply, cast, check_tensor, check_values = D.apply, D.cast, D.check_tensor, D.check_values

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
           "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss",
           "gaussian_nll_loss", "poisson_nll_loss"]


# ---------------------------------------------------------------- reduction arguments

def _get_enum(reduction: str) -> int:
    """PyTorch's `_Reduction.get_enum`: validates `reduction` (0 none, 1 mean, 2 sum)."""
    if reduction == "none":
        return 0
    if reduction == "mean":
        return 1
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=3)
        return 1
    if reduction == "sum":
        return 2
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_get_string(size_average, reduce, emit_warning: bool = True) -> str:
    """PyTorch's mapping of the legacy (size_average, reduce) pair to a reduction string."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_get_string(size_average, reduce)
    return reduction


def _apply_reduction(loss: Tensor, reduction: str) -> Tensor:
    r = _get_enum(reduction)
    if r == 0:
        return loss
    return loss.mean() if r == 1 else loss.sum()




def _size_warning(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


def _log_softmax(x: Tensor, dim: int) -> Tensor:
    """nn.functional.log_softmax (max-subtracted, so exp never overflows)."""
    from .activation import log_softmax
    return log_softmax(x, dim)


def _fmt(v: float) -> str:
    """A double as C++ streams print it (1.5, 2)."""
    return "%g" % v


# ---------------------------------------------------------------- elementwise regressions

def _squared(x: Tensor, y: Tensor, _param: float) -> Tensor:
    d = x - y
    return d * d


def _absolute(x: Tensor, y: Tensor, _param: float) -> Tensor:
    return F.abs(x - y)


def _smooth_l1(x: Tensor, y: Tensor, beta: float) -> Tensor:
    d = x - y
    a = F.abs(d)
    return F.where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta)


def _huber(x: Tensor, y: Tensor, delta: float) -> Tensor:
    """0.5 z z or delta (z - 0.5 delta) of z = |x - y|: float16/bfloat16 in float32, rounded
    once, as ATen's huber kernel (a half z squared was 2 ulps off)."""
    def pointwise(x, y):
        d = x - y
        a = F.abs(d)
        return F.where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    return in_float32(pointwise, x, y)


# name -> (pointwise loss of (input, target, its parameter), PyTorch's grad_fn name or None)
_REGRESSIONS = {"mse": (_squared, "MseLossBackward0"), "l1": (_absolute, None),
                "smooth_l1": (_smooth_l1, "SmoothL1LossBackward0"),
                "huber": (_huber, "HuberLossBackward0")}


@composite
def _regression(name: str, input: Tensor, target: Tensor, reduction: str,
                weight: Tensor | None, param: float = 0.0) -> Tensor:
    """The elementwise losses, reduced. A composite (a loop's small losses replay as one
    graph): the public functions warn and check their arguments first, every call."""
    pointwise, grad_name = _REGRESSIONS[name]
    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    x = input if tuple(input.shape) == shape else input.expand(*shape)
    y = target if tuple(target.shape) == shape else target.expand(*shape)
    loss = pointwise(x, y, param)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        if reduction == "mean":
            # PyTorch: a weighted mean (huber_loss divides by the count instead, see there)
            return loss.sum() / weight.sum() if name != "huber" else loss.mean()
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', "
                         "'mean', 'sum'.")
    out = _apply_reduction(loss, reduction)
    return A.label_recorded(out, grad_name, input, target) if grad_name else out


@_ac.op("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error `(input - target) ** 2`, reduced; `weight` makes the mean weighted."""
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if not (input._dtype.is_floating_point or target._dtype.is_floating_point):
        raise NotImplementedError(f"\"mse_cpu\" not implemented for "
                                  f"'{D._torch_name(input._dtype)}'")
    return _regression("mse", input, target, reduction, weight)


@_ac.op("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error `|input - target|`, reduced."""
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    return _regression("l1", input, target, reduction, weight)


@_ac.op("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """`0.5 d**2 / beta` where `|d| < beta`, else `|d| - 0.5 beta`; beta 0 is l1_loss."""
    _size_warning(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return _regression("l1", input, target, reduction, None)
    return _regression("smooth_l1", input, target, reduction, None, float(beta))


@_ac.op("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """`0.5 d**2` where `|d| < delta`, else `delta (|d| - 0.5 delta)`."""
    _size_warning(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _regression("huber", input, target, reduction, weight, float(delta))


@_ac.op("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise `target * (log target - input)` (input holds log-probabilities);
    `reduction='batchmean'` divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        red = _legacy_get_string(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        red = "sum" if reduction == "batchmean" else reduction
    _get_enum(red)
    if log_target:
        loss = F.exp(target) * (target - input)
    else:
        # xlogy(t, t) is 0 where t == 0 (the log reads a safe value there so that neither the
        # value nor the gradient sees log(0)), NaN where t < 0, as in PyTorch
        zero = target == 0
        safe = F.where(zero, 1.0, target)
        loss = F.where(zero, 0.0, target * F.log(safe)) - target * input
    out = _apply_reduction(loss, red)
    if reduction == "batchmean" and input.ndim != 0:
        out = out / input.shape[0]
    return out


# ---------------------------------------------------------------- binary cross entropy

def _check_bce_weight(input: Tensor, target: Tensor, weight: Tensor) -> Tensor:
    new = broadcast_shapes(tuple(target.shape), tuple(weight.shape))
    if tuple(new) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(new)}")
    return weight.expand(*new)


def _clamped_log(x: Tensor, ok: Tensor, log=F.log, safe: float = 1.0) -> Tensor:
    """max(log(x), -100) where `ok`, else -100 (PyTorch's clamp of the log). The log reads
    `safe` where not ok, so neither value nor gradient meets log(0) (PyTorch's backward formula
    divides by max(x (1 - x), 1e-12) there; here that term's gradient is 0)."""
    return F.where(ok, F.clamp(log(F.where(ok, x, safe)), min=-100.0), -100.0)


@_ac.op("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """`-w (y log x + (1 - y) log(1 - x))` with each log clamped at -100, as PyTorch does."""
    reduction = _reduction(size_average, reduce, reduction)
    _get_enum(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         "size.")
    if weight is not None:
        weight = _check_bce_weight(input, target, weight)
    if target._dtype is not input._dtype:
        raise RuntimeError(f"Found dtype {D._torch_name(target._dtype)} but expected "
                           f"{D._torch_name(input._dtype)}")
    # data-dependent argument checks, as PyTorch's kernel makes: they have to read the values
    # (in the graph: a compiled replay checks every call)
    x = check_values(input, "all elements of input should be between 0 and 1", lo=0, hi=1,
                       closed=True)
    y = check_values(target, "all elements of target should be between 0 and 1", lo=0, hi=1,
                       closed=True)
    log_x = _clamped_log(x, x > 0)
    log_1mx = _clamped_log(-x, x < 1, F.log1p, 0.0)  # log1p(-x), as PyTorch
    loss = (y - 1) * log_1mx - y * log_x
    if weight is not None:
        loss = loss * weight
    return A.label_recorded(_apply_reduction(loss, reduction), "BinaryCrossEntropyBackward0", input,
                  target, weight)


@_ac.op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """BCE on logits in the stable form `(1 - y) x - log_sigmoid(x) * (1 + (pw - 1) y)`, with
    `log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))` (no overflow for any x)."""
    reduction = _reduction(size_average, reduce, reduction)
    _get_enum(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for "
                                  f"'{D._torch_name(input._dtype)}'")
    # PyTorch computes (1 - target) in the target's dtype and writes the float result into it
    D.check_cast(input, target)
    log_sig = D.binary("minimum", input, 0.0) - F.log1p(F.exp(-F.abs(input)))
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return A.label_recorded(_apply_reduction(loss, reduction), "BinaryCrossEntropyWithLogitsBackward0",
                  input, target, weight, pos_weight)


# ---------------------------------------------------------------- nll and cross entropy

def _check_target_dtype(target: Tensor) -> None:
    if target._dtype is not dt.int64 and target._dtype is not dt.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{D._torch_name(target._dtype)}")


def _check_weight(weight: Tensor | None, input: Tensor, n_classes: int, spatial: bool) -> None:
    if weight is None:
        return
    if spatial:
        if weight.numel() != n_classes:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
    elif weight.ndim != 1 or weight.numel() != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    if weight._dtype is not input._dtype:
        raise RuntimeError(f"expected scalar type {D._torch_name(input._dtype)} but found "
                           f"{D._torch_name(weight._dtype)}")


def _check_nll_args(input: Tensor, target: Tensor, weight: Tensor | None) -> tuple:
    """PyTorch's nll_loss_nd checks, in its order. Returns (target, spatial) where a 1-D input's
    size-1 target has become 0-d."""
    xs, ts = input._data.shape, target._data.shape  # (a loop's loss: no Size per look)
    nd, tnd = len(xs), len(ts)
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1:
        tb = ts[0] if tnd else 0
        if xs[0] != tb:
            raise ValueError(f"Expected input batch_size ({xs[0]}) to match target "
                             f"batch_size ({tb}).")
    if nd <= 2:
        if tnd > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if nd == 1 and tnd == 1:
            if ts[0] != 1:
                raise ValueError(f"For 1D input, 1D target must have size 1, but got target "
                                 f"size: {ts[0]}")
            target = target.reshape(())
        _check_weight(weight, input, xs[-1], False)
        _check_target_dtype(target)
        return target, False
    if nd == 4:
        if tnd != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {tnd}")
        _check_weight(weight, input, xs[1], True)
        if ts != (xs[0],) + xs[2:]:
            raise RuntimeError(f"size mismatch (got input: {list(xs)} , target: {list(ts)}")
    else:
        if ts[1:] != xs[2:]:
            raise RuntimeError(f"Expected target size {[xs[0]] + list(xs[2:])}, got {list(ts)}")
        _check_weight(weight, input, xs[1], True)
    _check_target_dtype(target)
    return target, True


def _nll(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
         ignore_index: int) -> Tensor:
    """nll_loss_nd: `-w[t] * input[n, t, ...]`, 0 where t == ignore_index; 'mean' divides by
    the summed weights of the targets that count (nan when none do, as in PyTorch)."""
    red = _get_enum(reduction)
    target, spatial = _check_nll_args(input, target, weight)
    nd = input._data.ndim
    cdim = 0 if nd == 1 else 1
    n_classes = input._data.shape[cdim]
    # Target values decide which rows are read and whether PyTorch raises IndexError: a
    # check in the graph, so that a compiled replay makes it too
    target = check_values(target, "Target {value} is out of bounds.", lo=0, hi=n_classes,
                            allow=ignore_index, error="IndexError")
    # masking is unconditional (not decided from the values read above) so that a recorded
    # graph computes the same thing for any targets
    t = cast(target, dt.int64)
    name = "NllLossBackward0" if not spatial or nd != 4 else "NllLoss2DBackward0"
    if input._dtype in (dt.float32, dt.float64) and (weight is None or not weight._requires_grad):
        # one primitive (ir/loss_ops.py); a weight that requires grad keeps the composed form
        out = apply("nll_loss", [input, t] + ([] if weight is None else [weight]),
                      {"cdim": cdim, "ignore_index": int(ignore_index), "reduction": red,
                       "weight": weight is not None})
        if weight is None and name == "NllLossBackward0":
            return out  # (the op's node has PyTorch's name, its inputs the next functions)
        return A.label_recorded(out, name, input, weight)
    keep = t != ignore_index
    t = F.where(keep, t, 0)
    # (the gather primitive, not torch.gather, which would check the index again)
    picked = apply("gather", [input, t.unsqueeze(cdim)], {"dim": cdim}).squeeze(cdim)
    w = None
    if weight is not None:
        w_t = F.index_select(weight, 0, t.reshape(-1)).reshape(tuple(t.shape))
        w = F.where(keep, w_t, 0.0)
        loss = F.where(keep, -(picked * w_t), 0.0)
    else:
        loss = F.where(keep, -picked, 0.0)
    if red == 0:
        out = loss
    elif red == 2:
        out = loss.sum()
    else:  # the summed weights of the targets that count (nan when none do, as in PyTorch)
        out = loss.sum() / (w.sum() if w is not None else keep.sum())
    return A.label_recorded(out, name, input, weight)


@_ac.op("nll_loss")  # (one primitive: a captured replay of it would only add its key's cost)
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of log-probabilities `input` [N, C, d1...] (or [C]) at class
    indices `target` [N, d1...] (or [])."""
    check_tensor(input, "nll_loss", "input", 1)
    check_tensor(target, "nll_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    return _nll(input, target, weight, reduction, ignore_index)


def _class_weight_view(weight: Tensor, ndim: int, cdim: int) -> Tensor:
    shape = [1] * ndim
    shape[cdim] = weight.shape[0]
    return weight.reshape(tuple(shape))


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None, red: int,
                         label_smoothing: float) -> Tensor:
    cdim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[cdim]
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{n_classes} classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    logp = _log_softmax(input, cdim)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                               f"{_fmt(label_smoothing)}")
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * _class_weight_view(weight, input.ndim, cdim)
    if red == 0:
        return -prod.sum(cdim)
    if red == 2:
        return -prod.sum()
    if input.numel() == 0:
        return -prod.sum() * float("nan")
    return -prod.sum() / (input.numel() // n_classes)


def _cross_entropy_smoothed(input: Tensor, target: Tensor, weight: Tensor | None,
                            reduction: str, ignore_index: int, label_smoothing: float) -> Tensor:
    """PyTorch's label-smoothing path: (1 - eps) nll + eps / C * smooth, where smooth is the
    (weighted) sum of -log p over classes, masked at ignored targets and normalised for 'mean'
    like nll_loss (by the summed target weights)."""
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{_fmt(label_smoothing)}")
    cdim = 0 if input.ndim == 1 else 1
    logp = _log_softmax(input, cdim)
    nll = _nll(logp, target, weight, reduction, ignore_index)  # checks target and weight
    n_classes = input.shape[cdim]
    if weight is not None:
        smooth = -(logp * _class_weight_view(weight, input.ndim, cdim)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    if input.ndim == 1 and target.ndim == 1:
        target = target.reshape(())
    t = cast(target, dt.int64)
    keep = t != ignore_index
    smooth = F.where(keep, smooth, 0.0)
    red = _get_enum(reduction)
    if red == 0:
        ret = smooth
    elif red == 2:
        ret = smooth.sum()
    elif weight is not None:
        tw = F.index_select(weight, 0, F.where(keep, t, 0).reshape(-1)).reshape(tuple(t.shape))
        ret = smooth.sum() / F.where(keep, tw, 0.0).sum()
    else:
        ret = smooth.sum() / keep.sum()
    return nll * (1 - label_smoothing) + ret * (label_smoothing / n_classes)


@composite
@_ac.op("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits `input` [N, C, d1...] (or [C]) against class indices
    [N, d1...] or class probabilities of input's shape: `nll_loss(log_softmax(input, 1))` with
    PyTorch's weight, ignore_index and label_smoothing semantics."""
    check_tensor(input, "cross_entropy", "input", 1)
    check_tensor(target, "cross_entropy", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    red = _get_enum(reduction)
    if input._data.shape == target._data.shape:  # (the arrays': no Size per look)
        # same shapes: class probabilities (PyTorch's rule)
        if not target._dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {D._torch_name(target._dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(input, target, weight, red, label_smoothing)
    if label_smoothing > 0.0:
        return _cross_entropy_smoothed(input, target, weight, reduction, ignore_index,
                                       label_smoothing)
    cdim = 0 if input._data.ndim == 1 else 1
    return _nll(_log_softmax(input, cdim), target, weight, reduction, ignore_index)


# ---------------------------------------------------------------- likelihoods

def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """`0.5 (log var + (input - target) ** 2 / var)` (+ 0.5 log 2 pi when `full`). `var` may
    lack the last dim, or differ from input's shape in one dim of size 1 (heteroscedastic);
    it is clamped to eps in value only (the gradient passes as if unclamped, as PyTorch's
    no_grad clamp_ does)."""
    import math
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        from ...tracer.creation import ones_like
        var = ones_like(input) * float(var)
    else:
        var = check_values(var, "var has negative entry/entries", lo=0, error="ValueError")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with A.no_grad():  # recorded by traces, without gradient
        lift = F.clamp(var, min=eps) - var
    v = var + lift
    d = input - target
    loss = 0.5 * (F.log(v) + d * d / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


@_ac.op("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """`exp(input) - target * input` (log_input) or `input - target * log(input + eps)`;
    `full` adds Stirling's `t log t - t + 0.5 log(2 pi t)` where target > 1."""
    import math
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = F.exp(input) - target * input
    else:
        loss = input - target * F.log(input + eps)
    if full:
        big = target > 1
        t = F.where(big, target, 1.0)
        stirling = t * F.log(t) - t + 0.5 * F.log(t * (2 * math.pi))
        loss = loss + F.where(big, stirling, 0.0)
    return _apply_reduction(loss, reduction)
