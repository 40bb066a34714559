"""`torch._dynamo`: the names training scripts touch beside `torch.compile`, so they run.
fusetorch.compile traces by running the function (no bytecode capture): `config` holds
PyTorch's dynamo flags, accepted and ignored (fusetorch always falls back to eager at a graph
break, as `suppress_errors=True` asks); `reset()` has nothing to drop (compiled programs are
cached by structure, so none goes stale); `disable` returns the function to run eagerly
(fusetorch.compile(disable=True) is the same); the `mark_*` hints are accepted (fusetorch
specializes on every shape). Any other name raises the out-of-scope error."""
from __future__ import annotations

from typing import Any, Callable

from . import config  # noqa: F401


def reset() -> None:
    """Nothing to drop: fusetorch's compiled programs are keyed by the graph's structure."""


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """The function unchanged (run eagerly); usable as `@disable` and `@disable()`."""
    if fn is None:
        return lambda f: f
    return fn


def is_compiling() -> bool:
    """True while fusetorch.compile traces the calling code."""
    from ..tracer import dispatch as D
    r = D.RECORDER
    return r is not None and (r.strict or (r.parent is not None and r.parent.strict))


def mark_dynamic(t: Any, index: Any, *, min: int | None = None, max: int | None = None,
                 specialize_on: Any = None) -> None:
    """Accepted: fusetorch.compile specializes on every shape and retraces on a new one."""


def maybe_mark_dynamic(t: Any, index: Any) -> None:
    """Accepted, as `mark_dynamic`."""


def mark_static(t: Any, index: Any = None) -> None:
    """Accepted: every shape is static to fusetorch.compile already."""


def mark_static_address(t: Any, guard: bool = True) -> None:
    """Accepted: fusetorch.compile does not capture CUDA graphs."""


def allow_in_graph(fn: Callable) -> Callable:
    """The function unchanged: fusetorch.compile traces through any function that calls
    fusetorch ops."""
    return fn


def __getattr__(name: str):
    from .._out_of_scope import COMPILER, missing
    raise missing("module 'fusetorch._dynamo'", "torch._dynamo", name, {name: COMPILER})
