"""What fusetorch logs on request, as `torch._logging` does: `set_logs(recompiles=True)`, or
the environment variable `FUSETORCH_LOGS=recompiles` (PyTorch's `TORCH_LOGS=recompiles` is
honoured too), logs every retrace of a compiled function with its reason to stderr, through
the `logging` logger "fusetorch.recompiles".
"""
from __future__ import annotations

import logging
import os

_ARTIFACTS = ("recompiles",)
recompiles = logging.getLogger("fusetorch.recompiles")
_handler: logging.Handler | None = None


def set_logs(*, recompiles: bool = False) -> None:
    """Turn logging of every retrace (`recompiles`) on or off; replaces what the environment
    variables asked for."""
    _enable(bool(recompiles))


def _enable(on: bool) -> None:
    global _handler
    if on and _handler is None:
        _handler = logging.StreamHandler()  # stderr, at the time of each record
        _handler.setFormatter(logging.Formatter("[fusetorch] %(message)s"))
        recompiles.addHandler(_handler)
        recompiles.setLevel(logging.DEBUG)
        recompiles.propagate = False
    elif not on and _handler is not None:
        recompiles.removeHandler(_handler)
        recompiles.setLevel(logging.NOTSET)
        recompiles.propagate = True
        _handler = None


def _from_environment() -> None:
    asked: set = set()
    for var in ("FUSETORCH_LOGS", "TORCH_LOGS"):
        for part in os.environ.get(var, "").split(","):
            part = part.strip()
            if part.startswith("+"):  # TORCH_LOGS="+recompiles": more verbose, the same here
                part = part[1:]
            if part in _ARTIFACTS:
                asked.add(part)
    if "recompiles" in asked:
        _enable(True)


_from_environment()
