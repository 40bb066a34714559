"""The torch-level math functions, composed from primitives through dispatch.

Every function here is what `fusetorch.<name>` and `Tensor.<name>` call. Compositions are chosen
so that values (and later gradients) match PyTorch: mean divides the sum by n, var subtracts the
mean before squaring, clamp is its own primitive so that its gradient at the bounds is PyTorch's.
"""
from __future__ import annotations

import builtins as _b  # this module defines its own sum, min, max, all, any
import functools
import math
from collections import namedtuple

from ..ir import dtypes as dt
from ..ir.shapes import (broadcast_shapes, expand_shape, infer_reshape, norm_dim, norm_dims,
                         numel, reduce_shape)
from . import autograd as A
from . import autocast as _ac
from . import dispatch as D
from . import memory_formats as _mf
from . import views as _views
from .out_args import exact_dtype, with_out, write_out, write_outs
from .tensor import Tensor
from .numpy_names import numpy_names

binary, unary, elementwise, apply, cast = D.binary, D.unary, D.elementwise, D.apply, D.cast
# (dispatch's names bound here once: a per-thread module's attributes are looked up unspecialized,
# ~0.03 us each, several per op of a loop)
check_tensor, needs_grad, any_needs_grad, _DISPATCH = (D.check_tensor, D.needs_grad,
                                                       D.any_needs_grad, D._LOCAL)
_AUTOCAST = _ac._LOCAL


def _grad_name(name):
    """Label what a composite returns with PyTorch's grad_fn name for it (`MeanBackward0`), so
    `y.grad_fn` reads as in PyTorch although several primitives were recorded. `name` is a
    string or a function of the call's arguments."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(input, *args, **kw):
            r = fn(input, *args, **kw)
            if _DISPATCH.state.GRAD_ENABLED:
                if input.__class__ is Tensor:  # (the common case, without a generator)
                    ins = (input,)
                    wanted = input._requires_grad
                else:
                    ins = tuple(input) if isinstance(input, (list, tuple)) else (input,)
                    wanted = _b.any(isinstance(x, Tensor) and x._requires_grad for x in ins)
                if wanted:
                    label = name(input, *args, **kw) if callable(name) else name
                    for x in (r if isinstance(r, tuple) else (r,)):
                        A.label(x, label, *ins)
            return r
        return wrapper
    return deco


def tensors_only(name: str, input, other) -> None:
    """PyTorch's TypeError for a function whose both operands must be tensors (maximum,
    atan2, logaddexp ...)."""
    for arg, pos, x in (("input", 1, input), ("other", 2, other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(x).__name__}")


def tensor_first(name: str, input, other) -> None:
    """PyTorch's TypeError for a function that takes a Python number only as `other` (eq,
    fmod, rsub ...)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected one "
                        f"of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n * "
                        f"(Tensor input, Number other, *, Tensor out = None)")


def _numbers(input, other):
    """add(2, 3) and the like: two Python numbers make a tensor, as in PyTorch."""
    return _tensor(input) if not isinstance(input, Tensor) and \
        not isinstance(other, Tensor) else input


