"""Scans and sorting primitives: running sums/products/log-sum-exps, the index of the running
max/min, a stable argsort, and searchsorted (issue 11).

None of these is composable at a sane cost from the other primitives (a cumsum as a matmul by
a triangular matrix is O(n^2); a sort not at all), so each is an `extern` primitive: the eager
implementation runs inside compiled programs too. Everything torch-level (sort, topk, median,
quantile, cummax, ...) is composed from these plus `gather` in `tracer/functional_scan.py`,
so gradients of selections flow through `gather`. Each scan runs along attrs['dim']
(non-negative); `reverse` scans from the end (the VJP of a scan is the reversed scan).
"""
from __future__ import annotations

import math

from . import dtypes as dt
from .ops import _def, _first_shape, _int64_dtype, _same_dtype, arg, vjp_zero

_SCAN_ATTRS = ("dim", "reverse")


def _flip(xp, x, dim: int, reverse: bool):
    return xp.flip(x, dim) if reverse else x


def accumulate(xp, ufunc, x, axis: int):
    """`ufunc.accumulate(x, axis)` for an associative binary ufunc. cupy has it only for add
    and multiply; elsewhere the scan is ceil(log2 n) whole-array steps (each position combines
    with the one `step` before it, step doubling), the same values up to rounding."""
    try:
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    except NotImplementedError:
        return log_step_scan(xp, ufunc, x, axis)


def log_step_scan(xp, ufunc, x, axis: int):
    out = xp.moveaxis(x, axis, -1).copy()
    n, step = out.shape[-1], 1
    while step < n:
        # the right side is a new array, computed from the old values before the store
        out[..., step:] = ufunc(out[..., step:], out[..., :-step])
        step *= 2
    return xp.moveaxis(out, -1, axis)


def _accumulate(name: str):
    def make(xp):
        ufunc = getattr(xp, name)

        def run(x, dim, reverse=False):
            if x.shape[dim] == 0:
                return x.copy()
            # float16/bfloat16 (ml_dtypes': kind "V") run in float32, each output rounded
            # once, as ATen's CPU scans carry their acc_type (float) from step to step
            half = x.dtype.itemsize == 2 and x.dtype.kind in "fV"
            r = accumulate(xp, ufunc, _flip(xp, x.astype("float32") if half else x, dim,
                                            reverse), dim)
            return _flip(xp, r.astype(x.dtype) if half else r, dim, reverse)
        return run
    return make


# ---------------------------------------------------------------- cumsum

def _vjp_cumsum(b, n, g):
    return (b.op("cumsum", g, dim=n.attrs["dim"], reverse=not n.attrs["reverse"]),)


_def("cumsum", "extern", 1, _first_shape, _same_dtype, attrs=_SCAN_ATTRS,
     eager=_accumulate("add"), vjp=_vjp_cumsum,
     doc="running sum along dim (from the end when reverse)")


# ---------------------------------------------------------------- cumprod

def _vjp_cumprod(b, n, g):
    # d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Before a slice's first zero that
    # is out_j / x_i; at the first zero z it is the running product with x_z replaced by 1;
    # after z every such product holds x_z = 0. So no division by zero, as PyTorch's rule.
    x, d = arg(n), n.attrs["dim"]
    xv, out, dtype = b.value(x), b.value(n), n.dtype
    zero, one = b.zero(dtype), b.const(1.0, dtype)
    is0 = b.op("eq", xv, zero)
    zeros_so_far = b.op("cumsum", b.op("cast", is0, dtype=dtype), dim=d, reverse=False)
    before = b.op("eq", zeros_so_far, zero)
    first = b.op("bitwise_and", is0, b.op("eq", zeros_so_far, one))
    tail = b.op("cumsum", b.op("mul", g, out), dim=d, reverse=True)
    part_before = b.op("div", tail, b.op("where", before, xv, one))
    skip_z = b.op("cumprod", b.op("where", first, one, xv), dim=d)
    part_first = b.op("cumsum", b.op("mul", g, skip_z), dim=d, reverse=True)
    return (b.op("where", before, part_before, b.op("where", first, part_first, zero)),)


_def("cumprod", "extern", 1, _first_shape, _same_dtype, attrs=("dim",),
     eager=lambda xp: (lambda x, dim: _accumulate("multiply")(xp)(x, dim)),
     vjp=_vjp_cumprod, saves=(0, "out"), doc="running product along dim")


# ---------------------------------------------------------------- logcumsumexp

