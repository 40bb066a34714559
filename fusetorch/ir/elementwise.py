"""The elementwise primitives, one definition each: everything the system knows about an op.

Each `elementwise(...)` call declares, together:
  promote     how the tracer casts mixed inputs (see ops.py's header)
  c_expr      the scalar C expression kernels compute ('{0}' operands, '{f}' the float32 libm
              suffix, '{t}' the result's C type); also the CUDA expression
  eager       `eager(xp)` -> the eager implementation for array module `xp` (numpy or cupy),
              a ufunc where possible so eager adds no Python frame
  vjp, saves  the gradient rule and the forward values it reads
  fold_constant  constant folding on exact Python values (`folding.py`), if the op folds
              exactly
  zero_one    with bool operands of 0 or 1 the C expression gives 0 or 1 (lowering does not
              have to normalise the result of a bool-typed node)
  c_literals  (node) -> {key: value}: attribute values the C expression reads as literals
              of the node's dtype (clamp's optional bounds, as -inf and inf when absent)
  simd        libm precisions ('f', 'fd') whose vector variants (libmvec) kernels may call
  c_helper    C source the expression needs (emitted once per kernel module, C and CUDA)
  grad_name   PyTorch's grad_fn name where it is not `<Op>Backward0` (or a function of the
              node, where the name depends on it: pow)
  refuse      (compute dtype, input dtypes) -> the error PyTorch raises for the op, or None
  mask        input 0 is a bool mask, outside promotion (where)
  unary_api   exposed as `torch.<name>(input, *, out=None)`, `Tensor.<name>()` and
              `Tensor.<name>_()` (defs written into tracer/unary_api.py by
              `python -m fusetorch._api.generate`, with a line in its SUMMARIES)
  fusible     False for `copy`, whose meaning is "a fresh buffer"
  distinct    each node is a value of its own, never merged by CSE (`copy` again)
  clone       a fresh buffer holding the input's values (`copy`: drop_copies asks this)
  simplify    (node, make_node) -> an equal node or None: the op's exact algebraic
              identities (x * 1 -> x), a rule from `rewrites.py`, applied by passes.simplify

zero_one, mask, unary_api, distinct and clone (and eager_kernel, native_half, ...) are roles:
flags of the declaration that the entry holds as `OpDef.roles` (ir/roles.py `Role`).

Adding an elementwise primitive is one such call (plus its line in tests/opinfo.py). This
module has no numpy: eager implementations receive the array module.
"""
from __future__ import annotations

import math

from . import dtypes as dt
from . import folding as fo
from . import rewrites as rw
from .ops import (_attr_dtype, _bool_dtype, _broadcast, _def, _first_shape, _same_dtype,
                  _where_dtype, arg, vjp_identity, vjp_zero)

_UNARY_SHAPE = (_first_shape, _same_dtype)


def elementwise(name: str, nin: int, promote: str | None, c_expr: str, eager, *, vjp,
                saves: tuple = (), shape=None, dtype=None, **props) -> None:
    shape = shape or (_first_shape if nin == 1 else _broadcast)
    dtype = dtype or (_bool_dtype if promote == "compare" else _same_dtype)
    _def(name, "elementwise", nin, shape, dtype, promote=promote, c_expr=c_expr, eager=eager,
         vjp=vjp, saves=saves, **props)


def _is_numpy(xp) -> bool:
    return getattr(xp, "__name__", "") == "numpy"


# ---------------------------------------------------------------- unary math

def _vjp_neg(b, n, g):
    return (b.op("neg", g),)


