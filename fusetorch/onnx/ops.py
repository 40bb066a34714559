"""The per-primitive table: how each IR primitive becomes ONNX nodes.

`EMIT[op](ctx, node, xs)` appends the ONNX nodes computing `node` from its inputs' ONNX value
names `xs` and returns the result's name. `ctx.b` is the Builder, `ctx.shape(node)` the node's
dims (dims.Dim: symbolic under dynamic_axes), `ctx.leaf(node, path)` a size-like attribute.
`UNSUPPORTED` names the primitives no ONNX graph expresses here, with the reason the error
gives; a test checks that every primitive of `ir.ops.OPS` is in one table or the other.
Primitives with a composition (linear, conv2d, lstm_scan, max and average pooling, softmax,
layer_norm) are one ONNX operator where `WHOLE[op](node, opset)` holds, their composition
elsewhere (capture.py).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes as dt
from ..ir import pool_ops
from ..ir.elementwise import _GILES_CENTRAL, _GILES_TAIL
from ..runtime.device import NP_DTYPES
from . import dims as dm
from .builder import INT64_MAX, onnx_dtype
from .errors import OnnxExporterError

EMIT: dict = {}
UNSUPPORTED = {
    "custom": "a custom autograd.Function is opaque Python",
    "custom_vjp": "a custom autograd.Function's backward is opaque Python",
    "linalg_inv": "ONNX has no matrix inverse",
    "linalg_solve": "ONNX has no linear solver",
    "linalg_cholesky": "ONNX has no Cholesky factorization",
    "linalg_qr_q": "ONNX has no QR factorization",
    "linalg_qr_r": "ONNX has no QR factorization",
    "linalg_eigh_values": "ONNX has no eigendecomposition",
    "linalg_eigh_vectors": "ONNX has no eigendecomposition",
    "linalg_svd_u": "ONNX has no singular value decomposition",
    "linalg_svd_s": "ONNX has no singular value decomposition",
    "linalg_svd_vh": "ONNX has no singular value decomposition",
    "linalg_pinv": "ONNX has no singular value decomposition",
    # issue 27's LU/LDL family, triangular solves, geqrf and expm (ir/linalg_factor_ops.py)
    "linalg_lu_factor": "ONNX has no LU factorization",
    "linalg_lu_pivots": "ONNX has no LU factorization",
    "lu_pivots_to_permutation": "ONNX has no loop-free form of a sequence of row interchanges",
    "linalg_lu_solve": "ONNX has no LU factorization",
    "linalg_lstsq_solution": "ONNX has no least-squares solver",
    "linalg_lstsq_rank": "ONNX has no least-squares solver",
    "linalg_solve_triangular": "ONNX has no triangular solver",
    "linalg_matrix_exp": "ONNX has no matrix exponential",
    "linalg_ldl_factor_ld": "ONNX has no LDL factorization",
    "linalg_ldl_pivots": "ONNX has no LDL factorization",
    "linalg_ldl_info": "ONNX has no LDL factorization",
    "linalg_ldl_solve": "ONNX has no LDL factorization",
    "geqrf_a": "ONNX has no QR factorization",
    "geqrf_tau": "ONNX has no QR factorization",
    "lgamma": "ONNX has no log-gamma operator",
    "digamma": "ONNX has no digamma operator",
    "polygamma": "ONNX has no polygamma operator",
    # issue 27's primitives
    "erfc": "ONNX has no erfc operator (1 - Erf loses every digit of small results)",
    "copysign": "ONNX has no sign-bit test (copysign reads the sign of -0.0 and of NaNs)",
    "nextafter": "ONNX has no nextafter operator",
    "frexp_mantissa": "ONNX has no frexp operator",
    "chebyshev_polynomial_t": "ONNX has no loop-free form of a degree given per element",
    "chebyshev_polynomial_u": "ONNX has no loop-free form of a degree given per element",
    "chebyshev_polynomial_v": "ONNX has no loop-free form of a degree given per element",
    "chebyshev_polynomial_w": "ONNX has no loop-free form of a degree given per element",
    "hermite_polynomial_h": "ONNX has no loop-free form of a degree given per element",
    "hermite_polynomial_he": "ONNX has no loop-free form of a degree given per element",
    "laguerre_polynomial_l": "ONNX has no loop-free form of a degree given per element",
    "legendre_polynomial_p": "ONNX has no loop-free form of a degree given per element",
    "frexp_exponent": "ONNX has no frexp operator",
    "gcd": "ONNX has no gcd operator",
    "lcm": "ONNX has no lcm operator",
    "i0": "ONNX has no Bessel functions",
    "i1": "ONNX has no Bessel functions",
    "i0e": "ONNX has no Bessel functions",
    "i1e": "ONNX has no Bessel functions",
    "erfcx": "ONNX has no erfcx operator (exp(x^2) * erfc(x) overflows)",
    "log_ndtr": "ONNX has no log_ndtr operator (Log(Erf) underflows in the tail)",
    "ndtri": "ONNX has no inverse normal CDF",
    "zeta": "ONNX has no zeta function",
    "igamma": "ONNX has no incomplete gamma function",
    "igammac": "ONNX has no incomplete gamma function",
    "airy_ai": "ONNX has no Airy function",
    "bessel_j0": "ONNX has no Bessel functions",
    "bessel_j1": "ONNX has no Bessel functions",
    "bessel_y0": "ONNX has no Bessel functions",
    "bessel_y1": "ONNX has no Bessel functions",
    "modified_bessel_k0": "ONNX has no Bessel functions",
    "modified_bessel_k1": "ONNX has no Bessel functions",
    "scaled_modified_bessel_k0": "ONNX has no Bessel functions",
    "scaled_modified_bessel_k1": "ONNX has no Bessel functions",
    "lstm_scan_grad": "a gradient is not exported",
    "conv2d_grad_weight": "a gradient is not exported",
}
# Handled by the exporter itself (graph inputs and initializers), not by an emitter.
STRUCTURAL = {"input"}

_SMALL_INTS = (dt.bool_, dt.uint8, dt.int8, dt.int16)


def emits(*names):
    def register(fn):
        for n in names:
            EMIT[n] = fn
        return fn
    return register


def _cast(ctx, x: str, to: dt.DType) -> str:
    return ctx.b.op("Cast", [x], to=onnx_dtype(to))


def _k(ctx, value, dtype: dt.DType) -> str:
    return ctx.b.scalar(value, dtype)


def reduce(ctx, op_type: str, x: str, axes, keepdims: bool) -> str:
    """ReduceX over `axes` (none: the input itself); axes an input from opset 18 (13 for
    ReduceSum), an attribute before."""
    b = ctx.b
    axes = [int(a) for a in axes]
    if not axes:
        return x
    if b.opset >= 18 or (op_type == "ReduceSum" and b.opset >= 13):
        return b.op(op_type, [x, b.ints(axes)], keepdims=int(keepdims))
    return b.op(op_type, [x], axes=axes, keepdims=int(keepdims))


def reshape(ctx, x: str, src_dims: tuple, dims: tuple) -> str:
    """Reshape to `dims` (Dims). A dynamic size equal to the input's at the same position is
    copied (0), one other dynamic size is inferred (-1); otherwise a computed shape."""
    b = ctx.b
    zero = any(d.static and d.c0 == 0 for d in dims)
    allowzero = 1 if zero and b.opset >= 14 else None
    if all(d.static for d in dims):
        return b.op("Reshape", [x, b.ints([d.c0 for d in dims])], allowzero=allowzero)
    if not zero:
        spec = [d.c0 if d.static else 0 if i < len(src_dims) and src_dims[i] == d else None
                for i, d in enumerate(dims)]
        if spec.count(None) <= 1:
            return b.op("Reshape", [x, b.ints([-1 if s is None else s for s in spec])])
    return b.op("Reshape", [x, b.shape(dims)], allowzero=allowzero)


def _same(ctx, node, xs):
    return xs[0]


# ---------------------------------------------------------------- sources

@emits("constant")
def _constant(ctx, node, xs):
    v = node.attrs["value"]
    if isinstance(v, (int, float, bool, np.number, np.bool_)) and not node.shape:
        d = ctx.leaf(node, ("value",))
        if isinstance(d, dm.Bad) or (isinstance(d, dm.Dim) and not d.static):
            return ctx.b.scalar_size(d, node.dtype)
    arr = np.asarray(v, dtype=NP_DTYPES[node.dtype]).reshape(node.shape)
    return ctx.b.const(arr)


@emits("full")
def _full(ctx, node, xs):
    from .builder import to_proto
    b = ctx.b
    one = np.full((1,), node.attrs["value"], dtype=NP_DTYPES[node.dtype])
    return b.op("ConstantOfShape", [b.shape(ctx.shape(node))], value=to_proto(one, "value"))


@emits("iota")
def _iota(ctx, node, xs):
    b, a = ctx.b, node.attrs
    n = b.op("Reshape", [b.dim(ctx.shape(node)[0]), b.ints([])])
    r = b.op("Range", [b.const(np.int64(0)), n, b.const(np.int64(1))])
    start, step = a["start"], a["step"]
    whole = not node.dtype.is_floating_point and float(start).is_integer() and \
        float(step).is_integer()
    work = dt.int64 if whole else dt.float64
    if work is dt.float64:
        r = _cast(ctx, r, dt.float64)
    if step != 1:
        r = b.op("Mul", [r, _k(ctx, step, work)])
    if start != 0:
        r = b.op("Add", [r, _k(ctx, start, work)])
    return r if node.dtype is work else _cast(ctx, r, node.dtype)


@emits("random")
def _random(ctx, node, xs):
    from .builder import to_proto
    b, a = ctx.b, node.attrs
    dist = a["dist"]
    real = node.dtype if node.dtype in (dt.float16, dt.float32, dt.float64) else dt.float32
    if dist == "normal":
        kind, kw = "RandomNormal", {"mean": 0.0, "scale": 1.0}
    else:
        lo, hi = (0.0, 1.0) if a.get("low") is None else (float(a["low"]), float(a["high"]))
        if dist == "randint":
            real = dt.float64
        kind, kw = "RandomUniform", {"low": lo, "high": hi}
    dims = ctx.shape(node)
    if all(d.static for d in dims):
        r = b.op(kind, [], dtype=onnx_dtype(real), shape=[d.c0 for d in dims], **kw)
    else:
        like = b.op("ConstantOfShape", [b.shape(dims)],
                    value=to_proto(np.zeros(1, NP_DTYPES[real]), "value"))
        r = b.op(kind + "Like", [like], dtype=onnx_dtype(real), **kw)
    if dist == "randint":
        r = b.op("Floor", [r])
    return r if real is node.dtype else _cast(ctx, r, node.dtype)


# ---------------------------------------------------------------- elementwise

_UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos",
          "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
          "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
          "tanh": "Tanh", "sigmoid": "Sigmoid", "erf": "Erf", "abs": "Abs", "sign": "Sign"}


def _widened(ctx, op_type: str, xs: list, dtype: dt.DType, compare: bool = False) -> str:
    """op_type on inputs of `dtype`; bool and 8/16-bit integers (few ONNX runtimes implement
    arithmetic on them) compute in int32 and are cast back, which wraps as they would (a
    comparison's bool result stays as it is)."""
    b = ctx.b
    if dtype in _SMALL_INTS:
        r = b.op(op_type, [_cast(ctx, x, dt.int32) for x in xs])
        return r if compare else _cast(ctx, r, dtype)
    return b.op(op_type, list(xs))


def _unary(op_type):
    def emit(ctx, node, xs):
        d = node.inputs[0].dtype
        if op_type in ("Abs", "Sign") and d is dt.bool_:
            return xs[0]
        return _widened(ctx, op_type, xs, d)
    return emit


for _n, _o in _UNARY.items():
    EMIT[_n] = _unary(_o)


@emits("relu")
def _relu(ctx, node, xs):
    d = node.dtype
    if d.is_floating_point:
        return ctx.b.op("Relu", xs)
    # Relu takes integers from opset 14, but runtimes rarely implement that: Max(x, 0)
    return _widened(ctx, "Max", [xs[0], _k(ctx, 0, d)], d)


def _log_base(base):
    def emit(ctx, node, xs):
        return ctx.b.op("Div", [ctx.b.op("Log", xs), _k(ctx, math.log(base), node.dtype)])
    return emit


EMIT["log2"] = _log_base(2.0)
EMIT["log10"] = _log_base(10.0)


@emits("exp2")
def _exp2(ctx, node, xs):
    return ctx.b.op("Pow", [_k(ctx, 2.0, node.dtype), xs[0]])


@emits("log1p")
def _log1p_emit(ctx, node, xs):
    return _log1p(ctx, xs[0], node.dtype)


def _log1p(ctx, x: str, d: dt.DType) -> str:
    # log(u) * x / (u - 1) with u = 1 + x (Goldberg): exact to rounding where log(1 + x) is not
    b = ctx.b
    u = b.op("Add", [x, _k(ctx, 1, d)])
    um1 = b.op("Sub", [u, _k(ctx, 1, d)])
    r = b.op("Div", [b.op("Mul", [b.op("Log", [u]), x]), um1])
    inf = b.op("IsInf", [x], detect_negative=0)
    r = b.op("Where", [b.op("Equal", [um1, _k(ctx, 0, d)]), x, r])
    return b.op("Where", [inf, x, r])


@emits("expm1")
def _expm1(ctx, node, xs):
    # (u - 1) * x / log(u) with u = exp(x) (Kahan): exact to rounding where exp(x) - 1 is not
    b, x, d = ctx.b, xs[0], node.dtype
    u = b.op("Exp", [x])
    um1 = b.op("Sub", [u, _k(ctx, 1, d)])
    r = b.op("Div", [b.op("Mul", [um1, x]), b.op("Log", [u])])
    r = b.op("Where", [b.op("Equal", [u, _k(ctx, 1, d)]), x, r])
    r = b.op("Where", [b.op("Equal", [um1, _k(ctx, -1, d)]), um1, r])
    return b.op("Where", [b.op("IsInf", [u]), u, r])


@emits("erfinv")
def _erfinv(ctx, node, xs):
    # Giles' approximation and two Newton steps on erf (ir/elementwise.py's C), in the
    # input's type (float32 where narrower: onnxruntime has Erf for float32 only)
    b = ctx.b
    d = dt.float64 if node.dtype is dt.float64 else dt.float32
    y = xs[0] if node.dtype is d else _cast(ctx, xs[0], d)
    a = b.op("Abs", [y])
    one = _k(ctx, 1.0, d)
    inside = b.op("Less", [a, one])
    a_in = b.op("Where", [inside, a, _k(ctx, 0.0, d)])
    w = b.op("Neg", [b.op("Log", [b.op("Mul", [b.op("Sub", [one, a_in]),
                                                 b.op("Add", [one, a_in])])])])
    central = b.op("Less", [w, _k(ctx, 5.0, d)])
    wc = b.op("Sub", [w, _k(ctx, 2.5, d)])
    wt = b.op("Sub", [b.op("Sqrt", [b.op("Where", [central, _k(ctx, 0.0, d), w])]),
                      _k(ctx, 3.0, d)])

    def horner(coefs, v):
        p = _k(ctx, coefs[0], d)
        for c in coefs[1:]:
            p = b.op("Add", [_k(ctx, c, d), b.op("Mul", [p, v])])
        return p
    x = b.op("Mul", [b.op("Where", [central, horner(_GILES_CENTRAL, wc),
                                    horner(_GILES_TAIL, wt)]), a_in])
    k = _k(ctx, 2.0 / math.sqrt(math.pi), d)
    for _ in range(2):
        slope = b.op("Mul", [k, b.op("Exp", [b.op("Neg", [b.op("Mul", [x, x])])])])
        x = b.op("Sub", [x, b.op("Div", [b.op("Sub", [b.op("Erf", [x]), a_in]), slope])])
    edge = b.op("Where", [b.op("Equal", [a, one]), _k(ctx, math.inf, d), _k(ctx, math.nan, d)])
    x = b.op("Where", [inside, x, edge])
    x = b.op("Where", [b.op("Less", [y, _k(ctx, 0.0, d)]), b.op("Neg", [x]), x])
    return x if node.dtype is d else _cast(ctx, x, node.dtype)


def _rounding(op_type):
    def emit(ctx, node, xs):
        if not node.dtype.is_floating_point:
            return xs[0]
        if op_type == "Trunc":
            b, x = ctx.b, xs[0]
            neg = b.op("Less", [x, _k(ctx, 0, node.dtype)])
            return b.op("Where", [neg, b.op("Ceil", [x]), b.op("Floor", [x])])
        return ctx.b.op(op_type, xs)
    return emit


for _n, _o in (("floor", "Floor"), ("ceil", "Ceil"), ("round", "Round"), ("trunc", "Trunc")):
    EMIT[_n] = _rounding(_o)


@emits("logical_not")
def _logical_not(ctx, node, xs):
    src = node.inputs[0].dtype
    if src is dt.bool_:
        return ctx.b.op("Not", xs)
    return ctx.b.op("Equal", [xs[0], _k(ctx, 0, src)])


EMIT["copy"] = EMIT["detach"] = EMIT["check"] = EMIT["to_device"] = _same


@emits("cast")
def _cast_emit(ctx, node, xs):
    if node.dtype is node.inputs[0].dtype:
        return xs[0]
    return _cast(ctx, xs[0], node.dtype)


@emits("clamp")
def _clamp(ctx, node, xs):
    b, d = ctx.b, node.dtype
    lo, hi = node.attrs.get("min"), node.attrs.get("max")
    if d in _SMALL_INTS:
        x = _cast(ctx, xs[0], dt.int32)
        r = b.op("Clip", [x, "" if lo is None else _k(ctx, lo, dt.int32),
                          "" if hi is None else _k(ctx, hi, dt.int32)])
        return _cast(ctx, r, d)
    # Clip returns max where min > max, as PyTorch's clamp does
    return b.op("Clip", [xs[0], "" if lo is None else _k(ctx, lo, d),
                         "" if hi is None else _k(ctx, hi, d)])


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min"}
_BOOL_BINARY = {"add": "Or", "mul": "And", "maximum": "Or", "minimum": "And"}


def _binary(name, op_type):
    def emit(ctx, node, xs):
        d = node.inputs[0].dtype
        if d is dt.bool_ and name in _BOOL_BINARY:
            return ctx.b.op(_BOOL_BINARY[name], xs)
        return _widened(ctx, op_type, xs, d)
    return emit


for _n, _o in _BINARY.items():
    EMIT[_n] = _binary(_n, _o)

_COMPARE = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
            "ge": "GreaterOrEqual"}


