"""THE primitive-op table: one entry per primitive, with every rule about it in one place.

An entry states its kind, how many inputs it takes, its shape rule, its dtype rule, how the tracer
promotes mixed inputs before it (`promote`), its scalar C expression (elementwise ops), and its VJP
rule (filled in by the autograd work). Everything users call is composed from these primitives.

IR elementwise nodes are monomorphic: the tracer inserts `cast` nodes so that all inputs of an
`add` have one dtype. `promote` tells the tracer which common dtype to cast to:
  'same'     the promoted type of the inputs (add, mul, maximum, where's branches)
  'float'    as 'same', but integers and bool compute in the default float type (exp, div)
  'compare'  compute in the promoted type, the output is bool (eq, lt)
  'integral' as 'same', but floating inputs are an error (bitwise ops)
  None       inputs are taken as they are (movement, reductions, casts)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from . import dtypes as dt
from .shapes import (broadcast_many, expand_shape, infer_reshape, matmul_shape, norm_dim,
                     numel, reduce_shape)


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str  # 'source' | 'elementwise' | 'reduce' | 'movement' | 'extern'
    nin: Optional[int]  # number of tensor inputs; None means variadic
    shape: Optional[Callable]  # (in_shapes, attrs) -> out shape; None: data-dependent
    dtype: Callable  # (in_dtypes, attrs) -> out dtype
    promote: Optional[str] = None
    c_expr: Optional[str] = None  # '{0}', '{1}': operands; '{f}': 'f' for float32, '' for double
    vjp: Optional[Callable] = None  # (builder, node, cotangent) -> one cotangent per input
    saves: tuple = ()  # forward values the VJP reads: input positions (ints or slices), 'out'
    doc: str = ""
    attrs: tuple = field(default_factory=tuple)  # names of the attributes the op carries


OPS: dict[str, OpDef] = {}


def _def(name: str, kind: str, nin, shape, dtype, **kw) -> None:
    OPS[name] = OpDef(name, kind, nin, shape, dtype, **kw)


# ---------------------------------------------------------------- shape and dtype rules

def _attr_shape(_shapes, a):
    return tuple(a["shape"])


def _attr_dtype(_dtypes, a):
    return a["dtype"]


def _broadcast(shapes, _a):
    return broadcast_many(shapes)


def _first_shape(shapes, _a):
    return shapes[0]


def _same_dtype(dtypes, _a):
    d0 = dtypes[0]
    for d in dtypes[1:]:
        if d is not d0:
            raise TypeError(f"IR elementwise inputs must share a dtype, got {list(dtypes)}")
    return d0


def _bool_dtype(dtypes, a):
    _same_dtype(dtypes, a)
    return dt.bool_


# PyTorch's C++ type names, as its matmul messages print them.
_CPP_NAME = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
             "int32": "int", "int64": "long int", "float16": "c10::Half", "float32": "float",
             "float64": "double"}


def _where_dtype(dtypes, a):
    if dtypes[0] is not dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {dt.SCALAR_TYPE_NAMES[dtypes[0].name]}")
    return _same_dtype(dtypes[1:], a)


def _int64_dtype(_dtypes, _a):
    return dt.int64


def _reduce_shape(shapes, a):
    return reduce_shape(shapes[0], a["dims"], a["keepdim"])


def _reshape_shape(shapes, a):
    return infer_reshape(a["shape"], numel(shapes[0]))


def _permute_shape(shapes, a):
    src, perm = shapes[0], tuple(a["perm"])
    if len(perm) != len(src):
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{len(src)} is not equal to len(dims) = {len(perm)}")
    norm = [norm_dim(p, len(src)) for p in perm]
    if sorted(norm) != list(range(len(src))):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return tuple(src[p] for p in norm)


def _expand_shape(shapes, a):
    return expand_shape(shapes[0], a["shape"])


def index_shape(shapes, a) -> tuple:
    """Shape of `x[spec]`. Spec items: ('int', i) drops a dim, ('slice', start, stop, step) keeps
    it, ('none',) inserts one, ('tensor', k) is advanced indexing by tensor input k. Tensor items
    broadcast together; their result dims sit where the first one was if they are adjacent, else
    in front (numpy's rule, which PyTorch shares once ints have been applied)."""
    src, spec = shapes[0], a["spec"]
    basic, adv_shape, adv_pos, adv_seen, gap = [], None, None, False, False
    dim = 0
    for item in spec:
        tag = item[0]
        if tag == "none":
            basic.append(1)
            gap = gap or adv_seen
            continue
        if tag == "tensor":
            s = shapes[1 + item[1]]
            try:
                adv_shape = s if adv_shape is None else broadcast_many([adv_shape, s])
            except RuntimeError:
                raise IndexError("shape mismatch: indexing tensors could not be broadcast "
                                 "together with shapes " + ", ".join(
                                     str(list(shapes[1 + it[1]])) for it in spec
                                     if it[0] == "tensor")) from None
            if adv_pos is None:
                adv_pos = len(basic)
            elif gap:
                adv_pos = 0
            adv_seen = True
        elif tag == "int":
            pass
        else:
            _, start, stop, step = item
            basic.append(max(0, -(-(stop - start) // step)))
            gap = gap or adv_seen
        dim += 1
    basic.extend(src[dim:])
    if adv_shape is None:
        return tuple(basic)
    if gap:
        adv_pos = 0
    return tuple(basic[:adv_pos]) + tuple(adv_shape) + tuple(basic[adv_pos:])


def _index_put_shape(shapes, _a):
    return shapes[0]


def _cat_shape(shapes, a):
    d = a["dim"]
    ref = shapes[0]
    total = 0
    for k, s in enumerate(shapes):
        if len(s) != len(ref):
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)}")
        for i, (x, y) in enumerate(zip(ref, s)):
            if i != d and x != y:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {x} but "
                    f"got size {y} for tensor number {k} in the list.")
        total += s[d]
    return ref[:d] + (total,) + ref[d + 1:]


def _gather_shape(shapes, a):
    src, idx, d = shapes[0], shapes[1], a["dim"]
    if len(src) != len(idx):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, (s, n) in enumerate(zip(src, idx)):
        if i != d and n > s:
            raise RuntimeError(
                f"Size does not match at dimension {i} expected index {list(idx)} to be no "
                f"larger than self {list(src)} apart from dimension {d}")
    return idx


def _scatter_add_shape(shapes, a):
    x, idx, src, d = shapes[0], shapes[1], shapes[2], a["dim"]
    for name, s in (("self", x), ("src", src)):
        if len(idx) != len(s):
            raise RuntimeError(
                f"Index tensor must have the same number of dimensions as {name} tensor")
    if any((i != d and n > x[i]) or n > src[i] for i, n in enumerate(idx)):
        raise RuntimeError(
            f"Expected index {list(idx)} to be no larger than self {list(x)} apart from "
            f"dimension {d} and to be no larger size than src {list(src)}")
    return x


def _window_out(size: int, k: int, stride: int, pad: int, dil: int) -> int:
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1


def unfold2d_shape(x: tuple, a: dict) -> tuple:
    if len(x) != 4:
        raise RuntimeError(f"Expected 4D (batch mode) tensor for input, but got: {list(x)}")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = a["kernel"], a["stride"], a["padding"], a["dilation"]
    oh = _window_out(x[2], kh, sh, ph, dh)
    ow = _window_out(x[3], kw, sw, pw, dw)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"Given input size: ({x[1]}x{x[2]}x{x[3]}). Calculated output size: "
            f"({x[1]}x{oh}x{ow}). Output size is too small")
    return (x[0], x[1], kh, kw, oh, ow)


