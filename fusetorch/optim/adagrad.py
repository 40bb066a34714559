"""Adagrad: per-coordinate steps scaled by the root of the summed squared gradients."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _new_step, _no_grad_step,
                        _scalar_dtype, _to_scalar)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """PyTorch's Adagrad. Per parameter at step t, with g the gradient (negated if `maximize`):

        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        sum = sum + g * g
        p = p - clr * g / (sqrt(sum) + eps)

    State (created for every parameter at construction, like PyTorch): `step`, `sum`
    (starting at `initial_accumulator_value`).
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _to_scalar(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        _check_differentiable(defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, initial_accumulator_value)

    def _init_state(self, p: Tensor, initial_accumulator_value: float) -> dict:
        state = self.state[p]
        state["step"] = _new_step()
        state["sum"] = C.full_like(p, initial_accumulator_value)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("foreach", None), ("maximize", False),
                                 ("differentiable", False), ("fused", None)):
                group.setdefault(key, default)
        for s in self.state.values():
            if "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = C.tensor(float(s["step"]), dtype=_scalar_dtype())

    def share_memory(self) -> None:
        """No-op: fusetorch tensors live in one process."""

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
                    # a group added later: PyTorch reads the optimizer-wide default here
                    self._init_state(p, self.defaults["initial_accumulator_value"])
                step_t = state["step"]
                step_t += 1
                s = _fused.scalars_of(RULE, group, f, step_t.item(), state)
                _update(p, p.grad, [state["sum"]], s, f)
        return loss


def _flags(group: dict) -> tuple:
    return (("maximize", bool(group["maximize"])), ("weight_decay", group["weight_decay"] != 0))


def _names(f: dict) -> tuple:
    return ("weight_decay", "eps", "neg_clr")


def _scalars(group: dict, f: dict, step) -> tuple:
    clr = _to_scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
    return (group["weight_decay"], group["eps"], -clr)


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    if f["weight_decay"]:
        grad = grad + p * s["weight_decay"]
    (state_sum,) = states
    state_sum.add_(grad * grad)
    std = state_sum.sqrt().add_(s["eps"])
    p.add_(grad * s["neg_clr"] / std)


RULE = _fused.Rule("adagrad", _flags, lambda f: ("sum",), _names, _scalars, _update)
