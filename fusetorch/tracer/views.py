"""Views, and in-place writes through them, as PyTorch's autograd sees them.

Every view remembers how it was made from its base (`View`): the base tensor, the
movement steps from the base (`('index', attrs)`, `('reshape', attrs)`, `('permute', attrs)`,
..., or `('key', key)` for a plain `x[key]` made on the fast path, normalised when needed), and
how it was created ('diff', 'no_grad', ('multi', k) for an output of split/chunk/unbind,
'alias' for `detach()` and other aliases outside autograd). `_vver` is the storage's version
when the view's autograd node was made.

An in-place write through a differentiable view (PyTorch's "rebase"): the base's new value is its
old value with the view's region replaced by the written value, a chain of functional writes
(`index_put` for an index step, the inverse reshape or permute for the others) from the written
value out to the base; the base's node becomes that (named `CopySlices`) and the view's node is
its steps replayed on the new base (`AsStridedBackward0`). Other views of the base see that their
storage changed (the version moved since their node was made) and replay their steps on the
base's current node when next used (`refresh`), as PyTorch regenerates a view's grad_fn.

The base of a differentiable view is the storage root, or the nearest alias (`detach()`) above it:
a view of a detached tensor rebases onto the detached tensor, not onto what it was detached from.
Recordings (`trace.Recorder`) follow writes through views the same way, with the steps from the
storage root (`data_chain`).
"""
from __future__ import annotations

from typing import NamedTuple

from ..ir.graph import Node, make_node
from ..ir.ops import OPS, put_back_through
from .tensor import Tensor

# steps whose region a write can be put back through: the ops that declare `put_back`, and
# a Python indexing key (made an `index` step by `_steps`); any single-input step replays
_KEY = "key"

_MULTI_MSG = (" This view is the output of a function that returns multiple views. Such "
              "functions do not allow the output views to be modified inplace. You should "
              "replace the inplace operation by an out-of-place one.")
_NO_GRAD_MSG = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                "clarify your code by moving both the view and the inplace either both inside "
                "the no_grad block (if you don't want the inplace to be tracked) or both outside "
                "(if you want the inplace to be tracked).")


class View(NamedTuple):
    """How a view was made (`info`): from `base` by `steps` (None: unknown, as_strided),
    `kind` 'diff', 'no_grad', 'alias' or ('multi', k). A tensor holds the three as slots of
    its own (`_view_base`, `_view_steps`, `_view_kind`), not as one record: every view op
    makes a view, and a record's constructor cost eager indexing 3-5%."""
    base: Tensor
    steps: tuple | None
    kind: object


def mark(t: Tensor, base: Tensor, steps: tuple | None, kind) -> None:
    """Record that view `t` was made from `base` by `steps`, as `kind` (see View)."""
    t._view_base, t._view_steps, t._view_kind = base, steps, kind


def version(t: Tensor) -> int:
    r = t._base if t._base is not None else t
    vc = r._vc
    return vc[0] if vc is not None else 0


def info(t: Tensor) -> View | None:
    """How view `t` was made, or None for a tensor that is not one."""
    if t._base is None or getattr(t, "_view_kind", None) is None:
        return None
    return View(t._view_base, t._view_steps, t._view_kind)


def derive(result: Tensor, parent: Tensor, step, grad_mode: bool) -> None:
    """`result` was made from `parent` by one movement `step` (None: steps unknown) and shares
    its memory."""
    kind = "diff" if grad_mode else "no_grad"
    root = parent._base
    if root is not None and parent._view_kind != "alias":
        base, steps, pkind = parent._view_base, parent._view_steps, parent._view_kind
        steps = steps + (step,) if steps is not None and step is not None else None
        if pkind != "diff" and grad_mode:
            kind = pkind if pkind == "no_grad" else ("multi", 0)  # a view of a split's output
    else:
        base, steps = parent, (None if step is None else (step,))
        root = root if root is not None else parent
    result._view_base, result._view_steps, result._view_kind = base, steps, kind  # (mark)
    vc = root._vc
    result._vver = vc[0] if vc is not None else 0


def alias(result: Tensor, parent: Tensor) -> None:
    """`result` is `parent`'s memory outside autograd (`detach()`, `Variable`, a Function's
    output that is its input)."""
    mark(result, parent, (), "alias")
    result._vver = version(parent)


