"""`torch.finfo` and `torch.iinfo`: the numeric limits of a dtype, with PyTorch's attributes,
reprs and errors. Values come from numpy's finfo/iinfo (ml_dtypes' for bfloat16)."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..ir import dtypes as dt
from ..runtime.device import NP_DTYPES


class finfo:  # noqa: N801  (PyTorch's name)
    """Limits of a floating dtype: `bits eps max min tiny smallest_normal resolution dtype`,
    Python floats (dtype is its name, a str) as in PyTorch."""

    def __init__(self, type: dt.DType | None = None):  # noqa: A002  (PyTorch's keyword)
        d = dt.default_float() if type is None else dt.to_dtype(type, "finfo", "type")
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        npdt = NP_DTYPES[d]
        info = ml_dtypes.finfo(npdt) if d is dt.bfloat16 else np.finfo(npdt)
        self.bits = 8 * d.itemsize
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # decimal digits the type resolves: 10 ** -floor(-log10(eps)) (0.001 for float16)
        self.resolution = float(f"1e-{math.floor(-math.log10(self.eps))}")
        self.dtype = d.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    __str__ = __repr__


class iinfo:  # noqa: N801
    """Limits of an integer dtype: `bits min max dtype` (min/max Python ints)."""

    def __init__(self, type: dt.DType):  # noqa: A002
        d = dt.to_dtype(type, "iinfo", "type")
        if d is dt.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(NP_DTYPES[d])
        self.bits = 8 * d.itemsize
        self.min = int(info.min)
        self.max = int(info.max)
        self.dtype = d.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    __str__ = __repr__
