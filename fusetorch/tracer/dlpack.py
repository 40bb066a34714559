"""DLPack: tensors to and from other array libraries without copying (numpy, PyTorch, JAX,
cupy, ...), as `torch.from_dlpack`, `Tensor.__dlpack__`, `torch.utils.dlpack`.

    t = fusetorch.from_dlpack(np_array)      # shares the array's memory
    a = np.from_dlpack(t)                    # shares the tensor's memory
    t2 = torch_real.from_dlpack(t)           # PyTorch, JAX, cupy: the same protocol

CPU tensors travel through numpy's own DLPack support (numpy >= 2.1: capsules, deleters,
strides, the read-only flag); bfloat16, which numpy's DLPack refuses, is carried as uint16 with
the capsule's dtype rewritten (`dlpack_capsule`). CUDA tensors go through cupy. The rules are
PyTorch's: a tensor that requires grad is not exported (BufferError), imports share memory, and
fusetorch's own layout rule holds: negative strides (which DLPack allows) are refused, as by
`from_numpy` (DLPack strides count elements, so they are always whole elements).
"""
from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from ..runtime import device as _dev
from . import dlpack_capsule as cap
from .tensor import Tensor, _data_read


class DLDeviceType(enum.IntEnum):
    """Device types as in DLPack's `dlpack.h` (PyTorch's `torch.utils.dlpack.DLDeviceType`)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_HOST = (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost, DLDeviceType.kDLROCMHost,
         DLDeviceType.kDLCUDAManaged)  # memory numpy can read
_GPU = (DLDeviceType.kDLCUDA,)


# ---------------------------------------------------------------- export

def dlpack_device(t: Tensor) -> tuple:
    """`Tensor.__dlpack_device__()`: (DLDeviceType, index)."""
    dev = t._be.device
    if dev.type == "cuda":
        return DLDeviceType.kDLCUDA, dev.index or 0
    return DLDeviceType.kDLCPU, 0


def export(t: Tensor, stream: Any = None, max_version: tuple | None = None,
           dl_device: tuple | None = None, copy: bool | None = None) -> Any:
    """`Tensor.__dlpack__`: a DLPack capsule over the tensor's memory ("dltensor", or
    "dltensor_versioned" when the consumer's `max_version` is >= (1, 0)), with PyTorch's
    refusals."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    _data_read("__dlpack__")  # the consumer may read or write it: a graph break in compile
    kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
    a = t._data
    if t._be.device.type != "cpu":
        if stream is not None and stream != -1:
            kwargs["stream"] = stream
        return a.__dlpack__(**kwargs)
    if stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    if t._dtype.name != "bfloat16":
        return a.__dlpack__(**kwargs)
    capsule = a.view(np.uint16).__dlpack__(**kwargs)  # numpy's DLPack has no bfloat16
    cap.retype(capsule, cap.BFLOAT, 16)
    return capsule


