"""`torch.nn.utils.skip_init`: a module built without its parameter initialization."""
from __future__ import annotations

import inspect

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs) -> Module:
    """`module_cls(*args, **kwargs)` whose parameters' values are unspecified, as PyTorch's
    (built on the meta device, then allocated uninitialized). fusetorch has no meta device, so
    the module is built on `device` directly and its values are whatever its initialization
    drew: code that relies on skip_init overwrites them all anyway."""
    if not issubclass(module_cls, Module):  # (a non-class: issubclass's TypeError, as PyTorch)
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
