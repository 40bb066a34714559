"""`torch.distributed.optim`: ZeroRedundancyOptimizer (fusetorch/optim/zero_redundancy.py, an
optimizer, so it lives with the optimizers above this package)."""
from ...optim.zero_redundancy import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
