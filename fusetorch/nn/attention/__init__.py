"""`torch.nn.attention`: `SDPBackend` and `sdpa_kernel`, the context manager that restricts
`scaled_dot_product_attention` to some backends. fusetorch computes attention by PyTorch's math
path whatever is chosen; the choice is recorded in `torch.backends.cuda`'s flags, which read
back as PyTorch's do."""
import contextlib
from enum import IntEnum

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """The scaled-dot-product-attention implementations PyTorch chooses among."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_FLAGS = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
          SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable only `backends` (one SDPBackend or a list) inside the block."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(backends)
    if not all(isinstance(b, SDPBackend) for b in backends):
        raise AssertionError("Backend must be an instance of SDPBackend")
    with _cuda._sdp_flags(**{flag: b in backends for b, flag in _FLAGS.items()}):
        yield {}
