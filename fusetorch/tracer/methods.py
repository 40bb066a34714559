"""Tensor methods and operators, bound to the functions in `functional.py`.

`x.exp()` is `functional.exp(x)`; `x.clamp_(0, 1)` computes `clamp(x, 0, 1)` and writes it into
x's buffer (`_inplace`), which is how every in-place method works: functional value, then an
in-place copy that bumps the version counter and lets recordings see the new value. The
operators and `add_`/`sub_`/`mul_`/`div_`/`pow_` are operators.py's, the casts by name casts.py's.
"""
from __future__ import annotations

import types

import ml_dtypes

from ..ir import dtypes as dt
from ..ir.shapes import broadcast_shapes
from ..runtime import device as _dev
from . import creation as C
from . import dispatch as D
from . import functional as F
from . import functional_math as M
from . import memory_formats as _mf
from . import views as _views
from . import autograd as A
from . import indexing
from .out_args import inplace as _inplace
from .softmax import log_softmax, softmax  # composed there, public as nn.functional's
from .tensor import Tensor, _alias
from .numpy_names import numpy_names


def _method(fn):
    """`fn(x, ...)` as the method `x.fn(...)`: a Python function binds as one itself (a wrapper
    repacking the arguments cost ~0.2 us a call: `h.view(1, -1)` in an RNN loop)."""
    if isinstance(fn, types.FunctionType):
        return fn

    def method(self, *args, **kw):
        return fn(self, *args, **kw)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


# plain methods: x.name(...) == F.name(x, ...)
# (Tensor.exp, Tensor.exp_ and the op table's other `unary_api` ops: unary_api.py)
for _name in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp", "clip",
              "negative", "logical_and", "logical_or", "square", "rsqrt", "reciprocal", "eq",
              "ne", "lt", "le", "gt", "ge", "sum", "mean", "prod", "max",
              "min", "amax", "amin", "argmax", "argmin", "var", "std", "all", "any", "matmul",
              "mm", "bmm", "mv", "dot", "permute", "transpose", "swapaxes", "swapdims", "t",
              "squeeze",
              "unsqueeze", "flatten", "unflatten", "expand", "contiguous", "clone", "narrow",
              "chunk", "unbind", "gather", "scatter_add", "index_select", "masked_fill",
              "nonzero", "flip", "repeat", "view", "equal", "allclose", "rsub", "addcmul",
              "addcdiv", "lerp"):
    setattr(Tensor, _name, _method(getattr(F, _name)))

# x.add_(y), x += y, x @ w, ...: one def each (operators.py); x.float(), x.long(): casts.py
from . import casts as _casts  # noqa: E402,F401
from . import operators as _operators  # noqa: E402,F401
# the math of functional_math.py: x.remainder(y), x.isnan(), x.logsumexp(1), x.fmod_(y), ...
for _name in M.PUBLIC:
    setattr(Tensor, _name, _method(getattr(M, _name)))
# (their in-place methods, x.clamp_(0, 1), x.fmod_(y), x.tril_(), ...: inplace_methods.py)


def polygamma(self: Tensor, n: int) -> Tensor:
    """polygamma(n) -> Tensor

    `torch.polygamma(n, self)`: the method takes its arguments the other way round.
    """
    return M.polygamma(n, self)


def polygamma_(self: Tensor, n: int) -> Tensor:
    """polygamma_(n) -> Tensor

    In-place version of `Tensor.polygamma`.
    """
    D.check_no_partial_overlap(self, (n,))
    return _inplace(self, M.polygamma(n, self))


def split(self: Tensor, split_size, dim: int = 0) -> tuple:
    """split(split_size, dim=0) -> tuple of Tensors

    `torch.split(self, split_size, dim)`; the method's argument is `split_size` (PyTorch's
    `Tensor.split`: `x.split(split_size=[2, 4], dim=-1)`), the function's
    `split_size_or_sections`.
    """
    return F.split(self, split_size, dim)


Tensor.polygamma = polygamma
Tensor.polygamma_ = polygamma_
Tensor.split = split
Tensor.true_divide = Tensor.div
Tensor.multiply = Tensor.mul
Tensor.subtract = Tensor.sub
Tensor.divide = Tensor.div


