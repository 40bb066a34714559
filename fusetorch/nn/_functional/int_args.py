"""PyTorch's argument parser for the `int` and `int[]` arguments of convolution, pooling and
unfold/fold: a Python or numpy int, or an integer (or bool) tensor of one element, is an int; a
float, a Python bool, None, a string or a float tensor is a TypeError naming the function, the
argument and the type, as PyTorch 2.13 raises it (instead of `int(2.0)` silently giving an
answer).
"""
from __future__ import annotations

import numpy as np

from ...tracer.tensor import Tensor

__all__ = ["type_name", "is_int", "int_arg", "int_list"]


def type_name(v) -> str:
    """The type as PyTorch's messages spell it (`float`, `numpy.float64`, `Tensor`)."""
    t = type(v)
    return f"numpy.{t.__name__}" if t.__module__ == "numpy" else t.__name__


def is_int(v) -> bool:
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return False
    if isinstance(v, Tensor):  # PyTorch takes a one-element bool tensor too (as 0 or 1)
        return v._dtype.category in (0, 1) and v.numel() == 1
    return isinstance(v, (int, np.integer))


def _as_int(v) -> int:
    return int(v.item()) if isinstance(v, Tensor) else int(v)


def _where(pos: int | None) -> str:
    return f" (position {pos})" if pos is not None else ""


def int_arg(v, fn: str, arg: str, pos: int | None = None) -> int:
    """An `int` argument (groups, divisor_override)."""
    if not is_int(v):
        raise TypeError(f"{fn}(): argument '{arg}'{_where(pos)} must be int, not "
                           f"{type_name(v)}")
    return _as_int(v)


def int_list(v, n: int, fn: str, arg: str, pos: int | None = None) -> tuple:
    """An `int[n]` argument: one int (repeated n times) or a tuple/list of ints, each element
    checked; a one-element list is repeated too (PyTorch's expansion for int[n]). Other lengths
    are returned as given: callers raise their own RuntimeError for them."""
    if isinstance(v, (tuple, list)):
        for i, e in enumerate(v):
            if not is_int(e):
                raise TypeError(f"{fn}(): argument '{arg}'{_where(pos)} must be tuple of "
                                   f"ints, but found element of type {type_name(e)} at pos {i}")
        out = tuple(_as_int(e) for e in v)
        return out * n if len(out) == 1 and n > 1 else out
    if not is_int(v):
        raise TypeError(f"{fn}(): argument '{arg}'{_where(pos)} must be tuple of ints, not "
                           f"{type_name(v)}")
    return (_as_int(v),) * n
