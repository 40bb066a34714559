"""glibc's heap kept between training steps: `keep_heap`, run once at import.

A training step frees and reallocates the same large arrays every call (a LeNet step: four
1.2 MB activations). glibc returns the free top of its heap to the kernel once it exceeds a
trim threshold that it adjusts by itself (to twice the largest mmapped chunk freed so far, up
to 64 MiB), and which a process reaches only by the accident of what it freed before: in one
process the eager LeNet step ran without a page fault until the same step had run compiled
three times, and from then on grew and shrank the heap by 4.7 MB every step (1144 minor page
faults, 2.4 ms of system time on a 5.4 ms step). Fixing both thresholds at the values glibc's
own adjustment ends at (mmap from 32 MiB) makes that state the starting one: allocations below
32 MiB reuse the heap. The trim threshold is 256 MiB, above glibc's 64: a step whose memory
swings by more than the threshold between its peak and its end (a compiled nanoGPT step, once
its saved activations shrank to PyTorch's: ~0.3 GB) gave the top of the heap back at every
step and faulted it in again (2940 minor faults and 0.18 s of system time a step at 64 MiB,
456 and 0.02 s at 256 MiB, CPU time 3.1-3.3 s -> 2.8). Trimming less keeps more free memory
mapped between steps, never more than the peak a step reached.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
TRIM_THRESHOLD = 256 << 20  # (see above: glibc's dynamic rule would set 64 MiB)

# the user's own malloc settings, which are left as they are
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_")

applied = False  # whether keep_heap set the thresholds in this process


def user_configured(environ=os.environ) -> bool:
    """Whether the environment already tunes glibc's malloc (its MALLOC_*_ variables or a
    glibc.malloc tunable)."""
    return any(environ.get(k) for k in _USER_SETTINGS) or \
        "glibc.malloc." in environ.get("GLIBC_TUNABLES", "")


def keep_heap() -> bool:
    """Set glibc's mmap and trim thresholds (above) unless the user tuned malloc or the C
    library is not glibc; True where they were set."""
    global applied
    if applied or not sys.platform.startswith("linux") or user_configured():
        return applied
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt  # (musl has none: AttributeError)
        libc.gnu_get_libc_version  # glibc's own symbol: other C libraries read mallopt apart
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return applied
