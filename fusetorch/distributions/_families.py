"""The distribution families added beside the first ones (one import line in __init__)."""
from .beta import Beta
from .binomial import Binomial
from .cauchy import Cauchy
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .laplace import Laplace
from .log_normal import LogNormal
from .poisson import Poisson
from .studentT import StudentT
from . import kl_more  # noqa: F401  (registers their closed-form KL divergences)

__all__ = ["Beta", "Binomial", "Cauchy", "Chi2", "Dirichlet", "Exponential", "Gamma",
           "Geometric", "Gumbel", "HalfNormal", "Laplace", "LogNormal", "Poisson", "StudentT"]