def fold2d_shape(cols: tuple, a: dict) -> tuple:
    n, c, kh, kw, oh, ow = cols
    h, w = a["size"]
    want = unfold2d_shape((n, c, h, w), dict(a, pad_value=0))
    if tuple(cols) != want:
        raise RuntimeError(f"fold2d: windows {list(cols)} do not match size {[h, w]}")
    return (n, c, h, w)


def _matmul_shape(shapes, _a):
    return matmul_shape(shapes[0], shapes[1])


def _matmul_dtype(dtypes, a):
    if dtypes[0] is not dtypes[1]:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CPP_NAME[dtypes[0].name]} != {_CPP_NAME[dtypes[1].name]}")
    return dtypes[0]


# ---------------------------------------------------------------- the table

# Sources: no tensor inputs.
_def("input", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype"),
     doc="a graph input")
_def("constant", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype", "value", "digest"),
     doc="a value captured at trace time (a Python number, or an array identified by its digest)")
_def("full", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype", "value"),
     doc="a tensor filled with one value (zeros, ones, full, empty)")
_def("iota", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype", "start", "step"),
     doc="start + i * step for i in range(n) (arange)")
_def("random", "source", 0, _attr_shape, _attr_dtype,
     attrs=("shape", "dtype", "dist", "low", "high"),
     doc="draws from the global generator: dist 'uniform' [low, high), 'normal', 'randint'")

