"""Checkpoint formats other than fusetorch's own: PyTorch zip checkpoints (`torch_zip`) and
Hugging Face safetensors (`safetensors_io`); PyTorch's legacy pickle format is only recognised
(`torch_legacy`), to say so. `fusetorch.load` picks the reader from the
file's first bytes; `fusetorch.save(..., format="torch")` writes PyTorch's format."""
from . import safetensors_io, torch_legacy  # noqa: F401
from .safetensors_io import looks_like as looks_like_safetensors  # noqa: F401
from .torch_zip import ZIP_MAGIC, WeightsOnlyError, load_torch, save_torch  # noqa: F401
