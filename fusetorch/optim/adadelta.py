"""Adadelta: steps scaled by the ratio of running RMS of past updates and of gradients."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer.tensor import Tensor
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
            if _fused.step_group(self, group, RULE):  # one kernel for the whole group
                continue
            f = dict(_flags(group))
            s = _fused.scalars_of(RULE, group, f, None, None)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["square_avg"] = C.zeros_like(p)
                    state["acc_delta"] = C.zeros_like(p)
                state["step"] += 1
                _update(p, p.grad, [state["square_avg"], state["acc_delta"]], s, f)
        return loss


def _flags(group: dict) -> tuple:
    return (("maximize", bool(group["maximize"])), ("weight_decay", group["weight_decay"] != 0))


def _names(f: dict) -> tuple:
    return ("neg_lr", "weight_decay", "rho", "one_minus_rho", "eps")


def _scalars(group: dict, f: dict, step) -> tuple:
    rho = group["rho"]
    return (-_to_scalar(group["lr"]), group["weight_decay"], rho, 1 - rho, group["eps"])


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    if f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    square_avg, acc_delta = states
    square_avg.mul_(s["rho"]).add_(grad * s["one_minus_rho"] * grad)
    std = square_avg.add(s["eps"]).sqrt_()
    delta = acc_delta.add(s["eps"]).sqrt_().div_(std).mul_(grad)
    acc_delta.mul_(s["rho"]).add_(delta * s["one_minus_rho"] * delta)
    p.add_(delta * s["neg_lr"])


RULE = _fused.Rule("adadelta", _flags, lambda f: ("square_avg", "acc_delta"), _names, _scalars,
                   _update)
