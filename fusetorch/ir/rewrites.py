"""Per-op rewrite rules, declared on the op's definition and applied by `ir/passes.py`.

    OpDef.simplify  (node, make) -> an equal node, or None: an exact algebraic identity
                    (x * 1 -> x, neg(neg(x)) -> x, reshape of reshape -> one reshape)
    OpDef.cheaper   (node, make) -> an equal, cheaper node, or None (rewrite_indexing:
                    gather at argmax -> max, one-hot scatter_add -> where)

`make` is `graph.make_node`, handed in by the pass, as a VJP rule is handed its builder: the
op table imports this module, and graph imports the op table, so this module cannot import
graph. A rule reads its node's definition through `node.opdef` and names only the ops it builds.
Each rule is exact, as the passes' header says: signed zeros, inf and NaN included.
"""
from __future__ import annotations

import math

from . import dtypes as dt
from .folding import NO, int_range, round_float
from .roles import Role


def scalar_value(n):
    """The exact value a filled node (`constant`, `full`) holds, as a Python bool, int or float
    of its dtype's meaning (a float32 value rounded to float32), or NO when that cannot be said
    exactly: arrays, non-Python scalars, values the conversion would round twice or reject.

    >>> scalar_value(const(0.1, float32))    # 0.10000000149011612
    """
    while Role.VALUE_VIEW in n.opdef.roles and math.prod(n.inputs[0].shape) == 1:
        n = n.inputs[0]  # a single value reshaped or broadcast is still that value
    if Role.FILLED not in n.opdef.roles:
        return NO
    v = n.attrs.get("value")
    d = n.dtype
    if isinstance(v, bool):
        return v if d is dt.bool_ else (float(v) if d.is_floating_point else int(v))
    if isinstance(v, int):
        if d.is_floating_point:
            return round_float(float(v), d) if abs(v) <= 1 << 53 else NO
        if d is dt.bool_:
            return bool(v) if v in (0, 1) else NO
        lo, hi = int_range(d)
        return int(v) if lo <= v <= hi else NO
    if isinstance(v, float):
        if d.is_floating_point:
            return round_float(float(v), d)
        if d is dt.bool_ or not v.is_integer():
            return NO
        lo, hi = int_range(d)
        return int(v) if lo <= v <= hi else NO
    return NO


def is_value(n, want: float) -> bool:
    v = scalar_value(n)
    return v is not NO and not isinstance(v, bool) and v == want


def is_zero(n, negative: bool) -> bool:
    """`n` is zero, and in floating point a zero of the given sign."""
    v = scalar_value(n)
    if v is NO or isinstance(v, bool) or v != 0:
        return False
    return not n.dtype.is_floating_point or (math.copysign(1.0, v) < 0) == negative


def norm_perm(perm) -> tuple:
    k = len(perm)
    return tuple(p + k if p < 0 else p for p in perm)


def _same_as(make, x, n):
    """`x` standing for `n`, whose values equal x's broadcast to n's shape (same dtype)."""
    if x.shape == n.shape:
        return x
    return make("expand", [x], {"shape": n.shape}, n.meta)


# ---------------------------------------------------------------- simplify rules

def unit_either(n, make):
    """x * 1 and 1 * x -> x (not on bool)."""
    if n.dtype is not dt.bool_:
        for a, b in ((0, 1), (1, 0)):
            if is_value(n.inputs[b], 1):
                return _same_as(make, n.inputs[a], n)
    return None


def negative_zero_either(n, make):
    """x + (-0.0) and (-0.0) + x -> x, also for x = -0.0 (any zero for integers; not bool)."""
    if n.dtype is not dt.bool_:
        for a, b in ((0, 1), (1, 0)):
            if is_zero(n.inputs[b], negative=True):
                return _same_as(make, n.inputs[a], n)
    return None


def positive_zero_right(n, make):
    """x - 0.0 -> x, also for x = -0.0 (any zero for integers; not bool)."""
    if n.dtype is not dt.bool_ and is_zero(n.inputs[1], negative=False):
        return _same_as(make, n.inputs[0], n)
    return None


def unit_right_float(n, make):
    """x / 1 -> x in floating point."""
    if n.dtype.is_floating_point and is_value(n.inputs[1], 1):
        return _same_as(make, n.inputs[0], n)
    return None


def small_power(n, make):
    """x ** 1 -> x and x ** 2 -> x * x, for a 0-d exponent only: numpy's elementwise pow with
    an array of exponents is not correctly rounded (float32 x ** 1 can miss x by an ulp), so
    the interpreter itself would disagree with the rewrite; with a 0-d exponent it computes x
    and x * x exactly."""
    x, e = n.inputs
    if n.dtype is dt.bool_ or e.shape != ():
        return None
    if is_value(e, 1):
        return _same_as(make, x, n)
    if is_value(e, 2) and x.shape == n.shape:
        return make("mul", [x, x], {}, n.meta)
    return None


def involution(n, make):
    """f(f(x)) -> x (neg; not on bool)."""
    x = n.inputs[0]
    if n.dtype is not dt.bool_ and x.op == n.op:
        return x.inputs[0]
    return None


def to_shape(n, make):
    """reshape or expand to x's own shape -> x; of a reshape (expand) of y -> one of y."""
    x = n.inputs[0]
    if x.shape == n.shape:
        return x
    if x.op == n.op:
        return make(n.op, [x.inputs[0]], {"shape": n.shape}, n.meta)
    return None


