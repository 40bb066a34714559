"""`out=`: writing a result into a tensor the caller gave, with PyTorch's checks. PyTorch
refuses `out=` when an argument requires grad, when `out` shares memory with an input of an
op that is not elementwise (cat, gather, take ...), and, for some ops, an `out` whose dtype is
not exactly the result's."""
from __future__ import annotations

import functools
import sys
from collections import namedtuple

from ..ir import dtypes as dt
from . import dispatch as D
from .tensor import Tensor

# PyTorch names dtypes by their C types in some out= messages
_C_NAMES = {dt.float32: "float", dt.float64: "double", dt.int64: "long int", dt.int32: "int",
            dt.int16: "short int", dt.int8: "signed char", dt.uint8: "unsigned char",
            dt.bool_: "bool", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16"}
_ALIASED = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing "
            "the operation.")


_OVERLAPPING = ("unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.")


def _caller_name(depth: int) -> str:
    return sys._getframe(depth + 1).f_code.co_name.lstrip("_")


def check_out(result: Tensor, out: Tensor, name: str | None = None, inputs=()) -> None:
    """PyTorch's refusals common to every out=: autograd, and `out` aliasing any of `inputs`
    (the ones the op reads while writing; elementwise ops pass none)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name or _caller_name(2)}(): argument 'out' must be Tensor, not "
                        f"{type(out).__name__}")
    if D.GRAD_ENABLED and (result._requires_grad or out._requires_grad):
        raise RuntimeError(f"{name or _caller_name(2)}(): functions with out=... arguments "
                           f"don't support automatic differentiation, but one of the arguments "
                           f"requires grad.")
    xp = out._be.xp
    for t in inputs:
        if isinstance(t, Tensor) and t._be is out._be and out._data.size and t._data.size and \
                xp.may_share_memory(t._data, out._data):
            raise RuntimeError(_ALIASED)


def exact_dtype(out: Tensor, want: dt.DType, message: str | None = None) -> None:
    """Refuse an `out` of another dtype (ops whose out= does not cast)."""
    if out._dtype is not want:
        raise RuntimeError(message or f"Expected out tensor to have dtype {_C_NAMES[want]}, but "
                                      f"got {_C_NAMES[out._dtype]} instead")


def write_out(result: Tensor, out: Tensor | None, *, name: str | None = None,
              inputs=(), operands=(), overlap_first: bool = False) -> Tensor:
    """Copy `result` into `out=` the way PyTorch does: resize if needed, cast if allowed.
    `inputs` may not share memory with `out` at all (ops that read while they write);
    elementwise ops pass their `operands`, which may be `out` itself but not overlap it in
    part. An `out` overlapping itself is refused before any resize by elementwise ops
    (TensorIterator's order) and those passing `overlap_first` (index_select), after it by
    the rest, whose resize gives it fresh memory."""
    if out is None:
        return result
    check_out(result, out, name, inputs)
    D.check_cast(result, out)
    # PyTorch's assert_no_internal_overlap: a zero stride over more than one element
    # (a zero-size tensor has no element to overlap: Adam's amsgrad state of a [3, 0] parameter)
    overlapping = bool(out._data.size) and any(
        st == 0 and n > 1 for n, st in zip(out._data.shape, out._data.strides))
    if overlapping and (operands or overlap_first):
        raise RuntimeError(_OVERLAPPING)
    if out._data.shape != result._data.shape:
        out._data = out._be.xp.empty(result._data.shape, dtype=out._data.dtype)
    else:
        if overlapping:
            raise RuntimeError(_OVERLAPPING)
        D.check_no_partial_overlap(out, operands)
    return D.copy_into(out, result)


def cast_first(target: Tensor, operands: tuple) -> None:
    """PyTorch's binary kernels writing in place or into `out=` check that the operands' result
    type can be written into the target before they look for a kernel of that type: `b &= 1.5`
    is the cast error, not bitwise_and's missing float kernel."""
    dims, zero, scal = [], [], []
    for a in operands:
        if isinstance(a, Tensor):
            (dims if a._data.ndim else zero).append(a._dtype)
        elif isinstance(a, (bool, int, float)):
            scal.append(dt.scalar_dtype(a))
    D.check_cast_dtype(dt.result_type(dims, zero, scal), target._dtype)


def inplace(self: Tensor, value: Tensor, aliased: str | None = None) -> Tensor:
    """`value` written into `self`, as every in-place method writes (`x.exp_()` is
    `inplace(x, exp(x))`): PyTorch's shape and cast checks, then a copy that bumps the version
    counter and lets recordings see the new value. `aliased`: the op's name where PyTorch
    writes a tensor whose elements share memory (with a warning: masked_fill_)."""
    if value._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(value._data.shape)}")
    D.check_cast(value, self)
    return D.copy_into(self, value, from_self=True, aliased=aliased)


def write_outs(results: tuple, out, name: str, inputs=(), exact: bool = False) -> tuple:
    """`out=(values, indices)` of the ops that return a pair: each written, the same named
    tuple type returned holding the `out` tensors (PyTorch's `<name>_out` type); `out=None`
    returns `results` as they are. `exact`: each `out` must have its result's dtype
    (linalg's out= does not cast)."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or not _all_tensors(out):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(out)}")
    for r, o in zip(results, out):
        check_out(r, o, name, inputs)
        if exact:
            exact_dtype(o, r._dtype)
    written = [write_out(r, o, name=name) for r, o in zip(results, out)]
    return out_type(type(results))(*written) if hasattr(results, "_fields") else \
        type(results)(written)


_OUT_TYPES: dict = {}


def out_type(cls: type) -> type:
    """PyTorch's `torch.return_types.<name>_out`, the named tuple an `out=` call returns (its
    own type, printed with its own name), for the named tuple `cls` of the plain call."""
    found = _OUT_TYPES.get(cls)
    if found is None:
        name, fields = cls.__name__ + "_out", cls._fields
        found = _OUT_TYPES[cls] = namedtuple(name, fields)
        found.__repr__ = lambda self: (f"torch.return_types.{name}(\n" + ",\n".join(
            f"{f}={getattr(self, f)!r}" for f in fields) + ")")
    return found


def _all_tensors(xs) -> bool:
    for x in xs:
        if not isinstance(x, Tensor):
            return False
    return True


def with_out(name: str):
    """Adds a plain `out=` to an op that returns one tensor."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(input, *args, out=None, **kw):
            return write_out(fn(input, *args, **kw), out, name=name)
        return wrapper
    return deco
