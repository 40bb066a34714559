"""nn.functional.linear_cross_entropy: cross entropy of a linear projection's logits.

PyTorch defines it by its reference form, `cross_entropy(linear(input, linear_weight), target,
...)`, and offers a chunked evaluation (`options`) that saves memory, not values: fusetorch
computes the reference form always, so `options` is accepted and changes nothing. The weight
may have extra dims after the classes (`[C, d1, ..., dK, in]`): a K-dimensional loss.
"""
from __future__ import annotations

import warnings

from ...tracer import dispatch as D
from ...tracer import functional_shape as FS
from ...tracer.tensor import Tensor
from .loss import cross_entropy

__all__ = ["linear_cross_entropy"]


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """`cross_entropy(input @ linear_weight^T + linear_bias, target, ...)` for input [N, in]
    or [in] and linear_weight [C, *out_features, in]."""
    D.check_tensor(input, "linear_cross_entropy", "input", 1)
    D.check_tensor(linear_weight, "linear_cross_entropy", "linear_weight", 2)
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batch = tuple(input.shape[:-1])
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    classes, out = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{input.shape[-1]}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    probabilities = tuple(target.shape) == batch + (classes, *out)
    if probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None and (out or reduction not in ("mean", "sum", "none")
                                or label_smoothing != 0.0 or target.dtype.name != "int64"):
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features "
            f"== (). Got reduction={reduction!r}, label_smoothing={label_smoothing}, "
            f"target.dtype={target.dtype}, out_features={out}, tracing=False, "
            f"linear_bias.shape="
            f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    logits = FS.tensordot(input, linear_weight, ([input.ndim - 1], [linear_weight.ndim - 1]))
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None
                         else ignore_index, reduction=reduction, label_smoothing=label_smoothing)
