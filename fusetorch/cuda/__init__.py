"""`fusetorch.cuda`: what the CUDA device offers. cupy is imported only when asked for."""
from ..runtime.device import cuda_available


def is_available() -> bool:
    """True when cupy imports and sees at least one GPU."""
    return cuda_available()


def device_count() -> int:
    if not cuda_available():
        return 0
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())
