"""ATen's `native_*` normalisation and dropout functions (torch.native_batch_norm, ...), with
their aten signatures and tuple results. Each is the nn.functional op it names, which also
returns the statistics it computed (`normalization.*_parts`): one definition of the math.

The tuples are PyTorch 2.13's, checked by hand: batch norm's save_mean / save_invstd are the
batch mean and 1 / sqrt(biased variance + eps) per channel, empty in evaluation and outside
autograd; layer norm's mean / rstd keep the normalised dims as 1 and also carry no gradient;
group norm's are [N, group] and differentiable. native_dropout's mask is a bool tensor (all
True when not training). native_norm, sparse-only in PyTorch, is `torch.norm`'s vector norm
here.
"""
from __future__ import annotations

from typing import Sequence

from ...ir import dtypes as dt
from ...linalg.norms import p_norm
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .dropout import _noise
from .normalization import batch_norm_parts, group_norm_parts, layer_norm_parts

__all__: list = []  # torch-level names only: fusetorch exports PUBLIC
PUBLIC = ("native_batch_norm", "native_layer_norm", "native_group_norm", "native_dropout",
          "native_norm", "norm_except_dim")


def _no_grad(t: Tensor) -> Tensor:
    return t.detach() if t._requires_grad else t


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple:
    """(output, save_mean [C], save_invstd [C]); in evaluation both statistics are empty."""
    D.check_tensor(input, "native_batch_norm", "input", 1)
    if input.numel() == 0:
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes "
                           f"= {list(input.shape)}")
    if input.ndim == 0:  # (no channel dim; PyTorch fails inside ATen with a RuntimeError too)
        raise RuntimeError("native_batch_norm: expected an input with a channel dim, got a "
                           "0-d tensor")
    out, mean, invstd = batch_norm_parts(input, running_mean, running_var, weight, bias,
                                         bool(training), momentum, eps)
    if mean is None:
        empty = C.zeros((0,), dtype=input.dtype, device=input.device)
        return out, empty, empty.clone()
    return out, _no_grad(mean), _no_grad(invstd)


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple:
    """(output, mean, rstd), the statistics shaped as input with the normalised dims 1."""
    D.check_tensor(input, "native_layer_norm", "input", 1)
    out, mean, rstd = layer_norm_parts(input, normalized_shape, weight, bias, eps)
    return out, _no_grad(mean), _no_grad(rstd)


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int,
                      HxW: int, group: int, eps: float) -> tuple:
    """(output, mean [N, group], rstd [N, group]); N, C and HxW must describe the input."""
    D.check_tensor(input, "native_group_norm", "input", 1)
    if input.numel() != int(N) * int(C) * int(HxW):
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    return group_norm_parts(input, int(group), weight, bias, eps)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple:
    """(output, keep mask as bool): dropout with its mask, or (a copy, all True) when `train`
    is False (None trains, as aten's optional)."""
    D.check_tensor(input, "native_dropout", "input", 1)
    if train is None or train:
        if p < 0.0 or p > 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1.0 - p:g}")
        noise = _noise(tuple(input.shape), input, float(p))
        return input * noise, noise != 0
    return input.clone(), C.ones(tuple(input.shape), dtype=dt.bool_, device=input.device)


def native_norm(input: Tensor, p=2, dim=None, keepdim: bool = False,
                dtype=None) -> Tensor:
    """The p-norm of the entries over `dim` (all by default), in `dtype` when given."""
    D.check_tensor(input, "native_norm", "input", 1)
    if dtype is not None:
        input = D.cast(input, dtype)
    dims = tuple(range(input.ndim)) if dim is None else tuple(
        [dim] if isinstance(dim, int) else dim)
    return p_norm(input, 2 if p is None else p, dims, keepdim=bool(keepdim))


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm over every dim but `dim` (kept, size 1 elsewhere); over everything (a
    0-d result) for dim -1, as ATen's special case (weight norm's g)."""
    D.check_tensor(v, "norm_except_dim", "v", 1)
    if not v._dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {D._torch_name(v._dtype)} instead.")
    if dim == -1:
        return p_norm(v, pow, tuple(range(v.ndim)))
    from ...ir.shapes import norm_dim
    dim = norm_dim(dim, v.ndim)
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return p_norm(v, pow, dims, keepdim=True) if dims else F.abs(v)
