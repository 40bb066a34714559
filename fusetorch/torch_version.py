"""`torch.torch_version.TorchVersion`: a version string that compares as a version
(`torch.__version__ >= "0.1"`, `>= (0, 1)`)."""
from __future__ import annotations

import re

__all__ = ["TorchVersion"]


def _parts(v) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(int(p) for p in v)
    nums = re.match(r"^\s*v?(\d+(?:\.\d+)*)", str(v))
    if nums is None:
        raise ValueError(f"Invalid version: '{v}'")
    return tuple(int(p) for p in nums.group(1).split("."))


def _cmp(a, b) -> int:
    x, y = _parts(a), _parts(b)
    n = max(len(x), len(y))
    x, y = x + (0,) * (n - len(x)), y + (0,) * (n - len(y))
    return (x > y) - (x < y)


class TorchVersion(str):
    """A `str` whose comparisons read release numbers ("0.10" > "0.9")."""

    def __lt__(self, other) -> bool:
        return _cmp(self, other) < 0

    def __le__(self, other) -> bool:
        return _cmp(self, other) <= 0

    def __gt__(self, other) -> bool:
        return _cmp(self, other) > 0

    def __ge__(self, other) -> bool:
        return _cmp(self, other) >= 0

    def __eq__(self, other) -> bool:
        try:
            return _cmp(self, other) == 0
        except (ValueError, TypeError):
            return str.__eq__(self, other)

    __hash__ = str.__hash__
