"""More of PyTorch's everyday elementwise math (issue 27), composed from primitives so that
autograd, compile and ONNX need nothing more (the bitwise functions live with the operators in
functional_math): `clamp_min clamp_max logit logical_xor fmax fmin float_power signbit sinc deg2rad
rad2deg ldexp logaddexp2 frexp positive` and, for real tensors, `conj conj_physical resolve_conj
resolve_neg isreal angle`. The primitives among them (`erfc copysign nextafter gcd lcm i0`) are
op-table entries (`ir/elementwise_more.py`, `ir/special_ops.py`); their torch functions are
here where the table's `unary_api` does not give them."""
from __future__ import annotations

import math

from ..ir import dtypes as dt
from . import dispatch as D
from .composite_programs import composite
from .dispatch import binary, cast, elementwise, unary
from .functional import _grad_name, clamp, write_out
from .functional_math import integer_op
from .tensor import Tensor
from .numpy_names import numpy_names

_LN2 = 0.6931471805599453


def _frexp_type():
    from .functional_scan import _return_type
    return _return_type("frexp", ("mantissa", "exponent"))


_FREXP = _frexp_type()


def _float(x: Tensor) -> Tensor:
    """x in a floating dtype: integers and bools in the default float type, as 'float' ops."""
    return x if x._dtype.is_floating_point else cast(x, dt.default_float())


def _both_tensors(fn: str, input, other) -> None:
    D.check_tensor(input, fn, "input", 1)
    D.check_tensor(other, fn, "other", 2)


# ---------------------------------------------------------------- clamps and logit

@_grad_name("ClampMinBackward0")
def clamp_min(input: Tensor, min, *, out=None) -> Tensor:
    D.check_tensor(input, "clamp_min", "input", 1)
    return clamp(input, min=min, out=out)


@_grad_name("ClampMaxBackward0")
def clamp_max(input: Tensor, max, *, out=None) -> Tensor:
    D.check_tensor(input, "clamp_max", "input", 1)
    return clamp(input, max=max, out=out)


@_grad_name("LogitBackward0")
def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """log(x) - log1p(-x), with PyTorch's gradient 1 / (x (1 - x)): inf at 0 and 1, NaN
    outside [0, 1] (x is made NaN there); with `eps`, x is clamped to [eps, 1 - eps] first
    (gradient 0 outside, NaN kept, as PyTorch's)."""
    D.check_tensor(input, "logit", "input", 1)
    return write_out(_logit(_float(input), eps), out)


@composite  # (six primitives: one kernel for a large input)
def _logit(x: Tensor, eps: float | None) -> Tensor:
    half = x._dtype in (dt.float16, dt.bfloat16)
    if half:  # (ATen's kernel computes in float32 and rounds once: log - log1p cancels)
        return cast(_logit(cast(x, dt.float32), eps), x._dtype)
    if eps is not None:
        x = elementwise("where", binary("lt", x, eps), eps,
                        elementwise("where", binary("gt", x, 1.0 - eps), 1.0 - eps, x))
    else:
        outside = binary("bitwise_or", binary("lt", x, 0.0), binary("gt", x, 1.0))
        x = binary("add", x, cast(elementwise("where", outside, math.nan, 0.0), x._dtype))
    return binary("sub", unary("log", x), unary("log1p", unary("neg", x)))


# ---------------------------------------------------------------- bitwise and logical

