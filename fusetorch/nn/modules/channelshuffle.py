"""nn layers: ChannelShuffle (ShuffleNet's channel interleave)."""
from __future__ import annotations

from ...tracer.tensor import Tensor
from .._functional.pixel_shuffle import channel_shuffle
from ..module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Regroups the C channels of [N, C, *] as [N, C/g, g, *] would order them."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
