"""The one path every tensor operation takes: check inputs, infer shape and dtype from the op
table, run the eager implementation, wrap the result, and record a node when a recording wants it.

Three entry points, by the kind of primitive:
  elementwise(name, *args)      Tensors and Python scalars, broadcast and type-promoted
  apply(name, tensors, attrs)   reductions, movement and extern ops (no promotion)
  source(name, attrs, backend)  creation ops

Promotion's common case, operands of one dtype and device (or a float tensor and a Python number),
is recognised first and costs one ufunc call plus the result object: `x + y` on small tensors must
stay within a few microseconds of numpy. It is the same path: only the promotion step is trivial.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes as dt
from ..ir.ops import OPS, index_shape
from ..ir.shapes import broadcast_many, broadcast_shapes
from ..runtime import device as _device
from ..runtime.device import NP_DTYPES
from .._per_thread import per_thread
from . import views as _views
from .tensor import Tensor
from ..ir.roles import Role

# The active recording (a tracer.trace.Recorder), or None; grad mode; and autograd's recording
# function (tracer.autograd.record, registered by that module). RECORDER, GRAD_ENABLED and
# PROFILE belong to the calling thread (`_per_thread`; PyTorch keeps grad mode per thread): read
# and set as `D.RECORDER` from other modules; the entry points here read `_LOCAL.state` once.
# PROFILE is the active profiler's hook (fusetorch.profiler), or None. Each entry point below
# reads it first: `PROFILE.enter()` is False only for the call the hook itself makes, which runs
# the body; every other call is timed as one event by `PROFILE.op` (see profiler/_record.py).
# fusetorch.sparse's sparse @ dense, which torch.mm/torch.matmul hand a sparse first operand to
# (registered when fusetorch.sparse is imported: the tracer imports nothing above it)
SPARSE_MM = None
# fusetorch.sparse's dense (op) sparse, which elementwise hands a sparse second operand to
# (name, dense, sparse) -> result; registered with SPARSE_MM
SPARSE_BINARY = None
GRAD_RECORD = None
GRAD_SAVED = None  # autograd's saved_tensor: the tensor of a node's saved entry
_LOCAL = per_thread(__name__, RECORDER=None, GRAD_ENABLED=True, PROFILE=None)


def _recorder():
    return _LOCAL.state.RECORDER


def _grad_enabled() -> bool:
    return _LOCAL.state.GRAD_ENABLED


def _profile():
    return _LOCAL.state.PROFILE


_new = Tensor._make
_ndarray = np.ndarray
_BOOL_OUT = {n for n, d in OPS.items() if d.promote == "compare"} | {"logical_not"}


def _identity_promotion(promotes: tuple, nin: int, dtypes: tuple) -> set:
    """The elementwise ops of `nin` inputs whose promotion is the identity for operands of one
    of `dtypes` (or one with a Python number): their compute dtype is the operands', no cast,
    and their `refuse` rule (PyTorch's refusals, all of bool operands) accepts it."""
    return {n for n, d in OPS.items() if d.kind == "elementwise" and d.nin == nin
            and Role.MASK not in d.roles and d.promote in promotes
            and (d.refuse is None or all(d.refuse(f, [f] * nin) is None for f in dtypes))}


_FLOATS = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
_SAME_FLOAT1 = _identity_promotion(("same", "compare", "float"), 1, _FLOATS)
_SAME_FLOAT2 = _identity_promotion(("same", "compare", "float"), 2, _FLOATS)
# two integer tensors of one dtype: only ops whose result has their dtype (or bool); integer
# scalars take the general path, which wraps them to the tensor's range as PyTorch does
_SAME_INT2 = _identity_promotion(("same", "compare"), 2, (dt.uint8, dt.int8, dt.int16,
                                                           dt.int32, dt.int64))
_SCALARS = (int, float)
_UNARY = object()  # (elementwise's `b` when absent)
# ml_dtypes' bfloat16 ufuncs widen a Python float operand to float32: its scalar ops take the
# general path, which rounds the result back
_BF16 = dt.bfloat16


def _check_devices(tensors) -> object:
    be = tensors[0]._be
    for t in tensors[1:]:
        if t._be is not be:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"{be.device} and {t._be.device}!")
    return be


def _cpu_scalars_to_device(args: tuple, tensors: list) -> tuple:
    """Elementwise ops take 0-d CPU tensors with tensors of another device, as PyTorch does
    (`x.cuda() * torch.tensor(2.)`): they are copied over (differentiably). Any other mix is
    PyTorch's error naming both devices. Returns (args, backend)."""
    cpu_scalar = [t._be.device.type == "cpu" and t._data.ndim == 0 for t in tensors]
    target = next((t._be for t, s in zip(tensors, cpu_scalar) if not s), tensors[0]._be)
    out = []
    for a in args:
        if isinstance(a, Tensor) and a._be is not target:
            if a._be.device.type != "cpu" or a._data.ndim:
                _check_devices([next(t for t in tensors if t._be is target), a])
            a = transfer(a, target)
        out.append(a)
    return tuple(out), target


