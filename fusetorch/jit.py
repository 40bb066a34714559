"""`fusetorch.jit`: TorchScript's entry points, so scripts that script or trace run on.

fusetorch does not compile TorchScript (`fusetorch.compile` is its compiler). `script`, `trace`
and `trace_module` return what they are given, which then runs as ordinary Python, eagerly;
the first call of any of them warns once per process. The decorators (`ignore`, `unused`,
`export`, `interface`, `script_method`) return their function; `is_scripting()` and
`is_tracing()` are False, as in eager PyTorch. Saving and loading TorchScript archives raise
NotImplementedError.

    m = torch.jit.script(MyModule())   # warns once; m is the module itself
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Final  # noqa: F401  (torch.jit.Final is typing.Final)

from .nn.module import Module

_warned = False


def _warn_once(what: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"fusetorch does not compile TorchScript: torch.jit.{what} returns its "
                      "argument unchanged, which runs eagerly as Python (fusetorch.compile is "
                      "fusetorch's compiler). This warning is shown once.", UserWarning,
                      stacklevel=3)


def script(obj: Any, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None) -> Any:
    """`obj` (a function, module or class) unchanged, after a one-time warning."""
    _warn_once("script")
    return obj


def trace(func: Any, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True) -> Any:
    """`func` unchanged (not run on `example_inputs`), after a one-time warning."""
    _warn_once("trace")
    return func


def trace_module(mod: Any, inputs: Any = None, *args, **kwargs) -> Any:
    """`mod` unchanged, after a one-time warning."""
    _warn_once("trace_module")
    return mod


def freeze(mod: Any, preserved_attrs=None, optimize_numerics: bool = True) -> Any:
    """`mod` unchanged (there is no TorchScript module to freeze)."""
    _warn_once("freeze")
    return mod


def optimize_for_inference(mod: Any, other_methods=None) -> Any:
    """`mod` unchanged (there is no TorchScript module to optimize)."""
    _warn_once("optimize_for_inference")
    return mod


def _decorator(fn: Callable | None = None, **options) -> Callable:
    # usable bare (`@torch.jit.ignore`) and with options (`@torch.jit.ignore(drop=True)`)
    if fn is None:
        return lambda f: f
    return fn


def ignore(drop=False, **kwargs) -> Callable:
    """Leave a function to Python: it already is. `@ignore` and `@ignore(drop=True)`."""
    return _decorator(drop if callable(drop) else None)


def unused(fn: Callable) -> Callable:
    return fn


def export(fn: Callable) -> Callable:
    return fn


def interface(obj: Any) -> Any:
    return obj


def script_method(fn: Callable) -> Callable:
    return fn


def script_if_tracing(fn: Callable) -> Callable:
    return fn


def is_scripting() -> bool:
    """False: nothing runs as TorchScript here (PyTorch's answer outside `script`)."""
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """The value: a type hint for the TorchScript compiler only."""
    return the_value


class ScriptModule(Module):
    """A plain Module: old-style `class M(torch.jit.ScriptModule)` scripts keep working, and
    nothing `script` returns is an instance (it returns the module unchanged)."""


class ScriptFunction:
    """Never instantiated: `isinstance(f, torch.jit.ScriptFunction)` is False here."""


class Future:
    """What `fork` returns: the value, computed at once."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable, *args, **kwargs) -> Future:
    """Runs `func(*args, **kwargs)` now (TorchScript would run it asynchronously)."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    return future.wait()


def save(m: Any, f: Any, _extra_files=None) -> None:
    raise NotImplementedError("fusetorch does not write TorchScript archives: save the "
                              "state_dict with torch.save(model.state_dict(), path) instead")


def load(f: Any, map_location=None, _extra_files=None) -> Any:
    raise NotImplementedError("fusetorch does not read TorchScript archives (they hold "
                              "compiled TorchScript code); load a state_dict saved with "
                              "torch.save instead")
