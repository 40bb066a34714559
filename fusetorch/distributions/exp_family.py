"""ExponentialFamily: distributions p(x) = h(x) exp(<theta, t(x)> - F(theta)); the entropy
from the log-normalizer F by autograd (PyTorch's Bregman-divergence form)."""
from __future__ import annotations

from ..tracer.autograd import grad
from ..tracer.tensor import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses give `_natural_params`, `_log_normalizer(*params)` and
    `_mean_carrier_measure` (E[log h(x)])."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
