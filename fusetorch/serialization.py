"""`fusetorch.save` / `fusetorch.load`: tensors, state dicts and optimizer states in a file that
loading can never execute code from.

PyTorch pickles; a pickle can run any code when loaded. This format holds only data:

    magic  b"\\x89FUSETORCH\\r\\n\\x1a\\n"            14 bytes (catches text-mode mangling)
    prefix little-endian u32 version, u64 header length, u64 data length
    header UTF-8 JSON: the object tree, the tensor table, the storage table
    data   the raw little-endian bytes of each storage, each 64-byte aligned
    digest sha256 of everything before it             32 bytes

Loading checks the magic, the lengths and the digest before it parses anything, then checks
every field of the header before it allocates a storage (types, dtypes from a fixed list,
storages that do not overlap, every tensor's strides and offset in whole elements with its
first and last element inside its storage: see `_load_checks`), so a truncated, damaged or
hostile file raises RuntimeError: never a crash, a hang or an allocation larger than the file.
The digest is no defence (an attacker recomputes it): the checks are. Bool storages load as
bytes 0 and 1; a tensor describing more elements than its storage holds beyond a limit
(`FUSETORCH_LOAD_MAX_ELEMENTS`, default 2**28) is refused.

Tensors that share memory (the same tensor twice, views of one array) are stored once, as one
storage holding the byte span they cover, and load as views of one buffer again. Parameters
load as Parameters with their `requires_grad`; tensors keep `requires_grad` (as leaves).
Containers: dict, OrderedDict, defaultdict (of a builtin factory), list, tuple, set,
frozenset; leaves: None, bool, int, float, complex, str, bytes, dtypes, devices, `Size`,
numpy arrays and scalars of numeric dtypes.

Objects of plain Python classes (a whole `nn.Module`, `torch.save(model, f)`; a config
object) are stored as data too: the importable path of their class (module and qualname) and
their state (`__dict__`, or `__getstate__`'s dict), each object once with an id that later
occurrences refer to (shared submodules, tied Parameters, cycles). Classes and functions kept
as values (`F.relu` as an activation) are stored by importable path. Loading rebuilds an
object (`cls.__new__(cls)`, then `__setstate__` or `__dict__.update`; never `__init__`) only
when its class is a safe global (`add_safe_globals`, `safe_globals`) or, with
`weights_only=False`, an nn.Module subclass: the rules are `_weights_only.resolve`. Anything
else raises TypeError at save time.
"""
from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import importlib
import io
import json
import os
import re
import struct
import sys
import types
from typing import Any, BinaryIO, Callable, NamedTuple

import numpy as np

from . import _load_checks as _checks
from ._atomic_file import replacing
from . import _weights_only as _safe
from . import checkpoint_formats as _formats
from .ir import dtypes as dt
from .runtime import device as _dev
from .tracer.tensor import Size, Tensor

from ._weights_only import (WeightsOnlyError, add_safe_globals, clear_safe_globals,  # noqa: E402
                            get_safe_globals, safe_globals)

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "WeightsOnlyError"]

MAGIC = b"\x89FUSETORCH\r\n\x1a\n"
VERSION = 1
_PREFIX = struct.Struct("<IQQ")  # version, header length, data length
_DIGEST = 32
_ALIGN = 64
_CHUNK = 1 << 24  # reads grow with the bytes actually there, never with a claimed length

_TENSOR_DTYPES = {d.name: d for d in dt.ALL}
_NP_DTYPE = re.compile(r"^[<|][biufc][0-9]{1,2}$")  # numeric numpy dtypes, little-endian
_DEVICE = re.compile(r"^(cpu|cuda)(:[0-9]{1,9})?$", re.ASCII)  # the devices save writes
_FACTORIES = {None: None, "dict": dict, "list": list, "int": int, "float": float, "set": set,
              "tuple": tuple, "OrderedDict": collections.OrderedDict}


def _le(npdt: np.dtype) -> np.dtype:
    return npdt.newbyteorder("<") if npdt.itemsize > 1 else npdt


def _is_le(npdt: np.dtype) -> bool:
    return npdt.byteorder in ("<", "|") or (npdt.byteorder == "=" and sys.byteorder == "little")


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _extent(ptr: int, shape, strides, itemsize: int) -> tuple[int, int]:
    """[lo, hi) bytes an array with this layout touches (it must not be empty)."""
    lo = ptr + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = ptr + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return lo, hi


# ------------------------------------------------------------------------------------- save

