"""`torch.ops`: operators by namespace. `torch.ops.aten.<name>` is fusetorch's `torch.<name>`
(any overload, `torch.ops.aten.add.Tensor`, names the same function, whose Python signature
accepts every overload's arguments); `torch.ops.<ns>.<op>` is a `torch.library.custom_op`
registered as "<ns>::<op>". Other namespaces' operators are not there: AttributeError."""
from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["aten"]

_CUSTOM: dict = {}  # "ns::op" -> the custom operator (torch.library.custom_op registers here)


class OpOverloadPacket:
    """An operator and its overloads (`.default`, `.Tensor`, ...: the same function)."""

    def __init__(self, qualname: str, fn: Callable) -> None:
        self._qualname, self._fn = qualname, fn
        self.__name__ = qualname.split("::")[-1]

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload: str):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def __repr__(self) -> str:
        return self._qualname.replace("::", ".")


class _OpNamespace:
    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op: str) -> OpOverloadPacket:
        if op.startswith("__"):
            raise AttributeError(op)
        qual = f"{self.name}::{op}"
        if qual in _CUSTOM:
            return OpOverloadPacket(qual, _CUSTOM[qual])
        if self.name == "aten":
            fn = getattr(importlib.import_module("fusetorch"), op, None)
            if fn is None:
                fn = getattr(importlib.import_module("fusetorch.nn.functional"), op, None)
            if callable(fn) and not isinstance(fn, type):
                return OpOverloadPacket(qual, fn)
        raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}'")


aten = _OpNamespace("aten")


def __getattr__(namespace: str) -> _OpNamespace:
    if namespace.startswith("__"):
        raise AttributeError(namespace)
    return _OpNamespace(namespace)