def _tensor(x, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from .creation import tensor
    return tensor(x, device=like.device if like is not None else None)


# ---------------------------------------------------------------- elementwise

def _times_alpha(input, other, alpha):
    """`alpha * other` for add/sub, with PyTorch's checks of alpha against the result type."""
    typed = other._values() if getattr(other, "is_sparse", False) is True else other
    result = D.promote_args("add", [input, typed])[0]
    if isinstance(alpha, bool) and result is not dt.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not result.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if result is dt.bool_:  # ATen's alpha is a bool there: any nonzero one is True
        alpha = bool(alpha)
        if not isinstance(other, Tensor):
            return other and alpha
    return binary("mul", other, alpha) if isinstance(other, Tensor) else other * alpha


def add(input, other, *, alpha=1, out=None) -> Tensor:
    if input.__class__ is not Tensor and not isinstance(input, Tensor):
        input = _numbers(input, other)
    if alpha != 1:
        other = _times_alpha(input, other, alpha)
    return write_out(binary("add", input, other), out, operands=(input, other))


def sub(input, other, *, alpha=1, out=None) -> Tensor:
    if input.__class__ is not Tensor and not isinstance(input, Tensor):
        input = _numbers(input, other)
    if alpha != 1:
        other = _times_alpha(input, other, alpha)
    return write_out(binary("sub", input, other), out, operands=(input, other))


@_grad_name("RsubBackward1")
def rsub(input, other, *, alpha=1) -> Tensor:
    tensor_first("rsub", input, other)
    return sub(other, input, alpha=alpha)


def mul(input, other, *, out=None) -> Tensor:
    if input.__class__ is not Tensor and not isinstance(input, Tensor):
        input = _numbers(input, other)
    return write_out(binary("mul", input, other), out, operands=(input, other))


def div(input, other, *, rounding_mode=None, out=None) -> Tensor:
    if input.__class__ is not Tensor and not isinstance(input, Tensor):
        input = _numbers(input, other)
    from .functional_math import div_rounded
    return write_out(div_rounded(input, other, rounding_mode), out, operands=(input, other))


def pow(input, exponent, *, out=None) -> Tensor:
    refuse_negative_int_power(input, exponent)
    return write_out(binary("pow", input, exponent), out, operands=(input, exponent))


def refuse_negative_int_power(input, exponent) -> None:
    """PyTorch refuses a negative Python int exponent of an integer tensor before converting
    it; converted as every integer scalar is, an unsigned tensor would take -2 as 254."""
    if exponent.__class__ is int and exponent < 0 and isinstance(input, Tensor) and \
            input._dtype.category == 1:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def maximum(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    tensors_only("maximum", input, other)
    return write_out(binary("maximum", input, other), out, operands=(input, other))


def minimum(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    tensors_only("minimum", input, other)
    return write_out(binary("minimum", input, other), out, operands=(input, other))


def where(condition: Tensor, input=None, other=None) -> Tensor:
    check_tensor(condition, "where", "condition", 1)
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if condition._dtype is dt.uint8:  # (old masks: deprecated, still taken as nonzero)
        from .user_warning import warn_at_user
        warn_at_user("where received a uint8 condition tensor. This behavior is deprecated and "
                     "will be removed in a future version of PyTorch. Use a boolean condition "
                     "instead.")
        condition = cast(condition, dt.bool_)
    return elementwise("where", condition, input, other)


def with_zero_grad(result: Tensor, *inputs, grad_fn: str | None = None) -> Tensor:
    """`result`, unchanged, connected with a zero gradient to each input that requires grad:
    PyTorch's backward runs through ops whose result does not depend on a differentiable input
    (matrix_power(A, 0), fill, householder_product with no reflectors) and gives zeros, where a
    result without that link would refuse `.backward()`."""
    linked = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not linked or not A.is_grad_enabled() or not result._dtype.is_floating_point:
        return result
    keep = D.source("full", {"shape": tuple(result.shape), "dtype": dt.bool_, "value": True},
                    result._be)
    for x in linked:
        never = D.source("full", {"shape": tuple(x.shape), "dtype": dt.bool_, "value": False},
                         x._be)
        zero = sum(elementwise("where", never, x, 0))  # x is never picked: an exact 0, even at inf
        result = elementwise("where", keep, result, cast(zero, result._dtype))
    return A.label(result, grad_fn, *inputs) if grad_fn else result


_BOUNDS = (int, float, type(None))  # Python numbers, which keep a float tensor's dtype


def clamp(input: Tensor, min=None, max=None, *, out=None) -> Tensor:
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    _refuse_bool_clamp(input, min, max)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return write_out(_clamp_tensors(input, min, max), out, operands=(input, min, max))
    if isinstance(input, Tensor) and input._dtype.category == 2 and min.__class__ in _BOUNDS \
            and max.__class__ in _BOUNDS:  # (a float tensor's dtype is the compute dtype)
        attrs = {"min": None if min is None else float(min),
                 "max": None if max is None else float(max)}
        return write_out(apply("clamp", [input], attrs), out, operands=(input, min, max))
    bounds = [b for b in (min, max) if b is not None]
    compute, _ = D.promote_args("clamp", [input] + bounds)
    attrs = {"min": None if min is None else D._scalar_as(min, compute),
             "max": None if max is None else D._scalar_as(max, compute)}
    return write_out(apply("clamp", [cast(input, compute)], attrs), out, operands=(input, min, max))


clip = clamp


def _refuse_bool_clamp(input, min, max) -> None:
    """ATen's clamp kernels have no bool case: a bool result refuses Scalar bounds (a Python
    number beside a 0-d tensor takes the Scalar overload) and two tensor bounds; one tensor
    bound is maximum or minimum, which bool has."""
    if not isinstance(input, Tensor) or input._dtype is not dt.bool_:
        return
    bounds = [b for b in (min, max) if b is not None]
    if D.promote_args("clamp", [input] + bounds)[0] is not dt.bool_:
        return
    tensors = _b.sum(isinstance(b, Tensor) for b in bounds)
    if tensors == len(bounds) == 1:
        return
    kernel = "clamp_cpu" if tensors == 2 else (
        "clamp_scalar_cpu" if len(bounds) == 2 else "clamp_min_scalar_cpu" if min is not None
        else "clamp_max_scalar_cpu")
    raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _clamp_tensors(input: Tensor, min, max) -> Tensor:
    """Tensor bounds: values are min(max(x, lo), hi) (NaN from any operand); the gradient goes
    as PyTorch's clamp backward sends it, whole, to x inside [lo, hi] (ties included), to lo
    below and to hi above (maximum/minimum alone would split ties in half). Where lo > hi the
    value is hi and so is the gradient's target (PyTorch gives lo a share too)."""
    # the three operands in their common dtype first (a 0-d int64 bound of a uint8 tensor is
    # -8., not 248, beside a float bound), as ATen's clamp computes
    compute = D.promote_args("clamp", [b for b in (input, min, max) if b is not None])[0]
    lo = None if min is None else cast(_tensor(min, input), compute)
    hi = None if max is None else cast(_tensor(max, input), compute)
    input = cast(input, compute)
    value, inside = input, None
    if lo is not None:
        value = binary("maximum", value, lo)
        inside = binary("ge", input, lo)
    if hi is not None:
        value = binary("minimum", value, hi)
        le = binary("le", input, hi)
        inside = le if inside is None else binary("bitwise_and", inside, le)
    routed = value.detach()  # a NaN operand's NaN: PyTorch's backward sends it no gradient
    if hi is not None:
        above = binary("gt", input, hi)
        if lo is not None:
            above = binary("bitwise_or", above, binary("gt", lo, hi))
        routed = elementwise("where", above, hi, routed)
    if lo is not None:
        below = binary("lt", input, lo)
        if hi is not None:
            below = binary("bitwise_and", below, binary("le", lo, hi))
        routed = elementwise("where", below, lo, routed)
    return elementwise("where", inside, input, routed)


# torch.exp, torch.log2, ...: every primitive the op table marks `unary_api`, as source
# generated from the table (`python -m fusetorch._api.generate`)
from .unary_api import *  # noqa: E402,F401,F403
from .unary_api import __all__ as UNARY_API  # noqa: E402
negative, absolute = neg, abs  # noqa: F405


@_grad_name("PowBackward0")
def square(input: Tensor) -> Tensor:
    if input._dtype is dt.bool_:  # PyTorch's pow(x, 2): a bool tensor squares to int64
        input = cast(input, dt.int64)
    return binary("mul", input, input)


@_grad_name("RsqrtBackward0")
def rsqrt(input: Tensor) -> Tensor:
    return binary("div", 1.0, sqrt(input))


@_grad_name("ReciprocalBackward0")
def reciprocal(input: Tensor) -> Tensor:
    return binary("div", 1.0, input)


def scale_for(value, *tensors):
    """A Python scalar multiplier (alpha, beta, value) as PyTorch's kernels read it: converted to
    the integer result dtype of `tensors`, so a float truncates toward zero (addmm of int64
    tensors with beta=1.5 scales by 1 and stays int64)."""
    if isinstance(value, float) and not D.promote_args("add", tensors)[0].is_floating_point:
        return int(value)
    return value


@_grad_name("AddcmulBackward0")
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """`input + value * tensor1 * tensor2`, multiplied in PyTorch's kernel order."""
    value = scale_for(value, input, tensor1, tensor2)
    x, t1, t2, back = _common_dtype("addcmul", input, tensor1, tensor2)
    t = t1 if value == 1 else binary("mul", t1, value)
    return write_out(back(binary("add", x, binary("mul", t, t2))), out,
                     operands=(input, tensor1, tensor2))


def _common_dtype(fn: str, input, tensor1: Tensor, tensor2: Tensor) -> tuple:
    """(input, tensor1, tensor2, back): the operands in the dtype PyTorch's kernel computes in,
    the three operands' result type (a bfloat16 tensor1 beside float32 operands is not rounded
    to bfloat16 after `value *`), float32 for a float16/bfloat16 result (its opmath: one
    rounding at the end, by `back`)."""
    compute = D.promote_args("add", [input, tensor1, tensor2])[0]
    if compute is dt.bool_:  # (addcdiv's integer refusal comes first)
        raise NotImplementedError(f'"{fn}_cpu_out" not implemented for \'Bool\'')
    work = dt.float32 if compute in (dt.float16, dt.bfloat16) else compute
    ops = tuple(cast(t, work) if isinstance(t, Tensor) and t._dtype is not work else t
                for t in (tensor1, tensor2))
    x = input if work is compute else cast(input, work)
    return (x,) + ops + ((lambda r: r) if work is compute else (lambda r: cast(r, compute)),)


@_grad_name("AddcdivBackward0")
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """`input + value * tensor1 / tensor2`, in PyTorch's kernel order."""
    if not tensor1._dtype.is_floating_point and not tensor2._dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    x, t1, t2, back = _common_dtype("addcdiv", input, tensor1, tensor2)
    t = t1 if value == 1 else binary("mul", t1, value)
    return write_out(back(binary("add", x, binary("div", t, t2))), out,
                     operands=(input, tensor1, tensor2))


@_grad_name(lambda input, end, weight, **_: "LerpBackward1" if isinstance(weight, Tensor)
            else "LerpBackward0")
def lerp(input: Tensor, end: Tensor, weight, *, out=None) -> Tensor:
    """`input + weight * (end - input)`. Like PyTorch's kernel, weights of magnitude >= 0.5
    compute `end - (end - input) * (1 - weight)` instead, which is exact at weight 1."""
    check_tensor(input, "lerp", "input", 1)
    check_tensor(end, "lerp", "end", 2)
    for name, other in (("end", end), ("weight", weight)):  # (ATen's meta checks: first)
        if isinstance(other, Tensor) and other._dtype is not input._dtype:
            raise RuntimeError(f"expected dtype {dt.CPP_TYPE_NAMES[input._dtype.name]} for "
                               f"`{name}` but got dtype {dt.CPP_TYPE_NAMES[other._dtype.name]}")
    if not input._dtype.is_floating_point:
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f'"lerp_kernel_{kind}" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    from .opmath import in_float32  # (float16/bfloat16 in float32, rounded once: ATen's)
    return write_out(in_float32(_lerp, input, end, weight), out, operands=(input, end, weight))


def _lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    diff = binary("sub", end, input)
    if not isinstance(weight, Tensor):
        if _b.abs(weight) < 0.5:
            return binary("add", input, binary("mul", diff, weight))
        return binary("sub", end, binary("mul", diff, 1 - weight))
    low = binary("add", input, binary("mul", weight, diff))
    high = binary("sub", end, binary("mul", diff, binary("sub", 1, weight)))
    return elementwise("where", binary("lt", unary("abs", weight), 0.5), low, high)


def eq(input, other, *, out=None):
    tensor_first("eq", input, other)
    return write_out(binary("eq", input, other), out,
                     operands=(input, other))


def ne(input, other, *, out=None):
    tensor_first("ne", input, other)
    return write_out(binary("ne", input, other), out,
                     operands=(input, other))


def lt(input, other, *, out=None):
    tensor_first("lt", input, other)
    return write_out(binary("lt", input, other), out,
                     operands=(input, other))


def le(input, other, *, out=None):
    tensor_first("le", input, other)
    return write_out(binary("le", input, other), out,
                     operands=(input, other))


def gt(input, other, *, out=None):
    tensor_first("gt", input, other)
    return write_out(binary("gt", input, other), out,
                     operands=(input, other))


def ge(input, other, *, out=None):
    tensor_first("ge", input, other)
    return write_out(binary("ge", input, other), out,
                     operands=(input, other))


def logical_and(input, other):
    tensors_only("logical_and", input, other)
    return binary("bitwise_and", cast(input, dt.bool_), cast(other, dt.bool_))


def logical_or(input, other):
    tensors_only("logical_or", input, other)
    return binary("bitwise_or", cast(input, dt.bool_), cast(other, dt.bool_))


def equal(input: Tensor, other: Tensor) -> bool:
    check_tensor(input, "equal", "input", 1)
    check_tensor(other, "equal", "other", 2)
    return input.shape == other.shape and bool(eq(input, other).all())


def allclose(input: Tensor, other: Tensor, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:
    check_tensor(input, "allclose", "input", 1)
    check_tensor(other, "allclose", "other", 2)
    import numpy as np
    from .tensor import _data_read
    _data_read("allclose()")  # a Python bool from the values: a trace cannot hold it
    return bool(np.allclose(input._host(), other._host(), rtol=rtol, atol=atol,
                            equal_nan=equal_nan))


# ---------------------------------------------------------------- reductions

ReturnMax = namedtuple("max", ["values", "indices"])
ReturnMin = namedtuple("min", ["values", "indices"])
for _rt in (ReturnMax, ReturnMin):
    _rt.__repr__ = lambda self: (f"torch.return_types.{type(self).__name__}(\n"
                                 f"values={self.values!r},\nindices={self.indices!r})")


def _sum_dtype(x: Tensor, dtype) -> dt.DType:
    if dtype is not None:
        return dtype
    return x._dtype if x._dtype.is_floating_point else dt.int64


def _dims(dim, ndim: int) -> tuple:
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None  # PyTorch's legacy: an empty dim list reduces everything
    return norm_dims(dim, ndim)


@numpy_names
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    check_tensor(input, "sum", "input", 1)
    x = cast(input, _sum_dtype(input, dt.to_dtype(dtype, "sum")))
    r = apply("sum", [x], {"dims": _dims(dim, x.ndim), "keepdim": keepdim})
    return write_out(r, out)


@numpy_names
@_grad_name(lambda x, dim=None, *a, **k: "MeanBackward0" if dim is None else "MeanBackward1")
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    check_tensor(input, "mean", "input", 1)
    x = input if dtype is None else cast(input, dt.to_dtype(dtype, "mean"))
    if not x._dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: " + D._torch_name(x._dtype))
    dims = _dims(dim, x.ndim)
    n = numel([x.shape[d] for d in dims])
    s = apply("sum", [x], {"dims": dims, "keepdim": keepdim})
    return write_out(binary("div", s, n), out)


@numpy_names
@_grad_name(lambda x, dim=None, *a, **k: "ProdBackward0" if dim is None else "ProdBackward1")
@with_out("prod")
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    check_tensor(input, "prod", "input", 1)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("prod", prod, (input, dim, keepdim), {"dtype": dtype})
    x = cast(input, _sum_dtype(input, dt.to_dtype(dtype, "prod")))
    dims = norm_dims(None if dim is None else norm_dim(dim, x.ndim), x.ndim)
    return apply("prod", [x], {"dims": dims, "keepdim": keepdim})


def _extreme(name: str, arg: str, pairwise, result_type, input: Tensor, dim, keepdim, out):
    if isinstance(dim, Tensor):  # max(input, other): `pairwise` (maximum)
        return pairwise(input, dim, out=out)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return write_out(apply(name, [input], {"dims": norm_dims(None, input.ndim),
                                               "keepdim": False}), out)
    in_shape = input._data.shape
    d = norm_dim(dim, len(in_shape))
    x = input if in_shape else reshape(input, (1,))
    if x._data.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    # the values are gathered at the returned indices, so that the gradient goes to that index
    # (PyTorch's max(dim)); a plain max reduction would share it among ties
    shape = None if keepdim and in_shape else in_shape[:d] + in_shape[d + 1:]
    st = _DISPATCH.state
    traced = st.RECORDER is not None or st.PROFILE is not None  # every step seen
    if traced:
        idx = apply(arg, [x], {"dims": (d,), "keepdim": True})
    else:
        # nothing traces: the index (an integer: no gradient) and whatever needs no gradient
        # are made on the arrays (fresh ones: no views of the input) by the primitives' own
        # eager functions (a q-network's max under no_grad, an accuracy's max(1): 26 -> 11 us
        # for a 1x59 row; with a gradient, two of four dispatches)
        be = x._be
        i = be.impl[arg](x._data, dims=(d,), keepdim=True)
        if not (st.GRAD_ENABLED and any_needs_grad((x,))):
            v = be.impl["gather"](x._data, i, dim=d)
            if shape is not None:
                v, i = v.reshape(shape), i.reshape(shape)
            return _pair(result_type, (Tensor._make(v, x._dtype, be),
                                       Tensor._make(i, dt.int64, be)))
        idx = Tensor._make(i, dt.int64, be)
    values = apply("gather", [x, idx], {"dim": d})
    if shape is not None:  # (`checked`: the kept dim dropped, a valid shape for the rule)
        values = apply("reshape", [values], {"shape": shape}, checked=True)
        idx = apply("reshape", [idx], {"shape": shape}, checked=True) if traced else \
            Tensor._make(idx._data.reshape(shape), dt.int64, idx._be)
    return _pair(result_type, (A.label(values, _BACKWARD0[name], input), idx))


# (a named tuple's own __new__ is a Python function: ~0.3 us of a loop's max(v, 1))
_pair = tuple.__new__
_BACKWARD0 = {"max": "MaxBackward0", "min": "MinBackward0"}


@numpy_names
def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None, out=None):
    check_tensor(input, "max", "input", 1)
    if other is not None:  # torch.max(input, other=...)
        return maximum(input, other, out=out)
    if out is not None and isinstance(dim, int):
        return values_indices_out(_extreme("max", "argmax", maximum, ReturnMax, input, dim,
                                           keepdim, None), out, "max", input)
    return _extreme("max", "argmax", maximum, ReturnMax, input, dim, keepdim, out)


@numpy_names
def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None, out=None):
    check_tensor(input, "min", "input", 1)
    if other is not None:
        return minimum(input, other, out=out)
    if out is not None and isinstance(dim, int):
        return values_indices_out(_extreme("min", "argmin", minimum, ReturnMin, input, dim,
                                           keepdim, None), out, "min", input)
    return _extreme("min", "argmin", minimum, ReturnMin, input, dim, keepdim, out)


def values_indices_out(r: tuple, out, name: str, input: Tensor, values_message=None,
                       indices_message=None, in_place: bool = False) -> tuple:
    """out=(values, indices) of max/min/sort/kthvalue...: values of the input's dtype, int64
    indices, exactly (PyTorch does not cast these). `out` may alias the input only where
    PyTorch writes in place (`in_place`: sort, topk, cummax, cummin)."""
    inputs = () if in_place else (input,)
    if isinstance(out, (tuple, list)) and len(out) == 2 and _b.all(isinstance(o, Tensor)
                                                                    for o in out):
        exact_dtype(out[0], input._dtype, values_message)
        exact_dtype(out[1], dt.int64, indices_message)
    return write_outs(r, out, name, inputs)


def _amax_amin(name: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    dims = _dims(dim, input.ndim)
    if input.numel() == 0:  # PyTorch's errors; the dim is reported as the caller wrote it
        if dim is None or (not isinstance(dim, int) and len(dim) == 0):
            raise RuntimeError(f"a{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        for g in ((dim,) if isinstance(dim, int) else dim):
            if input.shape[norm_dim(g, input.ndim)] == 0:
                raise IndexError(f"a{name}(): Expected reduction dim {g} to have non-zero "
                                 "size.")
    return apply(name, [input], {"dims": dims, "keepdim": keepdim})


def _same_dtype_out(input: Tensor, out: Tensor | None) -> None:
    if isinstance(out, Tensor) and out._dtype is not input._dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got "
                           f"{D._torch_name(input._dtype).capitalize()} for input's dtype and "
                           f"{D._torch_name(out._dtype).capitalize()} for out's dtype.")


@numpy_names
@_grad_name("AmaxBackward0")
def amax(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    check_tensor(input, "amax", "input", 1)
    _same_dtype_out(input, out)
    return write_out(_amax_amin("max", input, dim, keepdim), out, name="amax")


@numpy_names
@_grad_name("AminBackward0")
def amin(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    check_tensor(input, "amin", "input", 1)
    _same_dtype_out(input, out)
    return write_out(_amax_amin("min", input, dim, keepdim), out, name="amin")


def _arg(name: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    if dim is None:
        if input.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        r = apply(name, [reshape(input, (-1,))], {"dims": (0,), "keepdim": False})
        return reshape(r, (1,) * input.ndim) if keepdim else r
    d = norm_dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    x = input if input.ndim else reshape(input, (1,))
    return apply(name, [x], {"dims": (d,), "keepdim": keepdim and input.ndim > 0})


@numpy_names
@with_out("argmax")
def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    check_tensor(input, "argmax", "input", 1)
    return _arg("argmax", input, dim, keepdim)


@numpy_names
@with_out("argmin")
def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    check_tensor(input, "argmin", "input", 1)
    return _arg("argmin", input, dim, keepdim)


@numpy_names
@_grad_name("VarBackward0")
@with_out("var")
def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,
        _warn_as: str = "var"):
    """Variance; `unbiased` (legacy) or `correction` (default 1) as in PyTorch."""
    check_tensor(input, "var", "input", 1)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not input._dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(dim, input.ndim)
    n = numel([input.shape[d] for d in dims])
    if n - correction <= 0:
        _warn_no_dof(_warn_as)
    x = _opmath(input)
    centered = sub(x, mean(x, dims, keepdim=True))
    ss = apply("sum", [binary("mul", centered, centered)], {"dims": dims, "keepdim": keepdim})
    v = binary("div", ss, float(n - correction) if n > correction else 0.0)
    return v if x is input else cast(v, input._dtype)


def _opmath(x: Tensor) -> Tensor:
    """x in float32 if it is float16/bfloat16: ATen's CPU var and std compute in their opmath
    type and round once (the mean and squares rounded to half put var 2 ulps off)."""
    return cast(x, dt.float32) if x._dtype in (dt.float16, dt.bfloat16) else x


@numpy_names
@_grad_name("StdBackward0")
@with_out("std")
def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,
        _warn_as: str = "std"):
    check_tensor(input, "std", "input", 1)
    x = _opmath(input) if input._dtype.is_floating_point else input
    v = var(x, dim, unbiased, keepdim, correction=correction, _warn_as=_warn_as)
    if not (_DISPATCH.state.GRAD_ENABLED and input._requires_grad):
        r = sqrt(v)
    else:
        # PyTorch's std passes a 0 gradient where std == 0 (sqrt's would be inf * 0 = nan):
        # the two-where form keeps the inf out of the backward
        zero = eq(v, 0.0)
        r = elementwise("where", zero, 0.0, sqrt(elementwise("where", zero, 1.0, v)))
    return r if x is input else cast(r, input._dtype)


def _warn_no_dof(name: str) -> None:
    """PyTorch's warning (every call) for a variance over fewer elements than `correction`."""
    from .user_warning import warn_at_user
    warn_at_user(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                 "than the reduction factor (input numel divided by output numel).")


def _all_any(name: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    b = cast(input, dt.bool_)
    dims = _dims(dim, b.ndim)
    if _b.any(b.shape[d] == 0 for d in dims):  # nothing to reduce: the identity
        shape = reduce_shape(tuple(b.shape), dims, keepdim)
        r = D.source("full", {"shape": shape, "dtype": dt.bool_, "value": name == "all"},
                     b._be)
    else:
        r = apply("min" if name == "all" else "max", [b], {"dims": dims, "keepdim": keepdim})
    return cast(r, dt.uint8) if input._dtype is dt.uint8 else r  # PyTorch keeps uint8


@numpy_names
@with_out("all")
def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    check_tensor(input, "all", "input", 1)
    return _all_any("all", input, dim, keepdim)


@numpy_names
@with_out("any")
def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    check_tensor(input, "any", "input", 1)
    return _all_any("any", input, dim, keepdim)


def _full_like_scalar(value, like: Tensor) -> Tensor:
    return D.source("full", {"shape": (), "dtype": dt.bool_, "value": value}, like._be)


# ---------------------------------------------------------------- matmul

def _check_batched_matmul(sa: tuple, sb: tuple) -> None:
    """PyTorch's errors for a matmul with a batch: a >= 3-d input times a 1-d or 2-d one folds
    its batch into rows (mv / mm messages); other shapes broadcast the batch dims, then bmm."""
    if len(sa) >= 3 and len(sb) <= 2:
        rows = numel(sa[:-1])
        if sa[-1] != sb[0]:
            raise RuntimeError(
                f"size mismatch, got input ({rows}), mat ({rows}x{sa[-1]}), vec ({sb[0]})"
                if len(sb) == 1 else
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{sa[-1]} and "
                f"{sb[0]}x{sb[1]})")
        return
    batch = numel(broadcast_shapes(sa[:-2], sb[:-2]))
    m2 = sb[-2] if len(sb) > 1 else sb[0]
    if sa[-1] != m2:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch}, {sa[-1]}] but got: [{batch}, {m2}].")


def _check_pair(fn: str, input, other, name: str = "other") -> None:
    check_tensor(input, fn, "input", 1)
    check_tensor(other, fn, name, 2)


def matmul(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("matmul", matmul, (input, other), {"out": out})
    if getattr(input, "is_sparse", False) is True or getattr(other, "is_sparse", False) is True:
        return write_out(D.SPARSE_MM(input, other), out)
    _check_pair("matmul", input, other)
    a, b = input, other
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.ndim > 2 or b.ndim > 2:
        _check_batched_matmul(tuple(a.shape), tuple(b.shape))
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                f"[{b.shape[0]}] to have the same number of elements, but got {a.shape[0]} and "
                f"{b.shape[0]} elements respectively")
        r = apply("matmul", [reshape(a, (1, -1)), reshape(b, (-1, 1))], {})
        return write_out(reshape(r, ()), out)
    if b.ndim == 1:
        if a.ndim == 2 and a.shape[1] != b.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat "
                               f"({a.shape[0]}x{a.shape[1]}), vec ({b.shape[0]})")
        r = apply("matmul", [a, reshape(b, (-1, 1))], {})
        return write_out(reshape(r, r.shape[:-1]), out)
    if a.ndim == 1:
        r = apply("matmul", [reshape(a, (1, -1)), b], {})
        return write_out(reshape(r, r.shape[:-2] + r.shape[-1:]), out)
    return write_out(apply("matmul", [a, b], {}), out)


def mm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("mm", mm, (input, mat2), {"out": out})
    if getattr(input, "is_sparse", False) is True or getattr(mat2, "is_sparse", False) is True:
        return write_out(D.SPARSE_MM(input, mat2), out)
    _check_pair("mm", input, mat2, "mat2")
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return write_out(apply("matmul", [input, mat2], {}), out)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("bmm", bmm, (input, mat2), {})
    _check_pair("bmm", input, mat2, "mat2")
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.ndim != 3
                           else "batch2 must be a 3D tensor")
    (b, _, m), (b2, m2, _) = input.shape, mat2.shape
    if b != b2 or m != m2:  # bmm does not broadcast the batch
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{b2}, {m2}].")
    return apply("matmul", [input, mat2], {})


