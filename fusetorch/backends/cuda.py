"""`torch.backends.cuda`: the matmul precision switches and the scaled-dot-product-attention
backend flags (`enable_flash_sdp`, `sdp_kernel`, `torch.nn.attention.sdpa_kernel` sets them).
fusetorch's attention is always PyTorch's math path, so the flags are kept, read back, and
change nothing."""
import contextlib
import warnings
from types import SimpleNamespace

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)

# flash, mem_efficient, math, cudnn: PyTorch's defaults (all on)
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    return True


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = bool(enabled)


@contextlib.contextmanager
def _sdp_flags(**flags):
    prior = dict(_SDP)
    _SDP.update(flags)
    try:
        yield
    finally:
        _SDP.clear()
        _SDP.update(prior)


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """The deprecated context manager that enables the listed attention backends only."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=2)
    return _sdp_flags(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                      cudnn=enable_cudnn)
