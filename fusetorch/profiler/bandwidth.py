"""The machine's copy bandwidth: the ceiling a kernel's GB/s is measured against.

`copy_bandwidth()` is the best of several timed numpy copies, in bytes read plus bytes written
per second, as kernel rows count their inputs plus outputs. So that it is a real ceiling:
- the working set (source and destination) is at least four times the last-level cache (and
  at least 128 MiB), so no part of the copy runs from cache; a 64 MiB copy next to a 32 MiB
  L3 used to read low and let kernels show 105-180%;
- it is the best of `REPEAT` copies, on one thread and split over every core the process may
  run on (kernels run OpenMP loops on several), taken in three rounds a little apart, so a
  moment of load from other processes does not set it;
- it is re-measured when a kernel whose bytes per call exceed the cache beats it (a table or
  trace asks `ceiling(observed)`), and if the kernel still beats the new measurement, the
  kernel's figure is the ceiling: a number measured under load does not stay wrong forever.
Kept in memory and in `<kernel cache>/profiler/copy_bandwidth.json` with the time it was
measured (shown in every table footer), read and written through `cbuild`'s checked cache
directory (only a file that only this user can have written is read; JSON, range-checked, never
code). A missing, foreign, damaged, older-format or unreadable file just means measuring again.
Re-measure by hand with `fusetorch.profiler.copy_bandwidth(refresh=True)` or
`python -m fusetorch.profiler.bandwidth`.
"""
from __future__ import annotations

import json
import os
import platform
import threading
import time

import numpy as np

MIN_NBYTES = 128 << 20  # bytes of the copied array at least (the working set is twice that)
REPEAT = 4  # copies per round and way (one thread, every core); three rounds
ROUNDS = 3
_FILE = "copy_bandwidth.json"
_VERSION = 2  # 1: 64 MiB, one way, no time: measured too low where it ran under load
_measured: dict | None = None  # {"gbps", "measured_at", "nbytes", "how"}
_remeasured = False  # once per process, when a kernel beat the figure
_lock = threading.Lock()


def copy_bandwidth(refresh: bool = False) -> float:
    """GB/s (1e9 bytes per second, read + written) of a large copy on this machine: the best of
    several on one thread and on every core, over a working set larger than the last-level
    cache. `refresh=True` measures again (and stores the new figure)."""
    return _entry(refresh)["gbps"]


def measured_at() -> str:
    """When the figure `copy_bandwidth()` gives was measured (UTC), or by what."""
    return _entry(False)["measured_at"]


def ceiling(observed_gbps: float, bytes_per_call: float) -> float:
    """The copy bandwidth, given that a kernel moving `bytes_per_call` ran at `observed_gbps`:
    a kernel beating the figure over more than the cache holds means the figure was measured
    low (under load): measure again, once per process, and never report less than such a
    kernel reached."""
    global _measured, _remeasured
    entry = _entry(False)
    if observed_gbps <= entry["gbps"] or bytes_per_call < cache_bytes():
        return entry["gbps"]
    with _lock:
        again = not _remeasured
        _remeasured = True
    if again:
        entry = _entry(True)
    if observed_gbps > entry["gbps"]:
        entry = dict(entry, gbps=float(observed_gbps), how="a kernel's rate",
                     measured_at=_now())
        _measured = entry
        _write(_machine(), entry)
    return entry["gbps"]


def describe() -> str:
    """The footer line of profiler tables."""
    e = _entry(False)
    how = e.get("how") or "numpy copies"
    return (f"Copy bandwidth: {e['gbps']:.2f} GB/s ({how}, best of several, working set "
            f"{_mib(2 * e['nbytes'])}: bytes read + written per second, as a kernel's GB/s "
            f"counts; measured {e['measured_at']}; re-measure: "
            "fusetorch.profiler.copy_bandwidth(refresh=True))")


def cache_bytes() -> int:
    """The largest CPU cache (the last level) in bytes, from sysfs; 32 MiB where unknown."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        try:
            with open(os.path.join(base, name, "size")) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
        digits = text[:-1] if scale != 1 else text
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 32 << 20


def working_set_nbytes() -> int:
    """Bytes of the array copied: the source and destination together span at least four
    times the last-level cache."""
    return max(MIN_NBYTES, 2 * cache_bytes())


def measure(nbytes: int | None = None, repeat: int = REPEAT, rounds: int = ROUNDS) -> float:
    """The best GB/s (read + written) of `rounds` x `repeat` copies of `nbytes`, each way."""
    nbytes = working_set_nbytes() if nbytes is None else nbytes
    src = np.ones(max(nbytes // 8, 1))
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault every page in first
    workers = _cores()
    best = float("inf")
    for r in range(rounds):
        if r:
            time.sleep(0.02)  # apart: a burst of load elsewhere spoils one round, not all
        for _ in range(repeat):
            best = min(best, _timed(np.copyto, dst, src))
        if workers > 1:
            for _ in range(repeat):
                best = min(best, _parallel_copy(dst, src, workers))
    return 2 * src.nbytes / best / 1e9


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _parallel_copy(dst: np.ndarray, src: np.ndarray, workers: int) -> float:
    """Seconds for `workers` threads to copy one slice each (numpy's copy releases the GIL),
    from a common start to the last one's end."""
    bounds = np.linspace(0, src.size, workers + 1).astype(int)
    start = threading.Barrier(workers + 1)
    ends = [0.0] * workers

    def run(i):
        start.wait()
        np.copyto(dst[bounds[i]:bounds[i + 1]], src[bounds[i]:bounds[i + 1]])
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return max(ends) - t0


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"


def _entry(refresh: bool) -> dict:
    global _measured
    if _measured is not None and not refresh:
        return _measured
    key = _machine()
    entry = None if refresh else _read(key)
    if entry is None:
        nbytes = working_set_nbytes()
        entry = {"gbps": measure(nbytes), "measured_at": _now(), "nbytes": nbytes,
                 "how": "numpy copies"}
        _write(key, entry)
    _measured = entry
    return entry


def _machine() -> str:
    from ..runtime.cbuild import _cpu_id
    return f"{_cpu_id()}:{platform.node()}"


def _read(key: str) -> dict | None:
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
    gbps, when, nbytes = entry.get("gbps"), entry.get("measured_at"), entry.get("bytes")
    how = entry.get("how", "numpy copies")
    if type(gbps) not in (int, float) or not 0.01 <= gbps <= 1e5:
        return None
    if not isinstance(when, str) or len(when) > 40 or type(nbytes) is not int or nbytes <= 0 \
            or how not in ("numpy copies", "a kernel's rate"):
        return None
    return {"gbps": float(gbps), "measured_at": when, "nbytes": nbytes, "how": how}


def _write(key: str, entry: dict) -> None:
    from ..runtime import cbuild
    data = json.dumps({"version": _VERSION, "machine": key, "gbps": entry["gbps"],
                       "measured_at": entry["measured_at"], "bytes": entry["nbytes"],
                       "how": entry["how"]}).encode()
    try:
        with cbuild.open_cache() as cache:
            cache.write(cache.subdir("profiler"), _FILE, data)
    except OSError:
        pass  # kept in memory for this process


def main() -> None:
    """`python -m fusetorch.profiler.bandwidth`: measure again, store, print."""
    gbps = copy_bandwidth(refresh=True)
    print(f"{gbps:.2f} GB/s, measured {measured_at()} (working set "
          f"{_mib(2 * working_set_nbytes())})")


if __name__ == "__main__":
    main()
