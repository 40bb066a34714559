"""Eager hot spots as compiled kernels (issue 13, item 2).

A few primitives that numpy computes far slower than one pass over memory run, on the CPU, as a
kernel the compile pipeline generates (the same `fuse`/`lower`/templates, `Program` and disk
cache as `fusetorch.compile`):

- the copy a `reshape` or `copy` of a strided view makes: a convolution's im2col and a max
  pool's window merge are 6-d views with short rows, which numpy copies row by row (a 5x5
  im2col of 64x6x14x14: ~470 us in numpy, ~70 us as a kernel);
- `argmax`/`argmin` over one dim (max pooling's window dim): numpy moves the axis last and
  copies, then scans rows of 4 (~1.3 ms for a 64x6x28x28 pool, ~80 us as a kernel).

Each (op, attributes, shape, strides, dtype) is a one-node graph built into a `Program` the
second time it is seen: a layout met once is not worth a build, and a training loop meets its
layouts every step. The program writes into the buffer it returned last time when nothing holds
that any more (`Program.run`), so a loop's im2col reuses one buffer. Arrays under
`MIN_ELEMENTS`, dtypes the kernels do not compute (`fuse.KERNEL_DTYPES` less bool), unaligned
arrays, and everything under `FUSETORCH_EAGER_COMPILE=0` or without a working C compiler (one
warning) stay with numpy: callers get None and compute it themselves. Results are the same
either way: a copy is exact, and the argmax kernels keep numpy's first extreme (a NaN counts
as one).

Only the numpy eager table calls this (runtime/eager.py); the program's own steps are kernels,
never the eager table, so nothing here recurses.
"""
from __future__ import annotations

import os
import threading
import warnings
from collections import OrderedDict

import numpy as np

ENABLED = os.environ.get("FUSETORCH_EAGER_COMPILE", "1") != "0"
# Below this the numpy call is as fast as a kernel call (a few microseconds of fixed cost each),
# and the many tiny arrays of tests and gradchecks build nothing.
MIN_ELEMENTS = 1 << 12
MAX_PROGRAMS = 64  # layouts kept (each program holds its last output buffer); least recent go
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

_lock = threading.Lock()
# key -> None (seen once), a Program, or False (the plan is not one kernel: never compiled)
_PROGRAMS: OrderedDict = OrderedDict()
_warned = False


def strided_copy(x: np.ndarray):
    """A C-contiguous copy of `x` computed by a kernel, or None (numpy should copy it)."""
    if not _eligible(x):
        return None
    return _run(("copy",) + _layout(x), x, _copy_graph)


def arg_reduce(op: str, x: np.ndarray, dim: int, keepdim: bool):
    """`argmax`/`argmin` of `x` over `dim` (int64) computed by a kernel, or None."""
    if not _eligible(x):
        return None
    out = _run((op, dim) + _layout(x), x, lambda node: _arg_graph(node, op, dim))
    if out is not None and not keepdim:
        out = out.reshape(x.shape[:dim] + x.shape[dim + 1:])
    return out


def clear() -> None:
    """Forget every program (tests; a changed ENABLED)."""
    with _lock:
        _PROGRAMS.clear()


# ---------------------------------------------------------------- programs

def _eligible(x) -> bool:
    return (ENABLED and x.size >= MIN_ELEMENTS and x.dtype in _FLOATS and x.flags.aligned
            and x.__class__ is np.ndarray)


def _layout(x: np.ndarray) -> tuple:
    # strides of size-1 dims never move an index (and numpy gives them arbitrary values)
    return (x.shape, tuple(0 if n == 1 else s for n, s in zip(x.shape, x.strides)), x.dtype)


def _input_node(x: np.ndarray):
    from ..ir.graph import Node
    from .device import FROM_NP
    d = FROM_NP[x.dtype]
    return Node("input", (), {"shape": x.shape, "dtype": d}, x.shape, d)


def _copy_graph(node):
    """The copy as the elementwise `cast` to the same dtype: `copy` itself is not fusible
    (passes drop it), while a cast is a pointwise kernel that reads any strides."""
    from ..ir.graph import make_node
    return make_node("cast", [node], {"dtype": node.dtype})


def _arg_graph(node, op: str, dim: int):
    from ..ir.graph import make_node
    return make_node(op, [node], {"dims": (dim,), "keepdim": True})


def _run(key: tuple, x: np.ndarray, make):
    with _lock:
        program = _PROGRAMS.get(key, 0)
        if program == 0:  # first sight: numpy computes it
            _PROGRAMS[key] = None
            if len(_PROGRAMS) > MAX_PROGRAMS:
                _PROGRAMS.popitem(last=False)
            return None
        _PROGRAMS.move_to_end(key)
        if program is None:
            program = _PROGRAMS[key] = _build(x, make)
        if program is False:
            return None
        return program.run([x])[0]  # (a program's run is not reentrant: under the lock)


def _build(x: np.ndarray, make):
    """A Program of the one-node graph, built for `x`'s layout; False when the plan is not a
    single kernel (then its extern steps would call back into the eager table) or when no
    compiler works."""
    global ENABLED, _warned
    from ..codegen import fuse
    from ..ir.graph import Graph
    from .cbuild import CompilerUnavailable
    from .device import cpu_backend
    from .program import Program
    node = _input_node(x)
    program = Program(Graph([node], [make(node)]), cpu_backend())
    if [type(s) for s in program.plan.steps] != [fuse.Group]:
        return False
    try:
        program.build([{id(node): x}])
    except CompilerUnavailable as e:
        ENABLED = False
        if not _warned:
            _warned = True
            warnings.warn(f"fusetorch: cannot build kernels ({e}); eager operations stay in "
                          "numpy", stacklevel=5)
        return False
    return program
