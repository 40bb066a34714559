"""`fusetorch.nn.parallel`: data-parallel training over `fusetorch.distributed`."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