# Unary elementwise. c_expr: '{0}' is the operand, '{f}' the float32 suffix of libm names.
# FT_* are NaN-propagating helpers (as numpy and PyTorch propagate NaN through max, relu,
# clamp, sign) defined once in the kernel module's preamble (templates/c/module.c.j2).
_UNARY = [
    ("neg", "same", "(-{0})"),
    ("exp", "float", "exp{f}({0})"),
    ("log", "float", "log{f}({0})"),
    ("log1p", "float", "log1p{f}({0})"),
    ("expm1", "float", "expm1{f}({0})"),
    ("sqrt", "float", "sqrt{f}({0})"),
    ("sin", "float", "sin{f}({0})"),
    ("cos", "float", "cos{f}({0})"),
    ("tanh", "float", "tanh{f}({0})"),
    ("sigmoid", "float", "(1 / (1 + exp{f}(-{0})))"),
    ("erf", "float", "erf{f}({0})"),
    ("abs", "same", "fabs{f}({0})"),
    ("sign", "same", "FT_SIGN({0})"),
    ("relu", "same", "FT_RELU({0})"),
    ("logical_not", "same", "(!{0})"),
]
for _n, _p, _c in _UNARY:
    _def(_n, "elementwise", 1, _first_shape,
         _bool_dtype if _n == "logical_not" else _same_dtype, promote=_p, c_expr=_c)

_def("copy", "elementwise", 1, _first_shape, _same_dtype, c_expr="{0}",
     doc="a fresh, contiguous buffer with the same values (clone, contiguous)")
_def("cast", "elementwise", 1, _first_shape, _attr_dtype, attrs=("dtype",), c_expr="(({t}){0})",
     doc="convert to attrs['dtype'] ('{t}' is the C type of the result)")
_def("clamp", "elementwise", 1, _first_shape, _same_dtype, promote="same", attrs=("min", "max"),
     c_expr="FT_CLAMP({0}, {min}, {max})",
     doc="min(max(x, min), max) with either bound optional; the gradient passes where "
         "min <= x <= max, as PyTorch's clamp does")

# Binary elementwise (inputs broadcast).
_BINARY = [
    ("add", "same", "({0} + {1})"),
    ("sub", "same", "({0} - {1})"),
    ("mul", "same", "({0} * {1})"),
    ("div", "float", "({0} / {1})"),
    ("pow", "same", "pow{f}({0}, {1})"),
    ("maximum", "same", "FT_MAX({0}, {1})"),
    ("minimum", "same", "FT_MIN({0}, {1})"),
    ("eq", "compare", "({0} == {1})"),
    ("ne", "compare", "({0} != {1})"),
    ("lt", "compare", "({0} < {1})"),
    ("le", "compare", "({0} <= {1})"),
    ("gt", "compare", "({0} > {1})"),
    ("ge", "compare", "({0} >= {1})"),
    ("bitwise_and", "integral", "({0} & {1})"),
    ("bitwise_or", "integral", "({0} | {1})"),
    ("bitwise_xor", "integral", "({0} ^ {1})"),
]
for _n, _p, _c in _BINARY:
    _def(_n, "elementwise", 2, _broadcast, _bool_dtype if _p == "compare" else _same_dtype,
         promote=_p, c_expr=_c)

_def("where", "elementwise", 3, _broadcast, _where_dtype, promote="same",
     c_expr="({0} ? {1} : {2})", doc="cond ? a : b; the tracer promotes a and b only")

# Reductions over attrs['dims'] (sorted, non-negative).
for _n in ("sum", "prod", "max", "min"):
    _def(_n, "reduce", 1, _reduce_shape, _same_dtype, attrs=("dims", "keepdim"))
for _n in ("argmax", "argmin"):
    _def(_n, "reduce", 1, _reduce_shape, _int64_dtype, attrs=("dims", "keepdim"),
         doc="index of the first extreme value along one dim (dims has one entry)")

