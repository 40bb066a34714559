"""PyTorch zip checkpoints (`torch.save` since 1.6), read and written without PyTorch.

Layout: one top-level folder holding `data.pkl` (a protocol-2 pickle whose tensors are
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)` calls
and whose storages are persistent ids `('storage', torch.FloatStorage, key, location, numel)`),
`data/<key>` (each storage's raw little-endian bytes), `byteorder` and `version`.

Reading never executes anything from the file. The pickle runs in the pure-Python unpickler
with `find_class` limited to the globals PyTorch's own `weights_only=True` loader allows for
these files (the rebuild functions, storage classes, dtypes, `OrderedDict`, `torch.Size`,
`_codecs.encode` for protocol-2 bytes) bound to our own implementations, plus the user's safe
globals (`fusetorch.serialization.add_safe_globals`; a fusetorch class or function also
answers to the `torch.` spelling of its name), and BUILD limited to setting `_metadata` on an
OrderedDict (what `state_dict()` pickles) or the state of an allowed class; anything else
raises PyTorch's "Weights only load failed" UnpicklingError. With `weights_only=False` a
whole pickled model loads too, but not as PyTorch would (running the pickle): `torch.` names
stand for fusetorch's, NEWOBJ may create nn.Module subclasses (never calling them) and BUILD
set their state (PyTorch's Module internals mapped onto fusetorch's), and fusetorch's tensor
functions may be named as values (`torch.nn.functional.relu`); REDUCE still calls only our
rebuild functions and the user's safe globals, so a file can never call anything else.
Every tensor's layout goes through the same checks as `fusetorch.load` (`_load_checks`):
whole-element offsets and strides, none negative, first and last element inside the storage,
bounded element counts; bool storages are normalised to bytes 0 and 1. Records are stored (not
compressed) and may not overlap, so reading them allocates at most the file's size; a damaged
archive is a RuntimeError.
"""
from __future__ import annotations

import codecs
import collections
import contextlib
import io
import os
import pickle
import sys
import zipfile
from typing import Any, Callable

import numpy as np

from .. import _load_checks as _checks
from .._atomic_file import replacing
from .. import _weights_only as _safe
from ..ir import dtypes as dt
from ..runtime import device as _dev
from ..tracer.tensor import Size, Tensor

ZIP_MAGIC = b"PK\x03\x04"

_STORAGES = {  # torch storage class name -> fusetorch dtype
    "FloatStorage": dt.float32, "DoubleStorage": dt.float64, "HalfStorage": dt.float16,
    "BFloat16Storage": dt.bfloat16, "LongStorage": dt.int64, "IntStorage": dt.int32,
    "ShortStorage": dt.int16, "CharStorage": dt.int8, "ByteStorage": dt.uint8,
    "BoolStorage": dt.bool_,
}
_BY_DTYPE = {d: name for name, d in _STORAGES.items()}
_DTYPE_NAMES = {d.name: d for d in dt.ALL}

# PyTorch 2.13's words and the safe-globals rules are shared with the native format
WeightsOnlyError = _safe.WeightsOnlyError
_refuse = _safe.refuse
_BLOCKED_MODULES = _safe.BLOCKED_MODULES


class _Global:
    """A torch global named in the pickle (`torch._utils._rebuild_tensor_v2`, ...), resolved
    to one of our functions when loading and written as a bare GLOBAL when saving."""

    def __init__(self, module: str, name: str, fn: Callable | None = None):
        self.module, self.name, self.fn = module, name, fn

    def __call__(self, *args):
        if self.fn is None:
            raise _refuse(f"Unsupported operand calling {self.module}.{self.name}")
        return self.fn(*args)

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"


class _StorageClass:
    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype


class _Storage:
    """One loaded storage: its bytes as an owned uint8 buffer and its dtype."""

    def __init__(self, buf: np.ndarray, dtype):
        self.buf, self.dtype = buf, dtype


def _is_int(v) -> bool:
    return type(v) is int


