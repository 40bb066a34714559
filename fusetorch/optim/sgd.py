"""Stochastic gradient descent with optional momentum, dampening, Nesterov, weight decay."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import Optimizer, _check_differentiable, _no_grad_step, _to_scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """PyTorch's SGD. Per parameter, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p
        buf = g (first step), else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf      (when momentum != 0)
        p = p - lr * g

    State: `momentum_buffer` (only when momentum != 0).
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _to_scalar(lr)  # checks a Tensor lr has one element
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_differentiable(defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

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
                if f["momentum"]:
                    state = self.state[p]
                    states = [state.get("momentum_buffer")]
                    _update(p, p.grad, states, s, f)
                    state["momentum_buffer"] = states[0]  # (made by the first step)
                else:
                    _update(p, p.grad, [], s, f)
        return loss


def _flags(group: dict) -> tuple:
    momentum = group["momentum"] != 0
    return (("maximize", bool(group["maximize"])), ("weight_decay", group["weight_decay"] != 0),
            ("momentum", momentum), ("nesterov", momentum and bool(group["nesterov"])))


def _names(f: dict) -> tuple:
    return ("neg_lr", "weight_decay", "momentum", "one_minus_dampening")


def _scalars(group: dict, f: dict, step) -> tuple:
    return (-_to_scalar(group["lr"]), group["weight_decay"], group["momentum"],
            1 - group["dampening"])


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    """One parameter's step; the first with momentum finds no buffer (None) in `states` and
    puts there the one it makes, the gradient's copy."""
    if f["maximize"]:
        grad = -grad
    if f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    if f["momentum"]:
        buf = states[0]
        if buf is None:
            buf = states[0] = grad.detach().clone()
        else:
            buf.mul_(s["momentum"]).add_(grad * s["one_minus_dampening"])
        grad = grad + buf * s["momentum"] if f["nesterov"] else buf
    p.add_(grad * s["neg_lr"])


RULE = _fused.Rule("sgd", _flags, lambda f: ("momentum_buffer",) if f["momentum"] else (),
                   _names, _scalars, _update, counts_steps=False)
