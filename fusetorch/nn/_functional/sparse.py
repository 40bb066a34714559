"""nn.functional: embedding and one_hot.

An embedding lookup is `index_select(weight, 0, indices)`, whose gradient accumulates into the
selected rows. PyTorch's gradient options (`padding_idx`: no gradient to that row;
`scale_grad_by_freq`: each row's gradient divided by its count in the batch) scale the gradient
and not the value, so they are written `c + (out - c) * s` with c a copy of out made without
gradient: the value is exactly `out` (the difference is exactly 0), the gradient `s` times the
plain one.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes as dt
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor, _data_read

__all__ = ["embedding", "one_hot"]


def _legacy_name(d: dt.DType) -> str:
    from ...tracer.creation import LEGACY
    return LEGACY[d].__name__


def _norm_padding_idx(padding_idx: int | None, num: int) -> int | None:
    if padding_idx is None:
        return None
    if padding_idx > 0:
        if padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = num + padding_idx
    return padding_idx


def _renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's embedding_renorm_: rows referenced by `input` whose `norm_type`-norm exceeds
    `max_norm` are scaled in place to norm `max_norm` (a no_grad update of the weight)."""
    # which rows are touched is data-dependent (a set of distinct indices): read on the host
    _data_read("embedding(max_norm=...)")
    rows = np.unique(input._host().reshape(-1))
    if rows.size == 0:
        return
    from ...tracer.creation import tensor
    idx = tensor(rows.astype(np.int64), device=weight.device)
    with A.no_grad():
        sel = F.index_select(weight, 0, idx)
        if norm_type == 2:
            norms = F.sqrt((sel * sel).sum(1, keepdim=True))
        else:
            norms = (F.abs(sel) ** norm_type).sum(1, keepdim=True) ** (1.0 / norm_type)
        scale = F.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[idx] = sel * scale


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` [num_embeddings, embedding_dim] at the integer `input`: output shape
    `input.shape + (embedding_dim,)`. `sparse=True` gives a dense gradient here."""
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input._dtype is not dt.int64 and input._dtype is not dt.int32:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"torch.{_legacy_name(input._dtype)} instead (while checking "
                           f"arguments for embedding)")
    num, dim = weight.shape
    padding_idx = _norm_padding_idx(padding_idx, num)
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    out = F.index_select(weight, 0, flat)
    if D.GRAD_ENABLED and weight._requires_grad and (padding_idx is not None
                                                     or scale_grad_by_freq):
        scale = None
        if scale_grad_by_freq:
            idx = D.cast(flat, dt.int64)
            counts = F.scatter_add(weight.new_zeros((num,)), 0, idx,
                                   weight.new_ones((flat.shape[0],)))
            scale = (1.0 / F.index_select(counts, 0, idx)).reshape((-1, 1))
        if padding_idx is not None:
            keep = (flat != padding_idx).reshape((-1, 1))
            scale = F.where(keep, 1.0 if scale is None else scale, 0.0)
        with A.no_grad():  # a copy without gradient (still recorded by traces, unlike detach)
            const = F.clone(out)
        out = const + (out - const) * D.cast(scale, out._dtype)
    out = out.reshape(tuple(input.shape) + (dim,))
    if D.GRAD_ENABLED and weight._requires_grad:
        A.label(out, "EmbeddingBackward0", weight)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape `tensor.shape + (num_classes,)` with a 1 at each class index;
    `num_classes=-1` takes the largest index + 1."""
    if tensor._dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    # the checks and the inferred class count depend on the values: read them on the host
    if num_classes == -1:
        _data_read("one_hot(num_classes=-1)")  # the result's shape depends on the values
    if num_classes == -1:
        h = tensor._host()
        if h.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        if h.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        num_classes = int(h.max()) + 1
    # checks in the graph, so that compiled replays make them too
    tensor = D.check_values(tensor, "Class values must be non-negative.", lo=0)
    tensor = D.check_values(tensor, "Class values must be smaller than num_classes.",
                            hi=num_classes)
    from ...tracer.creation import arange
    classes = arange(num_classes, device=tensor.device)
    return D.cast(tensor.unsqueeze(-1) == classes, dt.int64)
