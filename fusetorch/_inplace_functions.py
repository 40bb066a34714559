"""torch-level in-place functions (`torch.abs_(x)`, `torch.clamp_(x, 0, 1)`, `torch.dropout_`)
and the comparison and arithmetic aliases PyTorch spells twice (`torch.greater`,
`Tensor.not_equal_`, `Tensor.absolute`).

A torch-level in-place function is the Tensor method (`torch.abs_(x)` is `x.abs_()`): the
method's leaf, overlap and dtype checks apply, and there is one definition of each op (the
defs of METHODS' and VIEW_METHODS' are generated: _api/torch_inplace.py). The
ones without a method (`torch.selu_`, `torch.dropout_`, ...) call nn.functional's in-place
form with ATen's positional signature. Aliases are the same function object as their target.
"""
from __future__ import annotations

from .nn._functional import activation as _act
from .nn._functional import dropout as _drop
from .nn._functional import sparse as _sparse
from .tracer import dispatch as D
from .tracer.tensor import Tensor

# torch.<name>_ = Tensor.<name>_ (every one of these methods exists)
METHODS = ("abs acos acosh addmv arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan "
           "atanh ceil clamp clamp_max clamp_min clip conj_physical cos cosh deg2rad detach erf "
           "erfc exp exp2 expm1 fix floor frac gcd i0 index_put lcm ldexp log log10 log1p log2 "
           "logit nan_to_num neg negative rad2deg reciprocal relu resize_as round rsqrt sigmoid "
           "sin sinc sinh sqrt square tan tanh trunc xlogy").split()
# torch.<name>_ = Tensor.<name>_ too: the in-place views PyTorch exposes at torch level
VIEW_METHODS = ("as_strided",)

# Tensor.<alias> = Tensor.<target> (PyTorch's second spellings)
TENSOR_ALIASES = {
    "absolute": "abs", "absolute_": "abs_", "divide_": "div_", "multiply_": "mul_",
    "subtract_": "sub_", "true_divide_": "div_", "greater": "gt", "greater_": "gt_",
    "greater_equal": "ge", "greater_equal_": "ge_", "less": "lt", "less_": "lt_",
    "less_equal": "le", "less_equal_": "le_", "not_equal": "ne", "not_equal_": "ne_",
}
# torch.<alias> = torch.<target>
TORCH_ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
                 "not_equal": "ne"}


def bind_tensor_aliases() -> None:
    """Tensor's second spellings (called once at import, after the tracer has bound the methods
    they name)."""
    for alias, target in TENSOR_ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, target))


bind_tensor_aliases()


def selu_(input: Tensor) -> Tensor:
    return _act.selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _act.celu(input, alpha, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _act.threshold(input, threshold, value, inplace=True)


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3, training: bool = False,
           generator=None) -> Tensor:
    if generator is not None:
        raise NotImplementedError("fusetorch: rrelu_ draws from the global generator; "
                                  "generator= is not supported")
    return _act.rrelu(input, lower, upper, training, inplace=True)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _drop.dropout(input, p, train, inplace=True)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _drop.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _drop.feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    D.check_tensor(input, "feature_dropout_", "input", 1)
    return _drop._feature_dropout(input, p, train, True, True)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """The rows of `input` that `indices` names, scaled in place to at most `max_norm`."""
    D.check_tensor(input, "embedding_renorm_", "input", 1)
    D.check_tensor(indices, "embedding_renorm_", "indices", 2)
    _sparse._renorm_(input, indices, max_norm, norm_type)
    return input


# the torch-level in-place functions written here (torch.abs_, torch.clamp_, ... of METHODS and
# VIEW_METHODS are generated defs: _api/torch_inplace.py)
PUBLIC = ("selu_", "celu_", "threshold_", "rrelu_", "dropout_", "alpha_dropout_",
          "feature_alpha_dropout_", "feature_dropout_", "embedding_renorm_")
