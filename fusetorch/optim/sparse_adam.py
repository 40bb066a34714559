"""SparseAdam: Adam masked to the rows a gradient touches (word2vec's nn.Embedding(sparse=True)).

PyTorch updates the moments and the parameter only where the sparse gradient has entries. Here
`Embedding(sparse=True)` gives a dense gradient (nn/_functional/sparse.py), so the entries are
the rows along dim 0 with a nonzero element: the same rows an embedding's sparse gradient
holds, except one a lookup touched whose gradient is exactly zero (PyTorch decays its moments;
here they stay). A sparse COO gradient set by hand is densified first.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable

from ..tracer import creation as C
from .optimizer import Optimizer, _no_grad_step, _to_scalar

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """PyTorch's SparseAdam: per parameter at step t, on the rows R the gradient g touches
    (negated if `maximize`):

        m[R] = m[R] + (1 - beta1) * (g[R] - m[R]);  v[R] = v[R] + (1 - beta2) * (g[R]^2 - v[R])
        p[R] = p[R] - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m[R] / (sqrt(v[R]) + eps)

    State: `step` (an int, as PyTorch's), `exp_avg` (m), `exp_avg_sq` (v)."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas=(0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        _to_scalar(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        sparse, complex_ = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if getattr(p, "is_sparse", False):
                    sparse.append([index, d_index])
                if p.is_complex():
                    complex_.append([index, d_index])
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             "parameter tensors")
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not "
                             "support complex parameters")

    @_no_grad_step
    def step(self, closure: Callable | None = None):
        """One update of the touched rows of every parameter that has a gradient; returns the
        closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _to_scalar(group["lr"]), group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.to_dense() if getattr(p.grad, "is_sparse", False) else p.grad
                g = -g if group.get("maximize", False) else g
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = C.zeros_like(p)
                    state["exp_avg_sq"] = C.zeros_like(p)
                state["step"] += 1
                rows = g.reshape(g.shape[0], -1).ne(0).any(1) if g.dim() else g.ne(0)
                if not rows.any().item():
                    continue
                mask = rows.reshape((-1,) + (1,) * (g.dim() - 1)).to(p.dtype)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.add_((g - m) * (1 - beta1) * mask)
                v.add_((g * g - v) * (1 - beta2) * mask)
                step = state["step"]
                step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
                p.add_(m / (v.sqrt() + eps) * mask, alpha=-step_size)
        return loss