# Movement: views and data rearrangement.
_def("reshape", "movement", 1, _reshape_shape, _same_dtype, attrs=("shape",))
_def("permute", "movement", 1, _permute_shape, _same_dtype, attrs=("perm",))
_def("expand", "movement", 1, _expand_shape, _same_dtype, attrs=("shape",))
_def("index", "movement", None, index_shape, lambda d, a: d[0], attrs=("spec",),
     doc="x[spec] for ints, slices, None and int64 index tensors (inputs 1..)")
_def("index_put", "movement", None, _index_put_shape, lambda d, a: d[0],
     attrs=("spec", "accumulate"),
     doc="a copy of x with x[spec] = v (or += v when accumulate); inputs x, v, index tensors")
_def("cat", "movement", None, _cat_shape, _same_dtype, attrs=("dim",))
_def("gather", "movement", 2, _gather_shape, lambda d, a: d[0], attrs=("dim",))
_def("scatter_add", "movement", 3, _scatter_add_shape, lambda d, a: d[0], attrs=("dim",),
     doc="a copy of x with src added at index along dim; inputs x, index, src")
_def("nonzero", "movement", 1, None, _int64_dtype,
     doc="indices of the non-zero elements, shape [n, ndim]: data-dependent")

_def("unfold2d", "movement", 1, lambda s, a: unfold2d_shape(s[0], a), _same_dtype,
     attrs=("kernel", "stride", "padding", "dilation", "pad_value"),
     doc="sliding windows of x[N, C, H, W] as [N, C, kh, kw, OH, OW] (im2col without the "
         "copy); padding reads pad_value (0, or -inf for max pooling)")
_def("fold2d", "movement", 1, lambda s, a: fold2d_shape(s[0], a), _same_dtype,
     attrs=("size", "kernel", "stride", "padding", "dilation"),
     doc="the adjoint of unfold2d: windows [N, C, kh, kw, OH, OW] summed back into "
         "[N, C, *size] (col2im)")

# Custom autograd Functions: opaque to the compiler (a graph break), differentiated by the
# user's Python backward. `custom_vjp` reads its context from the `custom` node's saved value.
_def("custom", "extern", None, None, lambda d, a: a["dtype"], attrs=("fn", "positions", "dtype"),
     doc="out = fn.forward(ctx, *inputs): a user's autograd.Function")
_def("custom_vjp", "extern", 2, _attr_shape, _attr_dtype,
     attrs=("index", "positions", "shape", "dtype"),
     doc="the gradient for input `index` of a custom node, from (cotangent, context)")

# Between devices: a copy onto attrs['device'] from attrs['src'] (device names, 'cpu', 'cuda:0').
# Its own primitive so that `.to('cuda')` is differentiable (the cotangent goes back to `src`)
# and the interpreter knows where each value of a mixed graph lives.
_def("to_device", "extern", 1, _first_shape, _same_dtype, attrs=("device", "src"),
     doc="a copy of x on another device (Tensor.to, .cuda(), .cpu())")

# A check eager code makes by reading values (an index in range, a probability in [0, 1]), as a
# primitive so that a recorded graph, and so every compiled replay, makes it too. The output is
# the input itself (no copy); a value outside [lo, hi) ([lo, hi] when `closed`), other than
# `allow`, raises `error` (a builtin exception's name) with `message`, where `{value}` stands
# for the first bad value. NaN fails every bound, as PyTorch's `x >= 0 && x <= 1` does.
_def("check", "extern", 1, _first_shape, _same_dtype,
     attrs=("lo", "hi", "closed", "allow", "error", "message"),
     doc="x unchanged, or the error PyTorch raises for a value out of range")

# Extern: library calls in compiled code.
_def("matmul", "extern", 2, _matmul_shape, _matmul_dtype,
     doc="batched matrix product of tensors with >= 2 dims, batch dims broadcast")


def get(name: str) -> OpDef:
    return OPS[name]


# ---------------------------------------------------------------- VJP rules
#
# rule(b, node, g) -> one cotangent (or None: no gradient) per input of `node`. `b` is an
# ir.grad.Builder; `b.value(n)` is the forward value of node n (saved during the forward pass,
# so each rule's `saves` says which values it reads: input positions, and 'out' for the output).
# Conventions follow PyTorch at ties and edges; each rule says which one where it matters.

def _x(node, i=0):
    return node.inputs[i]


def _vjp_neg(b, n, g):
    return (b.op("neg", g),)


def _vjp_exp(b, n, g):
    return (b.op("mul", g, b.value(n)),)


