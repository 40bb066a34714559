"""`fusetorch.utils`."""
from . import data  # noqa: F401  (`torch.utils.data.DataLoader` works after `import torch`)
from . import viz  # noqa: F401  (pictures of graphs; Graphviz itself is optional)
from . import dlpack  # noqa: F401  (torch.utils.dlpack)
from . import checkpoint  # noqa: F401,E402  (torch.utils.checkpoint)
from . import hooks  # noqa: F401,E402  (torch.utils.hooks)
from . import benchmark  # noqa: F401,E402  (torch.utils.benchmark)
