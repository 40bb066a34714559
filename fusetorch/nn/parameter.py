"""`nn.Parameter`: a leaf tensor that a Module registers as one of its parameters."""
from __future__ import annotations

import os
import sys

import numpy as np

from ..tracer.dispatch import uninitialized_message
from ..tracer.tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it to a Module attribute registers it.
    Shares memory with `data`; requires grad unless told otherwise.

    >>> w = Parameter(fusetorch.randn(3, 2))
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..tracer.creation import empty
            data = empty(0)
        p = Tensor.__new__(cls)
        p._data, p._dtype, p._be = data._data, data._dtype, data._be
        p._grad = None
        p._node = None
        p._vc = None
        p._base = None
        p._requires_grad = False
        p.requires_grad = requires_grad
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # all done in __new__ (Tensor.__init__ is the legacy constructor)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__  # Tensor's __str__ is bound to Tensor.__repr__, not the override

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from ..tracer.functional import clone
        from ..tracer.autograd import no_grad
        with no_grad():
            p = Parameter(clone(self), self.requires_grad)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (Tensor.detach(self), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """`nn.Buffer(t)`: marks a tensor to be registered as a buffer when assigned to a Module."""

    def __new__(cls, data: Tensor, *, persistent: bool = True):
        b = Tensor.__new__(cls)
        b._data, b._dtype, b._be = data._data, data._dtype, data._be
        b._grad = b._node = b._vc = b._base = None
        b._requires_grad = False
        b.persistent = persistent
        return b

    def __init__(self, data: Tensor, *, persistent: bool = True):
        pass


# ---------------------------------------------------------------- lazy modules' placeholders

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHAPE_MESSAGE = ("Can't access the shape of an uninitialized parameter or buffer. This error "
                  "usually happens in `load_state_dict` when trying to load an uninitialized "
                  "parameter into an initialized one. Call `forward` to initialize the "
                  "parameters before accessing their attributes.")
# What an uninitialized tensor may still be asked: the bookkeeping modules and optimizers do,
# and the conversions `Module.to/float/double/cuda` apply (they set the dtype and device the
# tensor materializes with), as PyTorch's UninitializedTensorMixin allows them.
_ALLOWED = frozenset({
    "materialize", "cls_to_become", "requires_grad", "requires_grad_", "grad", "is_leaf",
    "retains_grad", "data", "dtype", "device", "is_cuda", "is_cpu", "to", "cpu", "cuda",
    "float", "double", "half", "bfloat16", "type", "is_floating_point", "is_complex",
    "get_device", "share_memory_", "is_shared", "persistent", "grad_fn"})


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (a lazy module before its first
    forward). Using it raises PyTorch's errors; `materialize(shape)` gives it memory in place
    (the same object, so optimizers built before the first forward keep working) and turns it
    into its `cls_to_become`."""

    cls_to_become: type = Tensor

    def __getattribute__(self, name: str):
        if name[0] == "_" or name in _ALLOWED:
            return object.__getattribute__(self, name)
        if name in ("shape", "size", "ndim", "dim"):
            caller = sys._getframe(1).f_code.co_filename
            if caller.startswith(_PACKAGE) and not caller.endswith("module.py"):
                # a fusetorch function reads the shape first: PyTorch refuses the function
                raise ValueError(uninitialized_message())
            raise RuntimeError(_SHAPE_MESSAGE)
        raise ValueError(uninitialized_message(f"<method '{name}' of 'torch._C.TensorBase' "
                                             "objects>"))

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate (uninitialized) memory of `shape` with this tensor's dtype and device unless
        given, and become a `cls_to_become`."""
        from ..tracer.creation import empty
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        t = empty(shape, dtype=self._dtype if dtype is None else dtype,
                  device=self.device if device is None else device)
        self._data, self._dtype, self._be = t._data, t._dtype, t._be
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self._dtype)
        return memo[id(self)]


def _placeholder(device, dtype) -> Tensor:
    """An empty tensor whose array refuses computation (`dispatch.Unmaterialized`): free
    functions given a placeholder raise PyTorch's ValueError instead of computing on it."""
    from ..tracer.creation import empty
    from ..tracer.dispatch import Unmaterialized
    t = empty(0, device=device, dtype=dtype)
    if t._data.__class__ is np.ndarray:  # cupy arrays keep their class
        t._data = t._data.view(Unmaterialized)
    return t


def _refuse_operator(name: str):
    def op(self, *args, **kwargs):
        raise ValueError(uninitialized_message(f"<slot wrapper '{name}' of 'torch._C.TensorBase' "
                                             "objects>"))
    op.__name__ = name
    return op


# Python looks operators up on the type, past __getattribute__: refuse them one by one.
for _name in ("add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split()):
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(UninitializedTensorMixin, _form, _refuse_operator(_form))
for _form in ("__neg__", "__pos__", "__abs__", "__invert__", "__getitem__", "__setitem__",
              "__len__", "__iter__", "__bool__", "__float__", "__int__", "__index__",
              "__lt__", "__le__", "__gt__", "__ge__", "__array__"):
    setattr(UninitializedTensorMixin, _form, _refuse_operator(_form))
del _name, _form


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of unknown shape: a lazy module's weight before its first forward.

    >>> p = UninitializedParameter(); p.materialize((3, 4)); type(p).__name__
    'Parameter'
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, _placeholder(device, dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of unknown shape: a lazy norm layer's running statistics before its first
    forward."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None,
                persistent: bool = True):
        t = _placeholder(device, dtype)
        b = Tensor.__new__(cls)
        b._data, b._dtype, b._be = t._data, t._dtype, t._be
        b._grad = b._node = b._vc = b._base = None
        b._requires_grad = False
        b.requires_grad = requires_grad
        b.persistent = persistent
        return b

    def __init__(self, requires_grad: bool = False, device=None, dtype=None,
                 persistent: bool = True):
        pass


def is_lazy(param) -> bool:
    """Whether `param` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
