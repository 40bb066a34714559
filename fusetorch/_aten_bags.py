"""`torch.embedding_bag`: ATen's form of `F.embedding_bag`, with its three bookkeeping results.

ATen returns (output, offset2bag, bag_size, max_indices). The output is nn.functional's (one
definition, with its gradients); the other three are PyTorch's CPU kernel's, as that kernel
fills them: `sum` without padding leaves offset2bag empty and the others zeros (one per
offset); `mean` gives each entry's bag, each bag's count of non-padding entries, and the counts
again as max_indices; `max` gives, per bag and column, the row of the first maximum. They are
tensor ops on the indices (searchsorted, scatter_add, scatter_reduce), so they compile.
"""
from __future__ import annotations

from .ir import dtypes as dt
from .nn import functional as F
from .tracer import creation as C
from .tracer import dispatch as D
from .tracer import functional as TF
from .tracer import functional_scan as TS
from .tracer.tensor import Tensor

_MODES = ("sum", "mean", "max")


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple:
    D.check_tensor(weight, "embedding_bag", "weight", 1)
    D.check_tensor(indices, "embedding_bag", "indices", 2)
    D.check_tensor(offsets, "embedding_bag", "offsets", 3)
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 2:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    name = _MODES[mode]
    pad = padding_idx if padding_idx is None or padding_idx >= 0 else \
        padding_idx + weight.shape[0]
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=name, sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset,
                             padding_idx=padding_idx)
    idx = indices.reshape(-1)
    n_bags, length = output.shape[0], idx.shape[0]
    if mode == 0 and pad is None:
        empty = C.zeros(0, dtype=dt.int64, device=indices.device)
        zeros = C.zeros(offsets.shape[0], dtype=dt.int64, device=indices.device)
        return output, empty, zeros, zeros.clone()
    starts = offsets[:n_bags].to(dt.int64)
    positions = C.arange(length, device=indices.device)
    bag_of = TS.searchsorted(starts, positions, right=True) - 1
    # entries past the last bag (include_last_offset) count for none
    ends = offsets[n_bags].to(dt.int64) if include_last_offset else length
    valid = (positions < ends) if include_last_offset else C.ones(length, dtype=dt.bool_,
                                                                   device=indices.device)
    if pad is not None:
        valid = valid & (idx != pad)
    bag_of = bag_of.clamp(0, max(n_bags - 1, 0))
    zeros = C.zeros(n_bags, dtype=dt.int64, device=indices.device)
    if mode == 0:
        return output, bag_of, zeros, zeros.clone()
    sizes = zeros.scatter_add(0, bag_of, valid.to(dt.int64))
    if mode == 1:
        return output, bag_of, sizes, sizes.clone()
    # max: per bag and column the row of the first entry equal to the bag's maximum
    dim = weight.shape[1]
    hit = (weight.detach()[idx] == output.detach()[bag_of]) & valid.unsqueeze(1)
    first = C.full((n_bags, dim), length, dtype=dt.int64, device=indices.device).scatter_reduce(
        0, bag_of.unsqueeze(1).expand(length, dim),
        TF.where(hit, positions.unsqueeze(1), length), "amin")
    rows = idx.to(dt.int64)[first.clamp(max=max(length - 1, 0))] if length else zeros
    return output, bag_of, sizes, TF.where(first < length, rows, 0)
