"""Sparse COO tensors: the subset graph networks use (GCN, GAT: an adjacency built with
`to_sparse()` or `sparse_coo_tensor`, multiplied with `torch.sparse.mm`/`torch.spmm`/`@`).

A `SparseCOOTensor` holds an int64 `indices` tensor (sparse_dim x nnz) and a dense `values`
tensor (nnz x dense dims). Everything it computes is a composition of fusetorch's dense ops on
those two (numpy alone, no scipy): `to_dense` and `coalesce` are an `index_add` over the
row-major linear index of the sparse dims, sparse @ dense is `index_add` of the values times
the dense operand's gathered rows. So autograd differentiates them as any composite (gradients
reach the values and the dense operand), compile traces them, and CUDA runs them. Invariants
(index range, shapes) are always checked, where PyTorch checks them only on request: an index
out of range would otherwise write outside the result.

Not a `Tensor` subclass (dense ops must not read it as dense): any Tensor name it does not
offer raises fusetorch's out-of-scope error. A sparse leaf that requires grad is not offered
(its values may require grad instead)."""
from __future__ import annotations

import re

import numpy as np

from ..ir import dtypes as dt
from ..tracer import functional as F
from ..tracer.creation import tensor as _tensor
from ..tracer.creation import zeros
from ..tracer.functional_shape import index_add
from ..tracer.tensor import Tensor, _data_read

_SPARSE_CATEGORY = ("sparse tensors beyond the COO subset (creation, to_dense, coalesce, "
                    "indices/values, products, sums, scaling, transposes)")


