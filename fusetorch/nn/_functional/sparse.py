"""nn.functional: embedding, embedding_bag and one_hot.

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
from ...tracer.opmath import to_float32
from ...tracer.tensor import Tensor, _data_read

__all__ = ["embedding", "embedding_bag", "one_hot"]


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
    D.check_tensor(input, "embedding", "indices", 2)
    D.check_tensor(weight, "embedding", "weight", 1)
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
    # (a vector of indices is its own flat form, and its rows are the output: an RNN loop's
    # embedding of one step's tokens makes no reshapes)
    flat = input if input._data.ndim == 1 else input.reshape(-1)
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
    if input._data.ndim != 1:
        out = out.reshape(tuple(input.shape) + (dim,))
    if D.GRAD_ENABLED and weight._requires_grad:
        A.label(out, "EmbeddingBackward0", weight)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape `tensor.shape + (num_classes,)` with a 1 at each class index;
    `num_classes=-1` takes the largest index + 1."""
    D.check_tensor(tensor, "one_hot", "input", 1)
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


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows: a 2-D input is one bag per row; a 1-D
    input is cut into bags starting at `offsets` (with `include_last_offset`, offsets has one
    more entry, the end of the last bag). Entries equal to `padding_idx` are left out (also
    from a mean's count); an empty bag gives zeros. `per_sample_weights` (mode 'sum') scale
    each row. Result [B, embedding_dim]."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    from ...tracer.creation import arange, zeros
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        n_bags, per_bag = input.shape
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        per_bag = None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if input._dtype is not dt.int64 and input._dtype is not dt.int32:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"torch.{_legacy_name(input._dtype)} instead (while checking "
                           f"arguments for embedding_bag)")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    num, dim = weight.shape
    padding_idx = _norm_padding_idx(padding_idx, num)
    length = input.shape[0]
    idx = D.cast(input, dt.int64)
    valid = None if padding_idx is None else idx != padding_idx
    if per_bag is not None:  # fixed-length bags: position // per_bag, no values involved
        bag = F.reshape(arange(n_bags, device=weight.device).unsqueeze(1).expand(
            n_bags, per_bag), (-1,))
    else:
        offs = D.cast(offsets, dt.int64)
        starts = offs[:-1] if include_last_offset else offs
        n_bags = starts.shape[0]
        if offs.shape[0]:
            first = D.check_values(
                offs[0:1], "offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                "has to start from position 0. However, got {value}", lo=0, hi=1)
            last = D.check_values(
                offs[-1:], f"offsets[-1] can not be greater than input's length {length} but "
                "got offsets[-1] of {value}", hi=length, closed=True)
            starts = F.cat([starts[0:0], first, starts[1:]], 0) if n_bags else starts
            pos = arange(length, device=weight.device)
            bag = F.sum(pos.unsqueeze(1) >= starts.unsqueeze(0), 1) - 1 if n_bags else pos
            if include_last_offset:
                inside = pos < last
                valid = inside if valid is None else F.logical_and(valid, inside)
        else:
            bag = arange(length, device=weight.device)
        # a position before the first start (offsets[0] != 0, caught above) reads bag 0
        bag = F.clamp(bag, min=0)
    rows = F.index_select(weight, 0, idx)  # [L, dim]
    if scale_grad_by_freq and D.GRAD_ENABLED and weight._requires_grad:
        counts = F.scatter_add(weight.new_zeros((num,)), 0, idx, weight.new_ones((length,)))
        scale = (1.0 / F.index_select(counts, 0, idx)).reshape((-1, 1))
        with A.no_grad():
            const = F.clone(rows)
        rows = const + (rows - const) * D.cast(scale, rows._dtype)
    if mode != "max":  # ATen's half bags (fbgemm) scale and sum in float32, rounded once
        rows, per_sample_weights = to_float32(rows), to_float32(per_sample_weights)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    keep = None if valid is None else D.cast(valid, rows._dtype).unsqueeze(1)
    if mode == "max":
        member = bag.unsqueeze(0) == arange(n_bags, device=weight.device).unsqueeze(1)
        if valid is not None:
            member = F.logical_and(member, valid.unsqueeze(0))
        vals = F.where(member.unsqueeze(2), rows.unsqueeze(0), -float("inf"))
        if length:
            best = F.max(vals, 1)[0]
        else:
            best = zeros((n_bags, dim), dtype=weight._dtype, device=weight.device)
        filled = F.any(member, 1).unsqueeze(1)
        out = F.where(filled, best, 0.0)
    else:
        src = rows if keep is None else rows * keep
        index = bag.unsqueeze(1).expand(length, dim)
        out = F.scatter_add(zeros((n_bags, dim), dtype=rows._dtype, device=weight.device), 0,
                            index, src)
        if mode == "mean":
            ones = rows.new_ones((length,)) if keep is None else keep.reshape(-1)
            count = F.scatter_add(rows.new_zeros((n_bags,)), 0, bag, ones)
            out = out / F.clamp(count, min=1.0).unsqueeze(1)
    if out._dtype is not weight._dtype:
        out = D.cast(out, weight._dtype)
    if D.GRAD_ENABLED and weight._requires_grad:
        A.label(out, "EmbeddingBagBackward0", weight)
    return out
