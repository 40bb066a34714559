"""RAdam: Adam with the variance of its adaptive learning rate rectified (Liu et al.)."""
from __future__ import annotations

from typing import Callable, Iterable

from .. import ir
from ..tracer import creation as C
from ..tracer import functional as F
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _to_scalar, _traced)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """PyTorch's RAdam. Per parameter at step t, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p            (or p = p * (1 - lr * weight_decay) if decoupled)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        p = p - lr m / (1 - beta1^t) * r sqrt(1 - beta2^t) / (sqrt(v) + eps)   (rho_t > 5)
        p = p - lr m / (1 - beta1^t)                                            (otherwise)

    State: `step`, `exp_avg`, `exp_avg_sq`. Traced (a compiled training step), the choice
    between the two updates is a `where` on tensor ops of the step count (PyTorch's capturable
    form), so the step compiles without a graph break.
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
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
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        _group_defaults_and_tensor_state(
            self, (("foreach", None), ("maximize", False), ("differentiable", False),
                   ("decoupled_weight_decay", False), ("capturable", False)))

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            if _fused.step_group(self, group, "radam"):  # one kernel for the whole group
                continue
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            wd, eps = group["weight_decay"], group["eps"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["exp_avg"] = C.zeros_like(p)
                    state["exp_avg_sq"] = C.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                step_t = state["step"]
                step_t += 1
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                traced = _traced()
                # traced: float64 0-d tensors, as the eager Python floats, since rho_t is a
                # difference of two numbers near 2 / (1 - beta2) and float32 loses its digits
                step = step_t.to(dtype=ir.dtypes.float64) if traced else step_t.item()
                pow1, pow2 = ((F.pow(beta1, step), F.pow(beta2, step)) if traced
                              else (beta1 ** step, beta2 ** step))
                bias_correction1, bias_correction2 = 1 - pow1, 1 - pow2
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rho_t = rho_inf - 2 * step * pow2 / bias_correction2

                def rect(rho):
                    return ((rho - 4) * (rho - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho)) ** 0.5

                def adaptive_lr():
                    return bias_correction2 ** 0.5 / exp_avg_sq.sqrt().add_(eps)

                if traced:
                    # rect is NaN for rho_t in (2, 4), in the branch `where` drops; rho_t
                    # clamped to 5 keeps that branch finite (no invalid-value warnings)
                    update = F.where(rho_t > 5.0, rect(rho_t.clamp(min=5.0)) * adaptive_lr(),
                                     1.0)
                    p.sub_(bias_corrected_exp_avg * lr * update)
                elif rho_t > 5.0:
                    p.sub_(bias_corrected_exp_avg * lr * adaptive_lr() * rect(rho_t))
                else:
                    p.sub_(bias_corrected_exp_avg * lr)
        return loss
