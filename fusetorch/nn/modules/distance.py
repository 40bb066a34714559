"""nn layers: PairwiseDistance and CosineSimilarity (torch.nn.modules.distance)."""
from __future__ import annotations

from ...tracer.tensor import Tensor
from .._functional import distance as _dist
from ..module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The p-norm of `x1 - x2 + eps` over the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return _dist.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine of the angle between `x1` and `x2` along `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return _dist.cosine_similarity(x1, x2, self.dim, self.eps)
