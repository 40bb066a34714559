"""Shape arithmetic shared by the op table's shape rules and the tracer (pure Python).

Errors carry PyTorch's exception types and messages, so that a rule that rejects a shape tells the
user the same thing PyTorch would.
"""
from __future__ import annotations

Shape = tuple  # tuple[int, ...]


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """Broadcast two shapes; RuntimeError naming both sizes like PyTorch's."""
    if a == b:
        return a
    na, nb = len(a), len(b)
    n = max(na, nb)
    out = []
    for i in range(n):
        da = a[i - n + na] if i - n + na >= 0 else 1
        db = b[i - n + nb] if i - n + nb >= 0 else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise RuntimeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                f"at non-singleton dimension {i}")
    return tuple(out)


def broadcast_many(shapes) -> Shape:
    out: Shape = ()
    for s in shapes:
        out = broadcast_shapes(out, s)
    return out


def numel(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def norm_dim(dim: int, ndim: int) -> int:
    """Wrap a possibly negative dim; IndexError like PyTorch's (0-d tensors accept -1 and 0)."""
    if dim.__class__ is int and 0 <= dim < ndim:  # (most calls: a loop's cat(.., 1), max(v, 1))
        return dim
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if dim < lo or dim > hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + (max(ndim, 1) if dim < 0 else 0)


def norm_dims(dims, ndim: int) -> tuple:
    """Normalise `dim=` of a reduction: None means all dims; duplicates are an error."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(sorted(norm_dim(d, ndim) for d in dims))
    for a, b in zip(out, out[1:]):
        if a == b:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    return tuple(d for d in out if d < ndim) if ndim else ()


def infer_reshape(shape: Shape, size: int) -> Shape:
    """Resolve one -1 in a requested shape; RuntimeError for shapes that do not fit."""
    if shape.__class__ is tuple and len(shape) <= 4:
        # a loop's `.view(1, -1)`: sizes of plain ints, at most one -1 (the general path
        # below checks everything else and phrases the errors)
        n, neg = 1, -1
        for i, d in enumerate(shape):
            if d.__class__ is not int or d < -1:
                break
            if d == -1:
                if neg >= 0:
                    break
                neg = i
            else:
                n *= d
        else:
            if neg < 0:
                if n == size:
                    return shape
            elif n and size % n == 0:
                return shape[:neg] + (size // n,) + shape[neg + 1:]
    shape = tuple(int(d) for d in shape)
    neg = [i for i, d in enumerate(shape) if d == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, d in enumerate(shape):
        if d < -1:
            raise RuntimeError(f"invalid shape dimension {d} at index {i} of shape {list(shape)}")
    if neg:
        rest = numel(shape[:neg[0]] + shape[neg[0] + 1:])
        if rest == 0 and size == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                f"unspecified dimension size -1 can be any value and is ambiguous")
        if rest == 0 or size % rest:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
        shape = shape[:neg[0]] + (size // rest,) + shape[neg[0] + 1:]
    if numel(shape) != size:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return shape


def expand_shape(src: Shape, target: Shape) -> Shape:
    """The shape `expand(*target)` gives; -1 keeps a size; RuntimeError like PyTorch's."""
    target = tuple(int(d) for d in target)
    if len(target) < len(src):
        raise RuntimeError(
            f"expand({_tensor_type(src)}{{{list(src)}}}, size={list(target)}): the number of sizes "
            f"provided ({len(target)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({len(src)})")
    off = len(target) - len(src)
    out = []
    for i in reversed(range(len(target))):  # PyTorch checks (and reports) from the last dim
        t = target[i]
        s = src[i - off] if i >= off else None
        if t == -1:
            if s is None:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}")
            t = s
        elif s is not None and s != t and s != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(src)}")
        out.append(t)
    numel = 1
    for t in out:
        numel *= t
    if numel > 2**63 - 1:  # (PyTorch counts elements in an int64)
        raise RuntimeError("numel: integer multiplication overflow")
    return tuple(reversed(out))


def _tensor_type(_shape: Shape) -> str:
    return "torch.FloatTensor"


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """Batched matmul of two tensors with at least 2 dims; batch dims broadcast."""
    if len(a) < 2 or len(b) < 2:
        raise RuntimeError("matmul primitive expects tensors with at least 2 dimensions")
    if a[-1] != b[-2]:
        if len(a) == 2 and len(b) == 2:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})")
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{numel(a[:-2]) or 1}, {a[-1]}] but got: [{numel(b[:-2]) or 1}, {b[-2]}].")
    batch = broadcast_shapes(a[:-2], b[:-2])
    return batch + (a[-2], b[-1])


def reduce_shape(shape: Shape, dims: tuple, keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in dims else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dims)


def contiguous_strides(shape: Shape) -> tuple:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))
