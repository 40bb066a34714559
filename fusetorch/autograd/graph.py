"""`torch.autograd.graph`: hooks on the values autograd saves for backward.

`saved_tensors_hooks(pack, unpack)` is what activation-offloading and checkpointing code uses:
inside it, every tensor an op saves for its backward goes through `pack` and only its result is
kept; the backward gets `unpack(result)` back (tracer/autograd_modes.py does both).
"""
from __future__ import annotations

import abc
import contextlib
import threading
from typing import Any, Callable, Iterable, Sequence

from ..tracer import autograd_modes as _modes
from ..tracer.tensor import Tensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "increment_version", "Node", "register_multi_grad_hook"]


class Node(abc.ABC):
    """The type of every `grad_fn` (and of the AccumulateGrad a walk of next_functions ends
    at), for `isinstance(t.grad_fn, torch.autograd.graph.Node)` as graph walkers write it."""

    @abc.abstractmethod
    def name(self) -> str:
        ...

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        ...

    @classmethod
    def __subclasshook__(cls, C):
        if cls is Node:
            from ..tracer.grad_fn import AccumulateGrad, BackwardFunction
            if issubclass(C, (BackwardFunction, AccumulateGrad)):
                return True
        return NotImplemented


class saved_tensors_hooks:
    """Context manager: `pack_hook(tensor)` for each tensor saved for backward inside it,
    `unpack_hook(packed)` when a backward needs it. Both run without recording; the innermost
    pair applies; pairs belong to the calling thread."""

    def __init__(self, pack_hook: Callable[[Tensor], Any],
                 unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        _modes.push_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        _modes.pop_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward (a no-op
    copy for CPU tensors). `pin_memory` is accepted (host memory here is never pinned)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Tensor):
            return (tensor.device, tensor.cpu() if tensor.device.type != "cpu"
                    else tensor.clone())

        def unpack_from_cpu(packed) -> Tensor:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside it (also as a decorator) entering `saved_tensors_hooks` raises
    RuntimeError(error_message); so does entering it while hooks are on."""
    prev = _modes.disable_hooks(error_message)
    try:
        yield
    finally:
        _modes.restore_disabled(prev)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Bump the version counter of `tensor` (or of each tensor given), as an in-place write
    would: backward then refuses values saved before."""
    for t in [tensor] if isinstance(tensor, Tensor) else tensor:
        t._bump_version()


class _MultiHandle:
    """The handle `register_multi_grad_hook` returns: removes the hook from every tensor."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self) -> "_MultiHandle":
        return self

    def __exit__(self, *args: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *,
                             mode: str = "all") -> _MultiHandle:
    """`fn` on the gradients of several tensors, once per backward. mode "all": `fn(grads)`
    with one entry per tensor, None for those whose gradient this backward did not compute,
    called once the backward has computed them all (here: as it finishes, through
    `queue_callback`). mode "any": `fn(grad)` with the first of them computed.

    >>> h = register_multi_grad_hook((a, b), lambda grads: print(len(grads)))
    """
    from ..tracer.autograd import queue_callback
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()  # (backwards in several threads: one call each)
    state: dict = {}  # per backward in progress: the gradients seen, or that "any" ran

    def finish() -> None:
        with lock:
            grads = state.pop("grads", None)
        if mode == "all" and grads is not None:
            fn(tuple(grads))

    def inner(idx: int):
        def hook(grad: Tensor) -> None:
            with lock:
                first = "grads" not in state
                if first:
                    state["grads"] = [None] * len(tensors)
                state["grads"][idx] = grad
            if first:
                queue_callback(finish)
                if mode == "any":
                    fn(grad)
        return hook

    return _MultiHandle(tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors)
                              if t.requires_grad))


_NOT_BUILT = ("GradientEdge", "get_gradient_edge", "allow_mutation_on_saved_tensors")


def __getattr__(name: str):
    if name in _NOT_BUILT:
        raise NotImplementedError(f"fusetorch does not implement torch.autograd.graph.{name} "
                                  "yet")
    raise AttributeError(f"module 'fusetorch.autograd.graph' has no attribute '{name}'")
