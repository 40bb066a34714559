"""`torch.autograd.detect_anomaly` / `set_detect_anomaly`: a backward whose rule returns NaN
raises, naming the forward op and warning with the stack of its forward call (the checks live
in tracer/autograd_modes.py; the mode is process-wide, as PyTorch's)."""
from __future__ import annotations

import warnings

from ..tracer import autograd_modes as _modes

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class detect_anomaly:
    """Context manager: anomaly detection on inside it (`check_nan=False`: forward stacks
    only, no NaN checks)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = _modes.ENABLED
        self.check_nan = check_nan
        self.prev_check_nan = _modes.CHECK_NAN
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        _modes.set_anomaly(True, self.check_nan)

    def __exit__(self, *args: object) -> bool:
        _modes.set_anomaly(self.prev, self.prev_check_nan)
        return False


class set_detect_anomaly:
    """`set_detect_anomaly(True)` turns it on at once; as a context manager the previous
    setting comes back at exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _modes.ENABLED
        self.prev_check_nan = _modes.CHECK_NAN
        _modes.set_anomaly(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        _modes.set_anomaly(self.prev, self.prev_check_nan)
