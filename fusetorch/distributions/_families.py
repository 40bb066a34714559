"""The distribution families added beside the first ones, and the transforms' names."""
from .beta import Beta
from .binomial import Binomial
from .cauchy import Cauchy
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .laplace import Laplace
from .log_normal import LogNormal
from .poisson import Poisson
from .studentT import StudentT
from .fishersnedecor import FisherSnedecor
from .half_cauchy import HalfCauchy
from .inverse_gamma import InverseGamma
from .kumaraswamy import Kumaraswamy
from .logistic_normal import LogisticNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .negative_binomial import NegativeBinomial
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .transformed_distribution import TransformedDistribution
from .weibull import Weibull
from . import kl_more, transforms  # noqa: F401  (kl_more registers the closed-form KLs)

__all__ = ["Beta", "Binomial", "Cauchy", "Chi2", "Dirichlet", "Exponential",
           "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "InverseGamma", "Kumaraswamy", "Laplace", "LogisticNormal", "LogNormal",
           "MixtureSameFamily", "Multinomial", "NegativeBinomial", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Weibull",
           "transforms", *transforms.__all__]
