"""`nn.utils.parametrizations`: weight_norm and spectral_norm as parametrizations (PyTorch's
current forms), registered through `parametrize.register_parametrization`."""
from __future__ import annotations

from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.autograd import no_grad
from ...tracer.creation import randn
from ...tracer.tensor import Tensor
from .._functional.distance import normalize
from .._functional.native import norm_except_dim
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    return norm_except_dim(v, 2, dim)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """v * g / ||v|| (torch._weight_norm)."""
    out = v * (g / _norm_except_dim(v, dim))
    if D.GRAD_ENABLED and out._requires_grad:
        A.label(out, "WeightNormInterfaceBackward0", v, g)
    return out


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise `module.<name>` as `g * v / ||v||` with the norm over every dim but `dim`
    (over all of them for dim=None): `parametrizations.<name>.original0` is g,
    `original1` is v."""
    d = dim
    if d is not None and d < -1:
        d += getattr(module, name).ndim
    parametrize.register_parametrization(module, name, _WeightNorm(d), unsafe=True)
    return module


def _weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """`weight` as a matrix whose rows run along `dim` (spectral norm's view of a weight)."""
    if dim != 0:
        weight = F.permute(weight, dim, *[d for d in range(weight.ndim) if d != dim])
    return F.reshape(weight, (weight.shape[0], -1))


class _SpectralNorm(Module):
    """W / sigma(W), sigma estimated by power iteration on the buffers _u, _v (updated in
    training mode only)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return _weight_matrix(weight, self.dim)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with no_grad():
            for _ in range(n):
                self._u.copy_(normalize(F.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(F.mv(F.t(mat), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = F.clone(self._u)
        v = F.clone(self._v)
        sigma = F.sum(u * F.mv(mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrise `module.<name>` as W / sigma(W), sigma its largest singular value
    estimated by power iteration (dim: the output dim, 1 for transposed convolutions)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
