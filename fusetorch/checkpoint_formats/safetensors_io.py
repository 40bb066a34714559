"""Hugging Face `.safetensors` files: an 8-byte little-endian header length, a JSON header
`{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}`, then
the tensors' bytes, contiguous and little-endian.

Reading needs no package: the header is checked here as strictly as the reference reader
does (known dtypes, whole shapes, each tensor's byte count matching its shape, spans inside
the data, tiling it with no gaps or overlaps) and the file is read once into one owned buffer
that every tensor views (zero-copy; a tensor whose offset is not a multiple of its item size
is the one exception and gets its own copy). Bool tensors are normalised to bytes 0 and 1.
Writing goes through the `safetensors` package (`pip install fusetorch[safetensors]`).
"""
from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Callable

import numpy as np

from .. import _load_checks as _checks
from .._atomic_file import replaced_path
from ..ir import dtypes as dt
from ..runtime import device as _dev
from ..tracer.tensor import Tensor

_DTYPES = {"BOOL": dt.bool_, "U8": dt.uint8, "I8": dt.int8, "I16": dt.int16, "I32": dt.int32,
           "I64": dt.int64, "F16": dt.float16, "BF16": dt.bfloat16, "F32": dt.float32,
           "F64": dt.float64}
_NAMES = {d: n for n, d in _DTYPES.items()}
_MAX_HEADER = 100_000_000  # the reference reader's limit


def looks_like(head: bytes) -> bool:
    """Whether the first bytes of a file are a safetensors header's start: a length, then
    `{`. (The native format starts with 0x89, a zip with `PK`.)"""
    if len(head) < 9:
        return False
    n = int.from_bytes(head[:8], "little")
    return 2 <= n <= _MAX_HEADER and head[8:9] == b"{"


def _corrupt(name: str, why: str) -> RuntimeError:
    return RuntimeError(f"fusetorch.load: {name} is not a valid safetensors file ({why})")


def _read_all(f) -> bytearray:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return bytearray(fh.read())
    return bytearray(f.read())


def read(f, name: str = "the file",
         limit: int | None = None) -> tuple[dict[str, tuple], dict[str, str]]:
    """The named (dtype, array) pairs (views of one owned buffer) and the metadata of a
    safetensors file. `limit`: `fusetorch.load`'s element limit (default: the environment's)."""
    limit = _checks.max_elements() if limit is None else limit
    raw = _read_all(f)
    if len(raw) < 8:
        raise _corrupt(name, "truncated")
    n = int.from_bytes(raw[:8], "little")
    if n > _MAX_HEADER or 8 + n > len(raw):
        raise _corrupt(name, f"header length {n} outside the file of {len(raw)} bytes")
    try:
        header = json.loads(bytes(raw[8:8 + n]).decode("utf-8"))
    except (UnicodeError, ValueError, RecursionError) as e:
        raise _corrupt(name, f"bad JSON header: {e}") from None
    if type(header) is not dict:
        raise _corrupt(name, "the header is not an object")
    meta = header.pop("__metadata__", None) or {}
    if type(meta) is not dict or not all(type(k) is str and type(v) is str
                                         for k, v in meta.items()):
        raise _corrupt(name, "__metadata__ must map strings to strings")
    buf = np.frombuffer(raw, dtype=np.uint8)[8 + n:]
    spans, out = [], {}
    for key, e in header.items():
        if not (type(e) is dict and set(e) == {"dtype", "shape", "data_offsets"}
                and e["dtype"] in _DTYPES and type(e["shape"]) is list
                and len(e["shape"]) <= 64
                and all(type(d) is int and 0 <= d < 1 << 62 for d in e["shape"])
                and type(e["data_offsets"]) is list and len(e["data_offsets"]) == 2
                and all(type(o) is int for o in e["data_offsets"])):
            raise _corrupt(name, f"bad entry for {key!r:.100}")
        d = _DTYPES[e["dtype"]]
        npdt = np.dtype(_dev.NP_DTYPES[d])
        lo, hi = e["data_offsets"]
        want = math.prod(e["shape"]) * npdt.itemsize
        if not (0 <= lo <= hi <= buf.nbytes) or hi - lo != want:
            raise _corrupt(name, f"tensor {key!r:.100}: bytes [{lo}, {hi}) do not hold its "
                           f"shape {e['shape']} of {e['dtype']} inside {buf.nbytes} bytes")
        # an empty tensor's other sizes are free: [0, 2**40] would make `sum(0)` fill 2**40
        # elements. The native format's element limit, counted the same way
        count = _checks.too_many_elements(e["shape"], npdt.itemsize, want, limit)
        if count is not None:
            raise RuntimeError(f"fusetorch.load: refused {name}: tensor {key!r:.100} has shape "
                               f"{e['shape']}: {count} elements, from {want} bytes; set "
                               f"{_checks.MAX_ELEMENTS_ENV} to load it")
        spans.append((lo, hi))
        part = buf[lo:hi]
        if npdt.kind == "b":
            part = np.not_equal(part, 0)  # kernels read a bool as its byte
        le = npdt.newbyteorder("<") if npdt.itemsize > 1 else npdt
        if (buf.__array_interface__["data"][0] + lo) % npdt.itemsize:
            part = part.copy()  # a misaligned start: this tensor gets its own buffer
        a = part.view(le).reshape(e["shape"])
        out[key] = (d, a.astype(npdt) if sys.byteorder != "little" and npdt.itemsize > 1 else a)
    spans.sort()
    at = 0
    for lo, hi in spans:
        if lo != at:
            raise _corrupt(name, "tensor data overlaps or leaves gaps")
        at = hi
    if at != buf.nbytes:
        raise _corrupt(name, "bytes after the last tensor")
    return out, meta