def _reshape(self, *shape):
    return F.reshape(self, F._shape_arg(shape, "reshape", "shape"))


def _where(self, condition, other):
    return F.where(condition, self, other)


def _view_as(self, other):
    D.check_tensor(other, "view_as", "other", 1)
    return F.view(self, tuple(other.shape))


def _reshape_as(self, other):
    D.check_tensor(other, "reshape_as", "other", 1)
    return F.reshape(self, tuple(other.shape))


def _expand_as(self, other):
    D.check_tensor(other, "expand_as", "other", 1)
    return F.expand(self, tuple(other.shape))


def _type_as(self, other):
    D.check_tensor(other, "type_as", "other", 1)
    return self.to(other._dtype)


Tensor.reshape = _reshape


# ------------------------------------------------------------ in-place views
# `x.unsqueeze_(0)`, `x.t_()`, ...: x itself takes the view's shape and strides over the same
# memory (nothing is copied) and, for autograd and recordings, the view's node; the version
# counter is bumped as PyTorch does (so a saved x no longer checks out). Unlike data writes these
# are allowed on views of tensors that require grad: nothing is written, so no other tensor's
# value or history changes.

def check_view_inplace(self: Tensor) -> None:
    """PyTorch's refusal of an in-place op on a leaf that requires grad (before any work)."""
    if D.GRAD_ENABLED and self._requires_grad and self.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def become_view(self: Tensor, value: Tensor, grad_name: str) -> Tensor:
    """`self` turned into the view `value` of itself; `grad_name`: PyTorch's grad_fn name."""
    if D.GRAD_ENABLED and value._requires_grad:
        A.label(value, grad_name, self)
        self._node = value._node
    self._data = value._data
    self._bump_version()
    v = _views.info(value)
    if self._base is not None and v is not None:
        # a view stays a view of its storage root, its steps now ending with this one, and
        # current: a later refresh must not replay the old steps over its new shape
        _views.mark(self, v.base, v.steps, v.kind)
        self._vver = _views.version(self)
    if D.RECORDER is not None:
        D.RECORDER.alias(self, value)
        D.RECORDER.shape_change(self)
    return self


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """unsqueeze_(dim) -> Tensor

    In-place version of `Tensor.unsqueeze`: self becomes the view with a size-1 dim at `dim`.
    """
    check_view_inplace(self)
    return become_view(self, F.unsqueeze(self, dim), "UnsqueezeBackward1")


def squeeze_(self: Tensor, dim=None) -> Tensor:
    """squeeze_(dim=None) -> Tensor

    In-place version of `Tensor.squeeze`: self becomes the view without the size-1 dims
    (all of them, or those `dim` names).
    """
    check_view_inplace(self)
    grad_name = "SqueezeBackward3" if dim is None else (
        "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4")
    return become_view(self, F.squeeze(self, dim), grad_name)


def t_(self: Tensor) -> Tensor:
    """t_() -> Tensor

    In-place version of `Tensor.t`: self becomes its transpose (at most 2-D).
    """
    check_view_inplace(self)
    return become_view(self, F.t(self), "TBackward1")


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """transpose_(dim0, dim1) -> Tensor

    In-place version of `Tensor.transpose`: self becomes the view with dims `dim0` and `dim1`
    swapped.
    """
    check_view_inplace(self)
    return become_view(self, F.transpose(self, dim0, dim1), "TransposeBackward1")


def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    """swapaxes_(axis0, axis1) -> Tensor

    In-place version of `Tensor.swapaxes`, which is `Tensor.transpose_`.
    """
    check_view_inplace(self)
    return become_view(self, F.transpose(self, axis0, axis1), "TransposeBackward1")


def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """swapdims_(dim0, dim1) -> Tensor

    In-place version of `Tensor.swapdims`, which is `Tensor.transpose_`.
    """
    check_view_inplace(self)
    return become_view(self, F.transpose(self, dim0, dim1), "TransposeBackward1")


for _fn in (unsqueeze_, squeeze_, t_, transpose_, swapaxes_, swapdims_):
    setattr(Tensor, _fn.__name__, _fn)
