"""torch.histogram and torch.histogramdd (issue 27), as ATen's histogramdd computes them.

One definition for both (PyTorch's histogram is histogramdd of the flattened input as [M, 1]):
bin edges are the given 1-d tensors, or `linspace(min, max, bins + 1)` in the input's dtype over
`range` (else the data's range per dimension, read on the host as PyTorch's `.item()` does; a
zero-width range widens by 0.5 each side; empty input spans [0, 1]). A point counts when
`edges[0] <= x <= edges[-1]` in every dimension (NaN never does); its bin is
`searchsorted(edges, x, right=True) - 1` for given edges, and for equal-width bins ATen's
linear guess checked against its neighbouring edges; the last bin is closed on the right. Counts (or summed
weights) are a `scatter_add` over the bins' row-major index; `density` divides by the total and
by each dimension's bin widths. Everything after the host read is graph primitives, so compiled
code recomputes it from the data. The results carry no gradient (PyTorch defines none).
"""
from __future__ import annotations

import builtins as _b
import math

from ..ir import dtypes as dt
from . import autograd as A
from . import dispatch as D
from . import functional as F
from .dispatch import apply, binary, cast
from .functional_scan import _return_type, searchsorted
from .out_args import write_out
from .tensor import Tensor, _data_read

ReturnHistogram = _return_type("histogram", ("hist", "bin_edges"))
ReturnHistogramdd = _return_type("histogramdd", ("hist", "bin_edges"))

_PREFIX = "torch.histogramdd: "


def _g(v: float) -> str:
    """A double as C++'s ostream prints it (six significant digits)."""
    return f"{v:g}"


def _check_input(input: Tensor, weight: Tensor | None) -> None:
    D.check_tensor(input, "histogramdd", "input", 1)
    if input._dtype not in (dt.float32, dt.float64):
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    if weight is not None:
        D.check_tensor(weight, "histogramdd", "weight", 4)
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"{_PREFIX}if weight tensor is provided it should have the same "
                               f"shape as the input tensor excluding its innermost dimension, "
                               f"but got input with shape {list(input.shape)} and weight with "
                               f"shape {list(weight.shape)}")
        if weight._dtype is not input._dtype:
            raise RuntimeError(f"{_PREFIX}if weight tensor is provided, input tensor and weight "
                               f"tensor should have the same dtype, but got "
                               f"input({dt.CPP_TYPE_NAMES[input._dtype.name]}), and "
                               f"weight({dt.CPP_TYPE_NAMES[weight._dtype.name]})")


def _outer_edges(points: Tensor, n: int, range) -> list:
    """ATen's select_outer_bin_edges: [(left, right)] per dimension, as Python floats."""
    if range is not None:
        r = [float(v) for v in range]
        if len(r) != 2 * n:
            raise RuntimeError(f"{_PREFIX}for a {n}-dimensional histogram range should have "
                               f"{2 * n} elements, but got {len(r)}")
        pairs = [(r[2 * d], r[2 * d + 1]) for d in _b.range(n)]
    elif points.numel():
        _data_read("histogram()")
        host = points._host()
        pairs = [(float(host[:, d].min()), float(host[:, d].max())) for d in _b.range(n)]
    else:
        pairs = [(0.0, 1.0)] * n
    out = []
    for d, (lo, hi) in enumerate(pairs):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"{_PREFIX}dimension {d}'s range [{_g(lo)}, {_g(hi)}] is not "
                               f"finite")
        if lo > hi:
            raise RuntimeError(f"{_PREFIX}min should not exceed max, but got min {_g(lo)} max "
                               f"{_g(hi)} for dimension {d}")
        out.append((lo - 0.5, hi + 0.5) if lo == hi else (lo, hi))
    return out


def _edges(points: Tensor, bins: list, range) -> list:
    from .creation import linspace
    n = points.shape[-1]
    for d, b in enumerate(bins):
        count = b.numel() - 1 if isinstance(b, Tensor) else int(b)
        if isinstance(b, Tensor) and b.ndim != 1:
            raise RuntimeError(f"{_PREFIX}bins tensor should have one dimension, but got "
                               f"{b.ndim} dimensions in the bins tensor for dimension {d}")
        if count <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {count} for "
                               f"dimension {d}")
        if isinstance(b, Tensor) and b._dtype is not points._dtype:
            raise RuntimeError(f"{_PREFIX}input tensor and bins tensors should have the same "
                               f"dtype, but got input with dtype "
                               f"{dt.CPP_TYPE_NAMES[points._dtype.name]} and bins for dimension "
                               f"{d} with dtype {dt.CPP_TYPE_NAMES[b._dtype.name]}")
    if all(isinstance(b, Tensor) for b in bins):
        return [b.clone() for b in bins]
    outer = _outer_edges(points, n, range)
    return [b.clone() if isinstance(b, Tensor) else
            linspace(lo, hi, int(b) + 1, dtype=points.dtype, device=points.device)
            for b, (lo, hi) in zip(bins, outer)]


