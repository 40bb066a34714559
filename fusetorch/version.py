"""`torch.version`: what this build is. `__version__` names the PyTorch release whose API
fusetorch follows, with fusetorch's own release as the local part ("2.13.0+fusetorch.0.1.0"):
scripts gate features on `torch.__version__ >= "1.x"`, and with fusetorch's "0.1.0" they took
their oldest paths. No CUDA or ROCm build of PyTorch: `cuda` is None, and cupy's runtime is
asked by `torch.cuda` instead."""
from .torch_version import TorchVersion

fusetorch = "0.1.0"  # this package's release (pyproject.toml)
__version__ = TorchVersion("2.13.0+fusetorch." + fusetorch)
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