def _key(k) -> str:
    """A dict key as error messages show it (cheaply: a tensor key is not printed)."""
    return repr(k) if k is None or type(k) in (bool, int, float, str) else f"<{type(k).__name__}>"


class _Encoder:
    def __init__(self):
        self.tensors: list[dict] = []
        self.arrays: list[np.ndarray] = []  # host array of each tensor-table entry
        self.memo: dict[int, int] = {}  # id(tensor or array) -> tensor-table index
        self.keep: list = []  # keeps memoised objects alive so their ids stay unique
        self.active: set[int] = set()  # containers being encoded (cycle check)
        self.objects: dict[int, int] = {}  # id(object) -> its object id in the file

    def encode(self, obj, path: str):
        t = type(obj)
        if obj is None or t in (bool, int, float, str):
            return obj  # json writes NaN / Infinity and reads them back; -0.0 survives
        if isinstance(obj, Tensor):
            return {"tensor": self._array_entry(obj, path)}
        if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
            return {"ndarray": self._array_entry(obj, path)}
        if t is complex:
            return {"complex": [obj.real, obj.imag]}
        if t is bytes or t is bytearray:
            return {t.__name__: base64.b64encode(bytes(obj)).decode("ascii")}
        if t is dt.DType:
            return {"dtype": obj.name}
        if t is _dev.device:
            return {"device": str(obj)}
        if t is Size:
            return {"size": list(obj)}
        if t in (list, tuple, set, frozenset, dict, collections.OrderedDict,
                 collections.defaultdict):
            return self._container(obj, t, path)
        if isinstance(obj, type) or t is types.FunctionType:
            return self._global(obj, path)
        if _plain_object(obj):
            return self._object(obj, path)
        raise self._unsupported(obj, path)

    @staticmethod
    def _unsupported(obj, path: str, why: str = "") -> TypeError:
        t = type(obj)
        return TypeError(
            f"fusetorch.save cannot store an object of type '{t.__module__}.{t.__qualname__}' "
            f"(at {path}){why}. It stores tensors, numbers, strings, bytes, None, dtypes, "
            "devices, dicts, lists, tuples and sets of these, and objects of plain Python "
            "classes (nn.Module and the like: the path of their class and their attributes) "
            "and references to importable classes and functions: the format holds no code, so "
            "loading a file can never run any.")

    def _global(self, obj, path: str) -> dict:
        """A class or function as a value (`F.relu` as an activation): its importable name."""
        if not _findable(obj):
            raise self._unsupported(obj, path, f": {obj!r:.100} cannot be found again as "
                                    f"{_safe.path_of(obj)!r} (only classes and functions "
                                    "defined at the top level of a module can be referred to)")
        return {"global": [obj.__module__, obj.__qualname__]}

    def _object(self, obj, path: str) -> dict:
        """An object of a plain Python class (an nn.Module, a config object): its class's
        importable name and its state (its `__dict__`, or what `__getstate__` returns), stored
        once; later occurrences refer to it, so shared and cyclic references survive."""
        if id(obj) in self.objects:
            return {"ref": self.objects[id(obj)]}
        cls = type(obj)
        if not _findable(cls):
            raise self._unsupported(obj, path, f": its class cannot be found again as "
                                    f"{_safe.path_of(cls)!r} (only classes defined at the top "
                                    "level of an importable module can be stored)")
        self.objects[id(obj)] = oid = len(self.objects)
        self.keep.append(obj)
        if cls.__getstate__ is object.__getstate__:
            state = vars(obj)
        else:
            state = obj.__getstate__()
            if type(state) is not dict:
                raise self._unsupported(obj, path, ": its __getstate__ returns a "
                                        f"{type(state).__name__}, not a dict")
        pairs = []
        for k, v in state.items():
            if type(k) is not str:
                raise self._unsupported(obj, path, f": its state has a key {_key(k)}")
            pairs.append([k, self.encode(v, f"{path}.{k}")])
        return {"object": [cls.__module__, cls.__qualname__], "id": oid, "state": pairs}

    def _container(self, obj, t, path: str):
        if id(obj) in self.active:
            raise ValueError(f"fusetorch.save: {path} contains itself (a reference cycle); "
                             "cycles cannot be stored")
        self.active.add(id(obj))
        try:
            if t in (list, tuple, set, frozenset):
                items = obj if t in (list, tuple) else sorted(obj, key=repr)  # stable bytes
                return {t.__name__: [self.encode(v, f"{path}[{i}]")
                                     for i, v in enumerate(items)]}
            pairs = [[self.encode(k, f"{path} (a key)"), self.encode(v, f"{path}[{_key(k)}]")]
                     for k, v in obj.items()]
            if t is dict:
                return {"dict": pairs}
            if t is collections.defaultdict:
                f = obj.default_factory
                name = None if f is None else getattr(f, "__name__", None)
                if name not in _FACTORIES or _FACTORIES[name] is not f:
                    raise TypeError(f"fusetorch.save cannot store the default_factory {f!r} of "
                                    f"the defaultdict at {path} (builtin types only)")
                return {"defaultdict": pairs, "factory": name}
            node = {"odict": pairs}
            meta = getattr(obj, "_metadata", None)  # PyTorch's state_dict version records
            if meta is not None:
                node["metadata"] = self.encode(meta, f"{path}._metadata")
            return node
        finally:
            self.active.discard(id(obj))

    def _array_entry(self, obj, path: str) -> int:
        if id(obj) in self.memo:
            return self.memo[id(obj)]
        if isinstance(obj, Tensor):
            a = obj._host()
            from .nn.parameter import Parameter
            kind = "parameter" if isinstance(obj, Parameter) else "tensor"
            entry = {"kind": kind, "dtype": obj.dtype.name, "device": str(obj.device),
                     "requires_grad": bool(obj.requires_grad)}
        else:
            a = np.asarray(obj)
            if a.dtype.kind not in "biufc" or a.dtype.fields is not None:
                raise TypeError(f"fusetorch.save cannot store a numpy array of dtype {a.dtype} "
                                f"(at {path}): numeric and bool dtypes only")
            entry = {"kind": "npscalar" if isinstance(obj, np.generic) else "ndarray",
                     "dtype": _le(a.dtype).str}
        entry["shape"] = list(a.shape)
        self.memo[id(obj)] = len(self.tensors)
        self.keep.append(obj)
        self.tensors.append(entry)
        self.arrays.append(a)
        return len(self.tensors) - 1

    def storages(self) -> list[np.ndarray]:
        """Group the arrays by the buffer they live in; each group becomes one storage: the
        byte span its arrays cover. Fills in each entry's storage, offset and strides."""
        groups: dict[int, list[int]] = {}
        roots: dict[int, np.ndarray] = {}
        alone: list[int] = []
        for i, a in enumerate(self.arrays):
            root = a
            while isinstance(root.base, np.ndarray):
                root = root.base
            # load refuses views that are not whole elements from a 16-byte-aligned start
            # (kernels index in elements), so numpy views that are not get their own copy
            k = a.itemsize
            shareable = a.size > 0 and _is_le(a.dtype) and (
                root.flags.c_contiguous or root.flags.f_contiguous) and 16 % k == 0 \
                and (_ptr(a) - _ptr(root)) % k == 0 and all(st % k == 0 for st in a.strides)
            if shareable:
                lo, hi = _extent(_ptr(a), a.shape, a.strides, a.itemsize)
                shareable = _ptr(root) <= lo and hi <= _ptr(root) + root.nbytes
            if shareable:
                groups.setdefault(id(root), []).append(i)
                roots[id(root)] = root
            else:
                alone.append(i)
        out = []
        for key, members in groups.items():
            root = roots[key]
            spans = [_extent(_ptr(self.arrays[i]), self.arrays[i].shape,
                             self.arrays[i].strides, self.arrays[i].itemsize) for i in members]
            # start on a 16-byte boundary of the root, so loaded views keep their alignment
            start = (min(s[0] for s in spans) - _ptr(root)) // 16 * 16
            lo, hi = _ptr(root) + start, max(s[1] for s in spans)
            flat = np.ravel(root, order="K").view(np.uint8)  # a view: the root is contiguous
            for i in members:
                a = self.arrays[i]
                self.tensors[i].update(storage=len(out), offset=_ptr(a) - lo,
                                       strides=list(a.strides))
            out.append(flat[start:start + (hi - lo)])
        for i in alone:  # empty, foreign-strided or big-endian: a contiguous little-endian copy
            # (np.array, as ascontiguousarray makes a 0-d array 1-d)
            a = np.array(self.arrays[i], dtype=_le(self.arrays[i].dtype), order="C")
            self.tensors[i].update(storage=len(out), offset=0,
                                   strides=[s for s in a.strides])
            out.append(a.reshape(-1).view(np.uint8))
        return out


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


