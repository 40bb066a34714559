"""`torch.xpu`: fusetorch runs on CPU and CUDA only, so no xpu device is ever available
(`is_available()` is False, `device_count()` 0); what would use one raises
OutOfScopeError."""
from __future__ import annotations

from ._absent_device import namespace

__all__ = ["device_count", "is_available", "synchronize"]

is_available, device_count, synchronize, __getattr__ = namespace("xpu")
