"""Random sampling beyond rand/randn/randint: torch.bernoulli, normal, poisson, multinomial and
the Tensor in-place samplers (random_, exponential_, geometric_, log_normal_, cauchy_,
bernoulli_).

Draws come from the global generator (or `generator=`), so `manual_seed` repeats them. What is a
transform of uniform or normal draws (bernoulli, normal, exponential_, geometric_, log_normal_,
cauchy_, and random_ as a `randint` draw) is composed of the `random` source primitive and tensor
ops, so `fusetorch.compile` records it and a compiled replay draws anew. poisson and multinomial
draw on the host with numpy (no transform of uniform draws computes them in a fixed number of
ops): they are graph breaks when compiling, as is any draw from an explicit `generator=`.
"""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np

from ..ir import dtypes as dt
from ..runtime.device import NP_DTYPES
from ..runtime.eager import GENERATOR
from . import creation as C
from . import dispatch as D
from . import functional as F
from .out_args import write_out
from .tensor import Tensor

# C++ type names PyTorch's messages print (caffe2::TypeMeta)
_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
              "float64": "double", "uint8": "unsigned char", "int8": "signed char",
              "int16": "short int", "int32": "int", "int64": "long int", "bool": "bool"}
# std::numeric_limits<T>::digits
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _host_break(what: str) -> None:
    """A draw made on the host is a value a compiled replay would repeat: break the graph."""
    rec = D.RECORDER
    if rec is not None and (rec.strict or (rec.parent is not None and rec.parent.strict)):
        from .trace import user_source
        rec.graph_break(f"{what} draws on the host at {user_source()}")


def _np_gen(generator) -> np.random.Generator:
    return generator._g.np if generator is not None else GENERATOR.np


def _uniform(shape: tuple, dtype: dt.DType, t: Tensor, generator=None) -> Tensor:
    return C._random(shape, dtype, "uniform", t._be.device, False, generator, 0.0, 1.0)


def _zero_grad_through(out: Tensor, name: str, *inputs) -> Tensor:
    """PyTorch's samplers are differentiable with zero gradients (NormalBackward, Bernoulli-,
    PoissonBackward): `out` keeps its value and becomes a function of `inputs` whose gradient is
    zero, so backward through a sample reaches the parameters as zeros rather than failing."""
    if not D.GRAD_ENABLED:
        return out
    grads = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    for x in grads:
        never = C.zeros((), dtype=dt.bool_, device=out.device)
        out = F.where(never, x.to(out.dtype), out)
    if grads:
        from .autograd import label
        label(out, name, *inputs)
    return out


def _check_float(t: Tensor, kernel: str) -> None:
    if not t._dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{D._torch_name(t._dtype)}'")


_P_IN = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
         "message be improved?  If so, please report an enhancement request to PyTorch.)")


def _bernoulli_of(shape: tuple, p, like: Tensor, generator) -> Tensor:
    """(u < p) in `like`'s dtype; p a tensor of probabilities (checked in the graph) or a
    number."""
    if isinstance(p, Tensor):
        p = D.check_values(p, _P_IN, lo=0.0, hi=1.0, closed=True)
        wide = p._dtype if p._dtype.is_floating_point else dt.float64
    else:
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        wide = like._dtype if like._dtype.is_floating_point else dt.float64
    return F.lt(_uniform(shape, wide, like, generator), p).to(like._dtype)


def bernoulli(input: Tensor, p: float | None = None, *, generator=None,
              out: Tensor | None = None) -> Tensor:
    """Draws of 0 or 1 with probabilities `input` (or `p` for every element), in input's
    dtype."""
    D.check_tensor(input, "bernoulli", "input", 1)
    if p is None:
        _check_float(input, "bernoulli_tensor_cpu_p_")
        r = _zero_grad_through(_bernoulli_of(tuple(input.shape), input, input, generator),
                               "BernoulliBackward0", input)
    else:
        r = _bernoulli_of(tuple(input.shape), p, input, generator)
    return C._out(r, out)


