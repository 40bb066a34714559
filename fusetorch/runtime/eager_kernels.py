"""Eager hot spots as compiled kernels (issue 13, item 2).

A few primitives that numpy computes far slower than one pass over memory run, on the CPU, as a
kernel the compile pipeline generates (the same `fuse`/`lower`/templates, `Program` and disk
cache as `fusetorch.compile`):

- the copy a `reshape` or `copy` of a strided view makes: a convolution's im2col and a max
  pool's window merge are 6-d views with short rows, which numpy copies row by row (a 5x5
  im2col of 64x6x14x14: ~470 us in numpy, ~70 us as a kernel);
- `argmax`/`argmin` over one dim (max pooling's window dim): numpy moves the axis last and
  copies, then scans rows of 4 (~1.3 ms for a 64x6x28x28 pool, ~80 us as a kernel);
- `gather` of one index per row over a short dim (max(dim)'s values at its argmax): a select
  among the dim's slices, where numpy's advanced indexing builds an index grid;
- the elementwise primitives that declare `eager_kernel` (numpy evaluates erf's float64
  series at ~90 ns an element, lgamma's and digamma's at 75-180, erfinv's Newton steps at
  ~640; their kernels, the C expressions compiled code runs, at 4, 14, 22 and 100), on float
  arrays of one shape and dtype (`elementwise`).

Each (op, attributes, shape, strides, dtype) is a one-node graph built into a `Program` at its
`POLICY.eager_kernel_at`-th sight (the second): a layout met once is not worth a build, and a training loop meets its
layouts every step. The program writes into the buffer it returned last time when nothing holds
that any more (`Program.run`), so a loop's im2col reuses one buffer. Arrays under
`POLICY.min_elements`, dtypes the kernels do not compute (`fuse.KERNEL_DTYPES` less bool), unaligned
arrays, and everything under `FUSETORCH_EAGER_COMPILE=0` or without a working C compiler (one
warning) stay with numpy: callers get None and compute it themselves. Results are the same
either way: a copy is exact, and the argmax kernels keep numpy's first extreme (a NaN counts
as one). `max_pool2d` is a kernel of its own (PyTorch's max pooling index: see there).

Only the numpy eager table calls this (runtime/eager.py); the program's own steps are kernels,
never the eager table, so nothing here recurses. The switch and the thresholds are
`_policy.POLICY`'s (`eager_kernels` also switches the compiled eager composites,
tracer/composite_programs.py).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from .._per_thread import per_thread
from .._policy import POLICY, note, noted
from .device import C_ARRAY_TYPES

# Below this the numpy call is as fast as a kernel call (a few microseconds of fixed cost each),
# and the many tiny arrays of tests and gradchecks build nothing.
MAX_SELECT = 16  # gather_rows: a select per slice of the gathered dim, up to a 4x4 window
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

_lock = threading.Lock()
# key -> its sightings before `POLICY.eager_kernel_at` (an int), a Program, or False (the plan is
# not one kernel: never compiled); a hand-written kernel (`cached_kernel`) or _BUILDING
_PROGRAMS: OrderedDict = OrderedDict()
# compile traces under way (`tracer/trace.py`): their eager run happens once, so it builds no
# kernel (a compiler run is ~0.07 s of a first compiled call) and counts no sighting; kernels
# built before still run
_tracing = per_thread(__name__, TRACING=0)  # per thread: another thread's trace builds as usual
# (a key not in _PROGRAMS; `False == 0`, so 0 would make a refused layout look unseen and get
# planned again every other call)
_UNSEEN = object()
# a hand-written kernel under construction in a background thread (`cached_kernel`), its thread,
# and the failures of finished ones not yet reported in a caller's thread
_BUILDING = object()
_BUILDS: dict = {}
_FAILURES: dict = {}


@contextmanager
def no_builds() -> Iterator[None]:
    st = _tracing.state
    st.TRACING += 1
    try:
        yield
    finally:
        st.TRACING -= 1


def strided_copy(x: np.ndarray):
    """A C-contiguous copy of `x` computed by a kernel, or None (numpy should copy it)."""
    if not _eligible(x):
        return None
    return _run(("copy",) + _layout(x), [x], lambda nodes: _copy_graph(*nodes))


def arg_reduce(op: str, x: np.ndarray, dim: int, keepdim: bool):
    """`argmax`/`argmin` of `x` over `dim` (int64) computed by a kernel, or None."""
    if not _eligible(x):
        return None
    out = _run((op, dim) + _layout(x), [x], lambda nodes: _arg_graph(nodes[0], op, dim))
    if out is not None and not keepdim:
        out = out.reshape(x.shape[:dim] + x.shape[dim + 1:])
    return out


def elementwise(op: str, fallback):
    """The eager implementation of elementwise primitive `op` for numpy: its one-op kernel
    where `_elementwise` takes the arguments, else `fallback` (numpy's)."""
    def run(*args, **kwargs):
        if not kwargs:
            out = _elementwise(op, args)
            if out is not None:
                return out
        return fallback(*args, **kwargs)

    run.__name__ = run.__qualname__ = op
    return run


def _elementwise(op: str, args: tuple):
    """`op` of arrays of one shape and float dtype (any strides), by a kernel, or None: for
    other dtypes, Python scalars and broadcasting the numpy implementation decides (its
    promotion and its errors)."""
    x = args[0]
    if x.__class__ is not np.ndarray or not _eligible(x):  # (`2.0 ** t`: a float first)
        return None
    for a in args[1:]:
        if a.__class__ is not np.ndarray or a.shape != x.shape or a.dtype != x.dtype or \
                not a.flags.aligned:
            return None
    key = (op,) + tuple(_layout(a) for a in args)
    return _run(key, list(args), lambda nodes: _op_graph(op, nodes))


def _op_graph(op: str, nodes):
    from ..ir.graph import make_node
    return make_node(op, list(nodes))


def gather_rows(x: np.ndarray, index: np.ndarray, dim: int):
    """`gather(x, index, dim)` for one index per row (`index.shape[dim] == 1`: max(dim)'s
    values at its argmax, max pooling's), over a short dim, by a kernel; or None. The kernel
    selects among the dim's slices, `where(index == j, x_j, ...)`, reading each in place:
    the values are gather's exactly."""
    k = x.shape[dim]
    if not (2 <= k <= MAX_SELECT and index.shape[dim] == 1 and index.dtype == np.int64
            and index.flags.aligned and index.size * k >= POLICY.min_elements and _eligible(x, 0)):
        return None
    crop = [slice(0, n) for n in index.shape]
    rows = []
    for j in range(k):
        crop[dim] = slice(j, j + 1)
        rows.append(x[tuple(crop)])
    key = ("gather", k) + _layout(rows[0]) + _layout(index)
    return _run(key, rows + [index], _select_graph)


def max_pool2d(x: np.ndarray, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
               extra: tuple = (0, 0), part: int | None = None):
    """(values, indices int64), each [N, C, OH, OW], of max pooling x [N, C, H, W] with -inf
    padding (`padding` on each side and `extra` more at the bottom and right: ceil_mode's),
    by one kernel (templates/c/max_pool2d.c.j2); or None. What the max_pool2d and
    max_pool2d_index primitives compute (ir/pool_ops.py), from one read of the input. With
    `part` (0 the values, 1 the indices) only that one, by a kernel that writes only it."""
    if not (x.ndim == 4 and _fits(x, 0)):
        return None
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (eh, ew) = kernel, stride, padding, dilation, extra
    hp, wp = h + 2 * ph + eh, w + 2 * pw + ew
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1 or kh * kw * ow * x.itemsize > POLICY.max_pool_rows or \
            (hp, wp) != (h, w) and hp * wp * x.itemsize > POLICY.max_pool_plane:
        return None
    key = ("max_pool2d", kernel, stride, padding, dilation, extra, part) + _layout(x)
    fn = cached_kernel(key, lambda: _build_pool(x, kernel, stride, padding, dilation, extra,
                                                (oh, ow), part=part))
    if fn is None:
        return None
    values = None if part == 1 else np.empty((n, c, oh, ow), x.dtype)
    where = None if part == 0 else np.empty((n, c, oh, ow), np.int64)
    fn(x, values, where)
    return (values, where) if part is None else (where if part else values)


def max_pool2d_grad(x: np.ndarray, g: np.ndarray, kernel: tuple, stride: tuple,
                    padding: tuple, dilation: tuple, extra: tuple = (0, 0)):
    """The max_pool2d_grad primitive (ir/pool_ops.py): g [N, C, OH, OW] added into zeros of
    x's shape at max pooling's picks, by the forward's scan (templates/c/max_pool2d.c.j2 with
    `grad`), in scatter_add's order; or None."""
    if not (x.ndim == 4 and _fits(x, 0) and g.dtype == x.dtype and g.ndim == 4
            and g.flags.aligned and g.__class__ is np.ndarray):
        return None
    n, c, h, w = x.shape
    (kh, kw), (ph, pw), (eh, ew) = kernel, padding, extra
    oh, ow = g.shape[2:]
    hp, wp = h + 2 * ph + eh, w + 2 * pw + ew
    if kh * kw * ow * x.itemsize > POLICY.max_pool_rows or \
            (hp, wp) != (h, w) and hp * wp * x.itemsize > POLICY.max_pool_plane:
        return None
    key = ("max_pool2d_grad", kernel, stride, padding, dilation, extra) + _layout(x) + \
        _layout(g)
    fn = cached_kernel(key, lambda: _build_pool(x, kernel, stride, padding, dilation, extra,
                                                (oh, ow), g))
    if fn is None:
        return None
    out = np.empty(x.shape, x.dtype)
    fn(x, g, out)
    return out


def add_rows(out: np.ndarray, rows: np.ndarray, v: np.ndarray) -> bool:
    """`np.add.at(out, (rows,), v)` by a kernel (templates/c/add_rows.c.j2), the same sums
    in the same order; False (numpy should do it) where it does not apply: `out` and `v`
    C-contiguous float32/float64 of one dtype, `v` one row of `out` per index, `rows` a 1-d
    integer index already checked to be in range."""
    if not (out.dtype in _FLOATS and v.dtype == out.dtype and out.ndim >= 2
            and rows.ndim == 1 and rows.dtype.kind in "iu" and v.shape[1:] == out.shape[1:]
            and v.shape[0] == rows.shape[0] and v.size >= POLICY.min_elements
            and out.flags.c_contiguous and v.flags.c_contiguous
            and out.__class__ is np.ndarray and v.__class__ is np.ndarray):
        return False
    fn = cached_kernel(("add_rows", out.dtype), lambda: _build_add_rows(out.dtype))
    if fn is None:
        return False
    rows = rows.astype(np.int64, copy=False)
    if rows.size and rows.min() < 0:
        rows = np.where(rows < 0, rows + out.shape[0], rows)
    rows = np.ascontiguousarray(rows)
    fn(out, rows, v, rows.shape[0], v.size // max(rows.shape[0], 1))
    return True


def scatter_add_last(out: np.ndarray, index: np.ndarray, src: np.ndarray) -> bool:
    """`scatter_add` along the last dim into `out` in place, by a kernel
    (templates/c/scatter_add_last.c.j2), the same sums in the same order as np.add.at; False
    (numpy should do it) where it does not apply: C-contiguous float32/float64 `out`, `src` of
    its dtype, an int64 `index` of src's shape, already checked to be in range, with out's
    leading dims."""
    if not (out.dtype in _FLOATS and src.dtype == out.dtype
            and index.dtype == np.int64 and out.ndim == index.ndim >= 1
            and src.shape == index.shape and index.shape[:-1] == out.shape[:-1]
            and index.size >= POLICY.min_elements and out.flags.c_contiguous
            and out.__class__ is np.ndarray and src.__class__ is np.ndarray):
        return False
    fn = cached_kernel(("scatter_add_last", out.dtype),
                       lambda: _build_scatter_add_last(out.dtype))
    if fn is None:
        return False
    # (a sum's cotangent arrives broadcast: one copy is cheaper than numpy's loop)
    index, src = np.ascontiguousarray(index), np.ascontiguousarray(src)
    k = index.shape[-1]
    fn(out, index, src, index.size // max(k, 1), k, out.shape[-1])
    return True


def cached_kernel(key: tuple, build, wait: bool = False):
    """The hand-written kernel cached under `key` (max pooling's, the row accumulation's, an
    LSTM layer's: runtime/recurrent.py; a convolution's: runtime/conv.py; softmax rows':
    runtime/softmax_rows.py), built by `build()`
    the first time; None while a trace runs (it builds nothing), without a compiler, or while
    it builds. With `POLICY.background_builds` the build runs in a daemon thread and the caller's
    reference computes meanwhile (a convolution's generic kernels are ~1 s of gcc, which the first
    eager step of a conv net on a fresh machine waited for), as a compiled program's first calls
    interpret; values agree between the two to rounding (the kernels sum in another order).
    FUSETORCH_COMPILE_BACKGROUND=0 builds while the caller waits (the tests: results never
    depend on which ran). When to build is `POLICY`'s: off with `POLICY.eager_kernels`,
    else from the `POLICY.hand_kernel_at`-th sight of `key`; each choice is `note`d.

    `wait`: the caller is a program's build (a convolution built for its geometry,
    `conv._specialize`), which asks once and keeps what it gets: it builds under
    `no_builds()` too (which holds back the eager table's calls, not builds) and waits for the
    build, its own or one another thread started for the same key (the forward and backward
    programs of one layer share it), in a thread of its own, so that no lookup waits on gcc."""
    if not POLICY.eager_kernels:
        _note_off(key)
        return None
    fn = _PROGRAMS.get(key)
    if fn and fn is not _BUILDING and fn.__class__ is not int:
        # built: no lock for a loop's every call (a softmax of a row is ~2 us, the lock 0.2);
        # the LRU move is one atomic step, and an entry evicted meanwhile is simply gone
        try:
            _PROGRAMS.move_to_end(key)
        except KeyError:
            pass
        return fn
    with _lock:
        fn = _PROGRAMS.get(key, _UNSEEN)
        if fn is _UNSEEN or fn.__class__ is int:  # (int: sightings before hand_kernel_at)
            if _tracing.state.TRACING and not wait:
                return None
            n, at = (1 if fn is _UNSEEN else fn + 1), POLICY.hand_kernel_at
            if n < at:  # the caller's reference computes it
                _PROGRAMS[key] = n
                if n == 1:
                    _evict()
                note("eager_kernel", key, "first_hand_sight", n, at)
                return None
            if POLICY.background_builds or wait:
                _PROGRAMS[key] = _BUILDING
                _FAILURES.pop(key, None)  # (of an earlier build whose mark was evicted)
                _evict()
                thread = threading.Thread(target=_build_kernel, args=(key, build), daemon=True,
                                          name=f"fusetorch-build-{key[0]}")
                _BUILDS[key] = thread
                thread.start()
                note("eager_kernel", key, "building")
                if not wait:
                    return None
            else:
                fn = _PROGRAMS[key] = build()
                _evict()
                note("eager_kernel", key, *(("kernel",) if fn else ("no_compiler", _unavailable())))
                return fn or None
        elif fn is not _BUILDING:
            _PROGRAMS.move_to_end(key)
            return fn or None
        elif not wait:
            return _built(key)
        thread = _BUILDS.get(key)
    if thread is not None:
        thread.join()
    with _lock:
        fn = _PROGRAMS.get(key)
        return _built(key) if fn is _BUILDING else fn or None


def _built(key: tuple):
    """None for a kernel still building; its failure, once finished, said once here in the
    caller's thread (under `_lock`)."""
    failure = _FAILURES.pop(key, None)
    if failure is None:
        return None
    _PROGRAMS[key] = False
    _warn_failed(key, failure)
    note("eager_kernel", key, "build_failed", f"{type(failure).__name__}: {failure}")
    return None


def _note_off(key: tuple) -> None:
    """Note that the switch keeps `key`'s kernel unbuilt, once per change (callers come per op
    call)."""
    if noted("eager_kernel", key) != _OFF:
        note("eager_kernel", key, "off", "eager_kernels")


_OFF = ("off", ("eager_kernels",))


def _build_kernel(key: tuple, build) -> None:
    """A background build of `cached_kernel`: its result replaces the _BUILDING mark, or its
    failure is kept for the caller's thread to report once."""
    try:
        with no_builds():  # (what it runs through the eager table must not build under _lock)
            fn = build()
    except Exception as e:  # noqa: BLE001  (a cache or compiler fault: the reference runs)
        with _lock:
            _FAILURES[key] = e
            _BUILDS.pop(key, None)
        return
    with _lock:
        if _PROGRAMS.get(key) is _BUILDING:
            _PROGRAMS[key] = fn
            note("eager_kernel", key, *(("kernel",) if fn else ("no_compiler", _unavailable())))
        _BUILDS.pop(key, None)


def _warn_failed(key: tuple, failure: Exception) -> None:
    from .build import cannot_build, warn_user
    from .cbuild import CompilerUnavailable
    if isinstance(failure, CompilerUnavailable):
        cannot_build(failure)
    else:
        warn_user(f"fusetorch: building the {key[0]} kernel failed ({type(failure).__name__}: "
                  f"{failure}); numpy computes it instead", RuntimeWarning)


def _evict() -> None:
    while len(_PROGRAMS) > POLICY.eager_programs:
        _PROGRAMS.popitem(last=False)


def wait_for_kernel_builds(timeout: float | None = None) -> bool:
    """Wait for `cached_kernel`'s background builds (each up to `timeout` seconds); True when
    none is left running."""
    with _lock:
        threads = list(_BUILDS.values())
    for thread in threads:
        thread.join(timeout)
    with _lock:
        return not any(t.is_alive() for t in _BUILDS.values())


def clear() -> None:
    """Forget every program (tests; a changed policy)."""
    with _lock:
        _PROGRAMS.clear()


# ---------------------------------------------------------------- programs

def _eligible(x, min_elements: int | None = None) -> bool:
    # (the size first, in _fits: a loop's small arrays, most calls, are answered by it)
    return _fits(x, min_elements) and POLICY.eager_kernels


def _fits(x, min_elements: int | None = None) -> bool:
    """`x` is an array a kernel reads: aligned, float32/float64, of `min_elements` or more
    (the switch aside: `cached_kernel` decides it for hand-written kernels and notes it)."""
    return (x.size >= (POLICY.min_elements if min_elements is None else min_elements)
            and x.dtype in _FLOATS and x.flags.aligned and x.__class__ is np.ndarray)


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


def _select_graph(nodes):
    """x_0 .. x_{k-1}, index -> where(index == 0, x_0, where(index == 1, x_1, ... x_{k-1}))"""
    from ..ir import dtypes as dt
    from ..ir.graph import make_node
    *rows, index = nodes
    out = rows[-1]
    for j in range(len(rows) - 2, -1, -1):
        j_node = make_node("constant", [], {"shape": (), "dtype": dt.int64, "value": j})
        out = make_node("where", [make_node("eq", [index, j_node]), rows[j], out])
    return out


def _run(key: tuple, arrays: list, make):
    with _lock:
        program = _PROGRAMS.get(key, _UNSEEN)
        new = program is _UNSEEN
        seen = new or program.__class__ is int  # (sightings so far: no kernel yet)
        if seen and _tracing.state.TRACING:
            return None
        if not new:
            _PROGRAMS.move_to_end(key)
        if seen:
            n, at = (1 if new else program + 1), POLICY.eager_kernel_at
            if n < at:  # numpy computes it
                _PROGRAMS[key] = n
                if new:
                    _evict()
                note("eager_kernel", key, "first_sight", n, at)
                return None
            program = _PROGRAMS[key] = _build(arrays, make)
            if new:
                _evict()
            note("eager_kernel", key, *(("kernel",) if program is not False else
                                        ("not_one_kernel",) if _accepted is False else
                                        ("no_compiler", _unavailable())))
        if program is False:
            return None
        return program.run(arrays)[0]  # (a program's run is not reentrant: under the lock)


def _build(arrays: list, make):
    """A Program of the graph `make(input nodes)` gives, built for these arrays' layouts; False
    when the plan is not a single kernel (then its extern steps would call back into the eager
    table) or when no compiler works (`program.obtain` says so once)."""
    from ..codegen import fuse
    from ..ir.graph import Graph
    from .device import cpu_backend
    from .program import obtain
    global _accepted
    nodes = [_input_node(a) for a in arrays]
    _accepted = None

    def accept(plan) -> bool:
        global _accepted
        _accepted = [type(s) for s in plan.steps] == [fuse.Group]
        return _accepted

    program = obtain(Graph(nodes, [make(nodes)]), cpu_backend(), arrays, optimize=False,
                     accept=accept)
    return False if program is None else program


_accepted = None  # whether the last `_build`'s plan was one kernel (under _lock)


def _unavailable() -> str | None:
    from .build import last_unavailable
    return last_unavailable


def c_type(dtype) -> str:
    """The C type of a hand-written kernel's float32 or float64 values."""
    return C_ARRAY_TYPES[np.dtype(dtype)]


def pointers(ffi, arrays: list) -> list:
    """Typed pointers to float arrays of one dtype, C-contiguous, for a hand-written kernel
    (the caller holds the arrays until the call returns)."""
    # (from_buffer: an ndarray's `.ctypes` builds a helper object per call, ~1.5 us an array,
    # which an LSTM cell of a time-series model paid for its six arrays every step)
    ptr = c_type(arrays[0].dtype) + "[]"
    return [ffi.from_buffer(ptr, a) for a in arrays]


def template_functions(template: str, ctx: dict, cdef: str, names: tuple):
    """([function per name], ffi) of a template kernel (templates/c/<template>) rendered with
    `ctx`, built and loaded through the kernel cache; None without a compiler (said once)."""
    from ..codegen import environment
    from .build import cannot_build
    from .cbuild import CompilerUnavailable, build
    source = environment("c").get_template(template).render(**ctx)
    try:
        lib = build(source, cdef)
    except CompilerUnavailable as e:
        cannot_build(e)
        return None
    return [lib.function(n) for n in names], lib.ffi


def _build_add_rows(dtype: np.dtype):
    """The row accumulation kernel for a dtype as a function of (out, rows, v, n, width);
    False without a compiler."""
    t = c_type(dtype)
    name = f"ft_add_rows_{t}"
    built = template_functions("add_rows.c.j2", dict(t=t, name=name),
                               f"void {name}({t}*, int64_t*, {t}*, long, long);", (name,))
    if built is None:
        return False
    (func,), ffi = built
    ptr = t + "*"

    def run(out, rows, v, n, width):
        func(ffi.cast(ptr, out.ctypes.data), ffi.cast("int64_t*", rows.ctypes.data),
             ffi.cast(ptr, v.ctypes.data), n, width)
    return run


def _build_scatter_add_last(dtype: np.dtype):
    """The scatter-add kernel for a dtype as a function of (out, index, src, rows, k,
    width); False without a compiler."""
    t = c_type(dtype)
    name = f"ft_scatter_add_last_{t}"
    built = template_functions("scatter_add_last.c.j2", dict(t=t, name=name),
                               f"void {name}({t}*, int64_t*, {t}*, long, long, long);",
                               (name,))
    if built is None:
        return False
    (func,), ffi = built
    ptr = t + "*"

    def run(out, index, src, rows, k, width):
        func(ffi.cast(ptr, out.ctypes.data), ffi.cast("int64_t*", index.ctypes.data),
             ffi.cast(ptr, src.ctypes.data), rows, k, width)
    return run


def _build_pool(x: np.ndarray, kernel, stride, padding, dilation, extra, out_hw, g=None,
                part=None):
    """The max pooling kernel for x's layout as a function of (x, values, indices) (None for
    the one `part` leaves out), or with a cotangent `g`'s layout the gradient's, of (x, g,
    gradient); False without a compiler."""
    import hashlib
    from ..codegen import render, template_nests
    from ..codegen.strategy import PARALLEL_WORK
    t = c_type(x.dtype)
    (kh, kw), (oh, ow) = kernel, out_hw
    pool = template_nests.Pool(
        shape=x.shape, strides=tuple(s // x.itemsize for s in x.strides), out_hw=out_hw,
        kernel=kernel, stride=stride, padding=padding, dilation=dilation, extra=extra,
        parallel=x.shape[0] * x.shape[1] * oh * ow * kh * kw >= PARALLEL_WORK,
        values=g is None and part != 1, indices=g is None and part != 0,
        grad_strides=None if g is None else tuple(0 if n == 1 else s // g.itemsize
                                                  for n, s in zip(g.shape, g.strides)))
    name = "ft_max_pool2d_" + hashlib.sha256(repr((t, pool)).encode()).hexdigest()[:12]
    ctx = dict(t=t, name=name, g=pool, loops=template_nests.max_pool_c(pool),
               pragmas=render.PRAGMAS)
    if g is not None:
        ctx["signature"] = f"const {t}* restrict in0, const {t}* restrict in1, {t}* restrict out0"
        built = template_functions("max_pool2d.c.j2", ctx,
                                   f"void {name}({t}* in0, {t}* in1, {t}* out0);", (name,))
        if built is None:
            return False
        (func,), ffi = built
        ptr = t + "*"

        def grad(a, b, out):
            func(ffi.cast(ptr, a.ctypes.data), ffi.cast(ptr, b.ctypes.data),
                 ffi.cast(ptr, out.ctypes.data))
        return grad
    ctx["signature"] = f"const {t}* restrict in0, {t}* restrict out0, int64_t* restrict out1"
    built = template_functions("max_pool2d.c.j2", ctx,
                               f"void {name}({t}* in0, {t}* out0, int64_t* out1);", (name,))
    if built is None:
        return False
    (func,), ffi = built
    ptr = t + "*"

    def run(a, values, where):
        func(ffi.cast(ptr, a.ctypes.data),
             ffi.NULL if values is None else ffi.cast(ptr, values.ctypes.data),
             ffi.NULL if where is None else ffi.cast("int64_t*", where.ctypes.data))
    return run
