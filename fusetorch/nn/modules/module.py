"""`torch.nn.modules.module`'s names for the base class (fusetorch/nn/module.py) and the hook
handle (fusetorch/_hooks.py)."""
from ..._hooks import RemovableHandle
from ..module import Module

__all__ = ["Module", "RemovableHandle"]
