"""A fused group -> a backend-neutral loop kernel: parameters, loops, SSA statements, stores.

Shapes and strides are known (the compiled program is specialised on them, and guards check
them), so every index is an expression over loop variables with constant strides: a permuted or
broadcast input is read in place, never copied. The kernel iterates over the group's shape;
when every parameter is contiguous over it (or a scalar), the loops collapse into one flat loop.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from ..ir import dtypes as dt
from ..ir import pool_ops
from ..ir.graph import Node
from ..ir.identity import IDENTITY, digest
from ..ir.ops import OPS
from .fuse import Group, _is_scalar_const


# A kernel's name is the digest of all its data (ir/identity.py `digest`): every field of
# LoopKernel, Param and Stmt counts except those marked `_DISPLAY`, which only label the source.
_DISPLAY = {IDENTITY: False}


@dataclass
class Param:
    name: str
    ctype: str
    node: Node  # counts as the array it names (its shape and dtype)
    strides: tuple  # element strides of the array, aligned to the iteration space
    output: bool
    inout: bool = False  # an input the kernel also overwrites, element by element (in place)


@dataclass
class Stmt:
    var: str
    ctype: str
    expr: str
    comment: str = field(metadata=_DISPLAY)


@dataclass
class LoopKernel:
    name: str = field(metadata=_DISPLAY)  # ft_<kind>_<digest of everything else>
    shape: tuple  # the iteration space, in loop order (a reduction's reduced dims last)
    params: list
    loads: list  # Stmt per input: the value read at the current index
    body: list  # Stmt per fused node
    stores: list  # (Param, var) for pointwise outputs
    flat: bool  # one loop over numel(shape) instead of one loop per dim
    reduce_var: str | None = None  # the value a reduce kernel folds
    reduce_out: Param | None = None
    reduce_inner: int = 0  # how many trailing dims (in loop order) are reduced
    acc_ctype: str = "double"
    reduce_op: str = "sum"
    acc_init: str = "0"
    numel: int = 0
    comments: list = field(default_factory=list, metadata=_DISPLAY)
    blocked: bool = False  # a large float32 sum over everything, read in order: block-wise
    block: int = 4096
    chunk: int = 64  # blocks per chunk (a blocked sum's unit of work per thread, see below)
    # an outer-axis reduction: loops in memory order, the reduced ones among them (`reduced`
    # per loop), folding into an accumulator row over the kept dims (see reduce_outer.c.j2)
    outer_axis: bool = False
    reduced: tuple = ()
    prefix: int = 0  # loops before the first reduced one: each runs a row of its own
    # a movement op with a template of its own (fold2d.c.j2): its name and its attributes
    template: str | None = None
    attrs: dict = field(default_factory=dict)
    acc_strides: tuple = ()  # per loop: the accumulator row's stride (0 outside the row)
    # an outer-axis float32 sum whose innermost loop is kept: iterations of the first reduced
    # loop per block, each block summed into a float row first, then added into the double
    # row (0: no blocks). A double row updated element by element ran at a third of memory
    # speed (a load, a conversion and a store per element); a float row stays in registers
    row_block: int = 0
    # a float32 sum over one innermost loop with kept loops outside (row sums), or an
    # outer-axis sum whose innermost loop of at most `block` elements is reduced: float partial
    # sums of `block` elements, added in double (full-width SIMD instead of converting every
    # element to double: ~1.5x in cache; next to a bool input, which gcc 12 does not widen
    # to double in a simd loop, a ReLU backward's bias-gradient sum ran 8-15x slower)
    inner_blocked: bool = False
    # a flat pointwise kernel run over a batch of operand sets (PyTorch's multi-tensor apply:
    # an optimizer step over a group's parameters): every array parameter is a table with a
    # pointer per set, and each set has its own length (`numel[t]`), so one kernel serves
    # every shape; its `shape` and `numel` are those it was traced with, and unused
    batched: bool = False

    @property
    def outer_shape(self) -> tuple:
        return self.shape[:len(self.shape) - self.reduce_inner]

    @property
    def inner_shape(self) -> tuple:
        return self.shape[len(self.shape) - self.reduce_inner:]


def _aligned_strides(node_shape: tuple, array_strides: tuple, space: tuple) -> tuple:
    """Element strides of an input read over `space` (broadcast dims read stride 0)."""
    off = len(space) - len(node_shape)
    out = []
    for d in range(len(space)):
        k = d - off
        if k < 0 or node_shape[k] == 1:
            out.append(0)
        else:
            out.append(array_strides[k])
    return tuple(out)


class Layout(NamedTuple):
    """How a kernel's input lies in memory: its shape and its strides in elements (0 for a
    dim of size 1, which never moves an index). Pure data: lowering never sees an array (the
    runtime computes layouts from arrays, `runtime/layouts.py`)."""
    shape: tuple
    strides: tuple


def _contiguous(shape: tuple) -> tuple:
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return tuple(reversed(st))


def temp_type(d: dt.DType) -> str:
    """The C type of a kernel's temporary of dtype `d`. Bool values live in `int` temporaries:
    gcc 12 does not vectorise a loop holding a `_Bool` next to floats ("no vectype for stmt"),
    and a comparison's result is an int already. Arrays stay one byte (render.pointer_type)."""
    return "int" if d is dt.bool_ else d.c_type


