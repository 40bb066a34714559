"""FisherSnedecor(df1, df2): the ratio of two scaled Chi2 draws."""
from __future__ import annotations

import math

from ..runtime.device import NP_DTYPES
from ..tracer import functional as F
from ..tracer.tensor import Size, Tensor
from . import constraints
from ._params import batch_shape_of
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


def _tiny(d) -> float:
    import ml_dtypes
    return float(ml_dtypes.finfo(NP_DTYPES[d]).tiny)


class FisherSnedecor(Distribution):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape_of(self.df1, df1, df2), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = Size(batch_shape)
        new.df1 = self.df1.expand(tuple(batch_shape))
        new.df2 = self.df2.expand(tuple(batch_shape))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return F.where(self.df2 <= 2, math.nan, self.df2 / (self.df2 - 2))

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return F.where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        v = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return F.where(df2 <= 4, math.nan, v)

    def rsample(self, sample_shape=Size(())) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = _tiny(x2.dtype)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * F.log(value)
        t3 = (ct1 + ct2) * F.log1p(ct3 * value)
        return t1 + t2 - t3
