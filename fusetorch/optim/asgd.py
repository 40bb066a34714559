"""ASGD: averaged stochastic gradient descent (Polyak and Juditsky)."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer import functional as F
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _scalar_dtype, _to_scalar, _traced)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """PyTorch's ASGD. Per parameter at step t, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = ax + (p - ax) * mu             (ax = p while mu is 1)
        eta = lr / (1 + lambd * lr * t)^alpha;  mu = 1 / max(1, t - t0)

    State: `step`, `eta` and `mu` (0-d tensors), `ax` (the average). Traced (a compiled
    training step), eta and mu stay tensors (PyTorch's capturable form), so the step compiles
    without a graph break.
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _to_scalar(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        _group_defaults_and_tensor_state(
            self, (("foreach", None), ("maximize", False), ("differentiable", False),
                   ("capturable", False)), keys=("step", "eta", "mu"))

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lambd, alpha, t0, wd = group["lambd"], group["alpha"], group["t0"], \
                group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["eta"] = C.tensor(float(lr), dtype=_scalar_dtype())
                    state["mu"] = C.tensor(1.0, dtype=_scalar_dtype())
                    state["ax"] = C.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                step_t, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
                step_t += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                if _traced():
                    p.mul_(1 - lambd * eta)
                    p.addcmul_(grad, eta, value=-1)
                    ax.add_(p.sub(ax).mul_(mu))
                    eta.copy_(lr / ((1 + lambd * lr * step_t) ** alpha))
                    mu.copy_(1 / F.maximum(step_t - t0, C.ones_like(step_t)))
                else:
                    eta_value = eta.item()
                    p.mul_(1 - lambd * eta_value)
                    p.add_(grad, alpha=-eta_value)
                    if mu.item() != 1:
                        ax.add_(p.sub(ax).mul_(mu))
                    else:
                        ax.copy_(p)
                    step = step_t.item()
                    eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
                    mu.fill_(1 / max(1, step - t0))
        return loss
