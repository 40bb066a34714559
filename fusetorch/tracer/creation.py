"""Creation functions: tensor, zeros, ones, full, arange, rand, ..., and the legacy constructors.

Values known before the program runs (zeros, arange, random draws) go through `dispatch.source`
as `full`, `iota` and `random` nodes; data the user hands in (`tensor([...])`, `eye`) becomes a
`constant`. `from_numpy` and `as_tensor` share the caller's memory, as in PyTorch.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence as _Sequence

import numpy as np

from ..ir import dtypes as dt
from ..runtime import device as _dev
from ..runtime.device import NP_DTYPES, dtype_from_numpy
from ..runtime.eager import GENERATOR
from . import dispatch as D
from . import range_values as _range
from .tensor import Size, Tensor
from .user_warning import warn_once

_DISPATCH = D._LOCAL  # (bound once: a per-thread module's attributes read slowly)


_DEFAULT_DEVICE: "_dev.device | None" = None  # set_default_device; None is the CPU


def _backend(device, fn: str = "tensor"):
    if device is not None and not isinstance(device, (str, int, _dev.device)) \
            or isinstance(device, bool):
        raise TypeError(f"{fn}(): argument 'device' must be torch.device, not "
                        f"{type(device).__name__}")
    return _dev.backend(device if device is not None else _DEFAULT_DEVICE)


def set_default_device(device) -> None:
    """The device creation functions use when given none (`None`: back to the CPU). A CUDA
    device is only parsed here: without a GPU, creating a tensor raises, as in PyTorch."""
    global _DEFAULT_DEVICE
    if isinstance(device, int) and not isinstance(device, bool):  # an accelerator's index
        if not _dev.cuda_available():  # what torch.cuda.is_available() asks
            raise RuntimeError("Cannot access accelerator device when none is available.")
        device = f"cuda:{device}"
    _DEFAULT_DEVICE = None if device is None else _dev.device(device)


def get_default_device() -> _dev.device:
    return _DEFAULT_DEVICE if _DEFAULT_DEVICE is not None else _dev.device("cpu")


def _dtype(dtype, fn: str) -> dt.DType | None:
    return dt.to_dtype(dtype, fn)


_INT64_MAX = 2**63 - 1


def _int(v, fn: str, arg: str, pos: int) -> int:
    """An int argument (Python or numpy int, or a one-element integer tensor): PyTorch's
    TypeError for anything else, floats and bools included."""
    if isinstance(v, Tensor) and v._dtype.category == 1 and v.numel() == 1:
        v = v.item()
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{type(v).__name__}")
    return int(v)


def _alloc(shape: tuple, d: dt.DType, make):
    """Run `make()`, which allocates an array of `shape` and `d` with numpy: the sizes PyTorch
    refuses (an int64 byte count overflows) and numpy's MemoryError become PyTorch's
    RuntimeErrors."""
    D.allocation_check(shape, d)
    try:
        return make()
    except MemoryError:
        raise D.out_of_memory(shape, d) from None


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        if not t._dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad_(True)
    return t


def _size(size, fn: str = "empty") -> tuple:
    """`zeros(2, 3)`, `zeros((2, 3))`, `zeros([2, 3])` and `zeros(Size)` all mean (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for i, s in enumerate(size):
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{fn}(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__} at pos {i}")
        if not -_INT64_MAX - 1 <= s <= _INT64_MAX:  # PyTorch's sizes are int64
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {i + 1} "
                            f"with error \"Overflow when unpacking long long\"")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


_NO_SIZE = object()  # `size=` not given (None is a value PyTorch refuses)