def _linear_bin(x: Tensor, ok: Tensor, e: Tensor) -> Tensor:
    """ATen's LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH for equal-width edges: the bin
    `(x - left) * bins / (right - left)` truncated, then upper_bound among the edges
    [pos - 1, pos + 2) only (three comparisons with gathered edges), as ATen finds it."""
    n_edges = e.shape[0]
    lo, hi = e[0], e[-1]
    safe = D.elementwise("where", ok, x, lo)  # (outside values never cast to an integer)
    pos = cast(binary("div", binary("mul", binary("sub", safe, lo), n_edges - 1),
                      binary("sub", hi, lo)), dt.int64)
    first = F.clamp(binary("sub", pos, 1), min=0)
    stop = F.clamp(binary("add", pos, 2), max=n_edges)
    found = binary("sub", first, 1)
    for j in range(3):
        at = binary("add", first, j)
        edge = e[F.clamp(at, max=n_edges - 1)]
        below = binary("bitwise_and", binary("lt", at, stop), binary("le", edge, safe))
        found = binary("add", found, cast(below, dt.int64))
    return found


def _counts(points: Tensor, edges: list, weight: Tensor | None, density: bool,
            equal_width: list) -> Tensor:
    from .creation import zeros
    sizes = tuple(e.shape[0] - 1 for e in edges)
    inside, flat = None, None
    for d, e in enumerate(edges):
        x = points[:, d]
        ok = binary("bitwise_and", binary("ge", x, e[0]), binary("le", x, e[-1]))
        pos = _linear_bin(x, ok, e) if equal_width[d] else \
            binary("sub", searchsorted(e, x, right=True), 1)
        pos = F.clamp(pos, 0, sizes[d] - 1)  # (the last bin is closed: ATen's pos -= 1)
        inside = ok if inside is None else binary("bitwise_and", inside, ok)
        flat = pos if flat is None else binary("add", binary("mul", flat, sizes[d]), pos)
    w = cast(inside, points._dtype) if weight is None else \
        D.elementwise("where", inside, weight, 0.0)
    flat = D.elementwise("where", inside, flat, 0)
    total = zeros((math.prod(sizes),), dtype=points.dtype, device=points.device)
    hist = F.reshape(apply("scatter_add", [total, flat, w], {"dim": 0}), sizes)
    if density:
        hist = binary("div", hist, F.sum(hist))
        for d, e in enumerate(edges):
            shape = [1] * len(sizes)
            shape[d] = sizes[d]
            width = binary("sub", e[1:], e[:-1])
            hist = binary("div", hist, F.reshape(width, tuple(shape)))
    return hist


def _bins_list(bins, n: int) -> list:
    """One int or D ints or D edge tensors, as a list of D (a lone tensor is PyTorch's
    argument error)."""
    if isinstance(bins, int):
        return [bins] * n
    if isinstance(bins, Tensor):
        raise TypeError(
            "histogramdd() received an invalid combination of arguments - got (Tensor, "
            "bins=Tensor), but expected one of:\n * (Tensor input, int bins, tuple of floats "
            "range = None, Tensor weight = None, bool density = False)\n * (Tensor input, tuple "
            "of ints bins, tuple of floats range = None, Tensor weight = None, bool density = "
            "False)\n * (Tensor input, tuple of Tensors bins, tuple of floats range = None, "
            "Tensor weight = None, bool density = False)")
    bins = list(bins)
    if len(bins) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    return bins


def histogramdd(input: Tensor, bins, *, range=None, weight: Tensor | None = None,
                density: bool = False, out=None):
    """The histogram of the points input[..., D] (all but the last dim flattened): `bins` an
    int, D ints or D 1-d edge tensors; returns (hist, bin_edges tuple)."""
    _check_input(input, weight)
    if input.ndim < 2:
        raise RuntimeError(f"{_PREFIX}input tensor should have at least 2 dimensions")
    n = input.shape[-1]
    bins = _bins_list(bins, n)
    points = F.reshape(input, (-1, n))
    with A.no_grad():
        edges = _edges(points, bins, range)
        w = None if weight is None else F.reshape(weight, (-1,))
        hist = _counts(points, edges, w, bool(density),
                       [not isinstance(b, Tensor) for b in bins])
    if out is not None:
        hist = write_out(hist, out[0])
        edges = [write_out(e, o) for e, o in zip(edges, out[1])]
    return ReturnHistogramdd(hist, tuple(edges))


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None,
              density: bool = False, out=None):
    """The histogram of all of input's values: `bins` equal bins over `range` (min, max) or
    the data's range, or the edges of a 1-d tensor; returns (hist, bin_edges)."""
    D.check_tensor(input, "histogram", "input", 1)
    if weight is not None:
        D.check_tensor(weight, "histogram", "weight", 4)
    points = F.reshape(input, (-1, 1))
    w = weight  # flattened with the input when it has as many elements (ATen's reshape)
    if weight is not None and weight.numel() == input.numel():
        w = F.reshape(weight, (-1,))
    hist, edges = histogramdd(points, [bins], range=range, weight=w, density=density)
    if out is not None:
        return ReturnHistogram(write_out(hist, out[0]), write_out(edges[0], out[1]))
    return ReturnHistogram(hist, edges[0])


PUBLIC = ("histogram", "histogramdd")
METHODS = ("histogram",)