class _Reader:
    def __init__(self, zf: zipfile.ZipFile, prefix: str, restore: Callable, limit: int):
        self.zf, self.prefix, self.restore, self.limit = zf, prefix, restore, limit
        self.storages: dict[str, _Storage] = {}

    # -- globals the pickle may name
    def rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None):
        if not isinstance(storage, _Storage):
            raise _refuse("_rebuild_tensor_v2 expects a storage")
        if not (_is_int(offset) and type(size) in (tuple, Size) and type(stride) is tuple
                and len(size) == len(stride) <= 64 and all(_is_int(n) for n in size)
                and all(_is_int(s) for s in stride) and type(requires_grad) is bool):
            raise _refuse("_rebuild_tensor_v2: bad size, stride or offset")
        d = storage.dtype
        npdt = np.dtype(_dev.NP_DTYPES[d])
        k = npdt.itemsize
        shape, strides = list(size), [s * k for s in stride]
        if any(n < 0 for n in shape) or not _checks.fits_int64(shape, strides, offset * k):
            raise _refuse("_rebuild_tensor_v2: bad size, stride or offset")
        nbytes = storage.buf.nbytes
        if 0 not in shape:
            problem = _checks.layout_error(shape, strides, offset * k, k, nbytes,
                                           negative_strides=False)
            if problem is not None:
                raise RuntimeError(f"fusetorch.load: a tensor in the checkpoint {problem}")
        count = _checks.too_many_elements(shape, k, nbytes, self.limit)
        if count is not None:
            raise RuntimeError(
                f"fusetorch.load: refused a tensor of {_checks.show(count)} elements from a "
                f"storage of {nbytes // k}; set {_checks.MAX_ELEMENTS_ENV} to load it")
        if 0 in shape:
            a = np.empty(shape, dtype=npdt)
        else:
            a = np.ndarray(shape, dtype=npdt.newbyteorder("<") if k > 1 else npdt,
                           buffer=storage.buf, offset=offset * k, strides=strides)
            if sys.byteorder != "little" and k > 1:
                a = a.astype(npdt)
        t = Tensor._make(a, d, _dev.cpu_backend())
        return self.restore(t, storage.location, "tensor", requires_grad)

    def rebuild_parameter(self, data, requires_grad, hooks=None, state=None):
        if not isinstance(data, Tensor) or type(requires_grad) is not bool:
            raise _refuse("_rebuild_parameter expects a tensor and a bool")
        from ..nn.parameter import Parameter
        if requires_grad and not data.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return Parameter(data, requires_grad)

    def load_storage(self, pid) -> _Storage:
        if not (type(pid) is tuple and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageClass) and type(pid[2]) is str
                and type(pid[3]) is str and _is_int(pid[4]) and pid[4] >= 0):
            raise _refuse(f"Unsupported persistent id {pid!r:.200}")
        _, cls, key, location, numel = pid
        if key in self.storages:
            return self.storages[key]
        name = f"{self.prefix}data/{key}"
        info = _member(self.zf, name)
        want = numel * np.dtype(_dev.NP_DTYPES[cls.dtype]).itemsize
        if info.file_size != want:
            raise RuntimeError(f"fusetorch.load: storage {key!r} of the checkpoint holds "
                               f"{info.file_size} bytes, its header says {want}")
        # read, then copy: a claimed size never allocates more than the file holds
        buf = np.frombuffer(bytearray(_read(self.zf, info)), dtype=np.uint8)
        if buf.nbytes != want:
            raise RuntimeError(f"fusetorch.load: storage {key!r} of the checkpoint is damaged")
        if cls.dtype is dt.bool_:  # kernels read a bool as its byte: a 2 would sum as 2
            np.not_equal(buf, 0, out=buf.view(np.bool_))
        s = _Storage(buf, cls.dtype)
        s.location = location
        self.storages[key] = s
        return s


def _member(zf: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise RuntimeError(f"fusetorch.load: the checkpoint has no record {name!r}") from None
    # torch writes every record stored; refusing compression keeps reads to the bytes the
    # file holds (no zip bombs)
    if info.compress_type != zipfile.ZIP_STORED:
        raise RuntimeError(f"fusetorch.load: record {name!r} is compressed; PyTorch "
                           "checkpoints store their records uncompressed")
    return info


def _globals(reader: _Reader) -> dict[tuple[str, str], Any]:
    allowed: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): reader.rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): reader.rebuild_parameter,
        ("torch", "Size"): Size,
        ("_codecs", "encode"): _latin1,
        ("builtins", "set"): _unflooded(set), ("builtins", "frozenset"): _unflooded(frozenset),
        ("builtins", "bytearray"): bytearray, ("builtins", "complex"): complex,
        ("torch", "device"): _dev.device,
    }
    for name, d in _STORAGES.items():
        allowed[("torch", name)] = _StorageClass(name, d)
    for name, d in _DTYPE_NAMES.items():
        allowed[("torch", name)] = d
    return allowed