def _refuse_neg(compute, _dtypes, _numbers=()):
    if compute is dt.bool_:
        return ("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return None


elementwise("neg", 1, "same", "(-{0})", lambda xp: xp.negative, vjp=_vjp_neg,
            fold_constant=fo.arith(lambda a: -a), unary_api=True, refuse=_refuse_neg,
            simplify=rw.involution)


def _vjp_exp(b, n, g):
    return (b.op("mul", g, b.value(n)),)


elementwise("exp", 1, "float", "exp{f}({0})", lambda xp: xp.exp, vjp=_vjp_exp,
            saves=("out",), simd="fd", unary_api=True)


def _vjp_log(b, n, g):
    return (b.op("div", g, b.value(arg(n))),)


elementwise("log", 1, "float", "log{f}({0})", lambda xp: xp.log, vjp=_vjp_log, saves=(0,),
            simd="fd", unary_api=True)


def _vjp_log2(b, n, g):
    # d/dx log2(x) = 1 / (x ln 2)
    ln2 = b.const(0.6931471805599453, n.dtype)
    return (b.op("div", g, b.op("mul", b.value(arg(n)), ln2)),)


elementwise("log2", 1, "float", "log2{f}({0})", lambda xp: xp.log2, vjp=_vjp_log2, saves=(0,),
            simd="fd", unary_api=True)


def _vjp_log1p(b, n, g):
    return (b.op("div", g, b.op("add", b.value(arg(n)), b.const(1.0, n.dtype))),)


elementwise("log1p", 1, "float", "log1p{f}({0})", lambda xp: xp.log1p, vjp=_vjp_log1p,
            saves=(0,), simd="fd", unary_api=True, eager_kernel=True)


def _vjp_expm1(b, n, g):
    return (b.op("mul", g, b.op("add", b.value(n), b.const(1.0, n.dtype))),)


elementwise("expm1", 1, "float", "expm1{f}({0})", lambda xp: xp.expm1, vjp=_vjp_expm1,
            saves=("out",), simd="fd", unary_api=True, eager_kernel=True)


def _vjp_sqrt(b, n, g):
    # g / (2 sqrt(x)): inf at x = 0, as PyTorch gives
    return (b.op("div", g, b.op("mul", b.const(2.0, n.dtype), b.value(n))),)


elementwise("sqrt", 1, "float", "sqrt{f}({0})", lambda xp: xp.sqrt, vjp=_vjp_sqrt,
            saves=("out",), fold_constant=fo.arith(fo.sqrt, ints=False), unary_api=True)


def _vjp_sin(b, n, g):
    return (b.op("mul", g, b.op("cos", b.value(arg(n)))),)


elementwise("sin", 1, "float", "sin{f}({0})", lambda xp: xp.sin, vjp=_vjp_sin, saves=(0,),
            simd="f", unary_api=True)


def _vjp_cos(b, n, g):
    return (b.op("neg", b.op("mul", g, b.op("sin", b.value(arg(n))))),)


elementwise("cos", 1, "float", "cos{f}({0})", lambda xp: xp.cos, vjp=_vjp_cos, saves=(0,),
            simd="f", unary_api=True)


def _vjp_tanh(b, n, g):
    y = b.value(n)
    return (b.op("mul", g, b.op("sub", b.const(1.0, n.dtype), b.op("mul", y, y))),)


elementwise("tanh", 1, "float", "tanh{f}({0})", lambda xp: xp.tanh, vjp=_vjp_tanh,
            saves=("out",), simd="fd", unary_api=True)


def _sigmoid(xp):
    def sigmoid(x):
        # exp of a non-positive number only: no overflow for large |x|
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
    return sigmoid


def _vjp_sigmoid(b, n, g):
    y = b.value(n)
    return (b.op("mul", g, b.op("mul", y, b.op("sub", b.const(1.0, n.dtype), y))),)


elementwise("sigmoid", 1, "float", "(1 / (1 + exp{f}(-{0})))", _sigmoid, vjp=_vjp_sigmoid,
            saves=("out",), unary_api=True, eager_kernel=True)


# erf in float64 without scipy: for |x| <= 2.5 the series
#   erf(x) = 2/sqrt(pi) * x * exp(-x^2) * sum_n (2x^2)^n / (2n+1)!!
# (all terms positive, so no cancellation; 36 terms reach double precision at 2.5), above it
# erfc's continued fraction
#   erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
# (25 levels suffice there). Both within a few ulp of libm's erf over the whole line.
_ERF_T = 2.5
_ERF_C = [1.0]
for _k in range(1, 36):
    _ERF_C.append(_ERF_C[-1] * 2.0 / (2 * _k + 1))
_ERF_CF = 25
_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT_PI = 1.7724538509055159


def _erf_series(xp, a):
    """erf(a) for 0 <= a <= 2.5 (float64 arrays)."""
    z = a * a
    s = xp.full_like(z, _ERF_C[-1])
    for c in reversed(_ERF_C[:-1]):
        s *= z
        s += c
    return _TWO_OVER_SQRT_PI * a * xp.exp(-z) * s


def _erfc_fraction(xp, a):
    """erfc(a) for a > 2.5 (float64 arrays)."""
    f = a.copy()
    for k in range(_ERF_CF, 0, -1):
        f = a + (k / 2) / f
    return xp.exp(-a * a) / (_SQRT_PI * f)


def _erf(xp):
    def erf(x):
        shape, x = x.shape, x.reshape(-1)  # 1-d: numpy turns 0-d results into scalars
        a = xp.abs(x.astype("float64"))
        out = _erf_series(xp, xp.minimum(a, _ERF_T))
        big = a > _ERF_T
        if big.any():
            out[big] = 1.0 - _erfc_fraction(xp, a[big])
        return xp.copysign(out, x).astype(x.dtype, copy=False).reshape(shape)
    return erf


def _vjp_erf(b, n, g):
    # d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
    x = b.value(arg(n))
    k = b.const(_TWO_OVER_SQRT_PI, n.dtype)
    return (b.op("mul", g, b.op("mul", k, b.op("exp", b.op("neg", b.op("mul", x, x))))),)


elementwise("erf", 1, "float", "erf{f}({0})", _erf, vjp=_vjp_erf, saves=(0,), unary_api=True,
            simd="fd", eager_kernel=True)


# GELU (nn.functional.gelu, approximate="none") as one primitive, not its five: its VJP reads
# only the input, where the composite's saved x * 0.5, x / sqrt(2) and erf(..) + 1 (three
# more activations of the MLP's width per layer: 226 MB of a nanoGPT step's 0.76 GB), and
# one pass computes it. The forward is PyTorch's formula in the input's dtype, operation by
# operation; the VJP is PyTorch's GeluBackward: g * (cdf + x * pdf).
_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_GELU_C = """/* gelu: x * 0.5 * (erf(x / sqrt 2) + 1), in the order eager computes it */
FT_FN float ft_geluf(float x) { return x * 0.5f * (erff(x * 0.70710678118654752f) + 1.0f); }
FT_FN double ft_gelu(double x) { return x * 0.5 * (erf(x * 0.70710678118654752) + 1.0); }
"""


def _gelu(xp):
    erf = _erf(xp)

    def gelu(x):
        return x * 0.5 * (erf(x * _SQRT_HALF) + 1.0)
    return gelu


def _vjp_gelu(b, n, g):
    x = b.value(arg(n))
    d = n.dtype
    cdf = b.op("mul", b.const(0.5, d), b.op("add", b.op("erf", b.op("mul", x, b.const(
        _SQRT_HALF, d))), b.const(1.0, d)))
    pdf = b.op("mul", b.const(_INV_SQRT_2PI, d), b.op("exp", b.op("mul", b.op("mul", x, x),
                                                                 b.const(-0.5, d))))
    return (b.op("mul", g, b.op("add", cdf, b.op("mul", x, pdf))),)


elementwise("gelu", 1, "float", "ft_gelu{f}({0})", _gelu, vjp=_vjp_gelu, saves=(0,),
            c_helper=_GELU_C, eager_kernel=True)


# erfinv: Giles' single-precision approximation ("Approximating the erfinv function", GPU
# Computing Gems, 2011) as a start, then four Newton steps in double on erf(x) = y, written with
# erfc when |y| > 1/2 (1 - |y| is exact there, and erfc keeps the residual's digits near 1).
# The start is accurate to ~1e-7 over float32's range but only ~3e-3 at 1 - |y| = 1e-10, and
# Newton's error squares (times x) per step: four steps reach double precision everywhere, one
# is float32's (a kernel of float32: 5 ns an element, not 20).
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefs: tuple, indent: str) -> str:
    """C statements evaluating the polynomial with these coefficients (highest first) at w."""
    lines = [f"p = {coefs[0]!r};"] + [f"p = {c!r} + p * w;" for c in coefs[1:]]
    return ("\n" + indent).join(lines)


