"""Eager implementations of every primitive, for an array module `xp` (numpy, or cupy).

`make_table(xp)` returns {op name: fn}. Elementwise entries come from the op table (each
primitive declares its `eager` implementation beside its other rules, ir/elementwise.py): they
take arrays (or Python scalars) and are ufuncs where possible, so the eager path adds no Python
frame. The entries here (sources, reductions, movement, extern) take arrays then the node's
attributes as keywords. Inputs arrive already promoted to one dtype by the tracer.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _threads
from .._policy import POLICY
from ..ir import dtypes as dt
from ..ir import pool_ops
from ..ir.loss_ops import FEW_IN_PYTHON
from ..ir.ops import OPS
from . import conv, eager_kernels, recurrent, softmax_rows
from .device import NP_DTYPES
from ..ir.fma import fma
from ..ir.roles import Role

# PyTorch computes log(0) = -inf and 0/0 = nan silently; so does fusetorch. Filtering by module
# keeps numpy's warnings for the user's own numpy code and costs nothing per call (np.errstate
# would cost about 1.3 us per op). The tracer's fast paths and the interpreter call the ufuncs
# themselves, so all runtime and tracer modules are covered.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"fusetorch\.(runtime|tracer|ir)\.")


class _Generator:
    """The global random generator behind rand/randn/randint and `manual_seed`."""

    def __init__(self, seed: int = 0):
        self.seed(seed)

    def seed(self, seed: int) -> None:
        self.initial = int(seed)
        self.np = np.random.Generator(np.random.PCG64(int(seed) & (2**64 - 1)))


GENERATOR = _Generator(np.random.SeedSequence().entropy & (2**63 - 1))
# CUDA tensors draw from their own stream (`torch.cuda.manual_seed` seeds it alone), on the host:
# the draws then do not depend on the GPU, and a seeded CPU run can be compared with a GPU run
CUDA_GENERATOR = _Generator(np.random.SeedSequence().entropy & (2**63 - 1))


def _random(xp, shape, dtype, dist, low=None, high=None, gen=None):
    g, npdt = (gen or GENERATOR).np, NP_DTYPES[dtype]
    if dist == "uniform":
        wide = npdt if npdt in (np.float32, np.float64) else np.float64
        out = g.random(shape, dtype=wide)
        if low not in (None, 0.0) or high not in (None, 1.0):
            out = out * (high - low) + low
    elif dist == "normal":
        wide = npdt if npdt in (np.float32, np.float64) else np.float64
        out = g.standard_normal(shape, dtype=wide)
    elif dist == "randint":
        out = g.integers(low, high, size=shape, dtype=np.int64)
    else:
        raise ValueError(f"unknown distribution {dist}")
    return xp.asarray(out.astype(npdt, copy=False))


def _index_tuple(spec, idx) -> tuple:
    """The numpy index for an IR index spec (see ir.ops.index_shape)."""
    out = []
    for item in spec:
        tag = item[0]
        if tag == "int":
            out.append(item[1])
        elif tag == "slice":
            out.append(slice(item[1], item[2], item[3]))
        elif tag == "none":
            out.append(None)
        else:
            out.append(idx[item[1]])
    if not idx:
        out.append(Ellipsis)  # keeps x[0] of a 1-d array a 0-d view, not a numpy scalar copy
    return tuple(out)


def _check_bounds(x_shape, spec, idx):
    dim = 0
    for item in spec:
        if item[0] == "tensor":
            a = idx[item[1]]
            n = x_shape[dim]
            if a.size and (a.max() >= n or a.min() < -n):
                bad = int(a.max()) if a.max() >= n else int(a.min())
                # PyTorch numbers the dimension by the index tensor's position among them
                raise IndexError(f"index {bad} is out of bounds for dimension {item[1]} with "
                                 f"size {n}")
        if item[0] != "none":
            dim += 1


_BASIC_KEYS: dict = {}  # spec -> numpy index, for specs of ints, slices and new dims only


def _diagonal(x, offset, dim1, dim2):
    """A view, writable where x is: numpy's own is read-only (a guard from its copying days)
    but may be made writable, which is what PyTorch's diagonal is."""
    d = x.diagonal(offset, dim1, dim2)
    if d.__class__ is np.ndarray and not d.flags.writeable and x.flags.writeable:
        d.flags.writeable = True
    return d


