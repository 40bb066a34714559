"""`fusetorch.utils`."""
from . import data  # noqa: F401  (`torch.utils.data.DataLoader` works after `import torch`)
