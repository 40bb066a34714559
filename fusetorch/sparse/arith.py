"""Arithmetic on sparse COO tensors, as PyTorch's: sums, products, scaling, transposes and
reductions that keep the result sparse, and the products with dense matrices on either side.

Every result is built from the operands' `indices` and `values` with fusetorch's dense ops, so
gradients reach the values (and any dense operand) as in coo.py. Where both operands are
coalesced, a sum merges them into one coalesced tensor, as PyTorch's; otherwise it concatenates
their entries (duplicates add up when coalesced or densified). Entries that cancel stay, with
value 0, as PyTorch's do.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from ..tracer import functional as F
from ..tracer.creation import tensor as _tensor
from ..tracer.creation import zeros
from ..tracer.tensor import Tensor
from .coo import SparseCOOTensor, _out_of_scope

_NUMBER = (bool, int, float)


def _sparse(idx: Tensor, vals: Tensor, size: tuple, coalesced: bool) -> SparseCOOTensor:
    return SparseCOOTensor(idx, vals, tuple(size), coalesced)


def _scalar(x) -> bool:
    return isinstance(x, _NUMBER) or (isinstance(x, Tensor) and x.ndim == 0)


# sums -------------------------------------------------------------------------------------------

def add(a: SparseCOOTensor, b, *, alpha=1):
    """sparse + sparse (of one size and density) -> sparse; sparse + dense raises, as
    PyTorch's (dense + sparse is dense)."""
    if isinstance(b, Tensor) or isinstance(b, _NUMBER):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if not isinstance(b, SparseCOOTensor):
        return NotImplemented
    if a._size != b._size:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a._size)} != {list(b._size)}")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same density, but 'self' "
                           f"has {a.sparse_dim()} sparse dimensions while 'other' has "
                           f"{b.sparse_dim()} sparse dimensions")
    kind = dt.promote_types(a.dtype, b.dtype)
    vb = b._vals if alpha == 1 else b._vals * alpha
    vals = F.cat([a._vals.to(kind), vb.to(kind)], 0)
    out = _sparse(F.cat([a._idx, b._idx], 1), vals, a._size, False)
    return out.coalesce() if a._coalesced and b._coalesced else out


def sub(a: SparseCOOTensor, b, *, alpha=1):
    if isinstance(b, SparseCOOTensor):
        if b.dtype is dt.bool_:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        return add(a, b, alpha=-alpha)
    return add(a, b)  # (PyTorch's error for a dense or number operand)


def _dense_sum(op, dense: Tensor, s: SparseCOOTensor) -> Tensor:
    """dense +/- sparse: a dense result of the dense operand's own size (no broadcasting)."""
    if tuple(dense.shape) != s._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size {list(s._size)} "
                           f"(FYI: dense-sparse addition does not currently support "
                           f"broadcasting)")
    return op(dense, s.to_dense())


def _sparse_divisor(dense: Tensor, s: SparseCOOTensor):
    raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor "
                       f"(got shape {list(s._size)} for divisor)")


# dense (op) sparse, keyed by the op's name as dispatch.elementwise passes it
_DENSE_SPARSE = {
    "add": lambda dense, s: _dense_sum(F.add, dense, s),
    "sub": lambda dense, s: _dense_sum(F.sub, dense, s),
    "mul": lambda dense, s: mul(s, dense),  # sparse, as PyTorch's
    "div": _sparse_divisor,
}


def dense_op(name: str, dense, s: SparseCOOTensor):
    """A dense tensor or number (op) a sparse tensor, as PyTorch computes it: + and - give a
    dense tensor, * a sparse one, / raises (the divisor must be dense)."""
    rule = _DENSE_SPARSE.get(name)
    if rule is None:
        raise _out_of_scope(f"{name} of a dense and a sparse tensor")
    return rule(dense, s)


# products ---------------------------------------------------------------------------------------

def mul(a: SparseCOOTensor, b):
    """sparse * number, * 0-d or broadcastable dense tensor (the entries scaled by the dense
    elements they sit on), or * sparse (the entries both hold; coalesced)."""
    if _scalar(b):
        return _sparse(a._idx, a._vals * b, a._size, a._coalesced)
    if isinstance(b, Tensor):
        full = b.expand(a._size) if tuple(b.shape) != a._size else b
        picked = full[tuple(a._idx[d] for d in range(a.sparse_dim()))]
        return _sparse(a._idx, a._vals * picked, a._size, a._coalesced)
    if not isinstance(b, SparseCOOTensor):
        return NotImplemented
    if a._size != b._size:
        raise RuntimeError(f"mul: expected 'self' and 'other' to have same sizes, but "
                           f"{list(a._size)} != {list(b._size)}")
    a, b = a.coalesce(), b.coalesce()
    _, ia, ib = np.intersect1d(a._linear(), b._linear(), assume_unique=True,
                               return_indices=True)
    pa = _tensor(ia.astype(np.int64), device=a.device)
    pb = _tensor(ib.astype(np.int64), device=a.device)
    vals = F.index_select(a._vals, 0, pa) * F.index_select(b._vals, 0, pb)
    return _sparse(F.index_select(a._idx, 1, pa), vals, a._size, True)