class layout:
    """`torch.strided`, `torch.sparse_coo`: a tensor's memory layout."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_layout_by_name, (self.name,))


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _layout_by_name(name: str) -> layout:
    return {"strided": strided, "sparse_coo": sparse_coo}[name]


class SparseCOOTensor:
    """A sparse COO tensor (PyTorch's `layout=torch.sparse_coo`)."""

    is_sparse = True
    is_sparse_csr = is_quantized = is_nested = is_mkldnn = is_meta = False
    layout = sparse_coo

    def __init__(self, indices: Tensor, values: Tensor, size: tuple, coalesced: bool) -> None:
        self._idx, self._vals, self._size, self._coalesced = indices, values, tuple(size), coalesced

    # what it is ---------------------------------------------------------------------------

    @property
    def shape(self):
        from ..tracer.tensor import Size
        return Size(self._size)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def dtype(self) -> dt.DType:
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def is_cuda(self) -> bool:
        return self._vals.is_cuda

    @property
    def is_cpu(self) -> bool:
        return self._vals.is_cpu

    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        return len(self._size)

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def numel(self) -> int:
        return int(np.prod(self._size, dtype=np.int64))

    def sparse_dim(self) -> int:
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def _indices(self) -> Tensor:
        return self._idx

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._idx

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._vals

    # conversions ------------------------------------------------------------------------------

    def _linear(self) -> np.ndarray:
        """The row-major position of each entry within the sparse dims."""
        _data_read("a sparse tensor's indices")
        idx = self._idx._host()
        dims = self._size[:self.sparse_dim()]
        if not len(dims) or not idx.shape[1]:
            return np.zeros(idx.shape[1], dtype=np.int64)
        return np.ravel_multi_index(tuple(idx), dims).astype(np.int64)

    def to_dense(self, dtype: dt.DType | None = None, *, masked_grad=None) -> Tensor:
        dense = self._size[self.sparse_dim():]
        rows = int(np.prod(self._size[:self.sparse_dim()], dtype=np.int64))
        vals = self._vals if dtype is None else self._vals.to(dtype)
        out = zeros((rows,) + dense, dtype=vals.dtype, device=vals.device)
        lin = _tensor(self._linear(), device=vals.device)
        return F.reshape(index_add(out, 0, lin, vals), self._size)

    def coalesce(self) -> "SparseCOOTensor":
        if self._coalesced:
            return self
        lin = self._linear()
        uniq, inverse = np.unique(lin, return_inverse=True)
        vals = self._vals
        summed = index_add(zeros((len(uniq),) + tuple(vals.shape[1:]), dtype=vals.dtype,
                                 device=vals.device), 0,
                           _tensor(inverse.reshape(-1).astype(np.int64), device=vals.device),
                           vals)
        dims = self._size[:self.sparse_dim()]
        idx = np.stack(np.unravel_index(uniq, dims)) if len(dims) else \
            np.zeros((0, len(uniq)), dtype=np.int64)
        return SparseCOOTensor(_tensor(idx.astype(np.int64).reshape(len(dims), -1),
                                       device=vals.device), summed, self._size, True)

    def to_sparse(self, sparse_dim: int | None = None, *, layout=None, blocksize=None,
                  dense_dim=None) -> "SparseCOOTensor":
        if layout not in (None, sparse_coo):
            raise _out_of_scope(f"to_sparse(layout={layout})")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return self

    def to(self, *args, **kwargs) -> "SparseCOOTensor":
        vals = self._vals.to(*args, **kwargs)
        return SparseCOOTensor(self._idx.to(vals.device), vals, self._size, self._coalesced)

    def cuda(self, device=None) -> "SparseCOOTensor":
        return self.to("cuda" if device is None else device)

    def cpu(self) -> "SparseCOOTensor":
        return self.to("cpu")

    def float(self) -> "SparseCOOTensor":
        return self.to(dt.float32)

    def double(self) -> "SparseCOOTensor":
        return self.to(dt.float64)

    def half(self) -> "SparseCOOTensor":
        return self.to(dt.float16)

    def detach(self) -> "SparseCOOTensor":
        return SparseCOOTensor(self._idx, self._vals.detach(), self._size, self._coalesced)

    def clone(self) -> "SparseCOOTensor":
        return SparseCOOTensor(self._idx.clone(), self._vals.clone(), self._size,
                               self._coalesced)

    def requires_grad_(self, requires_grad: bool = True) -> "SparseCOOTensor":
        if requires_grad:
            _refuse_grad()
        return self

    # products ---------------------------------------------------------------------------------

    def __matmul__(self, other):
        return mm(self, other)

    def mm(self, mat2: Tensor) -> Tensor:
        return mm(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        return mm(self, other)

    # printing ---------------------------------------------------------------------------------

    def __repr__(self) -> str:
        def inner(t: Tensor, lead: str) -> str:
            t = t.detach().to("cpu")
            if t.numel() == 0:  # PyTorch's sparse print spells out every empty shape
                text = f"tensor([], size={tuple(t.shape)})"
            else:  # the dtype is named once, on the sparse tensor's own line
                text = re.sub(r",\s*dtype=torch\.\w+\)$", ")", repr(t))
            return text.replace("\n", "\n" + " " * len(lead))
        lead_i, lead_v = "tensor(indices=", "       values="
        parts = [lead_i + inner(self._idx, lead_i) + ",", lead_v + inner(self._vals, lead_v) + ","]
        tail = [f"size={tuple(self._size)}", f"nnz={self._nnz()}"]
        if self.device.type != "cpu":
            tail.append(f"device='{self.device}'")
        if self.dtype not in (dt.default_float(), dt.int64, dt.bool_):  # as a dense repr
            tail.append(f"dtype=torch.{self.dtype.name}")
        tail.append("layout=torch.sparse_coo")
        text = "       " + ", ".join(tail)
        if self.grad_fn is not None:
            text += ",\n       grad_fn=<" + type(self.grad_fn).__name__ + ">"
        elif self.requires_grad:  # values that are a leaf (PyTorch names its creation node)
            text += ", requires_grad=True"
        return "\n".join(parts) + "\n" + text + ")"

    # arithmetic (arith.py) ------------------------------------------------------------------

    def add(self, other, *, alpha=1):
        from . import arith
        return arith.add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        from . import arith
        return arith.sub(self, other, alpha=alpha)

    def mul(self, other):
        from . import arith
        return arith.mul(self, other)

    def div(self, other, *, rounding_mode=None):
        from . import arith
        return arith.div(self, other, rounding_mode=rounding_mode)

    def pow(self, exponent):
        from . import arith
        return arith.pow(self, exponent)

    def neg(self):
        from . import arith
        return arith.neg(self)

    def t(self):
        from . import arith
        return arith.t(self)

    def transpose(self, dim0: int, dim1: int):
        from . import arith
        return arith.transpose(self, dim0, dim1)

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        from . import arith
        return arith.sum(self, dim, keepdim, dtype)

    @property
    def T(self):
        return self.t()

    def __radd__(self, other):  # number + sparse: PyTorch's add(sparse, dense) error
        return self.add(other)

    def __rsub__(self, other):  # number - sparse: a number is a 0-d dense operand
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size [] while other has size {list(self._size)} (FYI: "
                           f"dense-sparse addition does not currently support broadcasting)")

    def __rtruediv__(self, other):  # number / sparse: PyTorch has no sparse reciprocal
        raise NotImplementedError("Could not run 'aten::reciprocal' with arguments from the "
                                  "'SparseCPU' backend.")

    __add__, __sub__, __mul__, __rmul__, __truediv__ = add, sub, mul, mul, div
    __neg__, __pow__ = neg, pow

    def __rmatmul__(self, other):
        return mm(other, self)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if hasattr(Tensor, name):
            raise _out_of_scope(f"Tensor.{name} of a sparse tensor")
        raise AttributeError(f"'SparseCOOTensor' object has no attribute '{name}'")


def _refuse_grad() -> None:
    raise NotImplementedError("fusetorch: a sparse tensor that requires grad itself is not "
                              "supported; make its values require grad instead "
                              "(sparse_coo_tensor(indices, values) with values.requires_grad)")


def _out_of_scope(what: str) -> NotImplementedError:
    from .._out_of_scope import OutOfScopeError
    return OutOfScopeError(f"fusetorch does not implement {what}: {_SPARSE_CATEGORY} are out of "
                           "scope (see README)")


# creation ---------------------------------------------------------------------------------------

def sparse_coo_tensor(indices, values, size=None, *, dtype: dt.DType | None = None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseCOOTensor:
    """torch.sparse_coo_tensor: the entries `values[k]` at `indices[:, k]` (duplicates add up
    when coalesced or densified). The invariants are always checked."""
    if requires_grad:
        _refuse_grad()
    if not isinstance(indices, Tensor):
        indices = _tensor(indices)
    if not isinstance(values, Tensor):
        values = _tensor(values, dtype=dtype)
    if device is not None:
        values = values.to(device)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if indices.dtype.is_floating_point or indices.dtype is dt.bool_:
        raise RuntimeError("indices must be an int64 tensor")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim == 0:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: 1")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0]}")
    idx = indices.to(values.device).to(dt.int64)
    _data_read("sparse_coo_tensor's indices")
    host = idx._host()
    sd = host.shape[0]
    if size is None:
        size = tuple(int(m) + 1 for m in host.max(axis=1)) if host.shape[1] else (0,) * sd
        size += tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    dense = values.ndim - 1
    if len(size) != sd + dense:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(size)}, sparse_dim = {sd}, dense_dim = {dense}")
    if tuple(values.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {list((values.shape[0],) + size[sd:])}, "
                           f"got {list(values.shape)}")
    if host.shape[1]:
        for d in range(sd):
            lo, hi = int(host[d].min()), int(host[d].max())
            if lo < 0:
                raise RuntimeError(f"found negative index {lo} for dim {d}")
            if hi >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {hi}")
    return SparseCOOTensor(idx, values, size, bool(is_coalesced))


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim=None) -> SparseCOOTensor:
    """Tensor.to_sparse: the nonzero entries (rows of the first `sparse_dim` dims with any
    nonzero element) of a dense tensor, coalesced; differentiable into `self`."""
    if layout not in (None, sparse_coo):
        raise _out_of_scope(f"to_sparse(layout={layout})")
    n = self.ndim
    sd = n if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= n:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{n}] range, but "
                           f"{sd} is given")
    if n == 0 or sd == 0:
        idx = np.zeros((0, 1), dtype=np.int64)
        vals = F.reshape(self, (1,) + tuple(self.shape))
    else:
        _data_read("to_sparse()")
        a = self._host()
        mask = a != 0 if sd == n else (a != 0).reshape(a.shape[:sd] + (-1,)).any(-1)
        idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sd, -1)
        pos = tuple(_tensor(r, device=self.device) for r in idx)
        vals = self[pos]
    return SparseCOOTensor(_tensor(idx, device=self.device), vals, tuple(self.shape), True)