def _plain_object(obj) -> bool:
    """An object whose whole state is its `__dict__` (or a dict `__getstate__` returns), of a
    class defined in Python on `object` only (no builtin base such as tuple or dict, no
    `__slots__`, no custom `__reduce__`): what `_object` can store and load can rebuild by
    `cls.__new__(cls)` and setting that state."""
    cls = type(obj)
    mro = cls.__mro__
    if mro[-1] is not object or len(mro) < 2:
        return False
    if not all(c.__flags__ & _HEAPTYPE for c in mro[:-1]):
        return False
    if cls.__reduce_ex__ is not object.__reduce_ex__ or cls.__reduce__ is not object.__reduce__:
        return False
    if any(set(vars(c).get("__slots__", ())) - {"__dict__", "__weakref__"} for c in mro):
        return False
    return isinstance(getattr(obj, "__dict__", None), dict)


def _findable(obj) -> bool:
    """`obj` (a class or function) is what importing its `__module__` and walking its
    `__qualname__` gives (as pickle requires of what it stores by reference)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not _safe.check_name(module, qualname):
        return False
    found = sys.modules.get(module)
    if found is None:
        try:
            found = importlib.import_module(module)
        except Exception:  # noqa: BLE001  (any failure: not findable)
            return False
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is obj


def _open(f, mode: str):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode), True
    return f, False


def save(obj: Any, f, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False, *, format: str = "fusetorch") -> None:
    """Write `obj` (tensors, state dicts, optimizer state dicts, nested containers of those)
    to a path or a binary file object. `pickle_module`/`pickle_protocol` are accepted for
    PyTorch compatibility and ignored: nothing is pickled. `format="torch"` writes PyTorch's
    zip checkpoint instead (tensors, Parameters, numbers, strings, dtypes and containers),
    which `torch.load(f, weights_only=True)` opens."""
    if format in ("torch", "pytorch"):
        _formats.save_torch(obj, f)
        return
    if format != "fusetorch":
        raise ValueError(f"fusetorch.save: unknown format {format!r} (use 'fusetorch' or "
                         "'torch'; safetensors files: fusetorch.utils.safetensors.save_file)")
    enc = _Encoder()
    root = enc.encode(obj, "obj")
    storages = enc.storages()
    table, pos = [], 0
    for s in storages:
        pos += -pos % _ALIGN
        table.append({"offset": pos, "nbytes": int(s.nbytes)})
        pos += int(s.nbytes)
    header = json.dumps({"format": "fusetorch", "version": VERSION, "byteorder": "little",
                         "storages": table, "tensors": enc.tensors, "root": root},
                        separators=(",", ":")).encode("utf-8")
    h = hashlib.sha256()
    owned = isinstance(f, (str, os.PathLike))
    with (replacing(f) if owned else contextlib.nullcontext(f)) as fh:
        def write(b) -> None:
            h.update(b)
            fh.write(b)
        write(MAGIC)
        write(_PREFIX.pack(VERSION, len(header), pos))
        write(header)
        at = 0
        for s, entry in zip(storages, table):
            if entry["offset"] > at:
                write(bytes(entry["offset"] - at))
            write(memoryview(np.ascontiguousarray(s)))
            at = entry["offset"] + entry["nbytes"]
        fh.write(h.digest())


# ------------------------------------------------------------------------------------- load

class _Corrupt(Exception):
    """A structural problem found while decoding (becomes RuntimeError)."""


class _Passthrough(Exception):
    """Carries an error raised while placing a tensor (map_location) past the corrupt-file
    handler unchanged."""


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise _Corrupt(what)


def _is_int(v) -> bool:
    return type(v) is int


def _read_upto(fh: BinaryIO, n: int) -> bytes:
    """Up to `n` bytes; in one read when the stream says that many are there, else in chunks,
    so a corrupted length can never make us allocate more than the file holds."""
    try:
        if fh.seekable():
            here = fh.tell()
            end = fh.seek(0, io.SEEK_END)
            fh.seek(here)
            if n <= end - here:
                return fh.read(n)
    except (AttributeError, OSError, ValueError):
        pass
    buf = io.BytesIO()
    while n > 0:
        b = fh.read(min(n, _CHUNK))
        if not b:
            break
        buf.write(b)
        n -= len(b)
    return buf.getvalue()


def _name(f) -> str:
    return repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file"


def _read_verified(f) -> tuple[bytes, bytes]:
    """The header and data bytes, after the magic, length and checksum checks."""
    fh, owned = _open(f, "rb")
    name = _name(f)
    try:
        head = _read_upto(fh, len(MAGIC) + _PREFIX.size)
        if not head:
            raise RuntimeError(f"fusetorch.load: {name} is empty")
        if head[:len(MAGIC)] != MAGIC[:len(head)]:
            hint = " (it looks like a zip archive: a PyTorch checkpoint?)" \
                if head[:2] == b"PK" else ""
            raise RuntimeError(f"fusetorch.load: {name} was not written by "
                               f"fusetorch.save (bad magic number){hint}")
        if len(head) < len(MAGIC) + _PREFIX.size:
            raise RuntimeError(f"fusetorch.load: {name} is truncated ({len(head)} bytes)")
        version, hlen, dlen = _PREFIX.unpack_from(head, len(MAGIC))
        if version != VERSION:
            raise RuntimeError(f"fusetorch.load: {name} has format version {version}; this "
                               f"fusetorch reads version {VERSION} (or the file is corrupted)")
        want = hlen + dlen + _DIGEST
        body = _read_upto(fh, want)
        if len(body) < want:
            raise RuntimeError(f"fusetorch.load: {name} is truncated or corrupted (expected "
                               f"{len(head) + want} bytes, found {len(head) + len(body)})")
        if owned and fh.read(1):
            raise RuntimeError(f"fusetorch.load: {name} is corrupted (unexpected bytes after "
                               "the end of the saved data)")
    finally:
        if owned:
            fh.close()
    digest = hashlib.sha256(head)
    digest.update(memoryview(body)[:hlen + dlen])
    if digest.digest() != body[hlen + dlen:]:
        raise RuntimeError(f"fusetorch.load: {name} is corrupted: checksum mismatch (the file "
                           "was damaged or modified after it was saved)")
    return body[:hlen], memoryview(body)[hlen:hlen + dlen]


def _need_unflooded(keys: list) -> None:
    """Refuse keys that would make building a dict or set quadratic: ints and floats hash to
    themselves modulo a prime, so a file can hold thousands of distinct keys with one hash,
    and each insert then compares against all of them (20,000 such keys took seconds; a large
    file, hours). Real keys almost never share a hash; a file written by save never has many."""
    _need(_checks.most_sharing_one_hash(keys) <= _checks.MAX_SAME_HASH,
          f"more than {_checks.MAX_SAME_HASH} keys share one hash (a hash-flooding file)")


class _Entry(NamedTuple):
    """A tensor-table entry after every check: what `array` needs to build it."""
    kind: str
    dtype: Any  # the fusetorch dtype of a tensor or parameter, else None
    npdt: np.dtype
    shape: tuple
    strides: tuple
    offset: int
    storage: int
    span: tuple[int, int] | None  # the bytes of its storage it reads; None when empty
    requires_grad: bool
    device: str


class _TooLarge(Exception):
    """A sound tensor above the element limit (becomes RuntimeError, not 'corrupted')."""


class _Decoder:
    def __init__(self, header: dict, data: memoryview, restore: Callable, limit: int,
                 weights_only: bool = True, allowed: dict | None = None):
        self.weights_only = weights_only
        self.allowed = allowed or {}  # path -> safe global, read once per load
        self.objects: list = []  # objects built so far, by id (refs point back into it)
        self.table = header["tensors"]
        self.data = data
        self.restore = restore
        self.buffers: dict[int, np.ndarray] = {}
        self.bool_buffers: dict[int, np.ndarray] = {}
        self.memo: dict[int, Any] = {}
        st = header["storages"]
        _need(type(st) is list and type(self.table) is list, "bad tables")
        problem = _checks.storage_error(st, len(data))
        _need(problem is None, str(problem))
        self.storage_table = st
        # Every entry is checked before any storage is allocated, referenced or not.
        self.entries = [self._check(i, e, limit) for i, e in enumerate(self.table)]
        # Bool storages are normalised to 0/1 bytes, since kernels read a bool as its byte
        # (a byte 2 would sum as 2). A storage that also holds other dtypes' views keeps its
        # bytes; its bool views get one normalised copy if their bytes need it.
        users: dict[int, list[_Entry]] = {}
        for e in self.entries:
            if e.span is not None:
                users.setdefault(e.storage, []).append(e)
        self.bool_only = {k for k, es in users.items() if all(e.npdt.kind == "b" for e in es)}
        self.bool_spans = {k: _checks.merge_spans([e.span for e in es if e.npdt.kind == "b"])
                           for k, es in users.items() if k not in self.bool_only
                           and any(e.npdt.kind == "b" for e in es)}

    def _check(self, i: int, e, limit: int) -> _Entry:
        where = f"tensor {i}"
        _need(type(e) is dict, f"{where}: bad entry")
        kind, dname = e.get("kind"), e.get("dtype")
        shape, strides, offset = e.get("shape"), e.get("strides"), e.get("offset")
        _need(type(shape) is list and type(strides) is list and len(shape) == len(strides)
              and len(shape) <= 64 and all(_is_int(n) and n >= 0 for n in shape)
              and all(_is_int(s) for s in strides) and _is_int(offset)
              and _checks.fits_int64(shape, strides, offset), f"{where}: bad tensor layout")
        d, rg, dev = None, False, ""
        if kind in ("tensor", "parameter"):
            _need(type(dname) is str and dname in _TENSOR_DTYPES, f"{where}: bad tensor dtype")
            d = _TENSOR_DTYPES[dname]
            npdt = _le(_dev.NP_DTYPES[d])
            rg, dev = e.get("requires_grad"), e.get("device")
            _need(type(rg) is bool and (not rg or d.is_floating_point),
                  f"{where}: bad requires_grad")
            _need(type(dev) is str and _DEVICE.match(dev) is not None, f"{where}: bad device")
        else:
            _need(kind in ("ndarray", "npscalar") and type(dname) is str
                  and _NP_DTYPE.match(dname) is not None, f"{where}: bad array dtype")
            npdt = np.dtype(dname)
            _need(kind == "ndarray" or len(shape) == 0, f"{where}: bad numpy scalar")
        k = e.get("storage")
        _need(_is_int(k) and 0 <= k < len(self.storage_table), f"{where}: bad storage index")
        nbytes = self.storage_table[k]["nbytes"]
        span = None
        if 0 not in shape:
            problem = _checks.layout_error(shape, strides, offset, npdt.itemsize, nbytes,
                                           negative_strides=d is None)
            _need(problem is None, f"{where}: {problem}")
            span = _extent(offset, shape, strides, npdt.itemsize)
        count = _checks.too_many_elements(shape, npdt.itemsize, nbytes, limit)
        if count is not None:
            dims = ", ".join(_checks.show(n) for n in shape)
            raise _TooLarge(
                f"{where} has shape [{dims}]: {_checks.show(count)} elements, from a storage of "
                f"{nbytes // npdt.itemsize}; a tensor may describe more elements than its "
                f"storage holds only up to {limit} (each pass over it visits every one). Set "
                f"the environment variable {_checks.MAX_ELEMENTS_ENV} to a larger limit to "
                "load it")
        return _Entry(kind, d, npdt, tuple(shape), tuple(strides), offset, k, span, rg, dev)

    def storage(self, k: int, is_bool: bool) -> np.ndarray:
        """The buffer storage `k` loads into (owned and writable), shared by all its views;
        for a bool view of a storage other dtypes also view, a 0/1 copy where one is needed."""
        if k not in self.buffers:
            s = self.storage_table[k]
            buf = np.empty(s["nbytes"], dtype=np.uint8)
            buf[:] = np.frombuffer(self.data, dtype=np.uint8, count=s["nbytes"],
                                   offset=s["offset"])
            if k in self.bool_only:
                np.not_equal(buf, 0, out=buf.view(np.bool_))
            self.buffers[k] = buf
        buf = self.buffers[k]
        if not is_bool or k not in self.bool_spans:
            return buf
        if k not in self.bool_buffers:
            clean = all(buf[lo:hi].max() <= 1 for lo, hi in self.bool_spans[k])
            self.bool_buffers[k] = buf if clean else np.not_equal(buf, 0).view(np.uint8)
        return self.bool_buffers[k]

    def array(self, i):
        _need(_is_int(i) and 0 <= i < len(self.table), "bad tensor index")
        if i in self.memo:
            return self.memo[i]
        e = self.entries[i]
        if e.span is None:
            a = np.empty(e.shape, dtype=e.npdt)
        else:
            a = np.ndarray(e.shape, dtype=e.npdt, buffer=self.storage(e.storage,
                                                                      e.npdt.kind == "b"),
                           offset=e.offset, strides=e.strides)
        if sys.byteorder != "little" and e.npdt.itemsize > 1:  # stored little-endian
            a = a.astype(e.npdt.newbyteorder("="))
        if e.kind == "npscalar":
            out = a[()]
        elif e.kind == "ndarray":
            out = a
        else:
            try:
                out = self.restore(Tensor._make(a, e.dtype, _dev.cpu_backend()), e.device,
                                   e.kind, e.requires_grad)
            except Exception as err:  # the caller's map_location failed: not the file's fault
                raise _Passthrough(err) from None
        self.memo[i] = out
        return out

    def decode(self, node):
        if node is None or type(node) in (bool, int, float, str):
            return node
        _need(type(node) is dict and node, "bad node")
        tag = next(iter(node))
        v = node[tag]
        if tag == "tensor" or tag == "ndarray":
            return self.array(v)
        if tag in ("list", "tuple", "set", "frozenset"):
            _need(type(v) is list, "bad sequence")
            items = [self.decode(x) for x in v]
            if tag in ("set", "frozenset"):
                _need_unflooded(items)
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag in ("dict", "odict", "defaultdict"):
            _need(type(v) is list and all(type(p) is list and len(p) == 2 for p in v),
                  "bad mapping")
            if tag == "dict":
                out = {}
            elif tag == "odict":
                out = collections.OrderedDict()
                if "metadata" in node:
                    out._metadata = self.decode(node["metadata"])
            else:
                factory = node.get("factory")
                _need(type(factory) in (str, type(None)) and factory in _FACTORIES,
                      "bad defaultdict factory")
                out = collections.defaultdict(_FACTORIES[factory])
            # key, value, key, ...: the order save wrote them in, so an object is defined
            # before anything refers to it
            pairs = [(self.decode(k), self.decode(x)) for k, x in v]
            _need_unflooded([k for k, _ in pairs])
            for k, x in pairs:
                out[k] = x
            return out
        if tag == "object":
            return self.build(node)
        if tag == "ref":
            _need(_is_int(v) and 0 <= v < len(self.objects), "bad object reference")
            return self.objects[v]
        if tag == "global":
            _need(type(v) is list and len(v) == 2 and _safe.check_name(*v), "bad global")
            return _safe.resolve(v[0], v[1], self.weights_only, self.allowed, construct=False)
        if tag == "complex":
            _need(type(v) is list and len(v) == 2 and all(type(x) is float for x in v),
                  "bad complex")
            return complex(*v)
        if tag in ("bytes", "bytearray"):
            _need(type(v) is str, "bad bytes")
            raw = base64.b64decode(v.encode("ascii"), validate=True)
            return raw if tag == "bytes" else bytearray(raw)
        if tag == "dtype":
            _need(v in _TENSOR_DTYPES, "bad dtype")
            return _TENSOR_DTYPES[v]
        if tag == "device":
            _need(type(v) is str and _DEVICE.match(v) is not None, "bad device")
            return _dev.device(v)
        if tag == "size":
            _need(type(v) is list and all(_is_int(n) for n in v), "bad size")
            return Size(v)
        raise _Corrupt(f"unknown node {tag!r}")

    def build(self, node: dict):
        """An object: its class resolved by the rules of `_weights_only.resolve` (a safe
        global, or with weights_only=False an nn.Module subclass), created with
        `cls.__new__(cls)` (no `__init__`), then its state set with the class's
        `__setstate__` or into its `__dict__`, as pickle and PyTorch's weights-only unpickler
        do for a class they may build."""
        name, oid, state = node.get("object"), node.get("id"), node.get("state")
        _need(type(name) is list and len(name) == 2 and _safe.check_name(*name),
              "bad object class")
        _need(_is_int(oid) and oid == len(self.objects), "bad object id")
        _need(type(state) is list and all(type(p) is list and len(p) == 2 and type(p[0]) is str
                                          for p in state), "bad object state")
        cls = _safe.resolve(name[0], name[1], self.weights_only, self.allowed, construct=True)
        try:
            obj = cls.__new__(cls)
        except Exception as err:  # the class's own code failed: not the file's fault
            raise _Passthrough(err) from None
        self.objects.append(obj)
        values = {k: self.decode(x) for k, x in state}
        setstate = getattr(cls, "__setstate__", None)
        try:
            if setstate is not None:
                setstate(obj, values)
            else:
                obj.__dict__.update(values)
        except Exception as err:  # noqa: BLE001
            raise _Passthrough(err) from None
        return obj


def _restorer(map_location) -> Callable:
    """Place each loaded (cpu) tensor where `map_location` says, then restore its kind."""
    if not (map_location is None or callable(map_location)
            or isinstance(map_location, (str, _dev.device, dict))):
        raise TypeError("map_location should be a string, a torch.device, a dict or a "
                        f"callable, not {type(map_location).__name__}")

    def target(saved: str) -> str:
        if map_location is None:
            return saved
        if isinstance(map_location, dict):
            return str(map_location.get(saved, saved))
        return str(map_location)

    def restore(t: Tensor, saved: str, kind: str, requires_grad: bool):
        if callable(map_location) and not isinstance(map_location, (dict, _dev.device)):
            moved = map_location(t, saved)
            t = t if moved is None else moved
        else:
            dev = _dev.device(target(saved))
            if dev.type == "cuda":
                from . import cuda
                if not cuda.is_available():
                    raise RuntimeError(
                        "Attempting to deserialize object on a CUDA device but "
                        "torch.cuda.is_available() is False. If you are running on a CPU-only "
                        "machine, please use torch.load with map_location=torch.device('cpu') "
                        "to map your storages to the CPU.")
            if dev.type != "cpu":
                t = t.to(dev)
        if kind == "parameter":
            from .nn.parameter import Parameter
            return Parameter(t, requires_grad)
        if requires_grad:
            t.requires_grad_(True)
        return t
    return restore


def _peek(f) -> tuple[Any, bytes]:
    """The file (rewound, or its bytes when it cannot seek) and its first bytes, which say
    which format it is in: fusetorch's magic, a zip (PyTorch) or a safetensors header."""
    n = _formats.torch_legacy.HEAD_BYTES
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return f, fh.read(n)
    try:
        here = f.tell()
        head = f.read(n)
        f.seek(here)
        return f, head
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        buf = io.BytesIO(f.read())
        return buf, buf.getvalue()[:n]