def logical_xor(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    _both_tensors("logical_xor", input, other)
    return write_out(binary("ne", binary("ne", input, 0), binary("ne", other, 0)), out)


# ---------------------------------------------------------------- IEEE helpers

def _promoted(fn: str, op: str, input: Tensor, other: Tensor) -> tuple:
    compute, _ = D.promote_args(op, [input, other])
    return cast(input, compute), cast(other, compute)


def _nan_ignoring(name: str, cmp: str):
    def fn(input: Tensor, other: Tensor, *, out=None) -> Tensor:
        # the input where it wins, ties included, or where the other is NaN; else the other:
        # NaN only where both are, and the gradient goes where the value comes from, as in
        # PyTorch (ties to the input)
        _both_tensors(name, input, other)
        a, b = _promoted(name, "maximum", input, other)
        take_a = binary(cmp, a, b)
        if a._dtype.is_floating_point:
            take_a = binary("bitwise_or", take_a, binary("ne", b, b))
        return write_out(elementwise("where", take_a, a, b), out)
    fn.__name__ = name
    fn.__doc__ = f"The elementwise {name[1:]}imum, NaN only where both inputs are NaN."
    return _grad_name(name.capitalize() + "Backward0")(fn)


fmax = _nan_ignoring("fmax", "ge")
fmin = _nan_ignoring("fmin", "le")


def copysign(input, other, *, out=None) -> Tensor:
    """|input| with the sign (bit) of other, in a floating dtype."""
    D.check_tensor(input, "copysign", "input", 1)
    return write_out(binary("copysign", input, other), out)


def nextafter(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The next representable value after input towards other."""
    _both_tensors("nextafter", input, other)
    return write_out(binary("nextafter", input, other), out)


def signbit(input: Tensor, *, out=None) -> Tensor:
    """Whether the sign bit is set: True for -0.0 and a negative NaN too."""
    D.check_tensor(input, "signbit", "input", 1)
    if input._dtype is dt.bool_:
        return write_out(binary("ne", input, input), out)
    if not input._dtype.is_floating_point:
        return write_out(binary("lt", input, 0), out)
    return write_out(binary("lt", binary("copysign", 1.0, input), 0.0), out)


def igamma(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    _both_tensors("igamma", input, other)
    return write_out(binary("igamma", input, other), out)


def igammac(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other)."""
    _both_tensors("igammac", input, other)
    return write_out(binary("igammac", input, other), out)


def frexp(input: Tensor, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1)."""
    D.check_tensor(input, "frexp", "input", 1)
    if not input._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m = unary("frexp_mantissa", input)
    e = cast(unary("frexp_exponent", input), dt.int32)
    if D.GRAD_ENABLED and input._requires_grad:
        from . import autograd
        autograd.label(m, "FrexpBackward0", input)
    if out is not None:
        write_out(m, out[0])
        write_out(e, out[1])
        m, e = out
    return _FREXP(m, e)


def gcd(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    _both_tensors("gcd", input, other)
    return integer_op("gcd", input, other, out)


def lcm(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    _both_tensors("lcm", input, other)
    return integer_op("lcm", input, other, out)


# ---------------------------------------------------------------- powers, angles, sinc

def float_power(input, exponent, *, out=None) -> Tensor:
    """input ** exponent computed in float64 (the result is float64)."""
    if not isinstance(input, Tensor):
        D.check_tensor(exponent, "float_power", "exponent", 2)
    base = cast(input, dt.float64) if isinstance(input, Tensor) else float(input)
    exp = cast(exponent, dt.float64) if isinstance(exponent, Tensor) else float(exponent)
    return write_out(binary("pow", base, exp), out)


def _float_power_(self: Tensor, exponent) -> Tensor:
    if self._dtype is not dt.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{D._torch_name(self._dtype)} but the operation's result requires "
                           f"dtype Double")
    return float_power(self, exponent)


@_grad_name("SincBackward0")
def sinc(input: Tensor, *, out=None) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0 (whose gradient is 0 there)."""
    D.check_tensor(input, "sinc", "input", 1)
    x = _float(input)
    half = x._dtype in (dt.float16, dt.bfloat16)
    if half:  # PyTorch computes in float32: pi x rounded to half would move sin(pi x) by ulps
        x = cast(x, dt.float32)
    zero = binary("eq", x, 0.0)
    px = binary("mul", elementwise("where", zero, 1.0, x), math.pi)  # no 0 / 0 in backward
    r = elementwise("where", zero, 1.0, binary("div", unary("sin", px), px))
    return write_out(cast(r, input._dtype) if half else r, out)


def _angle_scale(name: str, factor: float, label: str):
    def fn(input: Tensor, *, out=None) -> Tensor:
        D.check_tensor(input, name, "input", 1)
        return write_out(binary("mul", _float(input), factor), out)
    fn.__name__ = name
    fn.__doc__ = f"Angles converted by the factor {factor!r}."
    return _grad_name(label)(fn)


deg2rad = _angle_scale("deg2rad", math.pi / 180.0, "Deg2RadBackward0")
rad2deg = _angle_scale("rad2deg", 180.0 / math.pi, "Rad2DegBackward0")


@_grad_name("LdexpBackward0")
def ldexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """input * 2 ** other (PyTorch's own composition)."""
    _both_tensors("ldexp", input, other)
    return write_out(binary("mul", input, binary("pow", 2.0, other)), out)


@_grad_name("Logaddexp2Backward0")
def logaddexp2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """log2(2 ** input + 2 ** other) around the larger, so it never overflows."""
    _both_tensors("logaddexp2", input, other)
    if not (input._dtype.is_floating_point or other._dtype.is_floating_point):
        raise NotImplementedError('"logaddexp2_cpu" not implemented for '
                                  f"'{D._torch_name(D.promote_args('add', [input, other])[0])}'")
    a, b = _promoted("logaddexp2", "logaddexp", input, other)
    m = binary("maximum", a, b)
    d = unary("abs", binary("sub", a, b))
    r = binary("add", m, binary("div", unary("log1p", unary("exp2", unary("neg", d))), _LN2))
    # equal infinities: a - b is NaN, the answer is the infinity itself
    same_inf = binary("bitwise_and", binary("eq", a, b), binary("eq", unary("abs", a),
                                                                  math.inf))
    return write_out(elementwise("where", same_inf, a, r), out)


# ---------------------------------------------------------------- real-tensor identities

def positive(input: Tensor) -> Tensor:
    """+x: the input itself (bool is refused, as in PyTorch)."""
    D.check_tensor(input, "positive", "input", 1)
    if input._dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _real_identity(name: str):
    def fn(input: Tensor) -> Tensor:
        D.check_tensor(input, name, "input", 1)
        return input
    fn.__name__ = name
    fn.__doc__ = "The input itself: fusetorch's tensors are real (complex dtypes are out of " \
                 "scope), for which PyTorch returns the input too."
    return fn


conj = _real_identity("conj")
resolve_conj = _real_identity("resolve_conj")
resolve_neg = _real_identity("resolve_neg")


def conj_physical(input: Tensor, *, out=None) -> Tensor:
    """A copy for real tensors (the conjugate is the value itself)."""
    D.check_tensor(input, "conj_physical", "input", 1)
    return write_out(unary("copy", input), out)


def isreal(input: Tensor) -> Tensor:
    D.check_tensor(input, "isreal", "input", 1)
    return binary("bitwise_or", binary("eq", input, input), binary("ne", input, input))


@_grad_name("AngleBackward0")
def angle(input: Tensor, *, out=None) -> Tensor:
    """The argument of a real number: pi for negatives, 0 otherwise, NaN for NaN (gradient 0)."""
    D.check_tensor(input, "angle", "input", 1)
    x = _float(input)
    r = elementwise("where", binary("lt", x, 0.0), math.pi, 0.0)
    r = cast(r, x._dtype)
    return write_out(elementwise("where", binary("ne", x, x), x, r), out)


# ---------------------------------------------------------------- products and norms

def vdot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The dot product of two 1-d tensors (conjugating nothing: real tensors)."""
    from .functional import dot
    _both_tensors("vdot", input, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{D._torch_name(input._dtype)} and {D._torch_name(other._dtype)}")
    return write_out(dot(input, other), out)


@_grad_name("AddrBackward0")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2); with beta == 0 input is ignored (NaN too)."""
    for name, v in (("input", input), ("vec1", vec1), ("vec2", vec2)):
        D.check_tensor(v, "addr", name)
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
                           if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    outer = binary("mul", unsqueeze_last(vec1), vec2)
    result = D.promote_args("add", [input, outer])[0]
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) and result is not dt.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if isinstance(v, float) and not result.is_floating_point:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               f"floating point number.")
    if result is dt.bool_:  # PyTorch's: (beta and input) or (alpha and vec1 and vec2)
        r = binary("bitwise_or", input if beta else binary("mul", input, False),
                   outer if alpha else binary("mul", outer, False))
        return write_out(r, out)
    scaled = outer if alpha == 1 else binary("mul", outer, alpha)
    if beta == 0:
        from .functional import expand
        return write_out(cast(expand(scaled, *binary_shape(input, scaled)), result), out)
    base = input if beta == 1 else binary("mul", input, beta)
    return write_out(binary("add", base, scaled), out)