_ERFINV_C = f"""/* erfinv: Giles' approximation, then Newton steps in double on erf(x) = |y| (with erfc
 * above |y| = 1/2, where 1 - |y| is exact): four for double, one for float, whose start is
 * within ~4e-7 already; +-inf at +-1, NaN outside [-1, 1]. */
FT_FN double ft_erfinv_steps(double y, int steps)
{{
    if (!(y > -1.0 && y < 1.0))
        return y == 1.0 ? INFINITY : (y == -1.0 ? -INFINITY : NAN);
    const double a = fabs(y);
    double w = -log((1.0 - a) * (1.0 + a));
    double p;
    if (w < 5.0) {{
        w -= 2.5;
        {_horner(_GILES_CENTRAL, "        ")}
    }} else {{
        w = sqrt(w) - 3.0;
        {_horner(_GILES_TAIL, "        ")}
    }}
    double x = p * a;
    for (int k = 0; k < steps; k++) {{
        const double slope = {_TWO_OVER_SQRT_PI!r} * exp(-x * x);
        x -= (a > 0.5 ? (1.0 - a) - erfc(x) : erf(x) - a) / slope;
    }}
    return copysign(x, y);
}}
FT_FN double ft_erfinv(double y) {{ return ft_erfinv_steps(y, 4); }}
FT_FN float ft_erfinvf(float y) {{ return (float)ft_erfinv_steps((double)y, 1); }}
"""


def _erfinv(xp):
    erf = _erf(xp)

    def erfc_pos(x):  # x >= 0
        out = 1.0 - _erf_series(xp, xp.minimum(x, _ERF_T))
        big = x > _ERF_T
        if big.any():
            out[big] = _erfc_fraction(xp, x[big])
        return out

    def erfinv(y):
        shape, y = y.shape, y.reshape(-1)
        a = xp.abs(y.astype("float64"))
        inside = a < 1
        a_in = xp.where(inside, a, 0.0)
        w = -xp.log((1.0 - a_in) * (1.0 + a_in))
        central = w < 5.0
        wc, wt = w - 2.5, xp.sqrt(xp.where(central, 0.0, w)) - 3.0
        pc, pt = xp.zeros_like(w), xp.zeros_like(w)
        for c in _GILES_CENTRAL:
            pc = c + wc * pc
        for c in _GILES_TAIL:
            pt = c + wt * pt
        x = xp.where(central, pc, pt) * a_in
        for _ in range(4):
            slope = _TWO_OVER_SQRT_PI * xp.exp(-x * x)
            resid = xp.where(a_in > 0.5, (1.0 - a_in) - erfc_pos(x), erf(x) - a_in)
            x = x - resid / slope
        x = xp.where(inside, x, xp.where(a == 1, float("inf"), float("nan")))
        return xp.copysign(x, y).astype(y.dtype, copy=False).reshape(shape)
    return erfinv


def _vjp_erfinv(b, n, g):
    # d/dy erfinv(y) = sqrt(pi) / 2 * exp(erfinv(y)^2)
    x = b.value(n)
    k = b.const(_SQRT_PI / 2, n.dtype)
    return (b.op("mul", g, b.op("mul", k, b.op("exp", b.op("mul", x, x)))),)


elementwise("erfinv", 1, "float", "ft_erfinv{f}({0})", _erfinv, vjp=_vjp_erfinv,
            saves=("out",), c_helper=_ERFINV_C, unary_api=True, eager_kernel=True)


def _vjp_abs(b, n, g):
    # sign(0) = 0: abs has gradient 0 at 0, as in PyTorch
    return (b.op("mul", g, b.op("sign", b.value(arg(n)))),)


def _refuse_bool(kernel: str):
    """PyTorch has no bool kernel for these: NotImplementedError naming its CPU kernel."""
    def refuse(compute, _dtypes, _numbers=()):
        if compute is dt.bool_:
            return NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
        return None
    return refuse


elementwise("abs", 1, "same", "fabs{f}({0})", lambda xp: xp.abs, vjp=_vjp_abs, saves=(0,),
            fold_constant=fo.arith(abs), unary_api=True, refuse=_refuse_bool("abs_cpu"))