def _check_keys(keys) -> None:
    """Refuse keys that would make building a dict or set quadratic (many distinct keys with
    one hash: ints hash to themselves modulo a prime), as the native format does."""
    if _checks.most_sharing_one_hash(keys) > _checks.MAX_SAME_HASH:
        raise _refuse(f"more than {_checks.MAX_SAME_HASH} keys share one hash (a "
                      "hash-flooding file)")


def _unflooded(kind: type) -> Callable:
    def build(items=()):
        items = list(items)
        _check_keys(items)
        return kind(items)
    return build


def _latin1(s, encoding="latin1"):
    """`_codecs.encode`, which protocol-2 pickles use to spell bytes."""
    if type(s) is not str or encoding != "latin1":
        raise _refuse("_codecs.encode is allowed only for latin1 bytes")
    return s.encode("latin1")


_MISSING = object()
# PyTorch's Module internals that fusetorch's Module does not have: dropped when empty
_TORCH_ONLY_HOOKS = ("_backward_hooks", "_backward_pre_hooks", "_forward_hooks_always_called",
                     "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs",
                     "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _ours(module: str) -> str:
    """The fusetorch module a torch module name stands for (`torch.nn.modules.linear` ->
    `fusetorch.nn.modules.linear`); other names are themselves."""
    if module == "torch" or module.startswith("torch."):
        return "fusetorch" + module[len("torch"):]
    return module


def _module_state(state: dict) -> dict:
    """A PyTorch nn.Module's pickled `__dict__` in fusetorch's Module's terms: the same
    attribute names except `_non_persistent_buffers_set` and the hook tables fusetorch has
    not got (refused unless empty: hooks are functions, not weights)."""
    out = {}
    for k, v in state.items():
        if k in _TORCH_ONLY_HOOKS:
            if v:
                raise RuntimeError(f"fusetorch.load: a module in the checkpoint has {k} "
                                   "registered, which fusetorch's modules do not support")
        elif k == "_is_full_backward_hook":
            pass
        elif k == "_non_persistent_buffers_set":
            out["_non_persistent_buffers"] = set(v)
        elif k in ("_parameters", "_buffers", "_modules", "_forward_hooks",
                   "_forward_pre_hooks") and type(v) in (dict, collections.OrderedDict):
            out[k] = collections.OrderedDict(v)
        else:
            out[k] = v
    return out


class _Unpickler(pickle._Unpickler):  # the pure-Python one: its opcodes can be overridden
    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, reader: _Reader, weights_only: bool = True,
                 allowed: dict | None = None):
        super().__init__(io.BytesIO(data))
        self.reader = reader
        self.allowed = _globals(reader)
        self.hash_counts: dict[int, tuple[dict, Any]] = {}
        self.weights_only = weights_only
        self.user = allowed or {}
        self.user_ids = {id(v) for v in self.user.values()}
        # what REDUCE may call: our own rebuild functions, and what the user allowlisted
        self.callable_ids = {id(v) for v in self.allowed.values()} | self.user_ids
        self.buildable: dict[int, type] = {}  # classes NEWOBJ may create and BUILD may fill
        self.keep: list = []

    def _user_global(self, module: str, name: str) -> Any:
        """A safe global the user added that this name stands for: by path (the torch
        spelling of a fusetorch class's path counts), or by identity with the fusetorch
        object a `torch.` name resolves to (`torch.nn.functional.relu` is `F.relu`, whose own
        path is `fusetorch.nn._functional.activation.relu`)."""
        path = f"{module}.{name}"
        for p in (path, f"{_ours(module)}.{name}"):
            if p in self.user:
                return self.user[p]
        if self.user and _ours(module) != module and _safe.check_name(module, name):
            try:
                obj = _safe.import_path(_ours(module), name)
            except WeightsOnlyError:
                return _MISSING
            if id(obj) in self.user_ids:
                return obj
        return _MISSING

    def find_class(self, module, name):
        if module == "__builtin__":  # protocol 2 spells builtins the Python 2 way
            module = "builtins"
        key = (module, name)
        if key in self.allowed:
            return self.allowed[key]
        if module in _BLOCKED_MODULES:
            raise _safe.blocked(module, name)
        path = f"{module}.{name}"
        obj = self._user_global(module, name)
        if obj is not _MISSING:
            if isinstance(obj, type):
                self.buildable[id(obj)] = obj
            return obj
        if self.weights_only or not _safe.check_name(module, name):
            raise _safe.not_allowed(path)
        # weights_only=False: PyTorch would unpickle anything; fusetorch creates only
        # nn.Module subclasses (never calling them) and refers only to its tensor functions
        obj = _safe.import_path(_ours(module), name)
        if _safe.is_module_class(obj):
            self.buildable[id(obj)] = obj
            return obj
        if _safe.tensor_function(obj):
            return obj
        raise _safe.not_rebuildable(path, "a global the checkpoint names")

    def persistent_load(self, pid):
        return self.reader.load_storage(pid)

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is collections.OrderedDict and type(state) is dict \
                and all(type(k) is str for k in state):
            inst.__dict__.update(state)  # `_metadata`: the state_dict's version records
            return
        if id(type(inst)) not in self.buildable:
            raise _refuse(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                          f"via `add_safe_globals`, but got {type(inst)}")
        from ..nn.module import Module
        if isinstance(inst, Module) and type(state) is dict:
            state = _module_state(state)
        setstate = getattr(type(inst), "__setstate__", None)
        if setstate is not None:
            setstate(inst, state)
            return
        slots = None  # as pickle's load_build
        if type(state) is tuple and len(state) == 2:
            state, slots = state
        if state:
            if type(state) is not dict or not all(type(k) is str for k in state):
                raise _refuse(f"BUILD state of a {type(inst).__name__} must be a dict")
            inst.__dict__.update(state)
        if slots:
            if type(slots) is not dict:
                raise _refuse("BUILD slot state must be a dict")
            for k, v in slots.items():
                setattr(inst, k, v)

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if type(args) is not tuple:
            raise _refuse("REDUCE arguments must be a tuple")
        if id(func) not in self.callable_ids:
            raise _refuse(f"Trying to call reduce for unrecognized function {func!r:.200}")
        if func is collections.OrderedDict and args:
            raise _refuse("OrderedDict is built only empty")
        self.stack[-1] = func(*args)

    def _grow(self, target, keys) -> None:
        """Count the hashes of the keys added to a dict or set as SETITEM(S)/ADDITEMS add
        them (the container lives on the stack; its counter is kept with it)."""
        if type(target) not in (dict, collections.OrderedDict, set):
            raise _refuse(f"SETITEM/ADDITEMS on a {type(target).__name__}, not a dict or set")
        counts = self.hash_counts.setdefault(id(target), ({}, target))[0]
        for k in keys:
            h = hash(k)
            counts[h] = counts.get(h, 0) + 1
            if counts[h] > _checks.MAX_SAME_HASH:
                _check_keys([k] * (_checks.MAX_SAME_HASH + 1))

    def load_setitem(self):
        if len(self.stack) < 3:
            raise _refuse("SETITEM without a dict")
        self._grow(self.stack[-3], [self.stack[-2]])
        pickle._Unpickler.load_setitem(self)

    def load_setitems(self):  # (the items since MARK are `self.stack`, the dict below it)
        if not self.metastack or not self.metastack[-1]:
            raise _refuse("SETITEMS without a dict")
        self._grow(self.metastack[-1][-1], self.stack[::2])
        pickle._Unpickler.load_setitems(self)

    def load_additems(self):
        if not self.metastack or not self.metastack[-1]:
            raise _refuse("ADDITEMS without a set")
        self._grow(self.metastack[-1][-1], self.stack)
        pickle._Unpickler.load_additems(self)

    def load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is collections.OrderedDict and args == ():
            self.append(collections.OrderedDict())
            return
        if type(args) is not tuple or id(cls) not in self.buildable \
                or (args and id(cls) not in self.user_ids):
            raise _refuse("Can only create new object for nn.Parameter or classes allowlisted "
                          f"via `add_safe_globals` but got {cls!r:.100}")
        self.append(cls.__new__(cls, *args))

    def _no(self):
        raise _refuse("Unsupported operand: the pickle opcodes INST, OBJ, NEWOBJ_EX, EXT "
                      "and STACK_GLOBAL are not allowed")

    dispatch[pickle.SETITEM[0]] = load_setitem
    dispatch[pickle.SETITEMS[0]] = load_setitems
    dispatch[pickle.ADDITEMS[0]] = load_additems
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    for _op in (pickle.INST, pickle.OBJ, pickle.NEWOBJ_EX, pickle.EXT1, pickle.EXT2,
                pickle.EXT4, pickle.STACK_GLOBAL):
        dispatch[_op[0]] = _no
    del _op


