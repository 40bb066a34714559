"""`torch.typename`, which PyTorch's error messages quote: a tensor by its legacy type name
(`torch.FloatTensor`), anything else by its qualified class name (fusetorch's as torch's)."""
from __future__ import annotations

from .tensor import Tensor


def typename(obj) -> str:
    """`torch.FloatTensor` for a tensor, else the object's qualified class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__ or module
    name = cls.__qualname__
    if module in ("builtins", "__builtin__") or not module:
        return name
    return f"{module.replace('fusetorch', 'torch', 1)}.{name}"
