"""A fused group -> a backend-neutral loop kernel: parameters, SSA statements, stores, the
reduction, over the group's iteration space.

Shapes and strides are known (the compiled program is specialised on them, and guards check
them), so every index is an expression over loop variables with constant strides: a permuted or
broadcast input is read in place, never copied. The kernel says what is computed over the
space in the dims' own order; how its loops run (their order, merging, blocking, parallel
loops) is the backend's strategy (codegen/strategy.py), which `lower` attaches.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from ..ir import dtypes as dt
from ..ir import pool_ops
from ..ir.graph import Node
from ..ir.identity import IDENTITY
from ..ir.ops import OPS
from .fuse import Group, _is_scalar_const
from .strategy import contiguous, schedule
from .template_nests import POOL_TEMPLATE
from ..ir.roles import Role


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
    """What a kernel computes, backend-neutral, and (`strategy`) the loop structure its
    backend runs it by (codegen/strategy.py)."""
    name: str = field(metadata=_DISPLAY)  # ft_<kind>_<digest of everything else>
    kind: str  # pointwise, reduce, or the op of a kernel with a template of its own
    shape: tuple  # the iteration space, in the dims' own order (a reduction's: its input's)
    params: list  # strides over `shape` (a reduction's output: 0 along the reduced dims)
    loads: list  # Stmt per input: the value read at the current index
    body: list  # Stmt per fused node
    stores: list  # (Param, var) for pointwise outputs
    numel: int = 0
    reduced: tuple = ()  # a reduction's: per dim of `shape`, whether it is reduced
    reduce_var: str | None = None  # the value a reduce kernel folds
    reduce_out: Param | None = None
    acc_ctype: str = "double"
    reduce_op: str = "sum"
    acc_init: str = "0"
    comments: list = field(default_factory=list, metadata=_DISPLAY)
    # an op with a template of its own (fold2d.c.j2, max_pool2d_group.c.j2): the template's
    # name and the op's attributes
    template: str | None = None
    attrs: dict = field(default_factory=dict)
    # a flat pointwise kernel run over a batch of operand sets (PyTorch's multi-tensor apply:
    # an optimizer step over a group's parameters): every array parameter is a table with a
    # pointer per set, and each set has its own length (`numel[t]`), so one kernel serves
    # every shape; its `shape` and `numel` are those it was traced with, and unused
    batched: bool = False
    strategy: object = None  # strategy.CStrategy | CudaStrategy, set by strategy.schedule


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


_contiguous = contiguous


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


def lower(group: Group, layouts: dict, names: dict | None = None,
          in_place: dict | None = None, backend: str = "c",
          batched: bool = False) -> LoopKernel:
    """`layouts` maps id(node) -> the `Layout` each input node has at run time;
    `names` maps id(node) -> its name in the graph's text (`%7`), for the comments.
    `in_place` maps id(output node) -> the input node whose array that output overwrites: the
    kernel stores it through the input's own pointer at the index it read it (the caller has
    checked that nothing reads the old value afterwards, and that the layouts agree).
    The kernel is scheduled for `backend` ("c", "cuda": `strategy.schedule`).
    `batched=True` makes a flat pointwise kernel one that runs over a batch of operand sets
    of any length (`LoopKernel.batched`; C only); ValueError for a group that is not one."""
    return schedule(_lower(group, layouts, names or {}, in_place or {}, batched), backend)


def _lower(group: Group, layouts: dict, names: dict, in_place: dict,
           batched: bool) -> LoopKernel:
    if group.template is not None and OPS[group.template.op].kernel_outputs:
        return _lower_max_pool(group, layouts, names)
    if group.template is not None:
        return _lower_template(group.template, layouts, names)
    space = group.reduce.inputs[0].shape if group.reduce is not None else group.shape
    dims = tuple(group.reduce.attrs["dims"]) if group.reduce is not None else ()
    params, loads, bools, var_of = [], [], [], {}
    for k, n in enumerate(group.inputs):
        strides = _aligned_strides(n.shape, layouts[id(n)].strides, space)
        params.append(Param(f"in{k}", n.dtype.c_type, n, strides, False))
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
        roles = OPS[n.op].roles
        if n.dtype is dt.bool_ and Role.ZERO_ONE not in roles and OPS[n.op].promote != "compare":
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
            # the kept dims' contiguous strides, 0 along reduced dims
            kept = _contiguous(tuple(1 if d in dims else space[d] for d in range(len(space))))
            reduce_out = Param(f"out{k}", n.dtype.c_type, n,
                               tuple(0 if d in dims else kept[d] for d in range(len(space))),
                               True)
            params.append(reduce_out)
            continue
        p = Param(f"out{k}", n.dtype.c_type, n, _contiguous(space), True)
        params.append(p)
        stores.append((p, var_of[id(n)]))
    c = _contiguous(space)
    if batched and (group.reduce is not None or
                    any(p.strides != c and any(p.strides) for p in params)):
        raise ValueError("only a flat pointwise kernel runs over a batch of operand sets")
    kernel = LoopKernel(name="", kind=group.kind, shape=space, params=params, loads=loads,
                        body=body, stores=stores, numel=math.prod(space), batched=batched)
    if group.reduce is not None:
        r = group.reduce
        kernel.reduced = tuple(d in dims for d in range(len(space)))
        kernel.reduce_var = var_of[id(r.inputs[0])]
        kernel.reduce_out = reduce_out
        kernel.reduce_op = r.op
        kernel.comments.append(f"{reduce_out.name}: {names.get(id(r), '')} = {r.op} over dims "
                               f"{tuple(r.attrs['dims'])} of {r.inputs[0].type_str()}")
        # sums accumulate in double (a float32 sum of 2^24 values loses ~1e-5 relative);
        # max and min are exact in their own type; argmax/argmin keep the value they compare
        fold = OPS[r.op].reduction
        kernel.acc_ctype = "double" if fold.combine == "add" else r.inputs[0].dtype.c_type
        kernel.acc_init = literal(fold.identity, dt.float64)
    return kernel


def _lower_template(n: Node, layouts: dict, names: dict) -> LoopKernel:
    """An op computed by its own template (fold2d; max_pool2d_grad, whose template is max
    pooling's scan, `Role.WINDOW_SCAN`): its inputs read through their strides, one
    C-contiguous output. The template gets the op's attributes as constants."""
    src = (n.meta or {}).get("source")
    params = [Param(f"in{k}", x.dtype.c_type, x, layouts[id(x)].strides, False)
              for k, x in enumerate(n.inputs)]
    params.append(Param("out0", n.dtype.c_type, n, _contiguous(n.shape), True))
    attrs = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in n.attrs.items()}
    kernel = LoopKernel(name="", kind=n.op, shape=n.shape, params=params, loads=[], body=[],
                        stores=[], numel=max([math.prod(n.shape)] +
                                              [math.prod(x.shape) for x in n.inputs]),
                        template=POOL_TEMPLATE if Role.WINDOW_SCAN in OPS[n.op].roles else n.op,
                        attrs=attrs)
    kernel.comments = [f"{p.name}: {names.get(id(p.node), p.node.op)} {p.node.type_str()}, "
                       f"strides {p.strides}" for p in params[:-1]]
    kernel.comments.append(f"out0: {names.get(id(n), '')} = {n.op} {n.type_str()}"
                           f"{' from ' + src if src else ''}")
    return kernel


def _lower_max_pool(group: Group, layouts: dict, names: dict) -> LoopKernel:
    """Max pooling's group (codegen/fuse.py: the max_pool2d and max_pool2d_index nodes of one
    input): the input read through its strides, the values (out0) and the indices (out1) it
    has written C-contiguous, by max_pool2d.c.j2 (the eager kernel's template) with the
    window's attributes as constants."""
    n = group.template
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
    kernel = LoopKernel(name="", kind="max_pool2d", shape=n.shape, params=params, loads=[],
                        body=[], stores=[],
                        numel=math.prod(n.shape) * attrs["kernel"][0] * attrs["kernel"][1],
                        template=POOL_TEMPLATE, attrs=attrs)
    src = (n.meta or {}).get("source")
    kernel.comments = [f"in0: {names.get(id(x), x.op)} {x.type_str()}, strides {strides}"]
    kernel.comments += [f"{p.name}: {names.get(id(m), '')} = {m.op} {m.type_str()}"
                        f"{' from ' + src if src else ''}"
                        for p, m in zip(params[1:], group.outputs)]
    return kernel
