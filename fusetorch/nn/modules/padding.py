"""nn layers: Zero/Constant/Reflection/Replication/CircularPad{1,2,3}d over `F.pad`.

`padding` is an int (every side) or a tuple (left, right[, top, bottom[, front, back]]), stored
as a tuple the way PyTorch's _pair/_quadruple/_ntuple(6) leave it; reprs as PyTorch prints them.
"""
from __future__ import annotations

from ...tracer.tensor import Tensor
from .._functional.padding import pad
from ..module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]


def _sides(padding, nd: int) -> tuple:
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * (2 * nd)


class _PadNd(Module):
    _mode = "constant"
    _nd = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _sides(padding, self._nd)

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim of [N, C, W] (or [C, W]) with `value`."""
    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with `value`."""
    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with `value`."""
    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pads the last two dims with zeros."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pads the last three dims with zeros."""


class ReflectionPad1d(_PadNd):
    """Mirrors the last dim about its edge values (padding < the dim's size)."""
    _mode, _nd = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Mirrors the last two dims about their edges."""
    _mode, _nd = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Mirrors the last three dims about their edges."""
    _mode, _nd = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Repeats the edge values of the last dim."""
    _mode, _nd = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Repeats the edge values of the last two dims."""
    _mode, _nd = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Repeats the edge values of the last three dims."""
    _mode, _nd = "replicate", 3


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        n = self._nd
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")
        return pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Wraps the last dim around (periodic boundary)."""
    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Wraps the last two dims around."""
    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Wraps the last three dims around."""
    _nd = 3
