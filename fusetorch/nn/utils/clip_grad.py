"""Gradient clipping, as `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`."""
from __future__ import annotations

import math
from typing import Iterable

from ...tracer import functional as F
from ...tracer.autograd import no_grad
from ...tracer.creation import tensor
from ...tracer.tensor import Tensor


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale all gradients together so that their joint norm is at most `max_norm`; returns the
    norm before clipping."""
    grads = _grads(parameters)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [F.amax(F.abs(g)) for g in grads]
            total = norms[0] if len(norms) == 1 else F.amax(F.stack(norms))
        else:
            norms = [F.sum(F.abs(g) ** norm_type) for g in grads]
            total = F.stack(norms).sum() ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To disable "
                               "this error and scale the gradients by the non-finite norm "
                               "anyway, set `error_if_nonfinite=False`")
        coef = F.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach=None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
