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
  argmax/argmin scan each row in order in one thread ('rows_thread' always): the first
  extreme, a NaN counting as one, as in C and numpy.
- fold2d (`LoopKernel.template`): one thread per image element gathers the window elements that
  land on it, in the order the C kernel adds them (so sums agree bit for bit).
- Indices are `int` when every offset the kernel can form fits (with room for the grid stride),
  else `long long`.

Which skeleton, the loop order, threads per block, vector width and index type are the
kernel's `strategy.CudaStrategy` (`strategy.cuda_strategy`), and so are the skeleton's loops
and blocks (`CudaStrategy.nest`, printed by codegen/printer.py, as the C nests are):
and so are each array's offset and the splits of a thread's linear index into loop indices
(`printer.Index`, `Split`): this module spells what lies between the loops (loads, stores,
the vector lanes) and the templates place it. A kernel
this renderer does not understand (an unknown C type, reduction or template, or one scheduled
for another backend) is refused (`render_base.Refused`, a NotImplementedError naming it);
cudabuild turns that into the build error `compile` falls back from.
"""
from __future__ import annotations

import math

from .lower import LoopKernel
from .render_base import Refused, Renderer, reduction
from .strategy import THREADS as BLOCK, VECTOR, CudaStrategy

STEPS = {"+": "FtSum", "max": "FtMax", "min": "FtMin"}  # module.cu.j2's combiners
TEMPLATES = ("fold2d",)  # movement ops with a CUDA template of their own


class CudaRenderer(Renderer):
    name = "CUDA"
    backend, suffix = "cuda", "cu.j2"
    FN_QUALIFIER = "static __device__ __forceinline__"
    RESTRICT = "__restrict__ "
    # NVRTC has no <stdint.h>
    ARRAY_TYPES = VALUE_TYPES = {"int64_t": "long long"}

    STRATEGY = CudaStrategy

    def check(self, k: LoopKernel) -> None:
        super().check(k)
        if k.batched:  # (LoopKernel.batched: pointer tables, a length per operand set)
            raise Refused(f"the CUDA renderer cannot render kernel {k.name}: it runs over a "
                          f"batch of operand sets")
        if k.template is not None:
            if k.template not in TEMPLATES:
                raise Refused(f"the CUDA renderer cannot render kernel {k.name}: it has no "
                              f"template {k.template!r}")
            return
        n = k.strategy.reduce_inner
        if k.reduce_out is not None and reduction(k).index and n != 1:
            raise Refused(f"kernel {k.name}: {k.reduce_op} over {n} loops")

    def render_kernel(self, k: LoopKernel) -> str:
        self.check(k)
        if k.template is not None:
            return self._template_kernel(k)
        s = k.strategy
        it = s.index_type
        inputs = [p for p in k.params if not p.output]
        offsets = {p.name: x for p, x in zip(k.params, s.offsets)}
        loads = list(zip(inputs, k.loads))
        stores = list(k.stores)
        vt, at = self.value_type, self.array_type
        # the per-element function: loaded values in, stored values (and the folded one) out
        fn_params = [f"const {vt(x.ctype)} {x.var}" for _, x in loads]
        fn_params += [f"{at(p.ctype)}* __restrict__ ft_y{j}" for j, (p, _) in enumerate(stores)]
        fn_assign = [f"*ft_y{j} = {v};" for j, (_, v) in enumerate(stores)]
        if k.reduce_out is not None:
            fn_params.append(f"{k.acc_ctype}* __restrict__ ft_v")
            fn_assign.append(f"*ft_v = ({k.acc_ctype}){k.reduce_var};")
        ctx = dict(k=k, sched=s, it=it, kind=s.variant, fn_params=", ".join(fn_params),
                   fn_assign=fn_assign, kernel_params=self.signature(k), block=BLOCK)
        if s.variant == "pointwise":
            ctx.update(self._pointwise(k, loads, stores, offsets))
            return self.template("pointwise").render(**ctx)
        r = reduction(k)
        ctx.update(
            reduction=r, op=STEPS[r.combine], minmax=r.nan,
            outer_index=s.outer_index.lines(), inner_index=s.inner_index.lines(),
            full_index=s.full_index.lines(),
            element=self._element(loads, stores, offsets, reduce=True),
            out_offset=offsets[k.reduce_out.name])
        return self.template("reduce").render(**ctx)

    def _template_kernel(self, k: LoopKernel) -> str:
        return self.template(k.template).render(
            k=k, sched=k.strategy, it=k.strategy.index_type, kernel_params=self.signature(k),
            block=BLOCK, t=self.array_type(k.params[1].ctype))

    def _element(self, loads, stores, offsets, reduce: bool) -> list:
        """Load, call `<name>_at`, store: one element at the loop indices (`offsets`: each
        array's, the strategy's)."""
        lines = []
        for p, s in loads:
            lines.append(f"const {self.value_type(s.ctype)} {s.var} = {p.name}[{offsets[p.name]}];")
        args = [s.var for _, s in loads]
        for j, (p, _) in enumerate(stores):
            lines.append(f"{self.array_type(p.ctype)} ft_o{j};")
            args.append(f"&ft_o{j}")
        if reduce:
            args.append("&ft_v")
        lines.append(f"AT({', '.join(args)});")
        for j, (p, _) in enumerate(stores):
            lines.append(f"{p.name}[{offsets[p.name]}] = ft_o{j};")
        return lines

    def _pointwise(self, k, loads, stores, offsets) -> dict:
        s = k.strategy
        if not s.flat:
            return dict(flat=False, index=s.full_index.lines(),
                        element=self._element(loads, stores, offsets, reduce=False),
                        vector=None)
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


def variant(k: LoopKernel) -> str:
    """'pointwise', the template's name (fold2d), or the reduction skeleton: 'full',
    'rows_thread' or 'rows_block' (the kernel's CudaStrategy)."""
    return k.strategy.variant


def uses_shared_memory(k: LoopKernel) -> bool:
    return variant(k) in ("full", "rows_block")


def _scalar(p) -> bool:
    return not any(p.strides)


def _vector(k, loads, stores) -> dict | None:
    """The lines of a flat kernel's vector path (float4 / double2, `CudaStrategy.vector`
    lanes), None without one."""
    if not k.strategy.vector:
        return None
    arrays = [p for p, _ in loads if not _scalar(p)] + [p for p, _ in stores]
    vtype, width = VECTOR[arrays[0].ctype]
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
    s = k.strategy
    if s.variant in TEMPLATES:  # a thread per output element
        return min(-(-math.prod(k.shape) // s.threads), max_blocks), s.threads, 0
    if s.variant == "pointwise":
        work = -(-k.numel // s.vector) if s.vector else k.numel
        return min(-(-work // s.threads), max_blocks), s.threads, 0
    rows = math.prod(s.outer_loops)
    if s.variant == "rows_thread":
        return max(1, min(-(-rows // s.threads), max_blocks)), s.threads, 0
    if s.variant == "rows_block":
        return max(1, min(rows, max_blocks)), s.threads, 0
    grid = max(1, min(-(-k.numel // s.threads), max_blocks))
    return grid, s.threads, grid
