"""Splitting, assembling and index arithmetic of PyTorch's catalogue (issue 27), composed from
primitives (`index` slices, `cat`, gathers): `tensor_split hsplit vsplit dsplit
split_with_sizes unsafe_split unsafe_chunk ravel msort block_diag cartesian_prod combinations
broadcast_shapes unravel_index diagflat`. Index lists that depend on sizes alone (combinations)
are computed on the host; nothing here reads tensor values."""
from __future__ import annotations

import itertools

from ..ir import dtypes as dt
from ..ir.shapes import broadcast_shapes as _broadcast2, norm_dim
from . import dispatch as D
from . import functional as F
from .dispatch import binary, cast
from .tensor import Size, Tensor
from .numpy_names import numpy_names


@numpy_names
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """numpy.array_split: `sections` nearly equal pieces (the first n % sections one longer),
    or pieces between the given indices (clipped to the dim, as slices are)."""
    D.check_tensor(input, "tensor_split", "input", 1)
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = norm_dim(dim, input.ndim)
    n = input.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec._dtype.is_floating_point or spec._dtype is dt.bool_ or spec.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have "
                               "integer dtype and be a 0-D or 1-D tensor, but got a tensor "
                               f"with dtype {D._torch_name(spec._dtype)} and {spec.ndim} dims")
        spec = spec.item() if spec.ndim == 0 else spec.tolist()
    elif hasattr(spec, "__index__") and not isinstance(spec, bool):
        spec = spec.__index__()  # a numpy integer is an int, as PyTorch's argument parser reads it
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        q, r = divmod(n, spec)
        bounds = [0]
        for i in range(spec):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:  # slice semantics: a negative index counts from the end, both clipped to [0, n]
        bounds = [0] + [max(0, min(n, int(i) + n if int(i) < 0 else int(i))) for i in spec] + [n]
    # a later index before an earlier one gives an empty piece, as x[a:b] does
    return tuple(F._slice(input, d, lo, max(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:]))


def _directional(name: str, dim: int, min_dims: int):
    def fn(input: Tensor, indices_or_sections) -> tuple:
        D.check_tensor(input, name, "input", 1)
        if input.ndim < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} "
                               f"dimension, but got a tensor with {input.ndim} dimensions!")
        d = dim if input.ndim > 1 or name != "hsplit" else 0
        if not isinstance(indices_or_sections, (list, tuple, Tensor)) and not hasattr(
                indices_or_sections, "__index__") or isinstance(indices_or_sections, bool):
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(Tensor, {type(indices_or_sections).__name__}), but expected one "
                            f"of: (Tensor input, int sections), (Tensor input, tuple of ints "
                            f"indices)")
        if hasattr(indices_or_sections, "__index__") and not isinstance(
                indices_or_sections, (bool, Tensor)):
            s = indices_or_sections.__index__()
            if s == 0 or input.shape[d] % s:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but "
                                   f"the size of the dimension {input.shape[d]} is not "
                                   f"divisible by the split_size {s}!")
        return tensor_split(input, indices_or_sections, d)
    fn.__name__ = name
    fn.__doc__ = f"tensor_split along dim {dim}, numpy.{name}'s rules."
    return fn


hsplit = _directional("hsplit", 1, 1)
vsplit = _directional("vsplit", 0, 2)
dsplit = _directional("dsplit", 2, 3)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    D.check_tensor(input, "split_with_sizes", "input", 1)
    return F.split(input, list(split_sizes), dim)


def unsafe_split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """split, whose pieces PyTorch does not guard against in-place writes; the same values."""
    return F.split(tensor, split_size_or_sections, dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    return F.chunk(input, chunks, dim)


def ravel(input: Tensor) -> Tensor:
    """The elements in row-major order (a view when the layout allows one)."""
    D.check_tensor(input, "ravel", "input", 1)
    return F.reshape(input, (-1,))


def msort(input: Tensor, *, out=None) -> Tensor:
    from .functional_scan import sort
    return F.write_out(sort(input, 0).values, out)


def block_diag(*tensors) -> Tensor:
    """The tensors (0-d, 1-d as one row, or 2-d) along the diagonal of a zero matrix, in their
    promoted dtype."""
    ts = D.check_tensors(list(tensors), "block_diag")
    blocks = []
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(F.reshape(t, (1, -1)) if t.ndim < 2 else t)
    from .creation import zeros
    if not blocks:
        return zeros((1, 0))
    d = ts[0]._dtype
    for t in ts[1:]:
        d = dt.promote_types(d, t._dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros((r, left), dtype=d, device=b.device), cast(b, d),
                 zeros((r, width - left - c), dtype=d, device=b.device)]
        rows.append(F.cat(parts, 1))
        left += c
    return F.cat(rows, 0)


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element of each 1-d tensor, one row each (itertools.product's
    order)."""
    ts = D.check_tensors(list(tensors), "cartesian_prod")
    for t in ts:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    from .functional_shape import meshgrid
    grids = meshgrid(*ts, indexing="ij")
    return F.stack([F.reshape(g, (-1,)) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """itertools.combinations (or combinations_with_replacement) of the elements, one row
    each; the rows are gathered, so gradients reach the elements."""
    D.check_tensor(input, "combinations", "input", 1)
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        from .creation import empty
        return empty((0,), dtype=input._dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = [i for c in pick(range(input.shape[0]), r) for i in c]
    from .creation import tensor
    flat = F.index_select(input, 0, tensor(idx, dtype=dt.int64, device=input.device))
    return F.reshape(flat, (-1, r))


def broadcast_shapes(*shapes) -> Size:
    """The shape the given shapes broadcast to (ints are 1-d shapes), without tensors."""
    out: tuple = ()
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for v in s:
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"broadcast_shapes(): expected ints in a shape, got "
                                f"{type(v).__name__}")
            if v < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {v}: "
                                   f"{list(s)}")
        out = _broadcast2(out, s)
    return Size(out)


def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates of flat `indices` in `shape`, one tensor per dim (indices wrap modulo
    the element count, as in PyTorch 2.13)."""
    if not isinstance(indices, Tensor):
        D.check_tensor(indices, "unravel_index", "indices", 1)
    if indices._dtype.is_floating_point or indices._dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{indices._dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if not shape:
        return ()
    total = 1
    for s in shape:
        total *= s
    rest = binary("remainder", cast(indices, dt.int64), total) if total else \
        cast(indices, dt.int64)
    coords = []
    for s in reversed(shape):
        coords.append(binary("remainder", rest, s) if s else rest)
        rest = binary("floor_divide", rest, s) if s else rest
    return tuple(reversed(coords))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input on diagonal `offset` of a square matrix."""
    D.check_tensor(input, "diagflat", "input", 1)
    from .functional_shape import diag_embed
    return diag_embed(F.reshape(input, (-1,)), offset)


PUBLIC = ("tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split",
          "unsafe_chunk", "ravel", "msort", "block_diag", "cartesian_prod", "combinations",
          "broadcast_shapes", "unravel_index", "diagflat")
METHODS = ("tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split",
           "unsafe_chunk", "ravel", "msort", "diagflat")
