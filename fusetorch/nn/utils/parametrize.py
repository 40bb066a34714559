"""`nn.utils.parametrize`: a module's tensor computed from stored ones by modules.

As in PyTorch, registering the first parametrization swaps the module's class for a subclass
`Parametrized<Class>` that holds one property per parametrized name, and moves the tensor into
`module.parametrizations[name]` (a `ParametrizationList`) as `original`, or `original0`,
`original1`, ... when the first parametrization's `right_inverse` returns several tensors. So
state_dict keys are PyTorch's (`parametrizations.weight.original0`), and reading
`module.weight` runs the parametrizations, a composition of tensor operations that autograd
and the compiler see like any other.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ...tracer.autograd import no_grad
from ...tracer.tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "type_before_parametrizations", "cached", "ParametrizationList"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Inside, each parametrized tensor is computed once and reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _as_parameter_like(value: Tensor, like: Tensor) -> Tensor:
    if value is like:  # right_inverse passed the original through: keep that Parameter
        return like
    if isinstance(like, Parameter):
        return Parameter(value.detach(), requires_grad=like.requires_grad)
    return value


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the stored original(s)."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass  # as PyTorch: the original kept as it is (orthogonal's maps)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if isinstance(original, Parameter):
                with no_grad():
                    if new is not original:
                        original.data = new.detach()
                self.register_parameter("original", original)
            else:
                self.register_buffer("original", new)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(t).__name__}.")
                if isinstance(original, Parameter):
                    self.register_parameter(f"original{i}", _as_parameter_like(t, original))
                else:
                    self.register_buffer(f"original{i}", t)

    def right_inverse(self, value: Tensor) -> None:
        """Store what makes the parametrized tensor equal `value`."""
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _get(module: Module, name: str) -> Tensor:
    plist = module.parametrizations[name]
    if _cache_enabled:
        key = (id(module), name)
        if key not in _cache:
            _cache[key] = plist()
        return _cache[key]
    return plist()


def _inject_new_class(module: Module) -> None:
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module: Module, name: str) -> None:
    def getter(self) -> Tensor:
        return _get(self, name)

    def setter(self, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)
    setattr(module.__class__, name, property(getter, setter))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has parametrizations (on `tensor_name`, when given)."""
    params = module.__dict__.get("_modules", {}).get("parametrizations")
    if params is None or not isinstance(params, ModuleDict):
        return False
    return len(params) > 0 if tensor_name is None else tensor_name in params


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` the output of `parametrization` applied to the stored
    original (a further call on the same name chains another parametrization)."""
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
                     f"element with name '{tensor_name}'")


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations of `tensor_name`: it becomes a plain parameter again, holding
    the parametrized value (or the original with `leave_parametrized=False`)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
                original.data = value.detach().clone()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name)
        first = plist.original0
        original = (Parameter(value.detach().clone(), requires_grad=first.requires_grad)
                    if isinstance(first, Parameter) else value.detach().clone())
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module
