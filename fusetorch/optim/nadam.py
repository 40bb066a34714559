"""NAdam: Adam with Nesterov momentum (Dozat), with a decaying momentum schedule."""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _scalar_dtype, _to_scalar, _traced,
                        lerp_from_end, lerp_into, lerp_weight)

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
            if _fused.step_group(self, group, RULE):  # one kernel for the whole group
                continue
            f = dict(_flags(group))
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["mu_product"] = C.tensor(1.0, dtype=_scalar_dtype())
                    state["exp_avg"] = C.zeros_like(p)
                    state["exp_avg_sq"] = C.zeros_like(p)
                step_t = state["step"]
                step_t += 1
                s = _fused.scalars_of(RULE, group, f, step_t if _traced() else step_t.item(),
                                      state)
                _update(p, p.grad, [state["exp_avg"], state["exp_avg_sq"]], s, f)
        return loss


def _flags(group: dict) -> tuple:
    decay = group["weight_decay"] != 0
    return (("maximize", bool(group["maximize"])), ("weight_decay", decay),
            ("decoupled", decay and bool(group["decoupled_weight_decay"])),
            ("lerp_from_end", lerp_from_end(group["betas"][0])))


def _names(f: dict) -> tuple:
    return ("decay_factor", "weight_decay", "lerp_weight", "beta2", "one_minus_beta2",
            "bias_correction2", "eps", "grad_coef", "avg_coef")


def _scalars(group: dict, f: dict, step) -> tuple:
    """The group's numbers, then lr and this step's momenta, from which `_per_param` makes
    the coefficients; traced (a compiled training step), tensor ops on the step count."""
    lr = _to_scalar(group["lr"])
    beta1, beta2 = group["betas"]
    wd, md = group["weight_decay"], group["momentum_decay"]
    traced = isinstance(step, Tensor)
    pow96 = (lambda e: F.pow(0.96, e)) if traced else (lambda e: 0.96 ** e)
    bias_correction2 = 1 - (F.pow(beta2, step) if traced else beta2 ** step)
    mu = beta1 * (1.0 - 0.5 * pow96(step * md))
    mu_next = beta1 * (1.0 - 0.5 * pow96((step + 1) * md))
    return (1 - lr * wd, wd, lerp_weight(beta1, f["lerp_from_end"]), beta2, 1 - beta2,
            bias_correction2, group["eps"], lr, mu, mu_next)


def _per_param(row: tuple, state: dict) -> tuple:
    """`row` finished for one parameter: its `mu_product` takes this step's momentum (in its
    own dtype: state the step updates), the update's coefficients follow from it."""
    lr, mu, mu_next = row[7:]
    mu_product = state["mu_product"]
    if isinstance(mu, Tensor):  # (traced: tensor ops)
        mu_product.mul_(mu)
        prod = mu_product
    elif _ready(state):  # (what `mul_` computes, without dispatching it: per parameter, step)
        a = mu_product._data
        np.multiply(a, mu, out=a)
        mu_product._bump_version()
        prod = float(a)
    else:  # (the op, for its checks and errors)
        mu_product.mul_(mu)
        prod = mu_product.item()
    return row[:7] + (-lr * (1.0 - mu) / (1.0 - prod), -lr * mu_next / (1.0 - prod * mu_next))


def _ready(state: dict) -> bool:
    """Whether `mu_product` is what `_scalars` may update outside the loop: a writeable
    floating 0-d CPU tensor (else the loop runs, and raises where it raises)."""
    a = getattr(state.get("mu_product"), "_data", None)
    return a.__class__ is np.ndarray and a.ndim == 0 and a.dtype.kind == "f" and \
        a.flags.writeable


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
    denom = exp_avg_sq.div(s["bias_correction2"]).sqrt().add_(s["eps"])
    p.add_(grad * s["grad_coef"] / denom)
    p.add_(exp_avg * s["avg_coef"] / denom)


RULE = _fused.Rule("nadam", _flags, lambda f: ("exp_avg", "exp_avg_sq"), _names, _scalars,
                   _update, per_param=_per_param, ready=_ready)
