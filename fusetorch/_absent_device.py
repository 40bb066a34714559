"""The namespace of a PyTorch device type fusetorch never has (`torch.mps`, `torch.xpu`,
`torch.mtia`): nothing is available, and anything that would use a device raises
OutOfScopeError naming it."""
from __future__ import annotations

from typing import Callable

from . import _out_of_scope


def namespace(device: str) -> tuple[Callable, Callable, Callable, Callable]:
    """(is_available, device_count, synchronize, module __getattr__) for `torch.<device>`."""
    def refuse(name: str):
        raise _out_of_scope.OutOfScopeError(
            f"fusetorch does not implement torch.{device}.{name}: devices other than CPU and "
            "CUDA are out of scope (see README)")

    def is_available() -> bool:
        return False

    def device_count() -> int:
        return 0

    def synchronize(device=None) -> None:
        refuse("synchronize")

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(name)
    return is_available, device_count, synchronize, __getattr__