def transfer(t: Tensor, be) -> Tensor:
    """A copy of `t` on backend `be` (`.to(device)`), recorded and differentiable. `compile`
    does not take it (a compiled program runs on one device): its trace breaks here."""
    rec = _recorder()
    if rec is not None and (rec.strict or (rec.parent is not None and rec.parent.strict)):
        from .trace import user_source
        rec.graph_break(f"a copy from {t._be.device} to {be.device} at {user_source()}")
    return apply("to_device", [t], {"device": str(be.device), "src": str(t._be.device)})


def promote_args(name: str, args) -> tuple:
    """(compute dtype, output dtype) of an elementwise op over tensors and scalars."""
    opdef = OPS[name]
    promote = opdef.promote
    part = args[1:] if Role.MASK in opdef.roles else args
    dims, zero, scal = [], [], []
    for a in part:
        if isinstance(a, Tensor):
            (dims if a._data.ndim else zero).append(a._dtype)
        else:
            scal.append(dt.scalar_dtype(a))
    compute = dt.result_type(dims, zero, scal)
    if promote == "float" and not compute.is_floating_point:
        compute = dt.default_float()
    elif promote == "integral" and compute.is_floating_point:
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f'\'{_torch_name(compute)}\'')
    if opdef.refuse is not None:  # PyTorch's refusals (bool subtraction, negation)
        error = opdef.refuse(compute, dims + zero + scal,
                             tuple(i for i, a in enumerate(part) if not isinstance(a, Tensor)))
        if error is not None:
            raise error if isinstance(error, Exception) else RuntimeError(error)
    return compute, (dt.bool_ if name in _BOOL_OUT else compute)


def _torch_name(d: dt.DType) -> str:
    return dt.SCALAR_TYPE_NAMES[d.name]


def _scalar_as(value, d: dt.DType, strict_unsigned: bool = False):
    """A Python number written into dtype `d` (a fill, a bound, a `where` operand), checked as
    c10's `checked_convert`: an unsigned dtype takes negatives down to -max (two's complement,
    -9 in uint8 is 247), a float must lie in the range before truncation (127.5 is too big for
    int8), NaN never converts to an integer. `strict_unsigned`: no negatives at all (c10's
    flag, which constant_pad_nd sets)."""
    if d.category == 2:
        return float(value)
    if d.category == 1:
        lo, hi = _int_range(d)
        if isinstance(value, (float, np.floating)):
            if math.isnan(value) or not lo <= value <= hi:
                _overflow(d)
            return int(value)
        v = int(value)
        if v > hi or v < (-hi if lo == 0 and not strict_unsigned else lo):
            _overflow(d)
        return _wrap_int(v, d) if v < lo else v
    return bool(value)


def _int_range(d: dt.DType) -> tuple:
    bits = 8 * d.itemsize
    return (-(1 << bits - 1), (1 << bits - 1) - 1) if d.is_signed else (0, (1 << bits) - 1)


def _overflow(d: dt.DType):
    # c10 names the C type as its compiler spells it: int32_t is "int"
    name = "int" if d is dt.int32 else d.c_type
    raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _wrap_int(v: int, d: dt.DType) -> int:
    """A Python int taking part in an op of integer dtype `d`, wrapped to d's range."""
    bits = 8 * d.itemsize
    v &= (1 << bits) - 1
    if d.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _numpy_args(args) -> tuple:
    """numpy arrays take part as tensors of their dtype (`ndarray + tensor` is a Tensor, as in
    PyTorch), numpy scalars as the Python numbers they hold."""
    from .creation import tensor
    like = next((a for a in args if isinstance(a, Tensor)), None)
    dev = like.device if like is not None else None
    return tuple(tensor(a, device=dev) if isinstance(a, _ndarray) else
                 a.item() if isinstance(a, np.generic) else a for a in args)


