"""Loop kernels -> CUDA C, through the Jinja templates in fusetorch/templates/cuda/.

The CUDA subclass of `render_base.Renderer`: the same backend-neutral `LoopKernel`s the C path
renders (codegen/lower.py), the op table's C expressions unchanged; the templates hold the
CUDA skeletons. Every kind of kernel the C renderer takes is rendered here too:

- Each kernel's fused statements become one `__device__` function `<name>_at` taking the loaded
  values and returning the stored ones through pointers; the skeletons call it once per element
  (or once per lane of a vector), so the statements are rendered once whatever the skeleton.
- Pointwise: a grid-stride loop. Flat kernels (every operand contiguous or a scalar) index with
  `i`; when every non-scalar operand is float or double they also have a vector path (float4 /
  double2 loads and stores) taken when all those pointers are 16-byte aligned, with a scalar
  tail. Other kernels decompose `i` into one index per dim and use constant strides. An input
  written in place (`Param.inout`, an optimizer's update) is stored through its own pointer at
  the index it was read.
- Reductions (sum, max, min; sums accumulate in double, max/min carry a NaN flag as in the C
  path) with the kept loops as rows and the reduced ones inside:
    'rows_thread'  one thread per output row: rows of at most SMALL_ROW elements, and rows
                   that lie side by side in memory (a sum over leading dims: adjacent threads
                   read adjacent elements); no shared memory, so it also runs under the
                   CUDA-on-CPU header
    'rows_block'   one block per output row: a strided loop, then a warp-shuffle and shared
                   memory block reduction
    'full'         every element into one value: grid-stride loop, block reduction, per-block
                   partials, and the last block to finish (an atomic counter) folds them; the
                   launcher passes a partials buffer and a zeroed counter (reset by the kernel)
  An outer-axis kernel (C's memory-order layout, `LoopKernel.outer_axis`) is the same
  reduction with its loops reordered (`trailing`). argmax/argmin scan each row in order in one
  thread ('rows_thread' always): the first extreme, a NaN counting as one, as in C and numpy.
- fold2d (`LoopKernel.template`): one thread per image element gathers the window elements that
  land on it, in the order the C kernel adds them (so sums agree bit for bit).
- Indices are `int` when every offset the kernel can form fits (with room for the grid stride),
  else `long long`.

A kernel this renderer does not understand (an unknown C type, reduction or template, or a
LoopKernel field it does not read set to something other than its default) is refused
(`render_base.Refused`, a NotImplementedError naming it); cudabuild turns that into the build
error `compile` falls back from.
"""
from __future__ import annotations

import dataclasses
import math

from .lower import LoopKernel, offset
from .render_base import Refused, Renderer, reduction

BLOCK = 256  # threads per block: a multiple of 32 (the block reduction assumes whole warps)
SMALL_ROW = 32  # rows of at most this many elements are reduced by one thread each
INT_LIMIT = 1 << 30  # offsets below this use 32-bit indices (half of int's range: the stride)

VECTOR = {"float": ("float4", 4), "double": ("double2", 2)}
STEPS = {"+": "FtSum", "max": "FtMax", "min": "FtMin"}  # module.cu.j2's combiners
TEMPLATES = ("fold2d",)  # movement ops with a CUDA template of their own
# the LoopKernel fields this renderer reads, or knowingly ignores (the C path's loop layouts:
# block-wise float sums, the outer-axis accumulator row); any other field must keep its default
KNOWN_FIELDS = {"name", "shape", "params", "loads", "body", "stores", "flat", "reduce_var",
                "reduce_out", "reduce_inner", "acc_ctype", "reduce_op", "acc_init", "numel",
                "comments", "template", "attrs", "outer_axis", "reduced", "prefix",
                "acc_strides", "blocked", "block", "chunk", "inner_blocked", "row_block"}


