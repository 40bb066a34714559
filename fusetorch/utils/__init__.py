"""`fusetorch.utils`."""
from . import data  # noqa: F401  (`torch.utils.data.DataLoader` works after `import torch`)
from . import checkpoint  # noqa: F401,E402  (torch.utils.checkpoint)
