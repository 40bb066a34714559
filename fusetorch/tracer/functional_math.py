"""torch-level math built on the elementwise primitives: the integer-division family, rounding
with decimals, the arc-function aliases, NaN/inf predicates and repairs, and NaN-aware or
stable reductions (`logsumexp`, `nansum`, `nanmean`). Everything is composed from primitives,
so autograd and compile need nothing more; the one-op functions (`torch.tan`, ...) come from
the op table itself (`unary_api`)."""
from __future__ import annotations

from ..ir import dtypes as dt
from . import dispatch as D
from .composite_programs import composite
from .dispatch import binary
from .functional import tensor_first, tensors_only, write_out
from .out_args import cast_first, with_out
from .tensor import Tensor
from .numpy_names import numpy_names

# finfo(d).max of the float dtypes (nan_to_num's default replacements)
_FLOAT_MAX = {dt.float16: 65504.0, dt.bfloat16: 3.3895313892515355e38,
              dt.float32: 3.4028234663852886e38, dt.float64: 1.7976931348623157e308}


def _f():
    from . import functional
    return functional


def _c():
    from . import creation
    return creation


# PyTorch's rule for Python numbers differs per function: `tensor_first` (a number only as
# `other`: fmod), `tensors_only` (no numbers: atan2), none (either one, not both: remainder) or
# two numbers making a tensor (floor_divide)

def remainder(input, other, *, out=None) -> Tensor:
    """Python's modulus: the result has the sign of `other`."""
    return write_out(binary("remainder", input, other), out, operands=(input, other))


def fmod(input, other, *, out=None) -> Tensor:
    """C's fmod: the result has the sign of `input`."""
    tensor_first("fmod", input, other)
    return write_out(binary("fmod", input, other), out, operands=(input, other))


def floor_divide(input, other, *, out=None) -> Tensor:
    """floor(input / other), as `//`."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = _c().tensor(input)
    return write_out(binary("floor_divide", input, other), out, operands=(input, other))


def atan2(input, other, *, out=None) -> Tensor:
    """The angle of (other, input), in (-pi, pi]."""
    tensors_only("atan2", input, other)
    return write_out(binary("atan2", input, other), out, operands=(input, other))


arctan2 = atan2


def hypot(input, other, *, out=None) -> Tensor:
    """sqrt(input^2 + other^2) without overflow."""
    tensors_only("hypot", input, other)
    return write_out(binary("hypot", input, other), out, operands=(input, other))


def logaddexp(input, other, *, out=None) -> Tensor:
    """log(exp(input) + exp(other)) without overflow."""
    tensors_only("logaddexp", input, other)
    return write_out(binary("logaddexp", input, other), out, operands=(input, other))


def integer_op(name: str, input, other, out) -> Tensor:
    """A binary op of integer kernels only; into `out=` the operands' result type is checked
    castable before the kernel is looked for, as in place (`out_args.cast_first`)."""
    if out is not None:
        cast_first(out, (input, other))
    return write_out(binary(name, input, other), out, operands=(input, other))


def bitwise_left_shift(input, other, *, out=None) -> Tensor:
    """input << other (integers)."""
    return integer_op("bitwise_left_shift", input, other, out)


def bitwise_right_shift(input, other, *, out=None) -> Tensor:
    """input >> other (integers)."""
    return integer_op("bitwise_right_shift", input, other, out)


def bitwise_and(input, other, *, out=None) -> Tensor:
    """input & other (integers and bools)."""
    return integer_op("bitwise_and", input, other, out)


def bitwise_or(input, other, *, out=None) -> Tensor:
    """input | other (integers and bools)."""
    return integer_op("bitwise_or", input, other, out)


def bitwise_xor(input, other, *, out=None) -> Tensor:
    """input ^ other (integers and bools)."""
    return integer_op("bitwise_xor", input, other, out)


def div_rounded(input, other, rounding_mode: str | None) -> Tensor:
    """torch.div's `rounding_mode`: None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return binary("div", input, other)
    if rounding_mode == "floor":
        return binary("floor_divide", input, other)
    if rounding_mode != "trunc":
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    floor = binary("floor_divide", input, other)
    if floor._dtype.is_floating_point:
        return D.unary("trunc", binary("div", input, other))
    # integers: floor and trunc differ where the quotient is negative and inexact
    inexact = binary("ne", binary("remainder", input, other), 0)
    sign = [binary("lt", v, 0) if isinstance(v, Tensor) else v < 0 for v in (input, other)]
    negative = binary("ne", *sign)
    return D.elementwise("where", binary("bitwise_and", inexact, negative),
                         binary("add", floor, 1), floor)


def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    """Half to even, as PyTorch; `decimals` scales by 10**decimals around it."""
    if decimals == 0:
        return write_out(D.unary("round", input), out, operands=(input,))
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"round_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    # PyTorch's kernel: in float32 for float16/bfloat16 (its opmath, one rounding at the end),
    # scaled by the exact 10**|decimals| (a negative `decimals` divides first: 10**-3 is inexact)
    low = input._dtype in (dt.float16, dt.bfloat16)
    x = D.cast(input, dt.float32) if low else input
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        r = binary("div", D.unary("round", binary("mul", x, scale)), scale)
    else:
        r = binary("mul", D.unary("round", binary("div", x, scale)), scale)
    return write_out(D.cast(r, input._dtype) if low else r, out)


