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

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from . import dtypes as dt
from . import rewrites as rw
from .roles import ROLES, Role  # noqa: F401 (Role: asked through the op table's module too)
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
    doc: str = ""
    attrs: tuple = field(default_factory=tuple)  # names of the attributes the op carries
    roles: frozenset = frozenset()  # the Role facts about it
    eager: Optional[Callable] = None  # (array module) -> the eager implementation
    # (compute dtype, input dtypes, positions given as Python numbers) -> PyTorch's error or
    # None (a message, raised as RuntimeError, or the exception itself)
    refuse: Optional[Callable] = None
    reduction: Optional["Reduction"] = None  # how a reduce primitive folds values
    value_op: str = ""  # an index reduction: the reduction whose value it locates (max)
    fusible: bool = True  # False: not computed inside fused kernels (copy: a fresh buffer)
    compilable: bool = True  # False: a graph holding it is not compiled (opaque, impure,
    #                          data-dependent shape, or between devices)
    # --- autograd
    vjp: Optional[Callable] = None  # (builder, node, cotangent) -> one cotangent per input
    saves: tuple = ()  # forward values the VJP reads: input positions (ints or slices), 'out'
    # per input position, the part of `saves` that input's cotangent reads, so that eager
    # autograd saves only what the inputs needing grad will read (x @ w with w frozen keeps no
    # x), as PyTorch's generated autograd does; None: every input's cotangent reads `saves`
    saves_for: Optional[tuple] = None
    # PyTorch's grad_fn name, where not <Op>Backward0; or (node) -> name, where it depends on
    # the node (SumBackward0 for a full sum, SumBackward1 along dims)
    grad_name: Optional[str | Callable] = None
    # PyTorch's argument names, by input position, as its grad_fn shows what it saved
    # (`grad_fn._saved_<name>`; the output is `_saved_result`); None: self, other
    saved_names: Optional[tuple] = None
    # input positions PyTorch takes as a Scalar: a number given there is saved as that number
    # (PowBackward0's `_saved_exponent`), elsewhere as a 0-d tensor (MulBackward0's other)
    saved_scalars: tuple = ()
    # gradient accumulation (ir/grad.py): (builder, old, new) -> old + new as one node, where
    # new is a node of this op, or None to add them
    accumulate: Optional[Callable] = None
    # a view's inverse, for writes through views (tracer/views.py): (build, base, value,
    # attrs) -> base with the region this view selects replaced by value
    put_back: Optional[Callable] = None
    # --- kernels
    c_expr: Optional[str] = None  # '{0}', '{1}': operands; '{f}': 'f' for float32, '' for double
    simd: str = ""  # libm precisions ('f', 'd') with vector variants kernels may call
    c_helper: str = ""  # C source c_expr needs, emitted once per kernel module
    c_literals: Optional[Callable] = None  # (node) -> {key: value} c_expr reads as C literals
    # ops whose results one kernel of that template writes together, in its output order,
    # where their nodes read the same input with the same attributes (max pooling's values
    # and indices)
    kernel_outputs: tuple = ()
    # --- rewrites (ir/rewrites.py, ir/folding.py): (node, make_node) -> an equal node, or None
    # constant folding (ir/folding.py): (node, exact input values, input dtype) -> value or NO
    fold_constant: Optional[Callable] = None
    simplify: Optional[Callable] = None  # an exact algebraic identity (passes.simplify)
    cheaper: Optional[Callable] = None  # a cheaper equivalent (passes.rewrite_indexing)
    # (node, make) -> the node's value built of other primitives (fusible ones): a primitive
    # that exists for its VJP (softmax keeps only its output) is differentiated as itself and
    # then computed as this in compiled graphs (passes.decompose) and ONNX export
    composition: Optional[Callable] = None


@dataclass(frozen=True)
class Reduction:
    """What a reduce primitive computes, as kernels need it: values folded by `combine`
    ('add', 'mul', 'max', 'min') starting from `identity`; with `index`, the result is the
    position of the value kept (the first one, a NaN counting as the extreme), not the value.
    max, min and the index reductions propagate NaN, as numpy and PyTorch do."""
    combine: str
    identity: float
    index: bool = False

    @property
    def propagates_nan(self) -> bool:
        return self.combine in ("max", "min")


