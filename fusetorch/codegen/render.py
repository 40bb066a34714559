"""Loop kernels -> C source, through the Jinja templates in fusetorch/templates/c/.

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

from . import environment
from ..ir.ops import OPS
from .lower import LoopKernel, offset

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


def pointer_type(ctype: str) -> str:
    """The element type a kernel's pointer has. Bool arrays are read and written as uint8_t
    (numpy stores them as 0/1 bytes): gcc 12 does not vectorise a loop that loads or stores
    `_Bool` next to floats ("no vectype for stmt"), which made a relu-and-mask kernel 5x slower.
    Temporaries are `int`s (lower.temp_type)."""
    return "uint8_t" if ctype == "bool" else ctype


def render_kernel(k: LoopKernel) -> str:
    loop_vars = [f"i{d}" for d in range(len(k.shape))]
    offsets = {p.name: offset(p, loop_vars) for p in k.params}
    loads = [(p, s) for p, s in zip((p for p in k.params if not p.output), k.loads)]
    ctx = dict(k=k, loads=loads, offsets=offsets, parallel=parallel(k),
               signature=_params(k, "restrict "), simd_min=SIMD_MIN)
    if k.template is not None:
        return environment("c").get_template(f"{k.template}.c.j2").render(**ctx)
    if k.outer_axis:
        ctx["acc_offset"] = offset(k.reduce_out, loop_vars, k.acc_strides)
        ctx["out_offset"] = offset(k.reduce_out, loop_vars[:k.prefix]) if k.prefix else "0"
        ctx["row"] = math.prod(d for d, r in zip(k.shape[k.prefix:], k.reduced[k.prefix:])
                               if not r)
        return environment("c").get_template("reduce_outer.c.j2").render(**ctx)
    if k.reduce_out is not None:
        outer = loop_vars[:len(k.outer_shape)]
        ctx["out_offset"] = offset(k.reduce_out, outer) if outer else "0"
        return environment("c").get_template("reduce.c.j2").render(**ctx)
    return environment("c").get_template("pointwise.c.j2").render(**ctx)


def unique(kernels: list) -> list:
    """Kernels named alike are alike (the name hashes everything the source depends on): a
    module defines each once."""
    return list({k.name: k for k in kernels}.values())


def render_module(kernels: list) -> str:
    sources = [render_kernel(k) for k in unique(kernels)]
    return environment("c").get_template("module.c.j2").render(
        kernels=sources, simd=simd_declarations(), helpers=helpers(sources))


def simd_declarations() -> list:
    """C prototypes of the libm functions whose vector variants (libmvec) kernels may call, as
    the op table declares them (`simd`): exact to a few ulp like numpy's, without fast-math."""
    out = []
    for name, d in sorted(OPS.items()):
        for precision in d.simd:
            ctype, fn = ("float", name + "f") if precision == "f" else ("double", name)
            out.append(f"{ctype} {fn}({', '.join([ctype] * d.nin)});")
    return out


def helpers(sources: list) -> list:
    """The C helper functions (`c_helper`) of the ops whose helper these kernels call (by the
    `ft_<op>` name the helper defines); each is written for C and CUDA alike (`FT_FN`)."""
    text = "\n".join(sources)
    return [d.c_helper for name, d in sorted(OPS.items())
            if d.c_helper and f"ft_{name}" in text]


def declaration(k: LoopKernel) -> str:
    """The cffi cdef line of a kernel (no `restrict`: cffi's parser does not need it)."""
    return f"void {k.name}({_params(k, '')});"


def _params(k: LoopKernel, qualifier: str) -> str:
    return ", ".join(f"{'' if p.output or p.inout else 'const '}{pointer_type(p.ctype)}* "
                     f"{qualifier}{p.name}" for p in k.params)
