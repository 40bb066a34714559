"""The one path every tensor operation takes: check inputs, infer shape and dtype from the op
table, run the eager implementation, wrap the result, and record a node when a recording wants it.

Three entry points, by the kind of primitive:
  elementwise(name, *args)      Tensors and Python scalars, broadcast and type-promoted
  apply(name, tensors, attrs)   reductions, movement and extern ops (no promotion)
  source(name, attrs, backend)  creation ops

The common case, two tensors of one dtype and device with nothing recording, is checked first and
costs one ufunc call plus the result object: `x + y` on small tensors must stay within a few
microseconds of numpy.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt
from ..ir.ops import OPS, index_shape
from ..ir.shapes import broadcast_many, broadcast_shapes
from ..runtime import device as _device
from ..runtime.device import NP_DTYPES
from .._per_thread import per_thread
from . import views as _views
from .tensor import Tensor

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
GRAD_RECORD = None
_LOCAL = per_thread(__name__, RECORDER=None, GRAD_ENABLED=True, PROFILE=None)


def _recorder():
    return _LOCAL.state.RECORDER


def _grad_enabled() -> bool:
    return _LOCAL.state.GRAD_ENABLED


def _profile():
    return _LOCAL.state.PROFILE


_new = Tensor._make
_ndarray = np.ndarray
_FLOAT_OUT = {n for n, d in OPS.items() if d.promote == "float"}
_BOOL_OUT = {n for n, d in OPS.items() if d.promote == "compare"} | {"logical_not"}
# Ops whose inputs and output share the dtype of two same-dtype float or integer tensors; bool
# inputs take the general path, which knows PyTorch's special cases for them.
_FAST = {n for n, d in OPS.items() if d.kind == "elementwise" and d.nin == 2
         and d.promote in ("same", "compare")}
_SCALARS = (int, float)
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


def binary(name: str, a, b) -> Tensor:
    """A binary elementwise op; `a` or `b` may be a Python scalar."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(binary, (name, a, b), name, (a, b))
    if st.RECORDER is None:
        if isinstance(b, Tensor) and isinstance(a, Tensor):  # Parameters too
            dtype = a._dtype
            grad = st.GRAD_ENABLED and (a._requires_grad or b._requires_grad or (
                a._base is not None and _view_grad(a)) or (
                b._base is not None and _view_grad(b)))
            if grad:
                # a training step's common case only: two float tensors of one dtype, nothing
                # to cast, no view to refresh, recorded straight away (the general path costs
                # ~2 us more per op)
                fast = dtype.category == 2 and name not in _BOOL_OUT and a._base is None \
                    and b._base is None
            else:
                fast = dtype.category  # bool inputs: the general path knows PyTorch's rules
            if fast and dtype is b._dtype and a._be is b._be and name in _FAST:
                ad, bd = a._data, b._data
                if ad.shape != bd.shape:
                    broadcast_shapes(ad.shape, bd.shape)  # raises PyTorch's error
                try:
                    out = a._be.impl[name](ad, bd)
                except MemoryError as e:
                    raise allocator_error(e) from None
                if out.__class__ is not _ndarray:  # a numpy scalar from 0-d inputs, or cupy
                    out = a._be.xp.asarray(out)
                result = _new(out, dt.bool_ if name in _BOOL_OUT else dtype, a._be)
                if grad:
                    GRAD_RECORD(name, (a, b), {}, result, dtype)
                return result
        elif b.__class__ in _SCALARS and isinstance(a, Tensor):
            dtype = a._dtype
            if dtype.category == 2 and dtype is not _BF16 and (
                    name in _FAST or name in _FLOAT_OUT):
                grad = st.GRAD_ENABLED and (a._requires_grad or a._base is not None
                                         and _view_grad(a))
                if grad:
                    if a._base is not None or name in _BOOL_OUT:
                        return elementwise(name, a, b)
                    b = float(b)  # the general path's scalar, so the graph is the same
                try:
                    out = a._be.impl[name](a._data, b)
                except MemoryError as e:
                    raise allocator_error(e) from None
                if out.__class__ is not _ndarray:
                    out = a._be.xp.asarray(out)
                if grad:
                    result = _new(out, dtype, a._be)
                    GRAD_RECORD(name, (a, b), {}, result, dtype)
                    return result
                return _new(out, dt.bool_ if name in _BOOL_OUT else dtype, a._be)
    return elementwise(name, a, b)