@_grad_name("MvBackward0")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("mv", mv, (input, vec), {})
    return matmul(input, vec)


@_grad_name("DotBackward0")
def dot(input: Tensor, other: Tensor) -> Tensor:
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("dot", dot, (input, other), {})
    _check_pair("dot", input, other, "tensor")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    return matmul(input, other)


# ---------------------------------------------------------------- movement

def _shape_arg(shape, fn: str = "view", arg: str = "size") -> tuple:
    """Sizes or dims given as `f(2, 3)` or `f((2, 3))`: ints (or integer scalars with
    `__index__`) only, PyTorch's TypeError for floats, strings and None."""
    if shape.__class__ is tuple:  # (the common case, `view(1, -1)`: plain ints, one call)
        for s in shape:
            if s.__class__ is not int:
                break
        else:
            return shape
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return _ints(shape, fn, arg)


def _ints(seq, fn: str, arg: str) -> tuple:
    if seq.__class__ is tuple:  # the common case, plain ints, as given (`all` is torch's here)
        for s in seq:
            if s.__class__ is not int:
                break
        else:
            return seq
    out = []
    for i, s in enumerate(seq):
        if isinstance(s, (bool, float)) or not hasattr(s, "__index__"):
            raise TypeError(f"{fn}(): argument '{arg}' must be tuple of ints, but found element "
                            f"of type {type(s).__name__} at pos {i}")
        out.append(s.__index__())
    return tuple(out)


