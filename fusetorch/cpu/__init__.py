"""`fusetorch.cpu`: the CPU device module (`torch.cpu`): always available, one device."""
from __future__ import annotations

from . import amp  # noqa: F401


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work is done when its call returns."""
