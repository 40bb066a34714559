"""Adam and AdamW (Adam with decoupled weight decay), with the AMSGrad variant."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer import dispatch as D
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _new_step, _no_grad_step,
                        _scalar_dtype, _to_scalar)

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
            if _fused.step_group(self, group, "adam"):  # one kernel for the whole group
                continue
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            wd, eps, amsgrad = group["weight_decay"], group["eps"], group["amsgrad"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._init_state(p, amsgrad)
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

                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    F.maximum(max_sq, exp_avg_sq, out=max_sq)
                    second = max_sq
                else:
                    second = exp_avg_sq
                if D.RECORDER is None:
                    step = step_t.item()
                    step_size = lr / (1 - beta1 ** step)
                    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                    denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
                    p.addcdiv_(exp_avg, denom, value=-step_size)
                else:
                    # traced (a compiled training step): the bias corrections stay tensor ops
                    # on the step count, as PyTorch's capturable Adam, so one graph serves
                    # every step instead of reading the count into Python (a graph break)
                    bias_correction2_sqrt = (1 - F.pow(beta2, step_t)).sqrt()
                    denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
                    step_size = lr / (1 - F.pow(beta1, step_t))
                    p.sub_(exp_avg / denom * step_size)
        return loss


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
