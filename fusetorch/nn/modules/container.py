"""`torch.nn.modules.container`'s names for the containers, which live in
fusetorch/nn/containers.py."""
from ..containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
