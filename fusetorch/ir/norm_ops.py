"""softmax, log_softmax and layer_norm as primitives: what their backward keeps.

Composed of primitives, these keep more for backward than PyTorch does. softmax's
`e / sum(e)` keeps e = exp(x - max) besides the output (the attention weights twice, 12.6 MB
a layer of a nanoGPT step), log_softmax keeps exp(z) (the logits' size), and layer norm keeps
both x - mean and the normalised value (two activations where PyTorch keeps the input and two
numbers a row). As primitives their VJPs are PyTorch's:

    softmax(x, dim)          saves the output y:  dx = y * (g - sum(g * y, dim))
    log_softmax(x, dim)      saves the output y:  dx = g - exp(y) * sum(g, dim)
    layer_norm(x[, w][, b], count, eps)   saves x (and w): mean and rstd are recomputed from
        x in the backward, xhat = (x - mean) * rstd, gxhat = g * w,
        dx = (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)) * rstd,
        dw = sum(g * xhat), db = sum(g) over the leading dims

(the gradients of x change their summation order against the compositions'; w's and b's do
not). softmax's and log_softmax's VJPs are primitives too, `softmax_grad(g, y)` and
`log_softmax_grad(g, y)` (PyTorch's _softmax_backward_data), so that an eager backward runs
each as one call (and small arrays' forward as one C call: runtime/softmax_rows.py). Eager
runs each in numpy, in place where the composition's temporaries were; compiled graphs run
their compositions instead (`OpDef.composition`, applied by `passes.decompose` after
differentiation; ONNX export too), so their kernels fuse as before: the composition is the
very primitives the eager implementation computes, in the same order. float16/bfloat16
compute in float32, rounded once (PyTorch's CPU kernels), and stay one node (no kernels).
"""
from __future__ import annotations

import math

from . import dtypes as dt
from .ops import _def, arg

def _same_shape(shapes, _a):
    return tuple(shapes[0])


def _float_dtype(dtypes, _a):
    d = dtypes[0]
    if not d.is_floating_point:
        raise TypeError(f"softmax and layer_norm primitives take floating inputs, got {d}")
    for other in dtypes[1:]:
        if other is not d:
            raise TypeError(f"these primitives' inputs must share a dtype, got {list(dtypes)}")
    return d


def _widened(xp, x):
    """(x in float32 where it is float16/bfloat16, else x; the dtype to round back to)."""
    if x.dtype.itemsize == 2 and x.dtype.kind in "fV":
        return x.astype("float32"), x.dtype
    return x, None


def _back(xp, r, low):
    return r if low is None else r.astype(low)


# ---------------------------------------------------------------- softmax, log_softmax

def _row_reductions(xp):
    """(max, sum) along an axis: numpy's ufunc reductions themselves, which its `max`/`sum`
    methods call through a Python wrapper (~0.3 us each of a loop's 57-score row, where the
    whole softmax is ~4 us); the same reduction, so the same values."""
    if xp.__name__ == "numpy":
        return xp.maximum.reduce, xp.add.reduce
    return xp.max, xp.sum


def _softmax_eager(xp):
    amax, total = _row_reductions(xp)

    def softmax(x, dim):
        w, low = _widened(xp, x)
        if w.size == 0:
            return xp.empty_like(x)
        z = w - amax(w, axis=dim, keepdims=True)
        xp.exp(z, out=z)
        z /= total(z, axis=dim, keepdims=True)
        return _back(xp, z, low)
    return softmax


def _log_softmax_eager(xp):
    amax, total = _row_reductions(xp)

    def log_softmax(x, dim):
        w, low = _widened(xp, x)
        if w.size == 0:
            return xp.empty_like(x)
        z = w - amax(w, axis=dim, keepdims=True)
        s = total(xp.exp(z), axis=dim, keepdims=True)  # (the exponentials die here)
        z -= xp.log(s)
        return _back(xp, z, low)
    return log_softmax


def _vjp_softmax(b, n, g):
    return (b.op("softmax_grad", g, b.value(n), dim=n.attrs["dim"]),)


def _vjp_log_softmax(b, n, g):
    return (b.op("log_softmax_grad", g, b.value(n), dim=n.attrs["dim"]),)


# The VJPs are primitives of their own, so that eager backward runs each as one call (a C
# kernel for small rows: runtime/softmax_rows.py), and compiled graphs their compositions:
# the very nodes the VJP rules built before, so compiled kernels are unchanged.

