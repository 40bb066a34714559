"""`tensor.grad_fn`: a read-only view of a recorded node with PyTorch's names.

`y.grad_fn` prints as `<AddBackward0 object at ...>` and `y.grad_fn.next_functions` walks to
the producers of its inputs (`AccumulateGrad` for leaves), as in the tutorials. Composites made
of several primitives (mean, var, t, ...) carry their PyTorch name in `node.meta['grad_fn']`.
"""
from __future__ import annotations

from ..ir.graph import Node
from ..ir.ops import OPS

def grad_fn_name(node: Node) -> str:
    meta = node.meta or {}
    if "grad_fn" in meta:
        return meta["grad_fn"]
    op = node.op
    special = OPS[op].grad_name  # declared with the op (ir/ops.py, ir/elementwise.py)
    if special is not None:
        return special if isinstance(special, str) else special(node)
    return "".join(p.capitalize() for p in op.split("_")) + "Backward0"


class BackwardFunction:
    """What `grad_fn` returns; one subclass per PyTorch name so `type(f).__name__` matches."""

    __slots__ = ("_node",)

    def __init__(self, node: Node):
        self._node = node

    def name(self) -> str:
        n = type(self).__name__
        return "torch::autograd::CopySlices" if n == "CopySlices" else n

    @property
    def next_functions(self) -> tuple:
        meta = self._node.meta or {}
        inputs = meta["inputs"] if "inputs" in meta else self._node.inputs
        return tuple((_function_of(n), 0) for n in inputs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def __getattr__(self, name: str):
        # (only for names the slots lack: `_saved_self`, `_raw_saved_result`, ...)
        from . import saved_tensors
        try:
            if name.startswith("_raw_saved_"):
                return saved_tensors.SavedTensor(self._node, name[len("_raw_saved_"):])
            if name.startswith("_saved_"):
                return saved_tensors.unpack(self._node, name[len("_saved_"):])
        except AttributeError:
            pass
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def register_prehook(self, fn):
        """`fn(grad_outputs) -> tuple | None` before this node runs in a backward (after the
        hooks of the tensor it made); a returned tuple replaces `grad_outputs`."""
        from .autograd import NODE_PRE_HOOKS, add_node_hook
        return add_node_hook(self._node, NODE_PRE_HOOKS, fn)

    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs) -> tuple | None` after this node ran in a backward;
        `grad_inputs` has one entry per input of the node (None where no gradient flows), and a
        returned tuple of that length replaces them."""
        from .autograd import NODE_POST_HOOKS, add_node_hook
        return add_node_hook(self._node, NODE_POST_HOOKS, fn)

    def __eq__(self, other) -> bool:
        return isinstance(other, BackwardFunction) and other._node is self._node

    def __hash__(self) -> int:
        return hash(id(self._node))


class AccumulateGrad:
    """The end of a walk: where a leaf's gradient is accumulated."""

    def __init__(self, variable):
        self.variable = variable

    next_functions = ()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


_CLASSES: dict[str, type] = {}


def _function_of(n: Node | None):
    if n is None or n.op == "constant":
        return None
    if n.op == "input":
        ref = (n.meta or {}).get("leaf")
        leaf = ref() if ref is not None else None
        return AccumulateGrad(leaf) if leaf is not None and leaf.requires_grad else None
    return grad_fn(n)


def grad_fn(node: Node) -> BackwardFunction:
    name = grad_fn_name(node)
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (BackwardFunction,), {"__slots__": ()})
    return cls(node)
