"""The autograd modes that act on every recorded op: saved-tensor hooks, anomaly mode, and
forward-mode AD's tangents (tracer/forward_ad.py, called from `_on_record`).

Saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks(pack, unpack)`): while a pair is
on this thread's stack, each value a recorded node saves for its VJP is handed to `pack` (under
no_grad) and only what `pack` returns is kept; `unpack` gives the tensor back each time a
backward binds the node's values. The node's `saved` becomes a `_Packed`, which
`autograd._bind_values` asks to `materialize(node)`, as it asks a checkpoint's deferral. As in
PyTorch, unpacked values are not version-checked (the hooks own them) and a pack hook may not
write its input in place.

Anomaly mode (`torch.autograd.detect_anomaly`, `set_detect_anomaly`; process-wide, as
PyTorch's): each recorded node keeps the user's stack; a backward runs node by node
(`run_checked`), and the cotangent a forward node's rule returns for its i-th input holding NaN
raises PyTorch's "Function 'XBackward0' returned nan values in its ith output.", after a warning
with the stack of the forward call, as does any other error a rule's nodes raise.

Both are off by default: `autograd.ON_RECORD` is then None, so recording pays one test per op.
"""
from __future__ import annotations

import threading
import traceback
import warnings
import weakref
from typing import Any, Callable

from . import autograd as A
from . import forward_ad as _fwd
from .tensor import Tensor

# ---------------------------------------------------------------- saved-tensor hooks

_LOCAL = threading.local()  # .stack: [(pack, unpack)], .disabled: an error message or None
_HOOKS_IN_USE = 0  # pairs entered on any thread (recording looks at its own stack only then)


def _stack() -> list:
    s = _LOCAL.__dict__.get("stack")
    if s is None:
        s = _LOCAL.stack = []
    return s


def push_hooks(pack_hook: Callable, unpack_hook: Callable) -> None:
    global _HOOKS_IN_USE
    msg = _LOCAL.__dict__.get("disabled")
    if msg is not None:
        raise RuntimeError(msg)
    _stack().append((pack_hook, unpack_hook))
    _HOOKS_IN_USE += 1
    _refresh()


def pop_hooks() -> None:
    global _HOOKS_IN_USE
    _stack().pop()
    _HOOKS_IN_USE -= 1
    _refresh()


def disable_hooks(message: str) -> str | None:
    """Refuse saved-tensor hooks on this thread with `message`; returns the previous setting.
    Refused too while hooks are on (PyTorch)."""
    if _stack():
        raise RuntimeError(message)
    prev = _LOCAL.__dict__.get("disabled")
    _LOCAL.disabled = message
    return prev


def restore_disabled(prev: str | None) -> None:
    _LOCAL.disabled = prev


class _Packed:
    """A node's saved values as pack hooks returned them, (key, packed, shape, dtype, unpack)
    each, beside the entries no hook packed (`raw`: `SavedTensor.register_hooks` packs one)."""

    __slots__ = ("items", "raw")

    def __init__(self, items: list, raw: dict | None = None):
        self.items, self.raw = items, raw or {}

    def materialize(self, node) -> dict:
        out = dict(self.raw)
        with A.no_grad():
            for key, packed, shape, dtype, unpack in self.items:
                t = unpack_one(unpack, packed, shape, dtype)
                out[key] = (t._data, None, 0, t)
        return out

    def holds(self, key) -> bool:
        return any(item[0] == key for item in self.items)

    def unpack_key(self, key) -> Tensor:
        for k, packed, shape, dtype, unpack in self.items:
            if k == key:
                with A.no_grad():
                    return unpack_one(unpack, packed, shape, dtype)
        raise KeyError(key)


def pack_entry(saved: dict | _Packed, key, dtype, pack: Callable, unpack: Callable) -> _Packed:
    """`saved` with the entry under `key` packed by `pack` (one saved value's own hooks)."""
    if isinstance(saved, _Packed):
        items, raw = list(saved.items), dict(saved.raw)
    else:
        items, raw = [], dict(saved)
    entry = raw.pop(key)
    t = A.saved_tensor(entry)
    if t is None:  # a node's output freed since: its array stands for it
        from ..runtime import device as dev
        t = Tensor._make(entry[0], dtype, dev.backend_of_array(entry[0], dev.cpu_backend()))
    items.append((key, pack_one(pack, t), tuple(entry[0].shape), dtype, unpack))
    return _Packed(items, raw)


def pack_one(pack: Callable, t: Tensor) -> Any:
    """`pack(t)` under no_grad, refusing a hook that writes `t` in place."""
    root = t._base if t._base is not None else t
    before = root._vc[0] if root._vc is not None else 0
    with A.no_grad():
        packed = pack(t)
    if (root._vc[0] if root._vc is not None else 0) != before:
        raise RuntimeError(
            "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
            "to pack hook cannot be modified by in-place operations as this can lead to "
            "unexpected side-effects. Please open an issue if you need to perform in-place "
            "operations on the input to a pack hook.")
    return packed