def _size_arg(args: tuple, size, fn: str) -> tuple:
    """The size of `zeros(2, 3)`, `zeros((2, 3))` or `zeros(size=(2, 3))`, with PyTorch's
    TypeErrors for both forms at once, a keyword that is not a sequence, or no size at all
    (a 0-d result is `zeros(())`)."""
    if size is _NO_SIZE:
        if not args:
            if fn in ("rand", "randn"):
                raise TypeError(f"{fn}() received an invalid combination of arguments - got (),"
                                f" but expected (tuple of ints size, *, torch.Generator "
                                f"generator, Tensor out, torch.dtype dtype, torch.layout "
                                f"layout, torch.device device, bool pin_memory, bool "
                                f"requires_grad)")
            raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
        return _size(args, fn)
    if args:
        raise TypeError(f"{fn}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'size' must be tuple of ints, not "
                        f"{type(size).__name__}")
    return _size((size,), fn)


def _const(array: np.ndarray, d: dt.DType, be) -> Tensor:
    """Wrap host data the user handed in (a `constant` in a recording)."""
    arr = array if be.xp is np else be.xp.asarray(array)
    attrs = {"shape": tuple(arr.shape), "dtype": d, "value": array}
    if _DISPATCH.state.RECORDER is None:
        return Tensor._make(arr, d, be)
    return D.source("constant", attrs, be)


def _to_host(data, exact: bool = False):
    """Nested lists of numbers and tensors to a numpy array with PyTorch's dtype inference.
    `exact` keeps Python floats in float64 (a dtype was asked for: no rounding through float32)."""
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, _Sequence) and not isinstance(data, (list, tuple, str, bytes)):
        data = list(data)  # a range, a deque: any sequence is one to PyTorch (PySequence_Check)
    if isinstance(data, (list, tuple)):
        _check_depth(data)
        if any(isinstance(x, Tensor) for x in data):
            data = [_to_host(x) for x in data]
        try:
            arr = np.array(data)
        except ValueError:
            arr = None
        if arr is not None and arr.dtype.kind in "uO":  # ints beyond int64 or non-numbers
            for x in _leaves(data):
                _check_leaf(x)
        if arr is None or arr.dtype == object:
            _ragged_error(data)
            raise ValueError("too many dimensions or ragged nested sequence")
        if arr.dtype.kind in "USV":
            bad = next(x for x in _leaves(data) if isinstance(x, (str, bytes)))
            raise TypeError(f"new(): invalid data type '{type(bad).__name__}'")
        if arr.dtype == np.float64 and not exact and not _has_np_float64(data):
            arr = arr.astype(NP_DTYPES[dt.default_float()])
        return arr
    # numpy scalars first: np.float64 is a subclass of float and keeps its dtype
    if isinstance(data, (np.ndarray, np.generic)):
        return np.asarray(data)
    if isinstance(data, bool):
        return np.array(data, dtype=np.bool_)
    if isinstance(data, int):
        _check_leaf(data)
        return np.array(data, dtype=np.int64)
    if isinstance(data, float):
        return np.array(data, dtype=np.float64 if exact else NP_DTYPES[dt.default_float()])
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")


# PyTorch's most dimensions of a nested sequence (numpy holds at most 64 of them)
_MAX_NESTING = 128


def _check_depth(data) -> None:
    """PyTorch's sizes of a nested sequence, taken from the first element at each depth: past
    _MAX_NESTING a ValueError naming the sequence's type. A string is a sequence whose first
    element is itself (`tensor(["a"])`), and a 1000-deep list is refused before anything
    recurses through it."""
    x, depth = data, 0
    while isinstance(x, (list, tuple, str, range)):
        depth += 1
        if depth > _MAX_NESTING:
            raise ValueError(f"too many dimensions '{type(x).__name__}'")
        if not len(x):
            break
        x = x[0]
    if depth > 64:
        raise ValueError(f"too many dimensions: {depth} (fusetorch tensors have at most 64, "
                         "numpy's limit)")