Tensor.where = _where
Tensor.view_as = _view_as
Tensor.reshape_as = _reshape_as
Tensor.expand_as = _expand_as
Tensor.type_as = _type_as
_WARNED_T = []  # PyTorch warns once per process (TORCH_WARN_ONCE)


def _T(self):
    if self.ndim != 2 and not _WARNED_T:
        import warnings
        _WARNED_T.append(True)
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated and it will throw an error in a future release. "
                      "Consider `x.mT` to transpose batches of matrices or "
                      "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions "
                      "of a tensor.", UserWarning, stacklevel=2)
    return F.permute(self, *reversed(range(self.ndim)))


Tensor.T = property(_T)
Tensor.mT = property(lambda self: F.transpose(self, -2, -1))


def _zero_(self):
    return self.fill_(0)


def _fill_(self, value):
    # PyTorch's fill_ of a number skips the overlap check (an expanded tensor is written), its
    # fill_ of a 0-d tensor does not
    aliased = None if isinstance(value, Tensor) else ""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        if not value.requires_grad:
            value = value.item()
    elif not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    if isinstance(value, Tensor) or (self.requires_grad and self._base is None):
        # through `fill`: the value tensor's gradient, and a zero one for self's history (a
        # view written in place keeps its base's history through CopySlices already)
        from .functional_writes import fill
        return D.copy_into(self, fill(self, value if isinstance(value, Tensor) else
                                      D._scalar_as(value, self._dtype)))
    v = D.source("full", {"shape": tuple(self.shape), "dtype": self._dtype,
                          "value": D._scalar_as(value, self._dtype)}, self._be)
    return D.copy_into(self, v, aliased=aliased)


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = C.tensor(src)
    D.check_no_partial_overlap(self, (src,))
    if src._be is not self._be:
        src = src.to(self._be.device)
    v = D.cast(src, self._dtype)
    if v._data.shape != self._data.shape:
        if broadcast_shapes(self._data.shape, v._data.shape) != self._data.shape:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                               f"broadcast shape {list(v._data.shape)}")
        v = F.expand(v, tuple(self.shape))
    return D.copy_into(self, v)


def _detach(self):
    out = _alias(self)
    if D.RECORDER is not None:  # a function of `self` in a recording, not a new input
        D.RECORDER.record("detach", [self], {}, out)
    return out


def _detach_(self):
    self._node = None
    self._requires_grad = False
    return self


@numpy_names
def _softmax(self, dim=None, dtype=None):
    return softmax(self, dim, dtype=dtype)


@numpy_names
def _log_softmax(self, dim=None, dtype=None):
    return log_softmax(self, dim, dtype=dtype)


Tensor.softmax = _softmax
Tensor.log_softmax = _log_softmax
Tensor.zero_ = _zero_
Tensor.fill_ = _fill_
Tensor.copy_ = _copy_
Tensor.detach = _detach
Tensor.detach_ = _detach_


# ------------------------------------------------------------ dtype and device conversion

_TYPE_NAMES = {c.__name__: d for d, c in C.LEGACY.items()}


def _parse_to(args, kw):
    dtype, dev, copy = kw.pop("dtype", None), kw.pop("device", None), kw.pop("copy", False)
    dtype = dt.to_dtype(dtype, "to")
    kw.pop("non_blocking", None)
    fmt = kw.pop("memory_format", None)
    if kw:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kw)}")
    for a in args:
        if isinstance(a, dt.DType) or isinstance(a, type) and a in (float, int, bool):
            dtype = dt.to_dtype(a, "to")
        elif isinstance(a, Tensor):
            dtype, dev = a._dtype, a._be.device
        elif isinstance(a, (str, _dev.device, int)) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            copy = a if dtype is not None else copy
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"({type(a).__name__}), expected a device, a dtype or a tensor")
    return dtype, dev, copy, fmt


