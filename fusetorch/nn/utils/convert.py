"""Flattening parameters into one vector and back."""
from __future__ import annotations

from typing import Iterable

from ...tracer import functional as F
from ...tracer.autograd import no_grad
from ...tracer.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    return F.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[start:start + n].reshape(tuple(p.shape)))
            start += n