def unsqueeze_last(v: Tensor) -> Tensor:
    from .functional import unsqueeze
    return unsqueeze(v, -1)


def binary_shape(a: Tensor, b: Tensor) -> tuple:
    from ..ir.shapes import broadcast_shapes
    return broadcast_shapes(tuple(a.shape), tuple(b.shape))


@numpy_names
@_grad_name("RenormBackward0")
def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Each slice along `dim` whose p-norm exceeds `maxnorm`, scaled down to that norm
    (PyTorch's factor maxnorm / (norm + 1e-7))."""
    from .functional import amax, sum as _sum
    from ..ir.shapes import norm_dim
    D.check_tensor(input, "renorm", "input", 1)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D._torch_name(input._dtype)}")
    d = norm_dim(dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    a = unary("abs", input)
    if p == math.inf:
        norm = amax(a, others, keepdim=True)
    else:
        norm = binary("pow", _sum(binary("pow", a, float(p)), others, keepdim=True), 1.0 / p)
    factor = elementwise("where", binary("gt", norm, maxnorm),
                         binary("div", maxnorm, binary("add", norm, 1e-7)), 1.0)
    return binary("mul", input, cast(factor, input._dtype))


def sum_to_size(self: Tensor, *size) -> Tensor:
    """`self` summed down to `size`, which it must be expandable from (Tensor method)."""
    from .functional import _shape_arg, reshape, sum as _sum
    from ..ir.shapes import expand_shape
    want = _shape_arg(size, "sum_to_size", "size")
    try:
        ok = expand_shape(want, tuple(self.shape)) == tuple(self.shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {{{list(want)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    if not want:  # ATen's sum_to: an empty size is a full sum (a 0-d bool becomes int64)
        return _sum(self)
    lead = self.ndim - len(want)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(want)
                                      if s == 1 and self.shape[lead + i] != 1)
    r = _sum(self, dims, keepdim=True) if dims else self
    return reshape(r, want) if tuple(r.shape) != want else r


def _H(self: Tensor) -> Tensor:
    from .functional import t
    if self.ndim != 2 and self.ndim != 0:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.")
    return t(self) if self.ndim else self


def adjoint(input: Tensor) -> Tensor:
    """The transpose of the last two dims (the conjugate of a real tensor is itself)."""
    from .functional import transpose
    D.check_tensor(input, "adjoint", "input", 1)
    if input.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {input.ndim}-D tensor.")
    return transpose(input, -2, -1)


# what fusetorch exports and Tensor binds (methods) from here, and the in-place forms
PUBLIC = ("clamp_min", "clamp_max", "logit", "logical_xor", "fmax", "fmin", "copysign", "nextafter", "signbit",
          "gcd", "lcm", "float_power", "sinc", "deg2rad", "rad2deg", "ldexp", "logaddexp2",
          "positive", "conj", "conj_physical", "resolve_conj", "resolve_neg", "isreal", "angle",
          "vdot", "addr", "renorm", "adjoint", "igamma", "igammac", "frexp")
INPLACE = ("clamp_min", "clamp_max", "logit", "logical_xor", "copysign", "nextafter", "gcd", "lcm", "sinc",
           "deg2rad", "rad2deg", "ldexp", "addr", "renorm", "igamma", "igammac")
