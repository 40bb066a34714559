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
    """The dim order a copy of `t` in `fmt` has. preserve_format is PyTorch's empty_like
    rule: a dense non-overlapping `t` keeps its layout (transposed, channels_last, any
    permutation), any other keeps the order of its strides (`infer_dense_strides`)."""
    if fmt is preserve_format:
        return stride_order(tuple(t.shape), t.stride())
    return order(fmt, t.ndim)


def stride_order(shape: tuple, strides: tuple) -> tuple:
    """The dims from the outermost in memory that PyTorch's infer_dense_strides (and
    TensorIterator) gives: a stable insertion sort by stride from the innermost dim, where a
    0 stride compares as undecided (it keeps its place) and of equal strides the smaller
    dim goes inside."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))  # innermost first

    def should_swap(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, ndim):
        d1 = i
        for j in range(1, i + 1):
            d0 = i - j
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


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
