"""`torch.library`: custom operators. `custom_op` makes a Python function an operator that runs
eagerly (its autograd formula from `register_autograd`), `register_fake`/`impl` accept their
registrations, `opcheck` tests what a registration claims (mutations, aliasing, the fake
function's shapes and dtypes, a backward formula where gradients are asked for); `Library`
fragments of ATen schemas are out of scope."""
from __future__ import annotations

from typing import Callable

from . import _out_of_scope

__all__ = ["CustomOpDef", "custom_op", "register_autograd", "register_fake", "impl", "Library",
           "define", "opcheck"]


class CustomOpDef:
    """A custom operator: calling it calls its Python implementation, through
    `autograd.Function` when a backward was registered."""

    def __init__(self, name: str, fn: Callable, mutates_args) -> None:
        self.name, self._fn, self._mutates = name, fn, mutates_args
        self._backward = self._setup = self._fake = None
        self.__name__ = name.split("::")[-1]
        self.__doc__ = fn.__doc__

    def __repr__(self) -> str:
        return f"<CustomOpDef({self.name})>"

    def register_autograd(self, backward: Callable, *, setup_context: Callable | None = None):
        self._backward, self._setup = backward, setup_context

    def register_fake(self, fn: Callable) -> Callable:
        self._fake = fn  # (fusetorch computes shapes by running the op; opcheck compares)
        return fn

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
        from .autograd import Function
        from .tracer import dispatch as D
        op = self
        if self._backward is None:
            if not (D.GRAD_ENABLED and any(True for _ in _tensors_needing_grad(args))):
                return self._impl(args, kwargs)

            class _NoFormula(Function):  # PyTorch's autograd kernel: an error at backward
                @staticmethod
                def forward(ctx, *a):
                    return op._impl(a, kwargs)

                @staticmethod
                def backward(ctx, *grads):
                    raise RuntimeError(f"Trying to backward through {op._overload} but no "
                                       f"autograd formula was registered. Please use "
                                       f"register_autograd to add one.")
            return _NoFormula.apply(*args)

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


    @property
    def _overload(self) -> str:
        return self.name.replace("::", ".") + ".default"


def _tensors_needing_grad(args):
    return (t for t in _tensor_leaves(args) if t.requires_grad)


def _tensor_leaves(value):
    from .tracer.tensor import Tensor
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensor_leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensor_leaves(v)


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
        from .ops import _CUSTOM
        target = op if isinstance(op, CustomOpDef) else _CUSTOM.get(op)
        if target is not None:
            target.register_fake(f)
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


class OpCheckError(Exception):
    """An `opcheck` test failed (PyTorch's optests OpCheckError)."""


_OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
                  "test_aot_dispatch_dynamic")


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=_OPCHECK_TESTS,
            raise_exception: bool = True, atol=None, rtol=None) -> dict:
    """Test a `custom_op`'s registrations on sample arguments, as PyTorch's opcheck does:

        torch.library.opcheck(numpy_sin, (torch.randn(3, requires_grad=True),))

    `test_schema`: only the arguments in mutates_args are written, and no output aliases an
    input; `test_autograd_registration`: a custom op always has its autograd kernel;
    `test_faketensor`: a fake function was registered and gives the real outputs' shapes and
    dtypes; `test_aot_dispatch_dynamic` (fusetorch has no other compiler to test against): the
    fake function again, two runs agree, and gradients run where inputs require them. Returns
    {test: "SUCCESS"}, or with raise_exception=False the failures' exceptions in their place."""
    if not isinstance(op, CustomOpDef):
        _refuse("opcheck of an operator that is not a torch.library.custom_op")
    kwargs = {} if kwargs is None else kwargs
    tests = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    for t in tests:
        if t not in _OPCHECK_TESTS:
            raise ValueError(f"Unknown test util {t!r}")
    results = {}
    for t in tests:
        try:
            _CHECKS[t](op, args, kwargs, atol, rtol)
            results[t] = "SUCCESS"
        except Exception as e:  # noqa: BLE001  (each test's failure is its result)
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {t} failed with {e} (scroll up for "
                                   f"stack trace)") from e
            results[t] = e
    return results


