"""torch.segment_reduce (issue 27): reductions over consecutive segments of one axis, the
segments given by their `lengths` (or `offsets`), as ATen's CPU kernel defines them.

Each element's segment is the number of segment ends at or before its position (marks at
the lengths' running sums, summed up), and the reduction is one `scatter_reduce` into a
base that holds `initial` (or the reduction's identity: 0, 1, -inf, inf), so `initial` takes
part in every segment as ATen's does (for max and min it joins after, by a `where`); `mean` divides that sum by the segment's length, and an
empty segment is `initial` (NaN without one). The output's shape depends only on the lengths'
shape, so everything stays in the graph; the length checks are `check` nodes. Eager calls
along axis 0 that nothing records take numpy's `reduceat` (the same values, 2**20 elements in
a fraction of the scatter's time).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from . import dispatch as D
from . import functional as F
from .dispatch import binary, cast
from .dispatch import apply
from .functional_scan import cumsum
from .functional_shape import scatter_reduce
from .tensor import Tensor

_REDUCE = {"sum": "sum", "prod": "prod", "mean": "sum", "max": "amax", "amax": "amax",
           "min": "amin", "amin": "amin"}
_IDENTITY = {"sum": 0.0, "prod": 1.0, "mean": 0.0, "max": -math.inf, "amax": -math.inf,
             "min": math.inf, "amin": math.inf}


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> Tensor:
    """Reduce `data` along `axis` over segments of `lengths[..., i]` consecutive elements
    (lengths' leading dims are data's leading dims): 'sum', 'prod', 'mean', 'max', 'min'."""
    from .creation import full, zeros
    D.check_tensor(data, "segment_reduce", "data", 1)
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if data._dtype not in (dt.float16, dt.bfloat16, dt.float32, dt.float64):
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for '
                                  f"'{D._torch_name(data._dtype)}'")
    if lengths is None:
        D.check_tensor(offsets, "segment_reduce", "offsets", 4)
        lengths = binary("sub", offsets[..., 1:], offsets[..., :-1])
    D.check_tensor(lengths, "segment_reduce", "lengths", 3)
    if data.ndim < lengths.ndim:
        raise RuntimeError("Expected data.dim() >= lengths_value.dim() to be true, but got "
                           "false.")
    if lengths._dtype not in (dt.int32, dt.int64):
        raise NotImplementedError(f'"_segment_reduce_lengths_cpu_kernel1" not implemented for '
                                  f"'{D._torch_name(lengths._dtype)}'")
    axis = norm_dim(axis, data.ndim)
    if lengths.ndim != axis + 1 or tuple(lengths.shape[:-1]) != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): Expected lengths of shape {list(data.shape[:axis])}"
                           f" + [segments] for axis {axis}, but got {list(lengths.shape)}")
    size = data.shape[axis]
    lengths = cast(lengths, dt.int64)
    if not unsafe:
        lengths = D.check_values(lengths, "lengths contains negative value!", lo=0)
        total = D.check_values(F.sum(lengths, -1), "segment_reduce(): Expected all rows of "
                               "lengths along axis to sum to data.size(lengths.dim()-1) when "
                               "!unsafe.", lo=size, hi=size, closed=True)
        # the sum check has no reader of its own: lengths depend on it, so it stays in graphs
        lengths = binary("add", lengths, binary("mul", F.unsqueeze(total, -1), 0))
    lead = tuple(data.shape[:axis])
    nseg = lengths.shape[-1]
    if axis == 0 and D.RECORDER is None and data._be.xp is np and data.numel() and not (
            D.GRAD_ENABLED and D.needs_grad(data)):
        host = lengths._host()
        if int(host.sum()) == size:  # eager, nothing records: numpy's reduceat
            return _reduceat(data, host, reduce, initial)
    # each element's segment counts the segment ends at or before it: a mark at every end
    # (ends past the data land on a spare last slot), summed up; positions past the last
    # segment (unsafe lengths that sum short) get segment nseg, a spare one dropped below
    ends = F.clamp(cumsum(lengths, -1), max=size)
    marks = zeros(lead + (size + 1,), dtype=dt.int64, device=data.device)
    marks = apply("scatter_add", [marks, ends, F.mul(ends, 0) + 1], {"dim": len(lead)})
    seg = F.narrow(cumsum(marks, -1), -1, 0, size)
    trailing = tuple(data.shape[axis + 1:])
    index = F.expand(F.reshape(seg, lead + (size,) + (1,) * len(trailing)), *data.shape)
    extreme = _REDUCE[reduce] in ("amax", "amin")
    # an extreme's initial joins after the reduction: values tied with it keep their whole
    # gradient share, as ATen's backward counts ties among the data only
    start = _IDENTITY[reduce] if initial is None or extreme else float(initial)
    base = full(lead + (nseg + 1,) + trailing, start, dtype=data.dtype, device=data.device)
    if data.numel() == 0:
        out = base
    else:
        out = scatter_reduce(base, axis, index, data, _REDUCE[reduce], include_self=True)
    out = F.narrow(out, axis, 0, nseg)
    if extreme and initial is not None:
        beats = binary("gt" if _REDUCE[reduce] == "amax" else "lt", float(initial), out)
        out = D.elementwise("where", beats, float(initial), out)
    if reduce != "mean":
        return out
    count = cast(F.reshape(lengths, lead + (nseg,) + (1,) * len(trailing)), data._dtype)
    empty = binary("eq", count, 0)
    safe = D.elementwise("where", empty, 1.0, count)
    empty_value = math.nan if initial is None else float(initial)
    return D.elementwise("where", empty, empty_value, binary("div", out, safe))


_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "max": np.maximum,
          "amax": np.maximum, "min": np.minimum, "amin": np.minimum}


def _reduceat(data: Tensor, lengths: np.ndarray, reduce: str, initial) -> Tensor:
    """segment_reduce along axis 0 of lengths that cover the data exactly, by the ufunc's
    reduceat over the non-empty segments (whose starts increase, each running to the next);
    empty ones are `initial` or the empty value."""
    a = data._data
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    full = lengths > 0
    ufunc = _UFUNC[reduce]
    vals = ufunc.reduceat(a, starts[full], axis=0)
    shape = (-1,) + (1,) * (a.ndim - 1)
    if initial is not None:
        vals = ufunc(vals, a.dtype.type(initial))
    if reduce == "mean":
        vals = vals / lengths[full].reshape(shape).astype(a.dtype)
    fill = (np.nan if reduce == "mean" else _IDENTITY[reduce]) if initial is None else initial
    out = np.full((len(lengths),) + a.shape[1:], fill, dtype=a.dtype)
    out[full] = vals
    return Tensor._make(out, data._dtype, data._be)


PUBLIC = ("segment_reduce",)