def _vjp_log(b, n, g):
    return (b.op("div", g, b.value(_x(n))),)


def _vjp_log1p(b, n, g):
    return (b.op("div", g, b.op("add", b.value(_x(n)), b.const(1.0, n.dtype))),)


def _vjp_expm1(b, n, g):
    return (b.op("mul", g, b.op("add", b.value(n), b.const(1.0, n.dtype))),)


def _vjp_sqrt(b, n, g):
    # g / (2 sqrt(x)): inf at x = 0, as PyTorch gives
    two = b.const(2.0, n.dtype)
    return (b.op("div", g, b.op("mul", two, b.value(n))),)


def _vjp_sin(b, n, g):
    return (b.op("mul", g, b.op("cos", b.value(_x(n)))),)


def _vjp_cos(b, n, g):
    return (b.op("neg", b.op("mul", g, b.op("sin", b.value(_x(n))))),)


def _vjp_tanh(b, n, g):
    y = b.value(n)
    return (b.op("mul", g, b.op("sub", b.const(1.0, n.dtype), b.op("mul", y, y))),)


def _vjp_sigmoid(b, n, g):
    y = b.value(n)
    return (b.op("mul", g, b.op("mul", y, b.op("sub", b.const(1.0, n.dtype), y))),)


def _vjp_erf(b, n, g):
    # d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
    x = b.value(_x(n))
    k = b.const(1.1283791670955126, n.dtype)
    return (b.op("mul", g, b.op("mul", k, b.op("exp", b.op("neg", b.op("mul", x, x))))),)


def _vjp_abs(b, n, g):
    # sign(0) = 0: abs has gradient 0 at 0, as in PyTorch
    return (b.op("mul", g, b.op("sign", b.value(_x(n)))),)


def _vjp_relu(b, n, g):
    # relu passes 0 at 0 (PyTorch's convention; maximum(x, 0) would pass half)
    return (b.where0(b.op("gt", b.value(n), b.zero(n.dtype)), g),)


def _vjp_zero(b, n, g):
    return (None,) * len(n.inputs)


def _vjp_identity(b, n, g):
    return (g,)


def _vjp_to_device(b, n, g):
    return (b.op("to_device", g, device=n.attrs["src"], src=n.attrs["device"]),)


def _vjp_cast(b, n, g):
    src = _x(n).dtype
    return (b.op("cast", g, dtype=src) if src.is_floating_point else None,)


def _vjp_clamp(b, n, g):
    # the gradient passes where min <= x <= max (PyTorch's clamp)
    x = b.value(_x(n))
    lo, hi = n.attrs.get("min"), n.attrs.get("max")
    keep = None
    for cmp, bound in (("ge", lo), ("le", hi)):
        if bound is not None:
            c = b.op(cmp, x, b.const(bound, n.dtype))
            keep = c if keep is None else b.op("bitwise_and", keep, c)
    return (b.where0(keep, g),)


def _vjp_add(b, n, g):
    return (b.sum_to(g, _x(n, 0).shape), b.sum_to(g, _x(n, 1).shape))


def _vjp_sub(b, n, g):
    return (b.sum_to(g, _x(n, 0).shape), b.sum_to(b.op("neg", g), _x(n, 1).shape))


def _vjp_mul(b, n, g):
    x, y = _x(n, 0), _x(n, 1)
    return (b.sum_to(b.op("mul", g, b.value(y)), x.shape),
            b.sum_to(b.op("mul", g, b.value(x)), y.shape))


def _vjp_div(b, n, g):
    x, y = _x(n, 0), _x(n, 1)
    yv = b.value(y)
    gx = b.op("div", g, yv)
    gy = b.op("neg", b.op("div", b.op("mul", g, b.value(x)), b.op("mul", yv, yv)))
    return (b.sum_to(gx, x.shape), b.sum_to(gy, y.shape))


def _vjp_pow(b, n, g):
    # d/dx = e * x^(e-1), 0 where e == 0; d/de = x^e * log(x), 0 where x == 0 and e >= 0
    x, e = _x(n, 0), _x(n, 1)
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
    x = _x(n, 0)
    if e == 0:
        return b.zeros(x.shape, x.dtype)
    if e == 1:
        return b.sum_to(g, x.shape)
    xv = b.value(x)
    local = xv if e == 2 else b.op("pow", xv, b.const(e - 1, n.dtype))
    return b.sum_to(b.op("mul", g, b.op("mul", b.const(e, n.dtype), local)), x.shape)