def elementwise(name: str, a, b=_UNARY, *more) -> Tensor:
    """An elementwise op of tensors and Python scalars (`b` absent for a unary op, `more` for
    `where` and the like): promotion (with explicit casts), broadcasting, device check, run,
    recording."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        args = _args(a, b, more)
        return prof.op(elementwise, (name,) + args, name, args)
    # promotion: its common case first, operands of one float dtype and device or a float
    # tensor and a Python number (a loop's `x + y`, `h * 0.5`, `tanh(h)`), then the rules
    data = None
    if isinstance(a, Tensor) and not more:  # (Parameters too)
        d = a._dtype
        if b is _UNARY:
            if d.category == 2 and name in _SAME_FLOAT1:
                ins = tensors = (a,)
                data = (a._data,)
        elif isinstance(b, Tensor):
            if b._dtype is d and b._be is a._be and (
                    name in _SAME_FLOAT2 if d.category == 2 else
                    d.category == 1 and name in _SAME_INT2):
                ins = tensors = (a, b)
                data = ad, bd = a._data, b._data
                if ad.shape != bd.shape:
                    broadcast_shapes(ad.shape, bd.shape)  # PyTorch's error
        elif b.__class__ in _SCALARS and d.category == 2 and d is not _BF16 and \
                name in _SAME_FLOAT2:
            f = float(b)  # (the general path's scalar: the same graph)
            ins, tensors, data = (a, f), (a,), (a._data, f)
    elif len(more) == 1 and name in _SELECT and isinstance(a, Tensor) and a._dtype is _BOOL:
        ins, tensors, data, d = _select_operands(a, b, more[0])
    if data is not None:
        be, compute, shape = a._be, d, None
        out_dtype = dt.bool_ if name in _BOOL_OUT else d
    else:
        if b.__class__ not in _SCALARS and not isinstance(b, Tensor) and \
                SPARSE_BINARY is not None and getattr(b, "is_sparse", False) is True:
            return SPARSE_BINARY(name, a, b)
        ins, tensors, data, be, compute, out_dtype, shape = _promote(name, _args(a, b, more))
    try:
        if (compute is _F16 or compute is _BF16) and b is not _UNARY and be.xp is np and \
                Role.HALF_SCALAR_AT_FLOAT32 in OPS[name].roles:
            out = _with_scalar_at_float32(be.impl[name], compute, a, b, data)
        else:
            out = be.impl[name](*data)
    except MemoryError as e:
        raise allocator_error(e) from None
    if out.__class__ is not _ndarray:  # a numpy scalar from 0-d inputs, or cupy
        out = be.xp.asarray(out)
    if shape is not None:
        out = _as_array(out, NP_DTYPES[out_dtype], be)
        if out.shape != shape:  # an op whose eager result does not broadcast as its rule says
            raise AssertionError(f"{name}: eager result {out.shape} but shape rule {shape}")
    result = _new(out, out_dtype, be)
    rec = st.RECORDER
    if rec is not None:
        rec.record(name, ins, {}, result, compute)
    if st.GRAD_ENABLED and any_needs_grad(tensors):
        GRAD_RECORD(name, ins, {}, result, compute)
        if compute.category == 2 and (a.__class__ in _WHOLE or b.__class__ in _WHOLE):
            _note_numbers(result._node, (a, b))
    return result


_WHOLE = (int, bool)


def _note_numbers(node, args: tuple) -> None:
    """A Python int or bool taken into a float op is a float constant in the graph; its node
    notes the Python type, which PyTorch's saved value keeps (`(x * 2).grad_fn._saved_other`
    is an int64 2, PowBackward0's `_saved_exponent` the int 2)."""
    if node is None:
        return
    for x, n in zip(args, node.inputs):
        if x.__class__ in _WHOLE and n.op == "constant" and n.meta is None:
            n.meta = {"number": x.__class__}


# (Role.HALF_SCALAR_AT_FLOAT32) numpy rounds a scalar to the tensor's dtype first, as PyTorch
# does for a first operand (`torch.mul(0.1, x)`) and for add and sub; PyTorch's mul and div
# read a second one at float32: one in three of `x * 0.1` differed in the last bit.
_F16, _F32_NP = dt.float16, np.dtype(np.float32)


def _with_scalar_at_float32(fn, compute: dt.DType, a, b, data: tuple):
    if not (b.__class__ in _SCALARS or b.__class__ is bool or
            isinstance(b, Tensor) and b.ndim == 0 and b._dtype is not compute) or \
            not isinstance(a, Tensor) or a._dtype is not compute:
        return fn(*data)
    wide = fn(data[0].astype(_F32_NP), np.float32(b._data if isinstance(b, Tensor) else b))
    return wide.astype(NP_DTYPES[compute])  # (a numpy scalar for 0-d: the caller wraps it)


_SELECT = {n for n, d in OPS.items() if Role.MASK in d.roles}  # where(cond, x, y)
_BOOL = dt.bool_
_NO_SELECT = (None, None, None, None)


def _select_operands(cond: Tensor, x, y) -> tuple:
    """where's common case, (inputs, tensors, data, dtype) without promotion: x and y tensors of one
    float dtype (not bfloat16 beside a number: ml_dtypes widens it) on cond's backend, or one
    of them a Python number; else _NO_SELECT, the general path."""
    be = cond._be
    if isinstance(x, Tensor):
        d = x._dtype
        if d.category != 2 or x._be is not be:
            return _NO_SELECT
        if isinstance(y, Tensor):
            if y._dtype is not d or y._be is not be:
                return _NO_SELECT
            ins = (cond, x, y)
            data = (cond._data, x._data, y._data)
        elif y.__class__ in _SCALARS and d is not _BF16:
            ins, data = (cond, x, float(y)), (cond._data, x._data, float(y))
        else:
            return _NO_SELECT
    elif x.__class__ in _SCALARS and isinstance(y, Tensor) and y._dtype.category == 2 and \
            y._dtype is not _BF16 and y._be is be:
        d = y._dtype
        ins, data = (cond, float(x), y), (cond._data, float(x), y._data)
    else:
        return _NO_SELECT
    shapes = [a.shape for a in data if a.__class__ is not float]
    if any(s != shapes[0] for s in shapes):
        broadcast_many(shapes)  # PyTorch's error
    return ins, tuple(a for a in ins if isinstance(a, Tensor)), data, d


# binary and unary ops are elementwise ops: their call sites name the arity
binary = unary = elementwise


