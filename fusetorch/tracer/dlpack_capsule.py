"""Reading (and, for bfloat16 only, retyping) DLPack capsules; numpy does everything else.

numpy's own DLPack machinery exports and imports arrays (it owns the capsules' lifetimes,
deleters, strides and the read-only flag), but refuses bfloat16, which ml_dtypes adds to numpy
and DLPack names `kDLBfloat`. So a bfloat16 array is exported as its uint16 view and the
capsule's dtype field set to bfloat16 before anyone reads it, and a bfloat16 capsule is set to
uint16 before numpy reads it (then viewed as bfloat16). Both rewrite one 4-byte field of a
capsule nobody else has seen yet. Everything here follows `dlpack.h` (v1.0): `DLManagedTensor`
in capsules named "dltensor", `DLManagedTensorVersioned` in "dltensor_versioned".
"""
from __future__ import annotations

import ctypes
from typing import Any

# DLDataTypeCode
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6
LEGACY, VERSIONED = b"dltensor", b"dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def tensor_of(capsule: Any) -> DLTensor:
    """The DLTensor inside an unconsumed DLPack capsule (a view of its memory: writes to its
    fields change the capsule). A consumed ("used_dltensor") or foreign capsule is PyTorch's
    RuntimeError."""
    for name, struct in ((LEGACY, DLManagedTensor), (VERSIONED, DLManagedTensorVersioned)):
        if _api.PyCapsule_IsValid(capsule, name):
            return struct.from_address(_api.PyCapsule_GetPointer(capsule, name)).dl_tensor
    raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules "
                      "can be consumed only once, so you might have already constructed a "
                      "tensor from it once.")


def is_legacy(capsule: Any) -> bool:
    """A capsule of DLPack before 1.0 ("dltensor": no version, no read-only flag)."""
    return bool(_api.PyCapsule_IsValid(capsule, LEGACY))


def device_of(capsule: Any) -> tuple[int, int]:
    """(DLDeviceType, device id) of a capsule's tensor."""
    d = tensor_of(capsule).device
    return int(d.device_type), int(d.device_id)


def dtype_of(capsule: Any) -> tuple[int, int, int]:
    """(type code, bits, lanes) of a capsule's tensor."""
    d = tensor_of(capsule).dtype
    return int(d.code), int(d.bits), int(d.lanes)


def retype(capsule: Any, code: int, bits: int) -> None:
    """Set the capsule's element type (only between same-sized types: uint16 <-> bfloat16)."""
    d = tensor_of(capsule).dtype
    if d.bits != bits or d.lanes != 1:
        raise AssertionError(f"retype of a {d.bits}-bit x{d.lanes} capsule to {bits} bits")
    d.code = code