def _compare(op_type):
    def emit(ctx, node, xs):
        d = node.inputs[0].dtype
        if op_type == "Equal" and d is dt.bool_:
            return ctx.b.op("Equal", xs)
        return _widened(ctx, op_type, xs, d, compare=True)
    return emit


for _n, _o in _COMPARE.items():
    EMIT[_n] = _compare(_o)


@emits("ne")
def _ne(ctx, node, xs):
    return ctx.b.op("Not", [EMIT["eq"](ctx, node, xs)])


@emits("where")
def _where(ctx, node, xs):
    return ctx.b.op("Where", xs)


@emits("atan2")
def _atan2(ctx, node, xs):
    # atan(y / x), moved by +-pi (to y's side, signed zeros included) where x < 0; at x == 0
    # +-pi/2, or for y == 0 the signed zero (x = +0) or +-pi (x = -0), as C's atan2
    b, d = ctx.b, node.dtype
    y, x = xs
    zero, one = _k(ctx, 0, d), _k(ctx, 1, d)

    def negative(v):  # sign bit set: v < 0 or v is -0
        return b.op("Or", [b.op("Less", [v, zero]),
                           b.op("And", [b.op("Equal", [v, zero]),
                                        b.op("Less", [b.op("Div", [one, v]), zero])])])
    pi_y = b.op("Where", [negative(y), _k(ctx, -math.pi, d), _k(ctx, math.pi, d)])
    base = b.op("Atan", [b.op("Div", [y, x])])
    r = b.op("Where", [b.op("Less", [x, zero]), b.op("Add", [base, pi_y]), base])
    y0 = b.op("Where", [negative(x), pi_y, y])
    at0 = b.op("Where", [b.op("Equal", [y, zero]), y0,
                         b.op("Where", [b.op("Greater", [y, zero]), _k(ctx, math.pi / 2, d),
                                        _k(ctx, -math.pi / 2, d)])])
    return b.op("Where", [b.op("Equal", [x, zero]), at0, r])