def _to(self, *args, **kw):
    """to(dtype), to(device), to(device, dtype), to(other), with copy=False semantics."""
    dtype, dev, copy, fmt = _parse_to(args, kw)
    t = self
    if dev is not None:
        be = _dev.backend(dev)
        if be is not t._be:
            t = D.transfer(t, be)
    if dtype is not None and dtype is not t._dtype:
        t = D.cast(t, dtype)
    if fmt is not None and _mf.check(fmt, "to") is not _mf.preserve_format:
        if not _mf.is_laid_out(t, fmt):
            t = _mf.copy_in_order(t, _mf.order(fmt, t.ndim))
    if copy and t is self:
        t = F.clone(self)
    return t


def _type(self, dtype=None, non_blocking=False, **_):
    if dtype is None:
        return "torch." + C.LEGACY[self._dtype].__name__
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        if name not in _TYPE_NAMES or not dtype.startswith("torch."):
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = _TYPE_NAMES[name]
    elif isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), dt.DType):
        dtype = dtype.dtype
    if not isinstance(dtype, dt.DType):  # PyTorch: `x.type(float)` is not a type name either
        raise ValueError(f"invalid type: '{getattr(dtype, '__name__', dtype)}'")
    dtype = dt.to_dtype(dtype, "type")
    return D.cast(self, dtype)


Tensor.to = _to
Tensor.type = _type


def cpu(self: Tensor) -> Tensor:
    """cpu(memory_format=torch.preserve_format) -> Tensor

    This tensor in CPU memory: the tensor itself where it is there already."""
    return _to(self, "cpu")


def cuda(self: Tensor, device=None, non_blocking: bool = False) -> Tensor:
    """cuda(device=None, non_blocking=False, memory_format=torch.preserve_format) -> Tensor

    This tensor in CUDA memory, on `device` (an index, a name or a device; the current one
    where None): the tensor itself where it is there already."""
    if not isinstance(device, (str, _dev.device)):
        device = _dev.device("cuda", device if isinstance(device, int) else 0)
    return _to(self, device)


Tensor.cpu = cpu
Tensor.cuda = cuda


def new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False,
              **kw) -> Tensor:
    """new_zeros(size, *, dtype=None, device=None, requires_grad=False) -> Tensor

    `torch.zeros(size)` of this tensor's dtype and device unless given."""
    return C.zeros(*size, dtype=dt.to_dtype(dtype, "zeros") or self._dtype,
                   device=device or self._be.device, requires_grad=requires_grad, **kw)


def new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False,
             **kw) -> Tensor:
    """new_ones(size, *, dtype=None, device=None, requires_grad=False) -> Tensor

    `torch.ones(size)` of this tensor's dtype and device unless given."""
    return C.ones(*size, dtype=dt.to_dtype(dtype, "ones") or self._dtype,
                  device=device or self._be.device, requires_grad=requires_grad, **kw)


def new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad: bool = False,
              **kw) -> Tensor:
    """new_empty(size, *, dtype=None, device=None, requires_grad=False) -> Tensor

    `torch.empty(size)` of this tensor's dtype and device unless given (zero-filled here)."""
    return C.empty(*size, dtype=dt.to_dtype(dtype, "empty") or self._dtype,
                   device=device or self._be.device, requires_grad=requires_grad, **kw)


def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """new_full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor

    `torch.full(size, fill_value)` of this tensor's dtype and device unless given."""
    return C.full(size, fill_value, dtype=dt.to_dtype(dtype, "full") or self._dtype,
                  device=device or self._be.device, requires_grad=requires_grad)


def new_tensor(self: Tensor, data, *, dtype=None, device=None,
               requires_grad: bool = False) -> Tensor:
    """new_tensor(data, *, dtype=None, device=None, requires_grad=False) -> Tensor

    `torch.tensor(data)` (a copy) of this tensor's dtype and device unless given."""
    return C.tensor(data, dtype=dt.to_dtype(dtype, "new_tensor") or self._dtype,
                    device=device or self._be.device, requires_grad=requires_grad)


Tensor.new_zeros, Tensor.new_ones, Tensor.new_empty = new_zeros, new_ones, new_empty
Tensor.new_full, Tensor.new_tensor = new_full, new_tensor

