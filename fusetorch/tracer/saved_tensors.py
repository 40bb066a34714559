"""What a grad_fn saved, as PyTorch shows it: `grad_fn._saved_<name>` and `_raw_saved_<name>`.

The names are PyTorch's argument names (`OpDef.saved_names`, by input position; `self` and
`other` where the op declares none) and `result` for the op's own output; a name exists where
the op's VJP reads that value (`OpDef.saves`). A value not saved this time (only what the inputs
needing grad read is saved) is None; an input saved is the input tensor itself, the output a new
tensor equal to it (PyTorch: `y.grad_fn._saved_result is y` is False). After a backward freed
them, access raises PyTorch's RuntimeError. `_raw_saved_<name>` is a `SavedTensor`, whose
`register_hooks(pack, unpack)` packs the value at once and unpacks it at each access (the
attribute or a backward), as the autograd mechanics notes show.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ir.graph import Node
from ..ir.ops import OPS
from ..runtime import device as dev
from . import autograd as A
from . import autograd_modes as _modes
from .tensor import Tensor

_DEFAULT = ("self", "other")


def _names(node: Node) -> dict:
    """name -> the saved value's key in `node.saved` (an input's node id, or the node's own)."""
    d = OPS[node.op]
    if node.meta and "grad_fn" in node.meta:
        return {}  # a composite named for PyTorch's op: its saved values are its primitives'
    save_out, positions = A._save_spec(d.saves, len(node.inputs))
    names = d.saved_names or _DEFAULT
    out = {}
    for i in positions:
        if i < len(names):
            out[names[i]] = i
    if save_out:
        out["result"] = "out"
    return out


def _where(node: Node, name: str):
    where = _names(node).get(name)
    if where is None:
        raise AttributeError(name)
    return where


def unpack(node: Node, name: str) -> Any:
    """`grad_fn._saved_<name>` of `node` (AttributeError where PyTorch's class has none)."""
    where = _where(node, name)
    if where != "out":
        src = node.inputs[where]
        if src.op == "constant":  # a Python number given as the argument
            value = src.attrs["value"]
            number = (src.meta or {}).get("number")  # (the IR holds an int as a float there)
            if number is not None:
                value = number(value)
            if where in OPS[node.op].saved_scalars:
                return value
            from ..ir import dtypes as dt
            from .creation import tensor
            # PyTorch's wrapped number: int64, bool or float64 by the Python type
            kind = dt.bool_ if isinstance(value, bool) else \
                dt.int64 if isinstance(value, int) else dt.float64
            return tensor(value, dtype=kind)
    key = id(node) if where == "out" else id(node.inputs[where])
    saved = node.saved
    if saved is A.FREED:
        raise RuntimeError(A._SECOND_BACKWARD)
    if saved is None:
        return None
    if isinstance(saved, _modes._Packed):
        if saved.holds(key):
            return saved.unpack_key(key)
        saved = saved.raw
    elif type(saved) is not dict:
        saved = saved.materialize(node)  # deferred by torch.utils.checkpoint
    entry = saved.get(key)
    if entry is None:
        return None
    data, vc, version, t = entry
    t = A.saved_tensor(entry)
    if vc is not None and vc[0] != version:
        shown = t if t is not None else Tensor._make(data, node.dtype, None)
        raise RuntimeError(A.modified_message(shown, data.shape, vc[0], version,
                                              node if where == "out" else
                                              getattr(shown, "_node", None)))
    if where == "out":
        be = t._be if t is not None else dev.backend_of_array(data, dev.cpu_backend())
        out = Tensor._make(data, node.dtype, be)
        out._node, out._requires_grad = node, True  # (its grad_fn is the node, as PyTorch's)
        return out
    return t


class SavedTensor:
    """`grad_fn._raw_saved_<name>`: one saved value, whose hooks may be set once."""

    __slots__ = ("_node", "_name")

    def __init__(self, node: Node, name: str):
        _where(node, name)
        self._node, self._name = node, name

    def register_hooks(self, pack_hook: Callable[[Tensor], Any],
                       unpack_hook: Callable[[Any], Tensor]) -> None:
        """Pack the saved value now with `pack_hook`; `unpack_hook(packed)` gives it back at
        each access, a backward's included (then not version-checked: the hooks own it)."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments: expected "
                            "(pack_hook: Callable, unpack_hook: Callable)")
        node, where = self._node, _where(self._node, self._name)
        key = id(node) if where == "out" else id(node.inputs[where])
        saved = node.saved
        if saved is A.FREED:
            raise RuntimeError(A._SECOND_BACKWARD)
        if isinstance(saved, _modes._Packed):
            if saved.holds(key):
                raise RuntimeError(
                    "Calling register_hooks on a saved tensor whose hooks have already been "
                    "set. Hint: only one pair of hooks is allowed at a time.")
            raw = saved.raw
        elif saved is None or type(saved) is dict:
            raw = saved or {}
        else:  # deferred by torch.utils.checkpoint: recomputed now, then packed
            saved = raw = saved.materialize(node)
        if key not in raw:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is "
                               "forbidden")
        node.saved = _modes.pack_entry(saved, key, node.dtype if where == "out" else
                                       node.inputs[where].dtype, pack_hook, unpack_hook)

    def __repr__(self) -> str:
        return f"<torch._C._autograd.SavedTensor object at {hex(id(self))}>"
