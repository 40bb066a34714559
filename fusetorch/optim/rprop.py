"""Rprop: resilient backpropagation, per-coordinate step sizes driven by gradient signs."""
from __future__ import annotations

from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_differentiable, _group_defaults_and_tensor_state,
                        _new_step, _no_grad_step, _to_scalar, clamp_into)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """PyTorch's Rprop. Per parameter, with g the gradient (negated if `maximize`):

        s = sign(g * prev);  f = etaplus where s > 0, etaminus where s < 0, else 1
        step_size = clamp(step_size * f, step_size_min, step_size_max)
        g = 0 where s < 0 (the sign flipped: skip this coordinate once)
        p = p - sign(g) * step_size;  prev = g

    State: `step`, `prev`, `step_size` (starting at lr). The sign tests are `where`s (PyTorch's
    capturable form), so a compiled training step needs no graph break.
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, etas=(0.5, 1.2),
                 step_sizes=(1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _to_scalar(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
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
            s = _fused.scalars_of(RULE, group, f, None, None)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["prev"] = C.zeros_like(p)
                    state["step_size"] = C.full_like(p.grad, _to_scalar(group["lr"]))
                state["step"] += 1
                _update(p, p.grad, [state["prev"], state["step_size"]], s, f)
        return loss


def _flags(group: dict) -> tuple:
    return (("maximize", bool(group["maximize"])),)


def _names(f: dict) -> tuple:
    return ("etaminus", "etaplus", "step_size_min", "step_size_max")


def _scalars(group: dict, f: dict, step) -> tuple:
    return tuple(group["etas"]) + tuple(group["step_sizes"])


def _update(p: Tensor, grad: Tensor, states: list, s: dict, f: dict) -> None:
    if f["maximize"]:
        grad = -grad
    prev, step_size = states
    sign = grad.mul(prev).sign()
    # each `where` keeps sign's dtype (two Python scalars would give float32)
    factor = F.where(sign.gt(0), s["etaplus"],
                     F.where(sign.lt(0), s["etaminus"], F.where(sign.eq(0), 1.0, sign)))
    clamp_into(step_size.mul_(factor), s["step_size_min"], s["step_size_max"])
    grad = F.where(sign.lt(0), 0.0, grad)
    p.addcmul_(grad.sign(), step_size, value=-1)
    prev.copy_(grad)


RULE = _fused.Rule("rprop", _flags, lambda f: ("prev", "step_size"), _names, _scalars, _update)