def load_tensors(f, restore: Callable | None = None, name: str = "the file",
                 limit: int | None = None) -> dict:
    """The tensors of a safetensors file, by name, placed by `restore` (see serialization)."""
    arrays, _ = read(f, name, limit)
    out = {}
    for key, (d, a) in arrays.items():
        t = Tensor._make(a, d, _dev.cpu_backend())
        out[key] = t if restore is None else restore(t, "cpu", "tensor", False)
    return out


def _spec(t: Any, key: str):
    import safetensors
    if not isinstance(t, Tensor):
        raise TypeError(f"save_file: {key!r} is a {type(t).__name__}, not a Tensor")
    if t.dtype not in _NAMES:
        raise TypeError(f"save_file: {key!r} has dtype {t.dtype}, which safetensors lacks")
    h = t._host()
    a = np.ascontiguousarray(h).reshape(h.shape)  # (ascontiguousarray makes 0-d arrays 1-d)
    if a.itemsize > 1 and sys.byteorder == "big":
        a = a.astype(a.dtype.newbyteorder("<"))
    npname = {"BF16": "bfloat16"}.get(_NAMES[t.dtype], a.dtype.name)
    return a, safetensors.TensorSpec(dtype=npname, shape=a.shape,
                                     data_ptr=a.ctypes.data, data_len=a.nbytes)


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    keep, specs = _specs(tensors)
    import safetensors
    return bytes(safetensors.serialize(specs, metadata=metadata))


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    keep, specs = _specs(tensors)
    import safetensors
    with replaced_path(filename) as tmp:
        safetensors.serialize_file(specs, tmp, metadata=metadata)


def _specs(tensors: dict) -> tuple[list, dict]:
    if not isinstance(tensors, dict):
        raise TypeError("save_file expects a dict of str -> Tensor")
    try:
        import safetensors  # noqa: F401
    except ImportError:
        raise ImportError("saving .safetensors files needs the `safetensors` package: pip "
                          "install 'fusetorch[safetensors]'") from None
    keep, specs = [], {}
    for k, t in tensors.items():
        if type(k) is not str:
            raise TypeError(f"save_file: keys must be strings, not {type(k).__name__}")
        a, spec = _spec(t, k)
        keep.append(a)
        specs[k] = spec
    return keep, specs