def _sign(xp):
    # PyTorch's sign(NaN) is 0 (numpy's is NaN)
    def sign(x):
        if x.dtype.kind == "b":
            return x.copy()
        s = xp.sign(x)
        return s if x.dtype.kind in "iu" else xp.where(s != s, s.dtype.type(0), s)
    return sign


elementwise("sign", 1, "same", "FT_SIGN({0})", _sign, vjp=vjp_zero, fold_constant=fo.arith(fo.sign),
            unary_api=True, native_half=True)


def _vjp_relu(b, n, g):
    # PyTorch's threshold_backward: 0 where out <= 0 (at 0 too; maximum(x, 0) would pass half),
    # else g, so a NaN passes its gradient
    return (b.op("where", b.op("le", b.value(n), b.zero(n.dtype)), b.zero(g.dtype), g),)


elementwise("relu", 1, "same", "FT_RELU({0})",
            lambda xp: lambda x: xp.maximum(x, 0).astype(x.dtype, copy=False),
            vjp=_vjp_relu, saves=("out",), fold_constant=fo.arith(fo.relu), unary_api=True,
            native_half=True, refuse=lambda compute, _dtypes, _numbers=(): (
                "Boolean inputs not supported for relu" if compute is dt.bool_ else None))

elementwise("logical_not", 1, "same", "(!{0})", lambda xp: xp.logical_not, vjp=vjp_zero,
            dtype=_bool_dtype, fold_constant=lambda n, v, src: not v[0], zero_one=True, unary_api=True)


# ---------------------------------------------------------------- copies and casts

elementwise("copy", 1, None, "{0}", lambda xp: lambda x: xp.array(x, copy=True, order="C"),
            vjp=vjp_identity, zero_one=True, grad_name="CloneBackward0", fusible=False,
            distinct=True, clone=True, native_half=True,
            doc="a fresh, contiguous buffer with the same values (clone, contiguous)")


def _vjp_cast(b, n, g):
    src = arg(n).dtype
    return (b.op("cast", g, dtype=src) if src.is_floating_point else None,)


def _cast(xp):
    def cast(x, dtype):
        if x.dtype.kind == "V" and dtype.category < 2:
            x = x.astype("float32")  # bfloat16 (ml_dtypes) to integers as float32 goes: exact
        if dtype.category == 1 and dtype.itemsize < 8 and x.dtype.kind == "f":
            # floats reach narrow integers through int64: converting a value out of the
            # target's range directly is undefined in C and CUDA (cupy gives uint8 0 for -3.2
            # on an H100); PyTorch on the CPU truncates, then wraps: -3.2 -> 253
            x = x.astype("int64")
        return x.astype(dtype.name)
    return cast


elementwise("cast", 1, None, "(({t}){0})", _cast,
            vjp=_vjp_cast, dtype=_attr_dtype, attrs=("dtype",), fold_constant=fo.cast, zero_one=True,
            grad_name="ToCopyBackward0", simplify=rw.same_dtype, native_half=True, may_view=True,
            doc="convert to attrs['dtype'] ('{t}' is the C type of the result)")