# Errors zipfile raises reading a damaged archive (a bad CRC, a truncated or misnamed local
# header, offsets past the end: BadZipFile, EOFError, ValueError for a negative seek,
# UnicodeDecodeError for a name): PyTorch's reader says RuntimeError for all of them.
_ZIP_ERRORS = (zipfile.BadZipFile, EOFError, ValueError, OSError)


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        return zf.read(info)
    except _ZIP_ERRORS as e:
        raise RuntimeError(f"fusetorch.load: PytorchStreamReader failed reading file "
                           f"{info.filename!r:.200} ({type(e).__name__}: {e})") from None


_LOCAL_HEADER = 30  # bytes of a zip local file header before its name and extra field


def _check_records(zf: zipfile.ZipFile) -> None:
    """Refuse records whose bytes overlap. Each record is read into its own buffer, so
    records that share bytes (each one's data running over the next ones, a known zip bomb
    that needs no compression) let a 1 MiB file with 300 records take 300 MiB; an archive
    `torch.save` wrote never has them. A record spans at least its local header, its name and
    its data, and must end before the next record (or the central directory) begins.
    (CPython 3.12's zipfile makes the same check as 'Overlapped entries'.)"""
    records = sorted(zf.infolist(), key=lambda i: i.header_offset)
    ends = [r.header_offset for r in records[1:]] + [zf.start_dir]
    for record, end in zip(records, ends):
        least = (record.header_offset + _LOCAL_HEADER + len(record.orig_filename.encode(
            "utf-8" if record.flag_bits & 0x800 else "cp437", "replace")) + record.compress_size)
        if record.header_offset < 0 or least > end:
            raise RuntimeError(f"fusetorch.load: record {record.filename!r:.200} of the zip "
                               "archive overlaps the next one (a damaged or hostile file)")