def _args(a, b, more) -> tuple:
    return (a,) if b is _UNARY else (a, b) + more


def _promote(name: str, args: tuple) -> tuple:
    """Promotion's general case: numpy arguments as tensors, PyTorch's errors for non-numbers
    and devices, casts to the compute dtype, Python numbers as it, the broadcast shape.
    Returns (inputs, tensors, their data, backend, compute dtype, output dtype, shape)."""
    if any(isinstance(a, (_ndarray, np.generic)) for a in args):
        args = _numpy_args(args)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:  # `torch.exp(2.0)`, `F.relu("a")`: PyTorch names the first argument
        check_tensor(args[0], name, "input", 1)
    for a in args:
        if not isinstance(a, (Tensor, bool, int, float)):
            raise TypeError(f"{name}(): argument must be a Tensor or a number, "
                            f"not {type(a).__name__}")
    be = tensors[0]._be
    if any(t._be is not be for t in tensors):
        args, be = _cpu_scalars_to_device(args, tensors)
        tensors = [a for a in args if isinstance(a, Tensor)]
    compute, out_dtype = promote_args(name, args)
    shape = broadcast_many([t._data.shape for t in tensors])
    mask = Role.MASK in OPS[name].roles
    ins = []
    for i, a in enumerate(args):
        want = dt.bool_ if (mask and i == 0) else compute
        if isinstance(a, Tensor):
            if a._dtype is not want:
                if mask and i == 0:
                    raise RuntimeError(f"{name} expected condition to be a boolean tensor, "
                                       f"but got a tensor with dtype {_torch_name(a._dtype)}")
                a = cast(a, want)
        elif want.category == 1 and not mask:
            a = _wrap_int(int(a), want)  # PyTorch wraps: int32 tensor + 2**40, uint8 + (-1)
        else:
            a = _scalar_as(a, want)
        ins.append(a)
    data = [a._data if isinstance(a, Tensor) else a for a in ins]
    return ins, tensors, data, be, compute, out_dtype, shape


def _as_array(out, npdt, be):
    """The eager result as an array of `be` of numpy dtype `npdt` (a scalar or another
    dtype converted)."""
    if out.__class__ is not _ndarray and out.__class__ is not Unmaterialized:
        out = be.xp.asarray(out)
    if out.dtype is not npdt and out.dtype != npdt:
        out = out.astype(npdt)
    return out


# ---------------------------------------------------------------- lazy placeholders

_UNINITIALIZED = ("Attempted to use an uninitialized parameter in {}. This error happens when "
                  "you are using a `LazyModule` or explicitly manipulating "
                  "`torch.nn.parameter.UninitializedParameter` objects. When using LazyModules "
                  "Call `forward` with a dummy batch to initialize the parameters before "
                  "calling torch functions")


# decorators' and dispatchers' frames, which name no function a user called
_WRAPPERS = frozenset({"fn", "call", "wrapper", "inner", "method", "__call__", "_call_impl",
                       "_wrapped_call_impl", "forward"})


def uninitialized_message(what: str | None = None) -> str:
    """PyTorch's ValueError text for computing with a lazy placeholder; `what` defaults to
    the fusetorch function the user called (the outermost fusetorch frame)."""
    if what is None:
        import os
        import sys
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        f, name, inside = sys._getframe(1), "a torch function", False
        while f is not None:
            if f.f_code.co_filename.startswith(root):
                inside, code = True, f.f_code.co_name
                if code not in _WRAPPERS:
                    name = code
            elif inside:
                break
            f = f.f_back
        what = f"<built-in method {name}>"
    return _UNINITIALIZED.format(what)


