"""CUDA kernels of a compiled program: rendered source -> cupy.RawModule (NVRTC) -> launches.

    kernels = CudaKernels(loop_kernels)       # renders one module; NVRTC compiles on first use
    kernels.launch(i, [*inputs, *outputs])    # cupy arrays in the kernel's parameter order

This is the hook a compiled program on a CUDA device calls instead of the C library: the same
`LoopKernel`s, rendered by `codegen/render_cuda.py`. Modules are cached per process by the
sha256 of their source (cupy also keeps NVRTC's output on disk). cupy is imported only here and
only when a CUDA program is built. `FUSETORCH_PRINT_KERNELS=1` prints each new module's source.
A kernel the renderer refuses makes the build fail with `KernelRefused`, a CompilerUnavailable:
`compile` then runs that graph eagerly and says so once, as for a missing compiler.
"""
from __future__ import annotations

import hashlib
import os
import sys

from ..codegen import render_cuda
from ..codegen.render_base import Refused
from .cbuild import CompilerUnavailable

_MODULES: dict = {}  # sha256 of the source -> cupy.RawModule
_MAX_BLOCKS: dict = {}  # device index -> grid cap
BLOCKS_PER_SM = 8  # 8 blocks of 256 threads fill an SM's 2048 thread slots
_NP_NAMES = {"float": "float32", "double": "float64"}  # a full reduction's partials


class KernelRefused(CompilerUnavailable):
    """A program holds a kernel the CUDA renderer cannot render (the message names it)."""


def _cupy():
    try:
        import cupy
    except ImportError as e:
        raise CompilerUnavailable("CUDA kernels need cupy: pip install 'fusetorch[cuda]'") from e
    return cupy


def load(source: str):
    """The RawModule of `source`, one per distinct source in this process."""
    key = hashlib.sha256(source.encode()).hexdigest()
    module = _MODULES.get(key)
    if module is None:
        cp = _cupy()
        if os.environ.get("FUSETORCH_PRINT_KERNELS") == "1":
            print(f"// fusetorch CUDA module {key[:16]}\n{source}", file=sys.stderr)
        module = cp.RawModule(code=source, options=("--std=c++17",))
        _MODULES[key] = module
    return module


def max_blocks() -> int:
    cp = _cupy()
    dev = cp.cuda.Device()
    cap = _MAX_BLOCKS.get(dev.id)
    if cap is None:
        cap = _MAX_BLOCKS[dev.id] = BLOCKS_PER_SM * dev.attributes["MultiProcessorCount"]
    return cap


class CudaKernels:
    """Launchers for one program's loop kernels, all in one module."""

    def __init__(self, kernels: list):
        self.kernels = list(kernels)
        try:
            self.source = render_cuda.render_module(self.kernels)
        except Refused as e:
            raise KernelRefused(str(e)) from None
        self._module = None
        self._functions: list = [None] * len(self.kernels)
        self._workspace: dict = {}  # kernel index -> (partials, counter) of a full reduction

    def compile(self) -> None:
        """Build the module and look up every kernel now, at program build time: a missing
        cupy, NVRTC or GPU then shows where `compile` can fall back to eager
        (CompilerUnavailable); an error in the generated source is a RuntimeError."""
        cp = _cupy()
        try:
            if self._module is None:
                self._module = load(self.source)
            for i, k in enumerate(self.kernels):
                if self._functions[i] is None:
                    self._functions[i] = self._module.get_function(k.name)
        except cp.cuda.compiler.CompileException as e:
            raise RuntimeError(f"fusetorch: CUDA compilation failed:\n{e}") from None
        except Exception as e:  # no driver, no device, no NVRTC
            raise CompilerUnavailable(f"CUDA kernels cannot be built here: {e}") from None

    def launch(self, index: int, arrays: list) -> None:
        """Run kernel `index` on cupy arrays (inputs then outputs, the kernel's parameter
        order; strided inputs are passed as they are: the kernel has their strides)."""
        k = self.kernels[index]
        grid, block, partials = render_cuda.launch_config(k, max_blocks())
        if grid == 0:
            return
        fn = self._functions[index]
        if fn is None:
            if self._module is None:
                self._module = load(self.source)
            fn = self._functions[index] = self._module.get_function(k.name)
        args = list(arrays)
        if partials:
            args += self._scratch(index, k, partials)
        fn((grid,), (block,), tuple(args))

    def _scratch(self, index: int, k, partials: int) -> list:
        """A full reduction's per-block partials and its zeroed counter (the kernel leaves it
        zero again). Launches of one program on one stream are ordered, so reuse is safe."""
        ws = self._workspace.get(index)
        if ws is None or ws[0].size < partials:
            cp = _cupy()
            ws = self._workspace[index] = (cp.empty(partials, dtype=_NP_NAMES[k.acc_ctype]),
                                           cp.zeros(1, dtype="uint32"))
        return list(ws)
