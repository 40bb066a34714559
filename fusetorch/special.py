"""torch.special: the functions of PyTorch's special-function namespace that fusetorch has,
under their `torch.special` names (each is the same function as its torch.* spelling)."""
from __future__ import annotations

from .nn.functional import log_softmax, softmax
from .tracer.functional import (digamma, erf, erfinv, exp2, expm1, lgamma, log1p,  # noqa: F401
                                sigmoid)
from .tracer.functional_math import logsumexp, mvlgamma, polygamma, round, xlogy  # noqa: F401

psi = digamma
gammaln = lgamma
multigammaln = mvlgamma
expit = sigmoid

__all__ = ["digamma", "erf", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p",
           "log_softmax", "logsumexp", "multigammaln", "polygamma", "psi", "round", "softmax",
           "xlogy"]