def _normal_overloads(got: str) -> TypeError:
    return TypeError(
        f"normal() received an invalid combination of arguments - got ({got}), but expected one "
        "of:\n * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = "
        "None)\n * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out "
        "= None)\n * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = "
        "None)\n * (float mean, float std, tuple of ints size, *, torch.Generator generator = "
        "None, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
        "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")


def normal(mean, std=1.0, size=None, *, generator=None, out: Tensor | None = None, dtype=None,
           device=None, requires_grad: bool = False, **_) -> Tensor:
    """torch.normal's four overloads: (Tensor, Tensor), (Tensor, float), (float, Tensor) draw one
    value per element of the broadcast mean and std; (float, float, size) a tensor of `size`."""
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not tm and not ts:
        if size is None:
            kinds = ", ".join(type(v).__name__ for v in (mean, std))
            raise _normal_overloads(kinds)
        std = float(std)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        d = C._float_dtype(dtype, "normal")
        C._check_float(d, "normal_kernel_cpu")
        eps = C.randn(C._size((size,), "normal"), generator=generator, dtype=d, device=device)
        return C._out(C._finish(F.add(F.mul(eps, std), float(mean)), requires_grad), out)
    if size is not None:
        kinds = ", ".join(type(v).__name__ if not isinstance(v, Tensor) else "Tensor"
                          for v in (mean, std))
        raise _normal_overloads(f"{kinds}, size={type(size).__name__}")
    for t in (mean, std):
        if isinstance(t, Tensor):
            _check_float(t, "normal_kernel_cpu")
    if ts:
        std_v = D.check_values(std, "normal expects all elements of std >= 0.0", lo=0.0)
    else:
        std_v = float(std)
        if std_v < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std_v:g}")
    if tm and ts:
        d = dt.promote_types(mean._dtype, std._dtype)
        from ..ir.shapes import broadcast_shapes
        shape = broadcast_shapes(tuple(mean.shape), tuple(std.shape))
    else:
        ref = mean if tm else std
        d, shape = ref._dtype, tuple(ref.shape)
    ref = mean if tm else std
    eps = C._random(shape, d, "normal", ref._be.device, False, generator)
    with_grad = D.GRAD_ENABLED
    mean_v = mean.detach() if tm else float(mean)
    std_d = std_v.detach() if ts else std_v
    r = F.add(F.mul(eps, std_d), mean_v).to(d)
    if with_grad:
        r = _zero_grad_through(r, f"NormalBackward{tm + 2 * ts}",
                               mean, std)
    return C._out(r, out)


