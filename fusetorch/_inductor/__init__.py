"""`torch._inductor`: only its `config`, so scripts that tune PyTorch's compiler
(`torch._inductor.config.coordinate_descent_tuning = True`, llm.c) run; fusetorch.compile is
fusetorch's own compiler and reads none of inductor's flags. Any other name raises the
out-of-scope error."""
from . import config  # noqa: F401


def __getattr__(name: str):
    from .._out_of_scope import COMPILER, missing
    raise missing("module 'fusetorch._inductor'", "torch._inductor", name, {name: COMPILER})
