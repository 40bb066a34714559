"""nn.functional: pixel_shuffle, pixel_unshuffle and channel_shuffle, each a reshape, a
permute and a reshape.

pixel_shuffle moves channel c*r*r + i*r + j to output pixel (h*r + i, w*r + j) of channel c;
pixel_unshuffle is its inverse. Any leading dims are batch dims, as in PyTorch.
channel_shuffle(x, g) takes channel i*(C/g) + j to j*g + i (ShuffleNet's interleave).
"""
from __future__ import annotations

from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .activation import _owned

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _check(input: Tensor, factor: int, name: str, what: str) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]."""
    D.check_tensor(input, "pixel_shuffle", "input", 1)
    r = int(upscale_factor)
    _check(input, r, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = F.reshape(input, (*lead, c // (r * r), r, r, h, w))
    x = F.permute(x, tuple(range(k)) + tuple(k + d for d in (0, 3, 1, 4, 2)))
    return F.reshape(x, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W]."""
    r = int(downscale_factor)
    _check(input, r, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    for size, dim, name in ((h, -2, "height"), (w, -1, "width")):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    k = len(lead)
    x = F.reshape(input, (*lead, c, h // r, r, w // r, r))
    x = F.permute(x, tuple(range(k)) + tuple(k + d for d in (0, 2, 4, 1, 3)))
    return F.reshape(x, (*lead, c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """[N, C, *] -> [N, C, *] with channels regrouped: [N, g, C/g, *] transposed to
    [N, C/g, g, *]."""
    D.check_tensor(input, "channel_shuffle", "input", 1)
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    r = F.reshape(input, (n, groups, c // groups) + rest)
    r = F.reshape(F.transpose(r, 1, 2), (n, c) + rest)
    return A.label_recorded(_owned(r, input), "ChannelShuffleBackward0", input)


native_channel_shuffle = channel_shuffle
