"""`torch.autograd.graph`: hooks on the values autograd saves for backward.

`saved_tensors_hooks(pack, unpack)` is what activation-offloading and checkpointing code uses:
inside it, every tensor an op saves for its backward goes through `pack` and only its result is
kept; the backward gets `unpack(result)` back (tracer/autograd_modes.py does both).
"""
from __future__ import annotations

import abc
import contextlib
from typing import Any, Callable, Iterable

from ..tracer import autograd_modes as _modes
from ..tracer.tensor import Tensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "increment_version", "Node"]


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


_NOT_BUILT = ("GradientEdge", "get_gradient_edge", "register_multi_grad_hook",
              "allow_mutation_on_saved_tensors")


def __getattr__(name: str):
    if name in _NOT_BUILT:
        raise NotImplementedError(f"fusetorch does not implement torch.autograd.graph.{name} "
                                  "yet")
    raise AttributeError(f"module 'fusetorch.autograd.graph' has no attribute '{name}'")
