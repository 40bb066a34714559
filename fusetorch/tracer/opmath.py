"""ATen's opmath for float16/bfloat16 composites: PyTorch's CPU kernels for half-precision
tensors (lerp, addmm's bias, the norms, interpolation, the losses' fused forms) load the half
values into float32, compute there and round the result once. A composition of primitives
rounds after every step instead, which puts results several ulps off (2 to 128 in OpInfo's
samples). `in_float32` runs a composition the kernel's way: its half tensors cast to float32,
its float32 results cast back.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ir import dtypes as dt
from . import autograd as A
from . import dispatch as D
from .tensor import Tensor

HALF = (dt.float16, dt.bfloat16)


def half_dtype(*values: Any) -> dt.DType | None:
    """The half-precision dtype of the first float16/bfloat16 tensor among `values` (one
    level of lists and tuples too), else None."""
    for v in values:
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, Tensor) and t._dtype in HALF:
                return t._dtype
    return None


def to_float32(v: Any, half: dt.DType | None = None) -> Any:
    """v in float32 if it is a tensor of dtype `half` (any float16/bfloat16 one when None);
    lists and tuples item by item; anything else as it is."""
    if isinstance(v, Tensor) and (v._dtype is half if half else v._dtype in HALF):
        return D.cast(v, dt.float32)
    if isinstance(v, (list, tuple)) and any(isinstance(t, Tensor) for t in v):
        return type(v)(to_float32(t, half) for t in v)
    return v


def round_to(r: Any, half: dt.DType | None, grad_name: str | None = None, *inputs) -> Any:
    """A float32 result r rounded once to `half` (None: r as it is), its grad_fn named
    `grad_name` over `inputs` when given."""
    if half is None or not isinstance(r, Tensor) or r._dtype is not dt.float32:
        return r
    r = D.cast(r, half)
    return A.label_recorded(r, grad_name, *inputs) if grad_name else r


def in_float32(fn: Callable, *args: Any, grad_name: str | None = None, **kwargs: Any) -> Any:
    """fn(*args, **kwargs) with the half tensors among the arguments in float32 and its float32
    tensor results rounded back to that half dtype once (a tuple's items one by one); with no
    half tensor, fn as it is. `grad_name` labels the rounded results' grad_fn, as the kernel's
    one node would be named.

    >>> x = torch.tensor([1.0, 2.0], dtype=torch.float16)
    >>> in_float32(lambda a: a * 3.0 - 1.0, x).dtype
    torch.float16"""
    half = half_dtype(*args, *kwargs.values())
    if half is None:
        return fn(*args, **kwargs)
    out = fn(*(to_float32(a, half) for a in args),
             **{k: to_float32(v, half) for k, v in kwargs.items()})
    inputs = [t for a in list(args) + list(kwargs.values())
              for t in (a if isinstance(a, (list, tuple)) else (a,)) if isinstance(t, Tensor)]
    if isinstance(out, tuple):
        items = [round_to(r, half, grad_name, *inputs) for r in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    return round_to(out, half, grad_name, *inputs)