def to_dlpack(tensor: Tensor) -> Any:
    """`torch.utils.dlpack.to_dlpack`: the legacy capsule ("dltensor") over the tensor's
    memory, to be consumed once by some `from_dlpack`."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()


# ---------------------------------------------------------------- import

class _Capsule:
    """A capsule handed to a library's `from_dlpack`, which wants an object with `__dlpack__`
    and `__dlpack_device__`: the capsule is already made, so the keywords change nothing."""

    def __init__(self, capsule: Any, device: tuple):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return self.device


def from_dlpack(ext_tensor: Any, *, device=None, copy: bool | None = None) -> Tensor:
    """A tensor sharing the memory of `ext_tensor`, an object with `__dlpack__` (a numpy,
    PyTorch, JAX or cupy array, or a fusetorch tensor) or a DLPack capsule (consumed once).
    `copy=True` asks for a copy; `device` moves the result there (a copy; refused with
    `copy=False`). Writes through either side are seen by the other."""
    copied = False
    if cap.is_capsule(ext_tensor):
        capsule = ext_tensor
    elif hasattr(ext_tensor, "__dlpack__"):
        capsule, copied = _take(ext_tensor, copy)
    else:
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ (a tensor or "
                        f"array) or a DLPack capsule, got {type(ext_tensor).__name__}")
    where = cap.device_of(capsule)
    if where[0] in _GPU:
        t = _from_gpu(capsule, where)
    elif where[0] in _HOST:
        t = _from_host(capsule, where)
    else:
        raise BufferError(f"from_dlpack(): tensors on DLPack device type {where[0]} "
                          "are not supported (fusetorch has CPU and CUDA tensors)")
    if copy and not copied:
        t = Tensor._make(t._data.copy(), t._dtype, t._be)
    if device is not None:
        target = _dev.device(device) if not isinstance(device, _dev.device) else device
        if target != t.device:
            if copy is False:
                raise ValueError(f"cannot move DLPack tensor from device {t.device} to "
                                 f"{target} without copying. Set copy=None or copy=True.")
            t = t.to(target)
    return t


def _take(ext: Any, copy: bool | None) -> tuple:
    """ext.__dlpack__(...): asked for DLPack 1.0 and `copy` first, without what a producer
    does not take after (as PyTorch's from_dlpack). Returns (capsule, whether it copied)."""
    attempts = [{"max_version": (1, 0)}, {}]
    if copy is not None:
        attempts = [dict(a, copy=copy) for a in attempts] + attempts
    for kwargs in attempts:
        try:
            return ext.__dlpack__(**kwargs), "copy" in kwargs and bool(copy)
        except TypeError:
            if kwargs is attempts[-1]:
                raise
    raise AssertionError("unreachable")


def _from_host(capsule: Any, where: tuple) -> Tensor:
    bfloat16 = cap.dtype_of(capsule) == (cap.BFLOAT, 16, 1)
    legacy = cap.is_legacy(capsule)
    if bfloat16:
        cap.retype(capsule, cap.UINT, 16)  # numpy reads it as uint16; viewed back below
    try:
        a = np.from_dlpack(_Capsule(capsule, where))
    except (BufferError, RuntimeError, TypeError) as e:
        raise BufferError(f"from_dlpack(): {e}") from None
    if legacy and not a.flags.writeable:
        # DLPack before 1.0 cannot say "read-only", so numpy assumes it; producers of such
        # capsules (PyTorch's to_dlpack, numpy itself) hand out memory one may write, and
        # PyTorch imports it writable: so do we, through a view numpy lets us write
        a = np.asarray(_WritableView(a))
    if bfloat16:
        a = a.view(_bfloat16())
    return _wrap(a, _dev.cpu_backend())


class _WritableView:
    """Exposes an array's memory as writable (`__array_interface__`), keeping the array, and
    so the capsule that owns the memory, alive as long as any view of it."""

    def __init__(self, a: np.ndarray):
        iface = dict(a.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__ = iface
        self._keep = a


def _from_gpu(capsule: Any, where: tuple) -> Tensor:
    be = _dev.backend(_dev.device(f"cuda:{where[1]}"))  # PyTorch's error without CUDA
    return _wrap(be.xp.from_dlpack(_Capsule(capsule, where)), be)


def _wrap(a, be) -> Tensor:
    """The imported array as a tensor, under `from_numpy`'s rules."""
    from .creation import _const
    if any(s < 0 for s in a.strides):
        raise ValueError("At least one stride in the given DLPack tensor is negative, and "
                         "tensors with negative strides are not currently supported. (You can "
                         "probably work around this by passing copy=True, or by making a copy "
                         "of the array first.)")
    try:
        d = _dev.dtype_from_numpy(a.dtype)
    except TypeError:
        raise TypeError(f"from_dlpack(): fusetorch has no dtype for the DLPack tensor's "
                        f"{a.dtype} (it has float64, float32, float16, bfloat16, int64, "
                        "int32, int16, int8, uint8 and bool)") from None
    if be.xp is np and not a.flags.writeable:
        warnings.warn("The given DLPack tensor is read-only, and PyTorch does not support "
                      "non-writable tensors: writes into this tensor will fail.", UserWarning,
                      stacklevel=3)
    return _const(a, d, be)


def _bfloat16():
    from ..ir import dtypes as dt
    return _dev.NP_DTYPES[dt.bfloat16]