def _check_leaf(x) -> None:
    """PyTorch's errors for a number it cannot hold and for a leaf that is not a number."""
    if isinstance(x, int) and not -2**63 <= x < 2**63:
        raise ValueError("Overflow when unpacking long long")
    if not isinstance(x, (int, float, np.generic, np.ndarray, str, bytes)) or \
            isinstance(x, complex):
        raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _leaves(data):
    if isinstance(data, (list, tuple)):
        for x in data:
            yield from _leaves(x)
    else:
        yield data


def _ragged_error(data) -> None:
    """PyTorch's error for a nested sequence that is not rectangular: the sizes are taken from
    the first element at each depth, and the first sequence that disagrees is named."""
    sizes, x = [], data
    while isinstance(x, (list, tuple)):
        sizes.append(len(x))
        if not x:
            break
        x = x[0]

    def walk(x, d):
        if d == len(sizes):
            if isinstance(x, (list, tuple)):
                raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as an "
                                "integer")
            return
        if not isinstance(x, (list, tuple)):
            raise TypeError("not a sequence")
        if len(x) != sizes[d]:
            raise ValueError(f"expected sequence of length {sizes[d]} at dim {d} "
                             f"(got {len(x)})")
        for y in x:
            walk(y, d + 1)
    walk(data, 0)


def _has_np_float64(data) -> bool:
    """A list holding float64 arrays keeps float64 (as PyTorch keeps numpy's dtype)."""
    if isinstance(data, np.ndarray):
        return data.dtype == np.float64
    if isinstance(data, (list, tuple)) and data:
        return _has_np_float64(data[0])
    return isinstance(data, np.float64)


