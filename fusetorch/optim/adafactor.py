"""Adafactor (Shazeer and Stern, 2018): Adam's second moment kept as a row and a column factor."""
from __future__ import annotations

import math
from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer.tensor import Tensor
from ..tracer.type_info import finfo
from .optimizer import (Optimizer, _group_defaults_and_tensor_state, _new_step, _no_grad_step,
                        _to_scalar)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """PyTorch's Adafactor. Per parameter p at step t, with g the gradient (negated if
    `maximize`) and RMS(x) = ||x|| / sqrt(numel):

        b = t ** beta2_decay                      (the weight of the new second moment)
        alpha = max(eps2, RMS(p)) * min(lr, 1 / sqrt(t))
        p = p * (1 - lr * weight_decay)
        2-d and up: r = lerp(r, mean(g*g, -1), b);  c = lerp(c, mean(g*g, -2), b)
                    v = r @ c / max(mean(r, -2), eps1)
        otherwise:  v = lerp(v, g*g, b)
        u = g / sqrt(max(v, eps1 ** 2));  p = p - alpha / max(1, RMS(u) / d) * u

    eps1 None means the parameter dtype's machine epsilon. State: `step`, and `row_var` and
    `col_var` (the last dimension, and the one before it, of size 1) for a gradient of two or
    more dimensions, else `variance`.
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        _group_defaults_and_tensor_state(self, (("foreach", None),))

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("Adafactor does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    g = p.grad
                    if g.dim() > 1:
                        state["row_var"] = g.new_zeros(tuple(g.shape[:-1]) + (1,))
                        state["col_var"] = g.new_zeros(tuple(g.shape[:-2]) + (1, g.shape[-1]))
                    else:
                        state["variance"] = C.zeros_like(g)
                state["step"] += 1
                _update(p, p.grad, state, group)
        return loss


def _rms(t: Tensor) -> float:
    return t.norm(2).item() / math.sqrt(t.numel())


def _update(p: Tensor, grad: Tensor, state: dict, group: dict) -> None:
    lr = _to_scalar(group["lr"])
    eps1, eps2 = group["eps"]
    if eps1 is None:
        eps1 = finfo(p.dtype).eps
    if group["maximize"]:
        grad = -grad
    t = state["step"].item()
    new_weight = t ** group["beta2_decay"]
    alpha = max(eps2, _rms(p)) * min(lr, 1 / math.sqrt(t))  # (from p before the decay)
    if group["weight_decay"] != 0:
        p.mul_(1 - lr * group["weight_decay"])
    if grad.dim() > 1:
        row_var, col_var = state["row_var"], state["col_var"]
        # mean(g * g) along a dimension as a squared norm: no g-sized temporary
        row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1]), new_weight)
        col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2]), new_weight)
        v = (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    else:
        variance = state["variance"]
        variance.lerp_(grad * grad, new_weight)
        v = variance.clone()
    u = v.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
    p.add_(u, alpha=-alpha / max(1.0, _rms(u) / group["d"]))
