"""`fusetorch.nn`: modules, parameters, layers, losses, `functional` and `init`."""
from . import functional, init, parallel, utils  # noqa: F401
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module, RemovableHandle
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter
