"""Adam and AdamW (Adam with decoupled weight decay), with the AMSGrad variant."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _new_step, _no_grad_step,
                        _scalar_dtype, _to_scalar, lerp_from_end, lerp_into, lerp_weight)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """PyTorch's Adam. Per parameter at step t, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p            (or p = p * (1 - lr * weight_decay) if decoupled)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)               (amsgrad; v_max is used for v below)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    State: `step` (a 0-d float tensor), `exp_avg`, `exp_avg_sq`, and `max_exp_avg_sq` (amsgrad).
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
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
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, b in enumerate(betas):
            if isinstance(b, Tensor) and b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(b.item() if isinstance(b, Tensor) else b for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable,
                    "fused": fused, "decoupled_weight_decay": decoupled_weight_decay}
        _check_differentiable(defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("amsgrad", False), ("maximize", False), ("foreach", None),
                                 ("capturable", False), ("differentiable", False),
                                 ("decoupled_weight_decay", False), ("fused", None)):
                group.setdefault(key, default)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = C.tensor(float(p_state["step"]), dtype=_scalar_dtype())

    def _init_state(self, p: Tensor, amsgrad: bool) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _new_step()
            state["exp_avg"] = C.zeros_like(p)
            state["exp_avg_sq"] = C.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = C.zeros_like(p)
        return state

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
                state = self._init_state(p, group["amsgrad"])
                step_t = state["step"]
                step_t += 1
                # traced (a compiled training step), the bias corrections stay tensor ops on
                # the step count, as PyTorch's capturable Adam, so one graph serves every step
                step = step_t if D.RECORDER is not None else step_t.item()
                s = _fused.scalars_of(RULE, group, f, step, state)
                _update(p, p.grad, [state[k] for k in _state(f)], s, f)
        return loss


def _flags(group: dict) -> tuple:
    decay = group["weight_decay"] != 0
    return (("maximize", bool(group["maximize"])), ("weight_decay", decay),
            ("decoupled", decay and bool(group["decoupled_weight_decay"])),
            ("amsgrad", bool(group["amsgrad"])),
            ("lerp_from_end", lerp_from_end(group["betas"][0])))


def _state(f: dict) -> tuple:
    return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if f["amsgrad"] else ())


def _names(f: dict) -> tuple:
    return ("decay_factor", "weight_decay", "lerp_weight", "beta2", "one_minus_beta2", "eps",
            "neg_step_size", "bias_correction2_sqrt")


def _scalars(group: dict, f: dict, step) -> tuple:
    lr = _to_scalar(group["lr"])
    beta1, beta2 = group["betas"]
    wd = group["weight_decay"]
    if isinstance(step, Tensor):  # (traced: tensor ops on the step count)
        step_size = lr / (1 - F.pow(beta1, step))
        bias_correction2_sqrt = (1 - F.pow(beta2, step)).sqrt()
    else:
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    return (1 - lr * wd, wd, lerp_weight(beta1, f["lerp_from_end"]), beta2, 1 - beta2,
            group["eps"], -step_size, bias_correction2_sqrt)


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    if f["decoupled"]:
        p.mul_(s["decay_factor"])
    elif f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    exp_avg, exp_avg_sq = states[0], states[1]
    lerp_into(exp_avg, grad, s["lerp_weight"], f["lerp_from_end"])
    exp_avg_sq.mul_(s["beta2"]).add_(grad * s["one_minus_beta2"] * grad)
    second = exp_avg_sq
    if f["amsgrad"]:
        second = states[2]
        F.maximum(second, exp_avg_sq, out=second)
    denom = (second.sqrt() / s["bias_correction2_sqrt"]).add_(s["eps"])
    p.add_(exp_avg * s["neg_step_size"] / denom)


RULE = _fused.Rule("adam", _flags, _state, _names, _scalars, _update)


class AdamW(Adam):
    """Adam with decoupled weight decay (`p *= 1 - lr * weight_decay` before the Adam update);
    weight_decay defaults to 1e-2."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        # state saved from an AdamW always decays decoupled, as in PyTorch
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
