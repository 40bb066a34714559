"""`import torch.quantization` (and its submodules, `from torch.quantization import ...`):
quantization is out of scope. The import itself raises the out-of-scope error that says so, not ModuleNotFoundError."""
from ._out_of_scope import TORCH, missing

raise missing("module 'fusetorch'", "torch", "quantization", TORCH)