@emits("hypot")
def _hypot(ctx, node, xs):
    # scaled by the larger magnitude so squares neither overflow nor underflow
    b, d = ctx.b, node.dtype
    ax, ay = b.op("Abs", [xs[0]]), b.op("Abs", [xs[1]])
    hi, lo = b.op("Max", [ax, ay]), b.op("Min", [ax, ay])
    zero = _k(ctx, 0, d)
    ratio = b.op("Div", [lo, b.op("Where", [b.op("Equal", [hi, zero]), _k(ctx, 1, d), hi])])
    r = b.op("Mul", [hi, b.op("Sqrt", [b.op("Add", [_k(ctx, 1, d),
                                                     b.op("Mul", [ratio, ratio])])])])
    return b.op("Where", [b.op("IsInf", [hi]), hi, r])


@emits("gelu")
def _gelu(ctx, node, xs):
    """Gelu from opset 20; before, x * 0.5 * (Erf(x * 1/sqrt 2) + 1)."""
    b, d = ctx.b, node.dtype
    if b.opset >= 20:
        return b.op("Gelu", xs)
    x = xs[0]
    erf = b.op("Erf", [b.op("Mul", [x, _k(ctx, 0.7071067811865476, d)])])
    return b.op("Mul", [b.op("Mul", [x, _k(ctx, 0.5, d)]), b.op("Add", [erf, _k(ctx, 1, d)])])


