"""Devices and the backend behind each: its array module, its eager op table, its dtypes.

`cpu` is numpy and always present. `cuda` is cupy, imported only when a CUDA device is asked for,
so that nothing here needs cupy installed.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt

NP_DTYPES = {
    dt.bool_: np.dtype(np.bool_), dt.uint8: np.dtype(np.uint8), dt.int8: np.dtype(np.int8),
    dt.int16: np.dtype(np.int16), dt.int32: np.dtype(np.int32), dt.int64: np.dtype(np.int64),
    dt.float16: np.dtype(np.float16), dt.float32: np.dtype(np.float32),
    dt.float64: np.dtype(np.float64),
}
FROM_NP = {v: k for k, v in NP_DTYPES.items()}


def dtype_from_numpy(npdt) -> dt.DType:
    """The fusetorch dtype of a numpy dtype; TypeError for the ones PyTorch cannot hold."""
    try:
        return FROM_NP[np.dtype(npdt)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(npdt).name}. The only supported "
            "types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


class device:
    """`fusetorch.device('cuda:0')`: a device type and an optional index, as in PyTorch."""

    __slots__ = ("type", "index")

    def __init__(self, type: "str | device", index: int | None = None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int):
            type, index = "cuda", type
        elif ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                               f"string: {type}")
        self.type = type
        self.index = index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


class Backend:
    """What runs ops on one device: the array module and its eager implementations."""

    def __init__(self, dev: device, xp, impl: dict):
        self.device = dev
        self.xp = xp
        self.impl = impl

    def __repr__(self) -> str:
        return f"<Backend {self.device}>"


_BACKENDS: dict = {}


def cpu_backend() -> Backend:
    return _BACKENDS["cpu"]


def _make_cpu() -> Backend:
    from .eager import make_table
    return Backend(device("cpu"), np, make_table(np))


def _cupy():
    """cupy if it imports and sees a GPU, else None (the cuda extra is optional)."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no cupy, no driver, no device: all mean "no CUDA"
        return None
    return None


def cuda_available() -> bool:
    return _cupy() is not None


def backend(dev) -> Backend:
    """The backend of a device (given as `device`, string or None for the CPU), created once."""
    if dev is None:
        return _BACKENDS["cpu"]
    key = str(dev) if not isinstance(dev, str) else dev
    b = _BACKENDS.get(key)
    if b is not None:
        return b
    d = device(key)
    if d.type == "cpu":
        b = _BACKENDS["cpu"]
    else:
        # the CUDA backend lives here: cupy arrays with the same eager table (issue: CUDA device)
        cp = _cupy()
        if cp is None:
            raise RuntimeError("CUDA is not available: no NVIDIA GPU was found or cupy is not "
                               "installed (pip install 'fusetorch[cuda]')")
        from .eager import make_table
        d = device("cuda", d.index or 0)
        b = Backend(d, cp, make_table(cp))
    _BACKENDS[key] = b
    return b


_BACKENDS["cpu"] = _make_cpu()