def _dense_to_dense(self: Tensor, dtype: dt.DType | None = None, *, masked_grad=None) -> Tensor:
    return self if dtype is None else self.to(dtype)


def _not_sparse(name: str):
    def fn(self: Tensor, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got Strided")
    fn.__name__ = name
    return fn


def _no_kernel(name: str):
    def fn(self: Tensor):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  f"'{self.device.type.upper()}' backend.")
    fn.__name__ = name
    return fn


# products -------------------------------------------------------------------------------------

def mm(mat1, mat2: Tensor) -> Tensor:
    """torch.sparse.mm / torch.spmm / sparse @ dense: a 2-d sparse matrix (no dense dims) times
    a dense matrix (or dense @ sparse, sparse @ sparse: arith.py); gradients reach the sparse
    values and the dense matrix."""
    from . import arith
    if not isinstance(mat1, SparseCOOTensor):
        if isinstance(mat1, Tensor) and isinstance(mat2, SparseCOOTensor):
            return arith.dense_mm(mat1, mat2)
        if isinstance(mat1, Tensor) and isinstance(mat2, Tensor):
            return F.mm(mat1, mat2)
        raise _out_of_scope(f"mm of {type(mat1).__name__} and {type(mat2).__name__}")
    if isinstance(mat2, SparseCOOTensor):
        return arith.sparse_mm(mat1, mat2)
    if not isinstance(mat2, Tensor):
        raise TypeError(f"mm(): argument 'mat2' (position 2) must be Tensor, not "
                        f"{type(mat2).__name__}")
    if mat1.ndim != 2 or mat1.dense_dim():
        raise _out_of_scope(f"sparse mm of a {mat1.ndim}-d sparse tensor with "
                            f"{mat1.dense_dim()} dense dims")
    if mat2.ndim != 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(mat2.ndim, 1)}, "
                         f"{max(mat2.ndim, 1) - 1}], but got 1)")
    if mat2.shape[0] != mat1.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, got "
                           f"{mat2.shape[0]}")
    if mat2.dtype is not mat1.dtype:
        names = dt.SCALAR_TYPE_NAMES
        raise RuntimeError(f"expected scalar type {names[mat1.dtype.name]} but found "
                           f"{names[mat2.dtype.name]}")
    rows, cols = mat1._idx[0], mat1._idx[1]
    vals = mat1._vals
    picked = F.index_select(mat2, 0, cols) * F.reshape(vals, (-1, 1))
    out = zeros((mat1.shape[0], mat2.shape[1]), dtype=mat2.dtype, device=mat2.device)
    return index_add(out, 0, rows, picked)
