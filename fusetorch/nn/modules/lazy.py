"""`LazyModuleMixin`: layers whose parameter shapes are read from their first input.

A lazy layer holds `UninitializedParameter`/`UninitializedBuffer` placeholders. A forward
pre-hook calls `initialize_parameters(*input)` on the first call, which materializes each
placeholder in place (the same objects: an optimizer made before the first forward keeps
optimizing them), then the hook goes and the layer becomes its `cls_to_become` (LazyLinear ->
Linear). `load_state_dict` materializes placeholders from the checkpoint's shapes instead
(`Module.load_state_dict`); the layer becomes its regular class at its next forward.
"""
from __future__ import annotations

from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a layer class: `class LazyLinear(LazyModuleMixin, Linear)`."""

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether any of this module's own parameters or buffers is still a placeholder."""
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")


def _infer_parameters(module, args):
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
