"""nll_loss as one primitive: a classifier's per-step loss costs one eager call, not thirteen.

    nll_loss(x, t[, w]; cdim, ignore_index, reduction, weight)
        x [N, C, d...] (or [C]) log-probabilities, t [N, d...] (or []) int64 class indices
        already checked to be in range or ignore_index, w [C] the class weights:
        loss = where(t != ignore, -w[t] * x[n, t, ...], 0); none: loss; sum: sum(loss);
        mean: sum(loss) / sum(where(t != ignore, w[t], 0)) (nan when no target counts)
    VJP (x only; t and w are saved): nll_loss_grad(g, t[, w]; ..., shape), itself a
        primitive (one eager call; its composition, what compiled graphs run, is
        gx = scatter_add(zeros, t, where(keep, -w[t] g', 0)), g' = g (none, sum) or g / the
        summed weights (mean)); its own VJP is nll_loss of the cotangent (gx is linear in g)

Composed of primitives it was a `check`'s neighbours (cast, ne, two wheres, gather, squeeze,
neg, sums, a division), each a dispatch and a record: 80-170 us for a row where PyTorch takes
9. Compiled graphs run the composition (`OpDef.composition`, `passes.decompose`), the same
primitives the eager implementation computes, so their kernels fuse as before; ONNX exports it.
A weight that requires grad keeps the composed form (its gradient, which PyTorch refuses, is
then still defined as before).
"""
from __future__ import annotations

import functools
import math

from . import dtypes as dt
from .ops import _def, arg

_NONE, _MEAN, _SUM = 0, 1, 2


def _nll_shape(shapes, a):
    return tuple(shapes[1]) if a["reduction"] == _NONE else ()


def _nll_dtype(dtypes, a):
    d = dtypes[0]
    if not d.is_floating_point or dtypes[1] is not dt.int64 or (a["weight"] and dtypes[2] is not d):
        raise TypeError(f"nll_loss's primitive takes floating log-probabilities, int64 targets "
                        f"and weights of the input's dtype, got {list(dtypes)}")
    return d


def _nll_eager(xp):
    numpy = xp.__name__ == "numpy"
    every = xp.logical_and.reduce if numpy else None
    # (numpy's ufunc reduction itself: the `sum` method's Python wrapper is ~0.3 us a call)
    total_of = xp.add.reduce if numpy else xp.sum

    def nll_loss(x, t, *w, cdim, ignore_index, reduction, weight):
        targets, masked, keep = _kept(numpy, every, t, ignore_index)
        if targets is not None and not masked and t.size == 1 and x.ndim <= 2:
            return _one_target(xp, x, t, w, targets[0], reduction, weight)
        ts = xp.where(keep, t, 0) if masked else t
        picked = x[_along(xp, ts, cdim)]
        zero = x.dtype.type(0)
        if weight:
            wt = w[0][ts]
            loss = -(picked * wt)
        else:
            loss = -picked
        if masked:
            loss = xp.where(keep, loss, zero)
        if reduction == _NONE:
            return loss
        # (one loss, a loop's row: the reduction's own sum, 0 + it, without its ~1 us setup)
        total = zero + loss.reshape(-1)[0] if loss.size == 1 else \
            total_of(loss, axis=None, dtype=x.dtype)
        if reduction == _SUM:
            return total
        den = _mean_divisor(xp, total_of, t, keep, masked, wt if weight else None, x.dtype)
        if xp.__name__ != "numpy" or den:
            return total / den
        with xp.errstate(invalid="ignore", divide="ignore"):  # (no target counts: nan)
            return total / den
    return nll_loss


def _kept(numpy: bool, every, t, ignore_index: int) -> tuple:
    """(t's targets as Python ints where few are scanned in Python, else None; whether any is
    ignore_index; the mask of counted targets, None where every one counts). Where every target
    counts (a loop's), the masks select everything: the same values without the two wheres."""
    if numpy and t.size <= FEW_IN_PYTHON:  # (`in`: ~0.2 us, two numpy passes ~1.3)
        targets = t.ravel().tolist()
        masked = ignore_index in targets
        return targets, masked, (t != ignore_index) if masked else None
    keep = t != ignore_index
    return None, every is None or not every(keep, axis=None), keep


def _mean_divisor(xp, total_of, t, keep, masked: bool, wt, dtype):
    """The mean reduction's divisor: the counted targets' weights (`wt`) summed, or their
    number."""
    if wt is not None:
        return total_of(xp.where(keep, wt, dtype.type(0)) if masked else wt, axis=None,
                        dtype=dtype)
    if masked or t.size > _EXACT_COUNT:
        return total_of(keep, axis=None, dtype=dtype)
    return dtype.type(t.size)  # every target counts: the sum of its ones is their number