OPS: dict[str, OpDef] = {}


def _def(name: str, kind: str, nin, shape, dtype, **kw) -> None:
    """Declare primitive `name`: its rules and properties as keywords, its roles as flags
    (`clone=True`: Role.CLONE), gathered into `OpDef.roles`."""
    roles = frozenset(r for r in ROLES if kw.pop(r, False)) | kw.pop("roles", frozenset())
    OPS[name] = OpDef(name, kind, nin, shape, dtype, roles=roles, **kw)


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
             "float64": "double", "bfloat16": "c10::BFloat16"}


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


def _diagonal_length(n: int, m: int, offset: int) -> int:
    return max(0, min(n + min(offset, 0), m - max(offset, 0)))


def _diagonal_shape(shapes, a):
    s, d1, d2 = shapes[0], a["dim1"], a["dim2"]
    rest = tuple(x for i, x in enumerate(s) if i not in (d1, d2))
    return rest + (_diagonal_length(s[d1], s[d2], a["offset"]),)


def diagonal_steps(shape: tuple, a: dict) -> list:
    """diagonal(x) as movement steps of x [shape]: dims (dim1, dim2) moved last, flattened into
    one, and every (m + 1)-th element of that from the diagonal's first (m: dim2's size). The
    composition in compiled graphs, and (walked back) the write of a value onto a diagonal."""
    d1, d2, off = a["dim1"], a["dim2"], a["offset"]
    rest = [i for i in range(len(shape)) if i not in (d1, d2)]
    perm, outer = tuple(rest) + (d1, d2), tuple(shape[i] for i in rest)
    n, m = shape[d1], shape[d2]
    length = _diagonal_length(n, m, off)
    start = (off if off >= 0 else -off * m) if length else 0
    stop = start + (length - 1) * (m + 1) + 1 if length else 0
    steps = [] if perm == tuple(range(len(shape))) else [("permute", {"perm": perm})]
    steps.append(("reshape", {"shape": outer + (n * m,)}))
    spec = tuple(("slice", 0, k, 1) for k in outer) + (("slice", start, stop, m + 1),)
    return steps + [("index", {"spec": spec})]


def _unfold_shape(shapes, a):
    s, d, size, step = shapes[0], a["dim"], a["size"], a["step"]
    return s[:d] + ((s[d] - size) // step + 1,) + s[d + 1:] + (size,)


def unfold_parts(shape: tuple, a: dict, op) -> tuple:
    """(index attrs, window index [windows, size], the permute after the index) for
    unfold as movement steps: x[..., idx] gives [..., windows, size, rest...], whose size dim
    the permute moves last. `op(name, *inputs, **attrs)` builds."""
    d, size, step = a["dim"], a["size"], a["step"]
    windows = (shape[d] - size) // step + 1
    i64 = dt.int64
    starts = op("reshape", op("iota", shape=(windows,), dtype=i64, start=0, step=step),
                shape=(windows, 1))
    idx = op("add", starts, op("reshape", op("iota", shape=(size,), dtype=i64, start=0, step=1),
                               shape=(1, size)))
    spec = tuple(("slice", 0, k, 1) for k in shape[:d]) + (("tensor", 0),)
    nd = len(shape) + 1
    perm = tuple(i for i in range(nd) if i != d + 1) + (d + 1,)
    return {"spec": spec}, idx, perm


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
     distinct=True, doc="a graph input")
_def("constant", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype", "value", "digest"),
     filled=True,
     doc="a value captured at trace time (a Python number, or an array identified by its digest)")
_def("full", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype", "value"),
     filled=True, doc="a tensor filled with one value (zeros, ones, full, empty)")
_def("iota", "source", 0, _attr_shape, _attr_dtype, attrs=("shape", "dtype", "start", "step"),
     doc="start + i * step for i in range(n) (arange)")
_def("random", "source", 0, _attr_shape, _attr_dtype,
     attrs=("shape", "dtype", "dist", "low", "high"), distinct=True, compilable=False,
     doc="draws from the global generator: dist 'uniform' [low, high), 'normal', 'randint'")