@emits("logaddexp")
def _logaddexp(ctx, node, xs):
    # max + log1p(exp(-|a - b|)); equal arguments (infinities included) give a + log 2
    b, d = ctx.b, node.dtype
    a, c = xs
    m = b.op("Max", [a, c])
    t = b.op("Exp", [b.op("Neg", [b.op("Abs", [b.op("Sub", [a, c])])])])
    r = b.op("Add", [m, _log1p(ctx, t, d)])
    same = b.op("Equal", [a, c])
    return b.op("Where", [same, b.op("Add", [a, _k(ctx, math.log(2.0), d)]), r])


def _xlog(ctx, node, xs, log):
    # x * log(y), 0 where x == 0 unless y is NaN
    b, d = ctx.b, node.dtype
    x, y = xs
    zero = _k(ctx, 0, d)
    keep0 = b.op("And", [b.op("Equal", [x, zero]), b.op("Equal", [y, y])])
    return b.op("Where", [keep0, zero, b.op("Mul", [x, log(y)])])


@emits("xlogy")
def _xlogy(ctx, node, xs):
    return _xlog(ctx, node, xs, lambda y: ctx.b.op("Log", [y]))


@emits("xlog1py")
def _xlog1py(ctx, node, xs):
    return _xlog(ctx, node, xs, lambda y: _log1p(ctx, y, node.dtype))


@emits("entr")
def _entr(ctx, node, xs):
    # -x log x above 0, 0 at 0, -inf below, NaN kept
    b, d = ctx.b, node.dtype
    x = xs[0]
    zero = _k(ctx, 0, d)
    below = b.op("Where", [b.op("Equal", [x, x]), _k(ctx, -math.inf, d), x])
    r = b.op("Where", [b.op("Equal", [x, zero]), zero, below])
    return b.op("Where", [b.op("Greater", [x, zero]),
                          b.op("Neg", [b.op("Mul", [x, b.op("Log", [x])])]), r])


def _fmod(ctx, a, c, d):
    return _widened(ctx, "Mod", [a, c], d) if d in _SMALL_INTS else ctx.b.op(
        "Mod", [a, c], fmod=1)


@emits("fmod")
def _fmod_emit(ctx, node, xs):
    return _fmod(ctx, xs[0], xs[1], node.dtype)


@emits("remainder")
def _remainder(ctx, node, xs):
    b, d = ctx.b, node.dtype
    a, c = xs
    if not d.is_floating_point:
        if d in _SMALL_INTS:
            return _cast(ctx, b.op("Mod", [_cast(ctx, a, dt.int32), _cast(ctx, c, dt.int32)],
                                   fmod=0), d)
        return b.op("Mod", [a, c], fmod=0)
    zero = _k(ctx, 0, d)
    r = b.op("Mod", [a, c], fmod=1)
    fix = b.op("And", [b.op("Not", [b.op("Equal", [r, zero])]),
                       b.op("Xor", [b.op("Less", [r, zero]), b.op("Less", [c, zero])])])
    return b.op("Where", [fix, b.op("Add", [r, c]), r])


@emits("floor_divide")
def _floor_divide(ctx, node, xs):
    b, d = ctx.b, node.dtype
    a, c = xs
    if not d.is_floating_point:
        w = dt.int32 if d in _SMALL_INTS else d
        a2, c2 = (_cast(ctx, a, w), _cast(ctx, c, w)) if w is not d else (a, c)
        zero = _k(ctx, 0, w)
        q = b.op("Div", [a2, c2])  # truncates
        inexact = b.op("Not", [b.op("Equal", [b.op("Mul", [q, c2]), a2])])
        neg = b.op("Xor", [b.op("Less", [a2, zero]), b.op("Less", [c2, zero])])
        q = b.op("Sub", [q, _cast(ctx, b.op("And", [inexact, neg]), w)])
        return q if w is d else _cast(ctx, q, d)
    # numpy's: from fmod, so exact where a / b rounds across an integer
    zero, one = _k(ctx, 0, d), _k(ctx, 1, d)
    mod = b.op("Mod", [a, c], fmod=1)
    div = b.op("Div", [b.op("Sub", [a, mod]), c])
    fix = b.op("And", [b.op("Not", [b.op("Equal", [mod, zero])]),
                       b.op("Xor", [b.op("Less", [c, zero]), b.op("Less", [mod, zero])])])
    div = b.op("Where", [fix, b.op("Sub", [div, one]), div])
    f = b.op("Floor", [div])
    f = b.op("Where", [b.op("Greater", [b.op("Sub", [div, f]), _k(ctx, 0.5, d)]),
                       b.op("Add", [f, one]), f])
    plain = b.op("Div", [a, c])
    f = b.op("Where", [b.op("Equal", [div, zero]),
                       b.op("Mul", [b.op("Sign", [plain]), zero]), f])
    return b.op("Where", [b.op("Equal", [c, zero]), plain, f])


def _bitwise(bool_op, int_op):
    def emit(ctx, node, xs):
        if node.dtype is dt.bool_:
            return ctx.b.op(bool_op, xs)
        ctx.need(node, 18)
        return ctx.b.op(int_op, xs)
    return emit


EMIT["bitwise_and"] = _bitwise("And", "BitwiseAnd")
EMIT["bitwise_or"] = _bitwise("Or", "BitwiseOr")
EMIT["bitwise_xor"] = _bitwise("Xor", "BitwiseXor")
EMIT["bitwise_not"] = _bitwise("Not", "BitwiseNot")  # (bool never reaches it: logical_not)

_UNSIGNED = {dt.int32: "UINT32", dt.int64: "UINT64", dt.uint8: "UINT8"}


