"""Names for the tensors a compiled call reads, for pictures of its graph: the function's
parameter names for its arguments, `model.0.weight` for a module's parameters (and
`model.0.weight.grad` for their gradients), `opt.state[model.0.weight].momentum_buffer` for an
optimizer's state, and the global or closure name of any other tensor it reads by name.

Only what the function's code names directly (its globals and closure cells) is searched.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ._guards import _entry_functions, _names
from .tracer.tensor import Tensor


def tensor_names(fn: Callable, args: tuple) -> dict:
    """id(tensor) -> a readable name, for the tensors `fn(*args)` may read. Names are only
    for reading: whatever a user's object does when asked (a `__getattr__` that raises) leaves
    the rest unnamed, never fails the compile."""
    names: dict = {}
    try:
        _collect(fn, args, names)
    except Exception:  # noqa: BLE001 (user objects may raise anything from hasattr)
        pass
    return names


def _collect(fn: Callable, args: tuple, names: dict) -> None:
    target = getattr(fn, "forward", fn) if hasattr(fn, "named_parameters") else fn
    try:
        params = [p.name for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            names.setdefault(id(a), params[i] if i < len(params) else f"arg{i}")
    if hasattr(fn, "named_parameters"):
        _module(fn, "", names)
    seen: list = []
    for name, value in _bound(fn):
        if isinstance(value, Tensor):
            names.setdefault(id(value), name)
        elif hasattr(value, "named_parameters") and hasattr(value, "named_buffers"):
            _module(value, name + ".", names)
        elif hasattr(value, "param_groups") and hasattr(value, "state"):
            seen.append((name, value))
    for name, opt in seen:  # after the modules: state is named after its parameter
        _optimizer(opt, name, names)


def _bound(fn: Callable) -> list:
    """(name, value) of the globals and closure cells `fn`'s code names."""
    out = []
    for f in _entry_functions(fn):
        for name in sorted(_names(f.__code__)):
            if name in f.__globals__:
                out.append((name, f.__globals__[name]))
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                out.append((name, cell.cell_contents))
            except ValueError:
                continue
    return out


def _module(mod: Any, prefix: str, names: dict) -> None:
    for pname, p in mod.named_parameters():
        names.setdefault(id(p), prefix + pname)
        if p._grad is not None:
            names.setdefault(id(p._grad), f"{prefix}{pname}.grad")
    for bname, b in mod.named_buffers():
        names.setdefault(id(b), prefix + bname)


def _optimizer(opt: Any, name: str, names: dict) -> None:
    for group in opt.param_groups:
        for k, p in enumerate(group["params"]):
            owner = names.get(id(p), f"param{k}")
            for key, value in opt.state.get(p, {}).items():
                if isinstance(value, Tensor):
                    names.setdefault(id(value), f"{name}.state[{owner}].{key}")
