"""`torch._inductor.config`: every flag of PyTorch 2.13's inductor configuration, accepted with
its default and ignored. fusetorch.compile is not inductor: its kernels are fused from the IR
by fusetorch's own passes, so autotuning, Triton, C++ and CUDA-graph flags have no meaning here
(setting them changes nothing). Names PyTorch lacks raise AttributeError, as PyTorch's config
does. `fusetorch.compile(options={...})` checks its keys against this table, and
`config.patch(...)` sets flags for a block or a function."""
from .._config_module import install
from ._flags import ALIASES, FLAGS

install(__name__, FLAGS, ALIASES)
