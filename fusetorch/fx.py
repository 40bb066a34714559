"""`import torch.fx` (and `from torch.fx import symbolic_trace`): FX graph capture is out of scope
(fusetorch.compile traces by running the function). The import itself raises the out-of-scope
error that says so, not ModuleNotFoundError."""
from ._out_of_scope import TORCH, missing

raise missing("module 'fusetorch'", "torch", "fx", TORCH)
