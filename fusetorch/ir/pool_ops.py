"""2-d max pooling as two primitives (issue 28): its values and PyTorch's indices.

    max_pool2d(x [N, C, H, W]; kernel, stride, padding, dilation, ceil_mode)  -> [N, C, OH, OW]
    max_pool2d_index(x; the same)                     -> int64 [N, C, OH, OW], flat in each plane

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
"""
from __future__ import annotations

from . import dtypes as dt
from .ops import _def, arg

ATTRS = ("kernel", "stride", "padding", "dilation", "ceil_mode")
PARTS = ("max_pool2d", "max_pool2d_index")  # what one kernel writes (templates/c/max_pool2d*)


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


def first_inside(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 out_hw: tuple) -> list | None:
    """[OH][OW] nested lists: each window's first position (i * kw + j) inside the input, or
    None when that is 0 for every window (no window starts in the padding). A window's inside
    taps are a rectangle of it, so every inside position is at or after the first one."""
    firsts = []
    for k, s, p, d, o in zip(kernel, stride, padding, dilation, out_hw):
        starts = [y * s - p for y in range(o)]
        # the first tap i with start + i * d >= 0 (one exists: padding <= half the window)
        firsts.append([0 if a >= 0 else (-a + d - 1) // d for a in starts])
    if not (any(firsts[0]) or any(firsts[1])):
        return None
    return [[r * kernel[1] + q for q in firsts[1]] for r in firsts[0]]


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
    if len(x) != 4:
        raise RuntimeError(f"max_pool2d primitives take [N, C, H, W], got {list(x)}")
    (oh, ow), _ = geometry(x, a)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"max_pool2d: output size {oh}x{ow} of an input {list(x)}")
    return x[:2] + (oh, ow)


def _same(dtypes, _a):
    return dtypes[0]


def _index_dtype(_dtypes, _a):
    return dt.int64


# ---------------------------------------------------------------- eager (any array module)

def _pick(xp, x, a):
    """(values, index) by the composition's steps on arrays: the padded input's windows
    stacked [K, N, C, OH, OW], argmax raised to the last NaN and the first inside position."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (a["kernel"], a["stride"], a["padding"],
                                              a["dilation"])
    n, c, h, w = x.shape
    (oh, ow), (eh, ew) = geometry(x.shape, a)
    padded = x
    if ph or pw or eh or ew:
        padded = xp.full((n, c, h + 2 * ph + eh, w + 2 * pw + ew), _lowest_of(xp, x),
                         dtype=x.dtype)
        padded[:, :, ph:ph + h, pw:pw + w] = x
    r = xp.stack([padded[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                         j * dw:j * dw + (ow - 1) * sw + 1:sw]
                  for i in range(kh) for j in range(kw)])
    pos = r.argmax(axis=0)
    if x.dtype.kind in "fV":  # the last NaN (argmax found the first)
        nan = r != r
        last = (kh * kw - 1) - nan[::-1].argmax(axis=0)
        pos = xp.where(nan.any(axis=0), last, pos)
    first = first_inside(a["kernel"], a["stride"], a["padding"], a["dilation"], (oh, ow))
    if first is not None:
        pos = xp.maximum(pos, xp.asarray(first, dtype=pos.dtype))
    values = xp.take_along_axis(r, pos[None], 0)[0]
    rows = (xp.arange(oh) * sh - ph)[:, None] + (pos // kw) * dh
    cols = (xp.arange(ow) * sw - pw)[None, :] + (pos % kw) * dw
    return values, (rows * w + cols).astype("int64")


def _lowest_of(xp, x):
    """`lowest` for an array's dtype."""
    kind = x.dtype.kind
    if kind in "fV":  # (bfloat16 is ml_dtypes' "V")
        return -float("inf")
    return False if kind == "b" else xp.iinfo(x.dtype).min


def _values_eager(xp):
    def max_pool2d(x, **a):
        return _pick(xp, x, a)[0]
    return max_pool2d


def _index_eager(xp):
    def max_pool2d_index(x, **a):
        return _pick(xp, x, a)[1]
    return max_pool2d_index


# ---------------------------------------------------------------- VJP

def _vjp(b, n, g):
    return (b.op("max_pool2d_grad", b.value(arg(n)), g, **n.attrs),)


def _grad_shape(shapes, a):
    x, g = tuple(shapes[0]), tuple(shapes[1])
    if g != _shape([x], a):
        raise RuntimeError(f"max_pool2d_grad: a cotangent {list(g)} for an input {list(x)}")
    return x


def _grad_dtype(dtypes, _a):
    if dtypes[0] is not dtypes[1] or not dtypes[0].is_floating_point:
        raise TypeError(f"max_pool2d_grad takes one floating dtype, got {list(dtypes)}")
    return dtypes[0]


def _grad_eager(xp):
    def max_pool2d_grad(x, g, **a):
        # (bincount adds in double: the CPU's table runs scatter_add's order instead,
        # runtime/eager.py)
        idx = _pick(xp, x, a)[1]
        n, c, h, w = x.shape
        planes = xp.arange(n * c).reshape(n, c, 1, 1) * (h * w)
        sums = xp.bincount((idx + planes).reshape(-1), weights=g.reshape(-1),
                           minlength=x.size)
        return sums.astype(x.dtype).reshape(x.shape)
    return max_pool2d_grad


def _vjp_grad(b, n, gg):
    """The cotangent's part is linear: gg read at the index (max pooling's values of gg at
    x's picks); x's is zero almost everywhere (the picks are locally constant)."""
    x, g = arg(n, 0), arg(n, 1)
    nb, c, oh, ow = g.shape
    idx = b.op("reshape", b.op("max_pool2d_index", b.value(x), **n.attrs),
               shape=(nb, c, oh * ow))
    flat = b.op("reshape", gg, shape=(nb, c, x.shape[2] * x.shape[3]))
    return (None, b.op("reshape", b.op("gather", flat, idx, dim=2), shape=g.shape))


# ---------------------------------------------------------------- composition

def _windows_pick(n, make):
    """(r [N, C, K, OH, OW], window position [N, C, 1, OH, OW]) as primitives: the input
    (with ceil_mode written into a larger image of the lowest value first), unfold2d with the
    lowest value as padding, the windows merged into one dim, and the pick."""
    a, x, meta = n.attrs, arg(n), n.meta
    low = lowest(x.dtype)
    (oh, ow), (eh, ew) = geometry(x.shape, a)
    nb, c, h, w = x.shape
    if eh or ew:
        image = make("full", [], {"shape": (nb, c, h + eh, w + ew), "dtype": x.dtype,
                                  "value": low})
        x = make("index_put", [image, x], {"spec": tuple(("slice", 0, s, 1) for s in x.shape),
                                           "accumulate": False}, meta)
    win = make("unfold2d", [x], {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"]),
                                 "padding": tuple(a["padding"]),
                                 "dilation": tuple(a["dilation"]), "pad_value": low}, meta)
    k = a["kernel"][0] * a["kernel"][1]
    r = make("reshape", [win], {"shape": (nb, c, k, oh, ow)}, meta)
    pick = make("argmax", [r], {"dims": (2,), "keepdim": True}, meta)
    first = first_inside(a["kernel"], a["stride"], a["padding"], a["dilation"], (oh, ow))
    floor = None
    if first is not None:
        floor = make("constant", [], {"shape": (1, 1, 1, oh, ow), "dtype": dt.int64,
                                      "value": [[[first]]]})
    if x.dtype.is_floating_point:  # raised to the last NaN's position
        iota = make("constant", [], {"shape": (1, 1, k, 1, 1), "dtype": dt.int64,
                                     "value": [[[[[i]] for i in range(k)]]]})
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
    """The window position mapped to the flat input position by a [1, 1, K, OH, OW] table."""
    r, pick = _windows_pick(n, make)
    a, w = n.attrs, arg(n).shape[3]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (a["kernel"], a["stride"], a["padding"],
                                              a["dilation"])
    _, _, oh, ow = n.shape
    table = [[[[[(y * sh - ph + i * dh) * w + q * sw - pw + j * dw for q in range(ow)]
                for y in range(oh)] for i in range(kh) for j in range(kw)]]]
    t = make("constant", [], {"shape": (1, 1, kh * kw, oh, ow), "dtype": dt.int64,
                              "value": table})
    t = make("expand", [t], {"shape": r.shape}, n.meta)
    return make("reshape", [make("gather", [t, pick], {"dim": 2}, n.meta)],
                {"shape": n.shape}, n.meta)


def _grad_parts(n, make):
    """scatter_add of the cotangent into zeros at the index, on flat planes."""
    x, g = arg(n, 0), arg(n, 1)
    nb, c, h, w = x.shape
    k = g.shape[2] * g.shape[3]
    index = _index_parts(make("max_pool2d_index", [x], dict(n.attrs), n.meta), make)
    idx = make("reshape", [index], {"shape": (nb, c, k)}, n.meta)
    zeros = make("full", [], {"shape": (nb, c, h * w), "dtype": n.dtype, "value": 0})
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

__all__ = ["ATTRS", "first_inside", "geometry", "lowest", "out_size"]
