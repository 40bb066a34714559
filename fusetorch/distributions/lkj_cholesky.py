"""LKJCholesky(dim, concentration): the lower Cholesky factor L of a correlation matrix
M = L L^T with density proportional to det(M)^(concentration - 1); sampled by the onion method
(Lewandowski, Kurowicka and Joe 2009, Sec. 3.2) as PyTorch does."""
from __future__ import annotations

import math

import ml_dtypes

from ..runtime.device import NP_DTYPES
from ..tracer import creation as C
from ..tracer import functional as F
from ..tracer.functional_shape import diag_embed
from ..tracer.tensor import Size, Tensor
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over lower Cholesky factors of `dim` x `dim` correlation matrices;
    concentration 1 is uniform over correlation matrices.

    >>> L = LKJCholesky(3, 0.5).sample()  # L @ L.T is a 3 x 3 correlation matrix
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0,
                 validate_args=None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the Beta draws of the onion method's Sec. 3.2, all rows at once
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = C.arange(self.dim - 1, dtype=self.concentration.dtype,
                          device=self.concentration.device)
        offset = F.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()) -> Tensor:
        # As PyTorch: the Beta draws of every row at once, the first row's are unused (its
        # hypersphere direction is NaN, set to 0), and y is not raised to a power: the rows
        # are not the submatrices the paper grows
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = C.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                           device=y.device).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere[..., 0, :].fill_(0.0)
        w = F.sqrt(y) * u_hypersphere
        # the diagonal makes each row a unit vector; clamped above 0 for stability
        tiny = float(ml_dtypes.finfo(NP_DTYPES[w.dtype]).tiny)
        diag_elems = F.clamp(1 - (w ** 2).sum(dim=-1), min=tiny).sqrt()
        w += diag_embed(diag_elems)
        return w

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = C.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(dim=-1)
        # the normalising constant (page 1999 of the paper)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = F.lgamma(alpha) * dm1
        numerator = (alpha - 0.5).mvlgamma(dm1)
        # the paper's pi term is D (D - 1) / 4 log(pi), multigammaln's (D - 1)(D - 2) / 4 log(pi)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
