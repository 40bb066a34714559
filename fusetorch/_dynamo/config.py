"""`torch._dynamo.config`: every flag of PyTorch 2.13's dynamo configuration, accepted with its
default and ignored (fusetorch.compile does not capture bytecode; it always falls back to eager
at a graph break, as `suppress_errors = True` asks). Names PyTorch lacks raise AttributeError,
as PyTorch's config does."""
from .._config_module import install
from ._flags import ALIASES, FLAGS

install(__name__, FLAGS, ALIASES)
