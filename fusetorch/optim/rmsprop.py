"""RMSprop (Hinton's), optionally centered and with momentum."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _new_step, _no_grad_step,
                        _scalar_dtype, _to_scalar, lerp_from_end, lerp_into, lerp_weight)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """PyTorch's RMSprop. Per parameter, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        avg = sqrt(v - ga * ga) + eps  with ga = lerp(ga, g, 1 - alpha)   (centered)
        avg = sqrt(v) + eps                                               (otherwise)
        buf = momentum * buf + g / avg;  p = p - lr * buf                 (momentum > 0)
        p = p - lr * g / avg                                              (otherwise)

    State: `step`, `square_avg`, `momentum_buffer` (momentum > 0), `grad_avg` (centered).
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _to_scalar(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        _check_differentiable(defaults)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("momentum", 0), ("centered", False), ("foreach", None),
                                 ("maximize", False), ("differentiable", False),
                                 ("capturable", False)):
                group.setdefault(key, default)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = C.tensor(float(p_state["step"]), dtype=_scalar_dtype())

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
                    if f["momentum"]:
                        state["momentum_buffer"] = C.zeros_like(p)
                    if f["centered"]:
                        state["grad_avg"] = C.zeros_like(p)
                state["step"] += 1
                _update(p, p.grad, [state[k] for k in _state(f)], s, f)
        return loss


def _flags(group: dict) -> tuple:
    centered = bool(group["centered"])
    return (("maximize", bool(group["maximize"])), ("weight_decay", group["weight_decay"] != 0),
            ("centered", centered), ("momentum", group["momentum"] > 0),
            ("lerp_from_end", centered and lerp_from_end(group["alpha"])))


def _state(f: dict) -> tuple:
    return ("square_avg",) + (("momentum_buffer",) if f["momentum"] else ()) + \
        (("grad_avg",) if f["centered"] else ())


def _names(f: dict) -> tuple:
    return ("neg_lr", "weight_decay", "alpha", "one_minus_alpha", "lerp_weight", "eps",
            "momentum")


def _scalars(group: dict, f: dict, step) -> tuple:
    alpha = group["alpha"]
    return (-_to_scalar(group["lr"]), group["weight_decay"], alpha, 1 - alpha,
            lerp_weight(alpha, f["lerp_from_end"]), group["eps"], group["momentum"])


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    if f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    square_avg = states[0]
    square_avg.mul_(s["alpha"]).add_(grad * s["one_minus_alpha"] * grad)
    if f["centered"]:
        grad_avg = states[-1]
        lerp_into(grad_avg, grad, s["lerp_weight"], f["lerp_from_end"])
        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
    else:
        avg = square_avg.sqrt()
    avg = avg.add_(s["eps"])
    if f["momentum"]:
        buf = states[1]
        buf.mul_(s["momentum"]).addcdiv_(grad, avg)
        p.add_(buf * s["neg_lr"])
    else:
        p.add_(grad * s["neg_lr"] / avg)


RULE = _fused.Rule("rmsprop", _flags, _state, _names, _scalars, _update)
