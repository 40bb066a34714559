"""`fusetorch.nn`: modules, parameters, layers, losses, `functional` and `init`."""
from . import functional, init, parallel, utils  # noqa: F401
from .containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module, RemovableHandle
from .modules import *  # noqa: F401,F403
from .modules.linear_cross_entropy_options import LinearCrossEntropyOptions
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter


def __getattr__(name: str):
    from .._out_of_scope import NN, missing
    raise missing("module 'fusetorch.nn'", "torch.nn", name, NN)
