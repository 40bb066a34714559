"""`make_tensor`: random test tensors with PyTorch's defaults (`torch/testing/_creation.py`)."""
from __future__ import annotations

import math
import warnings

from ..ir import dtypes as dt
from ..tracer.tensor import Tensor

_INTEGRAL = (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)
_FLOATING = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def _low_high(dtype: dt.DType, low, high, lowest: float, highest: float, default_low: float,
              default_high: float) -> tuple:
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype is dt.bool_ or dtype in _INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype: dt.DType, device, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None) -> Tensor:
    """A tensor of `shape` filled with random values from [low, high): PyTorch's defaults are
    [-9, 9) for floats, [-9, 10) for integers (clamped to the dtype's range), {0, 1} for bool.
    `noncontiguous` gives a strided view (every other element of a wider last dim);
    `exclude_zero` replaces zeros by 1 (integers) or the dtype's smallest normal.

        x = make_tensor(2, 3, dtype=torch.float32, device="cpu")
    """
    from ..tracer import creation
    from ..tracer.type_info import finfo, iinfo
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = dtype is dt.bool_ or dtype in _INTEGRAL
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is dt.bool_:
        low, high = _low_high(dtype, low, high, 0, 2, 0, 2)
        result = creation.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = iinfo(dtype)
        low, high = _low_high(dtype, low, high, info.min,
                              info.max + (1 if dtype is not dt.int64 else 0), -9, 10)
        result = creation.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = finfo(dtype)
        low, high = _low_high(dtype, low, high, info.min, info.max, -9, 9)
        result = creation.empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:  # uniform_ needs high - low to be finite in the dtype
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]  # offset by one to catch offset bugs too
    if exclude_zero:
        result[result == 0] = 1 if integral else finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
