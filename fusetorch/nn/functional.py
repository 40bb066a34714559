"""`fusetorch.nn.functional`: the functional form of each layer and loss.

Every function is composed from tensor operations (so autograd and the compiler see ordinary
primitives); the implementations live in `_functional/`, one family per file.
"""
from ._functional.activation import *  # noqa: F401,F403
from ._functional.conv import *  # noqa: F401,F403
from ._functional.ctc import *  # noqa: F401,F403
from ._functional.distance import *  # noqa: F401,F403
from ._functional.conv_transpose import *  # noqa: F401,F403
from ._functional.dropout import *  # noqa: F401,F403
from ._functional.fold import *  # noqa: F401,F403
from ._functional.fractional_pooling import *  # noqa: F401,F403
from ._functional.grid_sample import *  # noqa: F401,F403
from ._functional.interpolate import *  # noqa: F401,F403
from ._functional.linear import *  # noqa: F401,F403
from ._functional.linear_cross_entropy import *  # noqa: F401,F403
from ._functional.loss import *  # noqa: F401,F403
from ._functional.normalization import *  # noqa: F401,F403
from ._functional.padding import *  # noqa: F401,F403
from ._functional.pixel_shuffle import *  # noqa: F401,F403
from ._functional.pooling import *  # noqa: F401,F403
from ._functional.pooling3d import *  # noqa: F401,F403
from ._functional.ranking import *  # noqa: F401,F403
from ._functional.sparse import *  # noqa: F401,F403
from ._functional.attention import *  # noqa: F401,F403
from ._functional.helpers import *  # noqa: F401,F403
from . import grad  # noqa: F401,E402  (torch.nn.functional.grad is torch.nn.grad)
# names PyTorch's nn/functional.py has from its own imports (scripts annotate with F.Tensor)
import dataclasses  # noqa: F401,E402
import importlib  # noqa: F401,E402
import math  # noqa: F401,E402
import warnings  # noqa: F401,E402
from typing import TYPE_CHECKING, Callable, Optional  # noqa: F401,E402

import numpy as np  # noqa: F401,E402

DType = int  # (PyTorch's nn.functional names a dtype code so)
from ..tracer.tensor import Tensor  # noqa: F401,E402
from ._functional.attention import _canonical_mask, _none_or_dtype  # noqa: F401


def __getattr__(name: str):
    from .._out_of_scope import FUNCTIONAL, missing
    raise missing("module 'fusetorch.nn.functional'", "torch.nn.functional", name, FUNCTIONAL)