class Unmaterialized(np.ndarray):
    """The (empty) array of a lazy module's placeholder (`nn.UninitializedParameter`).
    Every computation reaches numpy through its ufunc or function protocol, so refusing
    there refuses every op at once, at no cost to other arrays; conversions (`astype`) and
    views keep the class, so `module.to(float64)` before the first forward still works."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise ValueError(uninitialized_message())

    def __array_function__(self, func, types, args, kwargs):
        raise ValueError(uninitialized_message())


def check_tensor(x, fn: str, arg: str, pos: int | None = None) -> None:
    """PyTorch's TypeError for a non-tensor where a tensor is required (instead of an
    AttributeError from the first `x._data` inside)."""
    if not isinstance(x, Tensor):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{fn}(): argument '{arg}'{where} must be Tensor, not "
                        f"{type(x).__name__}")


def check_tensors(seq, fn: str) -> list:
    """A list of tensors (`cat`, `stack`): a tensor or a non-sequence is PyTorch's TypeError,
    as is a non-tensor element."""
    if isinstance(seq, Tensor) or not isinstance(seq, (list, tuple)) and \
            not hasattr(seq, "__iter__"):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(seq).__name__}")
    seq = list(seq)
    for x in seq:  # (no enumerate: a loop's cat of a few tensors)
        if not isinstance(x, Tensor):
            i = next(i for i, x in enumerate(seq) if not isinstance(x, Tensor))
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(seq[i]).__name__}")
    return seq


def allocation_check(shape: tuple, d: dt.DType) -> None:
    """PyTorch's RuntimeError for a size whose byte count overflows int64 (numpy's would be a
    ValueError)."""
    n, overflowed = 1, False
    for s in shape:
        n *= s
        if n > 2**63 - 1:  # PyTorch multiplies in turn: (2**62, 2**62, 0) overflows
            overflowed = True
    if n * d.itemsize > 2**63 - 1 or overflowed:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    if n == 0:
        nonzero = d.itemsize
        for s in shape:
            nonzero *= s or 1
        if nonzero > 2**63 - 1:  # numpy sizes even an empty array by its other dims
            raise RuntimeError(
                f"sizes={list(shape)}: an empty tensor whose other sizes span more than "
                f"2**63 - 1 bytes of {d} is not supported (fusetorch's tensors are "
                "numpy arrays, which cannot hold it)")


def out_of_memory(shape: tuple, d: dt.DType) -> RuntimeError:
    """The allocator's RuntimeError, as PyTorch raises it, for numpy's MemoryError."""
    n = d.itemsize
    for s in shape:
        n *= s
    return RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {n} "
                        f"bytes. Error code 12 (Cannot allocate memory)")


def allocator_error(e: MemoryError) -> RuntimeError:
    """PyTorch's RuntimeError for an op whose result (or a temporary) numpy could not
    allocate (`expand(10**13, 3).contiguous()`, `repeat`); numpy's error names the array."""
    shape, dtype = getattr(e, "shape", None), getattr(e, "dtype", None)
    if shape is None or dtype is None:
        return RuntimeError(f"DefaultCPUAllocator: can't allocate memory ({e})")
    n = dtype.itemsize
    for s in shape:
        n *= s
    return RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {n} "
                        f"bytes. Error code 12 (Cannot allocate memory)")


def cast(t: Tensor, d: dt.DType) -> Tensor:
    if t._dtype is d:
        return t
    if d.__class__ is not dt.DType:  # `x.sum(dtype=float)`: a Python type as a dtype
        d = dt.to_dtype(d, "to")
    return apply("cast", [t], {"dtype": d})


# (op, input shapes, dtypes, attrs) -> (output dtype, its numpy dtype, whether the result may be
# a view of its input, whether the op crosses devices). The output shape is checked against the
# eager result once, when the entry is made: both are functions of the key.
_RULES: dict = {}
_MAX_RULES = 4096


def apply(name: str, tensors, attrs: dict, checked: bool = False) -> Tensor:
    """Run a non-promoting primitive (reduce, movement, extern, cast) on tensors. `checked`: a
    one-input view op (index, reshape, expand, permute) whose attributes the caller made valid
    for the op's shape rule (plain keys, `view` and `expand` through their own caches, sizes
    derived from the input's as in `squeeze`), or `check`, which returns its input, so the
    rules cache is not asked: the result keeps the input's dtype."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(apply, (name, tensors, attrs, checked), name, tensors)
    t0 = tensors[0]
    a0 = t0._data
    be = t0._be
    if checked:
        try:
            out = be.impl[name](a0, **attrs)
        except MemoryError as e:
            raise allocator_error(e) from None
        dtype, npdt, may_view, crosses = t0._dtype, a0.dtype, True, False
    else:
        n = len(tensors)
        if n == 1:  # (most of them: movement, reductions, casts; no comprehensions)
            arrays = (a0,)
            key = (name, a0.shape, t0._dtype, *attrs.items())
        elif n == 2:  # (gather, a loss of input and target, matmul: no list to grow)
            t1 = tensors[1]
            if t1._be is not be:
                _check_devices(tensors)
            a1 = t1._data
            arrays = (a0, a1)
            key = (name, a0.shape, t0._dtype, a1.shape, t1._dtype, *attrs.items())
        else:
            arrays, key = [], [name]
            add = key.append
            for t in tensors:  # (cat's inputs: no tuple per input)
                if t._be is not be:
                    _check_devices(tensors)
                a = t._data
                arrays.append(a)
                add(a.shape)
                add(t._dtype)
            key = (*key, *attrs.items())
        # the shape and dtype rules are pure: a loop's calls repeat their arguments
        try:
            rules = _RULES.get(key)
        except TypeError:  # an unhashable attribute value (a list): the rules run every call
            key = rules = None
        if rules is not None:
            dtype, npdt, may_view, crosses = rules
            try:
                out = be.impl[name](*arrays, **attrs)
            except MemoryError as e:
                raise allocator_error(e) from None
        else:
            shape, *rules = _rules(name, tensors, arrays, attrs)
            dtype, npdt, may_view, crosses = rules
            if key is not None:
                if len(_RULES) >= _MAX_RULES:
                    _RULES.clear()
                _RULES[key] = tuple(rules)
            try:
                out = be.impl[name](*arrays, **attrs)
            except MemoryError as e:
                raise allocator_error(e) from None
            if shape is not None and _shape_of(out) != shape:
                raise AssertionError(f"{name}: eager result {_shape_of(out)} but shape rule "
                                     f"{shape}")
    if crosses:
        be = _device.backend(attrs["device"])
    if out.__class__ is not _ndarray:  # a numpy scalar, or cupy
        out = be.xp.asarray(out)
    if out.dtype is not npdt and out.dtype != npdt:
        out = out.astype(npdt)
    result = _new(out, dtype, be)
    view = out is a0
    if not view and may_view:
        base = out.base
        if base is not None:
            # arrays keep as `base` the object owning the memory, not the view they were
            # taken of, so a non-empty result whose base is the input's owner overlaps it (a
            # movement op only rearranges its elements); anything else asks the array
            # library (~0.4 us a call)
            view = (base is (a0 if a0.base is None else a0.base) and out.size != 0) or \
                be.xp.may_share_memory(out, a0)
    if view:
        result._base = t0._base if t0._base is not None else t0  # one version counter
    rec, grad_on = st.RECORDER, st.GRAD_ENABLED
    if rec is not None:
        rec.record(name, tensors, attrs, result)
    if grad_on and any_needs_grad(tensors):
        GRAD_RECORD(name, tensors, attrs, result)
    if view:
        _views.derive(result, t0, (name, attrs) if len(tensors) == 1 else None, grad_on)
    return result


def _shape_of(out) -> tuple:
    return tuple(getattr(out, "shape", ()))  # (a numpy scalar from 0-d inputs has shape ())


def _rules(name: str, tensors, arrays, attrs: dict) -> tuple:
    """The op's shape and dtype rules for these inputs, and what apply asks of its OpDef."""
    opdef = OPS[name]
    shape = opdef.shape([a.shape for a in arrays], attrs) if opdef.shape is not None else None
    dtype = opdef.dtype([t._dtype for t in tensors], attrs)
    may_view = opdef.kind == "movement" and len(tensors) == 1  # (else: only an input itself)
    return (None if shape is None else tuple(shape), dtype, NP_DTYPES[dtype], may_view,
            Role.CROSSES_DEVICE in opdef.roles)


