"""Loop kernels -> C source, through the Jinja templates in fusetorch/templates/c/: the C
subclass of `render_base.Renderer` (which holds dedup, parameter lists, C types, helpers).

The templates hold the loop skeletons and OpenMP pragmas; what each statement computes comes
from the op table's C expressions (via `lower`). Only large kernels get parallel loops: with
OMP_WAIT_POLICY=PASSIVE (cbuild: spinning workers starve numpy's BLAS threads) a parallel region
opened after the workers went to sleep costs about 100 us here, so it pays only from about a
million elements (measured: `W += g * -lr` over 1e5 floats, 18 us serial, 123 us parallel;
1e6: 211 vs 218; 4e6: 1194 vs 509).
"""
from __future__ import annotations

import math
import re

from ..ir.ops import OPS
from .lower import LoopKernel, offset
from .render_base import Renderer, reduction

# innermost loops shorter than this get no `omp simd`: forcing a 2-wide loop to vectorise ran
# max pooling's gradient kernel 2.7x slower than gcc's own unrolling (183 vs 67 us)
SIMD_MIN = 8
PARALLEL_WORK = 1 << 20  # work (elements, weighted by libm calls) from which loops go parallel
_LIBM_CALL = re.compile(r"\b(?!FT_)[a-z0-9_]+\(")


def parallel(k: LoopKernel) -> bool:
    """Whether the kernel's work pays for waking OpenMP's workers. A libm call (exp, tanh) per
    element costs about as much again as moving the element."""
    calls = sum(len(_LIBM_CALL.findall(s.expr)) for s in k.body)
    return k.numel * (1 + calls) >= PARALLEL_WORK


class CRenderer(Renderer):
    """C with OpenMP pragmas: pointwise.c.j2, reduce.c.j2 (reduced loops innermost),
    reduce_outer.c.j2 (loops in memory order, an accumulator row) and the movement ops'
    own templates (`LoopKernel.template`: fold2d.c.j2)."""
    name = "C"
    backend, suffix = "c", "c.j2"
    FN_QUALIFIER = "static inline"
    RESTRICT = "restrict "
    # Bool arrays are read and written as uint8_t (numpy stores them as 0/1 bytes): gcc 12
    # does not vectorise a loop that loads or stores `_Bool` next to floats ("no vectype for
    # stmt"), which made a relu-and-mask kernel 5x slower. Temporaries are `int`s
    # (lower.temp_type).
    ARRAY_TYPES = {"bool": "uint8_t"}

    def render_kernel(self, k: LoopKernel) -> str:
        self.check(k)
        loop_vars = [f"i{d}" for d in range(len(k.shape))]
        offsets = {p.name: offset(p, loop_vars) for p in k.params}
        loads = [(p, s) for p, s in zip((p for p in k.params if not p.output), k.loads)]
        ctx = dict(k=k, loads=loads, offsets=offsets, parallel=parallel(k),
                   signature=self.signature(k), simd_min=SIMD_MIN, fold=reduction(k),
                   set_pointers=self.set_pointers(k))
        if k.template is not None:
            return self.template(k.template).render(**ctx)
        if k.outer_axis:
            ctx["acc_offset"] = offset(k.reduce_out, loop_vars, k.acc_strides)
            ctx["out_offset"] = offset(k.reduce_out, loop_vars[:k.prefix]) if k.prefix else "0"
            ctx["row"] = math.prod(d for d, r in zip(k.shape[k.prefix:], k.reduced[k.prefix:])
                                   if not r)
            return self.template("reduce_outer").render(**ctx)
        if k.reduce_out is not None:
            outer = loop_vars[:len(k.outer_shape)]
            ctx["out_offset"] = offset(k.reduce_out, outer) if outer else "0"
            return self.template("reduce").render(**ctx)
        return self.template("pointwise").render(**ctx)

    def module_context(self, sources: list) -> dict:
        return {"simd": simd_declarations()}

    def declaration(self, k: LoopKernel) -> str:
        """The cffi cdef line of a kernel (no `restrict`: cffi's parser does not need it)."""
        return f"void {k.name}({self.signature(k, '')});"


C = CRenderer()
render_kernel = C.render_kernel
render_module = C.render_module
module = C.module
declaration = C.declaration
unique = C.unique
helpers = C.helpers
pointer_type = C.array_type


def simd_declarations() -> list:
    """C prototypes of the libm functions whose vector variants (libmvec) kernels may call, as
    the op table declares them (`simd`): exact to a few ulp like numpy's, without fast-math."""
    out = []
    for name, d in sorted(OPS.items()):
        for precision in d.simd:
            ctype, fn = ("float", name + "f") if precision == "f" else ("double", name)
            out.append(f"{ctype} {fn}({', '.join([ctype] * d.nin)});")
    return out