def _prefix(zf: zipfile.ZipFile) -> str:
    names = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(names) != 1:
        raise RuntimeError("fusetorch.load: the zip archive is not a PyTorch checkpoint "
                           "(it needs exactly one <name>/data.pkl record)")
    return names[0][:-len("data.pkl")]


def load_torch(f, restore: Callable, limit: int, *, weights_only: bool = True,
               allowed: dict | None = None) -> Any:
    """What `torch.save` wrote to `f` (a path or a binary file object). `allowed` is the
    user's safe globals (path -> object); `weights_only=False` also lets the pickle create
    nn.Module subclasses (`torch.` names stand for fusetorch's) and name fusetorch's tensor
    functions, never call them."""
    try:
        zf = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise RuntimeError("fusetorch.load: PytorchStreamReader failed reading zip archive "
                           f"({e})") from None
    with zf:
        _check_records(zf)
        prefix = _prefix(zf)
        order = f"{prefix}byteorder"
        if order in zf.namelist() and _read(zf, _member(zf, order)) != b"little":
            raise RuntimeError("fusetorch.load: big-endian PyTorch checkpoints are not "
                               "supported")
        reader = _Reader(zf, prefix, restore, limit)
        data = _read(zf, _member(zf, f"{prefix}data.pkl"))
        try:
            return _Unpickler(data, reader, weights_only, allowed).load()
        except (WeightsOnlyError, RuntimeError):
            raise
        except (zipfile.BadZipFile, pickle.UnpicklingError, EOFError, ValueError, TypeError,
                KeyError, IndexError, AttributeError, RecursionError, OverflowError,
                UnicodeError, MemoryError) as e:
            raise _refuse(f"{type(e).__name__}: {e}") from None


# ------------------------------------------------------------------------------------- save

