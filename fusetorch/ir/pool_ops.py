"""2-d and 3-d max pooling as primitives (issue 28): their values and PyTorch's indices.

    max_pool2d(x [N, C, H, W]; kernel, stride, padding, dilation, ceil_mode)  -> [N, C, OH, OW]
    max_pool2d_index(x; the same)                     -> int64 [N, C, OH, OW], flat in each plane
    max_pool3d, max_pool3d_index, max_pool3d_grad: the same over [N, C, D, H, W] volumes

Each window's pick is PyTorch's CPU kernels': the scan starts at -inf with the window's first
element inside the input and takes an element `if (val > maxval || isnan(val))`, so the last
NaN wins, else the first maximum, and a window of -infs keeps its first element inside the
input (never the padding). The index is that element's position row * W + col in its input
plane, as `return_indices` gives it.

Composed of other primitives this was ~ten nodes (unfold2d with -inf padding, a window copy,
argmax raised to the last NaN and to the first inside position, a gather), which the eager
kernel, the compiled group and ONNX export each had to recognise again. As primitives:

- the VJP of the values is a third primitive, max_pool2d_grad(x, g): the cotangent added
  into zeros at the index (overlapping windows that pick one element add up there), the
  picks found again from x, which the values save (PyTorch saves the indices; a scan of x
  costs about what reading them back does, and the forward need not write them);
- eager runs one C kernel for each on the CPU (runtime/eager.py hands them to
  `eager_kernels.max_pool2d` and `max_pool2d_grad`), numpy elsewhere;
- compiled CPU programs keep the nodes whole (`own_kernel`: one template writes the values
  and indices of one input, another the gradient: codegen/fuse.py); other backends get each
  op's `composition` (the index as the primitives above, the gradient a scatter_add);
- ONNX export writes MaxPool for the values (onnx/ops.py).

The 3-d primitives have no kernel of their own: eager runs the numpy scan, compiled graphs the
compositions (one strided slice per kernel tap in place of unfold2d).
"""
from __future__ import annotations

import itertools
import math

from . import dtypes as dt
from .ops import _def, arg, unfold2d_shape

ATTRS = ("kernel", "stride", "padding", "dilation", "ceil_mode")
PARTS = ("max_pool2d", "max_pool2d_index")  # what one kernel writes (templates/c/max_pool2d*)
# each values primitive's index and gradient primitives
INDEX = {"max_pool2d": "max_pool2d_index", "max_pool3d": "max_pool3d_index"}
GRAD = {"max_pool2d": "max_pool2d_grad", "max_pool3d": "max_pool3d_grad"}
_GRAD_INDEX = {"max_pool2d_grad": "max_pool2d_index", "max_pool3d_grad": "max_pool3d_index"}


def out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: with ceil_mode the last window may start past the end,
    but not past the input plus its left padding."""
    span = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = span // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def geometry(shape: tuple, a: dict) -> tuple:
    """((OH, OW), (extra rows, extra columns)): the output's size, and the -inf padding
    ceil_mode's last windows read past the bottom and right edges beyond `padding`."""
    out, extra = [], []
    for n, k, s, p, d in zip(shape[2:], a["kernel"], a["stride"], a["padding"], a["dilation"]):
        o = out_size(n, k, s, p, d, a["ceil_mode"])
        out.append(o)
        extra.append(max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p)))
    return tuple(out), tuple(extra)


def _grid(per_dim: list, weights: list, base: int = 0):
    """Nested lists over the product of `per_dim`'s values: base + sum(v_i * weights[i])."""
    if not per_dim:
        return base
    return [_grid(per_dim[1:], weights[1:], base + v * weights[0]) for v in per_dim[0]]


def _row_major(sizes: tuple) -> list:
    return [math.prod(sizes[i + 1:]) for i in range(len(sizes))]


