"""`torch.cuda.nvtx`: NVTX ranges for profilers (cupy's, where it has them; else nothing)."""
from __future__ import annotations

import contextlib

from ..runtime import device as _dev


def _nvtx():
    cp = _dev._cupy()
    return getattr(getattr(cp, "cuda", None), "nvtx", None) if cp is not None else None


def range_push(msg: str) -> int:
    n = _nvtx()
    if n is not None:
        n.RangePush(msg)
    return 0


def range_pop() -> int:
    n = _nvtx()
    if n is not None:
        n.RangePop()
    return 0


def mark(msg: str) -> None:
    n = _nvtx()
    if n is not None:
        n.Mark(msg)


@contextlib.contextmanager
def range(msg: str, *args, **kwargs):
    """`with torch.cuda.nvtx.range("step"):`: a named range around the block."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
