"""nn.functional: activations, softmax and log_softmax, composed from tensor primitives.

The pure part of each composite of several primitives is a `@composite`: from its second call
with the same layouts one fused kernel (large inputs) or one interpreted graph (small ones),
not a numpy pass and a dispatch per primitive. Each composite keeps PyTorch's gradient at its
kinks (leaky_relu and elu at 0, hardtanh at its bounds, softplus at its threshold) and never lets
an unused `where` branch overflow: a branch's gradient is multiplied by zero, and 0 * inf would
be nan, so arguments of exp are clamped first.
The result is labelled with PyTorch's grad_fn name (`GeluBackward0`, ...).
"""
from __future__ import annotations

import math
import warnings

from ...ir import dtypes as dt
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.methods import _inplace
from ...tracer.tensor import Tensor
from ...tracer import autocast as _ac
from ...tracer.composite_programs import composite
from ...tracer.softmax import _owned, _softmax_dim, log_softmax, softmax

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "sigmoid", "tanh", "gelu",
           "elu", "elu_", "selu_", "celu_", "softplus", "silu", "mish", "hardtanh", "hardtanh_", "softmax",
           "softmin", "log_softmax", "logsigmoid", "softsign", "tanhshrink", "threshold",
           "threshold_", "hardsigmoid", "hardswish", "selu", "celu", "prelu", "glu", "rrelu",
           "rrelu_", "hardshrink", "softshrink", "gumbel_softmax"]


def _float_only(input: Tensor, kernel: str) -> None:
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")


def _opmath(input: Tensor, fn) -> Tensor:
    """fn(x) in float32 for a float16/bfloat16 x, rounded once back, as ATen's CPU kernels:
    a composition rounding each step to half loses small values (gelu's tanh form gave -0.0
    at -4, where the value is -7e-5)."""
    if input._dtype not in (dt.float16, dt.bfloat16):
        return fn(input)
    return D.cast(fn(D.cast(input, dt.float32)), input._dtype)