def first_inside(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 out: tuple) -> list | None:
    """[OH][OW] ([OD][OH][OW]) nested lists: each window's first position (its taps in
    row-major order) inside the input, or None when that is 0 for every window (no window
    starts in the padding). A window's inside taps are a box of it, so every inside position
    is at or after the first one."""
    firsts = []
    for k, s, p, d, o in zip(kernel, stride, padding, dilation, out):
        starts = [y * s - p for y in range(o)]
        # the first tap i with start + i * d >= 0 (one exists: padding <= half the window)
        firsts.append([0 if a >= 0 else (-a + d - 1) // d for a in starts])
    if not any(any(f) for f in firsts):
        return None
    return _grid(firsts, _row_major(tuple(kernel)))


def lowest(d: dt.DType):
    """The padding value that never wins a max: -inf, or the integer type's minimum."""
    if d.is_floating_point:
        return -float("inf")
    if d is dt.bool_:
        return False
    bits = d.itemsize * 8
    return -(1 << (bits - 1)) if d.category == 1 and d.name.startswith("int") else 0


def _shape(shapes, a):
    x = tuple(shapes[0])
    if len(x) != 2 + len(a["kernel"]):
        raise RuntimeError(f"max pooling primitives over {len(a['kernel'])} dims take "
                           f"[N, C, {len(a['kernel'])} sizes], got {list(x)}")
    out, _ = geometry(x, a)
    if min(out) < 1:
        raise RuntimeError(f"max pooling: output size {'x'.join(map(str, out))} of an input "
                           f"{list(x)}")
    return x[:2] + out


def _same(dtypes, _a):
    return dtypes[0]


def _index_dtype(_dtypes, _a):
    return dt.int64


# ---------------------------------------------------------------- eager (any array module)

def _tap_slices(tap: tuple, a: dict, out: tuple) -> tuple:
    """The strided slice of the padded input that kernel tap `tap` reads for every window."""
    return tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                 for t, d, o, s in zip(tap, a["dilation"], out, a["stride"]))


def _stacked(xp, x, a):
    """(r, out): the padded input's windows stacked [K, N, C, *out], taps in row-major order."""
    padding, spatial = tuple(a["padding"]), tuple(x.shape[2:])
    out, extra = geometry(x.shape, a)
    padded = x
    if any(padding) or any(extra):
        padded = xp.full(tuple(x.shape[:2]) + tuple(s + 2 * p + e for s, p, e in zip(
            spatial, padding, extra)), _lowest_of(xp, x), dtype=x.dtype)
        padded[(slice(None),) * 2 + tuple(slice(p, p + s) for p, s in zip(padding, spatial))] = x
    taps = itertools.product(*(range(k) for k in a["kernel"]))
    return xp.stack([padded[(slice(None),) * 2 + _tap_slices(t, a, out)] for t in taps]), out


def _index(xp, x, a):
    """PyTorch's pick as a flat input position, by the composition's steps on arrays: argmax
    (numpy's first NaN or first maximum) raised to the last NaN and to the first position
    inside the input."""
    kernel, padding, nd = tuple(a["kernel"]), tuple(a["padding"]), len(a["kernel"])
    r, out = _stacked(xp, x, a)
    pos = r.argmax(axis=0)
    if x.dtype.kind in "fV":  # the last NaN, where the first one won (rarely: looked for there)
        won = xp.take_along_axis(r, pos[None], 0)[0]
        if (won != won).any():
            nan = r != r
            last = (r.shape[0] - 1) - nan[::-1].argmax(axis=0)
            pos = xp.where(nan.any(axis=0), last, pos)
    first = first_inside(kernel, a["stride"], padding, a["dilation"], out)
    if first is not None:
        pos = xp.maximum(pos, xp.asarray(first, dtype=pos.dtype))
    flat, spatial = 0, tuple(x.shape[2:])
    for i, (w, o) in enumerate(zip(_row_major(kernel), out)):
        along = [1] * nd
        along[i] = o
        start = (xp.arange(o) * a["stride"][i] - padding[i]).reshape(along)
        flat = flat * spatial[i] + start + (pos // w) % kernel[i] * a["dilation"][i]
    return flat.astype("int64")


def _lowest_of(xp, x):
    """`lowest` for an array's dtype."""
    kind = x.dtype.kind
    if kind in "fV":  # (bfloat16 is ml_dtypes' "V")
        return -float("inf")
    return False if kind == "b" else xp.iinfo(x.dtype).min


def _values_eager(xp):
    def max_pool2d(x, **a):
        # (the pick's value: NaN where one is, else the maximum; the padding never exceeds it)
        return _stacked(xp, x, a)[0].max(axis=0)
    return max_pool2d


def _index_eager(xp):
    def max_pool2d_index(x, **a):
        return _index(xp, x, a)
    return max_pool2d_index


# ---------------------------------------------------------------- VJP

def _vjp(b, n, g):
    return (b.op(GRAD[n.op], b.value(arg(n)), g, **n.attrs),)


def _grad_shape(shapes, a):
    x, g = tuple(shapes[0]), tuple(shapes[1])
    if g != _shape([x], a):
        raise RuntimeError(f"max pooling's gradient: a cotangent {list(g)} for an input "
                           f"{list(x)}")
    return x


def _grad_dtype(dtypes, _a):
    if dtypes[0] is not dtypes[1] or not dtypes[0].is_floating_point:
        raise TypeError(f"max pooling's gradient takes one floating dtype, got {list(dtypes)}")
    return dtypes[0]


def _grad_eager(xp):
    def max_pool2d_grad(x, g, **a):
        # (bincount adds in double: the CPU's table runs scatter_add's order instead,
        # runtime/eager.py)
        idx = _index(xp, x, a)
        n, c = x.shape[:2]
        planes = xp.arange(n * c).reshape((n, c) + (1,) * (x.ndim - 2)) * math.prod(x.shape[2:])
        sums = xp.bincount((idx + planes).reshape(-1), weights=g.reshape(-1),
                           minlength=x.size)
        return sums.astype(x.dtype).reshape(x.shape)
    return max_pool2d_grad


def _vjp_grad(b, n, gg):
    """The cotangent's part is linear: gg read at the index (max pooling's values of gg at
    x's picks); x's is zero almost everywhere (the picks are locally constant)."""
    x, g = arg(n, 0), arg(n, 1)
    nb, c = g.shape[:2]
    idx = b.op("reshape", b.op(_GRAD_INDEX[n.op], b.value(x), **n.attrs),
               shape=(nb, c, math.prod(g.shape[2:])))
    flat = b.op("reshape", gg, shape=(nb, c, math.prod(x.shape[2:])))
    return (None, b.op("reshape", b.op("gather", flat, idx, dim=2), shape=g.shape))


# ---------------------------------------------------------------- composition

def _padded(make, x, a, low, padding: tuple, extra: tuple, meta):
    """x written into an image of the lowest value, `padding` before and `padding + extra`
    after each spatial dim (the input itself where there is none)."""
    if not any(padding) and not any(extra):
        return x
    shape = tuple(x.shape[:2]) + tuple(s + 2 * p + e for s, p, e in zip(x.shape[2:], padding,
                                                                         extra))
    image = make("full", [], {"shape": shape, "dtype": x.dtype, "value": low})
    spec = (("slice", 0, x.shape[0], 1), ("slice", 0, x.shape[1], 1)) + tuple(
        ("slice", p, p + s, 1) for p, s in zip(padding, x.shape[2:]))
    return make("index_put", [image, x], {"spec": spec, "accumulate": False}, meta)


def _windows(n, make, low):
    """r [N, C, K, *out]: the windows' K taps, in row-major kernel order."""
    a, x, meta = n.attrs, arg(n), n.meta
    out, extra = geometry(x.shape, a)
    nb, c = x.shape[:2]
    k = math.prod(a["kernel"])
    if len(out) == 2:  # unfold2d pads and reads the windows (its kernels fuse)
        x = _padded(make, x, a, low, (0, 0), extra, meta)
        win = make("unfold2d", [x], {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"]),
                                     "padding": tuple(a["padding"]),
                                     "dilation": tuple(a["dilation"]), "pad_value": low}, meta)
        return make("reshape", [win], {"shape": (nb, c, k) + out}, meta)
    x = _padded(make, x, a, low, tuple(a["padding"]), extra, meta)
    taps = []
    for t in itertools.product(*(range(q) for q in a["kernel"])):
        spec = (("slice", 0, nb, 1), ("slice", 0, c, 1)) + tuple(
            ("slice", s.start, s.stop, s.step) for s in _tap_slices(t, a, out))
        taps.append(make("reshape", [make("index", [x], {"spec": spec}, meta)],
                         {"shape": (nb, c, 1) + out}, meta))
    return taps[0] if k == 1 else make("cat", taps, {"dim": 2}, meta)


def _wrapped(v, levels: int):
    for _ in range(levels):
        v = [v]
    return v


def _windows_pick(n, make):
    """(r [N, C, K, *out], window position [N, C, 1, *out]) as primitives: the windows of the
    input padded with the lowest value (unfold2d in 2-d, a strided slice per tap in 3-d) and
    the pick."""
    a, x, meta = n.attrs, arg(n), n.meta
    low = lowest(x.dtype)
    out, _ = geometry(x.shape, a)
    nd, k = len(out), math.prod(a["kernel"])
    r = _windows(n, make, low)
    pick = make("argmax", [r], {"dims": (2,), "keepdim": True}, meta)
    first = first_inside(a["kernel"], a["stride"], a["padding"], a["dilation"], out)
    floor = None
    if first is not None:
        floor = make("constant", [], {"shape": (1, 1, 1) + out, "dtype": dt.int64,
                                      "value": _wrapped(first, 3)})
    if x.dtype.is_floating_point:  # raised to the last NaN's position
        iota = make("constant", [], {"shape": (1, 1, k) + (1,) * nd, "dtype": dt.int64,
                                     "value": _wrapped([_wrapped(i, nd) for i in range(k)], 2)})
        if floor is None:
            floor = make("constant", [], {"shape": (), "dtype": dt.int64, "value": 0})
        nan = make("ne", [r, r], {}, meta)
        floor = make("max", [make("where", [nan, iota, floor], {}, meta)],
                     {"dims": (2,), "keepdim": True}, meta)
    if floor is not None:
        pick = make("maximum", [pick, floor], {}, meta)
    return r, pick


def _values_parts(n, make):
    r, pick = _windows_pick(n, make)
    return make("reshape", [make("gather", [r, pick], {"dim": 2}, n.meta)],
                {"shape": n.shape}, n.meta)


def _index_parts(n, make):
    """The window position mapped to the flat input position by a [1, 1, K, *out] table."""
    r, pick = _windows_pick(n, make)
    a, spatial, out = n.attrs, tuple(arg(n).shape[2:]), tuple(n.shape[2:])
    weights = _row_major(spatial)
    table = [_grid([[o * s - p + t * d for o in range(size)] for size, s, p, t, d in zip(
        out, a["stride"], a["padding"], tap, a["dilation"])], weights)
        for tap in itertools.product(*(range(q) for q in a["kernel"]))]
    t = make("constant", [], {"shape": (1, 1, len(table)) + out, "dtype": dt.int64,
                              "value": [[table]]})
    t = make("expand", [t], {"shape": r.shape}, n.meta)
    return make("reshape", [make("gather", [t, pick], {"dim": 2}, n.meta)],
                {"shape": n.shape}, n.meta)


def _grad_parts(n, make):
    """scatter_add of the cotangent into zeros at the index, on flat planes."""
    x, g = arg(n, 0), arg(n, 1)
    nb, c = x.shape[:2]
    k = math.prod(g.shape[2:])
    index = _index_parts(make(_GRAD_INDEX[n.op], [x], dict(n.attrs), n.meta), make)
    idx = make("reshape", [index], {"shape": (nb, c, k)}, n.meta)
    zeros = make("full", [], {"shape": (nb, c, math.prod(x.shape[2:])), "dtype": n.dtype,
                              "value": 0})
    flat = make("scatter_add", [zeros, idx, make("reshape", [g], {"shape": (nb, c, k)},
                                                  n.meta)], {"dim": 2}, n.meta)
    return make("reshape", [flat], {"shape": x.shape}, n.meta)


_def("max_pool2d", "extern", 1, _shape, _same, attrs=ATTRS, eager=_values_eager, vjp=_vjp,
     saves=(0,), grad_name="MaxPool2DWithIndicesBackward0", own_kernel=True,
     kernel_outputs=PARTS, window_scan=True, composition=_values_parts,
     doc="the maximum of each window of x [N, C, H, W] (-inf padding; PyTorch's pick: the "
         "last NaN, else the first maximum); its VJP scatter-adds at max_pool2d_index")
_def("max_pool2d_index", "extern", 1, _shape, _index_dtype, attrs=ATTRS, eager=_index_eager,
     own_kernel=True, kernel_outputs=PARTS, window_scan=True, composition=_index_parts,
     doc="where max_pool2d's pick lies: row * W + col in its input plane (return_indices)")

_def("max_pool2d_grad", "extern", 2, _grad_shape, _grad_dtype, attrs=ATTRS, eager=_grad_eager,
     vjp=_vjp_grad, saves=(0,), own_kernel=True, window_scan=True, composition=_grad_parts,
     doc="max_pool2d's VJP: the cotangent g added into zeros of x's shape at the index "
         "(repeated picks of overlapping windows add up); inputs x, g")

_def("max_pool3d", "extern", 1, _shape, _same, attrs=ATTRS, eager=_values_eager, vjp=_vjp,
     saves=(0,), grad_name="MaxPool3DWithIndicesBackward0", composition=_values_parts,
     doc="max_pool2d over the windows of a volume x [N, C, D, H, W]")
_def("max_pool3d_index", "extern", 1, _shape, _index_dtype, attrs=ATTRS, eager=_index_eager,
     composition=_index_parts,
     doc="where max_pool3d's pick lies: its flat position in the input volume")
_def("max_pool3d_grad", "extern", 2, _grad_shape, _grad_dtype, attrs=ATTRS, eager=_grad_eager,
     vjp=_vjp_grad, saves=(0,), composition=_grad_parts,
     doc="max_pool3d's VJP: the cotangent added into zeros of x's shape at the index")

# ---------------------------------------------------------------- windows given by a table

# Adaptive max pooling over cells that do not tile, and fractional max pooling, read windows
# no stride describes: a table [N or 1, C or 1, K, *out] of flat input positions (a window
# shorter than K repeats its last position, which changes neither the pick's value nor its
# position). The pick is max pooling's: the last NaN, else the first maximum.

def _table_shape(shapes, _a):
    x, t = tuple(shapes[0]), tuple(shapes[1])
    if len(x) != 3 or len(t) < 4 or t[0] not in (1, x[0]) or t[1] not in (1, x[1]):
        raise RuntimeError(f"window_max: an input {list(x)} and a table {list(t)}")
    return x[:2] + t[3:]


def _table_grad_shape(shapes, a):
    if tuple(shapes[2]) != _table_shape(shapes[:2], a):
        raise RuntimeError(f"window_max_grad: a cotangent {list(shapes[2])} for {shapes[:2]}")
    return tuple(shapes[0])


def _table_dtype(dtypes, _a):
    if dtypes[1] is not dt.int64:
        raise TypeError(f"window_max's table is int64, got {dtypes[1]}")
    return dtypes[0]


def _table_index_dtype(_dtypes, _a):
    return dt.int64


def _table_grad_dtype(dtypes, _a):
    return _grad_dtype((dtypes[0], dtypes[2]), _a)


def _table_windows(xp, x, table):
    """(r [N, C, K, *out], the table broadcast to it): one flat take (numpy's
    take_along_axis is several times slower)."""
    n, c, length = x.shape
    full = xp.broadcast_to(table, (n, c) + table.shape[2:])
    planes = xp.arange(n * c).reshape((n, c) + (1,) * (full.ndim - 2)) * length
    return xp.ascontiguousarray(x).reshape(-1).take(full + planes), full


def _table_values_eager(xp):
    def window_max(x, table):
        # (the pick's value: NaN where one is, else the maximum)
        return _table_windows(xp, x, table)[0].max(axis=2)
    return window_max


def _table_index(xp, x, table):
    """The pick's position: the first maximum (a pass per tap, from the last), then the last
    NaN where a window holds one."""
    r, full = _table_windows(xp, x, table)
    best = r.max(axis=2)
    pos = xp.zeros(best.shape, dtype="int64")
    for k in range(r.shape[2] - 1, -1, -1):
        pos = xp.where(r[:, :, k] == best, k, pos)
    if x.dtype.kind in "fV" and (best != best).any():
        for k in range(r.shape[2]):
            pos = xp.where(r[:, :, k] != r[:, :, k], k, pos)
    return xp.take_along_axis(full, pos[:, :, None], 2)[:, :, 0]


def _table_index_eager(xp):
    def window_max_index(x, table):
        return _table_index(xp, x, table)
    return window_max_index


def _table_grad_eager(xp):
    def window_max_grad(x, table, g):
        idx = _table_index(xp, x, table)
        n, c, length = x.shape
        planes = xp.arange(n * c).reshape((n, c) + (1,) * (idx.ndim - 2)) * length
        sums = xp.bincount((idx + planes).reshape(-1), weights=g.reshape(-1), minlength=x.size)
        return sums.astype(x.dtype).reshape(x.shape)
    return window_max_grad


def _vjp_table(b, n, g):
    return (b.op("window_max_grad", b.value(arg(n, 0)), b.value(arg(n, 1)), g), None)


def _vjp_table_grad(b, n, gg):
    x, t, g = arg(n, 0), arg(n, 1), arg(n, 2)
    nb, c = g.shape[:2]
    idx = b.op("reshape", b.op("window_max_index", b.value(x), b.value(t)),
               shape=(nb, c, math.prod(g.shape[2:])))
    return (None, None, b.op("reshape", b.op("gather", gg, idx, dim=2), shape=g.shape))


def _table_windows_pick(n, make):
    """(r, the table expanded, the pick [N, C, 1, *out]) as primitives."""
    x, t, meta = arg(n, 0), arg(n, 1), n.meta
    nb, c = x.shape[:2]
    full = tuple(x.shape[:2]) + tuple(t.shape[2:])
    if tuple(t.shape) != full:
        t = make("expand", [t], {"shape": full}, meta)
    flat = make("reshape", [t], {"shape": (nb, c, math.prod(full[2:]))}, meta)
    r = make("reshape", [make("gather", [x, flat], {"dim": 2}, meta)], {"shape": full}, meta)
    pick = make("argmax", [r], {"dims": (2,), "keepdim": True}, meta)
    if x.dtype.is_floating_point:  # raised to the last NaN's position
        k, nd = full[2], len(full) - 3
        iota = make("constant", [], {"shape": (1, 1, k) + (1,) * nd, "dtype": dt.int64,
                                     "value": _wrapped([_wrapped(i, nd) for i in range(k)], 2)})
        zero = make("constant", [], {"shape": (), "dtype": dt.int64, "value": 0})
        last = make("max", [make("where", [make("ne", [r, r], {}, meta), iota, zero], {}, meta)],
                    {"dims": (2,), "keepdim": True}, meta)
        pick = make("maximum", [pick, last], {}, meta)
    return r, t, pick


def _table_values_parts(n, make):
    r, _, pick = _table_windows_pick(n, make)
    return make("reshape", [make("gather", [r, pick], {"dim": 2}, n.meta)], {"shape": n.shape},
                n.meta)


def _table_index_parts(n, make):
    _, t, pick = _table_windows_pick(n, make)
    return make("reshape", [make("gather", [t, pick], {"dim": 2}, n.meta)], {"shape": n.shape},
                n.meta)


def _table_grad_parts(n, make):
    x, t, g = arg(n, 0), arg(n, 1), arg(n, 2)
    nb, c = x.shape[:2]
    k = math.prod(g.shape[2:])
    index = _table_index_parts(make("window_max_index", [x, t], {}, n.meta), make)
    idx = make("reshape", [index], {"shape": (nb, c, k)}, n.meta)
    zeros = make("full", [], {"shape": tuple(x.shape), "dtype": n.dtype, "value": 0})
    return make("scatter_add", [zeros, idx, make("reshape", [g], {"shape": (nb, c, k)},
                                                   n.meta)], {"dim": 2}, n.meta)


_def("window_max", "extern", 2, _table_shape, _table_dtype, eager=_table_values_eager,
     vjp=_vjp_table, saves=(0, 1), composition=_table_values_parts,
     doc="max pooling of x [N, C, L] over windows given by a table [N|1, C|1, K, *out] of "
         "positions in L (adaptive and fractional max pooling): [N, C, *out]")
_def("window_max_index", "extern", 2, _table_shape, _table_index_dtype,
     eager=_table_index_eager, composition=_table_index_parts,
     doc="where window_max's pick lies: its position in L")
_def("window_max_grad", "extern", 3, _table_grad_shape, _table_grad_dtype,
     eager=_table_grad_eager, vjp=_vjp_table_grad, saves=(0, 1), composition=_table_grad_parts,
     doc="window_max's VJP: the cotangent g added into zeros of x's shape at the index; inputs "
         "x, table, g")

__all__ = ["ATTRS", "GRAD", "INDEX", "first_inside", "geometry", "lowest", "out_size"]


# ---------------------------------------------------------------- average pooling
#
# avg_pool2d(x [N, C, H, W]; kernel, stride, padding, divisor) -> [N, C, OH, OW]: each window's
# sum (zero padding) over one divisor, the kernel's size or divisor_override; windows divided
# by their own sizes (count_include_pad=False, ceil_mode's clipped windows) stay the
# composition of nn/_functional/pooling.py. Eager is that composition's arrays in one call
# (runtime/eager.py), its VJP the nodes the composition differentiates into; compiled graphs
# run the composition (its kernels fuse the sum and the division), ONNX writes AveragePool.

AVG_ATTRS = ("kernel", "stride", "padding", "divisor")


def _avg_windows(a: dict) -> dict:
    return {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"]),
            "padding": tuple(a["padding"]), "dilation": (1, 1)}


def _avg_shape(shapes, a):
    n, c, _, _, oh, ow = unfold2d_shape(tuple(shapes[0]), dict(_avg_windows(a), pad_value=0))
    return (n, c, oh, ow)


def _avg_dtype(dtypes, _a):
    if dtypes[0] not in (dt.float32, dt.float64):
        raise TypeError(f"avg_pool2d's primitive takes float32 or float64, got {dtypes[0]}")
    return dtypes[0]


def _avg_parts(n, make):
    win = make("unfold2d", [arg(n)], dict(_avg_windows(n.attrs), pad_value=0), n.meta)
    s = make("sum", [win], {"dims": (2, 3), "keepdim": False}, n.meta)
    k = make("constant", [], {"shape": (), "dtype": n.dtype, "value": n.attrs["divisor"]})
    return make("div", [s, k], {}, n.meta)


def _vjp_avg(b, n, g):
    a, x = n.attrs, arg(n)
    gs = b.op("div", g, b.const(a["divisor"], n.dtype))
    win = unfold2d_shape(tuple(x.shape), dict(_avg_windows(a), pad_value=0))
    gw = b.expand_reduced(gs, win, (2, 3), False)
    return (b.op("fold2d", gw, size=tuple(x.shape[2:]), **_avg_windows(a)),)


_def("avg_pool2d", "extern", 1, _avg_shape, _avg_dtype, attrs=AVG_ATTRS, vjp=_vjp_avg,
     grad_name="AvgPool2DBackward0", composition=_avg_parts,
     doc="the sum of each window of x [N, C, H, W] (zero padding) over `divisor`")
