"""Chi2(df): Gamma(df / 2, 1 / 2)."""
from __future__ import annotations

from ..tracer.tensor import Tensor
from . import constraints
from ._params import expand_params
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Chi2, ("concentration", "rate"), batch_shape, _instance)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