def needs_grad(t: Tensor) -> bool:
    """Whether `t` takes part in autograd (in grad mode): it requires grad, or it is a view
    whose base has gained a gradient since (see views.refresh)."""
    return any_needs_grad((t,))


def any_needs_grad(tensors) -> bool:
    """Whether any of `tensors` takes part in autograd (needs_grad): an op of them records.
    The one spelling of the rule (each op asks it once, for all its inputs)."""
    for t in tensors:
        if t._requires_grad or (t._base is not None and _view_grad(t)):
            return True
    return False


def _view_grad(t: Tensor) -> bool:
    return t._base._requires_grad and t._view_kind != "alias" and _views.refresh(t)


def check_values(t: Tensor, message: str, *, lo=None, hi=None, closed: bool = False,
                 allow=None, error: str = "RuntimeError") -> Tensor:
    """`t` as the `check` primitive's output: eager raises `error` now for a value outside
    [lo, hi) ([lo, hi] if closed) other than `allow`, and a recorded graph (so a compiled
    replay) checks every call. Use the result in place of `t` so the check stays in the
    graph; `{value}` in `message` is the first bad value."""
    st = _LOCAL.state
    if st.RECORDER is None and st.PROFILE is None and not (st.GRAD_ENABLED and
                                                           any_needs_grad((t,))):
        # no graph will hold the node: the primitive's eager check alone, and its value, t
        # (a loop's nll_loss: ~1.5 us of dispatch for a check of one target)
        t._be.impl["check"](t._data, lo=lo, hi=hi, closed=closed, allow=allow, error=error,
                            message=message)
        return t
    # (`checked`: the primitive returns its input, whose shape and dtype are valid for it)
    return apply("check", [t], {"lo": lo, "hi": hi, "closed": closed, "allow": allow,
                                "error": error, "message": message}, checked=True)


