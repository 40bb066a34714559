"""`torch.utils.hooks`: the handle hook registrations return."""
from .._hooks import RemovableHandle

__all__ = ["RemovableHandle"]
