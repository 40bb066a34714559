"""The doors that set strides by hand: `frombuffer` and `as_strided`.

Compiled kernels index memory in elements (byte stride / item size), so every stride these doors
create must be a non-negative multiple of the item size, and every element must lie inside the
storage: both are checked before any array is made, with PyTorch's errors.

A tensor's "storage" is its root's array (`Tensor._root()`): the memory from the lowest to the
highest element of that array. `as_strided` offsets are counted from its start, as PyTorch counts
them from the start of the storage.
"""
from __future__ import annotations


import numpy as np

from ..ir import dtypes as dt
from ..runtime import device as _dev
from ..runtime.device import NP_DTYPES
from . import dispatch as D
from .tensor import Tensor
from .user_warning import warn_once


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-d tensor over an object's buffer (bytearray, memoryview, array.array, ...): writes
    through either are seen by both."""
    from .creation import _const, _finish, _int
    d = dt.to_dtype(dtype, "frombuffer")
    if d is None:
        raise TypeError("frombuffer(): argument 'dtype' must be torch.dtype, not NoneType")
    count = _int(count, "frombuffer", "count", 3)
    offset = _int(offset, "frombuffer", "offset", 4)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    if not view.contiguous:
        raise RuntimeError("could not retrieve buffer from object")
    n, size = view.nbytes, d.itemsize
    if n == 0 or count == 0:
        raise ValueError(f"both buffer length ({n}) and count ({count}) must not be 0")
    if not 0 <= offset < n:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({n} bytes) minus 1")
    if count < 0 and (n - offset) % size:
        raise ValueError(f"buffer length ({n - offset} bytes) after offset ({offset} bytes) must "
                         f"be a multiple of element size ({size})")
    actual = (n - offset) // size if count < 0 else count
    if offset + actual * size > n:
        raise ValueError(f"requested buffer length ({actual} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({n} bytes)")
    arr = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view,
                        dtype=NP_DTYPES[d], count=actual, offset=offset)
    if not arr.flags.writeable:
        warn_once("The given buffer is not writable, and PyTorch does not support "
                  "non-writable tensors. This means you can write to the underlying "
                  "(supposedly non-writable) buffer using the tensor. You may want to copy the "
                  "buffer to protect its data or make it writable before converting it to a "
                  "tensor. This type of warning will be suppressed for the rest of this "
                  "program.")
    return _finish(_const(arr, d, _dev.cpu_backend()), requires_grad)


def _storage(t: Tensor):
    """(the root's memory as a 1-d array of t's elements, t's offset in it in elements)."""
    root = t._root()._data
    if root.dtype != t._data.dtype:  # t is a view(dtype): its storage is the root's bytes
        return _storage_as(root, t)
    size = root.itemsize
    if any(s % size for s in root.strides):
        raise NotImplementedError("as_strided of a tensor whose storage has strides that are "
                                  "not multiples of its item size")
    # start at the root's lowest element: flip the axes that run backwards
    if any(s < 0 for s in root.strides):
        root = root[tuple(slice(None, None, -1) if s < 0 else slice(None)
                          for s in root.strides)]
    n = 0 if root.size == 0 else 1 + sum((k - 1) * s // size for k, s in
                                         zip(root.shape, root.strides))
    xp = t._be.xp
    flat = xp.lib.stride_tricks.as_strided(root, shape=(n,), strides=(size,))
    offset = (t.data_ptr() - _ptr(root, xp)) // size if n else 0
    return flat, offset


def _bytes(root, xp):
    """The memory under the array `root`, from its lowest element to the end of its highest,
    as a 1-d uint8 array; and the address it starts at."""
    low = root[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in root.strides)]
    nbytes = 0 if root.size == 0 else \
        root.itemsize + sum((k - 1) * s for k, s in zip(low.shape, low.strides))
    first = (low[(slice(0, 1),) * low.ndim] if low.ndim else low.reshape(1)).reshape(-1)[:1]
    first = first.view(xp.uint8)  # the lowest element's bytes (a view: one element is dense)
    return xp.lib.stride_tricks.as_strided(first, shape=(nbytes,), strides=(1,)), _ptr(low, xp)