def source(name: str, attrs: dict, be) -> Tensor:
    """Run a creation primitive on backend `be`."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(source, (name, attrs, be), name, ())
    allocation_check(attrs["shape"], attrs["dtype"])
    try:
        out = be.impl[name](**attrs)
    except MemoryError:
        raise out_of_memory(attrs["shape"], attrs["dtype"]) from None
    result = _new(_as_array(out, NP_DTYPES[attrs["dtype"]], be), attrs["dtype"], be)
    rec = st.RECORDER
    if rec is not None:
        rec.record(name, [], attrs, result)
    return result


def index_put_(t: Tensor, v: Tensor, idx: list, spec: tuple) -> None:
    """`t[spec] = v` in place: the buffer is written directly (views of `t` see it), and a
    recording sees `t` become the value of an `index_put` node."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(index_put_, (t, v, idx, spec), "index_put_", [t, v] + list(idx))
    tensors = [t, v] + idx
    _check_devices(tensors)
    region = index_shape([t._data.shape] + [i._data.shape for i in idx], {"spec": spec})
    try:
        fits = broadcast_many([region, v._data.shape]) == tuple(region)
    except RuntimeError:
        fits = False
    if not fits:
        if not idx:  # basic indexing copies into a view: PyTorch reports copy_'s expand error
            from ..ir.shapes import expand_shape
            expand_shape(v._data.shape, tuple(region))
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v._data.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(region)}")
    target = t._data
    if not writeable(target):
        region = target if idx else t._be.impl["index"](target, spec=spec)
        target = write_view(t, region, "index_put_" if idx else None)
    a, b = t._data, v._data
    if b is not a and (b.base if b.base is not None else b) is (
            a.base if a.base is not None else a):
        # a basic index writes into the view t[spec] (`y[1:] *= 2` writes y[1:] into itself)
        if _partial_overlap(a if idx else t._be.impl["index"](a, spec=spec), b):
            raise RuntimeError(_PARTIAL_OVERLAP)
    grad = check_inplace(t, v)
    view = grad and _views.is_diff_view(t)
    before = t._node
    t._be.impl["index_put"](target, v._data, *[i._data for i in idx], spec=spec, inplace=True)
    t._bump_version()
    if t._base is not None:
        t._vver = _views.version(t)  # its node (refreshed by check_inplace) is the old value
    attrs = {"spec": spec, "accumulate": False}
    rec = st.RECORDER
    if rec is not None:
        rec.record("index_put", tensors, attrs, t)
        rec.written(t)
    if grad:
        GRAD_RECORD("index_put", tensors, attrs, t)
        n = t._node
        if view:
            _views.rebase(t, n, before, True)
        elif n is not None:
            # PyTorch: a basic index writes through a view of t (`y[0] = v`: CopySlices);
            # IndexPutBackward0's inputs are t and v (not the indices)
            n.meta = {"grad_fn": "IndexPutBackward0" if idx else "CopySlices",
                      "inputs": n.inputs[:2]}
            _views.keep_retained(before, n)


def writeable(a) -> bool:
    """numpy marks broadcast and strided-window views read-only; cupy has no such flag."""
    return getattr(a.flags, "writeable", True)


def zero_stride_overlap(a) -> bool:
    """PyTorch's assert_no_internal_overlap: a zero stride over more than one element (other
    overlaps are too hard to tell, and written)."""
    return any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides))


_ALIASED_WRITE = ("Use of {} on expanded tensors is deprecated. Please clone() the tensor before "
                  "performing this operation. This also applies to advanced indexing e.g. "
                  "tensor[{}] = {}")


def write_view(t: Tensor, region, aliased: str | None):
    """A writable alias of `t`'s read-only array: numpy marks every view of a broadcast array
    read-only, `x.expand(3, 4)[0]` too, which holds each element once. A `region` with a zero
    stride over several elements is PyTorch's overlap error unless the op writes values that
    agree at aliases (`aliased`: fill_'s ""; masked_fill_, index_fill_ and index_put_ warn as
    PyTorch does); a strided window numpy will not make writable stays refused."""
    if zero_stride_overlap(region):
        if aliased is None:
            raise RuntimeError(_OVERLAP)
        if aliased:
            from .user_warning import warn_at_user
            warn_at_user(_ALIASED_WRITE.format(aliased, *(("indices", "tensor") if aliased ==
                                                          "index_put_" else ("mask", "scalar"))))
    w = t._data.view()
    try:
        w.flags.writeable = True
    except ValueError:
        raise RuntimeError(_OVERLAP) from None
    return w


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


_PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the "
                    "written-to tensor refer to a single memory location. Please clone() the "
                    "tensor before performing the operation.")


def check_no_partial_overlap(t: Tensor, operands) -> None:
    """Refuse an in-place write into `t` that reads an operand sharing part of t's memory
    (`x[1:].add_(x[:-1])`), as PyTorch does; the same elements (`x.add_(x)`) or disjoint ones
    are fine. numpy would give the buffered answer, but a PyTorch script must not rely on what
    PyTorch refuses. Arrays owning different memory are told apart by identity alone (the
    common case, ~0.1 us); the rest by PyTorch's rule (`get_overlap_status`)."""
    a = t._data
    owner = a if a.base is None else a.base
    for o in operands:
        if o.__class__ is Tensor or isinstance(o, Tensor):
            b = o._data
            if b is not a and (b is owner or b.base is owner) and _partial_overlap(a, b):
                raise RuntimeError(_PARTIAL_OVERLAP)


def _partial_overlap(a, b) -> bool:
    """PyTorch's partial overlap: two non-empty dense arrays (no gaps, no repeats, positive
    strides in some order) whose byte ranges intersect without being the same elements in the
    same order. Anything else is "too hard" for PyTorch, which lets it through."""
    if not a.size or not b.size or not (_dense(a) and _dense(b)):
        return False
    pa, pb = _address(a), _address(b)
    ea, eb = pa + a.nbytes, pb + b.nbytes
    if pa == pb and ea == eb:
        # the same elements in the same order whatever unit dims either has: `y[:] += 1` on a
        # (1, n) tensor writes back its (n,) value, the unit dims stripped, as PyTorch's does
        return _without_unit_dims(a) != _without_unit_dims(b)
    return pa < eb and pb < ea


def _without_unit_dims(a) -> tuple:
    return tuple((n, s) for n, s in zip(a.shape, a.strides) if n != 1)


def _dense(a) -> bool:
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    expect = a.itemsize
    for stride, n in sorted((s, n) for n, s in zip(a.shape, a.strides) if n > 1):
        if stride != expect:
            return False
        expect *= n
    return True


