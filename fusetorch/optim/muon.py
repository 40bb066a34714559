"""Muon: momentum whose update is orthogonalised by a Newton-Schulz iteration (2-d parameters)."""
from __future__ import annotations

import math
from typing import Callable, Iterable

from ..tracer import creation as C
from ..tracer.functional_shape import addmm
from ..tracer.tensor import Tensor
from .optimizer import Optimizer, _no_grad_step, _to_scalar

__all__ = ["Muon"]

_COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # a quintic with a steep slope at zero (Keller Jordan)


class Muon(Optimizer):
    """PyTorch's Muon. Per 2-d parameter p (A x B) with gradient g:

        m = lerp(m, g, 1 - momentum)
        u = lerp(g, m, momentum) (nesterov) or m
        O = NewtonSchulz(u)  in bfloat16: X = u / max(||u||, eps), the wide way up, then
            ns_steps times  G = X X^T;  X = a X + (b G + c G G) X
        p = p * (1 - lr * weight_decay) - lr * ratio * O
        ratio: sqrt(max(1, A / B)) (adjust_lr_fn None or "original"),
               0.2 * sqrt(max(A, B)) ("match_rms_adamw")

    State: `momentum_buffer`.
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple = _COEFFICIENTS, eps: float = 1e-7, ns_steps: int = 5,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                if getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("Muon does not support sparse gradients")
                grad = p.grad
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                state = self.state[p]
                if len(state) == 0:
                    state["momentum_buffer"] = C.zeros_like(grad)
                buf = state["momentum_buffer"]
                buf.lerp_(grad, 1 - group["momentum"])
                u = grad.lerp(buf, group["momentum"]) if group["nesterov"] else buf
                o = newton_schulz(u, group["ns_coefficients"], group["ns_steps"], group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(o, alpha=-lr * _lr_ratio(group["adjust_lr_fn"], p.shape))
        return loss


def newton_schulz(g: Tensor, coefficients: tuple, steps: int, eps: float) -> Tensor:
    """An approximate orthogonalisation U S' V^T of g = U S V^T (S' near 1), in bfloat16."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if g.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = g.shape[0] > g.shape[1]
    x = g.bfloat16()
    x = x.T if tall else x  # X X^T is then the smaller Gram matrix
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = addmm(x, addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def _lr_ratio(adjust_lr_fn: str | None, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return math.sqrt(max(1, rows / cols))
    return 0.2 * math.sqrt(max(rows, cols))