def _maybe_inplace(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return _inplace(input, result) if inplace else result


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at 0 is 0."""
    return input.relu_() if inplace else F.relu(input)


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val]; the gradient passes only strictly inside (PyTorch's
    hardtanh, unlike clamp, passes nothing at the bounds)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, _hardtanh(input, min_val, max_val), inplace)


@composite
def _hardtanh(input: Tensor, min_val: float, max_val: float) -> Tensor:
    r = F.where(input <= min_val, min_val,
                F.where(input >= max_val, max_val, _inside(input, input < max_val, input)))
    if r._dtype is not input._dtype:
        r = D.cast(r, input._dtype)
    return A.label_recorded(r, "HardtanhBackward0", input)


def _inside(input: Tensor, inside: Tensor, value: Tensor) -> Tensor:
    """`value` where `inside`, else NaN (input is NaN there) with a zero gradient: PyTorch's
    vectorised backward of hardtanh and hardsigmoid tests `min < x < max`, false at NaN (its
    scalar tail passes the gradient instead; the vector answer is the one kept here)."""
    return F.where(inside, value, input * 0.0)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x (the slope also at 0, as in PyTorch)."""
    D.check_tensor(input, "leaky_relu", "input", 1)
    _float_only(input, "leaky_relu_cpu")
    return _maybe_inplace(input, _leaky_relu(input, negative_slope), inplace)


@composite
def _leaky_relu(input: Tensor, negative_slope: float) -> Tensor:
    r = F.where(input > 0, input, input * negative_slope)
    return A.label_recorded(r, "LeakyReluBackward0", input)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def sigmoid(input: Tensor) -> Tensor:
    return F.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return F.tanh(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) with Phi the standard normal CDF (through erf), or its tanh approximation."""
    D.check_tensor(input, "gelu", "input", 1)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    if approximate == "none":
        r = D.elementwise("gelu", input)  # (one primitive: ir/elementwise.py says why)
        return A.label_recorded(r, "GeluBackward0", input)
    return _gelu_tanh_op(input)


@composite
def _gelu_tanh_op(input: Tensor) -> Tensor:
    return A.label_recorded(_opmath(input, _gelu_tanh), "GeluBackward0", input)


def _gelu_tanh(x: Tensor) -> Tensor:
    inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
    return x * 0.5 * (F.tanh(inner) + 1.0)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1)."""
    D.check_tensor(input, "elu", "input", 1)
    _float_only(input, "elu_cpu")
    return _maybe_inplace(input, _elu(input, alpha, 1.0, 1.0), inplace)


@composite
def _elu(input: Tensor, alpha: float, scale: float, divisor: float) -> Tensor:
    """scale * (x where x > 0, else alpha * (exp(x / divisor) - 1)): elu, selu, celu."""
    def value(x: Tensor) -> Tensor:
        # clamp: exp of a large positive x overflows in the unused branch
        neg = F.clamp(x, max=0.0)
        if divisor != 1.0:
            neg = neg / divisor
        r = F.where(x <= 0, F.expm1(neg) * alpha, x)  # PyTorch's test: NaN takes x's branch
        return r * scale if scale != 1.0 else r
    return A.label_recorded(_opmath(input, value), "EluBackward0", input)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    _float_only(input, "elu_cpu")
    return _maybe_inplace(input, _elu(input, alpha, scale, 1.0), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    _float_only(input, "elu_cpu")
    return _maybe_inplace(input, _elu(input, alpha, 1.0, alpha), inplace)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    D.check_tensor(input, "softplus", "input", 1)
    _float_only(input, "softplus_cpu")
    return _softplus_op(input, beta, threshold)


@composite
def _softplus_op(input: Tensor, beta: float, threshold: float) -> Tensor:
    r = _opmath(input, lambda x: _softplus(x, beta, threshold))
    return A.label_recorded(r, "SoftplusBackward0", input)


def _softplus(x: Tensor, beta: float, threshold: float) -> Tensor:
    bx = x * beta
    # where, not clamp: NaN keeps its NaN gradient, as PyTorch's z / (z + 1)
    soft = F.log1p(F.exp(F.where(bx > threshold, float(threshold), bx))) / beta
    return F.where(bx > threshold, x, soft)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    D.check_tensor(input, "silu", "input", 1)
    _float_only(input, "silu_cpu")
    r = input * F.sigmoid(input)
    return _maybe_inplace(input, A.label_recorded(r, "SiluBackward0", input), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    D.check_tensor(input, "mish", "input", 1)
    _float_only(input, "mish_cpu")
    return _maybe_inplace(input, _mish(input), inplace)


@composite
def _mish(input: Tensor) -> Tensor:
    r = _opmath(input, lambda x: x * F.tanh(_softplus(x, 1.0, 20.0)))
    return A.label_recorded(r, "MishBackward0", input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; the gradient passes strictly inside (-3, 3)."""
    D.check_tensor(input, "hardsigmoid", "input", 1)
    _float_only(input, "hardsigmoid_cpu")
    return _maybe_inplace(input, _hardsigmoid(input), inplace)


@composite
def _hardsigmoid(input: Tensor) -> Tensor:
    r = F.where(input <= -3.0, 0.0,
                F.where(input >= 3.0, 1.0, _inside(input, input < 3.0, (input + 3.0) / 6.0)))
    if r._dtype is not input._dtype:
        r = D.cast(r, input._dtype)
    return A.label_recorded(r, "HardsigmoidBackward0", input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _maybe_inplace(input, _hardswish(input), inplace)


@composite
def _hardswish(input: Tensor) -> Tensor:
    # PyTorch's: x * 0 up to -3 (-0, and NaN at -inf); the middle branch of x clamped, so
    # that its unused gradient at +-inf is not inf * 0
    mid = F.clamp(input, -3.0, 3.0)
    inner = F.where(input <= -3.0, input * 0.0,
                    F.where(input >= 3.0, input, mid * (mid + 3.0) / 6.0))
    return A.label_recorded(inner, "HardswishBackward0", input)


@composite
def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    D.check_tensor(input, "log_sigmoid", "input", 1)
    _float_only(input, "log_sigmoid_cpu")
    r = _opmath(input, lambda x: -_softplus(-x, 1.0, 20.0))  # half: 1 ulp off composed
    return A.label_recorded(r, "LogSigmoidBackward0", input)


def softsign(input: Tensor) -> Tensor:
    return input / (F.abs(input) + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - F.tanh(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where x <= threshold, else x (NaN passes, with its gradient, as PyTorch's)."""
    return _maybe_inplace(input, _threshold(input, threshold, value), inplace)


@composite
def _threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    r = F.where(input <= threshold, value, input)
    if r._dtype is not input._dtype:
        r = D.cast(r, input._dtype)
    return A.label_recorded(r, "ThresholdBackward0", input)


def threshold_(input: Tensor, threshold_: float, value: float) -> Tensor:
    return threshold(input, threshold_, value, inplace=True)


# ---------------------------------------------------------------- softmax family
# softmax and log_softmax live in tracer/softmax.py (Tensor.softmax needs them; the tracer
# imports nothing from nn)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: dt.DType | None = None) -> Tensor:
    D.check_tensor(input, "softmin", "input", 1)
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    # PyTorch's (-input).softmax(dim, dtype): negated in the input's dtype (uint8 wraps)
    return softmax(-input, dim, dtype=dtype)


# ---------------------------------------------------------------- learned, gated, random slopes

@_ac.op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; `weight` has 1 element or one per channel (dim 1)."""
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    n = weight.numel()
    w = weight
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
        w = F.reshape(weight, (1, n) + (1,) * (input.ndim - 2))
    elif weight.ndim == 1:  # one slope: 0-d, so a 0-d input stays 0-d
        w = F.reshape(weight, ())
    r = F.where(input > 0, input, w * input)
    return A.label_recorded(r, "PreluKernelBackward0", input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) where a, b are the two halves of `input` along `dim`."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    from ...ir.shapes import norm_dim
    d = norm_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = F.chunk(input, 2, d)
    return A.label_recorded(a * F.sigmoid(b), "GluBackward0", input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomised leaky ReLU: in training each negative element gets its own slope drawn from
    U(lower, upper); in evaluation the slope is their mean, (lower + upper) / 2."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    _float_only(input, "rrelu_with_noise_cpu")
    from ...tracer.creation import rand
    slope = rand(tuple(input.shape), dtype=input._dtype, device=input.device) * (upper - lower)
    r = F.where(input >= 0, input, input * (slope + lower))
    return _maybe_inplace(input, A.label_recorded(r, "RreluWithNoiseBackward0", input), inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


@composite
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0; NaN stays NaN with gradient 0 (PyTorch's forward and
    backward test the band differently)."""
    _float_only(input, "hardshrink_cpu")
    r = F.where(F.logical_or(input > lambd, input < -lambd), input,
                F.where(F.logical_and(input >= -lambd, input <= lambd), 0.0, input.detach()))
    if r._dtype is not input._dtype:
        r = D.cast(r, input._dtype)
    return A.label_recorded(r, "HardshrinkBackward0", input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype "
                           f"{D._torch_name(input._dtype).capitalize()}, but found {lambd:g}")
    _float_only(input, "softshrink_check")
    return _softshrink(input, lambd)


@composite
def _softshrink(input: Tensor, lambd: float) -> Tensor:
    # NaN stays NaN with gradient 0, as PyTorch's forward and backward give
    r = F.where(input > lambd, input - lambd, F.where(input < -lambd, input + lambd,
                F.where(F.logical_and(input >= -lambd, input <= lambd), 0.0, input.detach())))
    if r._dtype is not input._dtype:
        r = D.cast(r, input._dtype)
    return A.label_recorded(r, "SoftshrinkBackward0", input)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with g standard Gumbel noise (-log(E), E ~ Exp(1), drawn
    as -log(U)). `hard=True` returns the one-hot of the argmax in the forward pass and the
    soft sample's gradient (straight-through: y_hard - y_soft.detach() + y_soft)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from ...tracer.creation import rand
    u = rand(tuple(logits.shape), dtype=logits._dtype, device=logits.device)
    # 1 - u lies in (0, 1]: the log of an exact 0 would give an infinite sample
    gumbels = -F.log(-F.log1p(-u))
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    from ...ir.shapes import norm_dim
    d = norm_dim(dim, max(logits.ndim, 1))
    index = F.argmax(y_soft, d, keepdim=True)
    from ...tracer.creation import ones, zeros_like
    y_hard = F.scatter_add(zeros_like(y_soft), d, index,
                           ones(tuple(index.shape), dtype=y_soft._dtype, device=y_soft.device))
    with A.no_grad():
        soft_const = F.clone(y_soft)
    return y_hard - soft_const + y_soft