def _clamp(xp):
    def clamp(x, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if min is not None:
            x = xp.maximum(x, min)
        if max is not None:
            x = xp.minimum(x, max)
        return x
    return clamp


def _vjp_clamp(b, n, g):
    # the gradient passes where min <= x <= max (PyTorch's clamp)
    x = b.value(arg(n))
    lo, hi = n.attrs.get("min"), n.attrs.get("max")
    keep = None
    for cmp, bound in (("ge", lo), ("le", hi)):
        if bound is not None:
            c = b.op(cmp, x, b.const(bound, n.dtype))
            keep = c if keep is None else b.op("bitwise_and", keep, c)
    return (b.where0(keep, g),)


def _clamp_bounds(n) -> dict:
    lo, hi = n.attrs.get("min"), n.attrs.get("max")
    return {"min": -math.inf if lo is None else lo, "max": math.inf if hi is None else hi}


elementwise("clamp", 1, "same", "FT_CLAMP({0}, {min}, {max})", _clamp, vjp=_vjp_clamp,
            saves=(0,), attrs=("min", "max"), grad_name="ClampBackward1",
            c_literals=_clamp_bounds,
            doc="min(max(x, min), max) with either bound optional; the gradient passes where "
                "min <= x <= max, as PyTorch's clamp does")


# ---------------------------------------------------------------- binary arithmetic

def _vjp_add(b, n, g):
    return (b.sum_to(g, arg(n, 0).shape), b.sum_to(g, arg(n, 1).shape))


elementwise("add", 2, "same", "({0} + {1})", lambda xp: xp.add, vjp=_vjp_add,
            fold_constant=fo.arith(lambda a, b: a + b), simplify=rw.negative_zero_either)


def _vjp_sub(b, n, g):
    return (b.sum_to(g, arg(n, 0).shape), b.sum_to(b.op("neg", g), arg(n, 1).shape))


def _refuse_sub(compute, dtypes, _numbers=()):
    if compute is dt.bool_:
        return ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead.")
    if dt.bool_ in dtypes:
        return ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return None


elementwise("sub", 2, "same", "({0} - {1})", lambda xp: xp.subtract, vjp=_vjp_sub,
            fold_constant=fo.arith(lambda a, b: a - b), refuse=_refuse_sub,
            simplify=rw.positive_zero_right)


def _vjp_mul(b, n, g):
    x, y = arg(n, 0), arg(n, 1)
    return (b.sum_to(b.op("mul", g, b.value(y)), x.shape),
            b.sum_to(b.op("mul", g, b.value(x)), y.shape))


elementwise("mul", 2, "same", "({0} * {1})", lambda xp: xp.multiply, vjp=_vjp_mul, saves=(0, 1),
            saves_for=((1,), (0,)), fold_constant=fo.arith(lambda a, b: a * b), simplify=rw.unit_either,
            half_scalar_at_float32=True)


def _vjp_div(b, n, g):
    x, y = arg(n, 0), arg(n, 1)
    yv = b.value(y)
    gx = b.op("div", g, yv)
    gy = b.op("neg", b.op("div", b.op("mul", g, b.value(x)), b.op("mul", yv, yv)))
    return (b.sum_to(gx, x.shape), b.sum_to(gy, y.shape))


elementwise("div", 2, "float", "({0} / {1})", lambda xp: xp.true_divide, vjp=_vjp_div,
            saves=(0, 1), saves_for=((1,), (0, 1)), fold_constant=fo.arith(fo.fdiv, ints=False),
            simplify=rw.unit_right_float, half_scalar_at_float32=True)


_NEG_POW = "Integers to negative integer powers are not allowed."


def _integral(v) -> bool:
    kind = v.dtype.kind if hasattr(v, "dtype") else ("i" if isinstance(v, int) else "f")
    return kind in "iu"


def _int_pow(xp, a, b):
    """A tensor exponent: PyTorch's integer power, 1 ** -n == 1, (-1) ** -n == +-1, else 0."""
    neg = b < 0
    out = xp.power(a, xp.where(neg, 0, b))
    small = xp.where(a == -1, xp.where(b % 2 == 0, 1, -1), xp.where(a == 1, 1, 0))
    return xp.where(neg, small, out).astype(out.dtype, copy=False)


def _pow(xp):
    def power(a, b):
        if _is_numpy(xp):
            try:
                return xp.power(a, b)
            except ValueError as e:  # integers to negative integer powers
                if not isinstance(b, xp.ndarray):
                    raise RuntimeError(_NEG_POW) from e
            return _int_pow(xp, a, b)
        # cupy gives garbage instead of raising: check integer exponents here
        if _integral(a) and _integral(b):
            if not hasattr(b, "dtype"):
                if b < 0:
                    raise RuntimeError(_NEG_POW)
                return xp.power(a, b)
            return _int_pow(xp, a, b)
        return xp.power(a, b)
    return power


def _vjp_pow(b, n, g):
    # d/dx = e * x^(e-1), 0 where e == 0; d/de = x^e * log(x), 0 where x == 0 and e >= 0
    x, e = arg(n, 0), arg(n, 1)
    if e.op == "constant" and isinstance(e.attrs.get("value"), (int, float)):
        return (_vjp_pow_scalar(b, n, g, e.attrs["value"]), None)
    xv, ev, zero = b.value(x), b.value(e), b.zero(n.dtype)
    dx = b.op("mul", ev, b.op("pow", xv, b.op("sub", ev, b.const(1.0, n.dtype))))
    dx = b.op("where", b.op("eq", ev, zero), zero, dx)
    gx = b.sum_to(b.op("mul", g, dx), x.shape)
    if not e.inputs and e.op == "constant":
        return (gx, None)
    de = b.op("mul", b.value(n), b.op("log", xv))
    de = b.op("where", b.op("bitwise_and", b.op("eq", xv, zero), b.op("ge", ev, zero)),
              zero, de)
    return (gx, b.sum_to(b.op("mul", g, de), e.shape))


def _vjp_pow_scalar(b, n, g, e):
    """x ** c for a constant c: the common case (x ** 2) without a general pow in backward."""
    x = arg(n, 0)
    if e == 0:
        return b.zeros(x.shape, x.dtype)
    if e == 1:
        return b.sum_to(g, x.shape)
    xv = b.value(x)
    local = xv if e == 2 else b.op("pow", xv, b.const(e - 1, n.dtype))
    return b.sum_to(b.op("mul", g, b.op("mul", b.const(e, n.dtype), local)), x.shape)


def _pow_grad_name(n) -> str:
    base, exp = n.inputs  # PyTorch's overloads: tensor ** scalar, tensor ** tensor, scalar ** t
    return "PowBackward0" if exp.op == "constant" else (
        "PowBackward2" if base.op == "constant" else "PowBackward1")


def _refuse_bool_pow(compute, _dtypes, numbers=()):
    # ATen has pow(bool tensor, Scalar) (b ** True is bool) but no bool kernel for a tensor
    # exponent, a scalar base included (True ** b becomes a tensor there)
    if compute is dt.bool_ and 1 not in numbers:
        return NotImplementedError('"pow" not implemented for \'Bool\'')
    return None


elementwise("pow", 2, "same", "pow{f}({0}, {1})", _pow, vjp=_vjp_pow, saves=(0, 1, "out"),
            refuse=_refuse_bool_pow, fold_constant=fo.int_pow, simd="f", grad_name=_pow_grad_name,
            simplify=rw.small_power,
            eager_kernel=True, saved_names=("self", "exponent"), saved_scalars=(0, 1))


def _vjp_extreme(cmp):
    def rule(b, n, g):
        # PyTorch's maximum/minimum: ties split the gradient in half, the losing side gets 0, and
        # a NaN (no tie, no loser) passes the whole gradient to both sides
        x, y = arg(n, 0), arg(n, 1)
        xv, yv = b.value(x), b.value(y)
        half, zero = b.op("mul", g, b.const(0.5, n.dtype)), b.zero(n.dtype)
        tie = b.op("eq", xv, yv)
        gx = b.op("where", tie, half, b.op("where", b.op(cmp, yv, xv), zero, g))
        gy = b.op("where", tie, half, b.op("where", b.op(cmp, xv, yv), zero, g))
        return (b.sum_to(gx, x.shape), b.sum_to(gy, y.shape))
    return rule


elementwise("maximum", 2, "same", "FT_MAX({0}, {1})", lambda xp: xp.maximum,
            vjp=_vjp_extreme("gt"), saves=(0, 1), fold_constant=fo.extreme(max), zero_one=True)
elementwise("minimum", 2, "same", "FT_MIN({0}, {1})", lambda xp: xp.minimum,
            vjp=_vjp_extreme("lt"), saves=(0, 1), fold_constant=fo.extreme(min), zero_one=True)


# ---------------------------------------------------------------- comparisons and bitwise ops

for _name, _c, _ufunc, _py in [
        ("eq", "==", "equal", lambda a, b: a == b), ("ne", "!=", "not_equal", lambda a, b: a != b),
        ("lt", "<", "less", lambda a, b: a < b), ("le", "<=", "less_equal", lambda a, b: a <= b),
        ("gt", ">", "greater", lambda a, b: a > b),
        ("ge", ">=", "greater_equal", lambda a, b: a >= b)]:
    elementwise(_name, 2, "compare", f"({{0}} {_c} {{1}})",
                (lambda u: lambda xp: getattr(xp, u))(_ufunc), vjp=vjp_zero,
                fold_constant=fo.compare(_py))

for _name, _c, _py in [("bitwise_and", "&", lambda a, b: a & b),
                       ("bitwise_or", "|", lambda a, b: a | b),
                       ("bitwise_xor", "^", lambda a, b: a ^ b)]:
    elementwise(_name, 2, "integral", f"({{0}} {_c} {{1}})",
                (lambda u: lambda xp: getattr(xp, u))(_name), vjp=vjp_zero,
                fold_constant=fo.bitwise(_py), zero_one=True)

# integers only: the tracer takes bool to logical_not (C's ~ of a bool is not its negation)
# (and kernels compute floats and bools: never fused, as the shifts)
elementwise("bitwise_not", 1, "integral", "(~{0})", lambda xp: xp.invert, vjp=vjp_zero,
            fold_constant=fo.bitwise(lambda a: ~a), fusible=False)


# ---------------------------------------------------------------- selection

def _vjp_where(b, n, g):
    c = b.value(arg(n, 0))
    zero = b.zero(n.dtype)
    return (None, b.sum_to(b.op("where", c, g, zero), arg(n, 1).shape),
            b.sum_to(b.op("where", c, zero, g), arg(n, 2).shape))


elementwise("where", 3, "same", "({0} ? {1} : {2})", lambda xp: xp.where, vjp=_vjp_where,
            saves=(0,), dtype=_where_dtype, fold_constant=lambda n, v, src: v[1] if v[0] else v[2],
            zero_one=True, mask=True, native_half=True, cheaper=rw.mask_before_pool_grad,
            saved_names=("condition", "self", "other"),
            doc="cond ? a : b; the tracer promotes a and b only")


# ---------------------------------------------------------------- more math (issue 11)
#
# Each added as one entry, as above. Derivatives follow PyTorch's formulas (their
# derivatives.yaml): they are the textbook ones, evaluated at the saved input or output.

def _unary_float(name: str, ufunc: str, vjp, saves, c_name: str | None = None):
    # (numpy evaluates these one element at a time, 5-25 ns each on a Xeon; as a kernel
    # libmvec's vector versions take 1-3)
    elementwise(name, 1, "float", f"{c_name or name}{{f}}({{0}})",
                (lambda u: lambda xp: getattr(xp, u))(ufunc), vjp=vjp, saves=saves, simd="fd",
                unary_api=True, eager_kernel=True)


def _vjp_tan(b, n, g):  # 1 + tan^2
    y = b.value(n)
    return (b.op("mul", g, b.op("add", b.const(1.0, n.dtype), b.op("mul", y, y))),)


def _one_minus_square(b, n):
    x = b.value(arg(n))
    return b.op("sub", b.const(1.0, n.dtype), b.op("mul", x, x))


def _vjp_asin(b, n, g):  # 1 / sqrt(1 - x^2)
    return (b.op("div", g, b.op("sqrt", _one_minus_square(b, n))),)


def _vjp_acos(b, n, g):  # -1 / sqrt(1 - x^2)
    return (b.op("neg", b.op("div", g, b.op("sqrt", _one_minus_square(b, n)))),)


def _vjp_atan(b, n, g):  # 1 / (1 + x^2)
    x = b.value(arg(n))
    return (b.op("div", g, b.op("add", b.const(1.0, n.dtype), b.op("mul", x, x))),)


def _vjp_sinh(b, n, g):
    return (b.op("mul", g, b.op("cosh", b.value(arg(n)))),)


def _vjp_cosh(b, n, g):
    return (b.op("mul", g, b.op("sinh", b.value(arg(n)))),)


def _vjp_asinh(b, n, g):  # 1 / sqrt(x^2 + 1)
    x = b.value(arg(n))
    return (b.op("div", g, b.op("sqrt", b.op("add", b.op("mul", x, x),
                                              b.const(1.0, n.dtype)))),)


def _vjp_acosh(b, n, g):  # 1 / sqrt(x^2 - 1)
    x = b.value(arg(n))
    return (b.op("div", g, b.op("sqrt", b.op("sub", b.op("mul", x, x),
                                              b.const(1.0, n.dtype)))),)


def _vjp_atanh(b, n, g):  # 1 / (1 - x^2)
    return (b.op("div", g, _one_minus_square(b, n)),)


def _vjp_log10(b, n, g):  # 1 / (x ln 10)
    return (b.op("div", g, b.op("mul", b.value(arg(n)), b.const(2.302585092994046, n.dtype))),)


def _vjp_exp2(b, n, g):  # 2^x ln 2
    return (b.op("mul", g, b.op("mul", b.value(n), b.const(0.6931471805599453, n.dtype))),)


_unary_float("tan", "tan", _vjp_tan, ("out",))
_unary_float("asin", "arcsin", _vjp_asin, (0,))
_unary_float("acos", "arccos", _vjp_acos, (0,))
_unary_float("atan", "arctan", _vjp_atan, (0,))
_unary_float("sinh", "sinh", _vjp_sinh, (0,))
_unary_float("cosh", "cosh", _vjp_cosh, (0,))
_unary_float("asinh", "arcsinh", _vjp_asinh, (0,))
_unary_float("acosh", "arccosh", _vjp_acosh, (0,))
_unary_float("atanh", "arctanh", _vjp_atanh, (0,))
_unary_float("log10", "log10", _vjp_log10, (0,))
_unary_float("exp2", "exp2", _vjp_exp2, ("out",))


def _rounding(ufunc: str):
    # integers are already whole: a copy (numpy's floor of an int64 array would be float64);
    # bfloat16 (ml_dtypes, kind "V") rounds as the floats do
    def make(xp):
        f = getattr(xp, ufunc)
        return lambda x: x.copy() if x.dtype.kind in "biu" else f(x)
    return make


# Rounding keeps the dtype (integers pass through) and has gradient zero, as in PyTorch.
# `round` is half to even (nearbyint in the default rounding mode), as torch.round and rint.
for _name, _ufunc, _c in [("floor", "floor", "floor"), ("ceil", "ceil", "ceil"),
                          ("trunc", "trunc", "trunc"), ("round", "rint", "nearbyint")]:
    elementwise(_name, 1, "same", f"{_c}{{f}}({{0}})", _rounding(_ufunc), vjp=vjp_zero,
                native_half=True, refuse=_refuse_bool(f"{_name}_vml_cpu"),
                unary_api=_name != "round")  # (torch.round takes `decimals`: functional.py)


def _vjp_atan2(b, n, g):  # d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
    # PyTorch masks the reciprocal where x^2 + y^2 is 0: the gradient at (0, 0) is 0, not 0/0
    y, x = arg(n, 0), arg(n, 1)
    yv, xv = b.value(y), b.value(x)
    r2 = b.op("add", b.op("mul", xv, xv), b.op("mul", yv, yv))
    at0 = b.op("eq", r2, b.zero(n.dtype))
    recip = b.op("where", at0, b.zero(n.dtype),
                 b.op("div", b.const(1.0, n.dtype), b.op("where", at0, b.const(1.0, n.dtype), r2)))
    return (b.sum_to(b.op("mul", g, b.op("mul", xv, recip)), y.shape),
            b.sum_to(b.op("neg", b.op("mul", g, b.op("mul", yv, recip))), x.shape))


elementwise("atan2", 2, "float", "atan2{f}({0}, {1})", lambda xp: xp.arctan2, vjp=_vjp_atan2,
            saves=(0, 1), simd="fd", eager_kernel=True)  # (numpy: ~20 ns an element)


def _vjp_hypot(b, n, g):  # d/da = a / out, d/db = b / out
    a, c = arg(n, 0), arg(n, 1)
    out = b.value(n)
    return (b.sum_to(b.op("mul", g, b.op("div", b.value(a), out)), a.shape),
            b.sum_to(b.op("mul", g, b.op("div", b.value(c), out)), c.shape))


def _refuse_integral(kernel: str):
    """PyTorch's hypot and logaddexp have float kernels only: integer (or bool) operands are an
    error, not a float result."""
    def refuse(_compute, dtypes, _numbers=()):
        if any(d.is_floating_point for d in dtypes):
            return None
        common = dt.result_type(list(dtypes), [], [])
        return NotImplementedError(f'"{kernel}" not implemented for '
                                   f'\'{dt.SCALAR_TYPE_NAMES[common.name]}\'')
    return refuse


elementwise("hypot", 2, "float", "hypot{f}({0}, {1})", lambda xp: xp.hypot, vjp=_vjp_hypot,
            saves=(0, 1, "out"), refuse=_refuse_integral("hypot_cpu"), simd="fd", eager_kernel=True)


def _vjp_logaddexp(b, n, g):
    # PyTorch's 1 / (1 + exp(b - a)), not exp(a - out): finite where a or b is infinite
    # (logaddexp(inf, -inf) gives d/da = 1), NaN only where both are the same infinity
    a, c = arg(n, 0), arg(n, 1)
    av, cv = b.value(a), b.value(c)
    one = b.const(1.0, n.dtype)

    def share(u, v):
        return b.op("div", g, b.op("add", one, b.op("exp", b.op("sub", v, u))))
    return b.sum_to(share(av, cv), a.shape), b.sum_to(share(cv, av), c.shape)


_LOGADDEXP_C = """/* log(exp(a) + exp(b)) without overflow: the larger plus log1p(exp(-|a - b|)) */
FT_FN double ft_logaddexp(double a, double b)
{
    if (a == b)  /* also +-inf == +-inf, where a - b would be NaN */
        return a + 0.6931471805599453;
    const double m = a > b ? a : b, d = a > b ? b - a : a - b;
    return d != d ? d : m + log1p(exp(d));
}
FT_FN float ft_logaddexpf(float a, float b)
{
    return (float)ft_logaddexp((double)a, (double)b);
}
"""
elementwise("logaddexp", 2, "float", "ft_logaddexp{f}({0}, {1})", lambda xp: xp.logaddexp,
            vjp=_vjp_logaddexp, saves=(0, 1), c_helper=_LOGADDEXP_C, eager_kernel=True,
            refuse=_refuse_integral("logaddexp_cpu"))


# Integer division family. PyTorch raises "ZeroDivisionError" (a RuntimeError) for an integer
# divisor of 0, where numpy returns 0 with a warning; floats follow IEEE (nan, inf).
def _int_checked(ufunc: str):
    def make(xp):
        f = getattr(xp, ufunc)

        def run(a, b):
            if _integral(a) and _integral(b) and bool((xp.asarray(b) == 0).any()):
                raise RuntimeError("ZeroDivisionError")
            return f(a, b)
        return run
    return make


def _vjp_divmod(rounding: str):
    # remainder: a - floor(a / b) * b; fmod: a - trunc(a / b) * b (PyTorch's derivatives, whose
    # floor is div(rounding_mode="floor"): floor_divide, exact where a / b rounds onto an integer)
    def rule(b, n, g):
        a, c = arg(n, 0), arg(n, 1)
        q = b.op("floor_divide", b.value(a), b.value(c)) if rounding == "floor" else \
            b.op(rounding, b.op("div", b.value(a), b.value(c)))
        return (b.sum_to(g, a.shape), b.sum_to(b.op("neg", b.op("mul", g, q)), c.shape))
    return rule


_REMAINDER_C = """/* Python's (and PyTorch's) remainder: the sign of the divisor */
FT_FN double ft_remainder(double a, double b)
{
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}
FT_FN float ft_remainderf(float a, float b)
{
    float r = fmodf(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}
"""
def _remainder(xp):
    # ATen's float remainder is fmod moved onto the divisor's sign where nonzero: a zero keeps
    # the dividend's sign (remainder(-2., 1.) is -0.0), where numpy's takes the divisor's
    checked = _int_checked("remainder")(xp)

    def run(a, b):
        if _integral(a) and _integral(b):
            return checked(a, b)
        r = xp.fmod(a, b)
        return xp.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)
    return run


