"""`torch.utils.dlpack`: `from_dlpack`, `to_dlpack` (a legacy capsule) and `DLDeviceType`;
the machinery is `fusetorch/tracer/dlpack.py`."""
from ..tracer.dlpack import DLDeviceType, from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