def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class _Pickler(pickle._Pickler):
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, fh, storages: list):
        super().__init__(fh, protocol=2)
        self.storages = storages  # (key, dtype, array) in key order
        self.by_root: dict[int, str] = {}
        self.keep: list = []

    def save_torch_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_Global] = save_torch_global

    def save_dtype(self, obj) -> None:  # `torch.float16` is pickled as the global itself
        self.write(pickle.GLOBAL + f"torch\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[dt.DType] = save_dtype

    def persistent_id(self, obj):
        if isinstance(obj, tuple) and len(obj) == 2 and obj[0] is _STORAGE_TAG:
            key, d, n = obj[1]
            return ("storage", _Global("torch", _BY_DTYPE[d]), key, "cpu", n)
        return None

    def storage_for(self, a: np.ndarray, d) -> tuple[tuple, int, tuple]:
        """(storage ref, element offset, element strides) for array `a` of dtype `d`: the
        array it views when that is a plain contiguous array of its dtype, else a copy."""
        k = a.itemsize
        root = _root(a)
        ptr = a.__array_interface__["data"][0]
        rptr = root.__array_interface__["data"][0]
        share = (a.size > 0 and root.dtype == a.dtype and root.flags.c_contiguous
                 and (ptr - rptr) % k == 0 and all(s >= 0 and s % k == 0 for s in a.strides)
                 and a.dtype.byteorder in "=|<")
        if not share:
            root = np.array(a, order="C")  # (keeps 0-d arrays 0-d)
            rptr = ptr = root.__array_interface__["data"][0]
        if id(root) not in self.by_root:
            self.keep.append(root)
            self.by_root[id(root)] = str(len(self.storages))
            self.storages.append((self.by_root[id(root)], root))
        key = self.by_root[id(root)]
        ref = (_STORAGE_TAG, (key, d, root.size))
        if share:
            strides = tuple(s // k for s in a.strides)
        else:  # a fresh C-contiguous copy (numpy's strides of an empty one are arbitrary)
            strides, n = [], 1
            for size in reversed(a.shape):
                strides.insert(0, n)
                n *= max(size, 1)
            strides = tuple(strides)
        return ref, (ptr - rptr) // k, strides

    def reducer_override(self, obj):
        t = type(obj)
        if obj is None or t in (bool, int, float, str, bytes, list, tuple, dict, set,
                                frozenset, collections.OrderedDict, complex, bytearray,
                                _Global, dt.DType) or (isinstance(obj, tuple) and obj and
                                             obj[0] is _STORAGE_TAG) \
                or any(obj is g for g in _PLAIN_GLOBALS):
            return NotImplemented
        if isinstance(obj, Tensor):
            from ..nn.parameter import Parameter
            if obj.dtype not in _BY_DTYPE:
                raise TypeError(f"cannot save a {obj.dtype} tensor in PyTorch's format")
            a = obj._host()
            ref, offset, strides = self.storage_for(a, obj.dtype)
            rg = bool(obj.requires_grad)
            rebuilt = (_Global("torch._utils", "_rebuild_tensor_v2"),
                       (ref, offset, tuple(a.shape), strides,
                        rg and not isinstance(obj, Parameter), collections.OrderedDict()))
            if isinstance(obj, Parameter):
                return (_Global("torch._utils", "_rebuild_parameter"),
                        (_Rebuilt(rebuilt), rg, collections.OrderedDict()))
            return rebuilt
        if isinstance(obj, _Rebuilt):
            return obj.rv
        if t is Size:
            return (_Global("torch", "Size"), (tuple(obj),))
        if t is _dev.device:
            return (_Global("torch", "device"), (str(obj),))
        raise TypeError(f"cannot save an object of type '{t.__module__}.{t.__qualname__}' in "
                        "PyTorch's format: tensors, numbers, strings, dtypes, devices and "
                        "containers of these only")


_STORAGE_TAG = object()
# globals the pickle module itself writes at protocol 2 (all in the loader's allowlist)
_PLAIN_GLOBALS = (collections.OrderedDict, codecs.encode, bytearray, set, frozenset, complex)


class _Rebuilt:
    def __init__(self, rv):
        self.rv = rv


def _aligned(zf: zipfile.ZipFile, fh, name: str, data: bytes) -> None:
    """Write a stored record whose bytes start on a 64-byte boundary (as torch does, so
    readers may map storages in place), padding the local header's extra field."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = fh.tell() + 30 + len(name.encode("utf-8")) + 4
    pad = -start % 64
    info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad
    zf.writestr(info, data)


def save_torch(obj: Any, f) -> None:
    """Write `obj` so that `torch.load(f, weights_only=True)` opens it."""
    storages: list = []
    pkl = io.BytesIO()
    _Pickler(pkl, storages).dump(obj)
    owned = isinstance(f, (str, os.PathLike))
    name = "archive"
    if owned:
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
        if not name.isidentifier():
            name = "archive"
    with (replacing(f) if owned else contextlib.nullcontext(f)) as fh:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
            _aligned(zf, fh, f"{name}/data.pkl", pkl.getvalue())
            _aligned(zf, fh, f"{name}/.format_version", b"1")
            _aligned(zf, fh, f"{name}/.storage_alignment", b"64")
            _aligned(zf, fh, f"{name}/byteorder", b"little")
            for key, a in storages:
                le = a.astype(a.dtype.newbyteorder("<"), copy=False) if a.itemsize > 1 else a
                _aligned(zf, fh, f"{name}/data/{key}",
                         np.ascontiguousarray(le).reshape(-1).view(np.uint8).tobytes())
            _aligned(zf, fh, f"{name}/version", b"3\n")