def tensor(data, *, dtype: dt.DType | None = None, device=None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (numbers, nested lists, arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    dtype = _dtype(dtype, "tensor")
    be = _backend(device, "tensor")
    if isinstance(data, np.ndarray):
        _check_numpy_strides(data)  # PyTorch reads the array through from_numpy, even to copy
    arr = _to_host(data, exact=dtype is not None)
    d = dtype if dtype is not None else dtype_from_numpy(arr.dtype)
    arr = np.array(arr, dtype=NP_DTYPES[d], copy=True)
    return _finish(_const(arr, d, be), requires_grad)


def as_tensor(data, dtype: dt.DType | None = None, device=None) -> Tensor:
    """Like `tensor`, but shares memory with a numpy array or tensor when it can."""
    dtype = _dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        t = data if dtype is None else data.to(dtype)
        return t if device is None else t.to(device)
    if isinstance(data, np.ndarray) and (dtype is None or NP_DTYPES[dtype] == data.dtype) \
            and device in (None, "cpu"):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor over the array's own memory: writes through either are seen by both."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    d = dtype_from_numpy(ndarray.dtype)
    _check_numpy_strides(ndarray)
    if not ndarray.flags.writeable:
        warn_once("The given NumPy array is not writable, and PyTorch does not support "
                  "non-writable tensors. This means writing to this tensor will result in "
                  "undefined behavior. You may want to copy the array to protect its data or "
                  "make it writable before converting it to a tensor. This type of warning "
                  "will be suppressed for the rest of this program.")
    return _const(ndarray, d, _dev.cpu_backend())


def _check_numpy_strides(a: np.ndarray) -> None:
    """Refuse the arrays PyTorch refuses to wrap: kernels index in elements (byte stride /
    item size), so a byte stride that is not a multiple of the item size (a field of a
    structured array) or is negative would make compiled code read the wrong memory."""
    if any(s % a.itemsize for s in a.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    if any(s < 0 for s in a.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")


def _float_dtype(dtype, fn: str = "empty") -> dt.DType:
    dtype = _dtype(dtype, fn)
    return dtype if dtype is not None else dt.default_float()


def _fill(size, value, dtype: dt.DType, device, requires_grad, fn: str = "full") -> Tensor:
    if isinstance(value, Tensor):
        value = value.item()
    _check_number(value, fn)
    attrs = {"shape": size, "dtype": dtype, "value": D._scalar_as(value, dtype)}
    return _finish(D.source("full", attrs, _backend(device, fn)), requires_grad)


def _check_number(value, fn: str) -> None:
    if not isinstance(value, (int, float, np.number, np.bool_)):  # bool is an int
        raise TypeError(f"{fn}(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(value).__name__}")


def zeros(*args, size=_NO_SIZE, dtype=None, device=None, requires_grad=False,
          out=None) -> Tensor:
    return _out(_fill(_size_arg(args, size, "zeros"), 0, _float_dtype(dtype, "zeros"), device,
                      requires_grad, "zeros"), out)


def ones(*args, size=_NO_SIZE, dtype=None, device=None, requires_grad=False,
         out=None) -> Tensor:
    return _out(_fill(_size_arg(args, size, "ones"), 1, _float_dtype(dtype, "ones"), device,
                      requires_grad, "ones"), out)


def empty(*args, size=_NO_SIZE, dtype=None, device=None, requires_grad=False, out=None,
          memory_format=None, **_) -> Tensor:
    """Uninitialised in PyTorch; zero-filled here (the cost is the same with numpy)."""
    t = _fill(_size_arg(args, size, "empty"), 0, _float_dtype(dtype, "empty"), device,
              requires_grad, "empty")
    if memory_format is not None:
        from . import memory_formats as mf
        if mf.check(memory_format, "empty") is mf.preserve_format:
            raise RuntimeError("unsupported memory format Preserve")
        t._data = mf.empty_in_order(t._data, mf.order(memory_format, t.ndim))
    return _out(t, out)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    dtype = _dtype(dtype, "full")
    if not isinstance(fill_value, Tensor):
        _check_number(fill_value, "full")
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor)
                                else fill_value)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _out(_fill(_size((size,), "full"), fill_value, dtype, device, requires_grad), out)


def _out(t: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return t
    from .functional import write_out
    return write_out(t, out)


def _like(t: Tensor, dtype, device, fn: str = "empty_like"):
    D.check_tensor(t, fn, "input", 1)
    dtype = _dtype(dtype, fn)
    return (dtype if dtype is not None else t._dtype,
            device if device is not None else t._be.device)


def zeros_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None, **_) -> Tensor:
    d, dev = _like(input, dtype, device, "zeros_like")
    return _laid_out(input, _fill(tuple(input.shape), 0, d, dev, requires_grad, "zeros_like"),
                     memory_format)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
              memory_format=None, **_) -> Tensor:
    d, dev = _like(input, dtype, device, "ones_like")
    return _laid_out(input, _fill(tuple(input.shape), 1, d, dev, requires_grad, "ones_like"),
                     memory_format)


def empty_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None, **_) -> Tensor:
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad,
                      memory_format=memory_format)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None, **_) -> Tensor:
    d, dev = _like(input, dtype, device, "full_like")
    return _laid_out(input, _fill(tuple(input.shape), fill_value, d, dev, requires_grad,
                                  "full_like"), memory_format)


def _laid_out(input: Tensor, made: Tensor, memory_format) -> Tensor:
    """A *_like result with the layout memory_format asks (by default preserve_format:
    channels_last stays channels_last)."""
    if memory_format is None and input._data.flags.c_contiguous:
        return made
    from . import memory_formats as mf
    return mf.like(input, made, mf.preserve_format if memory_format is None else memory_format)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    d = _float_dtype(dtype, "eye")
    n = _int(n, "eye", "n", 1)
    m = n if m is None else _int(m, "eye", "m", 2)
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    arr = _alloc((n, m), d, lambda: np.eye(n, m, dtype=NP_DTYPES[d]))
    return _finish(_const(arr, d, _backend(device, "eye")), requires_grad)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
           out=None) -> Tensor:
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    for name, v in zip(("start", "end", "step"), vals):
        if not isinstance(v, (int, float, np.number)):
            raise TypeError(f"arange(): argument '{name}' must be Number, not "
                            f"{type(v).__name__}")
    start, end, step = vals
    if not all(math.isfinite(v) for v in vals):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    dtype = _dtype(dtype, "arange")
    if dtype is None and isinstance(out, Tensor):  # PyTorch computes in out's dtype
        dtype = out._dtype
    if dtype is dt.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = dt.default_float() if any(isinstance(v, float) for v in vals) else dt.int64
    n = _range.arange_size(start, end, step, dtype)
    if not dtype.is_floating_point:  # PyTorch steps integers in int64 from truncated bounds
        start, step = _range.to_dtype(start, dt.int64), _range.to_dtype(step, dt.int64)
    attrs = {"shape": (n,), "dtype": dtype, "start": start, "step": step}
    return _out(_finish(D.source("iota", attrs, _backend(device)), requires_grad), out)


