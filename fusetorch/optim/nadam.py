"""NAdam: Adam with Nesterov momentum (Dozat), with a decaying momentum schedule."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer import functional as F
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _scalar_dtype, _to_scalar, _traced)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """PyTorch's NAdam. Per parameter at step t, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p            (or p = p * (1 - lr * weight_decay) if decoupled)
        mu_t = beta1 * (1 - 0.96^(t * momentum_decay) / 2);  P_t = P_{t-1} * mu_t
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr (1 - mu_t) / (1 - P_t) * g / d - lr mu_{t+1} / (1 - P_t mu_{t+1}) * m / d

    State: `step`, `mu_product` (P, a 0-d tensor), `exp_avg`, `exp_avg_sq`. Traced (a compiled
    training step), the momentum schedule and corrections are tensor ops on the step count and
    `mu_product` (PyTorch's capturable form), so the step compiles without a graph break.
    """

    def __init__(self, params: Iterable, lr: float = 2e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
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
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        _group_defaults_and_tensor_state(
            self, (("maximize", False), ("foreach", None), ("capturable", False),
                   ("differentiable", False), ("decoupled_weight_decay", False)),
            keys=("step", "mu_product"))

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if _fused.step_group(self, group, "nadam"):  # one kernel for the whole group
                continue
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            wd, eps, md = group["weight_decay"], group["eps"], group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["mu_product"] = C.tensor(1.0, dtype=_scalar_dtype())
                    state["exp_avg"] = C.zeros_like(p)
                    state["exp_avg_sq"] = C.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                step_t, mu_product = state["step"], state["mu_product"]
                step_t += 1
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                traced = _traced()
                step = step_t if traced else step_t.item()
                bias_correction2 = 1 - F.pow(beta2, step) if traced else 1 - beta2 ** step
                pow96 = (lambda e: F.pow(0.96, e)) if traced else (lambda e: 0.96 ** e)
                mu = beta1 * (1.0 - 0.5 * pow96(step * md))
                mu_next = beta1 * (1.0 - 0.5 * pow96((step + 1) * md))
                mu_product.mul_(mu)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                if traced:
                    mu_product_next = mu_product * mu_next
                    p.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
                    p.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
                else:
                    prod = mu_product.item()
                    p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - prod))
                    p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - prod * mu_next))
        return loss
