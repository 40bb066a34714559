"""`import torch.ao` (and its submodules, `from torch.ao import ...`): quantization is out of
scope. The import itself raises the out-of-scope error that says so, not ModuleNotFoundError."""
from ._out_of_scope import TORCH, missing

raise missing("module 'fusetorch'", "torch", "ao", TORCH)
