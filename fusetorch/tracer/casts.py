"""Tensor's dtype casts by name, `x.float()`, `x.long()`, `x.bool()`, ...: one def each, with
PyTorch's signature (in a module of their own: their names are Python's builtins)."""
from __future__ import annotations

from ..ir import dtypes as dt
from . import dispatch as D
from . import memory_formats as _mf
from .tensor import Tensor


_PRESERVE = _mf.preserve_format


def _cast(self: Tensor, dtype: dt.DType, memory_format) -> Tensor:
    """The cast in another memory format (None is the default's old spelling)."""
    if memory_format is None:
        return D.cast(self, dtype)
    return self.to(dtype, memory_format=memory_format)


def float(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """float(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.float32)`: the tensor itself where it is float32 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.float32)
    return _cast(self, dt.float32, memory_format)


def double(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """double(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.float64)`: the tensor itself where it is float64 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.float64)
    return _cast(self, dt.float64, memory_format)


def half(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """half(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.float16)`: the tensor itself where it is float16 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.float16)
    return _cast(self, dt.float16, memory_format)


def bfloat16(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """bfloat16(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.bfloat16)`: the tensor itself where it is bfloat16 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.bfloat16)
    return _cast(self, dt.bfloat16, memory_format)


def long(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """long(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.int64)`: the tensor itself where it is int64 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.int64)
    return _cast(self, dt.int64, memory_format)


def int(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """int(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.int32)`: the tensor itself where it is int32 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.int32)
    return _cast(self, dt.int32, memory_format)


def short(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """short(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.int16)`: the tensor itself where it is int16 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.int16)
    return _cast(self, dt.int16, memory_format)


def char(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """char(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.int8)`: the tensor itself where it is int8 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.int8)
    return _cast(self, dt.int8, memory_format)


def byte(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """byte(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.uint8)`: the tensor itself where it is uint8 already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.uint8)
    return _cast(self, dt.uint8, memory_format)


def bool(self: Tensor, memory_format=_PRESERVE) -> Tensor:
    """bool(memory_format=torch.preserve_format) -> Tensor

    `self.to(torch.bool)`: the tensor itself where it is bool already."""
    if memory_format is _PRESERVE:
        return D.cast(self, dt.bool_)
    return _cast(self, dt.bool_, memory_format)


Tensor.float, Tensor.double, Tensor.half, Tensor.bfloat16 = float, double, half, bfloat16
Tensor.long, Tensor.int, Tensor.short, Tensor.char, Tensor.byte = long, int, short, char, byte
Tensor.bool = bool