def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson draws with rates `input` (a graph break when compiling: drawn by numpy)."""
    D.check_tensor(input, "poisson", "input", 1)
    _check_float(input, "poisson_cpu")
    _host_break("poisson")
    D.check_values(input, "invalid Poisson rate, expected rate to be non-negative", lo=0.0)
    lam = input.detach()._host().astype(np.float64)
    huge = ~(lam < 2.0**62)  # numpy refuses such rates; PyTorch's int64 result overflows
    draws = _np_gen(generator).poisson(np.where(huge, 0.0, lam)).astype(np.float64)
    draws[huge] = -2.0**63
    r = C._const(draws.astype(NP_DTYPES[input._dtype]), input._dtype, input._be)
    return _zero_grad_through(r, "PoissonBackward0", input)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial draws of `count` trials with success probability `prob` (float tensors of one
    dtype, broadcast); counts below 0 draw 0, probabilities are clipped to [0, 1], NaN stays
    NaN (PyTorch's CPU kernel). No gradient. A graph break when compiling: drawn by numpy."""
    D.check_tensor(count, "binomial", "count", 1)
    D.check_tensor(prob, "binomial", "prob", 2)
    _check_float(count, "binomial_cpu")
    if prob._dtype is not count._dtype:
        raise RuntimeError(f"Found dtype {D._torch_name(prob._dtype)} but expected "
                           f"{D._torch_name(count._dtype)}")
    _host_break("binomial")
    n, p = np.broadcast_arrays(count.detach()._host().astype(np.float64),
                               prob.detach()._host().astype(np.float64))
    bad = np.isnan(n) | np.isnan(p)
    trials = np.where(bad, 0.0, np.floor(np.clip(n, 0.0, 2.0**62))).astype(np.int64)
    draws = _np_gen(generator).binomial(trials, np.where(bad, 0.0, np.clip(p, 0.0, 1.0)))
    draws = np.where(bad, np.nan, draws.astype(np.float64))
    return C._const(draws.astype(NP_DTYPES[count._dtype]), count._dtype, count._be)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None,
                out: Tensor | None = None) -> Tensor:
    """Indices drawn from the categories of each row of `input` (weights, not necessarily
    normalised), int64. Without replacement the draw is PyTorch's: the categories with the
    largest p / E for E ~ Exp(1) (zero weights come last). A graph break when compiling: the
    draw is made by numpy."""
    D.check_tensor(input, "multinomial", "input", 1)
    if isinstance(out, Tensor) and out._dtype is not dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: "
                           f"{D._torch_name(out._dtype)}")
    num_samples = C._int(num_samples, "multinomial", "num_samples", 2)
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D._torch_name(input._dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    k = input.shape[-1]
    if not replacement and num_samples > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if k == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    _host_break("multinomial")
    p = input.detach()._host().astype(np.float64).reshape(-1, k)
    if not np.all(np.isfinite(p) & (p >= 0)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = p.sum(-1)
    if np.any(total <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = _np_gen(generator)
    if replacement:
        cdf = np.cumsum(p, -1) / total[:, None]
        u = g.random((p.shape[0], num_samples))
        # searchsorted 'right' never lands on a zero-weight category; u past the rounded end
        # of the cdf goes to the last category with weight
        last = k - 1 - np.argmax(p[:, ::-1] > 0, axis=-1)
        idx = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        idx = np.minimum(idx, last[:, None])
    else:
        with np.errstate(divide="ignore"):
            keys = g.standard_exponential(p.shape) / p
        idx = np.argsort(keys, axis=-1, kind="stable")[:, :num_samples]
    idx = idx.astype(np.int64).reshape(tuple(input.shape[:-1]) + (num_samples,))
    r = C._const(idx, dt.int64, input._be)
    return r if out is None else write_out(r, out, name="multinomial", inputs=(input,))


# ---------------------------------------------------------------- Tensor in-place samplers

def _fill_(self: Tensor, value: Tensor) -> Tensor:
    from .methods import _copy_
    return _copy_(self, value)


def _continuous_only(self: Tensor, name: str) -> None:
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_continuous_name(name, self._dtype)}")


def _continuous_name(name: str, d: dt.DType) -> str:
    # exponential_ prints the ScalarType, cauchy_ the C++ type (as PyTorch does)
    return D._torch_name(d) if name == "Exponential" else _CPP_NAMES[d.name]


def _random_(self: Tensor, *args, generator=None, **kw) -> Tensor:
    """random_(), random_(to), random_(from, to): integers in [from, to) (to=None: up to the
    dtype's largest value, 2**mantissa bits for floats), in the tensor's dtype."""
    if len(args) > 2 or set(kw) - {"from", "to"}:
        raise TypeError("random_() received an invalid combination of arguments")
    if len(args) == 1 and "to" not in kw and "from" not in kw:
        lo, hi, given = 0, args[0], True
    else:
        vals = list(args) + [None] * (2 - len(args))
        lo = kw.get("from", vals[0] if vals[0] is not None else 0)
        hi = kw.get("to", vals[1])
        given = hi is not None
    name = self._dtype.name
    if self._dtype.is_floating_point:
        top = 2 ** _DIGITS[name]
    elif self._dtype is dt.bool_:
        top = 1
    else:
        top = int(np.iinfo(NP_DTYPES[self._dtype]).max)
    lo = int64_arg(lo)
    if given:
        hi = int64_arg(hi)
        if lo >= hi:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={lo} >= to={hi}")
        check_random_bounds(self._dtype, lo, hi - 1)
    else:
        check_random_bounds(self._dtype, lo, lo)
        if lo > top:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal "
                               f"to 'to', but got from={lo} > to={top}")
        hi = top + 1
    r = C._random(tuple(self.shape), self._dtype, "randint", self._be.device, False, generator,
                  lo, hi)
    return _fill_(self, r)


def int64_arg(v) -> int:
    """An integer argument PyTorch reads as a C long long (randint's and random_'s ends)."""
    v = int(v)
    if not -(1 << 63) <= v < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    return v


def check_random_bounds(d: dt.DType, lo: int, hi_inc: int) -> None:
    """PyTorch's check_from_to_in_range: both ends must fit the dtype; for floats, ends past
    2**digits only warn (not every integer there is representable)."""
    cpp = _CPP_NAMES[d.name]
    if d.is_floating_point:
        big = float(ml_dtypes.finfo(NP_DTYPES[d]).max)  # numpy's knows no bfloat16
        lim, digits = (-big, big), _DIGITS[d.name]
    elif d is dt.bool_:
        lim, digits = (0, 1), None
    else:
        info = np.iinfo(NP_DTYPES[d])
        lim, digits = (int(info.min), int(info.max)), None
    for v, what in ((lo, "from"), (hi_inc, "to - 1")):
        if not lim[0] <= v <= lim[1]:
            raise RuntimeError(f"{what} is out of bounds for {cpp}")
    if digits is not None:
        for v, what in ((lo, "from"), (hi_inc, "to - 1")):
            if not -(2 ** digits) <= v <= 2 ** digits:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {cpp} can support discrete uniform "
                              "distribution only within this range. This warning will become "
                              "an error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=3)


def _exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Draws of Exp(lambd): -log(1 - u) / lambd."""
    _continuous_only(self, "Exponential")
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    u = _uniform(tuple(self.shape), self._dtype, self, generator)
    return _fill_(self, F.div(F.neg(F.log1p(F.neg(u))), lambd))


def _geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Trials until the first success, P(k) = (1 - p)^(k-1) p: ceil(log(1 - u) / log(1 - p)),
    at least 1. ceil is composed: truncation by an int64 cast, plus one where that was below
    (values past 2**52 are integers already)."""
    p = float(p)
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    u = _uniform(tuple(self.shape), dt.float64, self, generator)
    x = F.div(F.log1p(F.neg(u)), math.log1p(-p))
    big = 2.0 ** 52
    trunc = F.clamp(x, None, big).to(dt.int64).to(dt.float64)
    ceil = F.where(F.gt(x, big), x, F.add(trunc, F.gt(x, trunc).to(dt.float64)))
    return _fill_(self, F.maximum(ceil, C.ones((), dtype=dt.float64, device=self.device)))


def _log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                 generator=None) -> Tensor:
    """Draws of exp(N(mean, std^2))."""
    _check_float(self, "log_normal_cpu")
    std = float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    eps = C._random(tuple(self.shape), self._dtype, "normal", self._be.device, False, generator)
    return _fill_(self, F.exp(F.add(F.mul(eps, std), float(mean))))


