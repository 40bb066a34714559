"""Functional writes and fresh copies of views (issue 27): `index_put put fill zero_
select_scatter slice_scatter diagonal_scatter`, the `*_copy` functions (a view op's result as a
new tensor), `empty_strided scalar_tensor`, and `Tensor.resize_ / resize_as_`.

Every write is the `index_put` primitive on a spec (`('int', i)`, `('slice', ...)`,
`('tensor', k)`), so its gradient (the region's cotangent to the value, the rest to the input)
and its compilation come from that one definition."""
from __future__ import annotations

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim, numel
from . import dispatch as D
from . import functional as F
from . import indexing
from .dispatch import cast
from .tensor import Tensor


def _full_spec(input: Tensor) -> list:
    return [("slice", 0, s, 1) for s in input.shape]


def _put(input: Tensor, value: Tensor, spec, idx=(), accumulate: bool = False) -> Tensor:
    return D.apply("index_put", [input, cast(value, input._dtype), *idx],
                   {"spec": tuple(spec), "accumulate": accumulate})


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """`input` with `input[indices] = values` (or `+=` with accumulate: repeated indices add
    up), as a new tensor."""
    D.check_tensor(input, "index_put", "input", 1)
    D.check_tensor(values, "index_put", "values", 3)
    if not isinstance(indices, (list, tuple)):
        raise TypeError(f"index_put(): argument 'indices' (position 2) must be tuple of "
                        f"Tensors, not {type(indices).__name__}")
    items = indexing._normalise(input, tuple(indices))
    spec, idx = indexing._expand_masks(items)
    return _put(input, values, spec, idx, bool(accumulate))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """`input` with the elements at flat positions `index` (row-major, negative from the end)
    replaced by (or with accumulate, increased by) `source`."""
    D.check_tensor(input, "put", "input", 1)
    D.check_tensor(index, "put", "index", 2)
    D.check_tensor(source, "put", "source", 3)
    if index._dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{D._torch_name(index._dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    n = input.numel()
    flat_index = D.check_values(
        F.reshape(index, (-1,)), f"out of range: tried to access index {{value}} on a tensor of "
                                 f"{n} elements.", lo=-n, hi=n, error="IndexError")
    flat = _put(F.reshape(input, (-1,)), F.reshape(source, (-1,)), [("tensor", 0)],
                [flat_index], bool(accumulate))
    return F.reshape(flat, tuple(input.shape))


def fill(input: Tensor, value) -> Tensor:
    """A tensor like `input` holding `value` everywhere (a number or a 0-d tensor, whose
    gradient is the sum of the result's)."""
    D.check_tensor(input, "fill", "input", 1)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        return F.with_zero_grad(F.clone(F.expand(cast(value, input._dtype), *input.shape)), input,
                                grad_fn="FillBackward1")
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"fill(): argument 'value' must be Number, not {type(value).__name__}")
    return F.with_zero_grad(D.source("full", {"shape": tuple(input.shape), "dtype": input._dtype,
                                              "value": D._scalar_as(value, input._dtype)},
                                     input._be), input, grad_fn="FillBackward0")


def zero_(input: Tensor) -> Tensor:
    D.check_tensor(input, "zero_", "input", 1)
    return input.zero_()


def fill_(input: Tensor, value) -> Tensor:
    D.check_tensor(input, "fill_", "input", 1)
    return input.fill_(value)


def _check_src(src: Tensor, want: tuple) -> None:
    if tuple(src.shape) != tuple(want):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(want)}")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """`input` with `input.select(dim, index)` replaced by `src`."""
    D.check_tensor(input, "select_scatter", "input", 1)
    D.check_tensor(src, "select_scatter", "src", 2)
    d = norm_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    spec = _full_spec(input)
    spec[d] = ("int", index % n)
    _check_src(src, input.shape[:d] + input.shape[d + 1:])
    return _put(input, src, spec)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """`input` with `input[..., start:end:step, ...]` (along `dim`) replaced by `src`."""
    D.check_tensor(input, "slice_scatter", "input", 1)
    D.check_tensor(src, "slice_scatter", "src", 2)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = norm_dim(dim, input.ndim)
    lo, hi, st = slice(start, end, step).indices(input.shape[d])
    hi = max(hi, lo)
    spec = _full_spec(input)
    spec[d] = ("slice", lo, hi, st)
    want = list(input.shape)
    want[d] = len(range(lo, hi, st))
    _check_src(src, tuple(want))
    return _put(input, src, spec)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """`input` with its diagonal `offset` of (dim1, dim2) replaced by `src` (laid out as
    `input.diagonal(offset, dim1, dim2)` is: the diagonal as the last dim)."""
    D.check_tensor(input, "diagonal_scatter", "input", 1)
    D.check_tensor(src, "diagonal_scatter", "src", 2)
    d1, d2 = norm_dim(dim1, input.ndim), norm_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    from .functional_shape import movedim
    x = movedim(input, (d1, d2), (-2, -1))
    rows, cols = x.shape[-2], x.shape[-1]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    _check_src(src, tuple(x.shape[:-2]) + (length,))
    from .creation import arange
    r = arange(length, device=input.device) + max(-offset, 0)
    c = arange(length, device=input.device) + max(offset, 0)
    spec = [("slice", 0, s, 1) for s in x.shape[:-2]] + [("tensor", 0), ("tensor", 1)]
    out = _put(x, src, spec, [r, c])
    return movedim(out, (-2, -1), (d1, d2))


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """input with source's slices along `dim` reduced ('prod', 'mean', 'amax', 'amin') into
    the slices `index` names; a slice no index names keeps its value. Composed from a
    [target, source] match mask (memory: targets x sources x the other dims), so gradients
    are those of the plain reductions (ties share amax's, prod's handle zeros)."""
    from .functional_shape import movedim
    from .creation import arange
    D.check_tensor(input, "index_reduce", "input", 1)
    D.check_tensor(index, "index_reduce", "index", 3)
    D.check_tensor(source, "index_reduce", "source", 4)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    nd = max(input.ndim, 1)
    d = norm_dim(dim, nd)
    x = F.reshape(input, (1,)) if input.ndim == 0 else input
    src = F.reshape(source, (1,)) if source.ndim == 0 else source
    n_idx = index.numel()
    if src.ndim != x.ndim or src.shape[d] != n_idx or any(
            a != b for i, (a, b) in enumerate(zip(src.shape, x.shape)) if i != d):
        raise RuntimeError("index_reduce_(): Source/destination tensor must have same slice "
                           "shapes. Destination slice shape: "
                           f"{list(x.shape[:d] + x.shape[d + 1:])} at dimension {d} and source "
                           f"slice shape: {list(src.shape[:d] + src.shape[d + 1:])} at "
                           f"dimension 0.")
    targets = x.shape[d]
    idx = D.check_values(cast(F.reshape(index, (-1,)), dt.int64),
                         "index out of range in self", lo=-targets, hi=targets,
                         error="IndexError")
    idx = D.elementwise("where", D.binary("lt", idx, 0), D.binary("add", idx, targets), idx)
    xt, st = movedim(x, d, 0), movedim(cast(src, x._dtype), d, 0)  # [T, ...], [S, ...]
    rest = (1,) * (x.ndim - 1)
    match = D.binary("eq", F.reshape(arange(targets, device=x.device), (targets, 1)),
                     F.reshape(idx, (1, n_idx)))  # [T, S]
    hit = F.reshape(match, (targets, n_idx) + rest)
    spread = F.unsqueeze(st, 0)  # [1, S, ...]
    if reduce in ("amax", "amin"):
        far = _extreme_of(x._dtype, reduce == "amax")
        vals = D.elementwise("where", hit, spread, far)
        parts = F.cat([F.unsqueeze(xt, 1), vals], 1) if include_self else vals
        red = getattr(F, reduce)(parts, 1)
    elif reduce == "prod":
        vals = D.elementwise("where", hit, spread, 1)
        red = F.prod(vals, 1)
        if include_self:
            red = D.binary("mul", red, xt)
    else:
        vals = D.elementwise("where", hit, spread, 0)
        total = F.sum(vals, 1)
        count = F.sum(cast(hit, x._dtype), 1)
        if include_self:
            total, count = D.binary("add", total, xt), D.binary("add", count, 1)
        safe = D.elementwise("where", D.binary("eq", count, 0), 1, count)
        red = D.binary("div", total, safe) if x._dtype.is_floating_point else \
            F.div(total, safe, rounding_mode="floor")
    if not include_self:
        found = F.reshape(F.any(match, 1), (targets,) + rest)
        red = D.elementwise("where", found, red, xt)
    out = movedim(cast(red, x._dtype), 0, d)
    return F.reshape(out, ()) if input.ndim == 0 else out


def _extreme_of(d: dt.DType, largest: bool):
    if d.is_floating_point:
        return float("-inf") if largest else float("inf")
    if d is dt.bool_:
        return not largest
    bits = {dt.uint8: 8, dt.int8: 8, dt.int16: 16, dt.int32: 32, dt.int64: 64}[d]
    lo, hi = (0, 255) if d is dt.uint8 else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    return lo if largest else hi


# ---------------------------------------------------------------- fresh copies of views

def _copy_of(name: str, view):
    def fn(input: Tensor, *args, **kw):
        D.check_tensor(input, name, "input", 1)
        r = view(input, *args, **kw)
        if isinstance(r, tuple):
            return tuple(F.clone(t) for t in r)
        return F.clone(r)
    fn.__name__ = name
    fn.__doc__ = f"The result of `{name[:-5]}` as a new tensor (its own memory, not a view)."
    return fn


def _narrow_copy(x: Tensor, dim: int, start, length) -> Tensor:
    if isinstance(dim, int) and dim >= max(x.ndim, 1):
        # PyTorch's narrow_copy asserts dim < ndim (a RuntimeError); a too negative dim gets
        # the usual IndexError from wrapping it
        raise RuntimeError(f"Expected dim < static_cast<int64_t>(self_sizes.size()) to be "
                           f"true, but got false.")
    return F.narrow(x, dim, start, length)


def _view_ops() -> dict:
    from . import functional_shape as shape_fn
    from .strided import as_strided
    return {
        "view_copy": lambda x, size: F.reshape(x, F._shape_arg((size,), "view_copy", "size")),
        "permute_copy": lambda x, dims: F.permute(x, *dims),
        "transpose_copy": F.transpose,
        "expand_copy": lambda x, size, *, implicit=False: F.expand(x, *size),
        "narrow_copy": _narrow_copy,
        "squeeze_copy": F.squeeze,
        "unsqueeze_copy": F.unsqueeze,
        "t_copy": F.t,
        "diagonal_copy": shape_fn.diagonal,
        "select_copy": shape_fn.select,
        "slice_copy": lambda x, dim=0, start=None, end=None, step=1: x[
            (slice(None),) * norm_dim(dim, x.ndim) + (slice(start, end, step),)],
        "split_copy": F.split,
        "split_with_sizes_copy": lambda x, split_sizes, dim=0: F.split(x, list(split_sizes), dim),
        "unbind_copy": F.unbind,
        "detach_copy": lambda x: x.detach(),
        "alias_copy": lambda x: x,
        "as_strided_copy": as_strided,
        "unfold_copy": shape_fn.unfold,
    }


COPIES = {name: _copy_of(name, view) for name, view in _view_ops().items()}
globals().update(COPIES)


# ---------------------------------------------------------------- creation

def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """A tensor of `size` whose elements lie `stride` apart in a storage of its own (zeros:
    fusetorch hands out no uninitialised memory)."""
    from .creation import zeros
    from .strided import as_strided
    size, stride = F._ints(size, "empty_strided", "size"), F._ints(stride, "empty_strided",
                                                                   "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    store = zeros((extent,), dtype=dtype, device=device)
    r = as_strided(store, size, stride, 0)
    return r.requires_grad_() if requires_grad else r


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False) -> Tensor:
    """A dense tensor of `size` whose dims lie in memory in the order `physical_layout`
    (outermost first): `empty_permuted((2, 3, 4), (2, 0, 1)).stride() == (3, 1, 6)`."""
    size = F._ints(size, "empty_permuted", "size")
    order = F._ints(physical_layout, "empty_permuted", "physical_layout")
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    seen = set()
    for i, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}).  NB: negative dims "
                               f"not currently supported; file an issue if you want it.")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    stride, step = [0] * len(size), 1
    for d in reversed(order):
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty_strided(self: Tensor, size, stride, *, dtype=None, device=None,
                      requires_grad=False) -> Tensor:
    return empty_strided(size, stride, dtype=dtype or self._dtype,
                         device=device or self.device, requires_grad=requires_grad)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """A 0-d tensor holding the number `s`, in the default float type unless `dtype` says."""
    from .creation import tensor
    if isinstance(s, Tensor) or not isinstance(s, (bool, int, float)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    return tensor(s, dtype=dtype or dt.default_float(), device=device,
                  requires_grad=requires_grad)


# ---------------------------------------------------------------- resize

def resize_(self: Tensor, *sizes) -> Tensor:
    """Give `self` the shape `sizes`, keeping its elements in row-major order; new elements
    (growth) are zeros. The tensor gets memory of its own unless the count is unchanged and
    it is contiguous."""
    size = F._shape_arg(sizes, "resize_", "size")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if D.RECORDER is not None:
        D.RECORDER.graph_break("Tensor.resize_")
    xp = self._be.xp
    n, old = numel(size), self._data
    if n == old.size and old.flags.c_contiguous:
        self._data = old.reshape(size)
    else:
        new = xp.zeros(n, dtype=old.dtype)
        k = min(n, old.size)
        new[:k] = old.reshape(-1)[:k]
        self._data = new.reshape(size)
        # memory of its own: no longer a view
        self._base = self._view_base = self._view_steps = self._view_kind = None
    self._bump_version()
    return self


def resize_as_(self: Tensor, the_template: Tensor) -> Tensor:
    D.check_tensor(the_template, "resize_as_", "the_template", 2)
    return resize_(self, tuple(the_template.shape))


PUBLIC = ("index_put", "put", "index_reduce", "fill", "fill_", "zero_", "select_scatter",
          "slice_scatter", "diagonal_scatter", "empty_strided", "empty_permuted",
          "scalar_tensor") + tuple(COPIES)
METHODS = ("index_put", "put", "index_reduce", "select_scatter", "slice_scatter",
           "diagonal_scatter", "narrow_copy")
INPLACE = ("index_put", "put", "index_reduce")
