"""`fusetorch.nn`: modules, parameters, layers, losses, `functional` and `init`."""
from . import attention, common_types, functional, grad, init, parallel, utils  # noqa: F401
from .containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module, RemovableHandle
from .modules import *  # noqa: F401,F403
from .modules.linear_cross_entropy_options import LinearCrossEntropyOptions
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter


def factory_kwargs(kwargs: dict | None) -> dict:
    """The `device`/`dtype`/`memory_format` of a module's **kwargs (or its `factory_kwargs`
    entry) as one dict for factory functions; any other key is PyTorch's TypeError."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    if not kwargs.keys() <= simple | {"factory_kwargs"}:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - simple - {'factory_kwargs'}}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in out:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            out[k] = kwargs[k]
    return out


def __getattr__(name: str):
    from .._out_of_scope import NN, missing
    raise missing("module 'fusetorch.nn'", "torch.nn", name, NN)
