"""Devices and the backend behind each: its array module, its eager op table, its dtypes.

`cpu` is numpy and always present. `cuda` is cupy, imported only when a CUDA device is asked for,
so that nothing here needs cupy installed.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..ir import dtypes as dt
from ..ir.roles import Role

# numpy has no bfloat16: ml_dtypes' extension type (JAX's) is numpy's for array purposes
NP_DTYPES = {
    dt.bool_: np.dtype(np.bool_), dt.uint8: np.dtype(np.uint8), dt.int8: np.dtype(np.int8),
    dt.int16: np.dtype(np.int16), dt.int32: np.dtype(np.int32), dt.int64: np.dtype(np.int64),
    dt.float16: np.dtype(np.float16), dt.bfloat16: np.dtype(ml_dtypes.bfloat16),
    dt.float32: np.dtype(np.float32), dt.float64: np.dtype(np.float64),
}
FROM_NP = {v: k for k, v in NP_DTYPES.items()}


def _c_array_types() -> dict:
    from ..codegen.render import pointer_type
    return {npdt: pointer_type(d.c_type) for d, npdt in NP_DTYPES.items()}


# The C element type a kernel's pointer to an array of each numpy dtype has: the dtype's
# `DType.c_type` as the C renderer spells array elements (bool arrays are bytes). The one map from
# data to C types: generated kernels, hand-written kernels and the fused optimizers read it.
C_ARRAY_TYPES: dict = _c_array_types()


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
    return Backend(device("cpu"), np, in_float32(make_table(np)))


# float16 and bfloat16 compute as PyTorch's CPU does, in float32 rounded once at the end:
# single ufuncs already do so per element (numpy's half loops, ml_dtypes' bfloat16 loops), so
# only composed implementations (sigmoid, erf, erfinv, pow, clamp, ...), reductions that
# accumulate (sum, prod: PyTorch accumulates in float32; eager._reduce widens them itself) and
# the `product` ops (matmul: numpy has no half BLAS; ml_dtypes' returns float32) are wrapped.
# Exact ops (declared `native_half`: casts, copies, rounding) and movement stay native.
_LOW = frozenset((np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)))
_F32 = np.dtype(np.float32)


def _widen(fn):
    def run(*args, **kw):
        # inputs arrive promoted to one dtype: the first array's decides (cheaply: this wraps
        # float32 sums and matmuls too)
        a = args[0]
        if a.__class__ is not np.ndarray:  # a scalar first operand: `2 ** x`
            a = next((v for v in args if v.__class__ is np.ndarray), None)
            if a is None:
                return fn(*args, **kw)
        low = a.dtype
        if low.itemsize != 2 or low not in _LOW:
            return fn(*args, **kw)
        out = fn(*[a.astype(_F32) if a.__class__ is np.ndarray and a.dtype == low else a
                   for a in args], **kw)
        return out.astype(low) if getattr(out, "dtype", None) == _F32 else out
    run.__wrapped__ = fn
    return run


def in_float32(table: dict) -> dict:
    """The CPU eager table with float16/bfloat16 computed in float32 where one ufunc would not
    do it (see _LOW above)."""
    from ..ir.ops import OPS
    out = dict(table)
    for name, fn in table.items():
        d = OPS.get(name)
        if d is not None and (Role.PRODUCT in d.roles or d.kind == "elementwise"
                              and Role.NATIVE_HALF not in d.roles
                              and not isinstance(fn, np.ufunc)):
            out[name] = _widen(fn)
    return out


_PROBE: list = []  # [cupy module or None], filled by the first probe


def _cupy():
    """cupy if it imports and sees a GPU, else None (the cuda extra is optional). Probed once:
    importing cupy and asking the driver cost milliseconds."""
    if not _PROBE:
        try:
            import cupy
            _PROBE.append(cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None)
        except Exception:  # no cupy, no driver, no device: all mean "no CUDA"
            _PROBE.append(None)
    return _PROBE[0]


def cuda_device_count() -> int:
    """GPUs cupy sees; without cupy, the cuda backends registered by hand (tests)."""
    cp = _cupy()
    if cp is not None:
        return int(cp.cuda.runtime.getDeviceCount())
    return len({id(b) for b in _BACKENDS.values() if b.device.type == "cuda"})


def cuda_available() -> bool:
    return cuda_device_count() > 0


def _key(dev) -> str:
    """The canonical name of a device: a bare 'cuda' means the current device, cuda:0."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu":
        return "cpu"
    return f"cuda:{0 if d.index is None else d.index}"


def backend(dev) -> Backend:
    """The backend of a device (given as `device`, string or None for the CPU), created once."""
    if dev is None:
        return _BACKENDS["cpu"]
    b = _BACKENDS.get(dev) if isinstance(dev, str) else None
    if b is not None:
        return b
    key = _key(dev)
    b = _BACKENDS.get(key)
    if b is None:
        b = _make_cuda(int(key[5:]))
        _BACKENDS[key] = b
    if isinstance(dev, str):
        _BACKENDS.setdefault(dev, b)  # the spelling asked for, so the next lookup is one dict get
    return b


def _make_cuda(index: int) -> Backend:
    cp = _cupy()
    if cp is None:
        # PyTorch's CUDA build on a machine without a driver says this (a CPU-only build raises
        # AssertionError 'Torch not compiled with CUDA enabled'; fusetorch always has the code)
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an "
                           "NVIDIA GPU and installed a driver from "
                           "http://www.nvidia.com/Download/index.aspx (fusetorch also needs cupy: "
                           "pip install 'fusetorch[cuda]')")
    if index >= cuda_device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")
    from .eager import CUDA_GENERATOR, make_table
    return Backend(device("cuda", index), cp, make_table(cp, CUDA_GENERATOR))


def register_backend(dev, b: "Backend | None") -> None:
    """Install (or with None remove) the backend of a device. Tests use it for a CUDA device
    whose array module is numpy, to exercise the device plumbing on machines without a GPU."""
    key = _key(dev)
    if key == "cpu":
        raise ValueError("the cpu backend is fixed")
    old = _BACKENDS.get(key)
    for k in [k for k, v in _BACKENDS.items() if old is not None and v is old]:
        del _BACKENDS[k]  # and its other spellings ('cuda')
    if b is not None:
        _BACKENDS[key] = b


def backend_of_array(a, default: Backend) -> Backend:
    """The backend whose array module made `a`: `default` when it did (also when two backends
    share numpy), else the CPU for numpy arrays and the CUDA device holding a cupy array."""
    if isinstance(a, np.ndarray) == (default.xp is np):
        return default
    if isinstance(a, np.ndarray):
        return _BACKENDS["cpu"]
    return backend(f"cuda:{a.device.id}")


_BACKENDS["cpu"] = _make_cpu()