def _vjp_extreme(cmp):
    def rule(b, n, g):
        # ties split the gradient in half (PyTorch's maximum/minimum)
        x, y = _x(n, 0), _x(n, 1)
        xv, yv = b.value(x), b.value(y)
        half = b.op("mul", g, b.const(0.5, n.dtype))
        tie = b.op("eq", xv, yv)
        gx = b.op("where", tie, half, b.where0(b.op(cmp, xv, yv), g))
        gy = b.op("where", tie, half, b.where0(b.op(cmp, yv, xv), g))
        return (b.sum_to(gx, x.shape), b.sum_to(gy, y.shape))
    return rule


def _vjp_where(b, n, g):
    c = b.value(_x(n, 0))
    zero = b.zero(n.dtype)
    return (None, b.sum_to(b.op("where", c, g, zero), _x(n, 1).shape),
            b.sum_to(b.op("where", c, zero, g), _x(n, 2).shape))


def _vjp_sum(b, n, g):
    return (b.expand_reduced(g, _x(n).shape, n.attrs["dims"], n.attrs["keepdim"]),)


def _vjp_max_min(b, n, g):
    # amax/amin and full max()/min(): ties share the gradient evenly (max(dim) is a gather
    # of argmax, so its gradient goes to the returned index instead)
    x = _x(n)
    dims, keep, shape = n.attrs["dims"], n.attrs["keepdim"], x.shape
    xv, out = b.value(x), b.expand_reduced(b.value(n), shape, dims, keep)
    hit = b.op("cast", b.op("eq", xv, out), dtype=n.dtype)
    count = b.op("sum", hit, dims=dims, keepdim=True)
    share = b.op("div", b.expand_reduced(g, shape, dims, keep),
                 b.expand_reduced(count, shape, dims, True))
    return (b.op("mul", share, hit),)


def _vjp_prod(b, n, g):
    # the product of the other elements, also where x has zeros (out / x would be nan there)
    x = _x(n)
    dims, keep, shape, dtype = n.attrs["dims"], n.attrs["keepdim"], x.shape, n.dtype
    xv, zero, one = b.value(x), b.zero(dtype), b.const(1.0, dtype)
    is0 = b.op("eq", xv, zero)
    nz = b.op("where", is0, one, xv)
    p_nz = b.expand_reduced(b.op("prod", nz, dims=dims, keepdim=True), shape, dims, True)
    zeros = b.expand_reduced(b.op("sum", b.op("cast", is0, dtype=dtype), dims=dims,
                                  keepdim=True), shape, dims, True)
    at_zero = b.op("where", b.op("eq", zeros, one), p_nz, zero)
    elsewhere = b.op("where", b.op("eq", zeros, zero), b.op("div", p_nz, nz), zero)
    local = b.op("where", is0, at_zero, elsewhere)
    return (b.op("mul", b.expand_reduced(g, shape, dims, keep), local),)


def _vjp_reshape(b, n, g):
    return (b.op("reshape", g, shape=_x(n).shape),)


