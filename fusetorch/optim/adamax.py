"""Adamax: Adam with the infinity norm of past gradients in place of their second moment."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _to_scalar, _traced, lerp_from_end,
                        lerp_into, lerp_weight)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """PyTorch's Adamax. Per parameter at step t, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p
        m = lerp(m, g, 1 - beta1);  u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u

    State: `step`, `exp_avg` (m), `exp_inf` (u). Traced (a compiled training step), the bias
    correction is a tensor op on the step count, so the step compiles without a graph break.
    """

    def __init__(self, params: Iterable, lr: float = 2e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _to_scalar(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
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
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["exp_avg"] = C.zeros_like(p)
                    state["exp_inf"] = C.zeros_like(p)
                step_t = state["step"]
                step_t += 1
                s = _fused.scalars_of(RULE, group, f, step_t if _traced() else step_t.item(),
                                      state)
                _update(p, p.grad, [state["exp_avg"], state["exp_inf"]], s, f)
        return loss


def _flags(group: dict) -> tuple:
    return (("maximize", bool(group["maximize"])), ("weight_decay", group["weight_decay"] != 0),
            ("lerp_from_end", lerp_from_end(group["betas"][0])))


def _names(f: dict) -> tuple:
    return ("weight_decay", "lerp_weight", "beta2", "eps", "neg_clr")


def _scalars(group: dict, f: dict, step) -> tuple:
    beta1, beta2 = group["betas"]
    # traced (a compiled training step): the bias correction is a tensor op on the count
    correction = 1 - (F.pow(beta1, step) if isinstance(step, Tensor) else beta1 ** step)
    return (group["weight_decay"], lerp_weight(beta1, f["lerp_from_end"]), beta2,
            group["eps"], -(_to_scalar(group["lr"]) / correction))


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    if f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    exp_avg, exp_inf = states
    lerp_into(exp_avg, grad, s["lerp_weight"], f["lerp_from_end"])
    F.maximum(exp_inf.mul_(s["beta2"]), grad.abs().add_(s["eps"]), out=exp_inf)
    p.add_(exp_avg * s["neg_clr"] / exp_inf)


RULE = _fused.Rule("adamax", _flags, lambda f: ("exp_avg", "exp_inf"), _names, _scalars,
                   _update)