class CudaRenderer(Renderer):
    name = "CUDA"
    backend, suffix = "cuda", "cu.j2"
    FN_QUALIFIER = "static __device__ __forceinline__"
    RESTRICT = "__restrict__ "
    # NVRTC has no <stdint.h>
    ARRAY_TYPES = VALUE_TYPES = {"int64_t": "long long"}

    def check(self, k: LoopKernel) -> None:
        super().check(k)
        for f in dataclasses.fields(k):
            if f.name in KNOWN_FIELDS:
                continue
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            if getattr(k, f.name) != default:
                raise Refused(f"the CUDA renderer cannot render kernel {k.name}: it does "
                              f"not know LoopKernel.{f.name} = {getattr(k, f.name)!r}")
        if k.template is not None:
            if k.template not in TEMPLATES:
                raise Refused(f"the CUDA renderer cannot render kernel {k.name}: it has no "
                              f"template {k.template!r}")
            return
        for p in k.params:
            if len(p.strides) != len(k.shape) and not (p is k.reduce_out):
                raise Refused(f"kernel {k.name}: strides of {p.name} do not match its "
                              f"iteration space {k.shape}")
        if k.reduce_out is not None:
            n = sum(k.reduced) if k.outer_axis else k.reduce_inner
            if not 0 < n <= len(k.shape):
                raise Refused(f"kernel {k.name}: reduces {n} dims of a {len(k.shape)}-d space")
            if reduction(k).index and n != 1:
                raise Refused(f"kernel {k.name}: {k.reduce_op} over {n} loops")

    def render_kernel(self, k: LoopKernel) -> str:
        self.check(k)
        if k.template is not None:
            return self._template_kernel(k)
        k = trailing(k)
        it = _index_type(k)
        inputs = [p for p in k.params if not p.output]
        loads = list(zip(inputs, k.loads))
        stores = list(k.stores)
        kind = variant(k)
        vt, at = self.value_type, self.array_type
        # the per-element function: loaded values in, stored values (and the folded one) out
        fn_params = [f"const {vt(s.ctype)} {s.var}" for _, s in loads]
        fn_params += [f"{at(p.ctype)}* __restrict__ ft_y{j}" for j, (p, _) in enumerate(stores)]
        fn_assign = [f"*ft_y{j} = {v};" for j, (_, v) in enumerate(stores)]
        if k.reduce_out is not None:
            fn_params.append(f"{k.acc_ctype}* __restrict__ ft_v")
            fn_assign.append(f"*ft_v = ({k.acc_ctype}){k.reduce_var};")
        ctx = dict(k=k, it=it, kind=kind, fn_params=", ".join(fn_params), fn_assign=fn_assign,
                   kernel_params=self.signature(k), block=BLOCK)
        names = [f"i{d}" for d in range(len(k.shape))]
        if kind == "pointwise":
            ctx.update(self._pointwise(k, loads, stores, names, it))
            return self.template("pointwise").render(**ctx)
        n_outer = len(k.outer_shape)
        fold = reduction(k)
        ctx.update(
            fold=fold, op=STEPS[fold.combine], minmax=fold.nan,
            n_outer=math.prod(k.outer_shape), n_inner=math.prod(k.inner_shape),
            outer_index=_decompose(names[:n_outer], k.outer_shape, "ft_row", it),
            inner_index=_decompose(names[n_outer:], k.inner_shape, "ft_j", it),
            full_index=_decompose(names, k.shape, "ft_i", it),
            element=self._element(loads, stores, names, reduce=True),
            out_offset=offset(k.reduce_out, names[:n_outer]) if n_outer else "0")
        return self.template("reduce").render(**ctx)

    def _template_kernel(self, k: LoopKernel) -> str:
        return self.template(k.template).render(
            k=k, it=_index_type(k), kernel_params=self.signature(k), block=BLOCK,
            t=self.array_type(k.params[1].ctype))

    def _element(self, loads, stores, names, reduce: bool) -> list:
        """Load, call `<name>_at`, store: one element at the loop indices `names`."""
        lines = []
        for p, s in loads:
            lines.append(f"const {self.value_type(s.ctype)} {s.var} = "
                         f"{p.name}[{offset(p, names)}];")
        args = [s.var for _, s in loads]
        for j, (p, _) in enumerate(stores):
            lines.append(f"{self.array_type(p.ctype)} ft_o{j};")
            args.append(f"&ft_o{j}")
        if reduce:
            args.append("&ft_v")
        lines.append(f"AT({', '.join(args)});")
        for j, (p, _) in enumerate(stores):
            lines.append(f"{p.name}[{offset(p, names)}] = ft_o{j};")
        return lines

    def _pointwise(self, k, loads, stores, names, it) -> dict:
        if not k.flat:
            return dict(flat=False, index=_decompose(names, k.shape, "ft_i", it),
                        element=self._element(loads, stores, names, reduce=False), vector=None)
        # flat: operand `i`, or element 0 of a scalar
        lines = [f"const {self.value_type(s.ctype)} {s.var} = "
                 f"{p.name}[{'0' if _scalar(p) else 'ft_i'}];" for p, s in loads]
        args = [s.var for _, s in loads]
        for j, (p, _) in enumerate(stores):
            lines.append(f"{self.array_type(p.ctype)} ft_o{j};")
            args.append(f"&ft_o{j}")
        lines.append(f"AT({', '.join(args)});")
        lines += [f"{p.name}[ft_i] = ft_o{j};" for j, (p, _) in enumerate(stores)]
        return dict(flat=True, element=lines, index=[], vector=_vector(k, loads, stores))


