"""`fusetorch.autograd`: PyTorch's autograd names, re-exported from the tracer."""
from __future__ import annotations

import warnings

from ..tracer.autograd import (backward, backward_graph_text, enable_grad, forward_graph, grad,
                               inference_mode, is_grad_enabled, no_grad, set_grad_enabled)
from ..tracer.function import Function, FunctionCtx
from ..tracer.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ..tracer.tensor import Tensor, _alias
from . import anomaly_mode, forward_ad, grad_mode, graph  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .grad_mode import set_multithreading_enabled
from ..overrides import handle_torch_function, has_torch_function, is_tensor_like  # noqa: F401
from . import function, functional  # noqa: F401  (torch.autograd.function/functional after
#                                                   `import torch`)


def Variable(tensor: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:
    """The legacy wrapper: returns a Tensor over the same data (Variables and Tensors merged in
    PyTorch 0.4)."""
    if volatile:
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                      "instead.", UserWarning, stacklevel=2)
    t = _alias(tensor)  # shares storage and version counter with `tensor`
    if requires_grad:
        t.requires_grad_(True)
    return t


def is_multithreading_enabled() -> bool:
    """PyTorch's default: True (fusetorch's backward runs on the calling thread either way)."""
    return True


def is_view_replay_enabled() -> bool:
    """PyTorch's default, False: fusetorch has no view-replay mode to turn on."""
    return False


def kineto_available() -> bool:
    """Whether PyTorch's Kineto tracer is present: never here (fusetorch.profiler is its own)."""
    return False


__all__ = ["Function", "FunctionCtx", "GradcheckError", "Variable", "backward",
           "backward_graph_text", "detect_anomaly", "set_detect_anomaly", "enable_grad",
           "forward_graph", "grad", "gradcheck", "gradgradcheck", "inference_mode",
           "is_grad_enabled", "no_grad", "set_grad_enabled", "set_multithreading_enabled"]