def _one_target(xp, x, t, w, target: int, reduction: int, weight: bool):
    """nll_loss of one row (x [C] or [1, C]) at a counted target: the general path's
    operations on the one picked element (numpy scalars, the same float arithmetic, so the
    same bits), without its index grid and reductions (~4 us of an RNN step's ~13)."""
    picked = x[target] if x.ndim == 1 else x[0, target]
    if weight:
        wt = w[0][target]
        loss = -(picked * wt)
    else:
        loss = -picked
    if reduction == _NONE:
        return xp.full(t.shape, loss, dtype=x.dtype)
    zero = x.dtype.type(0)
    total = zero + loss
    if reduction == _SUM:
        return total
    # (numpy's sum of one weight is 0 + it, -0.0 made 0.0)
    return total / (zero + wt if weight else x.dtype.type(1))


# counts of ones up to this are exact in float32 whatever the summation order
_EXACT_COUNT = 1 << 24
# up to this many integers (a loop's targets) are scanned in Python, not numpy: Python's `in`,
# min and max of a few cost ~0.2 us where a numpy reduction's fixed setup costs ~1 us
FEW_IN_PYTHON = 16


def _along(xp, ts, cdim: int) -> tuple:
    """The index of x[n, ts[n, d...], d...] (take_along_axis's pick, whose Python wrapper and
    index grids cost ~4 us on a loop's row): ts at cdim, an arange grid for each other dim."""
    if cdim == 0:
        return (ts,)
    grids = _grids(xp, ts.shape) if xp.__name__ == "numpy" else _open_grids(xp, ts.shape)
    return grids[:cdim] + (ts,) + grids[cdim:]


def _open_grids(xp, shape: tuple) -> tuple:
    k = len(shape)
    return tuple(xp.arange(n).reshape((n,) + (1,) * (k - 1 - i)) for i, n in enumerate(shape))


@functools.lru_cache(maxsize=64)
def _grids(xp, shape: tuple) -> tuple:
    """numpy's grids of `_open_grids`, made once per shape (a loop's loss repeats it), read
    only as they are shared."""
    grids = _open_grids(xp, shape)
    for g in grids:
        g.flags.writeable = False
    return grids


def _parts(make, n, t, w):
    """What the composition and the VJP share: op and const builders over `make`, the mask of
    counted targets, the targets with ignored ones at 0, w[t] (or None) and the targets as a
    gather index along cdim."""
    a, d = n.attrs, n.dtype
    meta = n.meta

    def op(name, *ins, **attrs):
        return make(name, list(ins), attrs, meta)

    def const(v, dtype=d):
        return make("constant", [], {"shape": (), "dtype": dtype, "value": v}, meta)
    keep = op("ne", t, const(a["ignore_index"], dt.int64))
    ts = op("where", keep, t, const(0, dt.int64))
    wt = None
    if a["weight"]:  # w[t] as a gather of the 1-d weights at the flattened targets
        flat = op("reshape", ts, shape=(math.prod(ts.shape),))
        wt = op("reshape", op("gather", w, flat, dim=0), shape=tuple(ts.shape))
    idx_shape = tuple(ts.shape[:a["cdim"]]) + (1,) + tuple(ts.shape[a["cdim"]:])
    idx = op("reshape", ts, shape=idx_shape)
    return op, const, keep, ts, wt, idx


def _counted(op, keep, wt, zero, dtype):
    """The weight each target counts with in a mean: w[t] (or 1), 0 where it is ignored."""
    return op("where", keep, wt, zero) if wt is not None else op("cast", keep, dtype=dtype)


def _composition(n, make):
    x, t = arg(n, 0), arg(n, 1)
    w = arg(n, 2) if n.attrs["weight"] else None
    op, const, keep, ts, wt, idx = _parts(make, n, t, w)
    picked = op("reshape", op("gather", x, idx, dim=n.attrs["cdim"]), shape=tuple(ts.shape))
    zero = const(0.0)
    loss = op("where", keep, op("neg", op("mul", picked, wt) if wt is not None else picked), zero)
    red = n.attrs["reduction"]
    if red == _NONE:
        return loss
    dims = tuple(range(len(ts.shape)))
    total = op("sum", loss, dims=dims, keepdim=False)
    if red == _SUM:
        return total
    return op("div", total, op("sum", _counted(op, keep, wt, zero, n.dtype), dims=dims,
                               keepdim=False))


