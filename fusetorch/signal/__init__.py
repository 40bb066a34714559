"""torch.signal: window functions (`torch.signal.windows`)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
