"""fusetorch.distributions: probability distributions as torch.distributions has them, built
from tensor operations (log_prob, entropy, rsample differentiate and compile like any other
code). Sampling draws from the global generator, so `manual_seed` repeats it."""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .continuous_bernoulli import ContinuousBernoulli
from .distribution import Distribution
from .generalized_pareto import GeneralizedPareto
from .independent import Independent
from .kl import kl_divergence, register_kl
from .lkj_cholesky import LKJCholesky
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform
from .von_mises import VonMises
from .wishart import Wishart
from . import _families, constraint_registry, kl_lowrank_cb, transforms  # noqa: F401
from .constraint_registry import biject_to, transform_to
from ._families import (  # noqa: F401
    Beta, Binomial, Cauchy, Chi2, Dirichlet, Exponential, ExponentialFamily, FisherSnedecor,
    Gamma, Geometric,
    Gumbel, HalfCauchy, HalfNormal, InverseGamma, Kumaraswamy, Laplace, LogisticNormal,
    LogNormal, MixtureSameFamily, Multinomial, NegativeBinomial,
    OneHotCategorical, OneHotCategoricalStraightThrough, Pareto, Poisson, RelaxedBernoulli,
    RelaxedOneHotCategorical, StudentT, TransformedDistribution, Weibull)
from .transforms import (  # noqa: F401
    AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
    CumulativeDistributionTransform, StackTransform,
    ExpTransform, IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
    PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform, SoftplusTransform,
    StickBreakingTransform, TanhTransform, Transform, identity_transform)

__all__ = ["Bernoulli", "Categorical", "ContinuousBernoulli", "Distribution", "GeneralizedPareto",
           "Independent", "LKJCholesky",
           "LowRankMultivariateNormal", "MultivariateNormal",
           "Normal", "Uniform", "VonMises", "Wishart", *_families.__all__,
           "constraints", "kl_divergence", "register_kl", "biject_to", "transform_to"]


def __getattr__(name: str):
    raise AttributeError(f"module 'fusetorch.distributions' has no attribute '{name}'")
