"""Creation functions: tensor, zeros, ones, full, arange, rand, ..., and the legacy constructors.

Values known before the program runs (zeros, arange, random draws) go through `dispatch.source`
as `full`, `iota` and `random` nodes; data the user hands in (`tensor([...])`, `eye`) becomes a
`constant`. `from_numpy` and `as_tensor` share the caller's memory, as in PyTorch.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..ir import dtypes as dt
from ..runtime import device as _dev
from ..runtime.device import NP_DTYPES, dtype_from_numpy
from ..runtime.eager import GENERATOR
from . import dispatch as D
from .tensor import Size, Tensor


def _backend(device):
    return _dev.backend(device)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        if not t._dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad_(True)
    return t


def _size(size) -> tuple:
    """`zeros(2, 3)`, `zeros((2, 3))`, `zeros([2, 3])` and `zeros(Size)` all mean (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"expected a sequence of integers as size, but got element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _const(array: np.ndarray, d: dt.DType, be) -> Tensor:
    """Wrap host data the user handed in (a `constant` in a recording)."""
    arr = array if be.xp is np else be.xp.asarray(array)
    attrs = {"shape": tuple(arr.shape), "dtype": d, "value": array}
    if D.RECORDER is None:
        return Tensor._make(arr, d, be)
    return D.source("constant", attrs, be)


def _to_host(data, exact: bool = False):
    """Nested lists of numbers and tensors to a numpy array with PyTorch's dtype inference.
    `exact` keeps Python floats in float64 (a dtype was asked for: no rounding through float32)."""
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, (list, tuple)):
        if any(isinstance(x, Tensor) for x in data):
            data = [_to_host(x) for x in data]
        try:
            arr = np.array(data)
        except ValueError:
            arr = None
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
        return np.array(data, dtype=np.int64)
    if isinstance(data, float):
        return np.array(data, dtype=np.float64 if exact else NP_DTYPES[dt.default_float()])
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")


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
    arr = _to_host(data, exact=dtype is not None)
    d = dtype if dtype is not None else dtype_from_numpy(arr.dtype)
    arr = np.array(arr, dtype=NP_DTYPES[d], copy=True)
    return _finish(_const(arr, d, _backend(device)), requires_grad)


def as_tensor(data, dtype: dt.DType | None = None, device=None) -> Tensor:
    """Like `tensor`, but shares memory with a numpy array or tensor when it can."""
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
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    d = dtype_from_numpy(ndarray.dtype)
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors.", UserWarning, stacklevel=2)
    return _const(ndarray, d, _dev.cpu_backend())


def _float_dtype(dtype) -> dt.DType:
    return dtype if dtype is not None else dt.default_float()


def _fill(size, value, dtype: dt.DType, device, requires_grad) -> Tensor:
    attrs = {"shape": size, "dtype": dtype, "value": D._scalar_as(value, dtype)}
    return _finish(D.source("full", attrs, _backend(device)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    return _out(_fill(_size(size), 0, _float_dtype(dtype), device, requires_grad), out)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    return _out(_fill(_size(size), 1, _float_dtype(dtype), device, requires_grad), out)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, **_) -> Tensor:
    """Uninitialised in PyTorch; zero-filled here (the cost is the same with numpy)."""
    return _out(_fill(_size(size), 0, _float_dtype(dtype), device, requires_grad), out)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor)
                                else fill_value)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _out(_fill(_size((size,)), fill_value, dtype, device, requires_grad), out)