def _softmax_grad_eager(xp):
    _, total = _row_reductions(xp)

    def softmax_grad(g, y, dim):
        w, low = _widened(xp, y)
        gw = g if low is None else g.astype(w.dtype)
        return _back(xp, w * (gw - total(gw * w, axis=dim, keepdims=True)), low)
    return softmax_grad


def _log_softmax_grad_eager(xp):
    _, total = _row_reductions(xp)

    def log_softmax_grad(g, y, dim):
        w, low = _widened(xp, y)
        gw = g if low is None else g.astype(w.dtype)
        return _back(xp, gw - xp.exp(w) * total(gw, axis=dim, keepdims=True), low)
    return log_softmax_grad


def _softmax_grad_parts(n, op, const):
    g, y, dims = arg(n, 0), arg(n, 1), (n.attrs["dim"],)
    s = op("sum", op("mul", g, y), dims=dims, keepdim=True)
    return op("mul", y, op("sub", g, s))


def _log_softmax_grad_parts(n, op, const):
    g, y, dims = arg(n, 0), arg(n, 1), (n.attrs["dim"],)
    s = op("sum", g, dims=dims, keepdim=True)
    return op("sub", g, op("mul", op("exp", y), s))


def _vjp_softmax_grad(b, n, h):
    # dx = y * (g - s), s = sum(g * y): d/dg = y * (h - sum(h * y)) (softmax_grad of h);
    # d/dy = h * (g - s) - g * sum(h * y)
    g, y, dim = b.value(arg(n, 0)), b.value(arg(n, 1)), n.attrs["dim"]
    hy = b.op("sum", b.op("mul", h, y), dims=(dim,), keepdim=True)
    s = b.op("sum", b.op("mul", g, y), dims=(dim,), keepdim=True)
    return (b.op("softmax_grad", h, y, dim=dim),
            b.op("sub", b.op("mul", h, b.op("sub", g, s)), b.op("mul", g, hy)))


def _vjp_log_softmax_grad(b, n, h):
    # dx = g - exp(y) * sum(g): d/dg = h - sum(h * exp(y)); d/dy = -(h * exp(y) * sum(g))
    g, y, dim = b.value(arg(n, 0)), b.value(arg(n, 1)), n.attrs["dim"]
    e = b.op("exp", y)
    he = b.op("mul", h, e)
    s = b.op("sum", g, dims=(dim,), keepdim=True)
    return (b.op("sub", h, b.op("sum", he, dims=(dim,), keepdim=True)),
            b.op("neg", b.op("mul", he, s)))


def _composed(rule):
    """An OpDef.composition from `rule(node, op, const)`, which builds with `op(name, *inputs,
    **attrs)` and `const(value)` (a 0-d constant of the node's dtype)."""
    def composition(n, make):
        meta = n.meta

        def op(name, *ins, **attrs):
            return make(name, list(ins), attrs, meta)

        def const(v):
            return make("constant", [], {"shape": (), "dtype": n.dtype, "value": v})
        return rule(n, op, const)
    return composition


def _softmax_shift(op, x, dims):
    # (an empty input has no max; any shift of nothing is nothing)
    return op("sub", x, op("max" if math.prod(x.shape) else "sum", x, dims=dims, keepdim=True))


def _softmax_parts(n, op, const):
    x, dims = arg(n), (n.attrs["dim"],)
    e = op("exp", _softmax_shift(op, x, dims))
    return op("div", e, op("sum", e, dims=dims, keepdim=True))


def _log_softmax_parts(n, op, const):
    x, dims = arg(n), (n.attrs["dim"],)
    z = _softmax_shift(op, x, dims)
    return op("sub", z, op("log", op("sum", op("exp", z), dims=dims, keepdim=True)))


_def("softmax", "extern", 1, _same_shape, _float_dtype, attrs=("dim",),
     eager=_softmax_eager, vjp=_vjp_softmax, saves=("out",), grad_name="SoftmaxBackward0",
     composition=_composed(_softmax_parts),
     doc="exp(x - max) / sum(exp(x - max)) along dim; its VJP reads only the output")
_def("log_softmax", "extern", 1, _same_shape, _float_dtype, attrs=("dim",),
     eager=_log_softmax_eager, vjp=_vjp_log_softmax, saves=("out",),
     grad_name="LogSoftmaxBackward0", composition=_composed(_log_softmax_parts),
     doc="x - max - log(sum(exp(x - max))) along dim; its VJP reads only the output")
_def("softmax_grad", "extern", 2, _same_shape, _float_dtype, attrs=("dim",),
     eager=_softmax_grad_eager, vjp=_vjp_softmax_grad, saves=(0, 1),
     grad_name="SoftmaxBackwardDataBackward0", composition=_composed(_softmax_grad_parts),
     doc="softmax's VJP of cotangent g and output y: y * (g - sum(g * y)) along dim")
