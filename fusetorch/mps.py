"""`torch.mps`: fusetorch runs on CPU and CUDA only, so no mps device is ever available
(`is_available()` is False, `device_count()` 0); what would use one raises
OutOfScopeError."""
from __future__ import annotations

from . import _out_of_scope

__all__ = ["device_count", "is_available", "synchronize"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def synchronize(device=None) -> None:
    _refuse("synchronize")


def _refuse(name: str):
    raise _out_of_scope.OutOfScopeError(
        f"fusetorch does not implement torch.mps.{name}: devices other than CPU and CUDA are "
        "out of scope (see README)")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    _refuse(name)
