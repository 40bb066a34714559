"""`fusetorch.cpu.amp`: PyTorch's deprecated CPU spellings of `torch.amp`."""
from __future__ import annotations

import warnings

from ..amp import autocast_mode as _mode, grad_scaler as _scaler
from ..ir import dtypes as _dt


class autocast(_mode.autocast):  # noqa: N801
    """`torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype: _dt.DType = _dt.bfloat16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_scaler.GradScaler):
    """`torch.cpu.amp.GradScaler(...)`: `torch.amp.GradScaler("cpu", ...)`."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
