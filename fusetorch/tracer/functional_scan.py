"""torch-level scans, sorting, selection and counting (issue 11), on the primitives of
`ir/scans.py` (cumsum, cumprod, logcumsumexp, cumargmax/min, argsort, searchsorted) and the
existing ones.

Every selection (sort, topk, kthvalue, median, mode, quantile, cummax) computes indices first
and then `gather`s the values at them, so a gradient goes to exactly the selected elements, as
PyTorch's does. Functions whose output shape depends on the values (`unique`,
`unique_consecutive`, `bincount`, `masked_select`) compute on the host and break a compiled
graph there, as `nonzero` does. `PUBLIC` is what `fusetorch` exports and `Tensor` binds.
"""
from __future__ import annotations

import builtins as _b
import functools
from collections import namedtuple

import numpy as np

from ..ir import dtypes as dt
from ..ir.ops import OPS
from ..ir.shapes import broadcast_many, norm_dim, norm_dims
from . import autograd as A
from . import dispatch as D
from . import functional as F
from .dispatch import apply, binary, cast
from .functional import write_out
from .tensor import Tensor, _data_read
from . import autocast as _ac
from .numpy_names import numpy_names


def _return_type(name: str, fields=("values", "indices")):
    rt = namedtuple(name, fields)
    # printed as PyTorch prints torch.return_types.<name>
    rt.__repr__ = lambda self: (f"torch.return_types.{name}(\n" + ",\n".join(
        f"{f}={getattr(self, f)!r}" for f in fields) + ")")
    return rt


ReturnSort = _return_type("sort")
ReturnTopk = _return_type("topk")
ReturnKthvalue = _return_type("kthvalue")
ReturnMedian = _return_type("median")
ReturnNanmedian = _return_type("nanmedian")
ReturnMode = _return_type("mode")
ReturnCummax = _return_type("cummax")
ReturnCummin = _return_type("cummin")


def _label(t: Tensor, name: str, input: Tensor) -> Tensor:
    return A.label(t, name, input) if D.GRAD_ENABLED and input._requires_grad else t


def _at_least_1d(x: Tensor) -> Tensor:
    return x if x.ndim else F.reshape(x, (1,))


def _like_input(r: Tensor, input: Tensor) -> Tensor:
    """A result computed on a 0-d input reshaped to 1-d, back to 0-d."""
    return r if input.ndim else F.reshape(r, ())


def _slice_dim(x: Tensor, d: int, start: int, stop: int) -> Tensor:
    spec = tuple(("slice", 0, s, 1) for s in x.shape[:d]) + (("slice", start, stop, 1),)
    return apply("index", [x], {"spec": spec})


def _squeeze_dim(x: Tensor, d: int, keepdim: bool) -> Tensor:
    if keepdim:
        return x
    return F.reshape(x, tuple(x.shape[:d]) + tuple(x.shape[d + 1:]))


def _positions(n: int, d: int, ndim: int, like: Tensor) -> Tensor:
    """0..n-1 laid along dim d of an ndim-d tensor (1 elsewhere), int64."""
    from .creation import arange
    shape = [1] * ndim
    shape[d] = n
    return F.reshape(arange(n, device=like.device), tuple(shape))


# ---------------------------------------------------------------- scans

def _scan_dtype(input: Tensor, dtype) -> dt.DType:
    if dtype is not None:
        return dt.to_dtype(dtype, "cumsum")
    return input._dtype if input._dtype.is_floating_point else dt.int64


def _scan(op: str, input: Tensor, dim: int, dtype, out) -> Tensor:
    D.check_tensor(input, op, "input", 1)
    d = norm_dim(dim, input.ndim)
    x = _at_least_1d(cast(input, _scan_dtype(input, dtype)))
    attrs = {"dim": d, "reverse": False} if "reverse" in OPS[op].attrs else {"dim": d}
    return write_out(_like_input(apply(op, [x], attrs), input), out)


@numpy_names
def cumsum(input: Tensor, dim: int, *, dtype=None, out=None) -> Tensor:
    """Running sum along dim; integers and bool accumulate in int64 unless `dtype` says."""
    return _scan("cumsum", input, dim, dtype, out)