def div(a: SparseCOOTensor, b, *, rounding_mode=None) -> SparseCOOTensor:
    if not _scalar(b):
        shape = list(b.shape) if hasattr(b, "shape") else []
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor "
                           f"divisor (got shape {shape} for divisor)")
    return _sparse(a._idx, F.div(a._vals, b, rounding_mode=rounding_mode), a._size,
                   a._coalesced)


def pow(a: SparseCOOTensor, exponent) -> SparseCOOTensor:
    if not _scalar(exponent):
        raise _out_of_scope("pow of a sparse tensor by a tensor")
    if exponent == 0:  # every implicit zero would become one
        raise RuntimeError("pow: cannot raise a sparse tensor to the power 0 (the result "
                           "is not sparse)")
    return _sparse(a._idx, a._vals ** exponent, a._size, a._coalesced)


def neg(a: SparseCOOTensor) -> SparseCOOTensor:
    return _sparse(a._idx, -a._vals, a._size, a._coalesced)


def dense_mm(dense: Tensor, s: SparseCOOTensor) -> Tensor:
    """dense @ sparse -> dense: (s^T @ dense^T)^T."""
    from .coo import mm
    if dense.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if dense.shape[1] != s.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({dense.shape[0]}x"
                           f"{dense.shape[1]} and {s.shape[0]}x{s.shape[1]})")
    return mm(transpose(s, 0, 1), dense.t()).t()


def sparse_mm(a: SparseCOOTensor, b: SparseCOOTensor) -> SparseCOOTensor:
    """sparse @ sparse -> sparse (coalesced): the product of `a` with `b` densified."""
    from .coo import mm, to_sparse
    if b.ndim != 2 or b.dense_dim():
        raise _out_of_scope("sparse @ sparse with dense dims")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    return to_sparse(mm(a, b.to_dense()))


def addmm(input: Tensor, mat1, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """torch.sparse.addmm: beta * input + alpha * (mat1 @ mat2), mat1 sparse."""
    from .coo import mm
    prod = mm(mat1, mat2)
    return F.add(input * beta if beta != 1 else input, prod * alpha if alpha != 1 else prod)


# shape ------------------------------------------------------------------------------------------

def transpose(a: SparseCOOTensor, dim0: int, dim1: int) -> SparseCOOTensor:
    d0, d1 = norm_dim(dim0, a.ndim), norm_dim(dim1, a.ndim)
    sd = a.sparse_dim()
    if (d0 < sd) != (d1 < sd):
        raise RuntimeError("transpose: cannot swap a sparse dim with a dense dim")
    size = list(a._size)
    size[d0], size[d1] = size[d1], size[d0]
    if d0 < sd:
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        idx = F.index_select(a._idx, 0, _tensor(np.array(order, dtype=np.int64),
                                                device=a.device))
        return _sparse(idx, a._vals, size, a._coalesced and d0 == d1)
    return _sparse(a._idx, a._vals.transpose(d0 - sd + 1, d1 - sd + 1), size, a._coalesced)


def t(a: SparseCOOTensor) -> SparseCOOTensor:
    if a.sparse_dim() > 2 or a.dense_dim():
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                           f"got {a.sparse_dim()} sparse and {a.dense_dim()} dense dimensions")
    return a if a.ndim < 2 else transpose(a, 0, 1)


# reductions -------------------------------------------------------------------------------------

def sum(input: SparseCOOTensor, dim=None, keepdim: bool = False, dtype: dt.DType | None = None):
    """torch.sparse.sum: a dense 0-d tensor over everything, a dense tensor where every sparse
    dim is summed, else a coalesced sparse tensor over the dims kept."""
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return F.sum(vals)
    dims = sorted({norm_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = input.sparse_dim()
    summed_sparse = [d for d in dims if d < sd]
    dense_axes = [d - sd + 1 for d in dims if d >= sd]
    if dense_axes:
        vals = F.sum(vals, dense_axes, keepdim=keepdim)
    kept = [d for d in range(sd) if d not in summed_sparse]
    if not kept and not keepdim:  # dense: the entries' sum
        return F.sum(vals, 0)
    size = [1 if d in dims else n for d, n in enumerate(input._size)] if keepdim else \
        [n for d, n in enumerate(input._size) if d not in dims]
    if keepdim:  # a summed sparse dim stays, of size 1, every entry at index 0
        idx = input._idx * _tensor(np.array([[0 if d in summed_sparse else 1]
                                             for d in range(sd)], dtype=np.int64),
                                   device=input.device)
    else:
        idx = F.index_select(input._idx, 0, _tensor(np.array(kept, dtype=np.int64),
                                                     device=input.device))
    return _sparse(idx, vals, size, False).coalesce()


def zeros_sparse(size: tuple, dtype: dt.DType) -> SparseCOOTensor:
    """An empty sparse tensor of `size` (every dim sparse)."""
    return _sparse(_tensor(np.zeros((len(size), 0), dtype=np.int64)), zeros((0,), dtype=dtype),
                   size, True)