def _clone_args(value):
    from .tracer.tensor import Tensor
    if isinstance(value, Tensor):
        c = value.detach().clone()
        return c.requires_grad_(value.requires_grad) if value.requires_grad else c
    if isinstance(value, (list, tuple)):
        return type(value)(_clone_args(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone_args(v) for k, v in value.items()}
    return value


def _check_schema(op: CustomOpDef, args, kwargs, atol, rtol) -> None:
    import inspect

    import numpy as np
    bound = inspect.signature(op._fn).bind(*args, **kwargs)
    fresh = _clone_args(dict(bound.arguments))
    before = _clone_args(fresh)
    out = op._impl((), fresh)
    declared = () if op._mutates == "unknown" else op._mutates
    declared = (declared,) if isinstance(declared, str) else tuple(declared)
    for name, value in fresh.items():
        for t, old in zip(_tensor_leaves(value), _tensor_leaves(before[name])):
            same = np.array_equal(t._host(), old._host(), equal_nan=True)
            if not same and op._mutates != "unknown" and name not in declared:
                raise RuntimeError(f"Argument {name} is not defined as mutable but was mutated")
    inputs = [t._data for t in _tensor_leaves(fresh)]
    for o in _tensor_leaves(out):
        if any(np.shares_memory(o._data, i) for i in inputs):
            raise RuntimeError(f"{op}: The output of this custom operator (1) must not also be "
                               f"an input to this custom operator and (2) may not alias any "
                               f"inputs to this custom operator or other returns. The most "
                               f"common way to trigger this error is if we have y = "
                               f"custom_op(x) and y and x are the same Tensor. Please instead "
                               f"return a clone of the offending output tensor(s) (e.g. return "
                               f"x.clone()) or refactor the custom operator to not return y.")


def _check_autograd_registration(op: CustomOpDef, args, kwargs, atol, rtol) -> None:
    return None  # (custom_op registers its autograd kernel itself, formula or not)


def _check_fake(op: CustomOpDef, args, kwargs, atol, rtol) -> None:
    from .autograd import no_grad
    if op._fake is None and _returns_none(op):
        return None  # (PyTorch makes the fake of an operator returning nothing itself)
    if op._fake is None:
        raise RuntimeError(f"There was no fake impl registered for {op}. This is necessary for "
                           f"torch.compile/export/fx tracing to work. Please use "
                           f"`{op.__name__}.register_fake` to add an fake impl.")
    real = op._impl(_clone_args(args), _clone_args(kwargs))
    with no_grad():
        fake = op._fake(*_clone_args(args), **_clone_args(kwargs))
    reals, fakes = list(_tensor_leaves(real)), list(_tensor_leaves(fake))
    where = f"When comparing the output of {op._overload} on FakeTensor and concrete Tensors, " \
            f"found mismatched tensor metadata: "
    if len(reals) != len(fakes):
        raise RuntimeError(f"{where}{len(fakes)} outputs and {len(reals)} outputs")
    for f, r in zip(fakes, reals):
        if f.shape != r.shape:
            raise RuntimeError(f"{where}Shapes {r.shape} and {f.shape} are not equal!")
        if f.dtype != r.dtype:
            raise RuntimeError(f"{where}Dtypes {r.dtype} and {f.dtype} are not equal!")
        if f.device != r.device:
            raise RuntimeError(f"{where}Devices {r.device} and {f.device} are not equal!")


def _returns_none(op: CustomOpDef) -> bool:
    import inspect
    return inspect.signature(op._fn).return_annotation in (None, type(None), "None")


def _check_dispatch(op: CustomOpDef, args, kwargs, atol, rtol) -> None:
    from . import autograd, testing
    if op._fake is None and not _returns_none(op):
        _check_fake(op, args, kwargs, atol, rtol)  # (its error: a compiler needs the fake)
    first, second = (op(*_clone_args(args), **_clone_args(kwargs)) for _ in range(2))
    testing.assert_close(first, second, atol=atol, rtol=rtol, equal_nan=True)
    a = _clone_args(args)
    wrt = list(_tensors_needing_grad(a))
    outs = [o for o in _tensor_leaves(op(*a, **_clone_args(kwargs))) if o.requires_grad]
    if wrt and outs:
        autograd.grad(outs, wrt, [o.detach() * 0 + 1 for o in outs], allow_unused=True)


_CHECKS = {"test_schema": _check_schema, "test_autograd_registration": _check_autograd_registration,
           "test_faketensor": _check_fake, "test_aot_dispatch_dynamic": _check_dispatch}