def literal(value, d: dt.DType) -> str:
    if d is dt.bool_:
        return "1" if value else "0"
    v = float(value)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    text = repr(v)
    return text + "f" if d is dt.float32 else text


def _expr(node: Node, operands: list) -> str:
    """The op table's C expression for `node`. Elementwise inputs share one dtype (the tracer
    casts), so the libm suffix follows the last input (`where`'s first input is the mask)."""
    compute = node.inputs[-1].dtype if node.inputs else node.dtype
    kw = {"f": "f" if compute is dt.float32 else "", "t": node.dtype.c_type}
    for name in OPS[node.op].attrs:  # integer attributes are C literals: polygamma's {n}
        v = node.attrs.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            kw[name] = str(v)
    if OPS[node.op].c_literals is not None:  # attribute values as C literals: clamp's bounds
        kw.update((k, literal(v, node.dtype)) for k, v in OPS[node.op].c_literals(node).items())
    return OPS[node.op].c_expr.format(*operands, **kw)


# above this an outer-axis reduction with no kept loop before its first reduced one (nothing to
# run in parallel) uses the other layout, parallel over its kept dims
OUTER_AXIS_MAX_WORK = 1 << 20
OUTER_AXIS_MAX_ROW = 4096  # the accumulator row is a local array: at most 32 KiB of stack
MAX_CHUNKS = 4096  # a blocked sum's chunk sums are a local array too
ROW_BLOCK_SUMS = 64  # values a float partial row's element sums before it goes to double


OUTER_AXIS_TILE = 1024  # the widest tile of a tiled outer-axis row (8 KiB of double sums)
OUTER_AXIS_MIN_TILE = 256  # narrower tiles read too little per row: one pass of the whole row wins


