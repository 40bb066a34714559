"""Adadelta: steps scaled by the ratio of running RMS of past updates and of gradients."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _to_scalar)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """PyTorch's Adadelta. Per parameter, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    State: `step`, `square_avg` (v), `acc_delta` (u). No step-dependent scalars, so a compiled
    training step needs no graph break.
    """

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _to_scalar(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        _group_defaults_and_tensor_state(self, (("foreach", None), ("maximize", False),
                                                ("differentiable", False),
                                                ("capturable", False)))

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if _fused.step_group(self, group, "adadelta"):  # one kernel for the whole group
                continue
            lr = _to_scalar(group["lr"])
            rho, eps, wd = group["rho"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["square_avg"] = C.zeros_like(p)
                    state["acc_delta"] = C.zeros_like(p)
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