def compose_perm(n, make):
    """An identity permute -> x; permute of a permute -> one permute."""
    x, perm = n.inputs[0], norm_perm(n.attrs["perm"])
    if perm == tuple(range(len(perm))):
        return x
    if x.op == n.op:
        inner = norm_perm(x.attrs["perm"])
        return make(n.op, [x.inputs[0]], {"perm": tuple(inner[p] for p in perm)}, n.meta)
    return None


def same_dtype(n, make):
    """A cast to x's own dtype -> x."""
    return n.inputs[0] if n.inputs[0].dtype is n.dtype else None


# ---------------------------------------------------------------- cheaper forms

def gather_at_extreme(n, make):
    """gather(x, argmax(x, d, keepdim), d) -> max(x, d, keepdim) (argmin -> min)."""
    x, idx = n.inputs
    d = n.attrs["dim"]
    r = idx.opdef.reduction
    if r is not None and r.index and idx.inputs[0] is x and \
            tuple(idx.attrs["dims"]) == (d,) and idx.attrs.get("keepdim"):
        return make(idx.opdef.value_op, [x], {"dims": (d,), "keepdim": True}, n.meta)
    return None


def one_hot_scatter(n, make):
    """scatter_add(zeros, idx, src, dim=d) with one index per row along d (max(dim)'s
    gradient) -> where(iota_d == idx, src, 0): elementwise, so it fuses. A scattered
    -0.0 may read 0.0."""
    z, idx, src = n.inputs
    d = n.attrs["dim"]
    if not z.dtype.is_floating_point or scalar_value(z) != 0 or idx.shape[d] != 1 or \
            src.shape != idx.shape or any(a != b for k, (a, b) in
                                          enumerate(zip(idx.shape, z.shape)) if k != d):
        return None
    k = z.shape[d]
    r = idx.opdef.reduction
    if not (r is not None and r.index and tuple(idx.attrs["dims"]) == (d,) and
            idx.inputs[0].shape[d] == k):
        # an index out of range would match no position and vanish: keep scatter_add's check
        idx = make("check", [idx], {
            "lo": 0, "hi": k, "closed": False, "allow": None, "error": "RuntimeError",
            "message": f"index {{value}} is out of bounds for dimension {d} with size {k}"},
            n.meta)
    iota = make("iota", [], {"shape": (k,), "dtype": idx.dtype, "start": 0, "step": 1}, n.meta)
    along = make("reshape", [iota], {"shape": tuple(k if i == d else 1
                                                    for i in range(len(z.shape)))}, n.meta)
    hit = make("eq", [along, idx], {}, n.meta)
    zero = make("constant", [], {"shape": (), "dtype": z.dtype, "value": 0.0})
    return make("where", [hit, src, zero], {}, n.meta)


def tiling_fold(n, make):
    """fold2d of windows that tile the image exactly (stride = kernel, no padding or dilation:
    2x2 max pooling's gradient) -> a permute and a reshape: each element goes to one place, so
    the windows' producer writes the image's layout directly (sink_permutes)."""
    cols = n.inputs[0]
    a = n.attrs
    (kh, kw), (oh, ow), (h, w) = a["kernel"], cols.shape[4:], a["size"]
    if tuple(a["stride"]) != (kh, kw) or tuple(a["padding"]) != (0, 0) or \
            tuple(a["dilation"]) != (1, 1) or (oh * kh, ow * kw) != (h, w):
        return None
    image = make("permute", [cols], {"perm": (0, 1, 4, 2, 5, 3)}, n.meta)
    return make("reshape", [image], {"shape": n.shape}, n.meta)


# a max pooling gradient's primitive -> its values' primitive (ir/pool_ops.py's GRAD, inverted:
# this module names the ops it builds)
_POOL_OF_GRAD = {"max_pool2d_grad": "max_pool2d", "max_pool3d_grad": "max_pool3d"}


def mask_before_pool_grad(n, make):
    """where(c(x), +0, max_pool_grad(x, g)) -> max_pool_grad(x, where(c(max_pool(x)), +0, g)),
    c elementwise in x and scalars alone (ReLU's `le(x, 0)` before a pooling): the mask read at
    the picks only, over the pooled size instead of the input's (LeNet's first layer: a quarter
    of the elements, and neither the mask nor the masked copy of the input's size is written).
    Exact: a pick's value is x's there, so c(pooled) is c at the pick, and every position a
    window does not pick holds +0 either way; where windows overlap, each addend at a position
    is masked by that position's c alike."""
    c, z, m = n.inputs
    pool = _POOL_OF_GRAD.get(m.op)
    if pool is None or not is_zero(z, False) or m.dtype is not n.dtype or \
            c.shape != n.shape or m.shape != n.shape or c.opdef.kind != "elementwise":
        return None
    x, g = m.inputs
    if not any(i is x for i in c.inputs) or any(
            i is not x and not (i.op == "constant" and i.shape == ()) for i in c.inputs):
        return None
    pooled = make(pool, [x], dict(m.attrs), m.meta)
    mask = make(c.op, [pooled if i is x else i for i in c.inputs], dict(c.attrs), c.meta)
    return make(m.op, [x, make("where", [mask, z, g], {}, n.meta)], dict(m.attrs), m.meta)
