"""The transforms added for issue 27: unconstrained matrices to Cholesky factors and to
positive-definite matrices, a distribution's cdf as a transform (copulas), and transforms
applied slice-wise along a dim (as torch.cat / torch.stack). PyTorch's code translated;
`transforms` re-exports them."""
from __future__ import annotations

import math

from .. import linalg
from ..nn import functional as NF
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.functional_shape import diag_embed
from . import constraints
from .transforms import Transform
from .utils import _sum_rightmost, finfo_eps, lazy_property, tril_matrix_to_vec, \
    vec_to_tril_matrix

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "StackTransform"]


class CorrCholeskyTransform(Transform):
    """Vectors of D(D-1)/2 reals to lower Cholesky factors of D x D correlation matrices:
    tanh to (-1, 1), placed in the strict lower triangle, then stick-breaking on the squares so
    each row has unit norm (Stan's transform; PyTorch's code translated). Its log-det-Jacobian
    is that of x and the flattened strict lower triangle of y."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = F.tanh(x)
        eps = finfo_eps(x.dtype)
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        # y = sign(r) sqrt(z * z1m_cumprod) = r sqrt(z1m_cumprod), stick-breaking on z = r^2
        z = r ** 2
        z1m_cumprod_sqrt = (1 - z).sqrt().cumprod(-1)
        r = r + C.eye(r.shape[-1], dtype=r.dtype, device=r.device)  # a unit diagonal
        return r * NF.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = NF.pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (F.log1p(t) - F.log1p(-t)) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        # (diag -2 needs no shift of the cumulative product; a 2 x 2 matrix works too)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * F.log(y1m_cumsum_tril).sum(-1)
        tanh_logdet = -2 * (x + NF.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (D, D)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        D = shape[-1]
        return tuple(shape[:-2]) + (D * (D - 1) // 2,)


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal: the strict lower
    triangle kept, the diagonal exponentiated (not bijective: the upper triangle is lost)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones, L L^T with L = LowerCholeskyTransform(x)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """x to distribution.cdf(x) in [0, 1]; the log-det-Jacobian is the log density."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> "CumulativeDistributionTransform":
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


def _check_dim(dim: int, x, what: str = "tensor") -> None:
    if not (-x.dim() <= dim < x.dim()):
        raise AssertionError(f"dim {dim} out of range for {what} with {x.dim()} dimensions")


class CatTransform(Transform):
    """`tseq[i]` applied to the i-th slice of `lengths[i]` along `dim`, as torch.cat."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> "CatTransform":
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, z, name: str, what: str = "tensor") -> None:
        _check_dim(self.dim, z, what)
        if z.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {z.size(self.dim)} must equal "
                                 f"length {self.length}")

    def _slices(self, z):
        start = 0
        for length in self.lengths:
            yield z.narrow(self.dim, start, length)
            start = start + length

    def _call(self, x):
        self._check(x, "x")
        return F.cat([t(s) for t, s in zip(self.transforms, self._slices(x))], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        return F.cat([t.inv(s) for t, s in zip(self.transforms, self._slices(y))],
                     dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")
        logdetjacs = []
        for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            ldj = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                ldj = _sum_rightmost(ldj, self.event_dim - t.event_dim)
            logdetjacs.append(ldj)
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        # (the cat dim inside the event: the slices' log-dets add up)
        return F.cat(logdetjacs, dim=dim) if dim < 0 else sum(logdetjacs)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """`tseq[i]` applied to the i-th slice along `dim`, as torch.stack."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> "StackTransform":
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _check(self, z, name: str, what: str = "tensor") -> None:
        _check_dim(self.dim, z, what)
        if z.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{name}.size({self.dim}) = {z.size(self.dim)} must equal "
                                 f"len(transforms) {len(self.transforms)}")

    def _call(self, x):
        self._check(x, "x")
        return F.stack([t(s) for s, t in zip(self._slice(x), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        return F.stack([t.inv(s) for s, t in zip(self._slice(y), self.transforms)],
                       dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")
        return F.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                        zip(self._slice(x), self._slice(y), self.transforms)], dim=self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