_LIMIT_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                "float64": "double"}


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    C._check_float(self._dtype, "check_uniform_bounds")
    a, b = float(a), float(b)
    # PyTorch's checks (check_uniform_bounds): both bounds representable, a <= b, and b - a
    # finite in the tensor's dtype
    big = float(ml_dtypes.finfo(D.NP_DTYPES[self._dtype]).max)  # numpy's knows no bfloat16
    for name, v in (("from", a), ("to", b)):
        if not -big <= v <= big:
            raise RuntimeError(f"{name} is out of bounds for {_LIMIT_NAMES[self._dtype.name]}")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a:g} > to={b:g}")
    if b - a > big:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{D._torch_name(self._dtype)}>::max(), but found to={b:g} and "
                           f"from={a:g} which result in to-from to exceed the limit")
    return _copy_(self, C._random(tuple(self.shape), self._dtype, "uniform", self._be.device,
                                  False, generator, a, b))


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    C._check_float(self._dtype, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    r = C._random(tuple(self.shape), self._dtype, "normal", self._be.device, False, generator)
    return _copy_(self, F.add(F.mul(r, std), mean))


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_


Tensor.__getitem__ = indexing.getitem
Tensor.__setitem__ = indexing.setitem
# shapes, products and scatters of functional_shape.py: x.tril(), x.roll(1, 0), x.scatter_(...)
from . import functional_shape as _S  # noqa: E402
for _name in _S.PUBLIC:
    setattr(Tensor, _name, _method(getattr(_S, _name)))
Tensor.unfold = _method(_S.unfold)
Tensor.masked_scatter = _S._masked_scatter_method
# linear algebra: x.det(), x.inverse(), x.norm(), x.svd(), ... are bound by fusetorch/linalg
# when it is imported (the tracer imports nothing from the packages above it)
# half-precision dtypes (issue 11): `.half()` and `.bfloat16()` are bound with the other casts above

# scans, sorting and selection of functional_scan.py: x.cumsum(1), x.sort(), x.topk(3), ...
from . import functional_scan as _S  # noqa: E402
for _name in _S.METHODS:
    setattr(Tensor, _name, _method(getattr(_S, _name)))
from . import functional_histogram as _Hist  # noqa: E402
for _name in _Hist.METHODS:
    setattr(Tensor, _name, _method(getattr(_Hist, _name)))

# everyday math and statistics of PyTorch's catalogue (issue 27): x.fmax(y), x.logit_(), x.cov()
from . import functional_more as _More  # noqa: E402
from . import functional_stats as _Stats  # noqa: E402
for _name in _More.PUBLIC:
    setattr(Tensor, _name, _method(getattr(_More, _name)))
for _name in _Stats.METHODS:
    setattr(Tensor, _name, _method(getattr(_Stats, _name)))
from . import functional_pieces as _Pieces  # noqa: E402
for _name in _Pieces.METHODS:
    setattr(Tensor, _name, _method(getattr(_Pieces, _name)))
from . import functional_writes as _Writes  # noqa: E402
for _name in _Writes.METHODS:
    setattr(Tensor, _name, _method(getattr(_Writes, _name)))
Tensor.resize_ = _Writes.resize_
Tensor.resize_as_ = _Writes.resize_as_
Tensor.new_empty_strided = _Writes.new_empty_strided
Tensor.sum_to_size = _More.sum_to_size
Tensor.H = property(_More._H)
Tensor.mH = property(_More.adjoint)

# x.clamp_(0, 1), x.fmod_(y), x.eq_(y), x.index_add_(...): a function's value written into the
# tensor, one generated def each (python -m fusetorch._api.generate)
from . import inplace_methods as _inplace_methods  # noqa: E402
Tensor.__ifloordiv__ = _inplace_methods.floor_divide_
Tensor.__imod__ = _inplace_methods.remainder_
Tensor.__ilshift__ = _inplace_methods.bitwise_left_shift_
Tensor.__irshift__ = _inplace_methods.bitwise_right_shift_
Tensor.__iand__ = _inplace_methods.bitwise_and_
Tensor.__ior__ = _inplace_methods.bitwise_or_
Tensor.__ixor__ = _inplace_methods.bitwise_xor_