def _cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
             generator=None) -> Tensor:
    """Draws of Cauchy(median, sigma): median + sigma * tan(pi (u - 1/2)), tan as sin / cos."""
    _continuous_only(self, "Cauchy")
    sigma = float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    a = F.mul(F.sub(_uniform(tuple(self.shape), self._dtype, self, generator), 0.5), math.pi)
    return _fill_(self, F.add(F.mul(F.div(F.sin(a), F.cos(a)), sigma), float(median)))


def _bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Draws of 0 or 1 with probability p (a number or a tensor broadcast to self)."""
    if isinstance(p, Tensor):
        _check_float(p, "bernoulli_tensor_cpu_p_")
    return _fill_(self, _bernoulli_of(tuple(self.shape), p, self, generator))


def _bernoulli_method(self: Tensor, p=None, *, generator=None) -> Tensor:
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *,
                        generator=None) -> Tensor:
    return multinomial(self, num_samples, replacement, generator=generator)


Tensor.random_ = _random_
Tensor.exponential_ = _exponential_
Tensor.geometric_ = _geometric_
Tensor.log_normal_ = _log_normal_
Tensor.cauchy_ = _cauchy_
Tensor.bernoulli_ = _bernoulli_
Tensor.bernoulli = _bernoulli_method
Tensor.multinomial = _multinomial_method
