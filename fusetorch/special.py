"""torch.special: the functions of PyTorch's special-function namespace that fusetorch has,
under their `torch.special` names (each is the same function as its torch.* spelling)."""
from __future__ import annotations

from .nn.functional import log_softmax, softmax
from .tracer.functional import (digamma, erf, erfinv, exp2, expm1, lgamma, log1p,  # noqa: F401
                                sigmoid)
from .tracer.functional_math import logsumexp, mvlgamma, polygamma, round, xlogy  # noqa: F401
from .tracer.functional import erfc, i0  # noqa: F401  (op-table primitives, issue 27)
from .tracer.functional_more import logit, sinc  # noqa: F401
from .tracer import dispatch as _D
from .tracer.functional import write_out as _write_out


def _primitive(name: str, doc: str):
    def fn(input, *, out=None):
        _D.check_tensor(input, name, "input", 1)
        return _write_out(_D.unary(name, input), out)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


i0e = _primitive("i0e", "exp(-|x|) I0(x), the exponentially scaled Bessel function I0.")
i1 = _primitive("i1", "The modified Bessel function of the first kind of order 1.")
i1e = _primitive("i1e", "exp(-|x|) I1(x), the exponentially scaled Bessel function I1.")

psi = digamma
gammaln = lgamma
multigammaln = mvlgamma
expit = sigmoid

__all__ = ["digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e",
           "i1", "i1e", "log1p", "log_softmax", "logit", "logsumexp", "multigammaln",
           "polygamma", "psi", "round", "sinc", "softmax", "xlogy"]
