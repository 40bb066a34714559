"""Tensor's Python operators (`x + y`, `2 ** x`, `x @ w`, `x == y`, `x += y`) and the in-place
arithmetic they share with `add_`/`sub_`/`mul_`/`div_`/`pow_`: one def each, so that help(),
tracebacks and go-to-definition land on code with PyTorch's signature.

An operator whose operand dispatch cannot take (None, a str, a list) returns NotImplemented,
as PyTorch's wrapper does, so Python answers (`x == None` is False, `x + None` its own
TypeError). Called unbound on a non-tensor, the operators PyTorch defines in C raise its
descriptor TypeError (`Tensor.__add__(2, t)`); those it defines in Python (`__rsub__`,
`__rtruediv__`, `__rpow__`, ...) do what its Python code does.
"""
from __future__ import annotations

import numpy as np

from ..ir.shapes import broadcast_shapes
from . import creation as C
from . import dispatch as D
from . import functional as F
from . import functional_math as M
from .out_args import inplace as _inplace
from .tensor import Tensor


def _binary_or_not_implemented(name: str, a, b, other):
    """D.binary(name, a, b), or NotImplemented where `other` is an operand it cannot take."""
    try:
        return D.binary(name, a, b)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def _unbound(dunder: str, self) -> TypeError:
    return TypeError(f"descriptor '{dunder}' for 'Tensor' objects doesn't apply to a "
                     f"'{type(self).__name__}' object")


# ------------------------------------------------------------ arithmetic