def _out(t: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return t
    from .functional import write_out
    return write_out(t, out)


def _like(t: Tensor, dtype, device):
    return (dtype if dtype is not None else t._dtype,
            device if device is not None else t._be.device)


def zeros_like(input: Tensor, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _fill(tuple(input.shape), 0, d, dev, requires_grad)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _fill(tuple(input.shape), 1, d, dev, requires_grad)


def empty_like(input: Tensor, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False,
              **_) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _fill(tuple(input.shape), fill_value, d, dev, requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    d = _float_dtype(dtype)
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    arr = np.eye(n, n if m is None else m, dtype=NP_DTYPES[d])
    return _finish(_const(arr, d, _backend(device)), requires_grad)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
           out=None) -> Tensor:
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = dt.default_float() if any(isinstance(v, float) for v in vals) else dt.int64
    n = max(0, math.ceil((end - start) / step))
    attrs = {"shape": (n,), "dtype": dtype, "start": start, "step": step}
    return _out(_finish(D.source("iota", attrs, _backend(device)), requires_grad), out)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = _float_dtype(dtype)
    arr = np.linspace(start, end, steps, dtype=np.float64).astype(NP_DTYPES[d])
    return _finish(_const(arr, d, _backend(device)), requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None) -> Tensor:
    d = _float_dtype(dtype)
    arr = np.logspace(start, end, steps, base=base, dtype=np.float64).astype(NP_DTYPES[d])
    return _const(arr, d, _backend(device))


# ---------------------------------------------------------------- random

class Generator:
    """`fusetorch.Generator()`: an independent random stream (`g.manual_seed(0)`)."""

    def __init__(self, device="cpu"):
        from ..runtime.eager import _Generator
        self._g = _Generator(np.random.SeedSequence().entropy & (2**63 - 1))
        self.device = _dev.device(device)

    def manual_seed(self, seed: int) -> "Generator":
        self._g.seed(seed)
        return self

    def initial_seed(self) -> int:
        return self._g.initial

    def seed(self) -> int:
        s = np.random.SeedSequence().entropy & (2**63 - 1)
        self._g.seed(s)
        return s


def manual_seed(seed: int) -> Generator:
    """Seed the global generators (CPU and CUDA, as PyTorch seeds every device); rand/randn/
    randint then repeat their draws."""
    from ..runtime.eager import CUDA_GENERATOR
    GENERATOR.seed(int(seed))
    CUDA_GENERATOR.seed(int(seed))
    g = Generator.__new__(Generator)
    g._g, g.device = GENERATOR, _dev.device("cpu")
    return g


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
        return _finish(_const(np.asarray(_swap(generator, lambda: draw(np, **attrs))), dtype,
                              be), requires_grad)
    return _finish(D.source("random", attrs, be), requires_grad)


def _swap(generator: Generator, fn):
    saved = GENERATOR.np
    GENERATOR.np = generator._g.np
    try:
        return fn()
    finally:
        GENERATOR.np = saved


def _check_float(dtype: dt.DType, kernel: str) -> None:
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D._torch_name(dtype)}\'')


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    _check_float(_float_dtype(dtype), "check_uniform_bounds")
    return _random(_size(size), _float_dtype(dtype), "uniform", device, requires_grad,
                   generator, 0.0, 1.0)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    _check_float(_float_dtype(dtype), "normal_kernel_cpu")
    return _random(_size(size), _float_dtype(dtype), "normal", device, requires_grad, generator)


def randint(*args, size=None, generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """randint(high, size) or randint(low, high, size): integers in [low, high)."""
    args = list(args)
    if size is None:
        size = args.pop()
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"randint(): argument 'size' (position {len(args) + 1}) must be "
                            f"tuple of ints, not {type(size).__name__}")
    low, high = (0, args[0]) if len(args) == 1 else args
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    return _random(_size((size,)), dtype or dt.int64, "randint", device, requires_grad,
                   generator, int(low), int(high))


def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return rand(tuple(input.shape), dtype=d, device=dev, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return randn(tuple(input.shape), dtype=d, device=dev, requires_grad=requires_grad)


def randint_like(input: Tensor, low=0, high=None, *, dtype=None, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    d, dev = _like(input, dtype, device)
    return randint(low, high, tuple(input.shape), dtype=d, device=dev)


def randperm(n: int, *, generator=None, dtype=None, device=None) -> Tensor:
    g = generator._g.np if generator is not None else GENERATOR.np
    d = dtype or dt.int64
    return _const(g.permutation(n).astype(NP_DTYPES[d]), d, _backend(device))


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
    """`FloatTensor(2, 3)` builds a tensor; `isinstance(t, FloatTensor)` checks its dtype."""

    def __call__(cls, *args, device=None):
        return legacy_new(cls.dtype, args, device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype


def _legacy(name: str, d: dt.DType):
    return _LegacyType(name, (), {"dtype": d, "__module__": "fusetorch"})


FloatTensor = _legacy("FloatTensor", dt.float32)
DoubleTensor = _legacy("DoubleTensor", dt.float64)
HalfTensor = _legacy("HalfTensor", dt.float16)
LongTensor = _legacy("LongTensor", dt.int64)
IntTensor = _legacy("IntTensor", dt.int32)
ShortTensor = _legacy("ShortTensor", dt.int16)
CharTensor = _legacy("CharTensor", dt.int8)
ByteTensor = _legacy("ByteTensor", dt.uint8)
BoolTensor = _legacy("BoolTensor", dt.bool_)
LEGACY = {c.dtype: c for c in (FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor,
                               ShortTensor, CharTensor, ByteTensor, BoolTensor)}