def _vjp_permute(b, n, g):
    perm = n.attrs["perm"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return (b.op("permute", g, perm=tuple(inv)),)


def _vjp_expand(b, n, g):
    return (b.sum_to(g, _x(n).shape),)


def _vjp_index(b, n, g):
    x, spec = _x(n), n.attrs["spec"]
    idx = [b.value(i) for i in n.inputs[1:]]
    advanced = bool(idx)  # repeated indices must add up; basic indexing never repeats
    base = b.zeros(x.shape, x.dtype)
    return (b.op("index_put", base, g, *idx, spec=spec, accumulate=advanced),) + \
        (None,) * len(idx)


def _vjp_index_put(b, n, g):
    v = _x(n, 1)
    spec, acc = n.attrs["spec"], n.attrs["accumulate"]
    idx = [b.value(i) for i in n.inputs[2:]]
    gx = g if acc else b.op("index_put", g, b.zero(g.dtype), *idx, spec=spec, accumulate=False)
    gv = b.sum_to(b.op("index", g, *idx, spec=spec), v.shape)
    return (gx, gv) + (None,) * len(idx)


def _vjp_cat(b, n, g):
    d, out, start = n.attrs["dim"], [], 0
    for x in n.inputs:
        stop = start + x.shape[d]
        spec = tuple(("slice", 0, s, 1) for s in g.shape[:d]) + (("slice", start, stop, 1),)
        out.append(b.op("index", g, spec=spec))
        start = stop
    return tuple(out)


def _vjp_gather(b, n, g):
    x, idx = _x(n, 0), b.value(_x(n, 1))
    return (b.op("scatter_add", b.zeros(x.shape, x.dtype), idx, g, dim=n.attrs["dim"]), None)


def _vjp_scatter_add(b, n, g):
    idx = b.value(_x(n, 1))
    return (g, None, b.op("gather", g, idx, dim=n.attrs["dim"]))


def _transpose_last(b, x):
    perm = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return b.op("permute", x, perm=perm)


def _vjp_matmul(b, n, g):
    x, y = _x(n, 0), _x(n, 1)
    gx = b.op("matmul", g, _transpose_last(b, b.value(y)))
    gy = b.op("matmul", _transpose_last(b, b.value(x)), g)
    return (b.sum_to(gx, x.shape), b.sum_to(gy, y.shape))


def _vjp_custom(b, n, g):
    ctx = b.context(n)
    return tuple(
        b.op("custom_vjp", g, ctx, index=i, positions=n.attrs["positions"], shape=x.shape,
             dtype=x.dtype) if x.dtype.is_floating_point else None
        for i, x in enumerate(n.inputs))


def _vjp_unfold2d(b, n, g):
    a = n.attrs
    return (b.op("fold2d", g, size=_x(n).shape[2:], kernel=a["kernel"], stride=a["stride"],
                 padding=a["padding"], dilation=a["dilation"]),)


def _vjp_fold2d(b, n, g):
    a = n.attrs
    return (b.op("unfold2d", g, kernel=a["kernel"], stride=a["stride"], padding=a["padding"],
                 dilation=a["dilation"], pad_value=0.0),)


_VJP = {
    "neg": (_vjp_neg, ()), "exp": (_vjp_exp, ("out",)), "log": (_vjp_log, (0,)),
    "sqrt": (_vjp_sqrt, ("out",)), "sin": (_vjp_sin, (0,)), "cos": (_vjp_cos, (0,)),
    "tanh": (_vjp_tanh, ("out",)), "sigmoid": (_vjp_sigmoid, ("out",)),
    "erf": (_vjp_erf, (0,)), "log1p": (_vjp_log1p, (0,)), "expm1": (_vjp_expm1, ("out",)),
    "abs": (_vjp_abs, (0,)), "sign": (_vjp_zero, ()), "relu": (_vjp_relu, ("out",)),
    "logical_not": (_vjp_zero, ()), "copy": (_vjp_identity, ()), "cast": (_vjp_cast, ()),
    "to_device": (_vjp_to_device, ()),
    "clamp": (_vjp_clamp, (0,)),
    "add": (_vjp_add, ()), "sub": (_vjp_sub, ()), "mul": (_vjp_mul, (0, 1)),
    "div": (_vjp_div, (0, 1)), "pow": (_vjp_pow, (0, 1, "out")),
    "maximum": (_vjp_extreme("gt"), (0, 1)), "minimum": (_vjp_extreme("lt"), (0, 1)),
    "where": (_vjp_where, (0,)),
    "sum": (_vjp_sum, ()), "prod": (_vjp_prod, (0,)),
    "max": (_vjp_max_min, (0, "out")), "min": (_vjp_max_min, (0, "out")),
    "reshape": (_vjp_reshape, ()), "permute": (_vjp_permute, ()),
    "expand": (_vjp_expand, ()), "index": (_vjp_index, (slice(1, None),)),
    "index_put": (_vjp_index_put, (slice(2, None),)), "cat": (_vjp_cat, ()),
    "gather": (_vjp_gather, (1,)), "scatter_add": (_vjp_scatter_add, (1,)),
    "matmul": (_vjp_matmul, (0, 1)), "custom": (_vjp_custom, ()), "check": (_vjp_identity, ()),
    "unfold2d": (_vjp_unfold2d, ()), "fold2d": (_vjp_fold2d, ()),
}
for _n in ("eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor",
           "argmax", "argmin", "nonzero"):
    _VJP[_n] = (_vjp_zero, ())
for _n, (_rule, _saves) in _VJP.items():
    OPS[_n] = replace(OPS[_n], vjp=_rule, saves=_saves)
