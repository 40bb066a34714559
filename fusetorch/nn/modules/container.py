"""`torch.nn.modules.container`'s names for the containers, which live in
fusetorch/nn/containers.py."""
from ..containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]