def frac(input: Tensor, *, out=None) -> Tensor:
    if not input._dtype.is_floating_point:  # (ATen's frac has float kernels only)
        raise NotImplementedError(f'"frac_cpu" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    return write_out(binary("sub", input, D.unary("trunc", input)), out)


def fix(input: Tensor, *, out=None) -> Tensor:
    return write_out(D.unary("trunc", input), out, operands=(input,))


def sgn(input: Tensor, *, out=None) -> Tensor:
    return write_out(D.unary("sign", input), out, operands=(input,))


def arcsin(input: Tensor, *, out=None) -> Tensor:
    """Alias of torch.asin."""
    return write_out(D.unary("asin", input), out, operands=(input,))


def arccos(input: Tensor, *, out=None) -> Tensor:
    """Alias of torch.acos."""
    return write_out(D.unary("acos", input), out, operands=(input,))


def arctan(input: Tensor, *, out=None) -> Tensor:
    """Alias of torch.atan."""
    return write_out(D.unary("atan", input), out, operands=(input,))


def arcsinh(input: Tensor, *, out=None) -> Tensor:
    """Alias of torch.asinh."""
    return write_out(D.unary("asinh", input), out, operands=(input,))


def arccosh(input: Tensor, *, out=None) -> Tensor:
    """Alias of torch.acosh."""
    return write_out(D.unary("acosh", input), out, operands=(input,))


def arctanh(input: Tensor, *, out=None) -> Tensor:
    """Alias of torch.atanh."""
    return write_out(D.unary("atanh", input), out, operands=(input,))


# ---------------------------------------------------------------- NaN and infinity

def isnan(input: Tensor) -> Tensor:
    return binary("ne", input, input)  # only NaN differs from itself (False for integers)


def _abs_is_inf(input: Tensor) -> Tensor:
    return binary("eq", D.unary("abs", input), float("inf"))


def isinf(input: Tensor) -> Tensor:
    if not input._dtype.is_floating_point:
        return _c().zeros_like(input, dtype=dt.bool_)
    return _abs_is_inf(input)


def isposinf(input: Tensor) -> Tensor:
    if not input._dtype.is_floating_point:
        return _c().zeros_like(input, dtype=dt.bool_)
    return binary("eq", input, float("inf"))


def isneginf(input: Tensor) -> Tensor:
    if not input._dtype.is_floating_point:
        return _c().zeros_like(input, dtype=dt.bool_)
    return binary("eq", input, float("-inf"))


def isfinite(input: Tensor) -> Tensor:
    D.check_tensor(input, "isfinite", "input", 1)
    if not input._dtype.is_floating_point:
        return _c().ones_like(input, dtype=dt.bool_)
    return binary("bitwise_and", binary("eq", input, input),
                  D.elementwise("logical_not", _abs_is_inf(input)))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out=None) -> Tensor:
    """NaN -> `nan`, +inf -> `posinf` (default: the dtype's largest finite value), -inf ->
    `neginf` (default: the most negative); integers are returned as they are."""
    if not input._dtype.is_floating_point:
        return write_out(D.unary("copy", input), out)
    return write_out(_nan_to_num(input, nan, posinf, neginf), out)


@composite  # (five primitives: one kernel for a large input)
def _nan_to_num(input: Tensor, nan: float, posinf: float | None, neginf: float | None) -> Tensor:
    big = _FLOAT_MAX[input._dtype]
    r = D.elementwise("where", isnan(input), nan, input)
    r = D.elementwise("where", binary("eq", input, float("inf")),
                      big if posinf is None else posinf, r)
    return D.elementwise("where", binary("eq", input, float("-inf")),
                         -big if neginf is None else neginf, r)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other|, elementwise; infinities only equal
    themselves; NaNs equal each other only with `equal_nan`."""
    _f().tensors_only("isclose", input, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{input._dtype} did not match {other._dtype}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    same = binary("eq", input, other)
    if equal_nan:
        same = binary("bitwise_or", same, binary("bitwise_and", isnan(input), isnan(other)))
    if not input._dtype.is_floating_point:
        # ATen: zero tolerances are equality; else integers (bools as 0 and 1) are compared in
        # the default float dtype, so int8's -128 - 127 is -255., not a wrapped 1
        if rtol == 0 and atol == 0:
            return same
        input, other = D.cast(input, dt.default_float()), D.cast(other, dt.default_float())
        diff = D.unary("abs", binary("sub", input, other))
        return binary("bitwise_or", same, binary("le", diff, binary(
            "add", atol, D.unary("abs", binary("mul", rtol, other)))))
    finite = binary("bitwise_and", isfinite(input), isfinite(other))
    close = binary("le", D.unary("abs", binary("sub", input, other)),
                   binary("add", atol, binary("mul", rtol, D.unary("abs", other))))
    return binary("bitwise_or", same, binary("bitwise_and", finite, close))


def xlogy(input, other, *, out=None) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN)."""
    x, y = (input if isinstance(input, Tensor) else None), other
    if x is None:
        x = _c().full_like(other, input) if isinstance(other, Tensor) else input
    if not isinstance(y, Tensor):
        y = _c().full_like(x, y)
    return write_out(binary("xlogy", x, y), out)  # (a primitive: ir/special_ops.py says why)


