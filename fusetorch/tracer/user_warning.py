"""Warnings PyTorch raises from C++, attributed as Python shows them: to the user's line (the
first frame outside fusetorch), however many of fusetorch's frames lie in between; `warn_once`
is TORCH_WARN_ONCE, which warns once per process whatever the warnings filters say."""
from __future__ import annotations

import os
import sys
import warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_at_user(message: str, category: type = UserWarning) -> None:
    f, level = sys._getframe(1), 2
    while f is not None and f.f_code.co_filename.startswith(_ROOT):
        f, level = f.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_WARNED_ONCE: set = set()


def warn_once(message: str, category: type = UserWarning) -> None:
    """`warn_at_user` the first time this message is raised in the process, then never again."""
    if message in _WARNED_ONCE:
        return
    _WARNED_ONCE.add(message)
    f, level = sys._getframe(1), 2
    while f is not None and f.f_code.co_filename.startswith(_ROOT):
        f, level = f.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
