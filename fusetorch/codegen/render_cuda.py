"""Loop kernels -> CUDA C, through the Jinja templates in fusetorch/templates/cuda/.

The same backend-neutral `LoopKernel`s the C path renders (codegen/lower.py): what each statement
computes is the op table's C expression, unchanged; the templates hold the CUDA skeletons.

- Each kernel's fused statements become one `__device__` function `<name>_at` taking the loaded
  values and returning the stored ones through pointers; the skeletons call it once per element
  (or once per lane of a vector), so the statements are rendered once whatever the skeleton.
- Pointwise: a grid-stride loop. Flat kernels (every operand contiguous or a scalar) index with
  `i`; when every non-scalar operand is float or double they also have a vector path (float4 /
  double2 loads and stores) taken when all those pointers are 16-byte aligned, with a scalar
  tail. Other kernels decompose `i` into one index per dim and use constant strides.
- Reductions over trailing dims (sum, max, min; sums accumulate in double, max/min carry a NaN
  flag as in the C path):
    'rows_thread'  one thread per output row (rows of at most SMALL_ROW elements): no shared
                   memory, so it also runs under the CUDA-on-CPU header
    'rows_block'   one block per output row: a strided loop, then a warp-shuffle and shared
                   memory block reduction
    'full'         every element into one value: grid-stride loop, block reduction, per-block
                   partials, and the last block to finish (an atomic counter) folds them; the
                   launcher passes a partials buffer and a zeroed counter (reset by the kernel)
- Indices are `int` when every offset the kernel can form fits (with room for the grid stride),
  else `long long`.

A kernel this renderer does not understand (an unknown dtype or reduction, or a LoopKernel field
it does not read set to something other than its default) raises NotImplementedError naming it.
"""
from __future__ import annotations

import dataclasses
import math

import jinja2

from . import TEMPLATES
from .lower import LoopKernel, offset
from .render import helpers

BLOCK = 256  # threads per block: a multiple of 32 (the block reduction assumes whole warps)
SMALL_ROW = 32  # rows of at most this many elements are reduced by one thread each
INT_LIMIT = 1 << 30  # offsets below this use 32-bit indices (half of int's range: the stride)

CTYPES = {"float", "double", "bool"}
VECTOR = {"float": ("float4", 4), "double": ("double2", 2)}
REDUCE_OPS = {"sum": "FtSum", "max": "FtMax", "min": "FtMin"}
# the LoopKernel fields this renderer reads; any other field must keep its default
KNOWN_FIELDS = {"name", "shape", "params", "loads", "body", "stores", "flat", "reduce_var",
                "reduce_out", "reduce_inner", "acc_ctype", "reduce_op", "acc_init", "numel",
                "comments",
                # the C backend's block-wise float sums
                "blocked", "block", "chunk", "inner_blocked", "row_block",
                "reduced", "prefix", "acc_strides"}  # read by the C outer-axis layout only
# (`template`: C-only kernels such as fold2d; the CUDA programs never make them)

_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES / "cuda")),
                          undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def check(k: LoopKernel) -> None:
    """NotImplementedError unless this renderer can render `k` exactly."""
    for f in dataclasses.fields(k):
        if f.name in KNOWN_FIELDS:
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        if getattr(k, f.name) != default:
            raise NotImplementedError(f"the CUDA renderer cannot render kernel {k.name}: it does "
                                      f"not know LoopKernel.{f.name} = {getattr(k, f.name)!r}")
    for p in k.params:
        if p.ctype not in CTYPES:
            raise NotImplementedError(f"the CUDA renderer cannot render kernel {k.name}: "
                                      f"parameter {p.name} has C type {p.ctype}")
        if len(p.strides) != len(k.shape) and not (p is k.reduce_out):
            raise NotImplementedError(f"kernel {k.name}: strides of {p.name} do not match its "
                                      f"iteration space {k.shape}")
    if k.reduce_out is not None:
        if k.reduce_op not in REDUCE_OPS:
            raise NotImplementedError(f"the CUDA renderer cannot render kernel {k.name}: "
                                      f"reduction {k.reduce_op!r}")
        if not 0 < k.reduce_inner <= len(k.shape):
            raise NotImplementedError(f"kernel {k.name}: reduces {k.reduce_inner} trailing dims "
                                      f"of a {len(k.shape)}-d space")