def heaviside(input: Tensor, values: Tensor, *, out=None) -> Tensor:
    _f().tensors_only("heaviside", input, values)
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    step = D.cast(binary("gt", input, 0), input._dtype)
    return write_out(D.elementwise("where", binary("eq", input, 0), values, step), out)


def bitwise_not(input: Tensor, *, out=None) -> Tensor:
    D.check_tensor(input, "bitwise_not", "input", 1)
    if input._dtype.is_floating_point:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                           f"'{D._torch_name(input._dtype)}'")
    r = D.elementwise("logical_not" if input._dtype is dt.bool_ else "bitwise_not", input)
    return write_out(r, out)


# ---------------------------------------------------------------- reductions

@numpy_names
def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    """log(sum(exp(input), dim)), computed around the maximum so it never overflows."""
    D.check_tensor(input, "logsumexp", "input", 1)
    F = _f()
    x = input if input._dtype.is_floating_point else D.cast(input, dt.default_float())
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if x.numel() == 0:  # an empty sum: log(0) = -inf where a reduced dim is empty
        return write_out(D.unary("log", F.sum(D.unary("exp", x), dims, keepdim=keepdim)), out)
    m = F.amax(x, dims, keepdim=True) if x.ndim else x
    m = D.elementwise("where", _abs_is_inf(m), 0.0, m)  # all -inf (or an inf): no shift
    s = F.sum(D.unary("exp", binary("sub", x, m)), dims, keepdim=True) if x.ndim else \
        D.unary("exp", binary("sub", x, m))
    r = binary("add", D.unary("log", s), m)
    if not keepdim and x.ndim:
        for d in sorted((d % x.ndim for d in dims), reverse=True):
            r = F.squeeze(r, d)
    return write_out(r, out)


@numpy_names
@with_out("nansum")
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    zeroed = D.elementwise("where", isnan(input), 0, input) \
        if input._dtype.is_floating_point else input
    return _f().sum(zeroed, dim, keepdim, dtype=dtype)


@numpy_names
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {D._torch_name(input._dtype)}")
    F = _f()
    count = F.sum(D.elementwise("logical_not", isnan(input)), dim, keepdim, dtype=input._dtype)
    return binary("div", nansum(input, dim, keepdim, dtype=dtype), count)


# ---------------------------------------------------------------- gamma family

def polygamma(n: int, input: Tensor, *, out=None) -> Tensor:
    """The n-th derivative of digamma; n = 0 is digamma itself (grad_fn PolygammaBackward0
    either way, as in PyTorch)."""
    n = _c()._int(n, "polygamma", "n", 1)
    D.check_tensor(input, "polygamma", "input", 2)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        result = D.unary("digamma", input)
    else:
        compute, _ = D.promote_args("polygamma", [input])
        result = D.apply("polygamma", [D.cast(input, compute)], {"n": n})
    if D.GRAD_ENABLED and input._requires_grad:
        from . import autograd
        autograd.label(result, "PolygammaBackward0", input)
    return write_out(result, out)


def mvlgamma(input: Tensor, p: int, *, out=None) -> Tensor:
    """The multivariate log-gamma of dimension p: p (p-1) / 4 log(pi) + sum_i lgamma(x - i/2),
    i = 0..p-1, summed in PyTorch's order (from x - (p-1)/2 up to x). Like PyTorch 2.13 it does
    not check that x > (p-1)/2."""
    p = _c()._int(p, "mvlgamma", "p", 2)
    D.check_tensor(input, "mvlgamma", "input", 1)
    if input._dtype is dt.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    F = _f()
    compute, _ = D.promote_args("lgamma", [input])
    shifts = _c().arange(-(p - 1) / 2, 0.5, 0.5, dtype=compute, device=input.device)
    terms = D.unary("lgamma", binary("add", F.unsqueeze(D.cast(input, compute), -1), shifts))
    result = binary("add", F.sum(terms, -1), p * (p - 1) * 1.1447298858494002 / 4)
    if D.GRAD_ENABLED and input._requires_grad:
        from . import autograd
        autograd.label(result, "MvlgammaBackward0", input)
    return write_out(result, out)


# what fusetorch exports (and Tensor binds as methods) from here
PUBLIC = ("remainder", "fmod", "floor_divide", "atan2", "arctan2", "hypot", "logaddexp",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
          "bitwise_right_shift", "bitwise_not", "round", "frac", "fix", "sgn", "arcsin",
          "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "isnan", "isinf", "isposinf",
          "isneginf", "isfinite", "nan_to_num", "isclose", "xlogy", "heaviside", "logsumexp",
          "nansum", "nanmean", "mvlgamma")
# exported as torch.<name> only: Tensor.polygamma(n) takes its arguments the other way round
TORCH_ONLY = ("polygamma",)
