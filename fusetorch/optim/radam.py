"""RAdam: Adam with the variance of its adaptive learning rate rectified (Liu et al.)."""
from __future__ import annotations

from typing import Callable, Iterable

from .. import ir
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _to_scalar, _traced, lerp_from_end,
                        lerp_into, lerp_weight, select)

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
                    state["exp_avg_sq"] = C.zeros_like(p)
                step_t = state["step"]
                step_t += 1
                # traced: float64 0-d tensors, as the eager Python floats, since rho_t is a
                # difference of two numbers near 2 / (1 - beta2) and float32 loses its digits
                step = step_t.to(dtype=ir.dtypes.float64) if _traced() else step_t.item()
                s = _fused.scalars_of(RULE, group, f, step, state)
                _update(p, p.grad, [state["exp_avg"], state["exp_avg_sq"]], s, f)
        return loss


def _flags(group: dict) -> tuple:
    decay = group["weight_decay"] != 0
    return (("maximize", bool(group["maximize"])), ("weight_decay", decay),
            ("decoupled", decay and bool(group["decoupled_weight_decay"])),
            ("lerp_from_end", lerp_from_end(group["betas"][0])))


def _names(f: dict) -> tuple:
    return ("decay_factor", "weight_decay", "lerp_weight", "beta2", "one_minus_beta2", "eps",
            "lr", "bias_correction1", "bias_correction2_sqrt", "rect", "rectified")


def _scalars(group: dict, f: dict, step) -> tuple:
    """The group's numbers, this step's bias corrections, and whether (1.0) the variance is
    rectified and by how much; traced (a compiled training step), tensor ops on the step."""
    lr = _to_scalar(group["lr"])
    beta1, beta2 = group["betas"]
    wd = group["weight_decay"]
    rho_inf = 2 / (1 - beta2) - 1
    traced = isinstance(step, Tensor)
    pow1, pow2 = (F.pow(beta1, step), F.pow(beta2, step)) if traced else \
        (beta1 ** step, beta2 ** step)
    bias_correction1, bias_correction2 = 1 - pow1, 1 - pow2
    rho_t = rho_inf - 2 * step * pow2 / bias_correction2
    if traced:
        rectified = rho_t > 5.0
        # rect is NaN for rho_t in (2, 4), in the branch `where` drops; rho_t clamped to 5
        # keeps that branch finite (no invalid-value warnings)
        rho_t = rho_t.clamp(min=5.0)
    else:
        rectified = 1.0 if rho_t > 5.0 else 0.0
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) \
        ** 0.5 if (traced or rectified) else 0.0
    return (1 - lr * wd, wd, lerp_weight(beta1, f["lerp_from_end"]), beta2, 1 - beta2,
            group["eps"], lr, bias_correction1, bias_correction2 ** 0.5, rect, rectified)


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    if f["decoupled"]:
        p.mul_(s["decay_factor"])
    elif f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    exp_avg, exp_avg_sq = states
    lerp_into(exp_avg, grad, s["lerp_weight"], f["lerp_from_end"])
    exp_avg_sq.mul_(s["beta2"]).add_(grad * s["one_minus_beta2"] * grad)
    update = exp_avg / s["bias_correction1"] * s["lr"]

    def rectified():
        adaptive_lr = s["bias_correction2_sqrt"] / exp_avg_sq.sqrt().add_(s["eps"])
        return update * adaptive_lr * s["rect"]
    p.sub_(select(s["rectified"], rectified, update))


RULE = _fused.Rule("radam", _flags, lambda f: ("exp_avg", "exp_avg_sq"), _names, _scalars,
                   _update, switches=("rectified",))