def unary(name: str, a: Tensor) -> Tensor:
    """A unary elementwise op (no attributes)."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(unary, (name, a), name, (a,))
    if st.RECORDER is None and isinstance(a, Tensor) and a._dtype.category == 2 and not (
            st.GRAD_ENABLED and a._base is not None and _view_grad(a)):
        try:
            out = a._be.impl[name](a._data)
        except MemoryError as e:
            raise allocator_error(e) from None
        if out.__class__ is not _ndarray:
            out = a._be.xp.asarray(out)
        result = _new(out, dt.bool_ if name in _BOOL_OUT else a._dtype, a._be)
        if a._requires_grad and st.GRAD_ENABLED:
            GRAD_RECORD(name, (a,), {}, result, a._dtype)
        return result
    return elementwise(name, a)


def promote_args(name: str, args) -> tuple:
    """(compute dtype, output dtype) of an elementwise op over tensors and scalars."""
    opdef = OPS[name]
    promote = opdef.promote
    part = args[1:] if opdef.mask else args
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
        error = opdef.refuse(compute, dims + zero + scal)
        if error is not None:
            raise error if isinstance(error, Exception) else RuntimeError(error)
    return compute, (dt.bool_ if name in _BOOL_OUT else compute)


def _torch_name(d: dt.DType) -> str:
    return dt.SCALAR_TYPE_NAMES[d.name]


def _scalar_as(value, d: dt.DType):
    if d.category == 2:
        return float(value)
    if d.category == 1:
        return int(value)
    return bool(value)


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


def elementwise(name: str, *args) -> Tensor:
    """The general elementwise path: promotion (with explicit casts), broadcasting, recording."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(elementwise, (name,) + args, name, args)
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
    mask = OPS[name].mask
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
    attrs = {}
    try:
        out = be.impl[name](*[a._data if isinstance(a, Tensor) else a for a in ins])
    except MemoryError as e:
        raise allocator_error(e) from None
    out = _as_array(out, NP_DTYPES[out_dtype], be)
    if out.shape != shape:  # an op whose eager result does not broadcast like the rule says
        raise AssertionError(f"{name}: eager result {out.shape} but shape rule {shape}")
    result = _new(out, out_dtype, be)
    rec = st.RECORDER
    if rec is not None:
        rec.record(name, ins, attrs, result, compute)
    if st.GRAD_ENABLED:
        for t in tensors:
            if t._requires_grad or (t._base is not None and _view_grad(t)):
                GRAD_RECORD(name, ins, attrs, result, compute)
                break
    return result


def _as_array(out, npdt, be):
    """The eager result as an array of `be` of numpy dtype `npdt` (a scalar or another
    dtype converted)."""
    if out.__class__ is not _ndarray:
        out = be.xp.asarray(out)
    if out.dtype is not npdt and out.dtype != npdt:
        out = out.astype(npdt)
    return out


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
    for i, x in enumerate(seq):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(x).__name__}")
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


_RULES: dict = {}  # (op, input shapes, dtypes, attrs) -> (output shape, dtype, its numpy dtype)
_MAX_RULES = 4096