@emits("bitwise_left_shift", "bitwise_right_shift")
def _shift(ctx, node, xs):
    # BitShift takes unsigned types only: shift the same bits as the unsigned type of the same
    # width (8/16-bit signed values widen to int32 first, which wraps back the same); an
    # arithmetic right shift of a negative x is ~((~x) >> s), ~x being >= 0
    from onnx import TensorProto
    b, d = ctx.b, node.dtype
    w = d if d in _UNSIGNED else dt.int32
    x = xs[0] if w is d else _cast(ctx, xs[0], w)
    u = getattr(TensorProto, _UNSIGNED[w])
    s = b.op("Cast", [xs[1]], to=u)
    if node.op == "bitwise_left_shift" or w is dt.uint8:
        direction = "LEFT" if node.op == "bitwise_left_shift" else "RIGHT"
        r = b.op("BitShift", [b.op("Cast", [x], to=u), s], direction=direction)
        return r if w is d and d is dt.uint8 else _cast(ctx, r, d)
    ctx.need(node, 18)
    neg = b.op("Less", [x, _k(ctx, 0, w)])
    pos = b.op("Where", [neg, b.op("BitwiseNot", [x]), x])
    r = _cast(ctx, b.op("BitShift", [b.op("Cast", [pos], to=u), s], direction="RIGHT"), w)
    r = b.op("Where", [neg, b.op("BitwiseNot", [r]), r])
    return r if w is d else _cast(ctx, r, d)


# ---------------------------------------------------------------- reductions

def _reduction(op_type):
    def emit(ctx, node, xs):
        a, d = node.attrs, node.dtype
        if d in _SMALL_INTS or d in (dt.float16, dt.bfloat16):
            # narrow types accumulate in float32 / int32, as fusetorch's eager sums do
            wide = dt.float32 if d.is_floating_point else dt.int32
            r = reduce(ctx, op_type, _cast(ctx, xs[0], wide), a["dims"], a["keepdim"])
            return _cast(ctx, r, d)
        return reduce(ctx, op_type, xs[0], a["dims"], a["keepdim"])
    return emit


for _n, _o in (("sum", "ReduceSum"), ("prod", "ReduceProd"), ("max", "ReduceMax"),
               ("min", "ReduceMin")):
    EMIT[_n] = _reduction(_o)


def _arg_reduction(op_type):
    def emit(ctx, node, xs):
        x = xs[0]
        if node.inputs[0].dtype in _SMALL_INTS:
            x = _cast(ctx, x, dt.int32)
        return ctx.b.op(op_type, [x], axis=int(node.attrs["dims"][0]),
                        keepdims=int(node.attrs["keepdim"]), select_last_index=0)
    return emit


EMIT["argmax"] = _arg_reduction("ArgMax")
EMIT["argmin"] = _arg_reduction("ArgMin")


# ---------------------------------------------------------------- movement

@emits("reshape")
def _reshape(ctx, node, xs):
    return reshape(ctx, xs[0], ctx.shape(node.inputs[0]), ctx.shape(node))


@emits("permute")
def _permute(ctx, node, xs):
    n = len(node.shape)
    perm = [int(p) % n if n else 0 for p in node.attrs["perm"]]
    if perm == list(range(n)):
        return xs[0]
    return ctx.b.op("Transpose", xs, perm=perm)


@emits("expand")
def _expand(ctx, node, xs):
    src, dims = ctx.shape(node.inputs[0]), ctx.shape(node)
    lead = len(dims) - len(src)
    # a dim the input already has is 1 in Expand's (broadcasting) shape
    want = [dm.Dim(1) if i >= lead and src[i - lead] == d else d for i, d in enumerate(dims)]
    return ctx.b.op("Expand", [xs[0], ctx.b.shape(want)])


def index_value(ctx, node, x: str, src_dims: tuple, idx: list, idx_nodes: list) -> str:
    """x[spec] (node.attrs['spec'], sizes through ctx.leaf) for x of dims `src_dims`, with
    index tensors `idx` (ONNX names; their IR nodes `idx_nodes`). Ints and slices are one Slice
    (then a Squeeze), None an Unsqueeze, tensors a Gather (one) or a GatherND over the indexed
    dims moved to the front (several), placed as ir.ops.index_shape places them."""
    b, spec = ctx.b, node.attrs["spec"]
    starts, ends, axes, steps, squeeze = [], [], [], [], []
    layout = []  # the value after the basic part: ('dim',) | ('new',) | ('tensor', k)
    gap, seen, adv_first = False, False, None
    dim = 0
    for p, item in enumerate(spec):
        tag = item[0]
        if tag == "none":
            layout.append(("new",))
            gap = gap or seen
            continue
        if tag == "int":
            i = ctx.leaf(node, ("spec", p, 1))
            if isinstance(i, dm.Dim) and i.static and i.c0 < 0:
                stop = dm.Dim(i.c0 + 1) if i.c0 < -1 else dm.Dim(INT64_MAX)
            else:
                stop = i.shift(1) if isinstance(i, dm.Dim) else i
            starts.append(i), ends.append(stop), axes.append(dim), steps.append(1)
            squeeze.append(dim)
        elif tag == "slice":
            start, stop = ctx.leaf(node, ("spec", p, 1)), ctx.leaf(node, ("spec", p, 2))
            step = int(item[3])
            if stop == src_dims[dim] and step > 0:
                if start != dm.Dim(0) or step != 1:
                    starts.append(start), ends.append(dm.Dim(INT64_MAX)), axes.append(dim)
                    steps.append(step)
            else:
                starts.append(start), ends.append(stop), axes.append(dim), steps.append(step)
            layout.append(("dim",))
            gap = gap or seen
        else:
            if adv_first is None:
                adv_first = len(layout)
            seen = True
            layout.append(("tensor", item[1]))
        dim += 1
    layout.extend(("dim",) for _ in range(dim, len(src_dims)))
    v = x
    if axes:
        v = b.op("Slice", [v, b.shape(starts), b.shape(ends), b.ints(axes), b.ints(steps)])
    if squeeze:
        v = b.op("Squeeze", [v, b.ints(squeeze)])
    new = [i for i, e in enumerate(layout) if e[0] == "new"]
    if new:
        v = b.op("Unsqueeze", [v, b.ints(new)])
    tpos = [i for i, e in enumerate(layout) if e[0] == "tensor"]
    if not tpos:
        return v
    rank = len(layout)
    ks = [layout[t][1] for t in tpos]
    nb = max(len(idx_nodes[k].shape) for k in ks)
    if len(tpos) == 1:
        v = b.op("Gather", [v, idx[ks[0]]], axis=tpos[0])
        at = tpos[0]
    else:
        others = [i for i in range(rank) if i not in tpos]
        if tpos != list(range(len(tpos))):
            v = b.op("Transpose", [v], perm=tpos + others)
        cols = [idx[k] for k in ks]
        shapes = {tuple(ctx.shape(idx_nodes[k])) for k in ks}
        if len(shapes) > 1:  # broadcast the index tensors together
            total = cols[0]
            for c in cols[1:]:
                total = b.op("Add", [total, c])
            common = b.op("Shape", [total])
            cols = [b.op("Expand", [c, common]) for c in cols]
        cols = [b.op("Unsqueeze", [c, b.ints([-1])]) for c in cols]
        v = b.op("GatherND", [v, b.op("Concat", cols, axis=-1)])
        at = 0
    want = 0 if gap else adv_first
    if want != at:
        cur = list(range(nb + rank - len(tpos)))
        bdims, rest = cur[at:at + nb], cur[:at] + cur[at + nb:]
        v = b.op("Transpose", [v], perm=rest[:want] + bdims + rest[want:])
    return v


