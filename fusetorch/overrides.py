"""`torch.overrides`: the `__torch_function__` protocol's helpers. fusetorch dispatches on its
own Tensor only: no argument ever carries an override, so the probes answer False and
`handle_torch_function` is never reached by fusetorch itself."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .tracer.tensor import Tensor

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
           "TorchFunctionMode"]


def _overridden(obj) -> bool:
    fn = getattr(type(obj), "__torch_function__", None)
    return fn is not None and fn is not getattr(Tensor, "__torch_function__", None)


def has_torch_function(relevant_args: Iterable) -> bool:
    """Whether any argument defines its own `__torch_function__` (fusetorch's functions do not
    call it: they answer for fusetorch tensors only)."""
    return any(_overridden(a) for a in relevant_args)


def has_torch_function_unary(obj) -> bool:
    return _overridden(obj)


def has_torch_function_variadic(*args) -> bool:
    return has_torch_function(args)


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args, **kwargs) -> Any:
    """Call the first overriding `__torch_function__` among the arguments (PyTorch's order:
    subclasses before their bases)."""
    types = tuple(type(a) for a in relevant_args if _overridden(a))
    for a in relevant_args:
        if _overridden(a):
            result = type(a).__torch_function__(public_api, types, args, kwargs)
            if result is not NotImplemented:
                return result
    raise TypeError(f"no implementation found for '{getattr(public_api, '__name__', public_api)}'"
                    f" on types that implement __torch_function__: {list(types)}")


def is_tensor_like(inp) -> bool:
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def is_tensor_method_or_property(func: Callable) -> bool:
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func


def get_ignored_functions() -> set:
    return set()


def get_overridable_functions() -> dict:
    """Empty: no fusetorch function hands its arguments to a `__torch_function__`."""
    return {}


def get_testing_overrides() -> dict:
    return {}


class TorchFunctionMode:
    """Base class of function modes; entering one has no effect on fusetorch's dispatch."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False
