"""`torch.nn.modules.module`'s name for the base class, which lives in fusetorch/nn/module.py."""
from ..module import Module

__all__ = ["Module"]
