"""torch.set_num_threads / get_num_threads: one number for every pool of threads fusetorch runs
on, numpy's BLAS (matmul, convolution) and the OpenMP runtime of the compiled kernels.

threadpoolctl finds and sets the pools that are loaded now; OMP_NUM_THREADS covers an OpenMP
runtime that loads later (libgomp reads it when the first kernel library is opened).
"""
from __future__ import annotations

import builtins
import os

from threadpoolctl import threadpool_limits

_num_threads: int | None = None
_num_interop_threads: int | None = None


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