# Reductions over attrs['dims'] (sorted, non-negative).
_INF = float("inf")
for _n, _r in (("sum", Reduction("add", 0.0)), ("prod", Reduction("mul", 1.0)),
               ("max", Reduction("max", -_INF)), ("min", Reduction("min", _INF))):
    _def(_n, "reduce", 1, _reduce_shape, _same_dtype, attrs=("dims", "keepdim"), reduction=_r)
for _n, _r, _v in (("argmax", Reduction("max", -_INF, index=True), "max"),
                   ("argmin", Reduction("min", _INF, index=True), "min")):
    _def(_n, "reduce", 1, _reduce_shape, _int64_dtype, attrs=("dims", "keepdim"), reduction=_r,
         value_op=_v,
         doc="index of the first extreme value along one dim (dims has one entry)")

# Movement: views and data rearrangement.
_def("reshape", "movement", 1, _reshape_shape, _same_dtype, attrs=("shape",), value_view=True,
     simplify=rw.to_shape, may_view=True)
_def("permute", "movement", 1, _permute_shape, _same_dtype, attrs=("perm",),
     simplify=rw.compose_perm, may_view=True)
_def("expand", "movement", 1, _expand_shape, _same_dtype, attrs=("shape",), value_view=True,
     simplify=rw.to_shape, may_view=True)
_def("index", "movement", None, index_shape, lambda d, a: d[0], attrs=("spec",), may_view=True,
     doc="x[spec] for ints, slices, None and int64 index tensors (inputs 1..)")
_def("diagonal", "movement", 1, _diagonal_shape, _same_dtype, attrs=("offset", "dim1", "dim2"),
     may_view=True, composition=lambda n, make: _diagonal_parts(n, make),
     doc="the diagonal `offset` of dims (dim1, dim2), as a new last dim (a view)")
_def("unfold", "movement", 1, _unfold_shape, _same_dtype, attrs=("dim", "size", "step"),
     may_view=True, composition=lambda n, make: _unfold_composed(n, make),
     doc="windows of `size` every `step` along `dim`, as a new last dim (Tensor.unfold: a view)")
_def("index_put", "movement", None, _index_put_shape, lambda d, a: d[0],
     attrs=("spec", "accumulate"), reuses_input0=True,
     doc="a copy of x with x[spec] = v (or += v when accumulate); inputs x, v, index tensors")
_def("cat", "movement", None, _cat_shape, _same_dtype, attrs=("dim",))
_def("gather", "movement", 2, _gather_shape, lambda d, a: d[0], attrs=("dim",),
     cheaper=rw.gather_at_extreme)
_def("scatter_add", "movement", 3, _scatter_add_shape, lambda d, a: d[0], attrs=("dim",),
     cheaper=rw.one_hot_scatter, reuses_input0=True,
     doc="a copy of x with src added at index along dim; inputs x, index, src")
_def("scatter_reduce", "movement", 3, _scatter_add_shape, lambda d, a: d[0],
     attrs=("dim", "reduce", "include_self"),
     doc="a copy of x with src folded in at index along dim by reduce ('prod', 'amax', "
         "'amin'); include_self=False starts each written position from src alone; inputs "
         "x, index, src (src shaped like index)")
_def("nonzero", "movement", 1, None, _int64_dtype, data_shape=True, compilable=False,
     doc="indices of the non-zero elements, shape [n, ndim]: data-dependent")

_def("unfold2d", "movement", 1, lambda s, a: unfold2d_shape(s[0], a), _same_dtype,
     attrs=("kernel", "stride", "padding", "dilation", "pad_value"), may_view=True,
     doc="sliding windows of x[N, C, H, W] as [N, C, kh, kw, OH, OW] (im2col without the "
         "copy); padding reads pad_value (0, or -inf for max pooling)")
_def("fold2d", "movement", 1, lambda s, a: fold2d_shape(s[0], a), _same_dtype,
     attrs=("size", "kernel", "stride", "padding", "dilation"), cheaper=rw.tiling_fold,
     own_kernel=True,
     doc="the adjoint of unfold2d: windows [N, C, kh, kw, OH, OW] summed back into "
         "[N, C, *size] (col2im)")

