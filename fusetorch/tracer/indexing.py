"""`tensor[key]` and `tensor[key] = value`, normalised to the IR's `index` and `index_put` specs.

Reading is two steps, as in PyTorch: ints, slices, None and Ellipsis first (a view), then the
advanced (tensor) indices on what is left, so that `x[0, :, [0, 1]]` has PyTorch's shape [3, 2]
rather than numpy's [2, 3]. Boolean masks become integer indices through `nonzero`.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt
from ..ir.shapes import broadcast_shapes
from . import autograd as A
from . import dispatch as D
from . import views as _views
from .tensor import Tensor
from ..ir.roles import Role

# (dispatch's names bound once: a per-thread module's attributes are looked up unspecialized)
apply, any_needs_grad, needs_grad, _DISPATCH = D.apply, D.any_needs_grad, D.needs_grad, D._LOCAL


def _as_index_tensor(item, like: Tensor) -> Tensor:
    if not isinstance(item, Tensor):
        from .creation import tensor
        item = tensor(np.asarray(item) if not isinstance(item, (list, tuple)) else item,
                      device=like.device)
        if item.numel() == 0 and item._dtype.is_floating_point:
            item = D.cast(item, dt.int64)  # x[[]] selects nothing
    if item._dtype.is_floating_point:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if item._be is not like._be:
        if item._be.device.type != "cpu":
            raise IndexError(f"indices should be either on cpu or on the same device as the "
                             f"indexed tensor ({like.device})")
        item = D.transfer(item, like._be)  # CPU indices serve any device (PyTorch)
    return item


def _normalise(t: Tensor, key) -> list:
    """Split `key` into ('int', i) / ('slice', a, b, step) / ('none',) / ('tensor', T) /
    ('mask', T) items covering the tensor's dims (Ellipsis expanded)."""
    if not isinstance(key, tuple):
        if t.ndim == 0 and isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        if t.ndim == 0 and isinstance(key, slice):
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        key = (key,)
    items = []
    for k in key:
        if k is None:
            items.append(("none",))
        elif k is Ellipsis:
            items.append(("ellipsis",))
        elif isinstance(k, slice):
            items.append(("pyslice", k))
        elif isinstance(k, (bool, np.bool_)):
            raise NotImplementedError("indexing with a Python bool is not supported")
        elif isinstance(k, (int, np.integer)):
            items.append(("pyint", int(k)))
        elif isinstance(k, Tensor) and k.ndim == 0 and k._dtype.category == 1:
            items.append(("pyint", int(k.item())))
        else:
            k = _as_index_tensor(k, t)
            if k._dtype in (dt.bool_, dt.uint8):
                if k._dtype is dt.uint8:  # (old ByteTensor masks: still masks, deprecated)
                    from .user_warning import warn_at_user
                    warn_at_user("indexing with dtype torch.uint8 is now deprecated, please use "
                                 "a dtype torch.bool instead.")
                items.append(("mask", D.cast(k, dt.bool_)))
            else:
                items.append(("tensor", D.cast(k, dt.int64)))
    used = sum(it[1].ndim if it[0] == "mask" else 1 for it in items
               if it[0] not in ("none", "ellipsis"))
    if used > t.ndim:
        raise IndexError(f"too many indices for tensor of dimension {t.ndim}")
    if sum(1 for it in items if it[0] == "ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out, dim = [], 0
    for it in items:
        tag = it[0]
        if tag == "ellipsis":
            for _ in range(t.ndim - used):
                out.append(("slice", 0, t.shape[dim], 1))
                dim += 1
        elif tag == "none":
            out.append(it)
        elif tag == "pyint":
            n = t.shape[dim]
            i = it[1]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            out.append(("int", i + n if i < 0 else i))
            dim += 1
        elif tag == "pyslice":
            s = it[1]
            if s.step == 0:
                raise ValueError("slice step cannot be zero")
            if s.step is not None and s.step < 0:
                raise ValueError("step must be greater than zero")
            out.append(("slice",) + s.indices(t.shape[dim]))
            dim += 1
        elif tag == "mask":
            m = it[1]
            for j in range(m.ndim):
                if m.shape[j] != t.shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(m.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(t.shape)} at index {dim + j}")
            out.append(it)
            dim += m.ndim
        else:
            out.append(it)
            dim += 1
    return out


def _expand_masks(items: list) -> tuple[list, list]:
    """Replace each mask by one ('tensor', k) item per mask dim; return (spec, index tensors)."""
    from .functional import nonzero, unbind
    spec, idx = [], []
    for it in items:
        if it[0] == "mask":
            for col in (unbind(nonzero(it[1]), 1) if it[1].ndim else ()):
                spec.append(("tensor", len(idx)))
                idx.append(col)
            if it[1].ndim == 0:
                raise NotImplementedError("indexing with a 0-d boolean mask is not supported")
        elif it[0] == "tensor":
            spec.append(("tensor", len(idx)))
            idx.append(it[1])
        else:
            spec.append(it)
    return spec, idx


def _is_trivial(spec, shape) -> bool:
    # (a spec longer than the shape ends in new dims: `x[i, j, None]`)
    return len(spec) <= len(shape) and \
        all(it[0] == "slice" and it[1:] == (0, n, 1) for it, n in zip(spec, shape))


_INT_SPECS: dict = {}  # (int key, shape) -> its spec


def _plain_spec(t: Tensor, key):
    """The spec of a key of Python ints and forward slices within the tensor's dims (a loop's
    `x[i]`, `x[:, 1]`, `x[0, 3]`) without `_normalise`'s general pass; None for any other key
    (which `_normalise` checks, and whose errors it phrases)."""
    if key.__class__ is int:  # (a loop's x[i]: its spec is made once per shape)
        shape = t._data.shape
        spec = _INT_SPECS.get((key, shape))
        if spec is None and shape and -shape[0] <= key < shape[0]:
            if len(_INT_SPECS) >= 4096:
                _INT_SPECS.clear()
            spec = _INT_SPECS[key, shape] = (("int", key + shape[0] if key < 0 else key),)
        return spec
    elif key.__class__ is not tuple:
        return None
    shape = t._data.shape
    if len(key) > len(shape):
        return None
    spec = []
    for k, n in zip(key, shape):
        c = k.__class__
        if c is int:  # (not bool: its class is bool)
            if not -n <= k < n:
                return None
            spec.append(("int", k + n if k < 0 else k))
        elif c is slice and (k.step is None or k.step > 0):
            spec.append(("slice",) + k.indices(n))
        else:
            return None
    return tuple(spec)


def getitem(t: Tensor, key) -> Tensor:
    st = _DISPATCH.state  # (this thread's recorder and grad mode, read once)
    if st.RECORDER is None and not (st.GRAD_ENABLED and any_needs_grad((t,))):
        r = _basic_view(t, key)
        if r is not None:
            return r
    # a key of ints, slices and new dims is one `index` (its grad_fn named as PyTorch names it
    # by the op table: x[0] a select, x[1:] a slice); a plain spec is within the shape, as the
    # op's shape rule asks
    spec = _plain_spec(t, key)  # (None for bools: their class is not int)
    if spec is not None:
        return apply("index", [t], {"spec": spec}, checked=True)
    if isinstance(key, (bool, np.bool_)) or (isinstance(key, Tensor) and key.ndim == 0
                                             and key._dtype is dt.bool_):
        # a lone 0-d mask: a new leading dim of size 1 (True) or 0 (False), as in PyTorch
        r = apply("index", [t], {"spec": (("none",),)})
        return r if bool(key) else apply("index", [r], {"spec": (("slice", 0, 0, 1),)})
    items = _normalise(t, key)
    advanced = [it for it in items if it[0] in ("tensor", "mask")]
    if not advanced:
        return apply("index", [t], {"spec": tuple(items)})
    # step 1: the basic part, with the advanced dims kept whole
    basic, adv = [], []  # adv: (dim in step 1's result, item)
    src = pos = 0
    for it in items:
        tag = it[0]
        if tag in ("tensor", "mask"):
            n = it[1].ndim if tag == "mask" else 1
            for _ in range(n):
                basic.append(("slice", 0, t.shape[src], 1))
                src += 1
            adv.append((pos, it))
            pos += n
        else:
            basic.append(it)
            src += tag != "none"
            pos += tag != "int"
    x = t if _is_trivial(basic, t.shape) else apply("index", [t], {"spec": tuple(basic)})
    # step 2: the advanced indices on the dims they now sit at
    items2, at = [], 0
    for p, it in adv:
        while at < p:
            items2.append(("slice", 0, x.shape[at], 1))
            at += 1
        items2.append(it)
        at += it[1].ndim if it[0] == "mask" else 1
    spec2, idx = _expand_masks(items2)
    return apply("index", [x] + idx, {"spec": tuple(spec2)})


def _makes_view(items: list, shape: tuple) -> bool:
    """Whether PyTorch's `t[key] = v` writes through a view of t (its basic part is not the
    whole of t): then its error for a leaf names the view."""
    src = 0
    for it in items:
        if it[0] in ("int", "none"):
            return True
        if it[0] == "slice":
            if it[1:] != (0, shape[src], 1):
                return True
            src += 1
        else:
            src += it[1].ndim if it[0] == "mask" else 1
    return False


def _last_view_step(items: list, shape: tuple) -> str:
    """PyTorch's name for the last view `t[key] = v` takes of t before writing."""
    last, src = "Slice", 0
    for it in items:
        if it[0] == "int":
            last = "Select"
            src += 1
        elif it[0] == "none":
            last = "Unsqueeze"
        elif it[0] == "slice":
            if it[1:] != (0, shape[src], 1):
                last = "Slice"
            src += 1
        else:
            src += it[1].ndim if it[0] == "mask" else 1
    return last


_BASIC = (int, slice, type(None), type(Ellipsis))


def _basic_view(t: Tensor, key) -> Tensor | None:
    """`x[0]`, `x[:, 1:3]`, `x[None]`... with nothing recording: numpy's view, which is what
    the `index` primitive computes, without building a spec (a few microseconds per call in
    RNN loops). None for anything else, or anything that would raise: the general path then
    gives PyTorch's answer or error."""
    k = key if key.__class__ is tuple else (key,)
    for item in k:
        if item.__class__ not in _BASIC:
            return None
        if item.__class__ is slice and item.step is not None and (
                item.step.__class__ is not int or item.step <= 0):
            return None
    if not t._data.ndim:
        return None
    try:
        out = t._data[k + (Ellipsis,)] if not any(i is Ellipsis for i in k) else t._data[k]
    except (IndexError, TypeError, ValueError):
        return None
    r = Tensor._make(out, t._dtype, t._be)
    if t._base is None:  # views.derive, inlined for the common case
        r._base = t  # a view: one version counter
        r._view_base, r._view_steps = t, (("key", key),)
        r._view_kind = "diff" if _DISPATCH.state.GRAD_ENABLED else "no_grad"
        vc = t._vc
        r._vver = vc[0] if vc is not None else 0
    else:
        r._base = t._base
        _views.derive(r, t, ("key", key), _DISPATCH.state.GRAD_ENABLED)
    return r


def setitem(t: Tensor, key, value) -> None:
    items = _normalise(t, key)
    if D.GRAD_ENABLED and t._requires_grad and t.is_leaf and _makes_view(items, t.shape):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if D.GRAD_ENABLED and _views.is_multi(t) and _makes_view(items, t.shape) and (
            needs_grad(t) or _views.info(t).base._requires_grad or
            isinstance(value, Tensor) and needs_grad(value)):
        # PyTorch writes through t[key], a view of t named by its last step
        raise _views.view_error(t, indirect=False, name=_last_view_step(items, t.shape))
    if len(items) == 1 and items[0][0] == "mask" and _setitem_mask(t, items[0][1], value):
        return
    spec, idx = _expand_masks(items)
    if isinstance(value, Tensor):
        v = D.cast(value, t._dtype)
    elif isinstance(value, (bool, int, float)):
        v = D.source("full", {"shape": (), "dtype": t._dtype,
                              "value": D._scalar_as(value, t._dtype)}, t._be)
    else:
        from .creation import tensor
        v = tensor(value, dtype=t._dtype, device=t.device)
    if v.ndim and v.shape[0] == 1:  # PyTorch drops a value's leading 1-sized dims
        shape = tuple(v.shape)
        while shape and shape[0] == 1:
            shape = shape[1:]
        v = apply("reshape", [v], {"shape": shape})
    D.index_put_(t, v, idx, tuple(spec))


def _setitem_mask(t: Tensor, mask: Tensor, value) -> bool:
    """`t[mask] = v` where v does not span the selected elements (a number, or a tensor that
    broadcasts over the dims after the mask's) is `where(mask, v, t)` written into t: its graph
    does not depend on how many elements the mask selects. False: not such a case."""
    rest = tuple(t.shape[mask.ndim:])
    if isinstance(value, Tensor):
        if value.ndim > len(rest):
            return False
        try:
            if broadcast_shapes(tuple(value.shape), rest) != rest:
                return False
        except RuntimeError:
            return False  # the general path reports PyTorch's shape mismatch
        v = D.cast(value, t._dtype)
    elif isinstance(value, (bool, int, float)):
        v = D._scalar_as(value, t._dtype)
    else:
        return False
    if len(rest):
        mask = apply("reshape", [mask], {"shape": tuple(mask.shape) + (1,) * len(rest)})
    new = D.elementwise("where", mask, v, t)
    if new._node is not None and Role.MASK in new._node.opdef.roles:
        A.label(new, "IndexPutBackward0", t, v)  # PyTorch's name for `t[mask] = v`
    D.copy_into(t, new, from_self=True)
    return True