# the shape rules of view, reshape and expand are pure and a loop repeats its sizes: kept per
# (input shape, sizes); errors are raised afresh each call
_reshaped = functools.lru_cache(maxsize=1024)(infer_reshape)


def reshape(input: Tensor, shape) -> Tensor:
    check_tensor(input, "reshape", "input", 1)
    shape = _ints(shape if isinstance(shape, (tuple, list)) else (shape,), "reshape", "shape")
    if shape == input._data.shape:
        return apply("reshape", [input], {"shape": shape}, checked=True)
    return apply("reshape", [input], {"shape": _reshaped(shape, input._data.size)},
                 checked=True)


def view(input: Tensor, *shape, size=None, dtype=None) -> Tensor:
    """`view(*shape)` (`size=`): the same memory in another shape; `view(dtype)` (`dtype=`): the
    same bytes read as another dtype (tracer/strided.view_dtype)."""
    if shape and isinstance(shape[0], dt.DType):  # (one check on the hot path of view)
        dtype, shape = shape[0], shape[1:]
    if dtype is not None:
        if shape or size is not None or not isinstance(dtype, dt.DType) or \
                dt.to_dtype(dtype, "view") is None:
            got = ", ".join(type(a).__name__ if not isinstance(a, dt.DType) else "torch.dtype"
                            for a in (dtype, *shape))
            raise TypeError(f"view() received an invalid combination of arguments - got ({got}), "
                            "but expected one of:\n * (torch.dtype dtype)\n * (tuple of ints "
                            "size)\n")
        from .strided import view_dtype
        return view_dtype(input, dtype)
    if size is not None:
        if shape:
            raise TypeError("view() got multiple values for argument 'size'")
        shape = (size,)
    data = input._data
    shape = _reshaped(_shape_arg(shape, "view", "size"), data.size)
    if not data.flags.c_contiguous and not _can_view(data, shape):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return apply("reshape", [input], {"shape": shape}, checked=True)  # (sizes: _reshaped)


