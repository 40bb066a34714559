"""`fusetorch.accelerator`: PyTorch's device-generic accelerator API over the one accelerator
fusetorch has, CUDA through cupy. Current tutorials and examples (the Quickstart,
examples/mnist) choose their device with it:
`torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"`.
"""
from __future__ import annotations

from . import cuda as _cuda
from .runtime.device import device as _device

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """True when there is a device to run on (cupy imports and sees a GPU)."""
    return _cuda.is_available()


def device_count() -> int:
    return _cuda.device_count() if _cuda.is_available() else 0


def current_accelerator(check_available: bool = False) -> _device | None:
    """`device('cuda')`, or None without one. PyTorch names the accelerator its build was made
    for even where no device is present (unless check_available); fusetorch's CUDA support
    exists only where cupy sees a GPU, so both forms agree here."""
    return _device("cuda") if _cuda.is_available() else None


def _require() -> None:
    if not _cuda.is_available():
        raise RuntimeError(_NONE)


def current_device_index() -> int:
    _require()
    return _cuda.current_device()


def synchronize(device=None) -> None:
    """Wait for every kernel queued on the accelerator (an index, 'cuda:i' or a device)."""
    _require()
    _cuda.synchronize(device)