def _vjp_logcumsumexp(b, n, g):
    # grad_i = sum_{j >= i} g_j exp(x_i - out_j), summed in log space for the positive and the
    # negative parts of g separately (PyTorch's rule): exp(out_j) may overflow, this does not
    d, rev = n.attrs["dim"], n.attrs["reverse"]
    xv, out, dtype = b.value(arg(n)), b.value(n), n.dtype
    zero = b.zero(dtype)
    # out_j = -inf only where every x_k it sums is -inf: their terms are exp(-inf) = 0, not
    # exp(-inf - -inf) = nan (the VJP's own scans of log(0) = -inf meet this, so double
    # backward does too)
    out = b.op("where", b.op("eq", out, b.const(float("-inf"), dtype)), zero, out)
    parts = []
    for sel, val in (("gt", g), ("lt", b.op("neg", g))):
        mag = b.op("where", b.op(sel, g, zero), val, zero)
        scan = b.op("logcumsumexp", b.op("sub", b.op("log", mag), out), dim=d,
                    reverse=not rev)
        parts.append(b.op("exp", b.op("add", xv, scan)))
    return (b.op("sub", parts[0], parts[1]),)


_def("logcumsumexp", "extern", 1, _first_shape, _same_dtype, attrs=_SCAN_ATTRS,
     eager=_accumulate("logaddexp"), vjp=_vjp_logcumsumexp, saves=(0, "out"),
     doc="log(cumsum(exp(x))) along dim without overflow")


# ---------------------------------------------------------------- cummax / cummin indices

def _cumarg(greater: bool):
    def make(xp):
        extreme = xp.maximum if greater else xp.minimum

        def run(x, dim):
            # PyTorch's rule: a tie or a NaN takes over (the latest index of the running
            # extreme; NaN stays the extreme once seen). The running extreme only changes where
            # an element equals it, so the answer at i is the last such position up to i.
            if x.shape[dim] == 0:
                return xp.zeros(x.shape, dtype=xp.int64)
            hit = x == accumulate(xp, extreme, x, dim)
            if x.dtype.kind in "fV":  # (bfloat16, ml_dtypes' kind "V", has NaN too)
                hit = hit | xp.isnan(x)
            shape = [1] * x.ndim
            shape[dim] = x.shape[dim]
            pos = xp.arange(x.shape[dim], dtype=xp.int64).reshape(shape)
            return accumulate(xp, xp.maximum, xp.where(hit, pos, 0), dim)
        return run
    return make


for _n, _greater in (("cumargmax", True), ("cumargmin", False)):
    _def(_n, "extern", 1, _first_shape, _int64_dtype, attrs=("dim",), eager=_cumarg(_greater),
         vjp=vjp_zero, doc="index of the running max/min along dim (cummax/cummin gather it)")


# ---------------------------------------------------------------- argsort

# Keys of at most 32 bits sort fastest packed with their position into one uint64 (numpy's
# vectorised integer sort, about 2x its stable argsort of float32): the high half orders as the
# value, the low half is the position, so equal values keep their order (a stable sort).
_PACKABLE = {"float32": "uint32", "float16": "uint16", "int32": "uint32", "int16": "uint16",
             "int8": "uint8", "uint8": "uint8", "bool": "uint8"}


def _ordered_bits(xp, x):
    """Unsigned integers that order as x does, NaN as the largest value and -0.0 as 0.0."""
    kind = x.dtype.kind
    u = xp.dtype(_PACKABLE[x.dtype.name])
    bits = 8 * u.itemsize
    top = u.type(1 << (bits - 1))
    if kind == "f":
        x = xp.where(xp.isnan(x), xp.asarray(float("nan"), x.dtype), x + x.dtype.type(0))
        b = x.view(u)
        return xp.where(b >> u.type(bits - 1), ~b, b | top)
    if kind == "i":
        return x.view(u) ^ top  # flipping the sign bit orders two's complement as unsigned
    return x.view(u) if kind != "b" else x.astype(u)


def _packed_argsort(xp, x, dim: int, descending: bool):
    last = xp.ascontiguousarray(xp.moveaxis(x, dim, -1))
    key = _ordered_bits(xp, last)
    if descending:
        key = ~key
    n = last.shape[-1]
    packed = (key.astype(xp.uint64) << xp.uint64(32)) | xp.arange(n, dtype=xp.uint64)
    packed.sort(axis=-1)
    idx = (packed & xp.uint64(0xFFFFFFFF)).astype(xp.int64)
    return xp.moveaxis(idx, -1, dim)


def _argsort(xp):
    def run(x, dim, descending):
        if x.shape[dim] == 0:
            return xp.zeros(x.shape, dtype=xp.int64)
        if x.dtype.name in _PACKABLE and x.shape[dim] < 1 << 32:
            return _packed_argsort(xp, x, dim, descending)
        if not descending:
            return xp.argsort(x, axis=dim, kind="stable")
        # descending and stable: sort the reversed slice ascending (ties then come last-first)
        # and reverse the result; NaN (sorted last ascending) comes first, as in PyTorch
        r = xp.flip(xp.argsort(xp.flip(x, dim), axis=dim, kind="stable"), dim)
        return (x.shape[dim] - 1) - r
    return run