@emits("index")
def _index(ctx, node, xs):
    return index_value(ctx, node, xs[0], ctx.shape(node.inputs[0]), xs[1:], node.inputs[1:])


@emits("index_put")
def _index_put(ctx, node, xs):
    # the flat positions x[spec] selects, from an iota shaped like x; then one ScatterND into
    # the flattened x (reduction add for accumulate: repeated positions each add)
    b = ctx.b
    x, v, idx = xs[0], xs[1], xs[2:]
    if node.attrs["accumulate"]:
        ctx.need(node, 16)
    shape_x = b.op("Shape", [x])
    grid = b.op("Reshape", [b.op("Range", [b.const(np.int64(0)), b.op("Size", [x]),
                                           b.const(np.int64(1))]), shape_x])
    pos = index_value(ctx, node, grid, ctx.shape(node.inputs[0]), idx, node.inputs[2:])
    flat_pos = b.op("Unsqueeze", [b.op("Reshape", [pos, b.ints([-1])]), b.ints([-1])])
    vals = b.op("Reshape", [b.op("Expand", [v, b.op("Shape", [pos])]), b.ints([-1])])
    flat = b.op("Reshape", [x, b.ints([-1])])
    out = b.op("ScatterND", [flat, flat_pos, vals],
               reduction="add" if node.attrs["accumulate"] else None)
    return b.op("Reshape", [out, shape_x])


@emits("cat")
def _cat(ctx, node, xs):
    n = len(node.shape)
    return ctx.b.op("Concat", xs, axis=int(node.attrs["dim"]) % n)


@emits("gather")
def _gather(ctx, node, xs):
    return ctx.b.op("GatherElements", xs, axis=int(node.attrs["dim"]))


@emits("scatter_add")
def _scatter_add(ctx, node, xs):
    b = ctx.b
    ctx.need(node, 16)
    x, index, src = xs
    if tuple(node.inputs[2].shape) != tuple(node.inputs[1].shape) or \
            ctx.shape(node.inputs[2]) != ctx.shape(node.inputs[1]):
        n = len(node.shape)
        src = b.op("Slice", [src, b.ints([0] * n), b.op("Shape", [index]), b.ints(range(n))])
    return b.op("ScatterElements", [x, index, src], axis=int(node.attrs["dim"]),
                reduction="add")


@emits("scatter_reduce")
def _scatter_reduce(ctx, node, xs):
    b, a = ctx.b, node.attrs
    ctx.need(node, 18)  # ScatterElements' mul/max/min reductions
    x, index, src = xs
    d = int(a["dim"])
    if not a["include_self"]:  # written positions start from the reduction's identity
        if node.dtype.is_floating_point:
            ident = {"prod": 1.0, "amax": -math.inf, "amin": math.inf}[a["reduce"]]
        elif node.dtype is dt.bool_:
            ident = a["reduce"] != "amax"
        else:
            info = np.iinfo(NP_DTYPES[node.dtype])
            ident = {"prod": 1, "amax": int(info.min), "amin": int(info.max)}[a["reduce"]]
        fill = b.op("Expand", [_k(ctx, ident, node.dtype), b.op("Shape", [index])])
        x = b.op("ScatterElements", [x, index, fill], axis=d)
    return b.op("ScatterElements", [x, index, src], axis=d,
                reduction={"prod": "mul", "amax": "max", "amin": "min"}[a["reduce"]])


@emits("nonzero")
def _nonzero(ctx, node, xs):
    return ctx.b.op("Transpose", [ctx.b.op("NonZero", xs)], perm=[1, 0])


@emits("matmul")
def _matmul(ctx, node, xs):
    d = node.dtype
    if d in (dt.float16, dt.bfloat16):  # eager multiplies these in float32
        r = ctx.b.op("MatMul", [_cast(ctx, x, dt.float32) for x in xs])
        return _cast(ctx, r, d)
    return _widened(ctx, "MatMul", xs, d)


# ---------------------------------------------------------------- layers

def _max_pool_whole(n, opset: int) -> bool:
    """Whether one MaxPool computes this max_pool2d node: onnxruntime's float32 or float64,
    and windows as without ceil_mode (its extra windows follow another rule in ONNX's
    opsets); other nodes are exported as their composition (capture.py)."""
    a = n.attrs
    plain = dict(a, ceil_mode=False)
    return n.dtype in (dt.float32, dt.float64) and \
        pool_ops.geometry(n.inputs[0].shape, a) == pool_ops.geometry(n.inputs[0].shape, plain)


def _float32(n, opset: int) -> bool:
    # onnxruntime implements Conv and LSTM for float32 only
    return n.dtype is dt.float32


def _real(n, opset: int) -> bool:
    # ... and Softmax, LogSoftmax for float32 and float64
    return n.dtype in (dt.float32, dt.float64)


def _layer_norm_whole(n, opset: int) -> bool:
    return opset >= 17 and _real(n, opset)  # LayerNormalization came in opset 17


def _gemm_whole(n, opset: int) -> bool:
    # Gemm multiplies matrices: a stack of rows is MatMul and Add (the composition)
    return len(n.inputs[0].shape) == 2 and _real(n, opset)


def _avg_pool_whole(n, opset: int) -> bool:
    # AveragePool divides by the window's size (padded zeros counted); onnxruntime runs it for
    # float32 only
    return _float32(n, opset) and n.attrs["divisor"] == math.prod(n.attrs["kernel"])


# primitives with a composition that one ONNX operator computes where the predicate holds
WHOLE = {"max_pool2d": _max_pool_whole, "max_pool3d": _max_pool_whole, "conv2d": _float32,
         "conv2d_grad_input": _float32, "lstm": _float32, "lstm_scan": _float32, "linear": _gemm_whole,
         "avg_pool2d": _avg_pool_whole,
         "softmax": _real, "log_softmax": _real, "layer_norm": _layer_norm_whole}


def _window_attrs(a: dict) -> dict:
    pads = list(a["padding"])
    return {"strides": list(a["stride"]), "pads": pads + pads, "dilations": list(a["dilation"])}


@emits("max_pool2d", "max_pool3d")
def _max_pool2d(ctx, node, xs):
    return ctx.b.op("MaxPool", xs, kernel_shape=list(node.attrs["kernel"]),
                    **_window_attrs(node.attrs))


@emits("linear")
def _gemm(ctx, node, xs):
    # (x, W[, b]): Gemm's A, B (transposed) and C as they are
    return ctx.b.op("Gemm", xs, transB=1)


@emits("avg_pool2d")
def _avg_pool2d(ctx, node, xs):
    a = node.attrs
    pads = list(a["padding"])
    return ctx.b.op("AveragePool", xs, kernel_shape=list(a["kernel"]), strides=list(a["stride"]),
                    pads=pads + pads, count_include_pad=1)


