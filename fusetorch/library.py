"""`torch.library`: custom operators. `custom_op` makes a Python function an operator that runs
eagerly (its autograd formula from `register_autograd`), `register_fake`/`impl` accept their
registrations; `Library` fragments of ATen schemas are out of scope."""
from __future__ import annotations

from typing import Callable

from . import _out_of_scope

__all__ = ["CustomOpDef", "custom_op", "register_autograd", "register_fake", "impl", "Library",
           "define"]


class CustomOpDef:
    """A custom operator: calling it calls its Python implementation, through
    `autograd.Function` when a backward was registered."""

    def __init__(self, name: str, fn: Callable, mutates_args) -> None:
        self.name, self._fn, self._mutates = name, fn, mutates_args
        self._backward = self._setup = None
        self.__name__ = name.split("::")[-1]
        self.__doc__ = fn.__doc__

    def register_autograd(self, backward: Callable, *, setup_context: Callable | None = None):
        self._backward, self._setup = backward, setup_context

    def register_fake(self, fn: Callable) -> Callable:
        return fn  # (fusetorch computes shapes by running the op)

    def register_kernel(self, device_types, fn: Callable | None = None):
        def register(f: Callable) -> Callable:
            self._fn = f
            return f
        return register(fn) if fn is not None else register

    def _impl(self, args: tuple, kwargs: dict):
        """The implementation on tensors without autograd, as PyTorch's dispatcher calls it
        below the autograd key (so it may call `x.numpy()`); detached tensors share storage,
        so the arguments it mutates are the caller's."""
        from .autograd import no_grad
        with no_grad():
            return self._fn(*_detached(args), **_detached(kwargs))

    def __call__(self, *args, **kwargs):
        if self._backward is None:
            return self._impl(args, kwargs)
        from .autograd import Function
        op = self

        class _Op(Function):
            @staticmethod
            def forward(ctx, *a):
                out = op._impl(a, kwargs)
                if op._setup is not None:
                    op._setup(ctx, a, out)
                return out

            @staticmethod
            def backward(ctx, *grads):
                return op._backward(ctx, *grads)
        return _Op.apply(*args)


def _detached(value):
    from .tracer.tensor import Tensor
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(_detached(v) for v in value)
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items()}
    return value


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args=(), device_types=None,
              schema=None):
    """`@torch.library.custom_op("mylib::op", mutates_args=())`."""
    if not isinstance(name, str) or "::" not in name:
        raise ValueError(f"expected the name to be of the form 'namespace::op_name', got "
                         f"{name!r}")

    def wrap(f: Callable) -> CustomOpDef:
        from .ops import _CUSTOM
        op = CustomOpDef(name, f, mutates_args)
        _CUSTOM[name] = op  # (torch.ops.<namespace>.<name>)
        return op
    return wrap(fn) if fn is not None else wrap


def register_autograd(op, backward: Callable, *, setup_context: Callable | None = None,
                      lib=None) -> None:
    if not isinstance(op, CustomOpDef):
        raise _out_of_scope.OutOfScopeError(
            "fusetorch does not implement torch.library.register_autograd for ATen operator "
            "names: PyTorch's other compilers and graph capture (FX, export, dynamo, inductor; "
            "fusetorch.compile is fusetorch's own) are out of scope (see README)")
    op.register_autograd(backward, setup_context=setup_context)


def register_fake(op, fn: Callable | None = None, /, *, lib=None, _stacklevel: int = 1):
    def register(f: Callable) -> Callable:
        return f  # (fusetorch computes shapes by running the op)
    return register(fn) if fn is not None else register


def impl(qualname, types, func: Callable | None = None, *, lib=None):
    if isinstance(qualname, CustomOpDef):
        return qualname.register_kernel(types, func)
    return _refuse("impl")


def define(qualname, schema, *, lib=None, tags=()):
    return _refuse("define")


def _refuse(what: str):
    raise _out_of_scope.OutOfScopeError(
        f"fusetorch does not implement torch.library.{what}: PyTorch's other compilers and "
        "graph capture (FX, export, dynamo, inductor; fusetorch.compile is fusetorch's own) are "
        "out of scope (see README)")


class Library:
    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        _refuse("Library")