def _can_view(data, shape) -> bool:
    try:
        data.reshape(shape, copy=False)
    except ValueError:
        return False
    return True


def permute(input: Tensor, *dims) -> Tensor:
    check_tensor(input, "permute", "input", 1)
    dims = _shape_arg(dims, "permute", "dims")
    if len(dims) == input.ndim:  # else the shape rule reports the length mismatch
        dims = tuple(norm_dim(d, input.ndim) for d in dims)
    return apply("permute", [input], {"perm": dims})


@_grad_name("TransposeBackward0")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    check_tensor(input, "transpose", "input", 1)
    n = input.ndim
    d0, d1 = norm_dim(dim0, n), norm_dim(dim1, n)
    perm = list(range(n))
    if n:
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return apply("permute", [input], {"perm": tuple(perm)}, checked=True)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """`transpose` under NumPy's name and argument names."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """`transpose` under its other name."""
    return transpose(input, dim0, dim1)


@_grad_name("TBackward0")
def t(input: Tensor) -> Tensor:
    check_tensor(input, "t", "input", 1)
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    # (transpose unlabelled: t's own label replaces its TransposeBackward0 anyway)
    return transpose.__wrapped__(input, 0, -1) if input.ndim == 2 else apply(
        "permute", [input], {"perm": tuple(range(input.ndim))})


@numpy_names
@_grad_name(lambda x, dim=None: "SqueezeBackward0" if dim is None else "SqueezeBackward1")
def squeeze(input: Tensor, dim=None) -> Tensor:
    check_tensor(input, "squeeze", "input", 1)
    shape = input.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = norm_dims(dim, input.ndim)
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    return apply("reshape", [input], {"shape": new}, checked=True)


@numpy_names
@_grad_name("UnsqueezeBackward0")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    check_tensor(input, "unsqueeze", "input", 1)
    d = norm_dim(dim, input.ndim + 1)
    shape = input.shape
    return apply("reshape", [input], {"shape": tuple(shape[:d]) + (1,) + tuple(shape[d:])},
                 checked=True)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    check_tensor(input, "flatten", "input", 1)
    if input.ndim == 0:
        return apply("reshape", [input], {"shape": (1,)})
    s, e = norm_dim(start_dim, input.ndim), norm_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    new = tuple(shape[:s]) + (numel(shape[s:e + 1]),) + tuple(shape[e + 1:])
    return apply("reshape", [input], {"shape": new}, checked=True)


@numpy_names
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    d = norm_dim(dim, input.ndim)
    shape = input.shape
    sizes = infer_reshape(tuple(sizes), shape[d])
    return apply("reshape", [input], {"shape": tuple(shape[:d]) + sizes + tuple(shape[d + 1:])})


def expand(input: Tensor, *sizes) -> Tensor:
    sizes = _shape_arg(sizes, "expand", "size")
    data = input._data
    return apply("expand", [input], {"shape": _expanded(data.shape, sizes, data.itemsize)},
                 checked=True)  # (sizes: _expanded)


@functools.lru_cache(maxsize=1024)
def _expanded(shape: tuple, sizes: tuple, itemsize: int) -> tuple:
    """The shape `expand(*sizes)` gives a tensor of `shape` (PyTorch's errors)."""
    if sizes == shape:
        return sizes
    target = expand_shape(shape, sizes)
    numel = 1
    for t in target:
        numel *= t
    if numel * itemsize > 2**63 - 1:
        raise RuntimeError(f"expand to {list(target)}: fusetorch's arrays (numpy's), views "
                           "included, span at most 2**63 - 1 bytes of elements")
    return target


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    if memory_format is not None and memory_format is not _mf.contiguous_format:
        fmt = _mf.check(memory_format, "contiguous")
        if _mf.is_laid_out(input, fmt):
            return input
        if fmt is _mf.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous "
                               "operator")
        return _mf.copy_in_order(input, _mf.order(fmt, input.ndim))
    if input._data.flags.c_contiguous:
        return input
    return unary_copy(input)