def mark_multi(outputs) -> None:
    """The outputs of split/chunk/unbind: PyTorch refuses in-place writes through them."""
    for k, o in enumerate(outputs):
        v = info(o)
        if v is not None and (v.kind == "diff" or isinstance(v.kind, tuple)):
            o._view_kind = ("multi", k)


# ---------------------------------------------------------------- steps and nodes

def _spec_of_key(shape: tuple, key) -> tuple:
    from types import SimpleNamespace

    from .indexing import _normalise
    return tuple(_normalise(SimpleNamespace(ndim=len(shape), shape=shape), key))


def resolve(shape: tuple, steps: tuple) -> list:
    """The steps as (op, attrs) applied from a base of `shape` (plain keys become index specs)."""
    out = []
    for op, attrs in steps:
        if op == _KEY:
            op, attrs = "index", {"spec": _spec_of_key(shape, attrs)}
        out.append((op, attrs))
        shape = make_node(op, [_Shape(shape)], attrs).shape
    return out


class _Shape:
    """A stand-in input for make_node's shape rules."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype=None):
        from ..ir import dtypes as dt
        self.shape, self.dtype = tuple(shape), dtype or dt.float32


def replay(node: Node, steps: list, build) -> Node:
    """`steps` applied to `node` with `build(op, inputs, attrs)`."""
    for op, attrs in steps:
        node = build(op, [node], attrs)
    return node


def put_back(base: Node, steps: list, value: Node, build) -> Node:
    """The base's new value: `base` with the region that `steps` select replaced by `value`
    (each step's inverse is declared on its op: ir/ops.py)."""
    return put_back_through(build, base, steps, value)


def invertible(steps) -> bool:
    return steps is not None and all(op == _KEY or OPS[op].put_back is not None
                                     for op, _ in steps)


def data_chain(t: Tensor):
    """(storage root, steps from it) of a view for recordings, which follow memory: a
    detached alias is a `detach` step. None when the steps are unknown (as_strided)."""
    v = info(t)
    if v is None:
        return None
    base, steps, kind = v.base, v.steps, v.kind
    if steps is None:
        return None
    if kind == "alias":
        steps = (("detach", {}),)
    if base._base is None:
        return base, steps
    up = data_chain(base)
    return None if up is None else (up[0], up[1] + steps)


# ---------------------------------------------------------------- autograd

def _build_autograd(op, inputs, attrs):
    return make_node(op, inputs, attrs)


def node_of(t: Tensor) -> Node:
    """The autograd node standing for `t`'s current value (an input node if it has none)."""
    from .autograd import _node_of
    return _node_of(t, None)


_base_node = node_of


def _label(node: Node, name: str, inputs: tuple) -> None:
    node.meta = dict(node.meta or {}, grad_fn=name, inputs=inputs)


def is_multi(t: Tensor) -> bool:
    v = info(t)
    return v is not None and isinstance(v.kind, tuple)


def view_error(t: Tensor, indirect: bool, name: str | None = None):
    """PyTorch's error for an in-place write through (or, `indirect`, next to) a view made by a
    function returning several views, or made in no_grad mode; None for other views. `name`:
    the function that made the view written (`t[0] = v` writes through a Select of t)."""
    v = info(t)
    if v is None or v.kind in ("diff", "alias"):
        return None
    what = ("its base or another view of its base has been" if indirect else "is being")
    node = t._node
    if name is not None and node is not None and node.op != "input":
        msg = f"Output 0 of {name} is a view and {what} modified inplace."
    elif node is not None and node.op != "input":
        import re

        from .grad_fn import grad_fn_name
        name = re.sub(r"Backward\d*$", "", grad_fn_name(node))
        k = v.kind[1] if isinstance(v.kind, tuple) else 0
        msg = f"Output {k} of {name} is a view and {what} modified inplace."
    else:
        msg = f"A view was created in no_grad mode and {what} modified inplace with grad mode enabled."
    return RuntimeError(msg + (_MULTI_MSG if isinstance(v.kind, tuple) else _NO_GRAD_MSG))


def refresh(t: Tensor) -> bool:
    """Bring a view's autograd node up to date after its storage was written in place (through
    its base or another view): its steps replayed on the base's current node. Returns whether
    the view requires grad now, in PyTorch's sense: a view made in no_grad mode of a base that
    requires grad does too (with no grad_fn). Called for views only, in grad mode."""
    kind = getattr(t, "_view_kind", None) if t._base is not None else None  # (info)
    if kind is None or kind == "alias":
        return t._requires_grad
    base, steps = t._view_base, t._view_steps
    now = version(t)
    if getattr(t, "_vver", now) == now:
        return t._requires_grad or (kind == "no_grad" and base._requires_grad)
    if not base._requires_grad and (t._node is None or t._node.op == "input"):
        t._vver = now  # nothing above it has a gradient: nothing to replay
        return t._requires_grad
    if kind != "diff":
        raise view_error(t, indirect=True)
    if steps is None:  # as_strided: keeps the node it was made with
        t._vver = now
        return t._requires_grad
    b = _base_node(base)
    node = replay(b, resolve(tuple(base._data.shape), steps), _build_autograd)
    if node is b:  # no steps (a detached base viewed whole)
        node = make_node("reshape", [b], {"shape": tuple(b.shape)})
    _label(node, "AsStridedBackward0", (b,))
    t._node, t._requires_grad, t._vver = node, True, now
    return True


def check_write(t: Tensor, grad: bool) -> None:
    """PyTorch's checks before an in-place write through view `t` in grad mode (`grad`: the
    write involves a tensor that requires grad)."""
    v = info(t)
    if v is None or v.kind == "alias" or not grad:
        return
    err = view_error(t, indirect=False)
    if err is not None:
        raise err
    base = v.base
    if base._requires_grad and (base._node is None or base._node.op == "input"):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if not invertible(v.steps):
        raise NotImplementedError(
            "an in-place operation on this view of a tensor that requires grad is not supported "
            "yet (an as_strided view or one made by a step that cannot be written back): write "
            "into a clone, or build the result out of place")


def is_diff_view(t: Tensor) -> bool:
    kind = getattr(t, "_view_kind", None) if t._base is not None else None  # (info)
    return kind is not None and kind != "alias"


def rebase(t: Tensor, written: Node, old_view: Node | None, from_self: bool) -> None:
    """Autograd after `t` (a differentiable view) was overwritten with the value of node
    `written` (`from_self`: an op applied to t, node `old_view`): the base's node becomes
    CopySlices, the view's its steps on it."""
    base, steps = t._view_base, t._view_steps
    b = _base_node(base)
    steps = resolve(tuple(base._data.shape), steps)
    new = put_back(b, steps, written, _build_autograd)
    if new is written:  # an identity view (detached tensor viewed whole)
        new = make_node("reshape", [written], {"shape": tuple(written.shape)})
    _label(new, "CopySlices", (b,) + _extra_inputs(written, from_self))
    keep_retained(base._node, new)
    base._node, base._requires_grad = new, True
    view = replay(new, steps, _build_autograd)
    if view is new:
        view = make_node("reshape", [new], {"shape": tuple(new.shape)})
    _label(view, "AsStridedBackward0", (new,))
    keep_retained(old_view, view)
    t._node, t._requires_grad, t._vver = view, True, version(t)


def _extra_inputs(written: Node, from_self: bool) -> tuple:
    """CopySlices' next_functions after the base's: those of the op applied to the view, less
    the view itself (`v.add_(w)`: w; `v.mul_(2)`: None; `v[i] = w`: w), or the written value
    (`v.copy_(w)`); nothing for a constant fill (`v.zero_()`)."""
    if written.op in ("input", "constant"):
        return (written,) if written.op == "input" and written.meta else ()
    if not from_self:
        return (written,)
    meta = written.meta or {}
    ins = meta["inputs"] if "inputs" in meta else written.inputs
    return tuple(ins[1:2] if written.op == "index_put" and "inputs" not in meta else ins[1:])


def keep_retained(old: Node | None, new: Node) -> None:
    """`t.retain_grad()` follows t to its new value after an in-place write (PyTorch)."""
    if old is not None and old.meta and "retain" in old.meta and old is not new:
        meta = dict(old.meta)
        new.meta = dict(new.meta or {}, retain=meta.pop("retain"))
        old.meta = meta