elementwise("remainder", 2, "same", "ft_remainder{f}({0}, {1})", _remainder,
            vjp=_vjp_divmod("floor"), saves=(0, 1), c_helper=_REMAINDER_C,
            refuse=_refuse_bool("remainder_cpu"), eager_kernel=True)
elementwise("fmod", 2, "same", "fmod{f}({0}, {1})", _int_checked("fmod"),
            vjp=_vjp_divmod("trunc"), saves=(0, 1), refuse=_refuse_bool("fmod_cpu"))

_FLOOR_DIVIDE_C = """/* floor(a / b) as numpy and PyTorch compute it for floats: from fmod, so the result is
 * exact where a / b would round across an integer */
FT_FN double ft_floor_divide(double a, double b)
{
    if (b == 0)
        return a / b;
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0)))
        div -= 1.0;
    if (div == 0)
        return copysign(0.0, a / b);
    double f = floor(div);
    return div - f > 0.5 ? f + 1.0 : f;
}
FT_FN float ft_floor_dividef(float a, float b)
{
    return (float)ft_floor_divide((double)a, (double)b);
}
"""


def _floor_divide(xp):
    checked = _int_checked("floor_divide")(xp)

    def run(a, b):
        dtype = xp.result_type(a, b)
        if dtype.itemsize != 2 or dtype.kind not in "fV":  # float16, ml_dtypes' bfloat16 ("V")
            return checked(a, b)
        # PyTorch's CPU kernel runs ft_floor_divide's steps in float16/bfloat16 itself, each
        # rounded (c10::div_floor_floating on Half): a - mod rounds, so the quotient can be one
        # off the floor of the exact a / b, which numpy's half loop (one rounding) computes
        a, b = xp.asarray(a, dtype=dtype), xp.asarray(b, dtype=dtype)
        one, half, zero = (xp.asarray(v, dtype=dtype) for v in (1, 0.5, 0))
        mod = xp.fmod(a, b)
        div = (a - mod) / b
        div = xp.where((mod != zero) & ((b < zero) != (mod < zero)), div - one, div)
        floor = xp.floor(div)
        floor = xp.where(div - floor > half, floor + one, floor)
        floor = xp.where(div == zero, xp.copysign(zero, a / b), floor)
        return xp.where(b == zero, a / b, floor)
    return run


elementwise("floor_divide", 2, "same", "ft_floor_divide{f}({0}, {1})", _floor_divide,
            vjp=vjp_zero, c_helper=_FLOOR_DIVIDE_C, refuse=_refuse_bool("div_floor_cpu"),
            eager_kernel=True, native_half=True)

for _name, _c, _ufunc in [("bitwise_left_shift", "<<", "left_shift"),
                          ("bitwise_right_shift", ">>", "right_shift")]:
    # integers only (bool shifts are an error in PyTorch), and kernels compute floats and
    # bools: never fused
    elementwise(_name, 2, "integral", f"({{0}} {_c} {{1}})",
                (lambda u: lambda xp: getattr(xp, u))(_ufunc), vjp=vjp_zero, fusible=False,
                refuse=_refuse_bool(_ufunc[0] + "shift_cpu"))