def unary_copy(input: Tensor) -> Tensor:
    return apply("copy", [input], {})


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy laid out as `memory_format` asks; by default (preserve_format) channels_last
    stays channels_last (memory_formats.target_order)."""
    check_tensor(input, "clone", "input", 1)
    if memory_format is None and input._data.flags.c_contiguous:
        return apply("copy", [input], {})
    if memory_format in (_mf.preserve_format, _mf.contiguous_format) and \
            input._data.flags.c_contiguous:
        return unary_copy(input)
    fmt = _mf.preserve_format if memory_format is None else \
        _mf.check(memory_format, "clone")
    return _mf.copy_in_order(input, _mf.target_order(input, fmt))


@numpy_names
def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    tensors = D.check_tensors(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    # PyTorch's legacy: 1-d empty tensors are skipped; an RNN loop's cat (one dtype, none
    # skipped) takes its list as it is and skips the promotion rules
    kept, target = tensors, tensors[0]._dtype
    for x in tensors:
        if x._dtype is not target or x._data.shape == (0,):
            kept = [x for x in tensors if x._data.shape != (0,)] or tensors[:1]
            break
    ref = kept[0]
    if ref._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = norm_dim(dim, ref._data.ndim)
    if kept is not tensors and not _b.all([x._dtype is target for x in tensors]):
        # (the skipped empties take part in the promotion, as in PyTorch)
        target = dt.result_type([x._dtype for x in tensors], [], [])
        kept = [cast(x, target) for x in kept]
    result = apply("cat", kept, {"dim": d})
    return result if out is None else write_out(result, out, name="cat", inputs=tensors)


concat = concatenate = cat


@numpy_names
@_grad_name("StackBackward0")
def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    tensors = D.check_tensors(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0].shape
    for i, x in enumerate(tensors):
        if x.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ref)} at entry 0 and {list(x.shape)} at entry {i}")
    d = norm_dim(dim, len(ref) + 1)
    # each input as a view with the new dim (the reshape primitive itself: stack's result is
    # what is labelled, StackBackward0 on the inputs; 20 scalars 131 -> 80 us)
    shape = {"shape": tuple(ref[:d]) + (1,) + tuple(ref[d:])}
    return cat([apply("reshape", [x], shape) for x in tensors], d, out=out)


@numpy_names
@_grad_name("SliceBackward0")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    check_tensor(input, "narrow", "input", 1)
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length <= n - start):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(input, d, start, start + length)


def _slice(input: Tensor, d: int, start: int, stop: int) -> Tensor:
    spec = tuple(("slice", 0, s, 1) for s in input.shape[:d]) + (("slice", start, stop, 1),)
    return apply("index", [input], {"spec": spec}, checked=True)  # (0 <= start <= stop <= n)


@_grad_name(lambda t, s, dim=0: "SplitBackward0" if isinstance(s, int)
            else "SplitWithSizesBackward0")
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = norm_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        if step <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [_b.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if _b.any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={sizes}")
        if _b.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(_slice(tensor, d, start, start + s))
        start += s
    _views.mark_multi(out)  # PyTorch refuses in-place writes through these
    return tuple(out)


@numpy_names
@_grad_name("SplitBackward0")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    check_tensor(input, "chunk", "input", 1)
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = norm_dim(dim, input.ndim)
    n = input.shape[d]
    if n == 0:  # PyTorch: `chunks` empty pieces
        out = tuple(_slice(input, d, 0, 0) for _ in range(chunks))
        _views.mark_multi(out)
        return out
    return split(input, _b.max(1, math.ceil(n / chunks)), d)


@numpy_names
@_grad_name("UnbindBackward0")
def unbind(input: Tensor, dim: int = 0) -> tuple:
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    shape = input._data.shape
    d = norm_dim(dim, len(shape))
    # each piece is one `index` of an int at d (a view of input, as a select is in PyTorch): an
    # RNN layer unbinds its input every call, and a slice then a squeeze were two dispatches
    before = tuple([("slice", 0, s, 1) for s in shape[:d]])
    out = tuple([apply("index", [input], {"spec": before + (("int", i),)}, checked=True)
                 for i in range(shape[d])])
    _views.mark_multi(out)
    return out


def _check_index(name: str, index: Tensor) -> None:
    check_tensor(index, name, "index", 2)
    if index._dtype is not dt.int64 and index._dtype is not dt.int32 and index.numel():
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def check_scatter(input: Tensor, dim: int, index: Tensor, src) -> int:
    """PyTorch's scatter checks (scatter, scatter_add, scatter_reduce), in its order: the
    normalised dim. A 0-d tensor counts as 1-d."""
    _check_index("scatter", index)
    if isinstance(src, Tensor) and src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = norm_dim(dim, input.ndim)
    if index.numel() == 0:
        return d
    nd = _b.max(input.ndim, 1)
    for name, t in (("self", input), ("src", src)):
        if isinstance(t, Tensor) and _b.max(index.ndim, 1) != _b.max(t.ndim, 1):
            raise RuntimeError(
                f"Index tensor must have the same number of dimensions as {name} tensor")
    ix = tuple(index.shape) or (1,)
    xs = tuple(input.shape) or (1,)
    ss = (tuple(src.shape) or (1,)) if isinstance(src, Tensor) else None
    if _b.any((k != d and ix[k] > xs[k]) or (ss is not None and ix[k] > ss[k])
           for k in range(nd)):
        tail = f" and to be no larger size than src {list(ss)}" if ss is not None else ""
        raise RuntimeError(f"Expected index {list(ix)} to be no larger than self {list(xs)} "
                           f"apart from dimension {d}{tail}")
    return d


def _one_d(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if t.ndim == 0 else t


@numpy_names
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,
           out=None) -> Tensor:
    if out is not None:
        check_tensor(input, "gather", "input", 1)
        if isinstance(out, Tensor):
            exact_dtype(out, input._dtype)
        return write_out(gather(input, dim, index), out, name="gather", inputs=(input, index))
    check_tensor(input, "gather", "input", 1)
    _check_index("gather", index)
    if index.numel() == 0:  # PyTorch checks neither the index's dims nor its dtype then
        norm_dim(dim, input.ndim)
        return reshape(reshape(input, (-1,))[:0], index.shape)
    if (input.ndim == 0 or index.ndim == 0) and input.ndim <= 1 and index.ndim <= 1:
        norm_dim(dim, input.ndim)  # a 0-d tensor is a row of one element
        return reshape(gather(_one_d(input), 0, _one_d(index)), index.shape)
    d = norm_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    # the index checked as its own primitive (so a compiled replay checks it too): the
    # `gather` primitive trusts its index, which every other caller makes itself (an argmax,
    # a sort's order), and on a GPU a check reads values back to the host
    idx = D.check_values(cast(index, dt.int64),
                         f"index {{value}} is out of bounds for dimension {d} with size {size}",
                         lo=0, hi=size)
    return apply("gather", [input, idx], {"dim": d})


@numpy_names
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    check_tensor(input, "scatter_add", "input", 1)
    check_tensor(src, "scatter_add", "src", 4)
    d = check_scatter(input, dim, index, src)
    if input.ndim <= 1 and index.ndim <= 1 and src.ndim <= 1 and \
            _b.min(input.ndim, index.ndim, src.ndim) == 0:  # 0-d: a row of one element
        r = scatter_add(_one_d(input), 0, _one_d(index), _one_d(src))
        return reshape(r, input.shape)
    return apply("scatter_add", [input, cast(index, dt.int64), src], {"dim": d})


@numpy_names
@_grad_name("IndexSelectBackward0")
def index_select(input: Tensor, dim: int, index: Tensor, *, out=None) -> Tensor:
    if out is not None:
        check_tensor(input, "index_select", "input", 1)
        if isinstance(out, Tensor):
            exact_dtype(out, input._dtype, "index_select(): self and result must have the "
                                           "same scalar type")
        return write_out(index_select(input, dim, index), out, name="index_select",
                         inputs=(input, index), overlap_first=True)
    check_tensor(input, "index_select", "input", 1)
    check_tensor(index, "index_select", "index", 2)
    d = norm_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype is not dt.int64 and index._dtype is not dt.int32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if input.ndim == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{index.numel()} value(s)")
        return reshape(index_select(reshape(input, (1,)), 0, index), ())
    index = D.check_values(index, "index out of range in self", lo=0, hi=input.shape[d],
                           error="IndexError")
    spec = tuple([("slice", 0, s, 1) for s in input._data.shape[:d]]) + (("tensor", 0),)
    if index._data.ndim != 1:  # (a 0-d index; a vector is its own flat form)
        index = reshape(index, (-1,))
    return apply("index", [input, cast(index, dt.int64)], {"spec": spec})


_C_TYPES = {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half",
            dt.bfloat16: "c10::BFloat16", dt.int64: "int64_t", dt.int32: "int",
            dt.int16: "int16_t", dt.int8: "int8_t", dt.uint8: "uint8_t", dt.bool_: "bool"}


@_grad_name("MaskedFillBackward0")
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    check_tensor(input, "masked_fill", "input", 1)
    check_tensor(mask, "masked_fill", "mask", 2)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = cast(value, input._dtype)
    else:
        if isinstance(value, complex):  # PyTorch's error for a complex value (no complex here)
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_C_TYPES.get(input._dtype, input._dtype.name)} without "
                               f"overflow")
        if not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise TypeError(f"masked_fill(): argument 'value' must be Number, not "
                            f"{type(value).__name__}")
        value = D._scalar_as(value, input._dtype)
    if mask._dtype is not dt.bool_:
        from ..ir.ops import _CPP_NAME  # (PyTorch names the C++ type here)
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_CPP_NAME.get(mask._dtype.name, mask._dtype.name)}")
    return elementwise("where", mask, value, input)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    check_tensor(input, "nonzero", "input", 1)
    if as_tuple and input.ndim == 0:  # PyTorch: a 0-d input counts as 1-d here
        input = reshape(input, (1,))
    r = apply("nonzero", [input], {})
    return tuple(unbind(r, 1)) if as_tuple else r


@_grad_name("FlipBackward0")
def flip(input: Tensor, *args, dims=None) -> Tensor:
    check_tensor(input, "flip", "input", 1)
    dims = norm_dims(_shape_arg(args, "flip", "dims") if dims is None
                     else _shape_arg((dims,), "flip", "dims"), input.ndim)
    spec = tuple(("slice", 0, s, 1) for s in input.shape)
    idx = []
    from .creation import arange
    for d in dims:
        idx.append(arange(input.shape[d] - 1, -1, -1, device=input.device))
    # index by reversed aranges, one advanced index per dim, each on its own axis
    r = input
    for d, ix in zip(dims, idx):
        sp = spec[:d] + (("tensor", 0),)
        r = apply("index", [r, ix], {"spec": sp})
    return r


@_grad_name("RepeatBackward0")
def repeat(input: Tensor, *sizes) -> Tensor:
    sizes = _shape_arg(sizes, "repeat", "repeats")
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    x = reshape(input, tuple(v for s in shape for v in (1, s)))
    x = expand(x, *[v for r, s in zip(sizes, shape) for v in (r, s)])
    x = reshape(x, tuple(r * s for r, s in zip(sizes, shape)))
    # repeat returns new memory (PyTorch's does): where numpy's reshape could keep the expanded
    # view (stride 0), an in-place op on the result would write one element many times
    return clone(x) if x._data.base is not None else x
