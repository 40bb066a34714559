"""`safetensors.torch`-style helpers: `save_file(tensors, filename, metadata=None)`,
`load_file(filename, device="cpu")`, `save(tensors, metadata=None) -> bytes`, `load(data)`.
Loading needs no package; saving needs `safetensors` (`pip install fusetorch[safetensors]`)."""
from __future__ import annotations

import io
import os

from ..checkpoint_formats import safetensors_io as _io
from ..tracer.tensor import Tensor

__all__ = ["save_file", "load_file", "save", "load"]


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike,
              metadata: dict[str, str] | None = None) -> None:
    """Write contiguous copies of `tensors` (str -> Tensor) to a .safetensors file."""
    _io.save_file(tensors, filename, metadata)


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a .safetensors file holding `tensors`."""
    return _io.save(tensors, metadata)


def load_file(filename: str | os.PathLike, device: str = "cpu") -> dict[str, Tensor]:
    """The tensors of a .safetensors file (all views of one buffer read from it)."""
    out = _io.load_tensors(filename, name=repr(os.fspath(filename)))
    return out if str(device) == "cpu" else {k: v.to(device) for k, v in out.items()}


def load(data: bytes) -> dict[str, Tensor]:
    """The tensors of a .safetensors file's bytes."""
    return _io.load_tensors(io.BytesIO(data))
