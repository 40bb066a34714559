"""Loop kernels -> C source, through the Jinja templates in fusetorch/templates/c/: the C
subclass of `render_base.Renderer` (which holds dedup, parameter lists, C types, helpers).

The loops come from the kernel's `strategy.CStrategy`: its nest (`Loop` records: order,
bounds, blocks, chunks, accumulator rows, parallel and simd loops), printed by the one
printer, codegen/printer.py; a loop kernel's template holds only what lies between the
loops (declarations, the element's loads and statements, folds, stores), the arrays' offsets
are the strategy's `Index` records, and this module only spells the pragmas. What each
statement computes comes from the op table's C expressions (via `lower`).
"""
from __future__ import annotations

import ctypes
import functools

from ..ir.ops import OPS
from .lower import LoopKernel
from .render_base import Renderer, reduction
from .strategy import CStrategy


# CStrategy.pragmas spelled out; {clause}: the reduction's clause on its accumulator (a
# max/min with its NaN flag), {combine}: its OpenMP operator
PRAGMAS = {
    "": "",
    "parallel": "omp parallel for schedule(static)",
    "simd": "omp simd",
    "parallel_simd": "omp parallel for simd schedule(static)",
    "parallel_dynamic": "omp parallel for schedule(dynamic)",
    "parallel_parts": "omp parallel for num_threads(parts) if(parts > 1) schedule(static)",
    # (the convolution kernels' parallel region over samples, its loop, and the register
    # tiles' loops, which GCC unrolls so that their accumulators stay in registers)
    "parallel_region": "omp parallel num_threads(NT) if(NT > 1)",
    "for_dynamic": "omp for schedule(dynamic)",
    "unroll_4": "GCC unroll 4",
    "unroll_16": "GCC unroll 16",
    "fold_simd": "omp simd {clause}",
    "fold_parallel": "omp parallel for {clause} schedule(static)",
    "fold_parallel_simd": "omp parallel for simd {clause} schedule(static)",
    "part_sum": "omp simd reduction(+:part)",
    "part_fold": "omp simd reduction({combine}:part) reduction(|:part_nan)",
}


def pragmas(k: LoopKernel) -> dict:
    """The text after `#pragma` for each pragma key (CStrategy.pragmas, Loop.pragma) in `k`."""
    r = reduction(k)
    clause, combine = "", ""
    if r is not None:
        combine = r.combine
        clause = (f"reduction({combine}:acc) reduction(|:nan)" if r.nan and not r.index
                  else "reduction(+:acc)")
    return {key: text.format(clause=clause, combine=combine) for key, text in PRAGMAS.items()}


class CRenderer(Renderer):
    """C with OpenMP pragmas: pointwise.c.j2, reduce.c.j2 (reduced loops innermost),
    reduce_outer.c.j2 (loops in memory order, an accumulator row) and the movement ops'
    own templates (`LoopKernel.template`: fold2d.c.j2), as `CStrategy.variant` names."""
    name = "C"
    STRATEGY = CStrategy
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
        s = k.strategy
        loads = [(p, x) for p, x in zip((p for p in k.params if not p.output), k.loads)]
        return self.template(s.variant).render(
            k=k, sched=s, loads=loads, offsets={p.name: x for p, x in zip(k.params, s.offsets)},
            acc_offset=s.acc_offset, out_offset=s.out_offset, signature=self.signature(k),
            reduction=reduction(k), set_pointers=self.set_pointers(k), pragmas=pragmas(k))

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
    the op table declares them (`simd`) and this C library provides them: exact to a few ulp
    like numpy's, without fast-math."""
    out = []
    for name, d in sorted(OPS.items()):
        for precision in d.simd:
            ctype, fn = ("float", name + "f") if precision == "f" else ("double", name)
            if has_vector_variant(fn, d.nin, precision):
                out.append(f"{ctype} {fn}({', '.join([ctype] * d.nin)});")
    return out


@functools.lru_cache(maxsize=None)
def _libmvec() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libmvec.so.1")
    except OSError:  # not glibc, or a glibc without libmvec
        return None


@functools.lru_cache(maxsize=None)
def has_vector_variant(fn: str, nin: int, precision: str) -> bool:
    """Whether libmvec exports vector versions of libm's `fn`. glibc added them in releases
    (exp, log, sin, cos, pow in 2.22; erf, tanh and most others in 2.35), every ISA's at once,
    so the SSE variant's symbol stands for all; a declaration without them would make the
    compiler call a symbol the module then fails to load with."""
    lib = _libmvec()
    lanes = 4 if precision == "f" else 2
    return lib is not None and hasattr(lib, f"_ZGVbN{lanes}{'v' * nin}_{fn}")
