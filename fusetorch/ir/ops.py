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

from dataclasses import dataclass, field
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
    vjp: Optional[Callable] = None  # (node, cotangent, emit) -> input cotangents (autograd issue)
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


def _where_dtype(dtypes, a):
    if dtypes[0] is not dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {dtypes[0].name.capitalize()}")
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
            adv_shape = s if adv_shape is None else broadcast_many([adv_shape, s])
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


def _scatter_add_shape(shapes, _a):
    return shapes[0]


def _matmul_shape(shapes, _a):
    return matmul_shape(shapes[0], shapes[1])


def _matmul_dtype(dtypes, a):
    if dtypes[0] is not dtypes[1]:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{dtypes[0].name} != {dtypes[1].name}")
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
_UNARY = [
    ("neg", "same", "(-{0})"),
    ("exp", "float", "exp{f}({0})"),
    ("log", "float", "log{f}({0})"),
    ("sqrt", "float", "sqrt{f}({0})"),
    ("sin", "float", "sin{f}({0})"),
    ("cos", "float", "cos{f}({0})"),
    ("tanh", "float", "tanh{f}({0})"),
    ("sigmoid", "float", "(1 / (1 + exp{f}(-{0})))"),
    ("abs", "same", "fabs{f}({0})"),
    ("sign", "same", "(({0} > 0) - ({0} < 0))"),
    ("relu", "same", "({0} > 0 ? {0} : 0)"),
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
     c_expr="clamp({0}, {min}, {max})",
     doc="min(max(x, min), max) with either bound optional; the gradient passes where "
         "min <= x <= max, as PyTorch's clamp does")

# Binary elementwise (inputs broadcast).
_BINARY = [
    ("add", "same", "({0} + {1})"),
    ("sub", "same", "({0} - {1})"),
    ("mul", "same", "({0} * {1})"),
    ("div", "float", "({0} / {1})"),
    ("pow", "same", "pow{f}({0}, {1})"),
    ("maximum", "same", "({0} > {1} ? {0} : {1})"),
    ("minimum", "same", "({0} < {1} ? {0} : {1})"),
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

# Extern: library calls in compiled code.
_def("matmul", "extern", 2, _matmul_shape, _matmul_dtype,
     doc="batched matrix product of tensors with >= 2 dims, batch dims broadcast")


def get(name: str) -> OpDef:
    return OPS[name]
