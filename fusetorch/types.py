"""`torch.types`: the type aliases PyTorch's annotations use."""
from __future__ import annotations

import os
from typing import IO, Any, Sequence, Union

from .ir.dtypes import DType as _dtype
from .runtime.device import device as _device
from .storage import TypedStorage, UntypedStorage
from .tracer.tensor import Size, Tensor

Number = Union[int, float, bool]
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
SymInt, SymFloat, SymBool = int, float, bool  # (no symbolic shapes: plain Python numbers)
py_sym_types = (SymInt, SymFloat, SymBool)
Device = Union[_device, str, int, None]
Storage = Union[TypedStorage, UntypedStorage]
FileLike = Union[str, os.PathLike, IO[bytes]]
__all__ = ["Any", "BoolLikeType", "Device", "FileLike", "FloatLikeType", "IntLikeType",
           "Number", "Sequence", "Size", "Storage", "SymBool", "SymFloat", "SymInt", "Tensor",
           "py_sym_types", "_dtype"]
