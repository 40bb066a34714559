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
    """Build `kernels` (LoopKernels) into one module for `device` ("cpu" or "cuda")."""
    if not kernels:
        return Built(None, [None])  # extern steps only: nothing to build
    if device == "cuda":  # the same loop kernels rendered as CUDA
        from .cudabuild import CudaKernels
        cuda = CudaKernels(kernels)
        cuda.compile()  # CompilerUnavailable without cupy or a GPU
        return Built(cuda.source, [functools.partial(cuda.launch, k)
                                   for k in range(len(kernels))])
    from . import cbuild
    source = render.render_module(kernels)
    cdef = "\n".join(render.declaration(k) for k in render.unique(kernels))
    lib = cbuild.build(source, cdef)
    return Built(source, [lib.function(k.name) for k in kernels], lib.ffi)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_warned: set = set()


def cannot_build(e: CompilerUnavailable) -> None:
    """The one warning that kernels cannot be built here, once per process for each kind of
    reason (a missing compiler, a kernel the CUDA renderer refuses: the exception's class),
    whichever compiled path (compile, compiled eager backward, eager kernels, composites, the
    fused optimizer step) met it first; each of them then runs eagerly."""
    if type(e) in _warned:
        return
    _warned.add(type(e))
    message = (f"fusetorch: cannot build kernels ({e}); compiled functions, compiled eager "
               "operations and fused optimizer steps run eagerly instead")
    # point at the user's line: the first frame outside the package
    level, f = 2, sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        level, f = level + 1, f.f_back
    warnings.warn(message, UserWarning, stacklevel=level)
