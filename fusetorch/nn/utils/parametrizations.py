"""`nn.utils.parametrizations`: weight_norm and spectral_norm as parametrizations (PyTorch's
current forms), registered through `parametrize.register_parametrization`."""
from __future__ import annotations

from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.autograd import no_grad
from ...linalg.compositions import householder_product
from ...linalg.decompositions import solve
from ...linalg.factorizations import geqrf, matrix_exp
from ...tracer.creation import eye, full_like, randn, zeros_like
from ...tracer.tensor import Tensor
from ...tracer.type_info import finfo
from .._functional.distance import normalize
from .._functional.native import norm_except_dim
from ..module import Module
from . import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    Id = eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10. * n * finfo(Q.dtype).eps  # a reasonable eps, but not too large
    return F.allclose(Q.mH @ Q, Id, atol=eps)


def _with_diagonal(X: Tensor, values: Tensor | None, fill: float = 0.) -> Tensor:
    """X with its (..., i, i) entries replaced by `values` (or `fill`), out of place (X may be a
    leaf that requires grad): by a mask."""
    mask = eye(X.size(-2), X.size(-1), dtype=X.dtype, device=X.device)
    k = min(X.size(-2), X.size(-1))
    if values is None:
        values = full_like(X[..., :1, :k], fill).squeeze(-2)
    if X.size(-1) > k:
        values = F.cat([values, values.new_zeros(*values.shape[:-1], X.size(-1) - k)], dim=-1)
    return X * (1 - mask) + mask * values.unsqueeze(-2)


def _make_orthogonal(A_: Tensor) -> Tensor:
    """The Q factor of a tall A_ = QR with diag(R) non-negative."""
    X, tau = geqrf(A_)
    Q = householder_product(X, tau)
    # the diagonal of X is that of R: normalised by its signs
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    """PyTorch's orthogonal parametrization: X -> an orthogonal Q by the matrix exponential or
    the Cayley map of a skew matrix made from X's lower triangle, or by Householder
    reflections; with `use_trivialization` Q is `base @ Q`, `base` set by right_inverse."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # here n >= k: X is a tall matrix
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()  # n * k - k * (k - 1) / 2 parameters
            if n != k:  # embedded into a square matrix
                X = F.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            skew = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = matrix_exp(skew)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = eye(n, dtype=skew.dtype, device=skew.device)
                Q = solve(F.add(Id, skew, alpha=-0.5), F.add(Id, skew, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            H = X.tril(diagonal=-1)
            tau = 2. / (1. + (H * H).sum(dim=-2))
            Q = householder_product(H, tau)
            # X's diagonal holds 1s and -1s: a sign per column, neither differentiated nor
            # updated (hence the cast)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            # Householder: X with Q's reflections and diag(R) > 0 through the QR
            H, tau = geqrf(Q)
            signs = H.diagonal(dim1=-2, dim2=-1).sign()
            # LAPACK returns exactly zero where it does not use a reflection
            signs = F.where(tau == 0., -signs, signs)
            H = _with_diagonal(H, signs)
            return H.mT if transpose else H
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # completed into a full n x n orthogonal matrix
            N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(F.cat([Q, N], dim=-1))
        self.base = Q
        # -Id: householder(zeros(m, n)) is then eye(m, n) (the diagonal holds the signs)
        return _with_diagonal(zeros_like(Q_init), None, fill=-1.)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` (a matrix or batch of matrices) to be orthogonal:
    `orthogonal_map` "matrix_exp" (square weights' default), "cayley" or "householder" (the
    default otherwise); `use_trivialization` keeps a `base` so that training moves on it."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


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
