"""`torch.random`: the default generator's seed and state, and `fork_rng`."""
from __future__ import annotations

import contextlib
from typing import Iterator

from ._global_state import (default_generator, get_rng_state, set_rng_state,
                            thread_safe_generator)
from .tracer.creation import Generator, initial_seed, manual_seed, seed

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state", "thread_safe_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Run the block with the random state saved on entry and restored on exit (the CPU
    generator's, and the CUDA stream's when CUDA tensors exist), so draws inside do not change
    what comes after."""
    if not enabled:
        yield
        return
    from .runtime import eager
    cuda_state = eager.CUDA_GENERATOR.np.bit_generator.state, eager.CUDA_GENERATOR.initial
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
        eager.CUDA_GENERATOR.np.bit_generator.state = cuda_state[0]
        eager.CUDA_GENERATOR.initial = cuda_state[1]