def _as_dtype(raw, start: int, np_dtype):
    """The bytes of `raw` (uint8, 1-d) from `start` on as a 1-d array of `np_dtype`."""
    size = np_dtype.itemsize
    tail = raw[start:]
    return tail[:tail.shape[0] // size * size].view(np_dtype)


def _storage_as(root, t: Tensor):
    """`_storage` of a view(dtype) `t` of `root`: the root's bytes read as t's dtype."""
    raw, low = _bytes(root, t._be.xp)
    size = t._data.itemsize
    return _as_dtype(raw, 0, t._data.dtype), (t.data_ptr() - low) // size if raw.shape[0] else 0


def view_dtype(input: Tensor, dtype: dt.DType) -> Tensor:
    """`Tensor.view(dtype)`: the same memory read as `dtype`, PyTorch's rules: with another
    element size the last dim must be dense and is scaled by the size ratio, the other strides
    (and the offset) scaled with it; the result is outside autograd (PyTorch marks it not
    differentiable) and shares the version counter, as `detach()` does."""
    if D.RECORDER is not None:  # a recording cannot hold a reinterpretation of bytes
        D.RECORDER.data_read("view(dtype)")
    old, new = input._dtype, dtype
    a, b = old.itemsize, new.itemsize
    names = dt.SCALAR_TYPE_NAMES
    how = f" to view {names[old.name]} as {names[new.name]} (different element sizes)"
    data = input._data
    if a != b:
        if data.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0{how}")
        stride = input.stride()
        if a < b:
            ratio = b // a
            if data.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio}{how}, but got "
                                   f"{data.shape[-1]}")
            offset = storage_offset(input)
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio}{how}, "
                                   f"but got {offset}")
        if stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1{how}, but got {stride[-1]}")
        if a < b:
            for i, s in enumerate(stride[:-1]):
                if s % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio}{how}, "
                                       f"but got {s}")
    np_dtype = NP_DTYPES[new]
    xp = input._be.xp
    if a == b:
        out = data.view(np_dtype)  # same item size: numpy keeps any strides
    else:
        shape = data.shape[:-1] + (data.shape[-1] * a // b,)
        if data.size == 0:
            out = xp.empty(shape, np_dtype)
        else:
            # numpy's view needs the last axis dense in bytes; PyTorch's rule is only its
            # stride 1, which a size-1 last dim of any byte stride also meets: so the bytes
            raw, low = _bytes(input._root()._data, xp)
            first = _as_dtype(raw, input.data_ptr() - low, np_dtype)
            strides = tuple(s * a for s in stride[:-1]) + (b,)  # in bytes
            kw = {"writeable": bool(data.flags.writeable)} if xp is np else {}
            out = xp.lib.stride_tricks.as_strided(first, shape=shape, strides=strides, **kw)
    result = Tensor._make(out, new, input._be)
    result._base = input._root()
    from .views import alias
    alias(result, input)
    return result


def _ptr(a, xp) -> int:
    return int(a.__array_interface__["data"][0]) if xp is np else int(a.data.ptr)


def _elements(n: int, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
    """The storage positions of the elements of (shape, strides, offset), in row-major order."""
    pos = np.arange(max(n, offset + 1), dtype=np.int64)
    view = np.lib.stride_tricks.as_strided(pos[offset:], shape=shape,
                                           strides=tuple(s * 8 for s in strides))
    return view.reshape(-1).copy()


def _layout(input: Tensor, size, stride, storage_offset, name: str) -> tuple:
    """as_strided's arguments checked against input's storage, with PyTorch's errors:
    (size, stride, offset, the storage as a 1-d array, input's own offset in it)."""
    from .creation import _int
    from .functional import _ints
    D.check_tensor(input, name, "input", 1)
    for arg, pos, v in (("size", 2, size), ("stride", 3, stride)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be tuple of "
                            f"ints, not {type(v).__name__}")
    size, stride = _ints(size, name, "size"), _ints(stride, name, "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    flat, own = _storage(input)
    offset = own if storage_offset is None else _int(storage_offset, name,
                                                     "storage_offset", 4)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    n, item = flat.shape[0], input._dtype.itemsize
    empty = any(s == 0 for s in size)
    need = 0 if empty else offset + 1 + sum((k - 1) * s for k, s in zip(size, stride))
    if need > n:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{need * item} are out of bounds for storage of size {n * item}")
    return size, stride, offset, flat, own


def _repeats(positions: np.ndarray) -> bool:
    """Whether a storage position occurs twice (a mark per position: np.unique sorts or
    hashes, seconds at 2**20 positions)."""
    if len(positions) < 2:
        return False
    seen = np.zeros(int(positions.max()) + 1, dtype=bool)
    seen[positions] = True
    return int(np.count_nonzero(seen)) < len(positions)


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of `input`'s storage with the given sizes and element strides; `storage_offset`
    defaults to input's own offset in its storage (PyTorch's)."""
    size, stride, offset, flat, own = _layout(input, size, stride, storage_offset, "as_strided")
    n, item = flat.shape[0], input._dtype.itemsize
    xp = input._be.xp
    base = flat[min(offset, n):]
    byte_strides = tuple(s * item for s in stride)
    if xp is np:
        # a stride of 0 over more than one element aliases: in-place writes are PyTorch's error
        alias = any(s == 0 and k > 1 for k, s in zip(size, stride))
        data = np.lib.stride_tricks.as_strided(base, size, byte_strides, writeable=not alias)
    else:
        data = xp.lib.stride_tricks.as_strided(base, size, byte_strides)
    result = Tensor._make(data, input._dtype, input._be)
    result._base = input._root()
    from .views import derive
    derive(result, input, None, D.GRAD_ENABLED)  # steps unknown: not replayed, not rebased
    grad = D.GRAD_ENABLED and input._requires_grad
    if grad or D.RECORDER is not None:
        _record(input, result, n, own, offset, size, stride, grad)
    return result


def _record(input: Tensor, result: Tensor, n: int, own: int, offset: int, size: tuple,
            stride: tuple, grad: bool) -> None:
    """Let autograd and recordings see `result` as a gather from the flattened input, at the
    input's positions of the elements it reads. PyTorch's as_strided backward accumulates where
    the result's elements overlap, as a gather's scatter-add VJP does; an element outside the
    input (a view's storage extends beyond it) reads from a zero pad and gets no gradient."""
    from . import autograd as A
    from .creation import tensor, zeros
    from .functional import cat, gather, reshape
    numel = input.numel()
    where = _elements(n, own, tuple(input.shape), input.stride())
    if grad and _repeats(where):
        raise NotImplementedError("as_strided of a tensor that requires grad and whose elements "
                                  "overlap in memory (an expand) is not supported: call "
                                  ".contiguous() on it first")
    index_of = np.full(max(n, 1), numel, dtype=np.int64)  # numel: the pad
    index_of[where] = np.arange(numel, dtype=np.int64)
    reads = _elements(n, offset, size, stride) if result.numel() else \
        np.zeros(0, dtype=np.int64)
    idx = index_of[reads]
    flat = reshape(input, (-1,))
    padded = bool((idx == numel).any())
    if padded:
        if D.RECORDER is not None:
            if D.RECORDER.strict or (D.RECORDER.parent is not None and D.RECORDER.parent.strict):
                D.RECORDER.graph_break("as_strided reading outside its input's elements")
        flat = cat([flat, zeros(1, dtype=input._dtype, device=input.device)])
    value = reshape(gather(flat, 0, tensor(idx, device=input.device)), size)
    if D.RECORDER is not None and not padded:
        D.RECORDER.alias(result, value)
    if grad:
        result._node, result._requires_grad = value._node, True
        A.label(result, "AsStridedBackward0", input)


def as_strided_scatter(input: Tensor, src: Tensor, size, stride,
                       storage_offset: int | None = None) -> Tensor:
    """A copy of `input` with `src` written where `input.as_strided(size, stride,
    storage_offset)` would see its storage (PyTorch clones the whole storage, strides and
    offset kept, then copies into that view). Only the written positions inside input's own
    elements show, so the result is one `index_put` into input's values: its gradient is the
    cotangent's unwritten part for input and the written elements' cotangent for src."""
    from .functional import reshape
    from .functional_writes import _put
    size, stride, offset, flat, own = _layout(input, size, stride, storage_offset,
                                              "as_strided_scatter")
    D.check_tensor(src, "as_strided_scatter", "src", 2)
    if tuple(src.shape) != tuple(size):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    n = flat.shape[0]
    numel = input.numel()
    if D.RECORDER is None and not (D.GRAD_ENABLED and (D.needs_grad(input) or D.needs_grad(
            src))) and input._be.xp is np and not any(s == 0 for s in input.stride()):
        # nothing records: PyTorch's own steps on the array (a copy of the storage, a write
        # through the strided view) instead of position tables
        return _scatter_on_storage(input, src, flat, own, size, stride, offset)
    where = _elements(n, own, tuple(input.shape), input.stride())
    if _repeats(where):  # overlapping input: PyTorch clones it compact first
        n, own, offset = numel, 0, 0 if storage_offset is None else offset
        where = np.arange(numel, dtype=np.int64)
    written = _elements(max(n, offset + 1), offset, tuple(size), tuple(stride)) \
        if src.numel() else np.zeros(0, np.int64)
    if _overlaps(size, stride):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    inverse = np.full(max(n, int(written.max(initial=0)) + 1), -1, dtype=np.int64)
    inverse[where] = np.arange(numel, dtype=np.int64)
    at = inverse[written]
    keep = np.flatnonzero(at >= 0)
    values = reshape(src, (-1,))
    if len(keep) < len(written):
        values = values[_index(keep, input)]
    out = _put(reshape(input, (-1,)), values, [("tensor", 0)], [_index(at[keep], input)])
    return reshape(out, tuple(input.shape))


def _overlaps(size: tuple, stride: tuple) -> bool:
    """Whether two elements of (size, stride) share a position: no when each stride, smallest
    first, passes the extent of the dims below it (the common case, decided from the layout);
    else counted."""
    if 0 in size:
        return False
    dims = sorted((s, k) for k, s in zip(size, stride) if k > 1)
    extent = 0
    for s, k in dims:
        if s <= extent:
            span = 1 + sum((k_ - 1) * s_ for k_, s_ in zip(size, stride))
            return _repeats(_elements(span, 0, tuple(size), tuple(stride)))
        extent += (k - 1) * s
    return False


def _scatter_on_storage(input: Tensor, src: Tensor, flat, own: int, size: tuple,
                        stride: tuple, offset: int) -> Tensor:
    item = input._dtype.itemsize
    store = flat.copy()
    view = np.lib.stride_tricks.as_strided(store[min(offset, len(store)):], size,
                                           tuple(s * item for s in stride))
    if _overlaps(size, stride):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    view[...] = D.cast(src, input._dtype)._data
    out = np.lib.stride_tricks.as_strided(store[min(own, len(store)):], tuple(input.shape),
                                          tuple(s * item for s in input.stride()))
    return Tensor._make(np.ascontiguousarray(out), input._dtype, input._be)


def _index(a: np.ndarray, like: Tensor) -> Tensor:
    from .creation import tensor
    return tensor(a, dtype=dt.int64, device=like.device)


def _as_strided_method(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    return as_strided(self, size, stride, storage_offset)


def storage_offset(self: Tensor) -> int:
    """The offset of this tensor's first element in its storage, in elements."""
    return _storage(self)[1]


Tensor.as_strided = _as_strided_method
Tensor.as_strided_scatter = as_strided_scatter
Tensor.storage_offset = storage_offset