CUDA = CudaRenderer()
check = CUDA.check
render_kernel = CUDA.render_kernel
render_module = CUDA.render_module


def trailing(k: LoopKernel) -> LoopKernel:
    """`k` with its reduced loops innermost (the layout CUDA's reductions take): an outer-axis
    kernel's loops reordered, kept ones first (in their order), strides moved with them; the
    C path's accumulator-row fields dropped. Any other kernel is returned as it is."""
    if not k.outer_axis:
        return k
    kept = [d for d, r in enumerate(k.reduced) if not r]
    order = kept + [d for d, r in enumerate(k.reduced) if r]
    new = {}
    for p in k.params:  # (the reduce output's strides are 0 along the reduced loops)
        new[id(p)] = dataclasses.replace(p, strides=tuple(
            p.strides[d] for d in (kept if p is k.reduce_out else order)))
    return dataclasses.replace(
        k, shape=tuple(k.shape[d] for d in order), params=[new[id(p)] for p in k.params],
        stores=[(new[id(p)], v) for p, v in k.stores], reduce_out=new[id(k.reduce_out)],
        reduce_inner=len(order) - len(kept), outer_axis=False,
        reduced=tuple(k.reduced[d] for d in order), prefix=len(kept), acc_strides=(),
        row_block=0)


def variant(k: LoopKernel) -> str:
    """'pointwise', the template's name (fold2d), or the reduction skeleton: 'full',
    'rows_thread' or 'rows_block'."""
    if k.template is not None:
        return k.template
    if k.reduce_out is None:
        return "pointwise"
    k = trailing(k)
    if reduction(k).index:
        return "rows_thread"  # a scan in order: the index is the first extreme's
    if not k.outer_shape:
        return "full"
    rows, inner = math.prod(k.outer_shape), math.prod(k.inner_shape)
    if inner <= SMALL_ROW or (rows >= BLOCK and _rows_side_by_side(k)):
        return "rows_thread"
    return "rows_block"


def _rows_side_by_side(k: LoopKernel) -> bool:
    """Whether neighbouring rows start at neighbouring elements of every array read, while a
    row's own elements do not: one thread per row then reads memory coalesced (a bias
    gradient's sum over the batch), and a block per row would read it with a row's stride."""
    n_outer = len(k.outer_shape)
    arrays = [p for p in k.params if not p.output and not _scalar(p)]
    return bool(arrays) and all(p.strides[n_outer - 1] in (0, 1) for p in arrays) and \
        any(p.strides[-1] not in (0, 1) for p in arrays)


def uses_shared_memory(k: LoopKernel) -> bool:
    return variant(k) in ("full", "rows_block")


def _index_type(k: LoopKernel) -> str:
    bound = max(k.numel, 1)
    for p in k.params:
        shape = (p.node.shape if k.template is not None else
                 k.outer_shape if p is k.reduce_out else k.shape)
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
    scalars = [f"const {CUDA.value_type(s.ctype)} {s.var} = {p.name}[0];"
               for p, s in loads if _scalar(p)]
    names = dict.fromkeys(p.name for p in arrays)  # an input written in place: once
    aligned = " | ".join(f"(unsigned long long)(const void*){n}" for n in names)
    return dict(width=width, lines=pre + calls + post, scalars=scalars, aligned=aligned)


def launch_config(k: LoopKernel, max_blocks: int) -> tuple:
    """(grid, block, partials) for one launch: `partials` is how many per-block partial values
    a 'full' reduction needs (0 otherwise). `max_blocks` caps the grid (about 8 blocks per SM
    fill a GPU; grid-stride loops cover the rest). grid 0 means nothing to launch."""
    kind = variant(k)
    if kind in TEMPLATES:  # a thread per output element
        return min(-(-math.prod(k.shape) // BLOCK), max_blocks), BLOCK, 0
    k = trailing(k)
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
