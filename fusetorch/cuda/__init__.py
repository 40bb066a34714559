"""`fusetorch.cuda`: what the CUDA device offers. cupy is imported only when asked for.

Without cupy or without a GPU `is_available()` is False and `device_count()` is 0; the calls that
need a device then raise PyTorch's "no NVIDIA driver" RuntimeError, and seeding is a no-op (as
PyTorch seeds lazily).
"""
from __future__ import annotations

from ..runtime import device as _dev
from ..runtime.device import cuda_available


def is_available() -> bool:
    """True when cupy imports and sees at least one GPU."""
    return cuda_available()


def device_count() -> int:
    return _dev.cuda_device_count()


def _backend(device=None) -> _dev.Backend:
    if device is None:
        return _dev.backend("cuda:0")
    if isinstance(device, int):
        return _dev.backend(f"cuda:{device}")
    d = _dev.device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return _dev.backend(d)


def current_device() -> int:
    """The index of the device a bare 'cuda' means (always 0: one device is used)."""
    return _backend().device.index


def synchronize(device=None) -> None:
    """Wait until every kernel queued on the device has finished."""
    be = _backend(device)
    if be.xp.__name__ == "cupy":
        with be.xp.cuda.Device(be.device.index):
            be.xp.cuda.runtime.deviceSynchronize()


def get_device_name(device=None) -> str:
    be = _backend(device)
    if be.xp.__name__ != "cupy":
        return f"{be.xp.__name__} (a stand-in for a CUDA device)"
    name = be.xp.cuda.runtime.getDeviceProperties(be.device.index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple:
    be = _backend(device)
    if be.xp.__name__ != "cupy":
        return (0, 0)
    cc = be.xp.cuda.Device(be.device.index).compute_capability  # '90'
    return int(cc[:-1]), int(cc[-1])


def manual_seed(seed: int) -> None:
    """Seed the generator CUDA tensors draw from (rand/randn/randint with device='cuda')."""
    from ..runtime.eager import CUDA_GENERATOR
    CUDA_GENERATOR.seed(int(seed))


manual_seed_all = manual_seed  # one generator serves every device


def seed() -> None:
    import numpy as np
    manual_seed(np.random.SeedSequence().entropy & (2**63 - 1))


seed_all = seed


def initial_seed() -> int:
    from ..runtime.eager import CUDA_GENERATOR
    return CUDA_GENERATOR.initial


def empty_cache() -> None:
    """Return cupy's cached, unused device memory to the driver (nothing without a device)."""
    cp = _dev._cupy()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by live arrays (cupy's pool); 0 without a device."""
    cp = _dev._cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().used_bytes())


_PEAK = {"allocated": 0, "reserved": 0}  # since the last reset_peak_memory_stats


def memory_reserved(device=None) -> int:
    """Bytes of device memory cupy's pool holds (live and cached); 0 without a device."""
    cp = _dev._cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().total_bytes())


def max_memory_allocated(device=None) -> int:
    """The most device memory live arrays have held since the last reset, as far as fusetorch
    sees it: cupy keeps no peak, so the pool's holding (which grows to the peak and keeps it
    cached) bounds it from above. 0 without a device, as PyTorch's CPU build answers."""
    _PEAK["allocated"] = max(_PEAK["allocated"], memory_allocated(device),
                             memory_reserved(device))
    return _PEAK["allocated"]


def max_memory_reserved(device=None) -> int:
    """The most the memory pool has held since the last reset; 0 without a device."""
    _PEAK["reserved"] = max(_PEAK["reserved"], memory_reserved(device))
    return _PEAK["reserved"]


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks of max_memory_allocated/max_memory_reserved afresh from now."""
    _PEAK["allocated"], _PEAK["reserved"] = memory_allocated(device), memory_reserved(device)


reset_max_memory_allocated = reset_peak_memory_stats


def is_initialized() -> bool:
    """Whether a CUDA device is in use (False without one, as PyTorch's CPU build answers)."""
    return is_available()


def get_arch_list() -> list:
    """The compute architectures kernels are built for: the GPU's own (fusetorch compiles for
    the device it runs on); [] without one."""
    if not is_available():
        return []
    major, minor = get_device_capability()
    return [f"sm_{major}{minor}"]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the GPU computes in bfloat16 (compute capability 8.0 or later); False without
    one, as PyTorch answers."""
    return is_available() and get_device_capability()[0] >= 8


from . import amp  # noqa: E402,F401  (torch.cuda.amp: autocast, GradScaler)

from ..tracer.creation import CUDA_LEGACY as _CUDA_LEGACY  # noqa: E402

FloatTensor = _CUDA_LEGACY["FloatTensor"]
DoubleTensor = _CUDA_LEGACY["DoubleTensor"]
HalfTensor = _CUDA_LEGACY["HalfTensor"]
BFloat16Tensor = _CUDA_LEGACY["BFloat16Tensor"]
LongTensor = _CUDA_LEGACY["LongTensor"]
IntTensor = _CUDA_LEGACY["IntTensor"]
ShortTensor = _CUDA_LEGACY["ShortTensor"]
CharTensor = _CUDA_LEGACY["CharTensor"]
ByteTensor = _CUDA_LEGACY["ByteTensor"]
BoolTensor = _CUDA_LEGACY["BoolTensor"]