@numpy_names
def cumprod(input: Tensor, dim: int, *, dtype=None, out=None) -> Tensor:
    """Running product along dim; its gradient is exact across zeros (no division by them)."""
    return _scan("cumprod", input, dim, dtype, out)


def _inplace_value(op: str, input: Tensor, dim: int, dtype) -> Tensor:
    """The value `x.cumsum_(dim)` writes: computed in x's own dtype (wrapping, as PyTorch's
    in-place kernel), which an explicit `dtype` must equal."""
    from ..ir.ops import _CPP_NAME
    if dtype is not None and dt.to_dtype(dtype, op) is not input._dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype "
                           f"{_CPP_NAME[input._dtype.name]} and output tensor dtype "
                           f"{_CPP_NAME[dt.to_dtype(dtype, op).name]} should match")
    if input._dtype is dt.bool_:
        raise NotImplementedError(f'"{op}_out_cpu" not implemented for \'Bool\'')
    return _scan(op, input, dim, input._dtype, None)


@numpy_names
def cumsum_value(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """The running sum `x.cumsum_(dim)` writes (in x's dtype)."""
    return _inplace_value("cumsum", input, dim, dtype)


@numpy_names
def cumprod_value(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """The running product `x.cumprod_(dim)` writes (in x's dtype)."""
    return _inplace_value("cumprod", input, dim, dtype)


@numpy_names
def logcumsumexp(input: Tensor, dim: int, *, out=None) -> Tensor:
    D.check_tensor(input, "logcumsumexp", "input", 1)
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    return _scan("logcumsumexp", input, dim, None, out)


def _pair_out(name: str, in_place: bool = False):
    """Adds PyTorch's `out=(values, indices)` to an op returning such a pair (a full median
    returns one tensor: a plain out=); `in_place`: out may be the input."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(input, *args, out=None, **kw):
            r = fn(input, *args, **kw)
            if out is None:
                return r
            if isinstance(r, Tensor):
                return write_out(r, out, name=name)
            return F.values_indices_out(r, out, name, input, in_place=in_place)
        return wrapper
    return deco


def _cum_extreme(op: str, grad_name: str, rt, input: Tensor, dim: int):
    D.check_tensor(input, op.replace("arg", ""), "input", 1)
    d = norm_dim(dim, input.ndim)
    x = _at_least_1d(input)
    idx = apply(op, [x], {"dim": d})
    values = apply("gather", [x, idx], {"dim": d})  # the gradient goes to the running extreme
    return rt(_label(_like_input(values, input), grad_name, input), _like_input(idx, input))


@numpy_names
@_pair_out("cummax", in_place=True)
def cummax(input: Tensor, dim: int):
    """(values, indices) of the running max; a tie or a NaN takes the later index."""
    return _cum_extreme("cumargmax", "CummaxBackward0", ReturnCummax, input, dim)


@numpy_names
@_pair_out("cummin", in_place=True)
def cummin(input: Tensor, dim: int):
    return _cum_extreme("cumargmin", "CumminBackward0", ReturnCummin, input, dim)


# ---------------------------------------------------------------- sorting

def _argsort(x: Tensor, d: int, descending: bool) -> Tensor:
    return apply("argsort", [x], {"dim": d, "descending": _b.bool(descending)})


@numpy_names
@_pair_out("sort", in_place=True)
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Stable always (PyTorch's `stable=False` leaves the order of ties unspecified); NaN
    sorts as the largest value."""
    D.check_tensor(input, "sort", "input", 1)
    d = norm_dim(dim, input.ndim)
    x = _at_least_1d(input)
    idx = _argsort(x, d, descending)
    values = apply("gather", [x, idx], {"dim": d})
    return ReturnSort(_label(_like_input(values, input), "SortBackward0", input),
                      _like_input(idx, input))


@numpy_names
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    D.check_tensor(input, "argsort", "input", 1)
    d = norm_dim(dim, input.ndim)
    return _like_input(_argsort(_at_least_1d(input), d, descending), input)


@numpy_names
@_pair_out("topk", in_place=True)
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The k largest (smallest) along dim, always in sorted order (PyTorch allows any order
    for sorted=False)."""
    D.check_tensor(input, "topk", "input", 1)
    d = norm_dim(dim, input.ndim)
    x = _at_least_1d(input)
    if not 0 <= k <= x.shape[d]:
        raise RuntimeError("selected index k out of range")
    idx = apply("topk", [x], {"dim": d, "k": _b.int(k), "largest": _b.bool(largest)})
    values = apply("gather", [x, idx], {"dim": d})
    return ReturnTopk(_label(_like_input(values, input), "TopkBackward0", input),
                      _like_input(idx, input))


def _select_sorted(input: Tensor, d: int, pos, keepdim: bool, rt, name: str):
    """The element at sorted position `pos` along d (an int, or an int64 tensor shaped as the
    keepdim result) and its index in the input."""
    x = _at_least_1d(input)
    order = _argsort(x, d, False)
    if isinstance(pos, Tensor):
        idx = apply("gather", [order, pos], {"dim": d})
    else:
        idx = _slice_dim(order, d, pos, pos + 1)
    values = apply("gather", [x, idx], {"dim": d})
    keep = keepdim and input.ndim > 0
    values, idx = _squeeze_dim(values, d, keep), _squeeze_dim(idx, d, keep)
    return rt(_label(values, name, input), idx)


def _reduced_dim(fn: str, input: Tensor, dim: int) -> int:
    d = norm_dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero size.")
    return d


@numpy_names
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The k-th smallest element (1-based) along dim and its index."""
    D.check_tensor(input, "kthvalue", "input", 1)
    if out is not None:
        return F.values_indices_out(kthvalue(input, k, dim, keepdim), out, "kthvalue", input,
                                    "output values must be of same type as input",
                                    "output indices must be of scalar type Long")
    d = norm_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select_sorted(input, d, k - 1, keepdim, ReturnKthvalue, "KthvalueBackward0")


def _nan_count(x: Tensor, d: int) -> Tensor:
    return F.sum(binary("ne", x, x), d, keepdim=True, dtype=dt.int64)  # NaN != NaN


def _median_pos(x: Tensor, d: int, ignore_nan: bool):
    """Sorted position of the lower median along d: NaNs sort last, so a slice with a NaN
    selects its first NaN (median) or the lower median of the others (nanmedian)."""
    n = x.shape[d]
    if not x._dtype.is_floating_point:
        return (n - 1) // 2
    nans = _nan_count(x, d)
    if ignore_nan:
        valid = binary("sub", n, nans)
        pos = binary("floor_divide", binary("sub", valid, 1), 2)
        return D.elementwise("where", binary("gt", valid, 0), pos, 0)
    return D.elementwise("where", binary("gt", nans, 0), binary("sub", n, nans), (n - 1) // 2)


def _median(fn: str, rt, input: Tensor, dim, keepdim: bool, ignore_nan: bool):
    D.check_tensor(input, fn, "input", 1)
    grad = fn.capitalize() + "Backward"
    if dim is None:
        if input.numel() == 0:
            return _empty_median(input)
        flat = F.reshape(input, (-1,))
        r = _select_sorted(flat, 0, _median_pos(flat, 0, ignore_nan), False, rt,
                           grad + "0").values
        return _label(r, grad + "0", input)
    d = _reduced_dim(fn, input, dim)
    x = _at_least_1d(input)
    r = _select_sorted(input, d, _median_pos(x, d, ignore_nan), keepdim, rt, grad + "1")
    return rt(_label(r.values, grad + "1", input), r.indices)


def _empty_median(input: Tensor) -> Tensor:
    from .creation import full
    return full((), float("nan"), dtype=input._dtype, device=input.device)


@numpy_names
@_pair_out("median")
def median(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median; a slice holding a NaN gives NaN (and that NaN's index)."""
    return _median("median", ReturnMedian, input, dim, keepdim, False)


@numpy_names
@_pair_out("nanmedian")
def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median of the non-NaN values (NaN when a slice has none)."""
    return _median("nanmedian", ReturnNanmedian, input, dim, keepdim, True)


@numpy_names
@_pair_out("mode")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along dim (the smallest of equally frequent ones) and the index
    of its last occurrence, as PyTorch's CPU kernel."""
    D.check_tensor(input, "mode", "input", 1)
    d = _reduced_dim("mode", input, dim)
    x = _at_least_1d(input)
    n = x.shape[d]
    order = _argsort(x, d, False)
    s = apply("gather", [x, order], {"dim": d})
    # in the sorted slice, position i is the (i - start + 1)-th element of its run of equals;
    # the first position reaching the largest such count ends the smallest most frequent run,
    # and (the sort being stable) holds that value's last index
    new_run = F.cat([_ones_bool(s, d), binary("ne", _slice_dim(s, d, 1, n),
                                                  _slice_dim(s, d, 0, n - 1))], d)
    pos = F.expand(_positions(n, d, x.ndim, x), tuple(x.shape))
    starts = D.elementwise("where", new_run, pos, 0)
    run_start = apply("gather", [starts, apply("cumargmax", [starts], {"dim": d})], {"dim": d})
    count = binary("sub", pos, run_start)
    best = apply("argmax", [count], {"dims": (d,), "keepdim": True})
    idx = apply("gather", [order, best], {"dim": d})
    values = apply("gather", [x, idx], {"dim": d})
    keep = keepdim and input.ndim > 0
    return ReturnMode(_label(_squeeze_dim(values, d, keep), "ModeBackward0", input),
                      _squeeze_dim(idx, d, keep))


def _ones_bool(s: Tensor, d: int) -> Tensor:
    from .creation import ones
    shape = list(s.shape)
    shape[d] = 1
    return ones(tuple(shape), dtype=dt.bool_, device=s.device)


# ---------------------------------------------------------------- quantiles

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(fn: str, input: Tensor, q, dim, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    from .creation import tensor
    D.check_tensor(input, fn, "input", 1)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    if input.numel() == 0:
        raise RuntimeError(f"{fn}() input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{fn}() q tensor must be same dtype as the input tensor")
        q = D.check_values(q, f"{fn}() q values must be in the range [0, 1]", lo=0.0, hi=1.0,
                           closed=True)
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{fn}() q must be in the range [0, 1] but got {q}")
        q = tensor(float(q), dtype=input._dtype, device=input.device)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{fn}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is None:
        x, d = F.reshape(input, (-1,)), 0
        keep_shape = (1,) * input.ndim
    else:
        d = norm_dim(dim, input.ndim)
        x = _at_least_1d(input)
        keep_shape = tuple(1 if i == d else s for i, s in enumerate(input.shape))
    # sorted slices along the last dim, one leading row per q
    perm = tuple(i for i in range(x.ndim) if i != d) + (d,)
    s = F.permute(sort(x, d).values, perm)
    batch, n, nq = tuple(s.shape[:-1]), s.shape[-1], q.numel()
    s = F.expand(F.reshape(s, (1,) + tuple(s.shape)), (nq,) + tuple(s.shape))
    qv = F.reshape(q, (nq,) + (1,) * (len(batch) + 1))
    last = _slice_dim(s, s.ndim - 1, n - 1, n)
    if ignore_nan:
        valid = binary("sub", float(n), F.sum(binary("ne", s, s), -1, keepdim=True,
                                               dtype=input._dtype))
        rank = binary("mul", qv, F.clamp(binary("sub", valid, 1.0), min=0.0))
    else:
        rank = F.expand(binary("mul", qv, float(n - 1)), (nq,) + batch + (1,))
    lo = D.unary("floor", rank)
    hi = D.unary("ceil", rank)

    def at(p: Tensor) -> Tensor:
        return apply("gather", [s, cast(p, dt.int64)], {"dim": s.ndim - 1})

    if interpolation == "lower":
        r = at(lo)
    elif interpolation == "higher":
        r = at(hi)
    elif interpolation == "nearest":
        r = at(D.unary("round", rank))  # half to even, as PyTorch and numpy
    elif interpolation == "midpoint":
        r = binary("mul", binary("add", at(lo), at(hi)), 0.5)
    else:
        r = F.lerp(at(lo), at(hi), binary("sub", rank, lo))
    if not ignore_nan:  # a NaN anywhere in a slice makes its quantiles NaN (it sorted last)
        r = D.elementwise("where", binary("ne", last, last), last, r)
    out_shape = ((nq,) if q.ndim else ()) + (keep_shape if keepdim else batch)
    return F.reshape(r, out_shape)


@numpy_names
@_ac.op("quantile")
def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear", out=None) -> Tensor:
    """The q-th quantiles along dim (all elements when dim is None); a 1-d q adds a leading
    dim. NaN in a slice gives NaN."""
    return write_out(_quantile("quantile", input, q, dim, keepdim, interpolation, False), out)


@numpy_names
@_ac.op("nanquantile")
def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear", out=None) -> Tensor:
    """quantile over the non-NaN values of each slice."""
    return write_out(_quantile("nanquantile", input, q, dim, keepdim, interpolation, True),
                     out)


# ---------------------------------------------------------------- searching and counting

def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None,
                 out=None) -> Tensor:
    """Insertion points of `input` in the innermost rows of `sorted_sequence` (one shared
    1-d sequence, or one row per row of `input`)."""
    from .creation import tensor
    D.check_tensor(sorted_sequence, "searchsorted", "sorted_sequence", 1)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    values = input if isinstance(input, Tensor) else tensor(input,
                                                           device=sorted_sequence.device)
    seq = sorted_sequence
    if sorter is not None:
        if sorter.shape != seq.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        seq = F.gather(seq, -1, sorter)
    common = D.promote_args("add", [seq, values])[0]
    seq, values = cast(seq, common), cast(values, common)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           "the first N-1 dimensions of boundaries tensor and input value "
                           "tensor must match, but we got boundaries tensor [] and input "
                           f"value tensor {list(values.shape)}")
    r = apply("searchsorted", [seq, values],
              {"right": _b.bool(right), "dtype": dt.int32 if out_int32 else dt.int64})
    return write_out(r, out)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False,
              out=None) -> Tensor:
    """The bucket of each element among 1-d `boundaries` (searchsorted with the roles
    swapped)."""
    D.check_tensor(boundaries, "bucketize", "boundaries", 2)
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def histc(input: Tensor, bins: int = 100, min=0, max=0, *, out=None) -> Tensor:
    """Counts in `bins` equal bins over [min, max] (the data's range when both are 0; a
    zero-width range widens by 1 each side); values outside, and NaN, are not counted."""
    from .creation import zeros
    D.check_tensor(input, "histc", "input", 1)
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"histogram_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = F.reshape(input, (-1,))  # no gradient path: the counts come from comparisons
    if min == max and x.numel():
        lo, hi = F.amin(x), F.amax(x)  # in the graph: no host read
        same = binary("eq", lo, hi)
        lo = D.elementwise("where", same, binary("sub", lo, 1.0), lo)
        hi = D.elementwise("where", same, binary("add", hi, 1.0), hi)
    else:
        lo, hi = float(min), float(max)
        if lo == hi:
            lo, hi = lo - 1.0, hi + 1.0
    inside = binary("bitwise_and", binary("ge", x, lo), binary("le", x, hi))
    scaled = binary("div", binary("mul", binary("sub", x, lo), float(bins)),
                    hi - lo if isinstance(hi, float) else binary("sub", hi, lo))
    b = F.clamp(cast(D.unary("floor", D.elementwise("where", inside, scaled, 0.0)), dt.int64),
                max=bins - 1)
    counts = zeros((bins,), dtype=input._dtype, device=input.device)
    return write_out(apply("scatter_add", [counts, b, cast(inside, input._dtype)], {"dim": 0}),
                     out)


@numpy_names
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    D.check_tensor(input, "count_nonzero", "input", 1)
    dims = norm_dims(dim, input.ndim)
    return F.sum(binary("ne", input, 0), dims, dtype=dt.int64)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """The first `size` rows of `nonzero(input)`, padded with `fill_value` rows: a shape that
    does not depend on the data, so it stays in the graph. Row r is the flat position where
    the running count of nonzeros first reaches r + 1 (a searchsorted of `size` queries into
    the cumsum), unravelled by the input's dims."""
    from .creation import arange, tensor
    D.check_tensor(input, "nonzero_static", "input", 1)
    if not isinstance(size, int) or isinstance(size, _b.bool) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nd, dev, n = input.ndim, input.device, input.numel()
    if n == 0 or nd == 0 or size == 0:  # nothing to find (a 0-d input has no coordinates)
        from .creation import full
        return full((size, nd), int(fill_value), dtype=dt.int64, device=dev)
    if D.RECORDER is None:  # eager: the host's nonzero is far cheaper than `size` searches
        from .creation import full
        rows = apply("nonzero", [input], {})[:size]
        pad = full((size - rows.shape[0], nd), int(fill_value), dtype=dt.int64, device=dev)
        return F.cat([rows, pad], 0)
    count = cumsum(cast(F.reshape(binary("ne", input, 0), (-1,)), dt.int64), 0)
    rank = arange(1, size + 1, device=dev)
    flat = F.clamp(searchsorted(count, rank), max=n - 1)  # first position reaching rank
    found = binary("le", rank, count[-1])
    strides = np.cumprod((1,) + tuple(input.shape[:0:-1]))[::-1].copy()
    coords = binary("remainder", binary("floor_divide", F.unsqueeze(flat, 1),
                                        tensor(strides, dtype=dt.int64, device=dev)),
                    tensor(np.array(input.shape), dtype=dt.int64, device=dev))
    return D.elementwise("where", F.unsqueeze(found, 1), coords, int(fill_value))


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts (or summed weights) of each non-negative integer; the length depends on the
    largest value, read on the host (a graph break when compiling)."""
    from .creation import zeros
    D.check_tensor(input, "bincount", "input", 1)
    if input._dtype.is_floating_point:
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    _data_read("bincount()")
    host = input._host()
    if input.ndim != 1 or (host.size and host.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and weights.shape != input.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    n = _b.max(int(host.max()) + 1 if host.size else 0, minlength)
    idx = cast(input, dt.int64)
    if weights is None:
        src = D.elementwise("where", binary("ge", idx, 0), 1, 0)  # ones, int64
        return apply("scatter_add", [zeros((n,), dtype=dt.int64, device=input.device), idx,
                                     src], {"dim": 0})
    wdt = dt.float32 if weights._dtype is dt.float32 else dt.float64
    return apply("scatter_add", [zeros((n,), dtype=wdt, device=input.device), idx,
                                 cast(weights, wdt)], {"dim": 0})


# ---------------------------------------------------------------- gathering by index

def take(input: Tensor, index: Tensor, *, out=None) -> Tensor:
    """input.flatten()[index]: negative indices count from the end."""
    D.check_tensor(index, "take", "index", 2)
    if isinstance(out, Tensor) and out._dtype is not input._dtype:
        raise RuntimeError(f"take(): self and out expected to have the same dtype, but got "
                           f"self.dtype = {D._torch_name(input._dtype)} and out.dtype = "
                           f"{D._torch_name(out._dtype)}")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{D._torch_name(index._dtype)}")
    n = input.numel()
    index = D.check_values(index, f"out of range: tried to access index {{value}} on a tensor "
                                  f"of {n} elements.", lo=-n, hi=n, error="IndexError")
    wrapped = D.elementwise("where", binary("lt", index, 0), binary("add", index, n), index)
    flat = F.reshape(input, (-1,))
    r = apply("index", [flat, wrapped], {"spec": (("tensor", 0),)})
    return write_out(_label(r, "TakeBackward0", input), out, name="take", inputs=(input, index))


@numpy_names
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *,
                   out=None) -> Tensor:
    """Values of `input` at `indices` along dim (numpy's take_along_axis; the two broadcast
    apart from dim); dim None takes from the flattened input."""
    D.check_tensor(indices, "take_along_dim", "indices", 2)
    if dim is None:
        return write_out(F.gather(F.reshape(input, (-1,)), 0,
                                  cast(F.reshape(indices, (-1,)), dt.int64)), out)
    if indices._dtype is not dt.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{D._torch_name(indices._dtype)}")
    if input.ndim != indices.ndim:
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
            f"dimensions for indices")
    d = norm_dim(dim, input.ndim)
    x, idx = _at_least_1d(input), _at_least_1d(indices)
    n = x.shape[d]
    shape = list(broadcast_many([tuple(1 if i == d else s for i, s in enumerate(t.shape))
                                 for t in (x, idx)]))
    x = F.expand(x, tuple(shape[:d]) + (n,) + tuple(shape[d + 1:]))
    idx = F.expand(idx, tuple(shape[:d]) + (idx.shape[d],) + tuple(shape[d + 1:]))
    idx = D.check_values(idx, f"index {{value}} is out of bounds for dimension {d} with size "
                              f"{n}", lo=-n, hi=n)
    idx = D.elementwise("where", binary("lt", idx, 0), binary("add", idx, n), idx)
    return write_out(_like_input(apply("gather", [x, idx], {"dim": d}), input), out)


def masked_select(input: Tensor, mask: Tensor, *, out=None) -> Tensor:
    """The elements where `mask` (broadcast with input) holds, as a 1-d tensor: its length
    depends on the mask, so a compiled graph breaks here (nonzero)."""
    D.check_tensor(input, "masked_select", "input", 1)
    D.check_tensor(mask, "masked_select", "mask", 2)
    if mask._dtype is not dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_many([tuple(input.shape), tuple(mask.shape)])
    x, m = F.expand(input, shape), F.expand(mask, shape)
    r = F.reshape(x, (-1,))[F.reshape(m, (-1,))]
    return write_out(_label(r, "MaskedSelectBackward0", input), out, name="masked_select",
                     inputs=(input, mask))


# ---------------------------------------------------------------- unique (host)

def _host_result(arrays, like: Tensor, dtypes):
    from .creation import tensor
    # (np.ascontiguousarray would make a 0-d inverse 1-d)
    return [tensor(np.require(a, requirements="C"), dtype=d, device=like.device)
            for a, d in zip(arrays, dtypes)]


def _pack(values, inverse, counts, return_inverse: bool, return_counts: bool):
    if not (return_inverse or return_counts):
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())


def _check_unique_dim(shape: tuple, d: int) -> None:
    if 0 in shape[:d] + shape[d + 1:]:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None):
    """The distinct values (sorted, as PyTorch's CPU kernel returns them even for
    sorted=False), optionally the inverse mapping and the counts. Computed on the host: the
    output size depends on the values (a graph break when compiling); not differentiable."""
    D.check_tensor(input, "unique", "input", 1)
    _data_read("unique()")
    a = input._host()
    if dim is None:
        v, inv, cnt = np.unique(a.ravel(), return_inverse=True, return_counts=True,
                                equal_nan=False)
        inv = inv.reshape(a.shape)
    else:
        d = norm_dim(dim, input.ndim)
        _check_unique_dim(a.shape, d)
        v, inv, cnt = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    values, inverse, counts = _host_result((v, inv, cnt), input,
                                           (input._dtype, dt.int64, dt.int64))
    return _pack(values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False, dim: int | None = None):
    """Collapses runs of equal consecutive values (slices along dim); on the host."""
    D.check_tensor(input, "unique_consecutive", "input", 1)
    _data_read("unique_consecutive()")
    a = input._host()
    if dim is None:
        rows, d = a.reshape(-1, 1), None
    else:
        d = norm_dim(dim, input.ndim)
        _check_unique_dim(a.shape, d)
        if a.shape[d] == 0:
            return _pack(*_host_result((a, np.zeros(0, np.int64), np.zeros(0, np.int64)),
                                       input, (input._dtype, dt.int64, dt.int64)),
                         return_inverse, return_counts)
        rows = np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
    n = rows.shape[0]
    change = np.ones(n, dtype=bool)
    if n > 1:
        change[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    starts = np.flatnonzero(change)
    inverse = np.cumsum(change) - 1
    counts = np.diff(np.append(starts, n))
    if d is None:
        v = a.reshape(-1)[starts]
        inverse = inverse.reshape(a.shape)
    else:
        v = np.take(a, starts, axis=d)
    values, inv, cnt = _host_result((v, inverse, counts), input,
                                    (input._dtype, dt.int64, dt.int64))
    return _pack(values, inv, cnt, return_inverse, return_counts)


# what fusetorch exports (and Tensor binds as methods) from here
PUBLIC = ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "sort", "argsort", "topk",
          "kthvalue", "median", "nanmedian", "mode", "quantile", "nanquantile", "searchsorted",
          "bucketize", "histc", "count_nonzero", "bincount", "take", "take_along_dim",
          "masked_select", "unique", "unique_consecutive", "nonzero_static")
# Tensor methods: all but the two PyTorch has only as functions; in place: x.cumsum_(0)
METHODS = tuple(n for n in PUBLIC if n not in ("searchsorted", "bucketize"))
