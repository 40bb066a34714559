"""torch.set_num_threads / get_num_threads: one number for every pool of threads fusetorch runs
on, numpy's BLAS (matmul, convolution) and the OpenMP runtime of the compiled kernels; and
`matmul`, numpy's matmul on one BLAS thread when the product is small.

threadpoolctl finds and sets the pools that are loaded now; OMP_NUM_THREADS covers an OpenMP
runtime that loads later (libgomp reads it when the first kernel library is opened).

Why small products run on one thread: a threaded BLAS call hands half its work to a worker
thread and waits for it. On an idle machine that costs a few microseconds; with another
CPU-bound process on the cores, the worker often waits for the scheduler's next time slice
(milliseconds), so a 64x1000x100 training step took 100x its idle time. On an idle machine
the second thread still wins (~15% on that step), so the rule applies only while other
processes keep the cores busy: `others_busy` samples /proc/stat at most every 0.1 s and
subtracts this process's own CPU time (benchmarks/bench_busy.py measures both cases).

Large products take as many BLAS threads as there are cores the other processes leave free
(`free_cores`): OpenBLAS splits a product into equal parts, one per thread, and waits for the
last, so a part whose thread shares a core with another process's finishes late, and the
threads that wait for it spin. With others keeping ~1.3 of 2 cores busy, the 512x4096x1024x10
training step took 130 ms on two BLAS threads and 67 ms on one (median wall; CPU time 97 vs
64 ms), its 2-GFLOP products 51 vs 30 ms each (best wall).
"""
from __future__ import annotations

import builtins
import contextlib
import ctypes
import itertools
import math
import os
import threading
import time
import warnings

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_limits

_num_threads: int | None = None
_num_interop_threads: int | None = None