def _scalar_bounds(fn: str, start, end) -> None:
    dims = [x.ndim if isinstance(x, Tensor) else 0 for x in (start, end)]
    if dims != [0, 0]:
        raise RuntimeError(f"{fn} only supports 0-dimensional start and end tensors, but got "
                           f"start with {dims[0]} dimension(s) and end with {dims[1]} "
                           f"dimension(s).")


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    _scalar_bounds("linspace", start, end)
    steps = _int(steps, "linspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = _float_dtype(dtype, "linspace")
    start, end = _range.scalar(start), _range.scalar(end)
    arr = _alloc((steps,), d, lambda: _range.linspace(start, end, steps, d))
    return _finish(_const(arr, d, _backend(device, "linspace")), requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    _scalar_bounds("logspace", start, end)
    steps = _int(steps, "logspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = _float_dtype(dtype, "logspace")
    start, end = _range.scalar(start), _range.scalar(end)
    arr = _alloc((steps,), d, lambda: _range.logspace(start, end, steps, base, d))
    return _finish(_const(arr, d, _backend(device, "logspace")), requires_grad)


# ---------------------------------------------------------------- random

class Generator:
    """`fusetorch.Generator()`: an independent random stream (`g.manual_seed(0)`)."""

    def __init__(self, device="cpu"):
        from ..runtime.eager import _Generator
        self._g = _Generator(np.random.SeedSequence().entropy & (2**63 - 1))
        self.device = _dev.device(device)

    def manual_seed(self, seed: int) -> "Generator":
        self._g.seed(_seed(seed))
        return self

    def initial_seed(self) -> int:
        return self._g.initial

    def seed(self) -> int:
        s = np.random.SeedSequence().entropy & (2**63 - 1)
        self._g.seed(s)
        return s

    def get_state(self) -> Tensor:
        """The stream's state as a uint8 tensor: PCG64's 128-bit state and increment, its
        buffered 32-bit half, and the initial seed (little-endian)."""
        st = self._g.np.bit_generator.state
        raw = (st["state"]["state"].to_bytes(16, "little") +
               st["state"]["inc"].to_bytes(16, "little") + bytes([st["has_uint32"]]) +
               int(st["uinteger"]).to_bytes(4, "little") +
               (self._g.initial & (2**64 - 1)).to_bytes(8, "little"))
        return tensor(np.frombuffer(raw, np.uint8).copy(), dtype=dt.uint8)

    def set_state(self, new_state: Tensor) -> "Generator":
        if not isinstance(new_state, Tensor) or new_state._dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = bytes(np.ascontiguousarray(new_state._host()).reshape(-1))
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a PCG64 state of size {_STATE_BYTES} but found the "
                               f"input RNG state size to be {len(raw)}")
        bg = np.random.PCG64()
        bg.state = {"bit_generator": "PCG64",
                    "state": {"state": int.from_bytes(raw[:16], "little"),
                              "inc": int.from_bytes(raw[16:32], "little")},
                    "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
        self._g.np = np.random.Generator(bg)
        self._g.initial = int.from_bytes(raw[37:45], "little")
        return self


_STATE_BYTES = 45


def default_generator() -> Generator:
    """The global CPU stream as a Generator (`torch.default_generator`)."""
    g = Generator.__new__(Generator)
    g._g, g.device = GENERATOR, _dev.device("cpu")
    return g


def manual_seed(seed: int) -> Generator:
    """Seed the global generators (CPU and CUDA, as PyTorch seeds every device); rand/randn/
    randint then repeat their draws."""
    from ..runtime.eager import CUDA_GENERATOR
    seed = _seed(seed)
    GENERATOR.seed(seed)
    CUDA_GENERATOR.seed(seed)
    return default_generator()


def _seed(seed) -> int:
    """PyTorch's seeds are 64-bit: anything in [-2**63, 2**64) is taken, a negative one as its
    two's complement (`manual_seed(-1)` then reports 2**64 - 1 as its initial seed)."""
    seed = int(seed)
    if not -2**63 <= seed < 2**64:
        raise ValueError("Overflow when unpacking long long")
    return seed & (2**64 - 1)


def initial_seed() -> int:
    return GENERATOR.initial


def seed() -> int:
    s = np.random.SeedSequence().entropy & (2**63 - 1)
    GENERATOR.seed(s)
    return s


def _random(size, dtype, dist, device, requires_grad, generator=None, low=None, high=None):
    attrs = {"shape": size, "dtype": dtype, "dist": dist, "low": low, "high": high}
    be = _backend(device)
    if generator is not None:  # draw from that stream instead of the global one
        from ..runtime.eager import _random as draw
        from .sampling import _host_break
        _host_break("a draw from a torch.Generator")  # a constant in the graph: replays repeat it
        # the stream is passed, never swapped in for the global one: a swap races with other
        # threads' draws, which would then take this stream's numbers (or keep it as global)
        arr = np.asarray(draw(np, **attrs, gen=generator._g))
        return _finish(_const(arr, dtype, be), requires_grad)
    return _finish(D.source("random", attrs, be), requires_grad)


def _check_float(dtype: dt.DType, kernel: str) -> None:
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D._torch_name(dtype)}\'')


def rand(*args, size=_NO_SIZE, generator=None, dtype=None, device=None,
         requires_grad=False) -> Tensor:
    dtype = _float_dtype(dtype, "rand")
    _check_float(dtype, "check_uniform_bounds")
    return _random(_size_arg(args, size, "rand"), dtype, "uniform", device, requires_grad,
                   generator, 0.0, 1.0)


def randn(*args, size=_NO_SIZE, generator=None, dtype=None, device=None,
          requires_grad=False) -> Tensor:
    dtype = _float_dtype(dtype, "randn")
    _check_float(dtype, "normal_kernel_cpu")
    return _random(_size_arg(args, size, "randn"), dtype, "normal", device, requires_grad,
                   generator)


def randint(*args, low=None, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """randint(high, size) or randint(low, high, size): integers in [low, high); any of them
    may be given by keyword."""
    args = list(args)
    if size is None:
        if not args:
            raise TypeError('randint() missing 1 required positional arguments: "size"')
        size = args.pop()
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"randint(): argument 'size' (position {len(args) + 1}) must be "
                            f"tuple of ints, not {type(size).__name__}")
    if high is None:
        if not args:
            raise TypeError('randint() missing 1 required positional arguments: "high"')
        high = args.pop()
    if low is None:
        low = args.pop() if args else 0
    if args:
        raise TypeError(f"randint() takes at most 3 positional arguments "
                        f"({len(args) + 3} given)")
    from .sampling import check_random_bounds, int64_arg
    low, high = int64_arg(low), int64_arg(high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    d = _dtype(dtype, "randint") or dt.int64
    check_random_bounds(d, low, high - 1)  # (a uint8 draw of [0, 300) would wrap)
    return _random(_size((size,), "randint"), d, "randint", device, requires_grad, generator,
                   low, high)


def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _laid_out(input, rand(tuple(input.shape), dtype=d, device=dev,
                                 requires_grad=requires_grad), memory_format)


def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _laid_out(input, randn(tuple(input.shape), dtype=d, device=dev,
                                  requires_grad=requires_grad), memory_format)


def randint_like(input: Tensor, low=0, high=None, *, dtype=None, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    d, dev = _like(input, dtype, device)
    return randint(low, high, tuple(input.shape), dtype=d, device=dev)


def randperm(n: int, *, generator=None, dtype=None, device=None) -> Tensor:
    n = _int(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = _dtype(dtype, "randperm") or dt.int64
    if d is dt.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if d.category == 1 and n > 1 and n - 1 > np.iinfo(NP_DTYPES[d]).max:
        raise RuntimeError(f"value cannot be converted to type {d.c_type} without overflow")
    g = generator._g.np if generator is not None else GENERATOR.np
    from .sampling import _host_break
    _host_break("randperm")  # a numpy permutation, a constant in the graph
    arr = _alloc((n,), dt.int64, lambda: g.permutation(n))
    return _const(arr.astype(NP_DTYPES[d]), d, _backend(device, "randperm"))


# ---------------------------------------------------------------- legacy constructors

def legacy_new(d: dt.DType, args: tuple, device) -> Tensor:
    """`Tensor(2, 3)` (uninitialised sizes), `Tensor([..])` / `Tensor(ndarray)` (data, converted
    to `d`), `Tensor(Size)`, `Tensor()` (empty)."""
    if not args:
        return empty(0, dtype=d, device=device)
    if len(args) == 1 and isinstance(args[0], (float, bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src._dtype is not d:
            raise TypeError(f"expected {d} (got {src._dtype})")
        return src
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) \
            or (len(args) == 1 and isinstance(args[0], Size)):
        return empty(*args, dtype=d, device=device)
    if len(args) == 1:
        return tensor(args[0], dtype=d, device=device)
    raise TypeError(f"new(): invalid arguments {args}")


class _LegacyType(type):
    """`FloatTensor(2, 3)` builds a tensor; `isinstance(t, FloatTensor)` checks its dtype (and,
    for `torch.cuda.FloatTensor` and its kind, that it is on a CUDA device)."""

    def __call__(cls, *args, device=None):
        return legacy_new(cls.dtype, args, device if device is not None else cls.device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype \
            and (cls.device is None or obj._be.device.type == cls.device)


def _legacy(name: str, d: dt.DType, device: str | None = None):
    return _LegacyType(name, (), {"dtype": d, "device": device,
                                  "__module__": "fusetorch" if device is None
                                  else f"fusetorch.{device}"})


FloatTensor = _legacy("FloatTensor", dt.float32)
DoubleTensor = _legacy("DoubleTensor", dt.float64)
HalfTensor = _legacy("HalfTensor", dt.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", dt.bfloat16)
LongTensor = _legacy("LongTensor", dt.int64)
IntTensor = _legacy("IntTensor", dt.int32)
ShortTensor = _legacy("ShortTensor", dt.int16)
CharTensor = _legacy("CharTensor", dt.int8)
ByteTensor = _legacy("ByteTensor", dt.uint8)
BoolTensor = _legacy("BoolTensor", dt.bool_)
LEGACY = {c.dtype: c for c in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor,
                               IntTensor, ShortTensor, CharTensor, ByteTensor, BoolTensor)}
# `torch.cuda.FloatTensor` and the rest (old scripts pick `Tensor = torch.cuda.FloatTensor if
# cuda else torch.FloatTensor`): tensors made on the current CUDA device
CUDA_LEGACY = {c.__name__: _legacy(c.__name__, c.dtype, "cuda") for c in LEGACY.values()}
