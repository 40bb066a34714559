"""`torch.backends`: the switches scripts set for vendor libraries (`cudnn.benchmark = True`,
`cuda.matmul.allow_tf32`, `mps.is_available()`). fusetorch calls none of those libraries, so the
switches are kept (a script may read them back) and change nothing."""
from types import SimpleNamespace

from . import cuda, cudnn, mps  # noqa: F401
# oneDNN: fusetorch's CPU kernels do not use it, so is_available() is False and the switches
# (`torch.backends.mkldnn.enabled = False` in old scripts) are kept as set
mkldnn = SimpleNamespace(is_available=lambda: False, enabled=True, deterministic=False)
