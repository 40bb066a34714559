"""Loop kernels -> a built artifact for a device: the C module (rendered, compiled by cbuild,
loaded with cffi) or the CUDA module (rendered, compiled by NVRTC through cupy).

    built = build.build(plan.kernels, "cpu")
    built.functions[k](...)   # kernel k, in the plan's order
    built.source              # the module as built (None when there is nothing to build)

Raises `cbuild.CompilerUnavailable` where kernels cannot be built here (no C compiler; no
cupy, NVRTC or GPU): callers fall back to eager execution, saying so once (`cannot_build`).
"""
from __future__ import annotations

import functools
import os
import sys
import warnings
from dataclasses import dataclass

from ..codegen import render
from .cbuild import CompilerUnavailable


@dataclass
class Built:
    source: str | None
    functions: list  # a callable per kernel; [None] when there are no kernels
    ffi: object = None  # the C library's FFI (makes the pointers); None for CUDA


def build(kernels: list, device: str = "cpu") -> Built:
    """Build `kernels` (LoopKernels) for `device` ("cpu" or "cuda"): one CUDA module, or C
    modules in parts (`split`) that compile at the same time."""
    if not kernels:
        return Built(None, [None])  # extern steps only: nothing to build
    if device == "cuda":  # the same loop kernels rendered as CUDA
        from .cudabuild import CudaKernels
        cuda = CudaKernels(kernels)
        cuda.compile()  # CompilerUnavailable without cupy or a GPU
        return Built(cuda.source, [functools.partial(cuda.launch, k)
                                   for k in range(len(kernels))])
    from . import cbuild
    unique = render.unique(kernels)
    sources = [render.render_kernel(k) for k in unique]
    parts = split([s.count("\n") for s in sources], _cores())
    modules = [(render.module([sources[i] for i in part],
                              (n + 1, len(parts)) if len(parts) > 1 else None),
                "\n".join(render.declaration(unique[i]) for i in part))
               for n, part in enumerate(parts)]
    libs = cbuild.build_all(modules)
    lib_of = {unique[i].name: lib for part, lib in zip(parts, libs) for i in part}
    return Built("\n".join(source for source, _ in modules),
                 [lib_of[k.name].function(k.name) for k in kernels], libs[0].ffi)


# A compiler process costs ~35 ms before it reaches the first kernel here (start, headers,
# link) and a kernel ~0.5 ms per line at -O3: a part is worth its own process from about this
# many lines of kernels. Measured on the two-layer training step's module (8 kernels, 200
# lines): one process 155 ms, two parts at once 109 ms, on 2 cores.
PART_LINES = 60
MAX_PARTS = 8


def split(lines: list, cores: int) -> list:
    """The kernels (by their source's `lines`) in parts, each a list of kernel indices in the
    given order: as many parts as `cores` can compile at once and the kernels fill (PART_LINES
    each), balanced by giving each kernel, largest first, to the lightest part. The same
    kernels on the same cores split alike (the parts are cache keys)."""
    n = max(1, min(cores, MAX_PARTS, len(lines), sum(lines) // PART_LINES))
    load, parts = [0] * n, [[] for _ in range(n)]
    for i in sorted(range(len(lines)), key=lambda i: -lines[i]):
        j = load.index(min(load))
        load[j] += lines[i]
        parts[j].append(i)
    return [sorted(part) for part in parts]


def _cores() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every OS)
        return os.cpu_count() or 1


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_warned: set = set()
last_unavailable: str | None = None  # why kernels could not be built, the latest time


def cannot_build(e: CompilerUnavailable) -> None:
    """The one warning that kernels cannot be built here, once per process for each kind of
    reason (a missing compiler, a kernel the CUDA renderer refuses: the exception's class),
    whichever compiled path (compile, compiled eager backward, eager kernels, composites, the
    fused optimizer step) met it first; each of them then runs eagerly."""
    global last_unavailable
    last_unavailable = str(e)
    if type(e) in _warned:
        return
    _warned.add(type(e))
    warn_user(f"fusetorch: cannot build kernels ({e}); compiled functions, compiled eager "
              "operations and fused optimizer steps run eagerly instead", UserWarning)


def warn_user(message: str, category: type) -> None:
    """A warning at the user's line: the first frame outside the package."""
    level, f = 3, sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        level, f = level + 1, f.f_back
    warnings.warn(message, category, stacklevel=level)
