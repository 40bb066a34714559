"""nn.functional: vector norms and the distances built on them (normalize, cosine_similarity,
pairwise_distance, pdist), composed from tensor operations.

The norms are linalg's `p_norm` (the one definition, with PyTorch's zero subgradient).
"""
from __future__ import annotations


import numpy as np

from ...ir import dtypes as dt
from ...ir.shapes import broadcast_shapes, norm_dim
from ...linalg.norms import p_norm
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from ...tracer.numpy_names import numpy_names

__all__ = ["normalize", "cosine_similarity", "pairwise_distance", "pdist"]




def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """`input / max(||input||_p, eps)` along `dim`."""
    denom = F.clamp(p_norm(input, p, dim, keepdim=True), min=eps)
    r = input / denom
    if out is not None:
        return out.copy_(r)
    return r


def _float_common(name: str, x1: Tensor, x2: Tensor) -> tuple:
    dims = [x._dtype for x in (x1, x2) if x.ndim]
    common = dt.result_type(dims, [x._dtype for x in (x1, x2) if not x.ndim], [])
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{D._torch_name(common).capitalize()}")
    return (x1 if x1._dtype is common else D.cast(x1, common),
            x2 if x2._dtype is common else D.cast(x2, common))


@numpy_names
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along `dim`, after broadcasting.

    As in PyTorch 2.x each norm is clamped to eps on its own (not their product), and the
    clamp changes the value only: the gradient flows through the norm as if unclamped."""
    D.check_tensor(x1, "cosine_similarity", "x1", 1)
    D.check_tensor(x2, "cosine_similarity", "x2", 2)
    x1, x2 = _float_common("cosine_similarity", x1, x2)
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if tuple(x1.shape) != shape:
        x1 = x1.expand(*shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(*shape)
    d = norm_dim(dim, max(len(shape), 1))
    if not shape:
        x1, x2 = F.reshape(x1, (1,)), F.reshape(x2, (1,))
    n1 = p_norm(x1, 2, d, keepdim=True)
    n2 = p_norm(x2, 2, d, keepdim=True)
    with A.no_grad():  # recorded by traces (unlike detach), without gradient
        lift1 = F.clamp(n1, min=eps) - n1
        lift2 = F.clamp(n2, min=eps) - n2
    r = F.sum((x1 / (n1 + lift1)) * (x2 / (n2 + lift2)), d)
    return r


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of `x1 - x2 + eps` over the last dim."""
    diff = x1 - x2 + eps
    if diff.ndim == 0:
        diff = F.reshape(diff, (1,))
        r = p_norm(diff, p, 0, keepdim=False)
        return A.label_recorded(F.reshape(r, (1,)) if keepdim else r, "NormBackward1", x1, x2)
    return A.label_recorded(p_norm(diff, p, diff.ndim - 1, keepdim=keepdim), "NormBackward1", x1,
                  x2)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of an [N, M] input, for each pair i < j in row
    order: N (N - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if not input._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    from ...tracer.creation import tensor
    ii = tensor(i.astype(np.int64), device=input.device)
    jj = tensor(j.astype(np.int64), device=input.device)
    diff = F.index_select(input, 0, ii) - F.index_select(input, 0, jj)
    return A.label_recorded(p_norm(diff, p, 1), "PdistBackward0", input)
