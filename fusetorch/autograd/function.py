"""`torch.autograd.function`: the custom Function classes and `once_differentiable`, at the
path custom-op code imports them from."""
from __future__ import annotations

import functools
from typing import Callable

from ..tracer.autograd import is_grad_enabled, no_grad
from ..tracer.function import Function, FunctionCtx
from ..tracer.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


def once_differentiable(fn: Callable) -> Callable:
    """Mark a custom Function's `backward` as differentiable once: it runs without recording.
    PyTorch lets a `create_graph=True` backward through it finish and raises only when its
    result is differentiated again; here that result would silently carry no gradient, so a
    `create_graph=True` backward that reaches it raises at once, with PyTorch's message."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        if is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args):
            raise RuntimeError("trying to differentiate twice a function that was marked with "
                               "@once_differentiable")
        with no_grad():
            return fn(ctx, *args)

    return wrapper