def unpack_one(unpack: Callable, packed: Any, shape: tuple, dtype) -> Tensor:
    t = unpack(packed)
    if not isinstance(t, Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(t).__name__}")
    if tuple(t._data.shape) != tuple(shape):
        # (the backward graph is specialised to the recorded shapes; PyTorch's formulas would
        # fail to broadcast)
        raise RuntimeError(f"saved tensor unpack_hook returned a tensor of shape "
                           f"{list(t._data.shape)}; the value saved had shape {list(shape)}")
    if t._dtype is not dtype:
        t = t.to(dtype)  # PyTorch's formulas promote; the gradient keeps the forward's dtype
    return t


def _pack_node(node) -> None:
    saved = node.saved
    if type(saved) is not dict:
        return
    pack, unpack = _stack()[-1]
    items = []
    for key, entry in saved.items():
        data, t = entry[0], A.saved_tensor(entry)
        if t is None:  # a custom Function's ctx: its save_for_backward packs for itself
            return
        items.append((key, pack_one(pack, t), tuple(data.shape), t._dtype, unpack))
    node.saved = _Packed(items)


def current_hooks() -> tuple | None:
    """This thread's innermost (pack, unpack), or None."""
    if not _HOOKS_IN_USE:
        return None
    s = _LOCAL.__dict__.get("stack")
    return s[-1] if s else None


# ---------------------------------------------------------------- anomaly mode

ENABLED = False
CHECK_NAN = True
_STACKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # node -> forward stack


def set_anomaly(enabled: bool, check_nan: bool = True) -> None:
    global ENABLED, CHECK_NAN
    ENABLED, CHECK_NAN = bool(enabled), bool(check_nan)
    _refresh()


def _on_record(node) -> None:
    if _fwd.LEVEL is not None:
        _fwd.propagate(node)
    if ENABLED:
        _STACKS[node] = _user_stack()
    if _HOOKS_IN_USE and node.saved is not None:
        s = _LOCAL.__dict__.get("stack")
        if s:
            _pack_node(node)


_PACKAGE = __file__.rsplit("/tracer/", 1)[0]


def _user_stack() -> list:
    """The calling stack without fusetorch's own frames (PyTorch's ops are C++: its stack
    shows the user's lines only)."""
    frames = [f for f in traceback.extract_stack()[:-2] if not f.filename.startswith(_PACKAGE)]
    return traceback.format_list(frames)


def _refresh() -> None:
    A.ON_RECORD = _on_record if (ENABLED or _HOOKS_IN_USE or _fwd.LEVEL is not None) else None
    A.ANOMALY = ENABLED


def _warn_forward(fwd) -> None:
    from .grad_fn import grad_fn_name
    stack = _STACKS.get(fwd)
    where = "".join(stack) if stack else (
        "No forward pass information available. Enable detect anomaly during forward pass for "
        "more information.")
    warnings.warn(f"Error detected in {grad_fn_name(fwd)}. Traceback of forward call that caused "
                  f"the error:\n{where}", UserWarning, stacklevel=4)


def _nan(value) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is None or not (dtype.kind == "f" or dtype.name == "bfloat16") or not value.size:
        return False
    return bool((value != value).any())  # (numpy's and cupy's arrays alike)


class Checker:
    """Told as each backward node starts and ends (the interpreter's hook protocol): after the
    node that is a rule's cotangent for a forward input, a NaN in it raises PyTorch's error."""

    def __init__(self, bw, order: list):
        self.order = order
        self.outputs = {}  # id(backward node) -> (forward position, input index)
        for node, pos, index in bw.rule_outputs:
            self.outputs.setdefault(id(node), (pos, index))
        self.current = None

    def begin(self, node) -> None:
        self.current = node

    def finish(self) -> None:
        pass

    def end(self, node, value=None) -> None:
        hit = self.outputs.get(id(node))
        if hit is not None and CHECK_NAN and value is not None and _nan(value):
            from .grad_fn import grad_fn_name
            pos, index = hit
            fwd = self.order[pos]
            _warn_forward(fwd)
            raise RuntimeError(f"Function '{grad_fn_name(fwd)}' returned nan values in its "
                               f"{index}th output.")

    def failed(self) -> None:
        """An error inside a node: PyTorch's warning naming the forward call."""
        meta = self.current.meta if self.current is not None else None
        pos = meta.get("vjp_of") if meta else None
        if pos is not None and 0 <= pos < len(self.order):
            _warn_forward(self.order[pos])


def run_checked(runner, arrays: list, be, bw, order: list) -> list:
    """Run a backward graph interpreted, node by node, under anomaly mode's checks."""
    checker = Checker(bw, order)
    try:
        return runner.interpreted(arrays, be, hook=checker)
    except RuntimeError as e:
        if "returned nan values" not in str(e):
            checker.failed()
        raise
    except Exception:
        checker.failed()
        raise
