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


def set_device(device) -> None:
    """Make `device` the current CUDA device (its index must exist)."""
    be = _backend(device)
    cp = _dev._cupy()
    if cp is not None:
        cp.cuda.Device(be.device.index).use()


class device:
    """`with torch.cuda.device(i):`: device `i` is current inside (None or -1: no change)."""

    def __init__(self, device):
        self.idx = -1 if device is None else device if isinstance(device, int) else \
            (_dev.device(device).index or 0)
        self._prev = None

    def __enter__(self) -> None:
        cp = _dev._cupy()
        if self.idx >= 0 and cp is not None:
            self._prev = cp.cuda.Device().id
            cp.cuda.Device(self.idx).use()

    def __exit__(self, *exc) -> None:
        if self._prev is not None:
            _dev._cupy().cuda.Device(self._prev).use()


class device_of(device):
    """`with torch.cuda.device_of(t):`: the device holding `t` is current (a CPU tensor: no
    change)."""

    def __init__(self, obj):
        super().__init__(obj.device.index if obj.device.type == "cuda" else -1)


class _DeviceProperties:
    """What `get_device_properties` tells of a GPU (PyTorch's field names)."""

    def __init__(self, props: dict, index: int):
        def text(v):
            return v.decode() if isinstance(v, bytes) else str(v)
        self.name = text(props["name"])
        self.major, self.minor = int(props["major"]), int(props["minor"])
        self.total_memory = int(props["totalGlobalMem"])
        self.multi_processor_count = int(props["multiProcessorCount"])
        self.is_integrated = bool(props.get("integrated", 0))
        self.is_multi_gpu_board = bool(props.get("isMultiGpuBoard", 0))
        self.index = index

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2**20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None) -> _DeviceProperties:
    be = _backend(device)
    if be.xp.__name__ != "cupy":
        raise RuntimeError("get_device_properties needs a real CUDA device (cupy)")
    return _DeviceProperties(be.xp.cuda.runtime.getDeviceProperties(be.device.index),
                             be.device.index)


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the device's memory, as the driver reports them."""
    be = _backend(device)
    if be.xp.__name__ != "cupy":
        return (0, 0)
    with be.xp.cuda.Device(be.device.index):
        free, total = be.xp.cuda.runtime.memGetInfo()
    return int(free), int(total)


def _cuda_generator():
    from ..runtime.eager import CUDA_GENERATOR
    from ..tracer.creation import Generator
    g = Generator.__new__(Generator)
    g._g, g.device = CUDA_GENERATOR, _dev.device("cuda", 0)
    return g


def get_rng_state(device="cuda"):
    """The CUDA generator's state as a uint8 tensor (one generator serves every device)."""
    _backend(None if device == "cuda" else device)
    return _cuda_generator().get_state()


def set_rng_state(new_state, device="cuda") -> None:
    _backend(None if device == "cuda" else device)
    _cuda_generator().set_state(new_state)


def get_rng_state_all() -> list:
    """One state per device ([] without a device, as PyTorch's CPU build answers)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def memory_stats(device=None) -> dict:
    """PyTorch's allocator statistics that cupy's pool can give (an empty dict without a
    device, as PyTorch's CPU build answers)."""
    import collections
    if not is_available():
        return collections.OrderedDict()
    now, held = memory_allocated(device), memory_reserved(device)
    return collections.OrderedDict([
        ("allocated_bytes.all.current", now), ("allocated_bytes.all.peak",
                                               max_memory_allocated(device)),
        ("reserved_bytes.all.current", held), ("reserved_bytes.all.peak",
                                              max_memory_reserved(device))])


def memory_summary(device=None, abbreviated: bool = False) -> str:
    stats = memory_stats(device)
    if not stats:
        return "No CUDA device: no memory statistics."
    return "\n".join(f"{k:<32} {v // 2**20:>10} MiB" for k, v in stats.items())


memory_cached = memory_reserved  # (PyTorch's deprecated names)
max_memory_cached = max_memory_reserved
reset_max_memory_cached = reset_peak_memory_stats
reset_accumulated_memory_stats = reset_peak_memory_stats


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap the memory pool at `fraction` of the device's memory."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    be = _backend(device)
    if be.xp.__name__ == "cupy":
        be.xp.get_default_memory_pool().set_limit(fraction=fraction)


def init() -> None:
    """Initialise CUDA (cupy does it when first used): raises without a device."""
    _backend(None)


def ipc_collect() -> None:
    _backend(None)


def is_current_stream_capturing() -> bool:
    return False  # fusetorch captures no CUDA graphs


def get_sync_debug_mode() -> int:
    return 0


def set_sync_debug_mode(debug_mode) -> None:
    if debug_mode not in (0, 1, 2, "default", "warn", "error"):
        raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                           "`error`")


has_half = True
default_generators: tuple = ()  # (filled per device by PyTorch; the generator is host-side)



class AcceleratorError(RuntimeError):
    """An error an accelerator reports."""


class OutOfMemoryError(RuntimeError):
    """An allocation an accelerator could not make (`torch.cuda.OutOfMemoryError`)."""


AcceleratorError.__module__ = OutOfMemoryError.__module__ = "fusetorch"  # (PyTorch: torch.*)


from .streams import Event, Stream, StreamContext, current_stream, default_stream, stream  # noqa: E402,F401,E501
from . import amp, nvtx  # noqa: E402,F401  (torch.cuda.amp: autocast, GradScaler)

_GRAPHS = "CUDA graphs (fusetorch.compile builds and replays its own kernels)"
_OUT_OF_SCOPE = {name: _GRAPHS for name in ("CUDAGraph", "graph", "graphs", "graph_pool_handle",
                                             "make_graphed_callables")}
_OUT_OF_SCOPE.update({name: "custom CUDA allocators and memory pools" for name in (
    "MemPool", "CUDAPluggableAllocator", "change_current_allocator", "caching_allocator_alloc",
    "caching_allocator_delete", "use_mem_pool")})


def __getattr__(name: str):
    import sys
    from .._out_of_scope import missing
    raise missing("module 'fusetorch.cuda'", "torch.cuda", name, _OUT_OF_SCOPE,
                  obj=sys.modules[__name__])

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