def _env_flops(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        value = int(float(raw)) if raw else default
    except ValueError:  # (a tuning knob: a typo warns rather than stops the import)
        value = -1
    if value < 0:
        warnings.warn(f"{name}={raw!r} is not a number of operations >= 0; using {default}",
                      stacklevel=2)
        return default
    return value


# A product (one matrix of a batch) of fewer floating-point operations (2*m*k*n) than this runs
# on one BLAS thread while other processes keep the cores busy; larger ones on the BLAS's own
# count (set by set_num_threads, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS), or fewer where the
# others leave fewer cores free (`free_cores`). 0 turns both rules off.
SERIAL_FLOPS: int = _env_flops("FUSETORCH_BLAS_SERIAL_FLOPS", 64_000_000)
# A product of fewer floating-point operations than this runs on one BLAS thread even on an idle
# machine: threaded, it saves less than the BLAS's workers then cost by spinning ~0.1 s on the
# other core, where OpenMP's C kernels would run (runtime/conv.py keeps to one thread meanwhile:
# a LeNet step, whose Linear products are 6 MFLOP, took 5.9-6.2 ms so, 4.7-5.3 ms with them on
# one thread and its convolutions on two). 0 turns it off.
ALWAYS_SERIAL_FLOPS: int = _env_flops("FUSETORCH_BLAS_ALWAYS_SERIAL_FLOPS", 8_000_000)
# At or below this many multiply-adds OpenBLAS runs one thread by itself (its
# GEMM_MULTITHREAD_THRESHOLD * SMP_THRESHOLD_MIN): nothing to set, so nothing is spent.
_BLAS_SERIAL_BY_ITSELF = 4 * 65536


def _default() -> int:
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _positive_int(name: str, n) -> int:
    if isinstance(n, builtins.bool) or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(n: int) -> None:
    """Use `n` threads for intra-op parallelism (BLAS and the compiled kernels).

    >>> torch.set_num_threads(1); torch.get_num_threads()
    1
    """
    global _num_threads
    _num_threads = _positive_int("set_num_threads", n)
    os.environ["OMP_NUM_THREADS"] = str(n)
    threadpool_limits(limits=n)  # kept after the call: the limits are not a context here


def get_num_threads() -> int:
    """The number of threads for intra-op parallelism."""
    return _num_threads if _num_threads is not None else _default()


def set_num_interop_threads(n: int) -> None:
    """Kept for PyTorch scripts: fusetorch runs independent ops one after another (no
    inter-op pool), so the number is only recorded."""
    global _num_interop_threads
    _num_interop_threads = _positive_int("set_num_interop_threads", n)


def get_num_interop_threads() -> int:
    return _num_interop_threads if _num_interop_threads is not None else _default()


# ------------------------------------------------------------------ BLAS threads per product

def _openblas_functions(controller) -> tuple | None:
    """OpenBLAS's own get/set functions (~0.3 us a call; threadpoolctl's controller methods
    take ~1.4 us, `threadpool_limits` ~400 us as it lists the loaded libraries). Only for its
    pthreads layer: with OpenMP the count is per calling thread, which the controller handles."""
    if getattr(controller, "threading_layer", None) != "pthreads":
        return None
    lib = ctypes.CDLL(controller.filepath)
    for prefix, suffix in itertools.product(("", "scipy_"), ("", "64_", "_64")):
        get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
        put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
        if get is not None and put is not None:
            get.argtypes, get.restype = [], ctypes.c_int
            put.argtypes, put.restype = [ctypes.c_int], None
            return get, put
    return None


def _find_blas() -> list:
    """(get, set) for each BLAS numpy may call: found once, at the first product that needs it."""
    found = []
    for c in ThreadpoolController().select(user_api="blas").lib_controllers:
        fns = _openblas_functions(c) if c.internal_api == "openblas" else None
        found.append(fns or (c.get_num_threads, c.set_num_threads))
    return found


_blas: list | None = None


# ------------------------------------------------------------------ is anyone else running?

LOAD_WINDOW = 0.1  # seconds between two samples of the machine's CPU counters
BUSY_CORES = 0.5   # others using more than this many cores (averaged over a window) is busy
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# (time of the last sample, busy CPU seconds of all cores then, this process's CPU seconds
# then, the cores others kept busy over the window before it, None without a window) -- None
# until the first sample
_sample: list | None = None


def _machine_busy_seconds() -> float | None:
    """CPU seconds all cores spent busy since boot (/proc/stat), or None where unreadable."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        return None
    ticks = [int(x) for x in fields[1:9]]
    return (sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)) / _TICK  # - idle, iowait


def others_cores(busy0: float, own0: float, t0: float, busy1: float, own1: float,
                 t1: float) -> float:
    """How many cores other processes kept busy on average between two samples: the whole
    machine's busy time less this process's own CPU time (its BLAS workers spinning included)."""
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / max(t1 - t0, 1e-9)


def _others_now() -> float | None:
    """The cores other processes kept busy over the last window (a new sample once LOAD_WINDOW
    has passed), or None before a first window or where /proc/stat is unreadable."""
    global _sample
    now = time.monotonic()
    if _sample is not None and now - _sample[0] < LOAD_WINDOW:
        return _sample[3]
    busy, own = _machine_busy_seconds(), time.process_time()
    others = None
    if busy is not None and _sample is not None and _sample[1] is not None:
        others = others_cores(_sample[1], _sample[2], _sample[0], busy, own, now)
    _sample = [now, busy, own, others]
    return others


def others_busy() -> bool:
    """Whether other processes keep more than BUSY_CORES cores busy, from the last window (busy
    before a first window and without /proc/stat: the safe side)."""
    others = _others_now()
    return others is None or others > BUSY_CORES


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def free_cores() -> int | None:
    """The cores this process may run on that other processes leave free, rounded, at least 1
    (/proc/stat counts every core of the machine; this process may be bound to fewer); None
    before a first window or without /proc/stat, where nothing is known."""
    others = _others_now()
    if others is None:
        return None
    free = min(_cores(), (os.cpu_count() or 1) - others)
    return max(1, int(free + 0.5))


def blas_limit(flops: float) -> int | None:
    """The most BLAS threads for a call of `flops` floating-point operations per matrix: 1
    below ALWAYS_SERIAL_FLOPS, and below SERIAL_FLOPS while other processes keep the cores
    busy; above, the cores they leave free; None where that is the BLAS's own count or more,
    or nothing is known (an idle machine, the first call), or SERIAL_FLOPS is 0 (the load's
    rule off for every size)."""
    if flops < ALWAYS_SERIAL_FLOPS or flops < SERIAL_FLOPS and others_busy():
        return 1
    if not SERIAL_FLOPS:
        return None
    free = free_cores()
    return free if free is not None and free < get_num_threads() else None


# Held by the call that has lowered the BLAS's counts until it puts them back: a call in
# another thread meanwhile leaves them as they are, so none saves a lowered count as the one
# to restore (with limits other than 1, a count lowered to 3 read by a call lowering to 2
# would otherwise stay 3)
_lowering = threading.Lock()


def _matmul_on(a, b, limit: int):
    """np.matmul(a, b) with every BLAS on at most `limit` threads (inline, not `_limited`: a
    small product's whole cost is a few microseconds)."""
    global _blas
    if _blas is None:
        _blas = _find_blas()
    if not _lowering.acquire(blocking=False):
        return np.matmul(a, b)  # (on the counts the other call set)
    try:
        # each BLAS's count now (the user's or set_num_threads'), put back after: numpy code
        # around fusetorch keeps its threads
        saved = [(put, n) for get, put in _blas if (n := get() or 1) > limit]
        for put, _ in saved:
            put(limit)
        try:
            return np.matmul(a, b)
        finally:
            for put, n in saved:
                put(n)
    finally:
        _lowering.release()


def matmul(a, b):
    """np.matmul(a, b), on the BLAS threads `blas_limit` allows one matrix product of it
    (numpy calls the BLAS once per matrix of a batch)."""
    sa, sb = a.shape, b.shape
    if len(sa) > 2 and len(sb) == 2:
        # a stack of matrices times one matrix is one product of all their rows: numpy would
        # call the BLAS once per matrix (an LSTM's input projection over 50 steps of 16 rows:
        # 1.6 ms as 50 products, ~0.1 ms as one); a strided stack is copied first
        rows = a.reshape(math.prod(sa[:-1]), sa[-1])
        return matmul(rows, b).reshape(sa[:-1] + sb[-1:])
    if len(sa) and len(sb):
        mnk = (sa[-2] if len(sa) > 1 else 1) * sa[-1] * (sb[-1] if len(sb) > 1 else 1)
        if _BLAS_SERIAL_BY_ITSELF < mnk:
            limit = blas_limit(2 * mnk)
            if limit != 1:
                global last_threaded_product
                last_threaded_product = time.monotonic()
            if limit is not None:
                return _matmul_on(a, b, limit)
    return np.matmul(a, b)


_lapack_blas: list | None = None


@contextlib.contextmanager
def _limited(libs: list, limit: int):
    if not _lowering.acquire(blocking=False):  # (another call has lowered them: as it set)
        yield
        return
    try:
        saved = [(put, n) for get, put in libs if (n := get() or 1) > limit]
        for put, _ in saved:
            put(limit)
        try:
            yield
        finally:
            for put, n in saved:
                put(n)
    finally:
        _lowering.release()


def lapack_threads(flops: float):
    """A context for LAPACK/BLAS calls through scipy (ir/linalg_factor_ops.py) of about `flops`
    floating-point operations per matrix: the BLAS threads of matmul's rule (`blas_limit`). A
    triangular solve of 256x256 by 8 columns took 29 ms on two threads of a busy machine,
    ~0.3 ms on one. The libraries are listed at the first such call, after scipy's own
    OpenBLAS has loaded."""
    global _lapack_blas
    limit = blas_limit(flops)
    if limit is None:
        return contextlib.nullcontext()
    if _lapack_blas is None:
        _lapack_blas = _find_blas()
    return _limited(_lapack_blas, limit)


# When the BLAS last ran a product it may thread (time.monotonic()): its worker threads then
# spin waiting for more (~0.1 s by default; see _blas_spin), on the cores OpenMP's workers
# would use, so the C kernels that could share their work (`kernel_threads`: convolutions,
# LSTM layers) keep to one thread meanwhile: beside the spinning worker a second OpenMP thread
# gained 7% on a convolution that it ran 1.9x faster with the BLAS on one thread.
last_threaded_product = float("-inf")


def _blas_spin() -> float:
    """Seconds after a threaded product during which OpenBLAS's workers still spin, for the C
    kernels to wait out: its default 2^28 cycles (~0.1 s measured here), unless
    OPENBLAS_THREAD_TIMEOUT (fusetorch sets 20 where it is imported before numpy) makes it at
    most 2^20 (~0.4 ms at 2.5 GHz): then none, as the workers sleep early in any kernel
    large enough to get threads (an LSTM layer's recurrence, 1-2 ms)."""
    value = os.environ.get("OPENBLAS_THREAD_TIMEOUT", "").strip()
    return 0.0 if value.isdigit() and int(value) <= 20 else 0.1


BLAS_SPIN = _blas_spin()

# From this many multiply-adds a C kernel that can share its work runs on OpenMP's threads (a
# parallel region whose workers slept costs ~10-25 us here; LeNet's layers are 7.5-15 million)
PARALLEL_FMAS = 2_000_000


def kernel_threads(fmas: int) -> int:
    """The thread count for a C kernel of `fmas` multiply-adds (a convolution, an LSTM layer's
    recurrence): fusetorch's own from PARALLEL_FMAS on an idle machine, else 1: while other
    processes keep the cores busy a worker waits for its turn on one (`others_busy`, the rule
    of the BLAS's small products), and while the BLAS's workers spin after a product they got
    (`last_threaded_product`)."""
    threads = get_num_threads()
    if threads <= 1 or fmas < PARALLEL_FMAS or others_busy() or \
            time.monotonic() - last_threaded_product < BLAS_SPIN:
        return 1
    return threads
