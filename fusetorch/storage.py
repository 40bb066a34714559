"""`torch.storage`: a tensor's memory as PyTorch's storage objects.

`x.untyped_storage()` is the bytes of the whole buffer `x` views (from its first byte, as
PyTorch's storage_offset counts), `x.storage()` the same memory as elements of x's dtype, and
`torch.FloatStorage` & co. the legacy typed classes `x.storage_type()` names. They share the
tensor's memory: a write through a storage is a write into every tensor over it (as in
PyTorch, outside autograd and the version counter).
"""
from __future__ import annotations

import warnings

import numpy as np

from .ir import dtypes as dt
from .runtime import device as _dev
from .tracer.tensor import Tensor


def _root(t: Tensor) -> np.ndarray:
    """The buffer `t` views: the ndarray that owns (or first wraps) its memory."""
    a = t._data
    if not isinstance(a, np.ndarray):
        raise NotImplementedError("fusetorch: storages of CUDA tensors are not supported")
    while isinstance(a.base, np.ndarray):
        a = a.base
    if not a.flags.c_contiguous and not a.flags.f_contiguous:
        raise NotImplementedError("fusetorch: this tensor's memory is not one buffer")
    return a


def _bytes(t: Tensor) -> np.ndarray:
    a = _root(t)
    return a.reshape(-1, order="A").view(np.uint8) if a.size else np.zeros(0, np.uint8)


class StorageBase:
    """The base of fusetorch's storage classes (`torch.StorageBase`)."""


class UntypedStorage(StorageBase):
    """Bytes of memory (`x.untyped_storage()`, or `UntypedStorage(n)`: n zero bytes)."""

    dtype = dt.uint8

    def __init__(self, size: int = 0, *, device=None) -> None:
        self._bytes = np.zeros(int(size), np.uint8)
        self.device = _dev.device(device or "cpu")

    @classmethod
    def _over(cls, raw: np.ndarray, device) -> "UntypedStorage":
        s = cls.__new__(cls)
        s._bytes, s.device = raw, device
        return s

    def __len__(self) -> int:
        return self._bytes.size

    def size(self) -> int:
        return self._bytes.size

    def nbytes(self) -> int:
        return self._bytes.size

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return int(self._bytes.__array_interface__["data"][0])

    def __getitem__(self, i):
        return self._bytes[i].tolist()

    def __setitem__(self, i, value) -> None:
        self._bytes[i] = value

    def tolist(self) -> list:
        return self._bytes.tolist()

    def untyped(self) -> "UntypedStorage":
        return self

    def is_shared(self) -> bool:
        return False

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self._bytes.tolist())
        head = body + "\n" if body else ""
        return f"{head}[torch.storage.UntypedStorage(device={self.device}) of size {len(self)}]"


class TypedStorage:
    """Memory as elements of one dtype (`x.storage()`; deprecated in PyTorch)."""

    dtype: dt.DType = None

    def __init__(self, *args, dtype=None, device=None) -> None:
        d = dt.to_dtype(dtype or type(self).dtype, "TypedStorage") or dt.default_float()
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            data = np.asarray(args[0], dtype=_np_dtype(d))
        else:
            data = np.zeros(int(args[0]) if args else 0, _np_dtype(d))
        self._set(data.view(np.uint8), d, _dev.device(device or "cpu"))

    def _set(self, raw: np.ndarray, d: dt.DType, device) -> None:
        self._untyped = UntypedStorage._over(raw, device)
        self.dtype, self.device = d, device
        size = _np_dtype(d).itemsize
        self._elems = raw[:raw.size - raw.size % size].view(_np_dtype(d))

    @classmethod
    def _over(cls, raw: np.ndarray, d: dt.DType, device) -> "TypedStorage":
        s = cls.__new__(cls)
        s._set(raw, d, device)
        return s

    def __len__(self) -> int:
        return self._elems.size

    def size(self) -> int:
        return self._elems.size

    def element_size(self) -> int:
        return self._elems.itemsize

    def nbytes(self) -> int:
        return self._elems.nbytes

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def __getitem__(self, i):
        return self._elems[i].tolist()

    def __setitem__(self, i, value) -> None:
        self._elems[i] = value

    def tolist(self) -> list:
        return self._elems.tolist()

    def is_shared(self) -> bool:
        return False

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def __repr__(self) -> str:
        from .tracer.creation import tensor
        body = "\n".join(f" {v}" for v in tensor(self._elems.copy(), dtype=self.dtype).tolist())
        head = body + "\n" if body else ""
        return (f"{head}[torch.storage.TypedStorage(dtype=torch.{self.dtype.name}, "
                f"device={self.device}) of size {len(self)}]")


def _np_dtype(d: dt.DType):
    from .tracer.dispatch import NP_DTYPES
    return np.dtype(NP_DTYPES[d])


_LEGACY_NAMES = {"FloatStorage": dt.float32, "DoubleStorage": dt.float64,
                 "HalfStorage": dt.float16, "BFloat16Storage": dt.bfloat16,
                 "LongStorage": dt.int64, "IntStorage": dt.int32, "ShortStorage": dt.int16,
                 "CharStorage": dt.int8, "ByteStorage": dt.uint8, "BoolStorage": dt.bool_}
LEGACY = {name: type(name, (TypedStorage,), {"dtype": d, "__module__": "torch"})
          for name, d in _LEGACY_NAMES.items()}
BY_DTYPE = {cls.dtype: cls for cls in LEGACY.values()}
# the legacy classes of out-of-scope dtypes: they exist, and creating one raises OutOfScopeError
_OOS = dt.OUT_OF_SCOPE
LEGACY.update({name: type(name, (TypedStorage,), {"dtype": d, "__module__": "torch"})
               for name, d in (("ComplexFloatStorage", _OOS["complex64"]),
                               ("ComplexDoubleStorage", _OOS["complex128"]),
                               ("QInt8Storage", _OOS["qint8"]), ("QUInt8Storage", _OOS["quint8"]),
                               ("QInt32Storage", _OOS["qint32"]),
                               ("QUInt4x2Storage", _OOS["quint4x2"]),
                               ("QUInt2x4Storage", _OOS["quint2x4"]))})
globals().update(LEGACY)


_WARNED = []


def _warn_typed() -> None:
    """Once per process, or every time under `torch.set_warn_always(True)` (PyTorch's rule)."""
    from ._global_state import is_warn_always_enabled
    if _WARNED and not is_warn_always_enabled():
        return
    _WARNED.append(True)
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=3)


def untyped_storage(self: Tensor) -> UntypedStorage:
    return UntypedStorage._over(_bytes(self), self._be.device)


def storage(self: Tensor) -> TypedStorage:
    _warn_typed()
    return TypedStorage._over(_bytes(self), self._dtype, self._be.device)


def storage_type(self: Tensor) -> type:
    _warn_typed()
    return BY_DTYPE[self._dtype]


Tensor.untyped_storage = untyped_storage
Tensor.storage = storage
Tensor.storage_type = storage_type