_def("log_softmax_grad", "extern", 2, _same_shape, _float_dtype, attrs=("dim",),
     eager=_log_softmax_grad_eager, vjp=_vjp_log_softmax_grad, saves=(0, 1),
     grad_name="LogSoftmaxBackwardDataBackward0",
     composition=_composed(_log_softmax_grad_parts),
     doc="log_softmax's VJP of cotangent g and output y: g - exp(y) * sum(g) along dim")


# ---------------------------------------------------------------- layer_norm

def _ln_shape(shapes, a):
    x, k = tuple(shapes[0]), a["count"]
    if not 0 < k <= len(x) or len(shapes) != 1 + a["weight"] + a["bias"] or any(
            tuple(s) != x[len(x) - k:] for s in shapes[1:]):
        raise RuntimeError(f"layer_norm: input {list(x)} with {k} normalised dims and "
                           f"affine parameters {[list(s) for s in shapes[1:]]}")
    return x


def _ln_eager(xp):
    def layer_norm(x, *affine, count, eps, weight, bias):
        w, low = _widened(xp, x)
        dims = tuple(range(w.ndim - count, w.ndim))
        n = math.prod(w.shape[w.ndim - count:])
        # the composition's operations in its order (so its kernels give the same values),
        # x - mean normalised in place
        c = w - w.sum(axis=dims, keepdims=True) / n
        var = (c * c).sum(axis=dims, keepdims=True) / n
        c *= 1.0 / xp.sqrt(var + xp.asarray(eps, dtype=w.dtype))
        ps = [p.astype(w.dtype) for p in affine] if low is not None else affine
        if weight:
            c *= ps[0]
        if bias:
            c += ps[-1]
        return _back(xp, c, low)
    return layer_norm


def _ln_stats(op, const, x, count):
    """(mean, x - mean, 1 / sqrt(var + eps)) as layer_norm's composition computes them."""
    dims = tuple(range(len(x.shape) - count, len(x.shape)))
    n = const(float(math.prod(x.shape[len(x.shape) - count:])))
    mean = op("div", op("sum", x, dims=dims, keepdim=True), n)
    c = op("sub", x, mean)
    var = op("div", op("sum", op("mul", c, c), dims=dims, keepdim=True), n)
    return dims, n, c, var


def _ln_parts(n, op, const):
    a = n.attrs
    dims, _, c, var = _ln_stats(op, const, arg(n), a["count"])
    out = op("mul", c, op("div", const(1.0), op("sqrt", op("add", var, const(a["eps"])))))
    if a["weight"]:
        out = op("mul", out, arg(n, 1))
    if a["bias"]:
        out = op("add", out, arg(n, 1 + a["weight"]))
    return out


def _vjp_layer_norm(b, n, g):
    a, x = n.attrs, b.value(arg(n))
    d = n.dtype

    def op(name, *ins, **attrs):
        return b.op(name, *ins, **attrs)

    def const(v):
        return b.const(v, d)
    dims, count, c, var = _ln_stats(op, const, x, a["count"])
    rstd = op("div", const(1.0), op("sqrt", op("add", var, const(a["eps"]))))
    xhat = op("mul", c, rstd)
    outs = []
    gxhat = g
    if a["weight"]:
        w = b.value(arg(n, 1))
        gxhat = op("mul", g, w)
    mg = op("div", op("sum", gxhat, dims=dims, keepdim=True), count)
    mgx = op("div", op("sum", op("mul", gxhat, xhat), dims=dims, keepdim=True), count)
    outs.append(op("mul", op("sub", op("sub", gxhat, mg), op("mul", xhat, mgx)), rstd))
    if a["weight"]:
        outs.append(b.sum_to(op("mul", g, xhat), arg(n, 1).shape))
    if a["bias"]:
        outs.append(b.sum_to(g, arg(n, 1 + a["weight"]).shape))
    return tuple(outs)


_def("layer_norm", "extern", None, _ln_shape, _float_dtype,
     attrs=("count", "eps", "weight", "bias"), eager=_ln_eager, vjp=_vjp_layer_norm,
     saves=(0, slice(1, 2)), grad_name="NativeLayerNormBackward0",
     composition=_composed(_ln_parts),
     doc="(x - mean) / sqrt(var + eps) over the last `count` dims (biased variance), then "
         "* weight + bias; its VJP reads x and weight and recomputes the statistics")