def variant(k: LoopKernel) -> str:
    """'pointwise', or the reduction skeleton: 'full', 'rows_thread' or 'rows_block'."""
    if k.reduce_out is None:
        return "pointwise"
    if not k.outer_shape:
        return "full"
    return "rows_thread" if math.prod(k.inner_shape) <= SMALL_ROW else "rows_block"


def uses_shared_memory(k: LoopKernel) -> bool:
    return variant(k) in ("full", "rows_block")


def _index_type(k: LoopKernel) -> str:
    bound = max(k.numel, 1)
    for p in k.params:
        shape = k.outer_shape if p is k.reduce_out else k.shape
        bound = max(bound, 1 + sum((n - 1) * abs(s) for n, s in zip(shape, p.strides)))
    return "int" if bound < INT_LIMIT else "long long"


def _decompose(names: list, shape: tuple, source: str, it: str) -> list:
    """Statements splitting the linear index `source` (row-major over `shape`) into `names`."""
    if not names:
        return []
    out = [f"{it} ft_r = {source};"] if len(names) > 1 else []
    for d in range(len(names) - 1, 0, -1):
        if shape[d] == 1:
            out.append(f"const {it} {names[d]} = 0;")
        else:
            out.append(f"const {it} {names[d]} = ft_r % {shape[d]}; ft_r /= {shape[d]};")
    out.append(f"const {it} {names[0]} = {'ft_r' if len(names) > 1 else source};")
    return out


def _scalar(p) -> bool:
    return not any(p.strides)


def render_kernel(k: LoopKernel) -> str:
    check(k)
    it = _index_type(k)
    inputs = [p for p in k.params if not p.output]
    loads = list(zip(inputs, k.loads))
    stores = list(k.stores)
    kind = variant(k)
    # the per-element function: loaded values in, stored values (and the folded one) out
    fn_params = [f"const {s.ctype} {s.var}" for _, s in loads]
    fn_params += [f"{p.ctype}* __restrict__ ft_y{j}" for j, (p, _) in enumerate(stores)]
    fn_assign = [f"*ft_y{j} = {v};" for j, (_, v) in enumerate(stores)]
    if k.reduce_out is not None:
        fn_params.append(f"{k.acc_ctype}* __restrict__ ft_v")
        fn_assign.append(f"*ft_v = ({k.acc_ctype}){k.reduce_var};")
    kernel_params = [f"{'const ' if not p.output else ''}{p.ctype}* __restrict__ {p.name}"
                     for p in k.params]
    ctx = dict(k=k, it=it, kind=kind, fn_params=", ".join(fn_params), fn_assign=fn_assign,
               kernel_params=", ".join(kernel_params), block=BLOCK)
    names = [f"i{d}" for d in range(len(k.shape))]
    if kind == "pointwise":
        ctx.update(_pointwise(k, loads, stores, names, it))
        return _ENV.get_template("pointwise.cu.j2").render(**ctx)
    n_outer = len(k.outer_shape)
    ctx.update(
        op=REDUCE_OPS[k.reduce_op], minmax=k.reduce_op != "sum",
        n_outer=math.prod(k.outer_shape), n_inner=math.prod(k.inner_shape),
        outer_index=_decompose(names[:n_outer], k.outer_shape, "ft_row", it),
        inner_index=_decompose(names[n_outer:], k.inner_shape, "ft_j", it),
        full_index=_decompose(names, k.shape, "ft_i", it),
        element=_element(loads, stores, names, reduce=True),
        out_offset=offset(k.reduce_out, names[:n_outer]) if n_outer else "0")
    return _ENV.get_template("reduce.cu.j2").render(**ctx)


def _element(loads, stores, names, reduce: bool) -> list:
    """Load, call `<name>_at`, store: one element at the loop indices `names`."""
    lines = []
    for p, s in loads:
        lines.append(f"const {s.ctype} {s.var} = {p.name}[{offset(p, names)}];")
    args = [s.var for _, s in loads]
    for j, (p, _) in enumerate(stores):
        lines.append(f"{p.ctype} ft_o{j};")
        args.append(f"&ft_o{j}")
    if reduce:
        args.append("&ft_v")
    lines.append(f"AT({', '.join(args)});")
    for j, (p, _) in enumerate(stores):
        lines.append(f"{p.name}[{offset(p, names)}] = ft_o{j};")
    return lines