def _unfold(xp, x, dim, size, step):
    """Tensor.unfold's windows as a view of x (writable where x is), PyTorch's strides."""
    st = x.strides
    shape = x.shape[:dim] + ((x.shape[dim] - size) // step + 1,) + x.shape[dim + 1:] + (size,)
    strides = st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


def _index(x, *idx, spec):
    if idx:
        _check_bounds(x.shape, spec, idx)
        return x[_index_tuple(spec, idx)]
    # a loop's x[i] repeats its spec: its numpy index is made once (~0.4 us a call)
    try:
        key = _BASIC_KEYS.get(spec)
    except TypeError:  # (a spec holding something unhashable: made every call)
        return x[_index_tuple(spec, idx)]
    if key is None:
        if len(_BASIC_KEYS) >= 4096:
            _BASIC_KEYS.clear()
        key = _BASIC_KEYS[spec] = _index_tuple(spec, idx)
    return x[key]


# (shape, strides, itemsize, target shape) -> the view's strides, None where the layout is not
# contiguous (it exports no buffer: broadcast_to itself)
_EXPAND_STRIDES: dict = {}
_UNSEEN = object()


def _expand(x: np.ndarray, shape: tuple) -> np.ndarray:
    """numpy's broadcast_to(x, shape) (read-only: a write into it would repeat), made as an
    array over x's memory with the strides broadcast_to gives, which are cached per layout:
    broadcast_to checks its arguments in Python for ~2.5 us a call, an RNN loop's expand of a
    hidden row costs ~0.5 us so. Arrays that export no buffer (non-contiguous ones) take
    broadcast_to itself."""
    if x.shape == shape:
        return x
    # (a layout's contiguity is a function of its shape, strides and itemsize: the key's)
    key = (x.shape, x.strides, x.itemsize, shape)
    strides = _EXPAND_STRIDES.get(key, _UNSEEN)
    if strides is _UNSEEN or strides is None:
        out = np.broadcast_to(x, shape)
        if strides is _UNSEEN:
            if len(_EXPAND_STRIDES) >= 4096:
                _EXPAND_STRIDES.clear()
            _EXPAND_STRIDES[key] = out.strides if x.flags.c_contiguous else None
        return out
    out = np.ndarray(shape, x.dtype, x, 0, strides)
    out.setflags(write=False)  # (~0.1 us less than setting `flags.writeable`)
    return out


def _add_at(xp, out, key, v) -> None:
    """out[key] += v where advanced indices may repeat (each occurrence adds)."""
    if xp is np:
        # one index over the first dim (Embedding's gradient): a kernel, the same sums
        if len(key) == 1 and key[0].__class__ is np.ndarray and \
                eager_kernels.add_rows(out, key[0], v):
            return
        np.add.at(out, key, v)
    else:
        import cupyx
        cupyx.scatter_add(out, key, v)


def _index_put(xp, x, v, *idx, spec, accumulate=False, inplace=False):
    out = x if inplace else x.copy()
    key = _index_tuple(spec, idx)
    if idx:
        _check_bounds(x.shape, spec, idx)
    if accumulate and idx:
        _add_at(xp, out, key, v)  # advanced indices may repeat: each occurrence must add
    elif accumulate:
        out[key] += v  # a basic index (slices, ints) never repeats an element
    else:
        out[key] = v
    return out


def _grid_index(xp, index, dim):
    """Open-grid index that pairs `index` along `dim` with the positions in the other dims."""
    if xp is np:  # (a loop's max(v, 1) repeats its shape: the positions are made once)
        grid = _grid(index.shape, dim)
        return grid[:dim] + (index,) + grid[dim + 1:]
    key = []
    for i, n in enumerate(index.shape):
        if i == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[i] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


@functools.lru_cache(maxsize=64)
def _grid(shape: tuple, dim: int) -> tuple:
    """numpy's open grid over `shape` (read-only positions; None at `dim`)."""
    key = []
    for i, n in enumerate(shape):
        if i == dim:
            key.append(None)
        else:
            a = np.arange(n).reshape([n if j == i else 1 for j in range(len(shape))])
            a.flags.writeable = False
            key.append(a)
    return tuple(key)


def _check_gather_index(index, size, dim):
    if index.size and (index.max() >= size or index.min() < 0):
        bad = int(index.max()) if index.max() >= size else int(index.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _gather(xp, x, index, dim):
    """The `gather` primitive. Its index is in range: torch.gather checks a user's with a
    `check` primitive first, and the other callers make theirs (an argmax, a sort's order), so
    no check here (on a GPU it would read values back to the host on every call). A bad index
    would still not read outside x (numpy bounds-checks every path below), but could read
    another row's element."""
    if xp is np and index.shape[dim] == 1:
        out = eager_kernels.gather_rows(x, index, dim)
        if out is not None:
            return out
    if xp is np and index.size >= 64 and x.flags.c_contiguous:  # (the size first: no flags)
        # one flat `take`: position = index * stride(dim) + the other dims' offsets (cached
        # per shape); 3-4x faster than numpy's advanced indexing with an open grid
        flat = index * (x.strides[dim] // x.itemsize)
        flat += _gather_offsets(index.shape, tuple(s // x.itemsize for s in x.strides), dim)
        return np.take(x.reshape(-1), flat)
    return x[_grid_index(xp, index, dim)]


@functools.lru_cache(maxsize=32)
def _gather_offsets(shape: tuple, strides: tuple, dim: int) -> np.ndarray:
    """[shape] int64: the element offset of each position along every dim but `dim`."""
    out = np.zeros(shape, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        if d != dim and n > 1:
            out += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    out.flags.writeable = False
    return out


def _scatter_add(xp, x, index, src, dim, inplace=False):
    _check_gather_index(index, x.shape[dim], dim)
    out = x if inplace else x.copy()
    src = src[tuple(slice(0, n) for n in index.shape)]
    if xp is np and index.shape[dim] == 1 and \
            index.shape == x.shape[:dim] + (1,) + x.shape[dim + 1:]:
        # one target per row along dim (max(dim)'s gradient, max pooling): no target can
        # repeat, so a gather-add-put does what np.add.at does, ~10x faster
        vals = np.take_along_axis(out, index, dim) + src
        np.put_along_axis(out, index, vals, dim)
    elif xp is np and dim == x.ndim - 1 and eager_kernels.scatter_add_last(out, index, src):
        pass  # (max pooling's gradient: a kernel, the sums np.add.at makes below)
    elif xp is np and index.size >= 64:
        # targets may repeat (max pooling's gradient where windows overlap): np.add.at over
        # flat positions, as `_gather` reads them, is numpy's fast 1-d loop (~4x its open grid);
        # the same sums in the same order
        flat = index * (out.strides[dim] // out.itemsize)
        flat += _gather_offsets(index.shape, tuple(s // out.itemsize for s in out.strides), dim)
        np.add.at(out.reshape(-1), flat.reshape(-1), src.reshape(-1))
    else:
        _add_at(xp, out, _grid_index(xp, index, dim), src)
    return out


def _scatter_reduce(xp, x, index, src, dim, reduce, include_self):
    _check_gather_index(index, x.shape[dim], dim)
    out = x.copy()
    key = _grid_index(xp, index, dim)
    if not include_self:  # each written position starts from the reduction's identity
        out[key] = _identity(x.dtype, reduce)
    if xp is np:
        {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce].at(out, key, src)
    else:
        import cupyx
        if reduce == "prod":
            raise NotImplementedError("fusetorch: scatter_reduce(reduce='prod') is not "
                                      "supported on cuda tensors")
        (cupyx.scatter_max if reduce == "amax" else cupyx.scatter_min)(out, key, src)
    return out


def _identity(dtype, reduce: str):
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    if dtype.kind in "iu":
        return np.iinfo(dtype).min if reduce == "amax" else np.iinfo(dtype).max
    return -np.inf if reduce == "amax" else np.inf  # floats, bfloat16 included


def _unfold2d(xp, x, kernel, stride, padding, dilation, pad_value):
    """Windows as a read-only strided view of the (padded) input: no copy until a consumer
    (matmul) needs one."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    if ph or pw:
        x = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    s0, s1, s2, s3 = x.strides
    shape, strides = (n, c, kh, kw, oh, ow), (s0, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw)
    if xp is np:
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


def _fold2d(xp, cols, size, kernel, stride, padding, dilation):
    """Sum each window position back where it came from: kh * kw strided adds."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    n, c, _, _, oh, ow = cols.shape
    h, w = size
    out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    if (sh, sw) == (kh, kw) and (dh, dw) == (1, 1):
        # windows tile the input without overlap (2x2 pooling): a transpose puts each back
        tiles = cols.transpose(0, 1, 4, 2, 5, 3).reshape(n, c, oh * kh, ow * kw)
        out[:, :, :oh * kh, :ow * kw] = tiles
        return out[:, :, ph:ph + h, pw:pw + w]
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]
    return out[:, :, ph:ph + h, pw:pw + w]


def _nonzero(xp, x):
    if x.ndim == 0:  # numpy refuses 0-d input; PyTorch gives shape (1, 0) or (0, 0)
        return xp.zeros((int(bool(x)), 0), dtype=np.int64)
    return xp.stack(xp.nonzero(x), axis=1).astype(np.int64, copy=False).reshape(-1, x.ndim)


def _to_device(x, device, src=None):
    """A copy of `x` on `device` (a device name): the array module of that device's backend.
    Always a copy, as `.to('cuda')` makes new storage, also when both sides use numpy."""
    from .device import backend
    xp = backend(device).xp
    if xp is np:
        # order K keeps a dense layout (a transpose stays one), as PyTorch's copy does
        return _get(x) if not isinstance(x, np.ndarray) else np.array(x, copy=True, order="K")
    return xp.array(x, copy=True)


def _get(x) -> np.ndarray:
    """A device array on the host in the same dense layout (cupy's `get` makes it C-ordered: a
    transposed tensor would come back with other strides than PyTorch gives)."""
    if x.ndim < 2 or x.flags.c_contiguous:
        return x.get()
    perm = sorted(range(x.ndim), key=lambda d: -x.strides[d])
    dense = x.transpose(perm)
    if not dense.flags.c_contiguous:  # gaps (a slice with a step): C order, as PyTorch
        return x.get()
    return dense.get().transpose(np.argsort(perm))


def _reduce(fn):
    def run(x, dims, keepdim):
        if x.dtype.itemsize == 2 and x.dtype.kind in "fV":
            # float16/bfloat16 accumulate in float32 and round once, as PyTorch's CPU sums
            # (numpy's half sum stalls at 2048; bfloat16's at 256). Tested here rather than
            # by a wrapper: a frame per float32 sum cost 0.6 us
            return fn(x.astype(np.float32), axis=dims, keepdims=keepdim).astype(x.dtype)
        return fn(x, axis=dims, keepdims=keepdim)
    return run


def _arg_reduce(fn, name=None):
    """argmax/argmin over one dim; with `name`, float arrays go to a compiled kernel where one
    is built (numpy moves the dim last and copies: max pooling's window dim)."""
    def run(x, dims, keepdim):
        if name is not None:
            out = eager_kernels.arg_reduce(name, x, dims[0], keepdim)
            if out is not None:
                return out
        return fn(x, axis=dims[0], keepdims=keepdim).astype(np.int64, copy=False)
    return run


def _reshape(x, shape):
    """numpy's reshape; where it must copy a strided view (im2col, pooling windows), the copy
    is a compiled kernel's when one is built."""
    if x.size >= POLICY.min_elements and not x.flags.c_contiguous:  # (size first: ~0.05 us)
        try:
            return np.reshape(x, shape, copy=False)  # a view where strides allow
        except ValueError:
            c = eager_kernels.strided_copy(x)
            if c is not None:
                return c.reshape(shape)
    return x.reshape(shape)  # (the method: numpy's function wrapper costs ~0.5 us a call)


def _copy(fn):
    """The `copy` primitive (clone, contiguous): a kernel copies large strided views."""
    def run(x):
        if not x.flags.c_contiguous:
            c = eager_kernels.strided_copy(x)
            if c is not None:
                return c
        return fn(x)
    return run


def _extreme(fn, name):
    def run(x, dims, keepdim):
        for d in dims:
            if x.shape[d] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        return fn(x, axis=dims, keepdims=keepdim)
    return run


def _custom(*xs, fn, positions, dtype):
    raise NotImplementedError(f"a captured graph holding the custom Function {fn.__name__} "
                              "cannot be re-run: custom Functions are graph breaks")


_ERRORS = {"IndexError": IndexError, "RuntimeError": RuntimeError, "ValueError": ValueError}


def _check(xp, x, *, lo, hi, closed, allow, error, message):
    """The `check` primitive: `x` itself, or PyTorch's error for its first value out of range.
    Min and max decide when every value is in range (two passes, no temporaries; a NaN fails
    both), also with `allow` (cross_entropy's ignore_index: targets seldom hold it); else
    the values are compared one by one."""
    n = x.size
    if n == 0:
        return x
    if n <= FEW_IN_PYTHON and xp is np and x.dtype.kind in "iu":
        # a loop's targets (one row's class): Python's min and max of a few integers, ~0.2 us
        # where each numpy reduction costs ~1 us of fixed setup (floats go to numpy: a NaN)
        vals = x.ravel().tolist()
        low, high = min(vals), max(vals)
        if (lo is None or low >= lo) and (hi is None or (high <= hi if closed else high < hi)):
            return x
    else:
        # (numpy's ufunc reductions: its min()/max() methods' Python wrappers cost ~1 us each,
        # on every call of a loss in a loop)
        low, high = (np.minimum.reduce, np.maximum.reduce) if xp is np else (xp.min, xp.max)
        if ((lo is None or bool(low(x, axis=None) >= lo)) and
                (hi is None or bool(high(x, axis=None) <= hi if closed
                                    else high(x, axis=None) < hi))):
            return x
    good = xp.ones(x.shape, dtype=bool)
    if lo is not None:
        good &= x >= lo
    if hi is not None:
        good &= (x <= hi) if closed else (x < hi)
    if allow is not None:
        good |= x == allow
    if bool(good.all()):
        return x
    bad = x[~good].reshape(-1)[0]
    value = bad.item() if hasattr(bad, "item") else bad
    raise _ERRORS[error](message.format(value=value))


def _max_pool(fallback, part: int):
    """A max pooling primitive by the kernel of `eager_kernels.max_pool2d` (result `part`:
    0 the values, 1 the indices) where it applies, else by `fallback`."""
    def run(x, **a):
        _, extra = pool_ops.geometry(x.shape, a)
        out = eager_kernels.max_pool2d(x, a["kernel"], a["stride"], a["padding"],
                                       a["dilation"], extra, part)
        return fallback(x, **a) if out is None else out
    return run


def _max_pool_grad(index):
    """max_pool2d_grad by `eager_kernels.max_pool2d_grad` where it applies, else as its
    composition computes it: scatter_add at `index`'s picks (the same sums)."""
    def run(x, g, **a):
        _, extra = pool_ops.geometry(x.shape, a)
        out = eager_kernels.max_pool2d_grad(x, g, a["kernel"], a["stride"], a["padding"],
                                            a["dilation"], extra)
        if out is not None:
            return out
        n, c, h, w = x.shape
        k = g.shape[2] * g.shape[3]
        flat = _scatter_add(np, np.zeros((n, c, h * w), x.dtype),
                            index(x, **a).reshape(n, c, k), g.reshape(n, c, k), 2,
                            inplace=True)
        return flat.reshape(x.shape)
    return run


def _linear(xp, matmul):
    def linear(x, w, *b):
        out = matmul(x, w.T)
        if b:  # (into the product, a fresh array: no temporary)
            xp.add(out, b[0], out=out)
        return out
    return linear


def _lstm(linear, scan):
    def lstm(x, h0, c0, w_ih, w_hh, *b, reverse):
        return scan(linear(x, w_ih, *b), h0, c0, w_hh, reverse=reverse)
    return lstm


def _avg_pool2d(xp, unfold2d, total, div):
    def avg_pool2d(x, kernel, stride, padding, divisor):
        win = unfold2d(x, kernel, stride, padding, (1, 1), 0)
        s = total(win, (2, 3), False)
        return div(s, xp.asarray(divisor, dtype=s.dtype))
    return avg_pool2d


def make_table(xp, generator: "_Generator | None" = None) -> dict:
    """The eager implementation of every primitive for array module `xp`; random draws come
    from `generator` (default: the global CPU one)."""
    t = {name: d.eager(xp) for name, d in OPS.items() if d.eager is not None}  # elementwise
    t.update({
        # sources
        "full": lambda shape, dtype, value: xp.full(shape, value, dtype=NP_DTYPES[dtype]),
        # floats: start + step * i rounded once in double, as PyTorch's arange (an fma)
        "iota": lambda shape, dtype, start, step: (
            fma(xp, xp.arange(shape[0], dtype=np.float64), step, start) if dtype.is_floating_point
            else start + xp.arange(shape[0], dtype=np.int64) * step).astype(NP_DTYPES[dtype],
                                                                            copy=False),
        "constant": lambda shape, dtype, value, digest=None: xp.asarray(value,
                                                                       dtype=NP_DTYPES[dtype]),
        "random": lambda shape, dtype, dist, low=None, high=None: _random(
            xp, shape, dtype, dist, low, high, generator),
        # reductions
        # ufunc.reduce skips numpy's Python-level sum() wrapper (a few us per call)
        "sum": _reduce(xp.add.reduce if xp is np else xp.sum),
        "prod": _reduce(xp.multiply.reduce if xp is np else xp.prod),
        "max": _extreme(xp.maximum.reduce if xp is np else xp.max, "max"),
        "min": _extreme(xp.minimum.reduce if xp is np else xp.min, "min"),
        # (numpy's methods: its functions' Python wrappers cost ~0.7 us a call)
        "argmax": _arg_reduce(np.ndarray.argmax if xp is np else xp.argmax,
                              "argmax" if xp is np else None),
        "argmin": _arg_reduce(np.ndarray.argmin if xp is np else xp.argmin,
                              "argmin" if xp is np else None),
        # movement
        "reshape": _reshape if xp is np else lambda x, shape: xp.reshape(x, shape),
        "permute": lambda x, perm: x.transpose(perm),
        # (the same shape: the array itself, a view)
        "expand": _expand if xp is np else
        lambda x, shape: x if x.shape == shape else xp.broadcast_to(x, shape),
        "index": _index, "index_put": functools.partial(_index_put, xp),
        "diagonal": _diagonal,
        "unfold": functools.partial(_unfold, xp),
        "cat": lambda *xs, dim: xp.concatenate(xs, axis=dim),
        "gather": functools.partial(_gather, xp),
        "scatter_add": functools.partial(_scatter_add, xp),
        "scatter_reduce": functools.partial(_scatter_reduce, xp),
        "nonzero": functools.partial(_nonzero, xp), "to_device": _to_device,
        "unfold2d": functools.partial(_unfold2d, xp), "fold2d": functools.partial(_fold2d, xp),
        # extern
        # numpy's on one BLAS thread for small products (a busy machine: see _threads)
        "matmul": _threads.matmul if xp is np else xp.matmul,
        "check": functools.partial(_check, xp),
        "custom": _custom,
        "custom_vjp": lambda g, ctx, index, positions, shape, dtype: ctx.input_grad(
            g, positions[index], shape, dtype),
    })
    # composite layers whose eager form is their composition's arrays in one call
    t["linear"] = _linear(xp, t["matmul"])
    t["avg_pool2d"] = _avg_pool2d(xp, t["unfold2d"], t["sum"], t["div"])
    if xp is np:
        for name, d in OPS.items():  # (erf: 90 ns an element in numpy, 4 as a kernel)
            if Role.EAGER_KERNEL in d.roles:
                t[name] = eager_kernels.elementwise(name, t[name])
        t["copy"] = _copy(t["copy"])
        # an LSTM layer's steps: a C kernel each (runtime/recurrent.py)
        t["lstm_scan"] = recurrent.scan(t["lstm_scan"])
        t["lstm_scan_grad"] = recurrent.scan_grad(t["lstm_scan_grad"])
        # a convolution and its gradients without im2col in memory (runtime/conv.py)
        t["conv2d"] = conv.forward(t["conv2d"])
        t["conv2d_grad_weight"] = conv.grad_weight(t["conv2d_grad_weight"])
        t["conv2d_grad_input"] = conv.grad_input(t["conv2d_grad_input"])
        # max pooling's values, indices and gradient: C kernels of one scan (ir/pool_ops.py)
        t["max_pool2d"] = _max_pool(t["max_pool2d"], 0)
        t["max_pool2d_index"] = _max_pool(t["max_pool2d_index"], 1)
        t["max_pool2d_grad"] = _max_pool_grad(t["max_pool2d_index"])
        # softmaxes of small arrays: one C call each (runtime/softmax_rows.py)
        t["softmax"] = softmax_rows.forward(t["softmax"], False)
        t["log_softmax"] = softmax_rows.forward(t["log_softmax"], True)
    t["lstm"] = _lstm(t["linear"], t["lstm_scan"])  # (the CPU's scan: its C kernel)
    return t


def np_dtype(d: dt.DType):
    return NP_DTYPES[d]
