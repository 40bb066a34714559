"""The machine's copy bandwidth: what a kernel's GB/s is measured against.

`copy_bandwidth()` times numpy copying 64 MiB (best of 10, after one copy that faults the pages
in) and counts bytes read plus bytes written per second, as kernel rows count their inputs
plus outputs. Measured once per machine: the number is kept in memory and in
`<kernel cache>/profiler/copy_bandwidth.json`, read and written through `cbuild`'s checked cache
directory (only a file that only this user can have written is read; it is JSON holding one
number, range-checked, never code). A missing, foreign, damaged or unreadable file just means
measuring again.
"""
from __future__ import annotations

import json
import platform
import time

import numpy as np

NBYTES = 64 << 20
_FILE = "copy_bandwidth.json"
_VERSION = 1
_measured: float | None = None


def copy_bandwidth(refresh: bool = False) -> float:
    """GB/s (1e9 bytes per second, read + written) of a large numpy copy on this machine."""
    global _measured
    if _measured is not None and not refresh:
        return _measured
    key = _machine()
    gbps = None if refresh else _read(key)
    if gbps is None:
        gbps = measure()
        _write(key, gbps)
    _measured = gbps
    return gbps


def measure(nbytes: int = NBYTES, repeat: int = 10) -> float:
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault every page in first
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best / 1e9


def _machine() -> str:
    from ..runtime.cbuild import _cpu_id
    return f"{_cpu_id()}:{platform.node()}"


def _read(key: str) -> float | None:
    from ..runtime import cbuild
    try:
        with cbuild.open_cache() as cache:
            data = cache.read(cache.subdir("profiler"), _FILE)
    except OSError:
        return None
    if not data or len(data) > 4096:
        return None
    try:
        entry = json.loads(data)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("version") != _VERSION \
            or entry.get("machine") != key:
        return None
    gbps = entry.get("gbps")
    if type(gbps) not in (int, float) or not 0.01 <= gbps <= 1e5:
        return None
    return float(gbps)


def _write(key: str, gbps: float) -> None:
    from ..runtime import cbuild
    data = json.dumps({"version": _VERSION, "machine": key, "gbps": gbps,
                       "bytes": NBYTES}).encode()
    try:
        with cbuild.open_cache() as cache:
            cache.write(cache.subdir("profiler"), _FILE, data)
    except OSError:
        pass  # kept in memory for this process