def _pointwise(k, loads, stores, names, it) -> dict:
    if not k.flat:
        return dict(flat=False, index=_decompose(names, k.shape, "ft_i", it),
                    element=_element(loads, stores, names, reduce=False), vector=None)
    # flat: operand `i`, or element 0 of a scalar
    lines = [f"const {s.ctype} {s.var} = {p.name}[{'0' if _scalar(p) else 'ft_i'}];"
             for p, s in loads]
    args = [s.var for _, s in loads]
    for j, (p, _) in enumerate(stores):
        lines.append(f"{p.ctype} ft_o{j};")
        args.append(f"&ft_o{j}")
    lines.append(f"AT({', '.join(args)});")
    lines += [f"{p.name}[ft_i] = ft_o{j};" for j, (p, _) in enumerate(stores)]
    return dict(flat=True, element=lines, index=[], vector=_vector(k, loads, stores))


def _vector(k, loads, stores) -> dict | None:
    """The vector path of a flat kernel: every non-scalar operand float (float4) or double
    (double2). None when types are mixed (bool outputs) or nothing is an array."""
    arrays = [p for p, _ in loads if not _scalar(p)] + [p for p, _ in stores]
    ctypes = {p.ctype for p in arrays}
    if len(ctypes) != 1 or next(iter(ctypes)) not in VECTOR or k.numel < 2 * BLOCK:
        return None
    vtype, width = VECTOR[next(iter(ctypes))]
    lanes = "xyzw"[:width]
    pre = [f"const {vtype} ft_a{n} = reinterpret_cast<const {vtype}*>({p.name})[ft_v];"
           for n, (p, _) in enumerate(loads) if not _scalar(p)]
    pre += [f"{vtype} ft_b{j};" for j in range(len(stores))]
    calls = []
    for c in lanes:
        args = [s.var if _scalar(p) else f"ft_a{n}.{c}" for n, (p, s) in enumerate(loads)]
        args += [f"&ft_b{j}.{c}" for j in range(len(stores))]
        calls.append(f"AT({', '.join(args)});")
    post = [f"reinterpret_cast<{vtype}*>({p.name})[ft_v] = ft_b{j};"
            for j, (p, _) in enumerate(stores)]
    scalars = [f"const {s.ctype} {s.var} = {p.name}[0];" for p, s in loads if _scalar(p)]
    aligned = " | ".join(f"(unsigned long long)(const void*){p.name}" for p in arrays)
    return dict(width=width, lines=pre + calls + post, scalars=scalars, aligned=aligned)


def render_module(kernels: list) -> str:
    """One CUDA source holding every kernel (each once, by name)."""
    seen, sources = set(), []
    for k in kernels:
        if k.name not in seen:
            seen.add(k.name)
            sources.append(render_kernel(k))
    return _ENV.get_template("module.cu.j2").render(kernels=sources, helpers=helpers(sources))


def launch_config(k: LoopKernel, max_blocks: int) -> tuple:
    """(grid, block, partials) for one launch: `partials` is how many per-block partial values
    a 'full' reduction needs (0 otherwise). `max_blocks` caps the grid (about 8 blocks per SM
    fill a GPU; grid-stride loops cover the rest). grid 0 means nothing to launch."""
    kind = variant(k)
    if kind == "pointwise":
        work = k.numel
        if k.flat and _vector(k, *_pairs(k)) is not None:
            work = -(-k.numel // VECTOR[k.params[-1].ctype][1])
        return min(-(-work // BLOCK), max_blocks), BLOCK, 0
    rows = math.prod(k.outer_shape)
    if kind == "rows_thread":
        return max(1, min(-(-rows // BLOCK), max_blocks)), BLOCK, 0
    if kind == "rows_block":
        inner = math.prod(k.inner_shape)
        block = min(BLOCK, max(32, -(-inner // 32) * 32))
        return max(1, min(rows, max_blocks)), block, 0
    grid = max(1, min(-(-k.numel // BLOCK), max_blocks))
    return grid, BLOCK, grid


def _pairs(k: LoopKernel) -> tuple:
    return list(zip([p for p in k.params if not p.output], k.loads)), list(k.stores)
