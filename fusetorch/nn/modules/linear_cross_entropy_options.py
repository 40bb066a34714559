"""`LinearCrossEntropyOptions`: PyTorch's settings for evaluating linear_cross_entropy in
chunks. They choose how PyTorch saves memory, not what the loss is; fusetorch computes the
reference form and keeps them only to accept the scripts that pass them."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LinearCrossEntropyOptions"]


@dataclass
class LinearCrossEntropyOptions:
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None