# Custom autograd Functions: opaque to the compiler (a graph break), differentiated by the
# user's Python backward. `custom_vjp` reads its context from the `custom` node's saved value.
_def("custom", "extern", None, None, lambda d, a: a["dtype"], attrs=("fn", "positions", "dtype"),
     distinct=True, compilable=False, grad_name=lambda n: n.attrs["fn"].__name__ + "Backward",
     user_forward=True, doc="out = fn.forward(ctx, *inputs): a user's autograd.Function")
_def("custom_vjp", "extern", 2, _attr_shape, _attr_dtype,
     attrs=("index", "positions", "shape", "dtype"), distinct=True, compilable=False,
     user_backward=True,
     doc="the gradient for input `index` of a custom node, from (cotangent, context)")

# Between devices: a copy onto attrs['device'] from attrs['src'] (device names, 'cpu', 'cuda:0').
# Its own primitive so that `.to('cuda')` is differentiable (the cotangent goes back to `src`)
# and the interpreter knows where each value of a mixed graph lives.
_def("to_device", "extern", 1, _first_shape, _same_dtype, attrs=("device", "src"),
     crosses_device=True, compilable=False, may_view=True,
     doc="a copy of x on another device (Tensor.to, .cuda(), .cpu())")

# A check eager code makes by reading values (an index in range, a probability in [0, 1]), as a
# primitive so that a recorded graph, and so every compiled replay, makes it too. The output is
# the input itself (no copy); a value outside [lo, hi) ([lo, hi] when `closed`), other than
# `allow`, raises `error` (a builtin exception's name) with `message`, where `{value}` stands
# for the first bad value. NaN fails every bound, as PyTorch's `x >= 0 && x <= 1` does.
# `detach()`: the same value with no gradient (JAX's stop_gradient). A primitive, so that a
# recording sees the detached tensor as a function of its source (a compiled replay reads the
# new argument, not the one traced) and differentiation stops there.
_def("detach", "extern", 1, _first_shape, _same_dtype, eager=lambda xp: lambda x: x,
     passthrough=True, may_view=True,
     doc="x itself, as a constant for differentiation (Tensor.detach)")
_def("check", "extern", 1, _first_shape, _same_dtype,
     attrs=("lo", "hi", "closed", "allow", "error", "message"), passthrough=True,
     may_view=True, doc="x unchanged, or the error PyTorch raises for a value out of range")

# Extern: library calls in compiled code.
_def("matmul", "extern", 2, _matmul_shape, _matmul_dtype, product=True,
     doc="batched matrix product of tensors with >= 2 dims, batch dims broadcast")


def get(name: str) -> OpDef:
    return OPS[name]


# ---------------------------------------------------------------- VJP rules
#
# rule(b, node, g) -> one cotangent (or None: no gradient) per input of `node`. `b` is an
# ir.grad.Builder; `b.value(n)` is the forward value of node n (saved during the forward pass,
# so each rule's `saves` says which values it reads: input positions, and 'out' for the output).
# Conventions follow PyTorch at ties and edges; each rule says which one where it matters.

def arg(node, i=0):
    """Input `i` of a node (VJP rules read their inputs' shapes through it)."""
    return node.inputs[i]


def vjp_zero(b, n, g):
    return (None,) * len(n.inputs)


def vjp_identity(b, n, g):
    return (g,)


def _vjp_to_device(b, n, g):
    return (b.op("to_device", g, device=n.attrs["src"], src=n.attrs["device"]),)


def _vjp_sum(b, n, g):
    return (b.expand_reduced(g, arg(n).shape, n.attrs["dims"], n.attrs["keepdim"]),)


