"""torch.memory_format: contiguous_format, preserve_format, channels_last, channels_last_3d.

A tensor's layout is its array's strides (kernels and numpy take any strides), so a format is
only an order of the dims from the outermost to the innermost in memory: channels_last lays
N, C, H, W out as N, H, W, C. A copy in a format is a permute to that order, a C-order copy
and the permute back (so autograd and compile need nothing more)."""
from __future__ import annotations

from .tensor import Tensor


class memory_format:
    """One of PyTorch's four memory formats, printed as PyTorch prints it."""
    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self):  # pickles as the module-level singleton
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d"]
# the order of dims from the outermost in memory, for the formats that fix one
_RANKS = {"channels_last": 4, "channels_last_3d": 5}


def check(fmt, fn: str) -> memory_format:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def order(fmt: memory_format, ndim: int) -> tuple:
    """The dims from the outermost in memory, for contiguous_format and the channels_last
    formats (PyTorch's error for a rank they do not fit)."""
    rank = _RANKS.get(fmt._name)
    if rank is None:
        return tuple(range(ndim))
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return (0,) + tuple(range(2, ndim)) + (1,)


def is_laid_out(t: Tensor, fmt: memory_format) -> bool:
    """Tensor.is_contiguous(memory_format=fmt): PyTorch's test, which ignores size-1 dims."""
    if fmt is preserve_format or fmt is contiguous_format:
        return t.is_contiguous()
    if t.ndim != _RANKS[fmt._name]:
        return False
    shape, strides = t.shape, t.stride()
    expected = 1
    for d in reversed(order(fmt, t.ndim)):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def target_order(t: Tensor, fmt: memory_format) -> tuple:
    """The dim order a copy of `t` in `fmt` has. preserve_format keeps a channels_last(_3d)
    layout (PyTorch's suggest_memory_format) and is contiguous otherwise: PyTorch would also
    keep any other dense layout (a transposed one), but here gradients are often transposed
    views where PyTorch's are contiguous, and buffers cloned from them (momentum) would then
    be laid out unlike their parameters."""
    if fmt is preserve_format:
        for f in (channels_last, channels_last_3d):
            if t.ndim == _RANKS[f._name] and is_laid_out(t, f) and not t.is_contiguous():
                return order(f, t.ndim)
        return tuple(range(t.ndim))
    return order(fmt, t.ndim)


def copy_in_order(t: Tensor, dims: tuple) -> Tensor:
    """A copy of `t` whose memory runs over `dims` (outermost first), CloneBackward0 as in
    PyTorch."""
    from . import autograd as A
    from . import functional as F
    if dims == tuple(range(t.ndim)):
        return F.unary_copy(t)
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    r = F.permute(F.unary_copy(F.permute(t, *dims)), *inverse)
    # a fresh tensor, as PyTorch's copy: not a view of the unreachable temporary (in-place
    # writes into it must be allowed, and compile must not see an input that is a view)
    r._base = None
    return A.label(r, "CloneBackward0", t) if t.requires_grad else r


def empty_in_order(array, dims: tuple):
    """`array`'s values in a fresh array whose memory runs over `dims` (outermost first)."""
    if dims == tuple(range(array.ndim)):
        return array
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return array.transpose(dims).copy().transpose(inverse)


def like(t: Tensor, made: Tensor, fmt) -> Tensor:
    """`made` (a fresh tensor of t's shape from a *_like creation) laid out as `fmt` asks."""
    fmt = check(fmt, "empty_like")
    dims = target_order(t, fmt)
    if dims != tuple(range(t.ndim)):
        made._data = empty_in_order(made._data, dims)
    return made
