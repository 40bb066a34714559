"""Tensors that execute eagerly and record into the IR."""
from . import autograd as _autograd  # noqa: F401  (registers recording with dispatch)
from . import methods as _methods  # noqa: F401  (binds Tensor's methods and operators)
from . import strided as _strided  # noqa: F401  (binds Tensor.as_strided, storage_offset)
from .tensor import Size, Tensor
from .trace import Recorder, capture, run, trace

__all__ = ["Size", "Tensor", "Recorder", "capture", "run", "trace"]