def apply(name: str, tensors, attrs: dict) -> Tensor:
    """Run a non-promoting primitive (reduce, movement, extern, cast) on tensors."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(apply, (name, tensors, attrs), name, tensors)
    opdef = OPS[name]
    if len(tensors) == 1:  # (most of them: movement, reductions, casts; no comprehensions)
        t0 = tensors[0]
        be, arrays = t0._be, [t0._data]
        key = (name, t0._data.shape, t0._dtype, *attrs.items())
    else:
        be = _check_devices(tensors)
        arrays = [t._data for t in tensors]
        key = (name, *[a.shape for a in arrays], *[t._dtype for t in tensors], *attrs.items())
    # the shape and dtype rules are pure: a loop's calls repeat their arguments
    try:
        rules = _RULES.get(key)
    except TypeError:  # an unhashable attribute value (a list): the rules run every call
        key = rules = None
    if rules is None:
        shapes = [a.shape for a in arrays]
        shape = opdef.shape(shapes, attrs) if opdef.shape is not None else None
        dtype = opdef.dtype([t._dtype for t in tensors], attrs)
        rules = (None if shape is None else tuple(shape), dtype, NP_DTYPES[dtype])
        if key is not None:
            if len(_RULES) >= _MAX_RULES:
                _RULES.clear()
            _RULES[key] = rules
    shape, dtype, npdt = rules
    try:
        out = be.impl[name](*arrays, **attrs)
    except MemoryError as e:
        raise allocator_error(e) from None
    if opdef.crosses_device:
        be = _device.backend(attrs["device"])
    out = _as_array(out, npdt, be)
    if shape is not None and out.shape != shape:
        raise AssertionError(f"{name}: eager result {out.shape} but shape rule {shape}")
    result = _new(out, dtype, be)
    t0 = tensors[0]
    view = out is t0._data or (opdef.kind == "movement" and out.base is not None and
                               len(tensors) == 1 and _shares(out, t0._data, be))
    if view:
        result._base = t0._root()  # a view: it shares its base's version counter
    rec, grad_on = st.RECORDER, st.GRAD_ENABLED
    if rec is not None:
        rec.record(name, tensors, attrs, result)
    if grad_on:
        for t in tensors:
            if t._requires_grad or (t._base is not None and _view_grad(t)):
                GRAD_RECORD(name, tensors, attrs, result)
                break
    if view:
        _views.derive(result, t0, (name, attrs) if len(tensors) == 1 else None, grad_on)
    return result


def _shares(out, a, be) -> bool:
    """Whether movement result `out` shares memory with its input `a`. Arrays keep as `base`
    the object owning the memory, not the view they were taken of, so a non-empty result
    whose base is `a`'s owner overlaps `a` (a movement op only rearranges `a`'s elements);
    anything else asks the array library (~0.4 us a call, on every view)."""
    if out.base is (a if a.base is None else a.base) and out.size:
        return True
    return be.xp.may_share_memory(out, a)


def needs_grad(t: Tensor) -> bool:
    """Whether `t` takes part in autograd (in grad mode): it requires grad, or it is a view
    whose base has gained a gradient since (see views.refresh)."""
    return t._requires_grad or (t._base is not None and _view_grad(t))


def _view_grad(t: Tensor) -> bool:
    return t._base._requires_grad and t._view[2] != "alias" and _views.refresh(t)


def check_values(t: Tensor, message: str, *, lo=None, hi=None, closed: bool = False,
                 allow=None, error: str = "RuntimeError") -> Tensor:
    """`t` as the `check` primitive's output: eager raises `error` now for a value outside
    [lo, hi) ([lo, hi] if closed) other than `allow`, and a recorded graph (so a compiled
    replay) checks every call. Use the result in place of `t` so the check stays in the
    graph; `{value}` in `message` is the first bad value."""
    return apply("check", [t], {"lo": lo, "hi": hi, "closed": closed, "allow": allow,
                                "error": error, "message": message})


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
    if not writeable(t._data):
        raise RuntimeError(_OVERLAP)
    a, b = t._data, v._data
    if b is not a and (b.base if b.base is not None else b) is (
            a.base if a.base is not None else a):
        # a basic index writes into the view t[spec] (`y[1:] *= 2` writes y[1:] into itself)
        if _partial_overlap(a if idx else t._be.impl["index"](a, spec=spec), b):
            raise RuntimeError(_PARTIAL_OVERLAP)
    grad = check_inplace(t, v)
    view = grad and _views.is_diff_view(t)
    before = t._node
    t._be.impl["index_put"](t._data, v._data, *[i._data for i in idx], spec=spec,
                            inplace=True)
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
        return a.strides != b.strides
    return pa < eb and pb < ea


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


def copy_into(t: Tensor, value: Tensor, from_self: bool = False) -> Tensor:
    """Write `value` (already of `t`'s shape after broadcasting) into `t`'s buffer: the eager
    half of every in-place op. Recordings then see `t` as `value`. `from_self`: value is an op
    applied to t (`t.add_(w)`), not a value copied in (`t.copy_(w)`): it names grad_fns."""
    st = _LOCAL.state  # this thread's recorder, grad mode and profiler
    prof = st.PROFILE
    if prof is not None and prof.enter():
        return prof.op(copy_into, (t, value, from_self), "copy_", (t, value))
    if t._be is not value._be:
        _check_devices([t, value])
    if not writeable(t._data):
        raise RuntimeError(_OVERLAP)
    grad = check_inplace(t, value)
    if grad and value._node is not None and getattr(t, "_saved", False):
        _keep_original(t, value._node)
    rec = st.RECORDER
    if rec is not None or grad:
        value = cast(value, t._dtype)
    view = grad and _views.is_diff_view(t)
    if view:
        before, written = t._node, _views.node_of(value)  # before the write: value may alias t
    t._be.xp.copyto(t._data, value._data, casting="unsafe")
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
                if e[3] is t and e[1] is not None and e[1][0] == e[2]:
                    saved[k] = (t._be.xp.array(e[0], copy=True), None, 0, None)
        queue.extend(n.inputs)


def check_cast(value: Tensor, target: Tensor) -> None:
    """In-place ops and `out=` may narrow a type only within its category (no float -> int)."""
    if not dt.can_cast(value._dtype, target._dtype):
        raise RuntimeError(f"result type {_torch_name(value._dtype)} can't be cast to the "
                           f"desired output type {_torch_name(target._dtype)}")


def check_inplace(t: Tensor, value=None) -> bool:
    """Refuse in-place writes autograd cannot follow (PyTorch's errors); True if this write must
    be recorded. A write through a differentiable view is recorded as a write into its base
    (views.rebase)."""
    if not _grad_enabled():
        return False
    grad = t._requires_grad or (isinstance(value, Tensor) and needs_grad(value))
    if t._base is not None:
        v = _views.info(t)
        if v is not None and v[2] != "alias":
            grad = grad or v[0]._requires_grad  # a view requires grad if its base does
            _views.check_write(t, grad)
            _views.refresh(t)
    if t._requires_grad and (t._node is None or t._node.op == "input"):
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    return grad


def is_recording() -> bool:
    return _recorder() is not None