def _grad_composition(n, make):
    """nll_loss_grad as primitives: the scatter of -w[t] g' into zeros of x's shape."""
    g, t = arg(n, 0), arg(n, 1)
    w = arg(n, 2) if n.attrs["weight"] else None
    op, const, keep, ts, wt, idx = _parts(make, n, t, w)
    zero = const(0.0)
    if n.attrs["reduction"] == _MEAN:
        dims = tuple(range(len(ts.shape)))
        g = op("div", g, op("sum", _counted(op, keep, wt, zero, n.dtype), dims=dims,
                            keepdim=False))
    # (the mask selects after the division: where no target counts, g / 0 is not multiplied
    # by 0 into a NaN, and ignored positions get PyTorch's 0; a 0-d g broadcasts to the targets)
    src = op("where", keep, op("neg", op("mul", wt, g) if wt is not None else g), zero)
    src = op("reshape", src, shape=tuple(idx.shape))
    zeros = make("full", [], {"shape": tuple(n.attrs["shape"]), "dtype": n.dtype, "value": 0},
                 n.meta)
    return op("scatter_add", zeros, idx, src, dim=n.attrs["cdim"])


def _grad_eager(xp):
    """nll_loss_grad in numpy: the composition's values in its order (one write per target
    position, so the scatter into zeros is an indexed add that never repeats)."""
    numpy = xp.__name__ == "numpy"
    every = xp.logical_and.reduce if numpy else None
    total_of = xp.add.reduce if numpy else xp.sum

    def nll_loss_grad(g, t, *w, cdim, ignore_index, reduction, weight, shape):
        targets, masked, keep = _kept(numpy, every, t, ignore_index)
        if targets is not None and not masked and t.size == 1 and len(shape) <= 2:
            return _one_target_grad(xp, g, w, targets[0], reduction, weight, shape)
        ts = xp.where(keep, t, 0) if masked else t
        zero = g.dtype.type(0)
        wt = w[0][ts] if weight else None
        if reduction == _MEAN:
            g = g / _mean_divisor(xp, total_of, t, keep, masked, wt, g.dtype)
        src = -(wt * g) if weight else -g
        if masked:
            src = xp.where(keep, src, zero)
        gx = xp.zeros(shape, g.dtype)
        gx[_along(xp, ts, cdim)] += src  # (0 + v: scatter_add's sums, -0.0 made 0.0 alike)
        return gx
    return nll_loss_grad


def _one_target_grad(xp, g, w, target: int, reduction: int, weight: bool, shape: tuple):
    """nll_loss_grad of one row at a counted target (`_one_target`'s VJP): zeros, and at the
    target 0 + the general path's value (scatter_add's sum, so -0.0 becomes 0.0 alike)."""
    zero = g.dtype.type(0)
    g = g.reshape(())
    if weight:
        wt = w[0][target]
        if reduction == _MEAN:
            g = g / (zero + wt)
        src = -(wt * g)
    else:
        src = -(g / g.dtype.type(1)) if reduction == _MEAN else -g
    gx = xp.zeros(shape, g.dtype)
    gx[(target,) if len(shape) == 1 else (0, target)] = zero + src
    return gx


def _vjp_nll(b, n, g):
    t = b.value(arg(n, 1))
    w = (b.value(arg(n, 2)),) if n.attrs["weight"] else ()
    gx = b.op("nll_loss_grad", g, t, *w, shape=tuple(arg(n, 0).shape), **n.attrs)
    return (gx,) + (None,) * (len(n.inputs) - 1)


def _vjp_nll_grad(b, n, h):
    # gx is linear in g: its transpose, h -> sum over targets of -w[t] h[n, t] (/ the summed
    # weights), is nll_loss of h with the same targets, weights and reduction
    t = b.value(arg(n, 1))
    w = (b.value(arg(n, 2)),) if n.attrs["weight"] else ()
    attrs = {k: v for k, v in n.attrs.items() if k != "shape"}
    return (b.op("nll_loss", h, t, *w, **attrs),) + (None,) * (len(n.inputs) - 1)


def _grad_shape(shapes, a):
    return tuple(a["shape"])


_def("nll_loss", "extern", None, _nll_shape, _nll_dtype,
     attrs=("cdim", "ignore_index", "reduction", "weight"), eager=_nll_eager, vjp=_vjp_nll,
     saves=(1, slice(2, 3)), grad_name="NllLossBackward0", composition=_composition,
     doc="-w[t] * x at the target class, 0 at ignore_index, reduced (none, mean over the "
         "counted weights, sum); its VJP reads the targets and weights")
_def("nll_loss_grad", "extern", None, _grad_shape, _nll_dtype,
     attrs=("cdim", "ignore_index", "reduction", "weight", "shape"), eager=_grad_eager,
     vjp=_vjp_nll_grad, saves=(1, slice(2, 3)), grad_name="NllLossBackwardBackward0",
     composition=_grad_composition,
     doc="nll_loss's VJP of cotangent g, targets t (and weights w) into x's `shape`: "
         "-w[t] g' at the targets, 0 elsewhere and at ignore_index (g' = g / the summed "
         "weights for mean)")