def load(f, map_location=None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args) -> Any:
    """Read what `save` wrote, from a path or a binary file object. `map_location` ('cpu', a
    device, a dict from saved to wanted device names, or `fn(tensor, saved_location)`) says
    where tensors go. `mmap` and `pickle_load_args` are accepted for PyTorch compatibility and
    change nothing.

    `weights_only` defaults to True, as in PyTorch 2.6+ (False when a `pickle_module` is
    passed; True with a `pickle_module` is PyTorch's RuntimeError). Tensors, containers and
    plain values always load. A stored object (a whole `nn.Module`, saved by
    `save(model, f)`) is rebuilt only if its class is in the safe globals
    (`fusetorch.serialization.add_safe_globals` / `safe_globals`) or, with
    `weights_only=False`, if its class is an `nn.Module` subclass (its module is imported by
    name if need be); it is created with `cls.__new__` and gets its stored attributes, and its
    `__init__` never runs. Functions and classes stored as attribute values load the same way
    (with `weights_only=False` also fusetorch's own tensor functions, `F.relu`). Anything else
    is refused with PyTorch's "Weights only load failed" error (an UnpicklingError that is
    also a RuntimeError): even with `weights_only=False` a file can never make fusetorch call
    a function it names, as a pickle can make PyTorch.

    PyTorch zip checkpoints load too (their pickle runs in a restricted unpickler under the
    same rules: see `checkpoint_formats.torch_zip`), and so do .safetensors files (a dict of
    tensors); the file's first bytes say which format it is. A truncated, damaged, foreign or
    hostile file raises RuntimeError, and so does a tensor describing more elements than its
    storage holds beyond `$FUSETORCH_LOAD_MAX_ELEMENTS` (default 2**28)."""
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    restore = _restorer(map_location)
    limit = _checks.max_elements()
    allowed = _safe.user_allowed()
    f, head = _peek(f)
    if head.startswith(_formats.ZIP_MAGIC):
        return _formats.load_torch(f, restore, limit, weights_only=weights_only,
                                   allowed=allowed)
    if _formats.looks_like_safetensors(head):
        return _formats.safetensors_io.load_tensors(f, restore, _name(f), limit)
    foreign = _formats.torch_legacy.message(_name(f), head)
    if foreign is not None:
        raise RuntimeError(foreign)
    header_bytes, data = _read_verified(f)
    try:
        header = json.loads(header_bytes.decode("utf-8"))
        _need(type(header) is dict and header.get("format") == "fusetorch"
              and header.get("version") == VERSION and "root" in header, "bad header")
        return _Decoder(header, data, restore, limit, weights_only, allowed).decode(
            header["root"])
    except _Passthrough as p:
        raise p.args[0]
    except _TooLarge as e:
        raise RuntimeError(f"fusetorch.load: refused {_name(f)}: {e}") from None
    except (_Corrupt, ValueError, TypeError, KeyError, IndexError, AttributeError,
            RecursionError, OverflowError, UnicodeError) as e:
        detail = str(e) if isinstance(e, _Corrupt) else f"{type(e).__name__}: {e}"
        raise RuntimeError(f"fusetorch.load: {_name(f)} is corrupted or not a valid fusetorch "
                           f"file ({detail})") from None