_def("argsort", "extern", 1, _first_shape, _int64_dtype, attrs=("dim", "descending"),
     eager=_argsort, vjp=vjp_zero,
     doc="stable sorting permutation along dim; NaN sorts as the largest value")


# ---------------------------------------------------------------- topk

def _topk_shape(shapes, a):
    shape = list(shapes[0])
    shape[a["dim"]] = a["k"]
    return tuple(shape)


def _topk(xp):
    sort = _argsort(xp)

    def run(x, dim, k, largest):
        n = x.shape[dim]
        if k == 1 and n > 1 and xp.__name__ == "numpy":
            # one element (sampling a token, a greedy decoder: a topk(1) per step): argmax /
            # argmin pick the first of tied values and the first NaN, as the rule below does
            # (-0.0 ties 0.0 there as here), about 30x fewer numpy calls. Only argmin of a row
            # holding a NaN (the smallest never is NaN, unless all are) goes the long way.
            # (numpy only: cupy's NaN rule was not checked on a device.)
            i = (xp.argmax if largest else xp.argmin)(x, axis=dim, keepdims=True)
            if largest or x.dtype.kind not in "fV" or not xp.isnan(xp.take_along_axis(x, i, dim)).any():
                return i.astype(xp.int64, copy=False)
        if k == 0 or 4 * k >= n:  # most of the row (or none): sorting it all is as cheap
            return xp.take(sort(x, dim, largest), xp.arange(k), axis=dim)
        # k of n: select them in O(n), then order only those (NaN counts as the largest, as in
        # numpy's partition and PyTorch's topk)
        chosen = _select(xp, x, dim, k, largest)
        order = sort(xp.take_along_axis(x, chosen, dim), dim, largest)
        return xp.take_along_axis(chosen, order, dim)
    return run


def _select(xp, x, dim: int, k: int, largest: bool):
    """The indices of the k largest (smallest) along dim, ascending; of values tied at the
    k-th, the first ones. A partition alone would pick among ties as its algorithm happens to
    (numpy's and cupy's differ: compiled topk on an H100 disagreed with the CPU), so only the
    k-th value is taken from it."""
    n = x.shape[dim]
    at = n - k if largest else k - 1
    kth = xp.take(xp.argpartition(x, at, axis=dim), xp.arange(at, at + 1), axis=dim)
    t = xp.take_along_axis(x, kth, dim)
    if x.dtype.kind in "fV":
        x_nan, t_nan = xp.isnan(x), xp.isnan(t)
        better = ((x > t) | x_nan) & ~t_nan if largest else (x < t) | (t_nan & ~x_nan)
        tied = xp.where(t_nan, x_nan, x == t)
    else:
        better, tied = x > t if largest else x < t, x == t
    need = k - better.sum(axis=dim, keepdims=True)
    take = better | (tied & (xp.cumsum(tied, axis=dim) <= need))
    last = xp.ascontiguousarray(xp.moveaxis(take, dim, -1))
    idx = xp.nonzero(last)[-1].reshape(last.shape[:-1] + (k,))
    return xp.moveaxis(idx, -1, dim).astype(xp.int64, copy=False)


_def("topk", "extern", 1, _topk_shape, _int64_dtype, attrs=("dim", "k", "largest"),
     eager=_topk, vjp=vjp_zero,
     doc="indices of the k largest (smallest) along dim, in sorted order")


# ---------------------------------------------------------------- searchsorted

def _searchsorted_shape(shapes, a):
    seq, vals = shapes
    if len(seq) != 1 and (len(seq) != len(vals) or seq[:-1] != vals[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq)} and input value tensor {list(vals)}")
    return vals


def _searchsorted_dtype(dtypes, a):
    _same_dtype(dtypes, a)
    return a["dtype"]


def _searchsorted(xp):
    def run(seq, values, right, dtype):
        side = "right" if right else "left"
        if seq.ndim == 1:
            r = xp.searchsorted(seq, values, side=side)
        else:
            rows = math.prod(seq.shape[:-1])  # (not -1: a zero-size row leaves it ambiguous)
            s, v = seq.reshape(rows, seq.shape[-1]), values.reshape(rows, values.shape[-1])
            r = xp.stack([xp.searchsorted(s[i], v[i], side=side) for i in range(s.shape[0])]
                         ) if s.shape[0] else xp.zeros(v.shape, dtype=xp.int64)
            r = r.reshape(values.shape)
        return r.astype(xp.int32 if dtype is dt.int32 else xp.int64)
    return run


_def("searchsorted", "extern", 2, _searchsorted_shape, _searchsorted_dtype,
     attrs=("right", "dtype"), eager=_searchsorted, vjp=vjp_zero,
     doc="insertion points of values (input 1) in each sorted last-dim row of input 0 "
         "(a 1-d input 0 is shared by all values); dtype int64 or int32")
