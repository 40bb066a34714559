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
erfcx = _primitive("erfcx", "exp(x^2) erfc(x), without overflow or underflow.")
entr = _primitive("entr", "-x log x for x > 0, 0 at 0, -inf below 0, NaN for NaN.")
log_ndtr = _primitive("log_ndtr", "log of the standard normal CDF, accurate in both tails.")
ndtri = _primitive("ndtri", "The inverse of the standard normal CDF.")


def _no_grad(name: str, doc: str, op: str | None = None):
    """PyTorch computes these without a gradient (results never require grad)."""
    def fn(input, *, out=None):
        _D.check_tensor(input, name, "input", 1)
        with _no_grad_mode():
            return _write_out(_D.unary(op or name, input), out)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


from .tracer.autograd import no_grad as _no_grad_mode  # noqa: E402

airy_ai = _no_grad("airy_ai", "The Airy function Ai.")
bessel_j0 = _no_grad("bessel_j0", "The Bessel function of the first kind of order 0.")
bessel_j1 = _no_grad("bessel_j1", "The Bessel function of the first kind of order 1.")
bessel_y0 = _no_grad("bessel_y0", "The Bessel function of the second kind of order 0.")
bessel_y1 = _no_grad("bessel_y1", "The Bessel function of the second kind of order 1.")
modified_bessel_i0 = _no_grad("modified_bessel_i0", "I0 (without a gradient, as PyTorch).",
                              "i0")
modified_bessel_i1 = _no_grad("modified_bessel_i1", "I1 (without a gradient, as PyTorch).",
                              "i1")
modified_bessel_k0 = _no_grad("modified_bessel_k0", "The modified Bessel function K0.")
modified_bessel_k1 = _no_grad("modified_bessel_k1", "The modified Bessel function K1.")
scaled_modified_bessel_k0 = _no_grad("scaled_modified_bessel_k0", "exp(x) K0(x).")
scaled_modified_bessel_k1 = _no_grad("scaled_modified_bessel_k1", "exp(x) K1(x).")


def spherical_bessel_j0(input, *, out=None):
    """sin(x) / x, 1 at 0 and 0 at +-inf (without a gradient, as PyTorch)."""
    _D.check_tensor(input, "spherical_bessel_j0", "input", 1)
    with _no_grad_mode():
        x = input if input.dtype.is_floating_point else input.float()
        zero = _D.binary("eq", x, 0.0)
        safe = _D.elementwise("where", zero, 1.0, x)
        r = _D.elementwise("where", zero, 1.0, _D.binary("div", _D.unary("sin", safe), safe))
        # PyTorch's: 0 at +-inf (sin(inf) / inf would be NaN)
        inf = _D.binary("eq", _D.unary("abs", x), float("inf"))
        return _write_out(_D.elementwise("where", inf, 0.0, r), out)


def ndtr(input, *, out=None):
    """The standard normal CDF, (erfc(-x / sqrt 2)) / 2: accurate in the lower tail too."""
    _D.check_tensor(input, "ndtr", "input", 1)
    return _write_out(_D.binary("mul", _D.unary("erfc", _D.binary(
        "mul", input, -0.7071067811865476)), 0.5), out)


def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input is 0 (unless other is NaN)."""
    from .tracer.tensor import Tensor
    from .tracer import creation
    x = input if isinstance(input, Tensor) else creation.full_like(other, input)
    y = other if isinstance(other, Tensor) else creation.full_like(x, other)
    return _write_out(_D.binary("xlog1py", x, y), out)  # (a primitive: ir/special_ops.py)


def _binary_primitive(name: str, op: str, doc: str):
    def fn(input, other, *, out=None):
        from .tracer.tensor import Tensor
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            _D.check_tensor(input, name, "input", 1)
        return _write_out(_D.binary(op, input, other), out)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


zeta = _binary_primitive("zeta", "zeta", "The Hurwitz zeta function zeta(x, q).")


def _polynomial(name: str, op: str, shifted: bool):
    def fn(input, n, *, out=None):
        from .tracer.tensor import Tensor
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            _D.check_tensor(input, name, "input", 1)
        with _no_grad_mode():  # PyTorch gives them no gradient
            x = input
            if shifted:  # P*(x) = P(2x - 1), ATen's shifted forms (x + x - 1 in x's type)
                if isinstance(input, Tensor):
                    xc = _D.cast(input, _D.promote_args(op, [input, n])[0])
                    x = _D.binary("sub", _D.binary("add", xc, xc), 1.0)
                else:
                    x = float(input) + float(input) - 1.0
            return _write_out(_D.binary(op, x, n), out)
    fn.__name__ = name
    fn.__doc__ = f"{'The shifted ' if shifted else 'The '}{op.replace('_', ' ')} of degree n."
    return fn


for _op in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
            "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
            "laguerre_polynomial_l", "legendre_polynomial_p"):
    globals()[_op] = _polynomial(_op, _op, False)
    if _op.startswith("chebyshev"):
        globals()["shifted_" + _op] = _polynomial("shifted_" + _op, _op, True)
gammainc = _binary_primitive("gammainc", "igamma",
                             "The regularized lower incomplete gamma function P(input, other).")
gammaincc = _binary_primitive("gammaincc", "igammac",
                              "The regularized upper incomplete gamma function Q(input, other).")

psi = digamma
gammaln = lgamma
multigammaln = mvlgamma
expit = sigmoid

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "digamma", "entr",
           "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit",
           "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "softmax",
           "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

# names PyTorch's torch/special module holds: the Tensor class and its docstring fragments
from .tracer.tensor import Tensor  # noqa: E402,F401
common_args = {
    "input": "input (Tensor): the input tensor.",
    "generator": "generator (:class:`torch.Generator`, optional): a pseudorandom number "
                 "generator for sampling",
    "out": "out (Tensor, optional): the output tensor.",
    "memory_format": "memory_format (:class:`torch.memory_format`, optional): the desired "
                     "memory format of returned Tensor. Default: ``torch.preserve_format``.",
}
multi_dim_common = {
    **common_args,
    "dtype": "dtype (:class:`torch.dtype`, optional): the desired data type of returned "
             "tensor. If specified, the input tensor is casted to :attr:`dtype` before the "
             "operation is performed. Default: None.",
    "keepdim": "keepdim (bool): whether the output tensor has :attr:`dim` retained or not.",
    "opt_keepdim": "keepdim (bool, optional): whether the output tensor has :attr:`dim` "
                   "retained or not. Default: ``False``.",
    "dim": "dim (int or tuple of ints): the dimension or dimensions to reduce.",
    "keepdim_details": "If :attr:`keepdim` is ``True``, the output tensor is of the same size "
                       "as :attr:`input` except in the dimension(s) :attr:`dim` where it is of "
                       "size 1.",
    "opt_dim": "dim (int or tuple of ints, optional): the dimension or dimensions to reduce.",
    "opt_dim_all_reduce": "dim (int or tuple of ints, optional): the dimension or dimensions "
                          "to reduce. If ``None``, all dimensions are reduced.",
}
