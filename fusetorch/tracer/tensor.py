"""Tensor: an array on a device with a dtype, plus what autograd and recording attach to it.

The class holds state and the Python protocol (operators, printing, conversion); the math lives
in `functional.py` and every operation goes through `dispatch.py`. Methods are bound to those
functions at the bottom of this file.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from ..runtime import device as _device

_object_new = object.__new__


class Size(tuple):
    """`tensor.size()`: a tuple that prints as `torch.Size([2, 3])`."""

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, k):
        r = tuple.__getitem__(self, k)
        return Size(r) if isinstance(k, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


# fusetorch.multiprocessing.reductions registers its `share_memory_` and `is_shared` here when
# imported (fusetorch's __init__ imports it), as autograd registers dispatch.GRAD_RECORD: the
# tracer imports nothing from the packages above it.
SHARING: dict = {}


def _sharing(name: str):
    fn = SHARING.get(name)
    if fn is None:
        raise RuntimeError(f"Tensor.{name} needs fusetorch.multiprocessing, which is not loaded")
    return fn


class Tensor:
    """A multi-dimensional array. `Tensor(2, 3)` and `Tensor([1, 2])` are PyTorch's legacy
    constructors (float32); prefer `fusetorch.tensor(data)`."""

    # `_view_base`, `_view_steps`, `_view_kind`, `_vver`: set on views only (views.View)
    # (_saved is set, to True, only when a recorded node saves the tensor: autograd's
    # _saved_entry; read with getattr's default)
    __slots__ = ("_data", "_dtype", "_be", "_requires_grad", "_grad", "_node", "_vc", "_base",
                 "_view_base", "_view_steps", "_view_kind", "_vver", "_saved", "__weakref__",
                 "__dict__")
    # numpy must defer to Tensor's reflected operators: `ndarray + Tensor` gives a Tensor
    __array_priority__ = 1000

    @staticmethod
    def _make(data, dtype, be) -> "Tensor":
        t = _object_new(Tensor)
        t._data = data
        t._dtype = dtype
        t._be = be
        t._requires_grad = False
        t._grad = None
        t._node = None
        t._vc = None
        t._base = None
        return t

    def __init__(self, *args, device=None, **kwargs):
        from .creation import legacy_new
        # `Tensor(t)` aliases t whatever its dtype (only the typed constructors check it)
        src = args[0] if len(args) == 1 and isinstance(args[0], Tensor) \
            else legacy_new(dt.default_float(), args, device)
        self._data, self._dtype, self._be = src._data, src._dtype, src._be
        self._requires_grad = False
        self._grad = None
        self._node = None
        self._vc = None
        self._base = None

    # ------------------------------------------------------------ attributes

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        shape = self._data.shape
        if dim.__class__ is int and -len(shape) <= dim < len(shape):  # (a loop's x.size(0))
            return shape[dim]
        if self._data.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._data.shape[norm_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> dt.DType:
        return self._dtype

    @property
    def device(self) -> _device.device:
        return self._be.device

    @property
    def is_cuda(self) -> bool:
        return self._be.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._be.device.type == "cpu"

    # PyTorch's other device and layout flags: what fusetorch's tensors never are (other
    # devices, sparse, quantized, nested, complex: out of scope; scripts read them to choose a
    # code path, as the DCGAN example reads is_xpu)
    is_mps = is_xpu = is_meta = is_mkldnn = is_vulkan = is_ipu = is_xla = is_mtia = \
        is_maia = is_sparse = is_sparse_csr = is_quantized = is_nested = False

    def is_complex(self) -> bool:
        return False

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    def is_pinned(self, device=None) -> bool:
        return self.__dict__.get("_pinned", False)

    def pin_memory(self, device=None) -> Tensor:
        """A copy in page-locked host memory, as PyTorch's (which needs an accelerator). The
        host memory here is numpy's, so the copy is only marked pinned: what `is_pinned` and a
        later `.to(device, non_blocking=True)` ask."""
        if not _device.cuda_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self._be.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be "
                               "pinned")
        if self.is_pinned():
            return self
        from .functional import clone
        out = clone(self)
        out.__dict__["_pinned"] = True
        return out

    def is_distributed(self) -> bool:
        return False

    def is_signed(self) -> bool:
        return self._dtype.is_signed

    def is_same_size(self, other: "Tensor") -> bool:
        if not isinstance(other, Tensor):
            raise TypeError("is_same_size(): argument 'other' (position 1) must be Tensor, "
                            f"not {type(other).__name__}")
        return self._data.shape == other._data.shape

    def is_nonzero(self) -> bool:
        return self.__bool__()

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.size) * self._dtype.itemsize

    def stride(self, dim: int | None = None):
        if self._data.size == 0:  # numpy's strides of empty arrays are arbitrary
            from ..ir.shapes import contiguous_strides
            st = contiguous_strides(self._data.shape)
        else:
            st = tuple(s // self._dtype.itemsize for s in self._data.strides)
        if dim is None:
            return st
        if self._data.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return st[norm_dim(dim, self._data.ndim)]

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is not None:
            from . import memory_formats as mf
            if mf.check(memory_format, "is_contiguous") is not mf.contiguous_format and \
                    memory_format is not mf.preserve_format:
                return mf.is_laid_out(self, memory_format)
        return bool(self._data.flags.c_contiguous)

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def data_ptr(self) -> int:
        return int(self._data.__array_interface__["data"][0]) if self._be.xp is np \
            else int(self._data.data.ptr)

    # ------------------------------------------------------------ autograd

    @property
    def requires_grad(self) -> bool:
        if self._base is not None and D.GRAD_ENABLED:
            return _refresh_view(self)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not value and not self.is_leaf:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if value and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._requires_grad = bool(value)

    @property
    def grad(self):
        g = self._grad
        rec = D._LOCAL.state.RECORDER  # (the calling thread's)
        if rec is not None:
            rec.grad_access(self, "read")
        if g is not None:
            return g
        if not self.is_leaf and not self.retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
                "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
                "for more information.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            _check_grad_assignment(self, value)
        if D.RECORDER is not None:
            D.RECORDER.grad_access(self, "set")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        if self._base is not None and D.GRAD_ENABLED:
            _refresh_view(self)
        n = self._node
        return n is None or n.op == "input"

    @property
    def grad_fn(self):
        """The recorded function that made this tensor (None for leaves), PyTorch's names."""
        if self._base is not None and D.GRAD_ENABLED:
            _refresh_view(self)
        n = self._node
        if n is None or n.op == "input":
            return None
        from .grad_fn import grad_fn
        return grad_fn(n)

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf tensor in `.grad` on backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if not self.is_leaf:
            import weakref
            self._node.meta = dict(self._node.meta or {}, retain=weakref.ref(self))

    @property
    def retains_grad(self) -> bool:
        n = self._node
        return bool(n is not None and n.meta and "retain" in n.meta)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate the gradient of this tensor into the leaves' `.grad`."""
        from .autograd import backward
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph,
                 inputs=inputs)

    def register_hook(self, hook):
        """Call `hook(grad)` when this leaf's gradient is computed, before it is accumulated; a
        returned tensor replaces the gradient. Returns a handle with `remove()`."""
        from .autograd import GRAD_HOOKS, add_hook
        return add_hook(self, GRAD_HOOKS, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(tensor)` after this leaf's `.grad` has been accumulated (how
        DistributedDataParallel learns a gradient is ready)."""
        from .autograd import POST_ACCUMULATE_HOOKS, add_hook
        return add_hook(self, POST_ACCUMULATE_HOOKS, hook)

    @property
    def data(self) -> "Tensor":
        """The same storage as a tensor outside autograd (`w.data -= lr * g`). Unlike
        `detach()` it has its own version counter, so in-place writes through it are not seen
        by autograd (PyTorch)."""
        return Tensor._make(self._data, self._dtype, self._be)

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data, self._dtype, self._be = value._data, value._dtype, value._be

    @property
    def _version(self) -> int:
        # the root's counter: a view made before its storage's first write has none of its own
        vc = self._vc if self._base is None else self._base._vc
        return vc[0] if vc is not None else 0

    def _root(self) -> "Tensor":
        """The tensor owning this one's storage (itself unless it is a view): views share
        their root's version counter."""
        return self._base if self._base is not None else self

    def _bump_version(self) -> None:
        root = self._root()
        if root._vc is None:
            root._vc = [0]
        root._vc[0] += 1
        self._vc = root._vc

    def share_memory_(self) -> "Tensor":
        """Move the data into shared memory in place (see `fusetorch.multiprocessing`)."""
        return _sharing("share_memory_")(self)

    def is_shared(self) -> bool:
        return _sharing("is_shared")(self)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not self._dtype.is_floating_point:  # PyTorch's wording differs
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    # ------------------------------------------------------------ conversion to Python

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's own memory as a numpy array (no copy)."""
        if self._be.device.type != "cpu":
            if force:
                return self._be.xp.asnumpy(self._data) if self._be.xp is not np \
                    else self._data.copy()
            raise TypeError(f"can't convert {self._be.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        _data_read("numpy()")
        if self._dtype.name == "bfloat16" and not force:  # numpy has no bfloat16 (PyTorch's error)
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def __dlpack__(self, *, stream=None, max_version: tuple | None = None,
                   dl_device: tuple | None = None, copy: bool | None = None):
        """A DLPack capsule over this tensor's memory (for another library's `from_dlpack`);
        a tensor that requires grad is refused, as in PyTorch. See `tracer/dlpack.py`."""
        from .dlpack import export
        return export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple:
        """(DLDeviceType, device index) of this tensor's memory."""
        from .dlpack import dlpack_device
        return dlpack_device(self)

    def _host(self) -> np.ndarray:
        return self._data if self._be.xp is np else self._be.xp.asnumpy(self._data)

    def item(self):
        _data_read("item()")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to "
                               "Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        _data_read("tolist()")
        return self._host().tolist()

    def __array__(self, dtype=None, copy=None):
        # np.asarray of a CUDA tensor, or of one that requires grad, is numpy()'s error
        if self._be.device.type != "cpu" or self.requires_grad:
            self.numpy()
        a = self._host()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __reversed__(self) -> "Tensor":
        """PyTorch's: the tensor flipped along dim 0 (a 0-d tensor is itself), not an iterator."""
        return self if self._data.ndim == 0 else self.flip(0)

    def __contains__(self, element) -> bool:
        # any element equal (Python's fallback would compare rows, and bool() of a row raises)
        if isinstance(element, (Tensor, numbers.Number)):
            return bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed "
                           f"in a {type(element)}.")

    def __bool__(self) -> bool:
        _data_read("bool()")
        n = self._data.size
        if n != 1:
            what = "no values" if n == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self.requires_grad:
            _warn_scalar_of_grad()
        return float(self.item())

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.category != 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    __hash__ = object.__hash__

    # ------------------------------------------------------------ printing

    def __repr__(self, *, tensor_contents=None) -> str:
        from .printing import format_tensor
        suffixes = []
        if self._be.device.type != "cpu":
            suffixes.append(f"device='{self._be.device}'")
        fn = self.grad_fn
        if fn is not None:
            suffixes.append(f"grad_fn=<{type(fn).__name__}>")
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        return format_tensor(self._host(), self._dtype.name, suffixes)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._host(), self._dtype.name, str(self._be.device),
                           self.requires_grad))

    def __deepcopy__(self, memo):
        t = _alias(self)
        t._data = self._be.xp.array(self._data, copy=True)
        t._base = None  # owns its copy: not a view, its own version counter
        t.requires_grad = self.requires_grad
        memo[id(self)] = t
        return t


def _refresh_view(t: Tensor) -> bool:
    from .views import refresh
    return refresh(t)


def _data_read(what: str) -> None:
    from . import dispatch
    if dispatch.RECORDER is not None:
        dispatch.RECORDER.data_read(what)


def _alias(t: Tensor) -> Tensor:
    """A new tensor over the same storage, outside autograd."""
    a = Tensor._make(t._data, t._dtype, t._be)
    a._base = t._root()
    from .views import alias
    alias(a, t)
    return a


def _rebuild(data, dtype_name, dev, requires_grad):
    from .creation import tensor
    return tensor(data, dtype=dt.by_name(dtype_name), device=dev, requires_grad=requires_grad)


# dispatch imports this module first; bound here so hot properties (`grad`) read
# `D.RECORDER` without an import per call
def _type_name(obj) -> str:
    """The type name PyTorch's C++ prints for a Python object (CPython's `tp_name`): the bare
    name for classes defined in Python, `module.name` for C types outside builtins."""
    cls = type(obj)
    heap = cls.__flags__ & (1 << 9)  # Py_TPFLAGS_HEAPTYPE
    if heap or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


def _check_grad_assignment(t: Tensor, g) -> None:
    """PyTorch's checks on `t.grad = g` (python_variable.cpp), in its order and words."""
    if not isinstance(g, Tensor):
        raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                        f"{_type_name(g)}")
    if g is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if g._dtype is not t._dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{dt.CPP_TYPE_NAMES[g._dtype.name]}' "
            f"to a tensor with grad_dtype '{dt.SCALAR_TYPE_NAMES[t._dtype.name]}'. The gradient "
            "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
            "the tensor's grad_dtype attribute with a specific dtype, or None to allow any "
            "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
            "gradient may break downstream systems that assume they match.")
    if g._be.device.type != t._be.device.type:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{g._be.device.type}' to a "
            f"tensor with device type '{t._be.device.type}'. Please ensure that the gradient "
            "and the tensor are on the same device")
    if tuple(g._data.shape) != tuple(t._data.shape):
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(g._data.shape)}' to a tensor of "
            f"size '{list(t._data.shape)}'. Please ensure that the gradient and the tensor are "
            "the same size")


_WARNED_SCALAR_OF_GRAD = []  # PyTorch warns once per process (TORCH_WARN_ONCE)


def _warn_scalar_of_grad() -> None:
    """PyTorch's warning for `float(t)` of a tensor that requires grad: the number has no
    history, a loop accumulating it silently stops the gradient."""
    if not _WARNED_SCALAR_OF_GRAD:
        _WARNED_SCALAR_OF_GRAD.append(True)
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.",
                      UserWarning, stacklevel=3)


from . import dispatch as D  # noqa: E402


class _OutOfScope:
    """`Tensor.<name>` for an out-of-scope PyTorch name: reading it raises OutOfScopeError.
    One descriptor per listed name, not a `Tensor.__getattr__`: a class with `__getattr__`
    loses CPython's fast attribute look-up on every access (x + y paid ~0.2 us for it)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        from .._out_of_scope import TENSOR, missing
        raise missing(f"'{(owner or type(obj)).__name__}' object", "torch.Tensor", self.name,
                      TENSOR, obj=obj)


def _install_out_of_scope() -> None:
    from .._out_of_scope import TENSOR
    for name in TENSOR:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, _OutOfScope(name))


_install_out_of_scope()
