"""`fusetorch.amp`: automatic mixed precision, as `torch.amp`: `autocast` (tracer/autocast.py
holds what it casts) and `GradScaler`."""
from . import autocast_mode, grad_scaler  # noqa: F401
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler", "is_autocast_available"]