@emits("conv2d")
def _conv2d(ctx, node, xs):
    # (x, w[, bias]) are Conv's inputs as they are
    return ctx.b.op("Conv", xs, kernel_shape=list(node.inputs[1].shape[2:]),
                    group=int(node.attrs["groups"]), **_window_attrs(node.attrs))


@emits("conv2d_grad_input")
def _conv_transpose(ctx, node, xs):
    # the transposed convolution (conv_transpose2d): w [O, C/groups, kh, kw] is ConvTranspose's
    # weight as it is; output_padding makes up the rows and columns of `size` no window ends in
    a, w = node.attrs, node.inputs[1].shape
    extra = [size - (s * (i - 1) + d * (k - 1) + 1 - 2 * p) for size, s, i, d, k, p in zip(
        a["size"], a["stride"], node.inputs[0].shape[2:], a["dilation"], w[2:], a["padding"])]
    return ctx.b.op("ConvTranspose", xs, kernel_shape=list(w[2:]), group=int(a["groups"]),
                    output_padding=extra if any(extra) else None, **_window_attrs(a))


@emits("softmax", "log_softmax")
def _softmax(ctx, node, xs):
    kind = "Softmax" if node.op == "softmax" else "LogSoftmax"
    return ctx.b.op(kind, xs, axis=int(node.attrs["dim"]) % len(node.shape))


@emits("layer_norm")
def _layer_norm(ctx, node, xs):
    a, b = node.attrs, ctx.b
    norm = node.shape[len(node.shape) - a["count"]:]
    scale = xs[1] if a["weight"] else b.const(np.ones(norm, dtype=NP_DTYPES[node.dtype]))
    return b.op("LayerNormalization", [xs[0], scale] + xs[1 + a["weight"]:],
                axis=len(node.shape) - a["count"], epsilon=float(a["eps"]))


# ONNX's gate order (i, o, f, c) as blocks of PyTorch's (i, f, g, o)
_ONNX_GATES = (0, 3, 1, 2)


@emits("lstm", "lstm_scan")
def _lstm(ctx, node, xs):
    """ONNX LSTM. For `lstm`, X, W and B are the node's own x, w_ih and b (W's rows in ONNX's
    gate order; B is [Wb | Rb], the recurrence's half zero); an `lstm_scan` (a packed batch's
    run of steps) has X = gi and W the gate permutation, a [4H, 4H] product more per step.
    R is w_hh's rows in ONNX's order. The workspace it returns holds h at every step (Y) and
    c at the last step (Y_c) as parts 0 and 1: all that the forward reads
    (nn/modules/rnn.py: the output and the final state); the other parts are read by the VJP
    only, which export does not record, and a reader of them is refused."""
    b = ctx.b
    hid = node.shape[3]
    last = 0 if node.attrs["reverse"] else node.shape[1] - 1
    for r in ctx.readers(node):
        spec = r.attrs.get("spec", ()) if r.op == "index" else ()
        reads = spec[:1] == (("int", 0),) or (
            spec[:1] == (("int", 1),) and len(spec) > 1 and spec[1][0] == "int" and
            int(spec[1][1]) % node.shape[1] == last)
        if not reads:
            raise OnnxExporterError("an LSTM layer's workspace read beyond its outputs and final "
                                    f"state cannot be exported{_where_of(node)}")
    perm = b.ints([k * hid + j for k in _ONNX_GATES for j in range(hid)])

    def onnx_order(v):  # [4H, ...] rows in ONNX's gate order, with a leading direction axis
        return b.op("Unsqueeze", [b.op("Gather", [v, perm], axis=0), b.ints([0])])
    bias = ""
    if node.op == "lstm":
        x, h0, c0, w_ih, w_hh = xs[:5]
        w = onnx_order(w_ih)
        if len(xs) == 6:
            zeros = b.const(np.zeros((1, 4 * hid), NP_DTYPES[node.dtype]))
            bias = b.op("Concat", [onnx_order(xs[5]), zeros], axis=1)
    else:
        x, h0, c0, w_hh = xs
        eye = b.op("EyeLike", [b.op("ConstantOfShape", [b.ints([4 * hid, 4 * hid])],
                                    value=_proto_value(np.zeros(1, NP_DTYPES[node.dtype])))])
        w = onnx_order(eye)
    r = onnx_order(w_hh)
    h0, c0 = (b.op("Unsqueeze", [s, b.ints([0])]) for s in (h0, c0))
    y, _, y_c = b.op("LSTM", [x, w, r, bias, "", h0, c0], n_out=3, hidden_size=hid,
                     direction="reverse" if node.attrs["reverse"] else "forward")
    y = b.op("Squeeze", [y, b.ints([1])])  # [T, 1, B, H]: one direction
    cs = b.op("Expand", [y_c, b.op("Shape", [y])])
    return b.op("Concat", [b.op("Unsqueeze", [v, b.ints([0])]) for v in (y, cs)], axis=0)


def _proto_value(a):
    from .builder import to_proto
    return to_proto(a, "value")


def _where_of(node) -> str:
    src = (node.meta or {}).get("source")
    return f" (recorded at {src})" if src else ""


@emits("unfold2d")
def _unfold2d(ctx, node, xs):
    # kh * kw strided slices of the padded input, stacked: [N, C, kh*kw, OH, OW] -> 6-d
    b, a = ctx.b, node.attrs
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = a["kernel"], a["stride"], a["padding"], \
        a["dilation"]
    x = xs[0]
    if ph or pw:
        x = b.op("Pad", [x, b.ints([0, 0, ph, pw, 0, 0, ph, pw]),
                         _k(ctx, a["pad_value"], node.dtype)], mode="constant")
    dims = ctx.shape(node)
    oh, ow = dims[4], dims[5]
    for d in (oh, ow):
        if isinstance(d, dm.Bad):
            b.dim(d)  # raises: no ONNX shape can follow this size
    parts = []
    for i in range(kh):
        for j in range(kw):
            starts = [dm.Dim(i * dh), dm.Dim(j * dw)]
            ends = [oh.scale(sh).shift(i * dh - sh + 1), ow.scale(sw).shift(j * dw - sw + 1)]
            s = b.op("Slice", [x, b.shape(starts), b.shape(ends), b.ints([2, 3]),
                               b.ints([sh, sw])])
            parts.append(b.op("Unsqueeze", [s, b.ints([2])]))
    cols = parts[0] if len(parts) == 1 else b.op("Concat", parts, axis=2)
    src = ctx.shape(node.inputs[0])
    five = (src[0], src[1], dm.Dim(kh * kw), oh, ow)
    return reshape(ctx, cols, five, tuple(dims))


@emits("fold2d")
def _fold2d(ctx, node, xs):
    b, a = ctx.b, node.attrs
    ctx.need(node, 18)
    (kh, kw), (ph, pw) = a["kernel"], a["padding"]
    c = node.shape[1]
    cols = b.op("Reshape", [xs[0], b.ints([0, c * kh * kw, -1])])
    size = b.shape([ctx.leaf(node, ("size", 0)), ctx.leaf(node, ("size", 1))])
    return b.op("Col2Im", [cols, size, b.ints([kh, kw])],
                dilations=list(a["dilation"]), pads=[ph, pw, ph, pw], strides=list(a["stride"]))


