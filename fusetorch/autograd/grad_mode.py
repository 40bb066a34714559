"""`torch.autograd.grad_mode`: the grad-mode context managers under the module path scripts
import them from (`from torch.autograd.grad_mode import no_grad`)."""
from __future__ import annotations

from ..tracer.autograd import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "set_multithreading_enabled"]


class set_multithreading_enabled:  # noqa: N801  (PyTorch's name)
    """Whether backward may run on several threads: accepted and without effect here, since
    fusetorch's backward runs on the calling thread. A context manager, as PyTorch's."""

    def __init__(self, mode: bool) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        pass

    def clone(self) -> "set_multithreading_enabled":
        return self.__class__(self.mode)