def _vjp_max_min(b, n, g):
    # amax/amin and full max()/min(): ties share the gradient evenly (max(dim) is a gather
    # of argmax, so its gradient goes to the returned index instead)
    x = arg(n)
    dims, keep, shape = n.attrs["dims"], n.attrs["keepdim"], x.shape
    xv, out = b.value(x), b.expand_reduced(b.value(n), shape, dims, keep)
    hit = b.op("cast", b.op("eq", xv, out), dtype=n.dtype)
    count = b.op("sum", hit, dims=dims, keepdim=True)
    share = b.op("div", b.expand_reduced(g, shape, dims, keep),
                 b.expand_reduced(count, shape, dims, True))
    return (b.op("mul", share, hit),)


def _vjp_prod(b, n, g):
    # the product of the other elements, also where x has zeros (out / x would be nan there)
    x = arg(n)
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
    return (b.op("reshape", g, shape=arg(n).shape),)


def _vjp_permute(b, n, g):
    perm = n.attrs["perm"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return (b.op("permute", g, perm=tuple(inv)),)


def _vjp_expand(b, n, g):
    return (b.sum_to(g, arg(n).shape),)


def _vjp_index(b, n, g):
    x, spec = arg(n), n.attrs["spec"]
    idx = [b.value(i) for i in n.inputs[1:]]
    advanced = bool(idx)  # repeated indices must add up; basic indexing never repeats
    base = b.zeros(x.shape, x.dtype)
    return (b.op("index_put", base, g, *idx, spec=spec, accumulate=advanced),) + \
        (None,) * len(idx)


def _vjp_index_put(b, n, g):
    v = arg(n, 1)
    spec, acc = n.attrs["spec"], n.attrs["accumulate"]
    idx = [b.value(i) for i in n.inputs[2:]]
    gx = g if acc else b.op("index_put", g, b.zero(g.dtype), *idx, spec=spec, accumulate=False)
    gv = b.sum_to(b.op("index", g, *idx, spec=spec), v.shape)
    return (gx, gv) + (None,) * len(idx)


def _diagonal_parts(n, make):
    node = n.inputs[0]
    for op, attrs in diagonal_steps(node.shape, n.attrs):
        node = make(op, [node], attrs, n.meta)
    return node


def put_back_through(build, base, steps: list, value):
    """`base` with the region that the view `steps` ((op, attrs), base first) select replaced by
    `value`: the steps' own put_backs, last step first, each onto its step's input."""
    inner = [base]
    for op, attrs in steps[:-1]:
        inner.append(build(op, [inner[-1]], attrs))
    for (op, attrs), x in zip(reversed(steps), reversed(inner)):
        put = OPS[op].put_back
        if put is None:
            raise AssertionError(op)
        value = put(build, x, value, attrs)
    return value


def _put_diagonal(build, x, u, a):
    """x with its diagonal replaced by u."""
    return put_back_through(build, x, diagonal_steps(x.shape, a), u)


def _vjp_diagonal(b, n, g):
    x = arg(n)
    return (_put_diagonal(lambda op, ins, at: b.op(op, *ins, **at), b.zeros(x.shape, x.dtype),
                          g, n.attrs),)


def _unfold_composed(n, make):
    def op(name, *ins, **attrs):
        return make(name, list(ins), attrs, n.meta)
    x = n.inputs[0]
    index, idx, perm = unfold_parts(x.shape, n.attrs, op)
    return op("permute", op("index", x, idx, **index), perm=perm)


def _vjp_unfold(b, n, g):
    """The cotangent added back at each window's elements (overlapping windows, step < size,
    share them). (No put_back: its index tensors would be values of the forward graph that
    nothing saved, so a write through the view requiring grad is refused as as_strided's.)"""
    x = arg(n)
    index, idx, perm = unfold_parts(x.shape, n.attrs, b.op)
    inv = tuple(perm.index(i) for i in range(len(perm)))
    return (b.op("index_put", b.zeros(x.shape, x.dtype), b.op("permute", g, perm=inv), idx,
                 accumulate=True, **index),)


def _vjp_cat(b, n, g):
    d, out, start = n.attrs["dim"], [], 0
    for x in n.inputs:
        stop = start + x.shape[d]
        spec = tuple(("slice", 0, s, 1) for s in g.shape[:d]) + (("slice", start, stop, 1),)
        out.append(b.op("index", g, spec=spec))
        start = stop
    return tuple(out)


def _vjp_gather(b, n, g):
    x, idx = arg(n, 0), b.value(arg(n, 1))
    return (b.op("scatter_add", b.zeros(x.shape, x.dtype), idx, g, dim=n.attrs["dim"]), None)


def _vjp_scatter_add(b, n, g):
    idx = b.value(arg(n, 1))
    return (g, None, b.op("gather", g, idx, dim=n.attrs["dim"]))


def _vjp_scatter_reduce(b, n, g):
    # PyTorch's rules: ties of amax/amin share the gradient evenly; prod's gradient is the
    # product of the others, also where an element is zero
    x, idx, src, out = b.value(arg(n, 0)), b.value(arg(n, 1)), b.value(arg(n, 2)), b.value(n)
    d, red, dtype = n.attrs["dim"], n.attrs["reduce"], n.dtype
    one = b.const(1.0, dtype)
    if red == "prod":
        mx = b.op("where", b.op("eq", x, b.zero(dtype)), one, x)
        gx = b.op("div", b.op("mul", g, b.op("scatter_reduce", mx, idx, src, **n.attrs)), mx)
        src0 = b.op("eq", src, b.zero(dtype))
        zeros = b.op("gather", b.op("scatter_add", b.zeros(x.shape, dtype), idx,
                                    b.op("cast", src0, dtype=dtype), dim=d), idx, dim=d)
        single = b.op("where", src0, b.op("eq", zeros, one), src0)
        others = b.op("scatter_reduce", x, idx, b.op("where", single, one, src), **n.attrs)
        gs = b.op("where", single, b.op("gather", b.op("mul", g, others), idx, dim=d),
                  b.op("div", b.op("gather", b.op("mul", g, out), idx, dim=d),
                       b.op("where", src0, one, src)))
    else:
        self_is = b.op("cast", b.op("eq", x, out), dtype=dtype)
        src_is = b.op("cast", b.op("eq", src, b.op("gather", out, idx, dim=d)), dtype=dtype)
        share = b.op("div", g, b.op("scatter_add", self_is, idx, src_is, dim=d))
        gx = b.op("mul", self_is, share)
        gs = b.op("mul", src_is, b.op("gather", share, idx, dim=d))
    if not n.attrs["include_self"]:
        hits = b.op("scatter_add", b.zeros(x.shape, dtype), idx,
                    b.op("expand", one, shape=tuple(arg(n, 1).shape)), dim=d)
        gx = b.op("where", b.op("gt", hits, b.zero(dtype)), b.zero(dtype), gx)
    return (gx, None, gs)


def _transpose_last(b, x):
    perm = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return b.op("permute", x, perm=perm)


def _vjp_matmul(b, n, g):
    return matmul_grads(b, b.value(arg(n, 0)), b.value(arg(n, 1)), g)


def matmul_grads(b, x, y, g) -> tuple:
    """The cotangents of x and y in x @ y (backward-graph nodes): matmul's VJP, which the
    primitives computing a product (linear) share so that their gradients are its own."""
    gx = _product(b, g, _transpose_last(b, y), x.shape)
    if len(y.shape) == 2 and len(x.shape) > 2:
        # a matrix times a stack: its gradient is the sum over the stack, one product of all
        # the stack's rows (x^T @ g over [rows, K] and [rows, N]) instead of one per matrix
        rows = math.prod(x.shape[:-1])
        gy = b.op("matmul", _transpose_last(b, b.op("reshape", x, shape=(rows, x.shape[-1]))),
                  b.op("reshape", g, shape=(rows, g.shape[-1])))
    else:
        gy = _product(b, _transpose_last(b, x), g, y.shape)
    return (b.sum_to(gx, x.shape), b.sum_to(gy, y.shape))


def _product(b, p, q, operand: tuple):
    """p @ q, the gradient of a matmul operand of shape `operand`. Where that operand is
    broadcast over a batch (a convolution's weight: one product per image, then summed) and
    its matrices have fewer rows than columns, as (q^T @ p^T)^T: a BLAS runs products with few
    rows far below its speed (a weight gradient of 64 images, 16x100 @ 100x150 each: 0.82 ms;
    150x100 @ 100x16 each: 0.47 ms, OpenBLAS, one thread)."""
    batch = p.shape[:-2]
    summed = len(operand) < len(p.shape) or math.prod(operand[:-2]) < math.prod(batch)
    if summed and few_rows(p.shape[-2], q.shape[-1], batch):
        return _transpose_last(b, b.op("matmul", _transpose_last(b, q), _transpose_last(b, p)))
    return b.op("matmul", p, q)


def few_rows(rows: int, cols: int, batch: tuple) -> bool:
    """Whether a batch of products of rows x cols runs faster transposed (the rule of
    `_product`; `passes.transpose_matmul` keeps it)."""
    return math.prod(batch) > 1 and rows < cols and rows < 64


def _vjp_custom(b, n, g):
    ctx = b.context(n)
    return tuple(
        b.op("custom_vjp", g, ctx, index=i, positions=n.attrs["positions"], shape=x.shape,
             dtype=x.dtype) if x.dtype.is_floating_point else None
        for i, x in enumerate(n.inputs))


def _vjp_unfold2d(b, n, g):
    a = n.attrs
    return (b.op("fold2d", g, size=arg(n).shape[2:], kernel=a["kernel"], stride=a["stride"],
                 padding=a["padding"], dilation=a["dilation"]),)


def _vjp_fold2d(b, n, g):
    a = n.attrs
    return (b.op("unfold2d", g, kernel=a["kernel"], stride=a["stride"], padding=a["padding"],
                 dilation=a["dilation"], pad_value=0.0),)


_VJP = {
    "to_device": (_vjp_to_device, ()),
    "sum": (_vjp_sum, ()), "prod": (_vjp_prod, (0,)),
    "max": (_vjp_max_min, (0, "out")), "min": (_vjp_max_min, (0, "out")),
    "reshape": (_vjp_reshape, ()), "permute": (_vjp_permute, ()),
    "expand": (_vjp_expand, ()), "index": (_vjp_index, (slice(1, None),)),
    "diagonal": (_vjp_diagonal, ()), "unfold": (_vjp_unfold, ()),
    "index_put": (_vjp_index_put, (slice(2, None),)), "cat": (_vjp_cat, ()),
    "gather": (_vjp_gather, (1,)), "scatter_add": (_vjp_scatter_add, (1,)),
    "scatter_reduce": (_vjp_scatter_reduce, (0, 1, 2, "out")),
    "matmul": (_vjp_matmul, (0, 1), ((1,), (0,))), "custom": (_vjp_custom, ()), "check": (vjp_identity, ()),
    "detach": (vjp_zero, ()),
    "unfold2d": (_vjp_unfold2d, ()), "fold2d": (_vjp_fold2d, ()),
}
for _n in ("argmax", "argmin", "nonzero"):
    _VJP[_n] = (vjp_zero, ())
for _n, (_rule, _saves, *_for) in _VJP.items():
    OPS[_n] = replace(OPS[_n], vjp=_rule, saves=_saves, saves_for=_for[0] if _for else None)
# PyTorch's grad_fn names where they are not `<Op>Backward0` (elementwise ops declare theirs)
for _n, _g in {"reshape": "ViewBackward0", "to_device": "ToCopyBackward0",
               "index_put": "IndexPutBackward0",
               "scatter_add": "ScatterAddBackward0", "max": "MaxBackward1",
               "min": "MinBackward1"}.items():
    OPS[_n] = replace(OPS[_n], grad_name=_g)


# ---------------------------------------------------------------- writes through views
#
# put_back(build, base, value, attrs): `base` with the region this view step selects replaced
# by `value` (tracer/views.py walks a view chain back to its root with these).

def _put_index(build, x, u, a):
    return build("index_put", [x, u], {"spec": a["spec"], "accumulate": False})


def _put_reshape(build, x, u, _a):
    return build("reshape", [u], {"shape": tuple(x.shape)})


def _put_permute(build, x, u, a):
    perm = a["perm"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return build("permute", [u], {"perm": tuple(inv)})


def _put_identity(build, x, u, _a):
    return u


for _n, _put in (("index", _put_index), ("reshape", _put_reshape), ("permute", _put_permute),
                 ("detach", _put_identity), ("check", _put_identity),
                 ("diagonal", _put_diagonal)):
    OPS[_n] = replace(OPS[_n], put_back=_put)


def _accumulate_index_put(b, old, new):
    """old + (g scattered into zeros) is g scatter-added into old: no full-size temporary,
    which keeps backprop through many slices of one tensor (RNN time steps) linear."""
    z = new.inputs[0]
    if z.op == "full" and z.attrs.get("value") == 0:
        return b.op("index_put", old, *new.inputs[1:], spec=new.attrs["spec"], accumulate=True)
    return None


OPS["index_put"] = replace(OPS["index_put"], accumulate=_accumulate_index_put)


def _sum_grad_name(n) -> str:
    full = len(n.attrs["dims"]) == len(n.inputs[0].shape) and not n.attrs["keepdim"]
    return "SumBackward0" if full else "SumBackward1"


def _matmul_grad_name(n) -> str:
    return "MmBackward0" if len(n.inputs[0].shape) == 2 == len(n.inputs[1].shape) \
        else "BmmBackward0"


def _index_grad_name(n) -> str:
    """PyTorch's name for `x[key]`: tensor indices IndexBackward0, else the basic key's last
    kind of step (x[0] a select, x[None] an unsqueeze, x[1:] a slice)."""
    tags = {it[0] for it in n.attrs["spec"]}
    if "tensor" in tags:
        return "IndexBackward0"
    return "SelectBackward0" if "int" in tags else (
        "UnsqueezeBackward0" if tags == {"none"} else "SliceBackward0")


OPS["sum"] = replace(OPS["sum"], grad_name=_sum_grad_name)
OPS["index"] = replace(OPS["index"], grad_name=_index_grad_name)
OPS["matmul"] = replace(OPS["matmul"], grad_name=_matmul_grad_name)

# The elementwise primitives, each one definition with all its rules (ir/elementwise.py).
from . import elementwise as _elementwise  # noqa: E402,F401  (registers them in OPS)
from . import gamma as _gamma  # noqa: E402,F401  (lgamma, digamma, polygamma: issue 11)
from . import special_ops as _special_ops  # noqa: E402,F401  (i0 i1 i0e i1e: issue 27)
from . import elementwise_more as _elementwise_more  # noqa: E402,F401  (erfc copysign ...)
from . import polynomial_ops as _polynomial_ops  # noqa: E402,F401  (torch.special's polynomials)
# Linear algebra through the array module's LAPACK (ir/linalg_ops.py).
from . import linalg_ops as _linalg_ops  # noqa: E402,F401  (registers them in OPS)
from . import linalg_factor_ops as _linalg_factor_ops  # noqa: E402,F401  (LU, LDL, geqrf, expm)
from . import scans as _scans  # noqa: E402,F401  (cumsum, argsort, searchsorted, ...: issue 11)
# An LSTM layer's recurrence as one primitive and its VJP (ir/recurrent_ops.py).
from . import recurrent_ops as _recurrent_ops  # noqa: E402,F401  (registers them in OPS)
# A 2-d convolution as one primitive and its two gradients (ir/conv_ops.py).
from . import conv_ops as _conv_ops  # noqa: E402,F401  (registers them in OPS)
# softmax, log_softmax and layer_norm, whose VJPs keep what PyTorch's keep (ir/norm_ops.py).
from . import norm_ops as _norm_ops  # noqa: E402,F401  (registers them in OPS)
# 2-d max pooling's values and indices (ir/pool_ops.py).
from . import pool_ops as _pool_ops  # noqa: E402,F401  (registers them in OPS)
# nll_loss, one eager call for a classifier's loss (ir/loss_ops.py).
from . import loss_ops as _loss_ops  # noqa: E402,F401  (registers them in OPS)
# nn.Linear's x @ W^T + b, one eager call, two primitives in compiled graphs (ir/linear_ops.py).
from . import linear_ops as _linear_ops  # noqa: E402,F401  (registers them in OPS)