# ---------------------------------------------------------------- scans and sorting

def _to_last(ctx, x: str, dim: int, n: int):
    """(x with `dim` moved last, the permutation that moves it back)."""
    if dim == n - 1:
        return x, None
    perm = [i for i in range(n) if i != dim] + [dim]
    back = [perm.index(i) for i in range(n)]
    return ctx.b.op("Transpose", [x], perm=perm), back


def _prefix_mask(ctx, node, dim: int) -> str:
    """bool [n, n]: mask[j, k] = k <= j, for the O(n^2) scans ONNX has no operator for."""
    b = ctx.b
    n = ctx.shape(node)[dim]
    if n.static:
        return b.const(np.tril(np.ones((n.c0, n.c0), dtype=bool)))
    r = b.op("Range", [b.const(np.int64(0)), b.op("Reshape", [b.dim(n), b.ints([])]),
                       b.const(np.int64(1))])
    return b.op("LessOrEqual", [b.op("Unsqueeze", [r, b.ints([0])]),
                                b.op("Unsqueeze", [r, b.ints([1])])])


@emits("cumsum")
def _cumsum(ctx, node, xs):
    d = node.dtype
    x = xs[0] if d not in _SMALL_INTS else _cast(ctx, xs[0], dt.int32)
    r = ctx.b.op("CumSum", [x, ctx.b.const(np.int64(node.attrs["dim"]))],
                 reverse=int(bool(node.attrs["reverse"])))
    return r if d not in _SMALL_INTS else _cast(ctx, r, d)


@emits("logcumsumexp")
def _logcumsumexp(ctx, node, xs):
    # shifted by the slice's max (an infinite max shifts by 0)
    b, d, dim = ctx.b, node.dtype, int(node.attrs["dim"])
    m = reduce(ctx, "ReduceMax", xs[0], [dim], True)
    m = b.op("Where", [b.op("IsInf", [m]), _k(ctx, 0, d), m])
    s = b.op("CumSum", [b.op("Exp", [b.op("Sub", [xs[0], m])]), b.const(np.int64(dim))],
             reverse=int(bool(node.attrs["reverse"])))
    return b.op("Add", [b.op("Log", [s]), m])


@emits("cumprod")
def _cumprod(ctx, node, xs):
    b, d = ctx.b, node.dtype
    n, dim = len(node.shape), int(node.attrs["dim"])
    x, back = _to_last(ctx, xs[0], dim, n)
    tri = _prefix_mask(ctx, node, dim)
    rows = b.op("Where", [tri, b.op("Unsqueeze", [x, b.ints([-2])]), _k(ctx, 1, d)])
    if d in _SMALL_INTS:
        r = _cast(ctx, reduce(ctx, "ReduceProd", _cast(ctx, rows, dt.int32), [n], False), d)
    else:
        r = reduce(ctx, "ReduceProd", rows, [n], False)
    return r if back is None else b.op("Transpose", [r], perm=back)


@emits("cumargmax", "cumargmin")
def _cumarg(ctx, node, xs):
    # the last k <= j where x_k equals the extreme of x_0..x_j (or is NaN)
    b = ctx.b
    src = node.inputs[0].dtype
    n, dim = len(node.shape), int(node.attrs["dim"])
    x, back = _to_last(ctx, xs[0], dim, n)
    if src in _SMALL_INTS:
        x, src = _cast(ctx, x, dt.int32), dt.int32
    tri = _prefix_mask(ctx, node, dim)
    big = node.op == "cumargmax"
    if src.is_floating_point:
        fill = -math.inf if big else math.inf
    else:
        info = np.iinfo(NP_DTYPES[src])
        fill = int(info.min if big else info.max)
    xk = b.op("Unsqueeze", [x, b.ints([-2])])  # [..., 1, n]: x_k
    rows = b.op("Where", [tri, xk, _k(ctx, fill, src)])
    ext = reduce(ctx, "ReduceMax" if big else "ReduceMin", rows, [n], True)  # [..., n, 1]
    hit = b.op("Equal", [xk, ext])
    if src.is_floating_point:
        hit = b.op("Or", [hit, b.op("IsNaN", [xk])])
    hit = b.op("And", [hit, tri])
    size = ctx.shape(node)[dim]
    ks = b.op("Range", [b.const(np.int64(0)), b.op("Reshape", [b.dim(size), b.ints([])]),
                        b.const(np.int64(1))])
    pos = b.op("Where", [hit, ks, b.const(np.int64(0))])
    r = reduce(ctx, "ReduceMax", pos, [n], False)
    return r if back is None else b.op("Transpose", [r], perm=back)


def _top_k_indices(ctx, node, x, k: str, largest) -> str:
    """The indices of ONNX TopK along the node's dim, sorted: ties keep the lower index first
    and NaN counts as the largest value, as the argsort and topk primitives order them."""
    if node.inputs[0].dtype in _SMALL_INTS:
        x = _cast(ctx, x, dt.int32)
    _, idx = ctx.b.op("TopK", [x, k], n_out=2, axis=int(node.attrs["dim"]),
                      largest=int(bool(largest)), sorted=1)
    return idx


@emits("argsort")
def _argsort(ctx, node, xs):
    # TopK of every element
    k = ctx.b.dim(ctx.shape(node)[int(node.attrs["dim"])])
    return _top_k_indices(ctx, node, xs[0], k, node.attrs["descending"])


@emits("topk")
def _topk(ctx, node, xs):
    k = ctx.b.ints([int(node.attrs["k"])])
    return _top_k_indices(ctx, node, xs[0], k, node.attrs["largest"])


@emits("searchsorted")
def _searchsorted(ctx, node, xs):
    # how many of the sorted row's elements are < value (<= for right)
    b = ctx.b
    seq, vals = xs
    src = node.inputs[0].dtype
    if src in _SMALL_INTS:
        seq, vals = _cast(ctx, seq, dt.int32), _cast(ctx, vals, dt.int32)
    if len(node.inputs[0].shape) > 1:
        seq = b.op("Unsqueeze", [seq, b.ints([-2])])  # [..., 1, m]
    v = b.op("Unsqueeze", [vals, b.ints([-1])])  # [..., k, 1]
    op_type = "LessOrEqual" if node.attrs["right"] else "Less"
    hits = _cast(ctx, b.op(op_type, [seq, v]), dt.int64)
    r = reduce(ctx, "ReduceSum", hits, [len(node.shape)], False)
    return r if node.dtype is dt.int64 else _cast(ctx, r, node.dtype)


# ---------------------------------------------------------------- linear algebra

@emits("linalg_det")
def _det(ctx, node, xs):
    return ctx.b.op("Det", xs)


@emits("linalg_slogdet_sign")
def _slogdet_sign(ctx, node, xs):
    return ctx.b.op("Sign", [ctx.b.op("Det", xs)])


@emits("linalg_logabsdet")
def _logabsdet(ctx, node, xs):
    return ctx.b.op("Log", [ctx.b.op("Abs", [ctx.b.op("Det", xs)])])