def _address(a) -> int:
    return a.__array_interface__["data"][0] if hasattr(a, "__array_interface__") \
        else a.data.ptr  # (cupy)


def copy_into(t: Tensor, value: Tensor, from_self: bool = False,
              aliased: str | None = None) -> Tensor:
    """Write `value` (already of `t`'s shape after broadcasting) into `t`'s buffer: the eager
    half of every in-place op. Recordings then see `t` as `value`. `from_self`: value is an op
    applied to t (`t.add_(w)`), not a value copied in (`t.copy_(w)`): it names grad_fns.
    `aliased`: the op may write a tensor whose elements share memory (`write_view`)."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(copy_into, (t, value, from_self, aliased), "copy_", (t, value))
    if t._be is not value._be:
        _check_devices([t, value])
    target = t._data
    if not writeable(target):
        target = write_view(t, target, aliased)
        if zero_stride_overlap(target):
            return _write_aliases(t, value, target)
    grad = check_inplace(t, value)
    if grad and value._node is not None and getattr(t, "_saved", False):
        _keep_original(t, value._node)
    rec = st.RECORDER
    if rec is not None or grad:
        value = cast(value, t._dtype)
    view = grad and _views.is_diff_view(t)
    if view:
        before, written = t._node, _views.node_of(value)  # before the write: value may alias t
    t._be.xp.copyto(target, value._data, casting="unsafe")
    t._bump_version()
    if rec is not None:
        rec.alias(t, value)
        rec.written(t)
    if view:
        _views.rebase(t, written, before, from_self)
    elif grad:
        if value._node is not None:
            _views.keep_retained(t._node, value._node)
        t._node, t._requires_grad = value._node, True
    return t


def _write_aliases(t: Tensor, value: Tensor, target) -> Tensor:
    """fill_ / masked_fill_ into a tensor whose elements share memory (`x.expand(3, 4)`):
    PyTorch's kernel writes only the elements it changes, so a location takes the new value
    of any alias that changes it (written last-to-first they would undo one another). Eager
    only: autograd's CopySlices through an expand and a recording through it are not
    followed."""
    if check_inplace(t, value):
        raise RuntimeError(_OVERLAP)
    rec = _LOCAL.state.RECORDER
    if rec is not None:
        rec.view_write()
    xp, old, new = t._be.xp, t._data, value._data.astype(t._data.dtype, copy=False)
    same = old == new
    if old.dtype.kind not in "biu":  # (NaN over NaN changes nothing either)
        same |= xp.isnan(old) & xp.isnan(new)
    xp.copyto(target, new, where=~same)
    t._bump_version()
    return t


def _keep_original(t: Tensor, node) -> None:
    """The ops computing an in-place result may have saved `t` itself (`y.mul_(b)` needs y's old
    value for b's gradient, `y.pow_(2)` for y's, the clamp inside a composite `elu_` its
    input): keep a copy of the value about to be overwritten, as PyTorch saves the original
    self of an in-place op. Those ops read `t`, so they lie between `t`'s node and the
    result's: a breadth-first walk back from the result, never past `t`'s own node, finds
    them (bounded at 64 nodes: a composite is a handful). Only values still current are kept:
    one saved before an earlier write is left to fail its version check, as in PyTorch. Only
    called for a tensor some node saved (`t._saved`): `loss += l` in a loop walks nothing."""
    stop, seen, queue = t._node, set(), [node]
    while queue and len(seen) < 64:
        n = queue.pop(0)
        if n is None or n is stop or id(n) in seen:
            continue
        seen.add(id(n))
        saved = getattr(n, "saved", None)
        if isinstance(saved, dict):
            for k, e in saved.items():
                data, vc, version, _ = e  # (autograd._saved_entry)
                if vc is not None and vc[0] == version and GRAD_SAVED(e) is t:
                    saved[k] = (t._be.xp.array(data, copy=True), None, 0, None)
        queue.extend(n.inputs)


def check_cast(value: Tensor, target: Tensor) -> None:
    """In-place ops and `out=` may narrow a type only within its category (no float -> int)."""
    check_cast_dtype(value._dtype, target._dtype)


def check_cast_dtype(result: dt.DType, target: dt.DType) -> None:
    if not dt.can_cast(result, target):
        raise RuntimeError(f"result type {_torch_name(result)} can't be cast to the "
                           f"desired output type {_torch_name(target)}")


def check_inplace(t: Tensor, value=None) -> bool:
    """Refuse in-place writes autograd cannot follow (PyTorch's errors); True if this write must
    be recorded. A write through a differentiable view is recorded as a write into its base
    (views.rebase)."""
    if not _grad_enabled():
        return False
    grad = t._requires_grad or (isinstance(value, Tensor) and needs_grad(value))
    if t._base is not None:
        if _views.is_diff_view(t):
            grad = grad or t._view_base._requires_grad  # a view requires grad if its base does
            _views.check_write(t, grad)
            _views.refresh(t)
    if t._requires_grad and (t._node is None or t._node.op == "input"):
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    return grad


def is_recording() -> bool:
    return _recorder() is not None