def _row_tile(space: tuple, dims: tuple, in_strides: list) -> int | None:
    """The tile width of the tiled outer-axis layout, or None where it does not apply. For a
    reduction over leading dims whose row is one contiguous last dim, too long for one
    accumulator row or too much work for one thread (a bias gradient's sum over a large
    batch): the row is cut into tiles (a divisor of its length, at least 4 of them where the
    length allows, for the threads), and each tile folds every reduced row into an accumulator
    row of its own, reading memory in order, the tiles in parallel. Otherwise such a
    reduction went innermost: each output read its column with a stride of a whole row, 50x
    slower than numpy over [4096, 4096]."""
    n, last = space[-1], len(space) - 1
    if last in dims or any(d not in dims for d in range(min(dims), last)) or \
            any(st[-1] not in (0, 1) for st in in_strides):
        return None
    fits = [t for t in range(OUTER_AXIS_MIN_TILE, min(n, OUTER_AXIS_TILE) + 1) if n % t == 0]
    if not fits:
        return n if n <= OUTER_AXIS_MAX_ROW else None  # one tile, the whole row
    several = [t for t in fits if n // t >= 4]
    return max(several or fits)


def _collapse(shape: tuple, strides: list, reduced: tuple) -> tuple:
    """Merge neighbouring loops that every array walks as one (stride of the outer = stride of
    the inner times its extent; both reduced or both kept): [6, 64, 28, 28] summed over the
    last three becomes [6, 64, 784], whose inner loop is long enough to vectorise well."""
    shape, strides, reduced = list(shape), [list(st) for st in strides], list(reduced)
    d = len(shape) - 2
    while d >= 0:
        if reduced[d] == reduced[d + 1] and all(st[d] == st[d + 1] * shape[d + 1]
                                                for st in strides):
            shape[d] *= shape[d + 1]
            for st in strides:
                st[d] = st[d + 1]
                del st[d + 1]
            del shape[d + 1], reduced[d + 1]
        d -= 1
    return tuple(shape), [tuple(st) for st in strides], tuple(reduced)


def lower(group: Group, layouts: dict, names: dict | None = None,
          in_place: dict | None = None, outer_axis: bool = False,
          batched: bool = False) -> LoopKernel:
    """`layouts` maps id(node) -> the `Layout` each input node has at run time;
    `names` maps id(node) -> its name in the graph's text (`%7`), for the comments.
    `in_place` maps id(output node) -> the input node whose array that output overwrites: the
    kernel stores it through the input's own pointer at the index it read it (the caller has
    checked that nothing reads the old value afterwards, and that the layouts agree).
    `outer_axis=True` lets a reduction over leading dims keep the loops in memory order and
    fold into an accumulator row (C only; otherwise the reduced loops go innermost).
    `batched=True` makes a flat pointwise kernel one that runs over a batch of operand sets
    of any length (`LoopKernel.batched`; C only); ValueError for a group that is not one."""
    names = names or {}
    in_place = in_place or {}
    if group.special is not None and OPS[group.special.op].kernel_outputs:
        return _lower_max_pool(group, layouts, names)
    if group.special is not None:
        return _lower_special(group.special, layouts, names)
    space = group.reduce.inputs[0].shape if group.reduce is not None else group.shape
    # loop order: a reduction's kept dims outside, its reduced dims inside (every index is
    # strides times loop variables, so reordering the loops is reordering strides), except in
    # the outer-axis layout, which keeps memory order
    order = tuple(range(len(space)))
    dims = tuple(group.reduce.attrs["dims"]) if group.reduce is not None else ()
    in_strides = [_aligned_strides(n.shape, layouts[id(n)].strides, space)
                  for n in group.inputs]
    tile = None
    if dims:  # the accumulator row: the kept dims inside the first reduced one
        row = math.prod(space[d] for d in range(min(dims), len(space)) if d not in dims)
        allowed = outer_axis and row > 1
        outer_axis = (allowed and row <= OUTER_AXIS_MAX_ROW and
                      (min(dims) > 0 or math.prod(space) < OUTER_AXIS_MAX_WORK))
        if allowed and not outer_axis:
            tile = _row_tile(space, dims, in_strides)
            outer_axis = tile is not None
    if dims and not outer_axis:
        order = tuple(d for d in order if d not in dims) + dims
    if tile is None:
        reorder = lambda st: tuple(st[d] for d in order)
        loops, loop_reduced = reorder(space), tuple(d in dims for d in order)
    else:  # the kept last dim split into tiles of `tile`, the loop over the tiles first
        reorder = lambda st: (st[-1] * tile,) + tuple(st[:-1]) + (st[-1],)
        loops = (space[-1] // tile,) + tuple(space[:-1]) + (tile,)
        loop_reduced = (False,) + tuple(d in dims for d in range(len(space) - 1)) + (False,)
    params, loads, bools, var_of = [], [], [], {}
    for k, n in enumerate(group.inputs):
        p = Param(f"in{k}", n.dtype.c_type, n, reorder(in_strides[k]), False)
        params.append(p)
        var_of[id(n)] = f"x{k}"
        comment = f"input {k}: {names.get(id(n), n.op)} {n.type_str()}"
        if n.dtype is dt.bool_:
            # a bool byte other than 0 or 1 (a numpy view of other bytes, a re-signed file)
            # reads as true: numpy and PyTorch treat any nonzero byte so
            loads.append(Stmt(f"b{k}", "int", "", comment))
            bools.append(Stmt(f"x{k}", "int", f"(b{k} != 0)", f"input {k} as 0 or 1"))
        else:
            loads.append(Stmt(f"x{k}", temp_type(n.dtype), "", comment))
    body = list(bools)
    for n in group.nodes:
        if n is group.reduce:
            continue
        operands = []
        for i in n.inputs:
            if _is_scalar_const(i):
                operands.append(literal(i.attrs["value"], i.dtype))
            else:
                operands.append(var_of[id(i)])
        v = f"t{len(body)}"
        var_of[id(n)] = v
        src = (n.meta or {}).get("source")
        name = f"{names[id(n)]} = " if id(n) in names else ""
        expr = _expr(n, operands)
        if n.dtype is dt.bool_ and not OPS[n.op].zero_one and OPS[n.op].promote != "compare":
            expr = f"({expr} != 0)"  # an int temporary does not fold 2 to 1 as a _Bool would
        body.append(Stmt(v, temp_type(n.dtype), expr,
                         f"{name}{n.op}{' from ' + src if src else ''}"))
    stores = []
    reduce_out = None
    param_of = {id(p.node): p for p in params}
    for k, n in enumerate(group.outputs):
        if id(n) in in_place:
            p = param_of[id(in_place[id(n)])]
            p.inout = True
            stores.append((p, var_of[id(n)]))
            continue
        if n is group.reduce:
            # strides over the whole space, 0 along reduced dims (made kept-only below)
            kept = _contiguous(tuple(1 if d in dims else space[d] for d in range(len(space))))
            reduce_out = Param(f"out{k}", n.dtype.c_type, n,
                               reorder(tuple(0 if d in dims else kept[d]
                                             for d in range(len(space)))), True)
            params.append(reduce_out)
            continue
        p = Param(f"out{k}", n.dtype.c_type, n, reorder(_contiguous(space)), True)
        params.append(p)
        stores.append((p, var_of[id(n)]))
    contiguous = _contiguous(space)
    flat = group.reduce is None and all(
        p.strides == contiguous or not any(p.strides) for p in params)
    inputs_contiguous = all(p.strides == contiguous or not any(p.strides)
                            for p in params if not p.output)
    shape, reduced = loops, loop_reduced
    if not flat:
        shape, strides, reduced = _collapse(shape, [p.strides for p in params], reduced)
        for p, st in zip(params, strides):
            p.strides = st
    if batched and not (flat and group.reduce is None):
        raise ValueError("only a flat pointwise kernel runs over a batch of operand sets")
    kernel = LoopKernel(name="", shape=shape, params=params, loads=loads, body=body,
                        stores=stores, flat=flat, numel=math.prod(space), batched=batched)
    if group.reduce is not None:
        kernel.reduce_var = var_of[id(group.reduce.inputs[0])]
        kernel.reduce_out = reduce_out
        kernel.reduce_inner = sum(reduced)
        kernel.outer_axis, kernel.reduced = bool(outer_axis), reduced
        kernel.prefix = reduced.index(True)
        kernel.acc_strides = (0,) * kernel.prefix + reduce_out.strides[kernel.prefix:]
        if not outer_axis:  # the output is indexed by the kept (outer) loops alone
            reduce_out.strides = reduce_out.strides[:len(shape) - kernel.reduce_inner]
        kernel.reduce_op = group.reduce.op
        r = group.reduce
        kernel.comments.append(f"{reduce_out.name}: {names.get(id(r), '')} = {r.op} over dims "
                               f"{tuple(r.attrs['dims'])} of {r.inputs[0].type_str()}")
        # sums accumulate in double (a float32 sum of 2^24 values loses ~1e-5 relative);
        # max and min are exact in their own type; argmax/argmin keep the value they compare
        fold = OPS[r.op].reduction
        kernel.acc_ctype = "double" if fold.combine == "add" else r.inputs[0].dtype.c_type
        kernel.acc_init = literal(fold.identity, dt.float64)
        kernel.blocked = (fold.combine == "add" and group.reduce.dtype is dt.float32
                          and all(reduced) and not stores
                          and kernel.numel >= 4 * kernel.block and inputs_contiguous)
        inner = math.prod(n for n, red in zip(shape[kernel.prefix + 1:],
                                              reduced[kernel.prefix + 1:]) if red)
        if outer_axis and fold.combine == "add" and r.dtype is dt.float32 and not reduced[-1] and \
                inner <= ROW_BLOCK_SUMS:  # each float sums at most ROW_BLOCK_SUMS values
            kernel.row_block = ROW_BLOCK_SUMS // inner
        kernel.inner_blocked = fold.combine == "add" and r.dtype is dt.float32 and (
            (not outer_axis and kernel.reduce_inner == 1 and len(shape) > 1)
            or (outer_axis and reduced[-1] and shape[-1] <= kernel.block))
        if kernel.blocked:  # chunks of 64 blocks (1 MiB of float32 per input), at most
            # 4096 of them: their sums are a local array of at most 32 KiB
            blocks = -(-kernel.numel // kernel.block)
            kernel.chunk = max(64, -(-blocks // MAX_CHUNKS))
    # kernels named alike are defined once per module: the name hashes all the kernel's data
    kernel.name = f"ft_{group.kind}_{digest(kernel)}"
    return kernel


def _lower_special(n: Node, layouts: dict, names: dict) -> LoopKernel:
    """An op computed by its own template (fold2d, max_pool2d_grad): its inputs read through
    their strides, one C-contiguous output. The template gets the op's attributes as
    constants."""
    src = (n.meta or {}).get("source")
    params = [Param(f"in{k}", x.dtype.c_type, x, layouts[id(x)].strides, False)
              for k, x in enumerate(n.inputs)]
    params.append(Param("out0", n.dtype.c_type, n, _contiguous(n.shape), True))
    attrs = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in n.attrs.items()}
    kernel = LoopKernel(name="", shape=n.shape, params=params, loads=[], body=[], stores=[],
                        flat=False, numel=max([math.prod(n.shape)] +
                                              [math.prod(x.shape) for x in n.inputs]),
                        template=n.op, attrs=attrs)
    kernel.comments = [f"{p.name}: {names.get(id(p.node), p.node.op)} {p.node.type_str()}, "
                       f"strides {p.strides}" for p in params[:-1]]
    kernel.comments.append(f"out0: {names.get(id(n), '')} = {n.op} {n.type_str()}"
                           f"{' from ' + src if src else ''}")
    kernel.name = f"ft_{n.op}_{digest(kernel)}"
    return kernel


def _lower_max_pool(group: Group, layouts: dict, names: dict) -> LoopKernel:
    """Max pooling's group (codegen/fuse.py: the max_pool2d and max_pool2d_index nodes of one
    input): the input read through its strides, the values (out0) and the indices (out1) it
    has written C-contiguous, by max_pool2d.c.j2 (the eager kernel's template) with the
    window's attributes as constants."""
    n = group.special
    x = n.inputs[0]
    parts = OPS[n.op].kernel_outputs
    strides = layouts[id(x)].strides
    params = [Param("in0", x.dtype.c_type, x, strides, False)]
    params += [Param(f"out{parts.index(m.op)}", m.dtype.c_type, m, _contiguous(m.shape), True)
               for m in group.outputs]
    attrs = {k: tuple(n.attrs[k]) for k in ("kernel", "stride", "padding", "dilation")}
    attrs["out_hw"], attrs["extra"] = pool_ops.geometry(x.shape, n.attrs)
    written = {m.op for m in group.outputs}
    attrs["values"], attrs["indices"] = parts[0] in written, parts[1] in written
    kernel = LoopKernel(name="", shape=n.shape, params=params, loads=[], body=[],
                        stores=[], flat=False,
                        numel=math.prod(n.shape) * attrs["kernel"][0] * attrs["kernel"][1],
                        template=parts[0] + "_group", attrs=attrs)
    src = (n.meta or {}).get("source")
    kernel.comments = [f"in0: {names.get(id(x), x.op)} {x.type_str()}, strides {strides}"]
    kernel.comments += [f"{p.name}: {names.get(id(m), '')} = {m.op} {m.type_str()}"
                        f"{' from ' + src if src else ''}"
                        for p, m in zip(params[1:], group.outputs)]
    kernel.name = f"ft_max_pool2d_{digest(kernel)}"
    return kernel


def offset(p: Param, loop_vars: list, strides: tuple | None = None) -> str:
    """The element offset of `p` (or of `strides`) at the current loop indices."""
    strides = p.strides if strides is None else strides
    terms = [f"{v} * {s}" if s != 1 else v for v, s in zip(loop_vars, strides) if s]
    return " + ".join(terms) if terms else "0"