def __add__(self: Tensor, other) -> Tensor:
    """`self + other`: `torch.add(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__add__", self)
    try:  # (inline: the hot operators save a call)
        return D.binary("add", self, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __radd__(self: Tensor, other) -> Tensor:
    """`other + self`: `torch.add(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__radd__", self)
    try:  # (inline: the hot operators save a call)
        return D.binary("add", self, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __sub__(self: Tensor, other) -> Tensor:
    """`self - other`: `torch.sub(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__sub__", self)
    try:  # (inline: the hot operators save a call)
        return D.binary("sub", self, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __rsub__(self: Tensor, other) -> Tensor:
    """`other - self`: `torch.rsub(self, other)`."""
    if not isinstance(self, Tensor):  # (PyTorch's Python code: a TypeError Python raises)
        return NotImplemented
    try:  # (inline: the hot operators save a call)
        return D.binary("sub", other, self)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __mul__(self: Tensor, other) -> Tensor:
    """`self * other`: `torch.mul(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__mul__", self)
    try:  # (inline: the hot operators save a call)
        return D.binary("mul", self, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __rmul__(self: Tensor, other) -> Tensor:
    """`other * self`: `torch.mul(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__rmul__", self)
    try:  # (inline: the hot operators save a call)
        return D.binary("mul", self, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __truediv__(self: Tensor, other) -> Tensor:
    """`self / other`: `torch.div(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__truediv__", self)
    try:  # (inline: the hot operators save a call)
        return D.binary("div", self, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __rtruediv__(self: Tensor, other) -> Tensor:
    """`other / self`: `self.reciprocal() * other`."""
    if not isinstance(self, Tensor):  # (PyTorch's Python code calls self.reciprocal())
        raise AttributeError(f"'{type(self).__name__}' object has no attribute 'reciprocal'")
    # (two roundings, as PyTorch's: 3.0 / x differs from torch.div(3.0, x) in the last bit)
    recip = F.reciprocal(self)
    try:  # (inline: the hot operators save a call)
        return D.binary("mul", recip, other)
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def __pow__(self: Tensor, other) -> Tensor:
    """`self ** other`: `torch.pow(self, other)`."""
    F.refuse_negative_int_power(self, other)
    return _binary_or_not_implemented("pow", self, other, other)


def __rpow__(self: Tensor, other) -> Tensor:
    """`other ** self`: `torch.pow(other, self)`."""
    return _binary_or_not_implemented("pow", other, self, other)


def __floordiv__(self: Tensor, other) -> Tensor:
    """`self // other`: `torch.floor_divide(self, other)`."""
    return _binary_or_not_implemented("floor_divide", self, other, other)


def __rfloordiv__(self: Tensor, other) -> Tensor:
    """`other // self`: `torch.floor_divide(other, self)`."""
    return _binary_or_not_implemented("floor_divide", other, self, other)


def __mod__(self: Tensor, other) -> Tensor:
    """`self % other`: `torch.remainder(self, other)`."""
    return _binary_or_not_implemented("remainder", self, other, other)


def __rmod__(self: Tensor, other) -> Tensor:
    """`other % self`: `torch.remainder(other, self)`."""
    return _binary_or_not_implemented("remainder", other, self, other)


def __lshift__(self: Tensor, other) -> Tensor:
    """`self << other`: `torch.bitwise_left_shift(self, other)`."""
    return _binary_or_not_implemented("bitwise_left_shift", self, other, other)


def __rlshift__(self: Tensor, other) -> Tensor:
    """`other << self`: `torch.bitwise_left_shift(other, self)`."""
    return _binary_or_not_implemented("bitwise_left_shift", other, self, other)


def __rshift__(self: Tensor, other) -> Tensor:
    """`self >> other`: `torch.bitwise_right_shift(self, other)`."""
    return _binary_or_not_implemented("bitwise_right_shift", self, other, other)


def __rrshift__(self: Tensor, other) -> Tensor:
    """`other >> self`: `torch.bitwise_right_shift(other, self)`."""
    return _binary_or_not_implemented("bitwise_right_shift", other, self, other)


def __matmul__(self: Tensor, other) -> Tensor:
    """`self @ other`: `torch.matmul(self, other)`; a numpy array takes part as a tensor, and
    another operand (`x @ None`, `x @ [..]`) is NotImplemented, so Python raises its own
    "unsupported operand" error, as PyTorch does."""
    if isinstance(other, np.ndarray):
        return F.matmul(self, C.tensor(other))
    return F.matmul(self, other) if isinstance(other, Tensor) else NotImplemented


def __rmatmul__(self: Tensor, other) -> Tensor:
    """`other @ self`: `torch.matmul(other, self)`."""
    if isinstance(other, np.ndarray):
        other = C.tensor(other)
    return F.matmul(other, self) if isinstance(other, Tensor) else NotImplemented


def __neg__(self: Tensor) -> Tensor:
    """neg() -> Tensor

    `-self`: `torch.neg(self)`."""
    return D.unary("neg", self)


def __pos__(self: Tensor) -> Tensor:
    """positive() -> Tensor

    `+self`: the tensor itself."""
    return self


def __abs__(self: Tensor) -> Tensor:
    """abs() -> Tensor

    `abs(self)`: `torch.abs(self)`."""
    return D.unary("abs", self)


def __invert__(self: Tensor) -> Tensor:
    """`~self`: `torch.bitwise_not(self)`, for integer and bool tensors."""
    if self._dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return M.bitwise_not(self)


# ------------------------------------------------------------ comparisons and bitwise ops

def __eq__(self: Tensor, other) -> Tensor:
    """`self == other`: `torch.eq(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__eq__", self)
    return _binary_or_not_implemented("eq", self, other, other)


def __ne__(self: Tensor, other) -> Tensor:
    """`self != other`: `torch.ne(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__ne__", self)
    return _binary_or_not_implemented("ne", self, other, other)


def __lt__(self: Tensor, other) -> Tensor:
    """`self < other`: `torch.lt(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__lt__", self)
    return _binary_or_not_implemented("lt", self, other, other)


def __le__(self: Tensor, other) -> Tensor:
    """`self <= other`: `torch.le(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__le__", self)
    return _binary_or_not_implemented("le", self, other, other)


def __gt__(self: Tensor, other) -> Tensor:
    """`self > other`: `torch.gt(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__gt__", self)
    return _binary_or_not_implemented("gt", self, other, other)


def __ge__(self: Tensor, other) -> Tensor:
    """`self >= other`: `torch.ge(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__ge__", self)
    return _binary_or_not_implemented("ge", self, other, other)


def __and__(self: Tensor, other) -> Tensor:
    """`self & other`: `torch.bitwise_and(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__and__", self)
    return _binary_or_not_implemented("bitwise_and", self, other, other)


def __rand__(self: Tensor, other) -> Tensor:
    """`other & self`: `torch.bitwise_and(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__rand__", self)
    return _binary_or_not_implemented("bitwise_and", self, other, other)


def __or__(self: Tensor, other) -> Tensor:
    """`self | other`: `torch.bitwise_or(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__or__", self)
    return _binary_or_not_implemented("bitwise_or", self, other, other)


def __ror__(self: Tensor, other) -> Tensor:
    """`other | self`: `torch.bitwise_or(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__ror__", self)
    return _binary_or_not_implemented("bitwise_or", self, other, other)


def __xor__(self: Tensor, other) -> Tensor:
    """`self ^ other`: `torch.bitwise_xor(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__xor__", self)
    return _binary_or_not_implemented("bitwise_xor", self, other, other)


def __rxor__(self: Tensor, other) -> Tensor:
    """`other ^ self`: `torch.bitwise_xor(self, other)`."""
    if self.__class__ is not Tensor and not isinstance(self, Tensor):
        raise _unbound("__rxor__", self)
    return _binary_or_not_implemented("bitwise_xor", self, other, other)


# ------------------------------------------------------------ in-place arithmetic

def add_(self: Tensor, other, *, alpha=1) -> Tensor:
    """add_(other, *, alpha=1) -> Tensor

    In-place version of `Tensor.add`: `self + alpha * other` written into self (`x += y`)."""
    if alpha != 1:
        _check_overlap(self, other)
        other = _times_alpha(self, other, alpha)  # p.add_(g, alpha=-lr)
    return _binary_into(self, "add", other, F.add)


def sub_(self: Tensor, other, *, alpha=1) -> Tensor:
    """sub_(other, *, alpha=1) -> Tensor

    In-place version of `Tensor.sub`: `self - alpha * other` written into self (`x -= y`)."""
    if alpha != 1:
        _check_overlap(self, other)
        other = _times_alpha(self, other, alpha)
    return _binary_into(self, "sub", other, F.sub)


def mul_(self: Tensor, other) -> Tensor:
    """mul_(other) -> Tensor

    In-place version of `Tensor.mul`: `self * other` written into self (`x *= y`)."""
    return _binary_into(self, "mul", other, F.mul)


def div_(self: Tensor, other, *, rounding_mode=None) -> Tensor:
    """div_(other, *, rounding_mode=None) -> Tensor

    In-place version of `Tensor.div`: `self / other` written into self (`x /= y`), rounded
    as `rounding_mode` says ("trunc", "floor") where given."""
    if rounding_mode is not None:
        _check_overlap(self, other)
        return _inplace(self, F.div(self, other, rounding_mode=rounding_mode))
    return _binary_into(self, "div", other, F.div)


def pow_(self: Tensor, exponent) -> Tensor:
    """pow_(exponent) -> Tensor

    In-place version of `Tensor.pow`: `self ** exponent` written into self (`x **= y`)."""
    _check_overlap(self, exponent)
    return _inplace(self, F.pow(self, exponent))


def _check_overlap(self: Tensor, other) -> None:
    # (only an operand that may share the tensor's memory needs PyTorch's overlap rule)
    if isinstance(other, Tensor) and (other._data.base is not None or
                                      other._data is self._data.base):
        D.check_no_partial_overlap(self, (other,))


def _times_alpha(self: Tensor, other, alpha):
    """`alpha * other`, where PyTorch's checks of alpha against the result type cannot refuse
    (a float alpha into a float tensor) without asking them."""
    if alpha.__class__ is float and self._dtype.is_floating_point and isinstance(other, Tensor):
        return D.binary("mul", other, alpha)
    return F._times_alpha(self, other, alpha)


def _binary_into(self: Tensor, name: str, other, functional) -> Tensor:
    """`functional(self, other)` written into self. For a float tensor and an operand of its
    dtype and device that broadcasts to it (or a Python number), with nothing recording or
    needing a gradient, the ufunc writes straight into self's buffer."""
    _check_overlap(self, other)
    st = D._LOCAL.state  # this thread's recorder, grad mode and profiler
    if st.RECORDER is None and self._dtype.category == 2 \
            and not (st.GRAD_ENABLED and (D.needs_grad(self) or isinstance(
                other, Tensor) and D.needs_grad(other))) \
            and D.writeable(self._data):
        od = None
        if isinstance(other, Tensor) and other._dtype is self._dtype \
                and other._be is self._be:
            od = other._data
            if od.shape != self._data.shape and \
                    broadcast_shapes(self._data.shape, od.shape) != self._data.shape:
                od = None
        elif other.__class__ in (int, float):
            od = other
        if od is not None:
            prof = st.PROFILE
            if prof is not None:  # timed as one event, `aten::add_`
                return prof.call(_write_direct, (self, name, od), f"aten::{name}_",
                                 (self, other))
            self._be.impl[name](self._data, od, out=self._data)
            self._bump_version()
            return self
    return _inplace(self, functional(self, other))


def _write_direct(self: Tensor, name: str, od) -> Tensor:
    """The direct in-place write of `_binary_into`, as a function the profiler can time."""
    self._be.impl[name](self._data, od, out=self._data)
    self._bump_version()
    return self


# ------------------------------------------------------------ the methods

Tensor.__add__, Tensor.__radd__ = __add__, __radd__
Tensor.__sub__, Tensor.__rsub__ = __sub__, __rsub__
Tensor.__mul__, Tensor.__rmul__ = __mul__, __rmul__
Tensor.__truediv__, Tensor.__rtruediv__ = __truediv__, __rtruediv__
# Python 2's names, which PyTorch's Tensor still has (op_db tests `__rdiv__`)
Tensor.__div__, Tensor.__rdiv__ = __truediv__, __rtruediv__
Tensor.__pow__, Tensor.__rpow__ = __pow__, __rpow__
Tensor.__floordiv__, Tensor.__rfloordiv__ = __floordiv__, __rfloordiv__
Tensor.__mod__, Tensor.__rmod__ = __mod__, __rmod__
Tensor.__lshift__, Tensor.__rlshift__ = __lshift__, __rlshift__
Tensor.__rshift__, Tensor.__rrshift__ = __rshift__, __rrshift__
Tensor.__matmul__, Tensor.__rmatmul__ = __matmul__, __rmatmul__
Tensor.__neg__, Tensor.__pos__, Tensor.__abs__ = __neg__, __pos__, __abs__
Tensor.__invert__ = __invert__
Tensor.__eq__, Tensor.__ne__ = __eq__, __ne__
Tensor.__lt__, Tensor.__le__, Tensor.__gt__, Tensor.__ge__ = __lt__, __le__, __gt__, __ge__
Tensor.__and__, Tensor.__rand__ = __and__, __rand__
Tensor.__or__, Tensor.__ror__ = __or__, __ror__
Tensor.__xor__, Tensor.__rxor__ = __xor__, __rxor__
Tensor.add_, Tensor.sub_, Tensor.mul_, Tensor.div_, Tensor.pow_ = add_, sub_, mul_, div_, pow_
# `x += y` is `x.add_(y)`; `__idiv__` is Python 2's name, which PyTorch keeps
Tensor.__iadd__, Tensor.__isub__, Tensor.__imul__ = add_, sub_, mul_
Tensor.__itruediv__ = Tensor.__idiv__ = div_
Tensor.__ipow__ = pow_
