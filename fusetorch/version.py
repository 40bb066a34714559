"""`torch.version`: what this build is (fusetorch's own version; no CUDA or ROCm build of
PyTorch: `cuda` is None, and cupy's runtime is asked by `torch.cuda` instead)."""
from .torch_version import TorchVersion

__version__ = TorchVersion("0.1.0")
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
