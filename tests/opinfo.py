"""An OpInfo-style registry of what fusetorch exports, for tests that run every op another way
(compiled, for now) and compare with eager.

An `OpInfo` is one family of spellings of one operation (`torch.abs`, `Tensor.abs`, `abs_`,
`__abs__` ...): `variants` maps each public name to a function called as
`fn(*sample.args, **sample.kwargs)`, and every variant runs on every sample. Samples cover several
shapes with broadcasting, 0-d, permuted and sliced (non-contiguous) inputs, float32 and float64,
and integer/bool where the op takes them. A `ModuleInfo` is one nn layer class: a factory, its
input samples, and the mode (train/eval) it runs in.

This file holds the torch functions and Tensor methods; tests/opinfo_nn.py the nn.functional
entries and the layers. `SKIPPED` lists every exported name that no entry covers, with the
reason; a test checks that `dir(fusetorch)`, `dir(fusetorch.Tensor)`,
`dir(fusetorch.nn.functional)` and the nn layer classes are all either covered or skipped, so a
new export cannot be silently left out.

Sample data comes from a numpy generator seeded by the entry's name, so a failure reproduces.
Values are kept away from the points where an op's derivative jumps (relu at 0, abs at 0, clamp
bounds, max ties) so that eager and compiled gradients are both well defined.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F

F32, F64, I64, I32, BOOL = torch.float32, torch.float64, torch.int64, torch.int32, torch.bool
_NP = {F32: np.float32, F64: np.float64, I64: np.int64, I32: np.int32, BOOL: np.bool_,
       torch.uint8: np.uint8}


@dataclass
class Sample:
    name: str
    args: list                      # tensors (possibly inside lists), Python values
    kwargs: dict = field(default_factory=dict)
    inplace: bool = True            # in-place variants apply (the result fits the first input)
    widened: bool = False           # derived from the entry's first sample (`widened` below)


def is_inplace(variant: str) -> bool:
    """`Tensor.add_`, `Tensor.__iadd__`, `F.relu_`, `F.elu(inplace)`."""
    base = variant.split("(")[0]
    return base.endswith("_") and not base.endswith("__") or base.startswith("Tensor.__i") \
        or "(inplace)" in variant


def tensors_in(x) -> list:
    """The tensors inside a sample's arguments (lists, tuples, dicts by sorted key), in order:
    the runners pass them as one flat list and put new ones back with `rebuild`."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensors_in(v)]
    if isinstance(x, dict):
        return [t for k in sorted(x) for t in tensors_in(x[k])]
    return []


def rebuild(x, it):
    """`x` with each tensor replaced by the next of `it`, in `tensors_in`'s order."""
    if isinstance(x, torch.Tensor):
        return next(it)
    if isinstance(x, (list, tuple)):
        return type(x)(rebuild(v, it) for v in x)
    if isinstance(x, dict):
        return {k: rebuild(x[k], it) for k in sorted(x)}
    return x


@dataclass
class OpInfo:
    name: str
    variants: dict                  # public name -> fn(*args, **kwargs)
    samples: Callable[[np.random.Generator], list]
    grad: bool = True               # differentiable w.r.t. its floating inputs
    rtol: float = 1e-5              # float32 values; float64 use F64_RTOL
    atol: float = 1e-6
    grad_rtol: float = 1e-4
    grad_atol: float = 1e-5

    def make_samples(self, seed: int = 0, widen: bool = True) -> list:
        base = self.samples(np.random.default_rng(zlib.crc32(self.name.encode()) + seed))
        return base + widened(self, base) if widen else base


@dataclass
class ModuleInfo:
    name: str                       # the class's public name, nn.X
    make: Callable[[], nn.Module]
    samples: Callable[[np.random.Generator], list]
    train: bool = True
    grad: bool = True
    rtol: float = 1e-5
    atol: float = 1e-6
    grad_rtol: float = 1e-4
    grad_atol: float = 1e-5

    @property
    def variants(self) -> dict:
        return {f"nn.{self.name.split('/')[0]}": None}

    def make_samples(self, seed: int = 0, widen: bool = True) -> list:
        base = self.samples(np.random.default_rng(zlib.crc32(self.name.encode()) + seed))
        return base + widened(self, base) if widen else base


# ----------------------------------------------------------------------------- widened samples
# Every entry also gets samples derived from its first sample (issue 26: the bug classes that
# PyTorch's own samples found): every tensor made zero-size (dim 0, else the last dim, set to
# 0), every tensor made 0-d (its first element), every tensor made non-contiguous (the same
# values at stride 2), and, where the sample has integer tensors beside floating ones (index
# ops), every other index replaced by the first one (repeated indices). A derived sample is
# kept where eager fusetorch accepts it (the op takes such inputs); which were refused, and why,
# is `REFUSED` (tests/test_opinfo_widened.py checks them). `WIDEN_SKIP` opts an entry out of a
# kind, with the reason. The compiling runners (compile, backward programs, ONNX, CUDA) ask for
# `make_samples(widen=False)`: their cost is one C module (or ONNX session) per batch, and the
# derived samples would double it; tests/test_opinfo_widened.py runs the derived samples
# eagerly against their base sample, through gradcheck, and compiled in a few large batches.

WIDEN_KINDS = ("zero_size", "0d", "noncontig", "repeated_index")
WIDEN_SKIP: dict = {}   # (entry name, kind) -> reason
REFUSED: dict = {}      # (entry name, derived sample name) -> eager's error, "Type: message"
_ACCEPTED: dict = {}    # (entry name, derived sample name) -> bool, decided once (seed 0)


def _strided_copy(t):
    """`t`'s values in a non-contiguous tensor of the same shape (stride 2 on the last dim)."""
    if t.ndim == 0 or t.numel() == 0:
        return t
    buf = torch.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype)
    with torch.no_grad():
        buf[..., ::2] = t
    return buf[..., ::2]


def _zero_size(t, last: bool):
    if t.ndim == 0:
        return t
    d = t.ndim - 1 if last else 0
    return t.detach().narrow(d, 0, 0).contiguous()


def _first_element(t):
    return t.detach().reshape(-1)[0].clone() if t.numel() else t


def _repeat_indices(t):
    if t.dtype.is_floating_point or t.dtype is BOOL or t.numel() < 2:
        return t
    flat = t.detach().reshape(-1).clone()
    flat[1::2] = flat[0]
    return flat.reshape(tuple(t.shape))


def _derive(kind: str, sample: Sample) -> list:
    ts = tensors_in([sample.args, sample.kwargs])
    if not ts:
        return []
    if kind == "zero_size":
        if not any(t.ndim for t in ts):
            return []
        makers = [("zero_size", lambda t: _zero_size(t, False)),
                  ("zero_size_last", lambda t: _zero_size(t, True))]
    elif kind == "0d":
        if not any(t.ndim for t in ts):
            return []
        makers = [("0d_all", _first_element)]
    elif kind == "noncontig":
        if not any(t.ndim and t.numel() for t in ts):
            return []
        makers = [("noncontig", _strided_copy)]
    else:
        ints = [t for t in ts if not t.dtype.is_floating_point and t.dtype is not BOOL
                and t.numel() >= 2]
        if not ints or not any(t.dtype.is_floating_point for t in ts):
            return []
        makers = [("repeated_index", _repeat_indices)]
    out = []
    for name, fn in makers:
        new = [fn(t) for t in ts]
        args = rebuild(sample.args, iter(new))
        it = iter(new[len(tensors_in(sample.args)):])
        kwargs = rebuild(sample.kwargs, it)
        out.append(Sample(f"wide_{name}", args, kwargs, inplace=sample.inplace, widened=True))
    return out


def _eager_accepts(entry, sample: Sample):
    """None when the entry's first variant runs on `sample` eagerly, else its error."""
    import copy
    import warnings
    args = copy.deepcopy(sample.args)
    kwargs = copy.deepcopy(sample.kwargs)
    try:
        with torch.no_grad(), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if isinstance(entry, ModuleInfo):
                torch.manual_seed(0)
                entry.make().train(entry.train)(*args, **kwargs)
            else:
                next(iter(entry.variants.values()))(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (any refusal: the op does not take this sample)
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    return None


def widened(entry, base: list) -> list:
    """The derived samples of `entry` that eager accepts (see above)."""
    first = next((s for s in base if tensors_in([s.args, s.kwargs])), None)
    if first is None:
        return []
    have = {s.name for s in base}
    out = []
    for kind in WIDEN_KINDS:
        if (entry.name, kind) in WIDEN_SKIP:
            continue
        for cand in _derive(kind, first):
            if cand.name in have:
                continue
            key = (entry.name, cand.name)
            if key not in _ACCEPTED:
                err = _eager_accepts(entry, cand)
                _ACCEPTED[key] = err is None
                if err is not None:
                    REFUSED[key] = err
            if _ACCEPTED[key]:
                out.append(cand)
                if kind == "zero_size":
                    break  # one zero-size sample is enough
    return out


F64_RTOL, F64_ATOL = 1e-9, 1e-12

# Variants that build CPU tensors themselves (torch.zeros(...) + x, a CPU class weight): with
# the sample's tensors on cuda:0 they mix devices, and PyTorch refuses them just the same.
MAKES_CPU_TENSORS = ("torch.zeros", "torch.ones", "torch.full", "torch.arange", "torch.linspace",
                     # issue 27's windows and the entries that build weights or coordinates
                     "torch.signal.windows.", "torch.bartlett_window", "torch.blackman_window",
                     "torch.hamming_window", "torch.hann_window", "torch.kaiser_window",
                     "torch.cov(weights)", "torch.gradient(coordinates)", "torch.trapezoid(x)",
                     "torch.cumulative_trapezoid(x)",
                     "torch.logspace", "torch.eye", "torch.tensor", "torch.as_tensor",
                     "torch.from_numpy", "torch.FloatTensor", "torch.DoubleTensor",
                     "F.batch_norm(eval)", "F.cross_entropy(weight)", "F.nll_loss(weight)",
                     "F.binary_cross_entropy_with_logits(pos_weight)", "Tensor.copy_",
                     # their registry entries build targets, offsets or weights on the CPU
                     "F.instance_norm(running)", "F.rms_norm", "F.embedding_bag",
                     "F.cosine_embedding_loss", "F.margin_ranking_loss", "F.multi_margin_loss",
                     "F.multilabel_margin_loss", "F.ctc_loss", "torch.scatter",
                     "Tensor.scatter", "torch.index_add", "torch.index_copy",
                     "torch.index_fill", "Tensor.index_add", "Tensor.index_copy",
                     "Tensor.index_fill")


def batches(entries, count, max_cases: int) -> list:
    """Consecutive entries in lists of at most `max_cases` cases (`count(entry)` of them; an
    entry with none is left out), ops apart from layers: the runners build one program per
    batch, and builds are what they cost. An entry with more cases is a batch of its own."""
    out, cur, n = [], [], 0
    for entry in entries:
        k = count(entry)
        if not k:
            continue
        if cur and (n + k > max_cases or type(cur[-1]) is not type(entry)):
            out.append(cur)
            cur, n = [], 0
        cur.append(entry)
        n += k
    return out + [cur] if cur else out

# ----------------------------------------------------------------------------- tensor makers


def make(rng, shape, dtype=F32, low=-2.0, high=2.0, layout="c", away=()):
    """A tensor of `shape`; layout 'c' contiguous, 't' the last two dims transposed (built the
    other way round, then .transpose), 's' a sliced view (offset, step 2 on the last dim).
    `away`: points the values keep at least 0.05 from (kinks of relu, abs, clamp)."""
    shape = tuple(shape)
    if layout == "t" and len(shape) >= 2:
        base_shape = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "s" and len(shape) >= 1:
        base_shape = (shape[0] + 1,) + shape[1:-1] + (2 * shape[-1],) if len(shape) > 1 \
            else (2 * shape[0] + 1,)
    else:
        base_shape = shape
    if dtype is BOOL:
        a = rng.random(base_shape) > 0.5
    elif not dtype.is_floating_point:
        a = rng.integers(int(low), int(high), base_shape)
    else:
        a = rng.uniform(low, high, base_shape)
        for p in away:
            near = np.abs(a - p) < 0.05
            a = np.where(near, p + np.where(a >= p, 0.05, -0.05) + np.sign(a - p + 1e-9) * 0.01,
                         a)
    t = torch.from_numpy(np.array(a, dtype=_NP[dtype], order="C"))
    if layout == "t" and len(shape) >= 2:
        t = t.transpose(-1, -2)
    elif layout == "s" and len(shape) >= 1:
        t = t[1:, ..., ::2] if len(shape) > 1 else t[1::2]
    assert tuple(t.shape) == shape, (t.shape, shape)
    return t


def unary(low=-2.0, high=2.0, ints=False, bools=False, away=(0.0,), f64=True):
    def samples(rng):
        m = lambda shape, dtype=F32, layout="c": make(rng, shape, dtype, low, high, layout,  # noqa
                                                       away)
        out = [Sample("f32", [m((4, 5))]), Sample("0d", [m(())]),
               Sample("perm", [m((4, 5), layout="t")]), Sample("slice", [m((3, 4, 5), layout="s")])]
        if f64:
            out += [Sample("f64", [m((4, 5), F64)]), Sample("f64_perm", [m((2, 4, 5), F64, "t")])]
        if ints:
            out += [Sample("int64", [make(rng, (4, 5), I64, -5, 6)]),
                    Sample("int32", [make(rng, (5,), I32, -5, 6)])]
        if bools:
            out += [Sample("bool", [make(rng, (4, 5), BOOL)])]
        return out
    return samples


def binary(a=(-2.0, 2.0), b=(-2.0, 2.0), scalar=0.75, ints=False, int_float=True, away=(),
           int_inplace=True):
    def samples(rng):
        A = lambda shape, dtype=F32, layout="c": make(rng, shape, dtype, *a, layout, away)  # noqa
        B = lambda shape, dtype=F32, layout="c": make(rng, shape, dtype, *b, layout, away)  # noqa
        out = [Sample("same", [A((4, 5)), B((4, 5))]),
               Sample("bcast", [A((3, 1, 5)), B((4, 5))], inplace=False),
               Sample("bcast_right", [A((3, 4, 5)), B((4, 1))]),
               Sample("0d", [A((4, 5)), B(())]),
               Sample("0d_left", [A(()), B((4, 5))], inplace=False),
               Sample("perm_slice", [A((4, 5), layout="t"), B((4, 5), layout="s")]),
               Sample("f64", [A((4, 5), F64), B((5,), F64)]),
               Sample("promote", [A((4, 5)), B((5,), F64)])]
        if scalar is not None:
            out.append(Sample("scalar", [A((4, 5)), scalar]))
        if int_float:
            out.append(Sample("int_float", [make(rng, (4, 5), I64, 1, 4), B((4, 5))],
                              inplace=False))
        if ints:
            out.append(Sample("int", [make(rng, (4, 5), I64, -5, 6), make(rng, (5,), I64, 1, 4)],
                              inplace=int_inplace))
        return out
    return samples


def fixed(*makers):
    """Samples given explicitly: each maker is (name, fn(rng) -> (args, kwargs))."""
    def samples(rng):
        out = []
        for name, mk in makers:
            r = mk(rng)
            args, kwargs = r if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], dict) \
                else (r, {})
            out.append(Sample(name, list(args), kwargs))
        return out
    return samples


def m(method: str, **bound):
    """The Tensor method `method` as a function of (self, *args, **kwargs)."""
    return lambda x, *a, **k: getattr(x, method)(*a, **bound, **k)


def inplace(method: str):
    """The in-place method on a clone, so the traced function mutates only its own value."""
    return lambda x, *a, **k: getattr(x.clone(), method)(*a, **k)


def op(name: str, **bound):
    return lambda *a, **k: getattr(torch, name)(*a, **bound, **k)


# ----------------------------------------------------------------------------- the registry

OPS: list = []  # nn.functional entries and the layers' ModuleInfos: tests/opinfo_nn.py


def add(name, variants, samples, **kw):
    OPS.append(OpInfo(name, variants, samples, **kw))


def unary_family(name, samples, torch_names=(), methods=(), inplace_methods=(), dunder=(),
                 fnames=(), **kw):
    v = {}
    for n in torch_names:
        v[f"torch.{n}"] = getattr(torch, n)
    for n in methods:
        v[f"Tensor.{n}"] = m(n)
    for n in inplace_methods:
        v[f"Tensor.{n}"] = inplace(n)
    for n in dunder:
        v[f"Tensor.{n}"] = m(n)
    for n in fnames:
        v[f"F.{n}"] = getattr(F, n)
    add(name, v, samples, **kw)


# elementwise unary
POS = unary(0.2, 3.0, away=())
for name, samples, extra in [
    ("abs", unary(ints=True), dict(torch_names=("abs", "absolute"), dunder=("__abs__",))),
    ("neg", unary(ints=True), dict(torch_names=("neg", "negative"), methods=("negative",),
                                   dunder=("__neg__",))),
    ("exp", unary(), {}), ("log", POS, {}), ("sqrt", POS, {}), ("sin", unary(), {}),
    ("cos", unary(), {}), ("tanh", unary(), dict(fnames=("tanh",))),
    ("sigmoid", unary(), dict(fnames=("sigmoid",))),
    ("sign", unary(ints=True), {}), ("relu", unary(ints=True), dict(fnames=("relu",))),
    ("erf", unary(), {}), ("log1p", unary(-0.8, 3.0, away=()), {}), ("expm1", unary(), {}),
    ("square", unary(ints=True), {}), ("reciprocal", POS, {}),
    ("log2", POS, {}), ("erfinv", unary(-0.95, 0.95, away=()), {}),
]:
    ip = (name + "_",) if hasattr(torch.Tensor, name + "_") else ()
    kw = dict(torch_names=(name,), methods=(name,), inplace_methods=ip)
    for k, v in extra.items():
        kw[k] = tuple(kw.get(k, ())) + tuple(v)
    unary_family(name, samples, **kw)
unary_family("rsqrt", POS, torch_names=("rsqrt",), methods=("rsqrt",))
unary_family("pos", unary(ints=True), dunder=("__pos__",))
unary_family("logical_not", unary(ints=True, bools=True), torch_names=("logical_not",),
             methods=("logical_not",), inplace_methods=("logical_not_",), grad=False)
unary_family("invert", fixed(("bool", lambda r: [make(r, (4, 5), BOOL)]),
                             ("bool_perm", lambda r: [make(r, (4, 5), BOOL, layout="t")]),
                             ("int64", lambda r: [make(r, (4, 5), I64, -50, 50)]),
                             ("int32_perm", lambda r: [make(r, (4, 5), I32, -50, 50, "t")]),
                             ("uint8_0d", lambda r: [make(r, (), torch.uint8, 0, 255)])),
             torch_names=("bitwise_not",), methods=("bitwise_not",),
             inplace_methods=("bitwise_not_",), dunder=("__invert__",), grad=False)

# more elementwise math (issue 11): one op-table entry each, plus composites
UNIT = unary(-0.9, 0.9, away=())
for name, samples, extra in [
    ("tan", unary(-1.2, 1.2), {}), ("asin", UNIT, dict(torch_names=("arcsin",),
                                                       methods=("arcsin",),
                                                       inplace_methods=("arcsin_",))),
    ("acos", UNIT, dict(torch_names=("arccos",), methods=("arccos",),
                        inplace_methods=("arccos_",))),
    ("atan", unary(), dict(torch_names=("arctan",), methods=("arctan",),
                           inplace_methods=("arctan_",))),
    ("sinh", unary(), {}), ("cosh", unary(), {}),
    ("asinh", unary(), dict(torch_names=("arcsinh",), methods=("arcsinh",),
                            inplace_methods=("arcsinh_",))),
    ("acosh", unary(1.2, 3.0, away=()), dict(torch_names=("arccosh",), methods=("arccosh",),
                                             inplace_methods=("arccosh_",))),
    ("atanh", UNIT, dict(torch_names=("arctanh",), methods=("arctanh",),
                         inplace_methods=("arctanh_",))),
    ("log10", POS, {}), ("exp2", unary(), {}),
    ("floor", unary(ints=True, away=(0.0, 1.0, -1.0)), {}),
    ("ceil", unary(ints=True, away=(0.0, 1.0, -1.0)), {}),
    ("trunc", unary(ints=True, away=(0.0, 1.0, -1.0)), dict(torch_names=("fix",),
                                                           methods=("fix",),
                                                           inplace_methods=("fix_",))),
    ("round", unary(ints=True, away=(0.0, 0.5, -0.5, 1.5, -1.5)), {}),
    ("frac", unary(away=(0.0, 1.0, -1.0)), {}),
    ("sgn", unary(ints=True), {}),
]:
    ip = (name + "_",) if hasattr(torch.Tensor, name + "_") else ()
    kw = dict(torch_names=(name,), methods=(name,), inplace_methods=ip)
    for k, v in extra.items():
        kw[k] = tuple(kw.get(k, ())) + tuple(v)
    unary_family(name, samples, **kw)
# the gamma family (issue 11): positive samples (eager's reflection and the kernels' loops for
# x < 0 are compared in tests/tracer/test_gamma.py); the int samples hit poles (inf, nan)
def GAMMA(rng):
    return unary(0.1, 4.0, away=())(rng) + [
        Sample("int64", [make(rng, (4, 5), I64, -3, 6)], inplace=False)]


add("lgamma", {"torch.lgamma": torch.lgamma, "Tensor.lgamma": m("lgamma"),
               "Tensor.lgamma_": inplace("lgamma_"), "torch.special.gammaln":
               torch.special.gammaln}, GAMMA)
add("digamma", {"torch.digamma": torch.digamma, "Tensor.digamma": m("digamma"),
                "Tensor.digamma_": inplace("digamma_"), "torch.special.digamma":
                torch.special.digamma, "torch.special.psi": torch.special.psi,
                "torch.polygamma(0)": lambda x: torch.polygamma(0, x)}, GAMMA)
add("polygamma", {"torch.polygamma": lambda x: torch.polygamma(1, x),
                  "torch.polygamma(3)": lambda x: torch.polygamma(3, x),
                  "Tensor.polygamma": lambda x: x.polygamma(2),
                  "Tensor.polygamma_": lambda x: x.clone().polygamma_(1),
                  "torch.special.polygamma": lambda x: torch.special.polygamma(2, x)},
    GAMMA, rtol=1e-4)  # (float32: values up to ~1e4 at 0.1 for order 3)
add("mvlgamma", {"torch.mvlgamma": lambda x: torch.mvlgamma(x, 2),
                 "Tensor.mvlgamma": lambda x: x.mvlgamma(p=3),
                 "Tensor.mvlgamma_": lambda x: x.clone().mvlgamma_(1),
                 "torch.special.multigammaln": lambda x: torch.special.multigammaln(x, 4)},
    unary(1.6, 4.0, away=()))
add("round(decimals)", {"torch.round(decimals)": op("round", decimals=2),
                        "Tensor.round(decimals)": m("round", decimals=-1)},
    unary(-50.0, 50.0, away=()))
add("logsumexp", {"torch.logsumexp": op("logsumexp", dim=1),
                  "Tensor.logsumexp": m("logsumexp", dim=(0, 1), keepdim=True)},
    fixed(("f32", lambda r: [make(r, (3, 5))]), ("f64_perm", lambda r: [make(r, (3, 4, 5), F64,
                                                                             layout="t")])))


def _with_nans(r, dtype=F32):
    x = make(r, (4, 5), dtype)
    x[0, 1] = float("nan")
    x[2, 3] = float("inf")
    x[3, 0] = float("-inf")
    return x


add("nan_aware", {"torch.nansum": op("nansum"), "Tensor.nansum": m("nansum", dim=1),
                  "torch.nanmean": op("nanmean", dim=0), "Tensor.nanmean": m("nanmean"),
                  "torch.nan_to_num": op("nan_to_num"),
                  "Tensor.nan_to_num": m("nan_to_num", nan=1.5, posinf=9.0),
                  "Tensor.nan_to_num_": inplace("nan_to_num_")},
    fixed(("f32", lambda r: [_with_nans(r)]), ("f64", lambda r: [_with_nans(r, F64)])))
add("predicates", {f"{k}.{n}": (op(n) if k == "torch" else m(n)) for n in (
    "isnan", "isinf", "isfinite", "isposinf", "isneginf") for k in ("torch", "Tensor")},
    fixed(("f32", lambda r: [_with_nans(r)]), ("int", lambda r: [make(r, (4, 5), I64, -5, 6)])),
    grad=False)
add("isclose", {"torch.isclose": torch.isclose, "Tensor.isclose": m("isclose", rtol=0.5),
                "torch.isclose(equal_nan)": op("isclose", equal_nan=True)},
    fixed(("f32", lambda r: [_with_nans(r), _with_nans(r)]),
          ("near", lambda r: [make(r, (4, 5)), make(r, (4, 5)) * 1e-6 + 1.0])), grad=False)

# elementwise binary
add("add", {"torch.add": torch.add, "Tensor.add": m("add"), "Tensor.add_": inplace("add_"),
            "Tensor.__add__": m("__add__"), "Tensor.__radd__": m("__radd__"),
            "Tensor.__iadd__": inplace("__iadd__"),
            "torch.add(alpha)": op("add", alpha=2)}, binary(ints=True))
add("sub", {"torch.sub": torch.sub, "torch.subtract": torch.subtract, "Tensor.sub": m("sub"),
            "Tensor.subtract": m("subtract"), "Tensor.sub_": inplace("sub_"),
            "Tensor.__sub__": m("__sub__"), "Tensor.__rsub__": m("__rsub__"),
            "Tensor.__isub__": inplace("__isub__"), "torch.sub(alpha)": op("sub", alpha=0.5),
            "torch.rsub": torch.rsub, "Tensor.rsub": m("rsub")}, binary(ints=False))
add("sub_int", {"torch.sub": torch.sub, "Tensor.__rsub__": m("__rsub__")}, grad=False, samples=
    fixed(("int", lambda r: [make(r, (4, 5), I64, -5, 6), make(r, (5,), I64, -5, 6)]),
          ("int_scalar", lambda r: [make(r, (4, 5), I64, -5, 6), 3])))
add("mul", {"torch.mul": torch.mul, "torch.multiply": torch.multiply, "Tensor.mul": m("mul"),
            "Tensor.multiply": m("multiply"), "Tensor.mul_": inplace("mul_"),
            "Tensor.__mul__": m("__mul__"), "Tensor.__rmul__": m("__rmul__"),
            "Tensor.__imul__": inplace("__imul__")}, binary(ints=True))
add("inplace_bitwise_operators", {"Tensor.__iand__": inplace("__iand__"),
                                  "Tensor.__ior__": inplace("__ior__"),
                                  "Tensor.__ixor__": inplace("__ixor__")}, grad=False,
    samples=fixed(("int", lambda r: [make(r, (4, 5), I64, -5, 6), make(r, (5,), I64, -5, 6)]),
                  ("bool", lambda r: [make(r, (4, 5), BOOL), make(r, (4, 5), BOOL)])))
add("div", {"torch.div": torch.div, "torch.divide": torch.divide,
            "torch.true_divide": torch.true_divide, "Tensor.div": m("div"),
            "Tensor.divide": m("divide"), "Tensor.true_divide": m("true_divide"),
            "Tensor.div_": inplace("div_"), "Tensor.__truediv__": m("__truediv__"),
            "Tensor.__rtruediv__": m("__rtruediv__"),
            "Tensor.__itruediv__": inplace("__itruediv__"), "Tensor.__idiv__": inplace("__idiv__")},
    binary(b=(0.5, 2.0), ints=True, int_inplace=False))
add("pow", {"torch.pow": torch.pow, "Tensor.pow": m("pow"), "Tensor.__pow__": m("__pow__"),
            "Tensor.pow_": inplace("pow_"), "Tensor.__ipow__": inplace("__ipow__")},
    binary(a=(0.3, 2.0), b=(-1.5, 1.5), scalar=2))
add("remainder", {"torch.remainder": torch.remainder, "Tensor.remainder": m("remainder"),
                  "Tensor.remainder_": inplace("remainder_"), "Tensor.__mod__": m("__mod__"),
                  "Tensor.__rmod__": m("__rmod__"), "Tensor.__imod__": inplace("__imod__")},
    binary(b=(0.5, 2.0), away=(0.0,)))
add("fmod", {"torch.fmod": torch.fmod, "Tensor.fmod": m("fmod"), "Tensor.fmod_": inplace("fmod_")},
    binary(b=(0.5, 2.0)))
add("floor_divide", {"torch.floor_divide": torch.floor_divide,
                     "Tensor.floor_divide": m("floor_divide"),
                     "Tensor.floor_divide_": inplace("floor_divide_"),
                     "Tensor.__floordiv__": m("__floordiv__"),
                     "Tensor.__rfloordiv__": m("__rfloordiv__"),
                     "Tensor.__ifloordiv__": inplace("__ifloordiv__"),
                     "torch.div(floor)": op("div", rounding_mode="floor"),
                     "torch.div(trunc)": op("div", rounding_mode="trunc")},
    binary(b=(0.5, 2.0)), grad=False)
add("int_division", {"torch.remainder": torch.remainder, "torch.fmod": torch.fmod,
                     "torch.floor_divide": torch.floor_divide,
                     "torch.div(floor)": op("div", rounding_mode="floor"),
                     "torch.div(trunc)": op("div", rounding_mode="trunc"),
                     "Tensor.__mod__": m("__mod__"), "Tensor.__floordiv__": m("__floordiv__")},
    fixed(("int", lambda r: [make(r, (4, 5), I64, -9, 10), make(r, (5,), I64, 1, 4) *
                             (1 - 2 * (make(r, (5,), I64, 0, 2)))]),
          ("scalar", lambda r: [make(r, (4, 5), I64, -9, 10), -3])), grad=False)
for _n, _al in [("atan2", ("arctan2",)), ("hypot", ()), ("logaddexp", ())]:
    _v = {f"torch.{_n}": getattr(torch, _n), f"Tensor.{_n}": m(_n),
          f"Tensor.{_n}_": inplace(_n + "_")}
    for _a in _al:
        _v.update({f"torch.{_a}": getattr(torch, _a), f"Tensor.{_a}": m(_a),
                   f"Tensor.{_a}_": inplace(_a + "_")})
    add(_n, _v, binary(a=(-2.0, 2.0), b=(0.3, 2.0), scalar=None))  # (PyTorch: tensors only)
add("shifts", {"torch.bitwise_left_shift": torch.bitwise_left_shift,
               "torch.bitwise_right_shift": torch.bitwise_right_shift,
               "Tensor.bitwise_left_shift": m("bitwise_left_shift"),
               "Tensor.bitwise_right_shift": m("bitwise_right_shift"),
               "Tensor.bitwise_left_shift_": inplace("bitwise_left_shift_"),
               "Tensor.bitwise_right_shift_": inplace("bitwise_right_shift_"),
               "Tensor.__lshift__": m("__lshift__"), "Tensor.__rshift__": m("__rshift__"),
               "Tensor.__rlshift__": m("__rlshift__"), "Tensor.__rrshift__": m("__rrshift__"),
               "Tensor.__ilshift__": inplace("__ilshift__"),
               "Tensor.__irshift__": inplace("__irshift__")},
    fixed(("int", lambda r: [make(r, (4, 5), I64, -50, 50), make(r, (5,), I64, 0, 4)]),
          ("scalar", lambda r: [make(r, (4, 5), I64, -50, 50), 2])), grad=False)
add("xlogy", {"torch.xlogy": torch.xlogy, "Tensor.xlogy": m("xlogy"),
              "Tensor.xlogy_": inplace("xlogy_")},
    fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5), F32, 0.2, 3.0)]),
          ("zeros", lambda r: [make(r, (4, 5)) * (make(r, (4, 5)) > 0), make(r, (5,), F64, 0.2,
                                                                             3.0)])))
add("heaviside", {"torch.heaviside": torch.heaviside, "Tensor.heaviside": m("heaviside"),
                  "Tensor.heaviside_": inplace("heaviside_")},
    fixed(("f32", lambda r: [make(r, (4, 5)) * (make(r, (4, 5)) > 0), make(r, (5,))])),
    grad=False)
add("pow_scalar_exponents", {"Tensor.__pow__": m("__pow__")},
    fixed(("sq", lambda r: [make(r, (4, 5)), 2]), ("half", lambda r: [make(r, (4, 5), F32, .2, 3),
                                                                      0.5]),
          ("neg", lambda r: [make(r, (4, 5), F64, .2, 3), -1.5]),
          ("zero", lambda r: [make(r, (4, 5)), 0]),
          ("int", lambda r: [make(r, (4, 5), I64, -3, 4), 3])))
add("rpow", {"Tensor.__rpow__": m("__rpow__")},
    fixed(("f32", lambda r: [make(r, (4, 5)), 2.0]), ("f64", lambda r: [make(r, (5,), F64), 0.5])))
add("maximum", {"torch.maximum": torch.maximum, "Tensor.maximum": m("maximum"),
                "Tensor.maximum_": inplace("maximum_"), "torch.max(other)": torch.max},
    binary(scalar=None, ints=True))
add("minimum", {"torch.minimum": torch.minimum, "Tensor.minimum": m("minimum"),
                "Tensor.minimum_": inplace("minimum_"), "torch.min(other)": torch.min},
    binary(scalar=None, ints=True))
for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    add(cmp, {f"torch.{cmp}": getattr(torch, cmp), f"Tensor.{cmp}": m(cmp),
              f"Tensor.__{cmp}__": m(f"__{cmp}__")}, binary(ints=True), grad=False)
for lg in ("logical_and", "logical_or"):
    add(lg, {f"torch.{lg}": getattr(torch, lg), f"Tensor.{lg}": m(lg)},
        binary(scalar=None, ints=True), grad=False)


def _bits(rng):
    return [make(rng, (4, 5), BOOL), make(rng, (5,), BOOL)]


add("bitwise", {"Tensor.__and__": m("__and__"), "Tensor.__or__": m("__or__"),
                "Tensor.__xor__": m("__xor__"), "Tensor.__rand__": m("__rand__"),
                "Tensor.__ror__": m("__ror__"), "Tensor.__rxor__": m("__rxor__")},
    fixed(("bool", _bits), ("int", lambda r: [make(r, (4, 5), I64, -9, 9), make(r, (5,), I64,
                                                                                 0, 9)]),
          ("int_scalar", lambda r: [make(r, (4, 5), I32, 0, 99), 6]),
          ("bool_scalar", lambda r: [make(r, (4, 5), BOOL), True])), grad=False)
add("where", {"torch.where": torch.where, "Tensor.where": lambda c, a, b: a.where(c, b)},
    fixed(("same", lambda r: [make(r, (4, 5), BOOL), make(r, (4, 5)), make(r, (4, 5))]),
          ("bcast", lambda r: [make(r, (3, 1, 5), BOOL), make(r, (4, 5)), make(r, (4, 1))]),
          ("scalar_other", lambda r: [make(r, (4, 5), BOOL), make(r, (4, 5), layout="t"), 0.0]),
          ("f64_promote", lambda r: [make(r, (4, 5), BOOL), make(r, (4, 5), F64), make(r, (5,))]),
          ("int", lambda r: [make(r, (4, 5), BOOL), make(r, (4, 5), I64), make(r, (5,), I64)])))
add("clamp", {"torch.clamp": torch.clamp, "torch.clip": torch.clip, "Tensor.clamp": m("clamp"),
              "Tensor.clip": m("clip"), "Tensor.clamp_": inplace("clamp_"),
              "Tensor.clip_": inplace("clip_")},
    fixed(("both", lambda r: ([make(r, (4, 5), away=(-0.5, 0.5))], dict(min=-0.5, max=0.5))),
          ("min", lambda r: ([make(r, (3, 4, 5), layout="s", away=(0.1,))], dict(min=0.1))),
          ("max", lambda r: ([make(r, (4, 5), F64, layout="t", away=(0.3,))], dict(max=0.3))),
          ("0d", lambda r: ([make(r, (), away=(-1, 1))], dict(min=-1, max=1))),
          ("int", lambda r: ([make(r, (4, 5), I64, -9, 9)], dict(min=-2, max=3))),
          ("tensor_bounds", lambda r: ([make(r, (4, 5))], dict(min=make(r, (5,), F32, -2, -1),
                                                               max=make(r, (4, 1), F32, 0.2, 1))))))
add("lerp", {"torch.lerp": torch.lerp, "Tensor.lerp": m("lerp"), "Tensor.lerp_": inplace("lerp_")},
    fixed(("scalar_w", lambda r: [make(r, (4, 5)), make(r, (4, 5)), 0.3]),
          ("tensor_w", lambda r: [make(r, (4, 5), layout="t"), make(r, (5,)), make(r, (4, 1))]),
          ("f64", lambda r: [make(r, (2, 4, 5), F64), make(r, (4, 5), F64), 0.75])))
for name in ("addcmul", "addcdiv"):
    add(name, {f"torch.{name}": getattr(torch, name), f"Tensor.{name}": m(name),
               f"Tensor.{name}_": inplace(name + "_")},
        fixed(("same", lambda r: [make(r, (4, 5)), make(r, (4, 5)), make(r, (4, 5), F32, .5, 2)]),
              ("bcast_value", lambda r: ([make(r, (4, 5)), make(r, (5,)), make(r, (4, 1), F32,
                                                                                .5, 2)],
                                         dict(value=0.5))),
              ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t"), make(r, (4, 5), F64),
                                      make(r, (4, 5), F64, .5, 2, layout="s")])))
add("masked_fill", {"torch.masked_fill": torch.masked_fill, "Tensor.masked_fill": m("masked_fill"),
                    "Tensor.masked_fill_": inplace("masked_fill_")},
    fixed(("same", lambda r: [make(r, (4, 5)), make(r, (4, 5), BOOL), -1.5]),
          ("bcast", lambda r: [make(r, (4, 5), F64, layout="t"), make(r, (5,), BOOL), 2.0]),
          ("0d_value", lambda r: [make(r, (3, 4, 5), layout="s"), make(r, (4, 1), BOOL),
                                  torch.tensor(0.5)]),
          ("int", lambda r: [make(r, (4, 5), I64), make(r, (4, 5), BOOL), 7])))

# reductions
R3 = lambda r, dt=F32, layout="c": make(r, (3, 4, 5), dt, layout=layout)  # noqa: E731


def reduce_samples(dims=True, ints=True, full=True):
    makers = []
    if full:
        makers += [("all", lambda r: [R3(r)]), ("0d", lambda r: [make(r, ())])]
    if dims:
        makers += [("dim", lambda r: ([R3(r)], dict(dim=1))),
                   ("dim_last_keep", lambda r: ([R3(r, layout="t")], dict(dim=-1, keepdim=True))),
                   ("dim_first", lambda r: ([R3(r, F64)], dict(dim=0))),
                   ("dim_sliced", lambda r: ([R3(r, layout="s")], dict(dim=2)))]
    if ints:
        makers += [("int", lambda r: ([make(r, (4, 5), I64, -3, 4)], dict(dim=1)))]
    return fixed(*makers)


def multi_dim_samples(rng):
    return [Sample("dims02", [R3(rng)], dict(dim=(0, 2))),
            Sample("dims_keep", [R3(rng, F64, "t")], dict(dim=(1, 2), keepdim=True)),
            Sample("all", [R3(rng, layout="s")]),
            Sample("0d", [make(rng, ())])]


add("sum", {"torch.sum": torch.sum, "Tensor.sum": m("sum")}, reduce_samples())
add("sum_dims", {"torch.sum": torch.sum, "Tensor.sum": m("sum")}, multi_dim_samples)
add("sum_dtype", {"torch.sum(dtype)": op("sum", dtype=F64)},
    fixed(("f32", lambda r: [R3(r)]), ("int", lambda r: [make(r, (4, 5), I64, -3, 4)])))
add("mean", {"torch.mean": torch.mean, "Tensor.mean": m("mean")}, reduce_samples(ints=False))
add("mean_dims", {"torch.mean": torch.mean}, multi_dim_samples)
add("prod", {"torch.prod": torch.prod, "Tensor.prod": m("prod")},
    fixed(("all", lambda r: [make(r, (3, 4), F32, 0.5, 1.5)]),
          ("dim", lambda r: ([make(r, (3, 4, 5), F64, -1.5, 1.5)], dict(dim=1))),
          ("dim_keep_perm", lambda r: ([make(r, (4, 5), layout="t")], dict(dim=0, keepdim=True))),
          ("int", lambda r: ([make(r, (4, 5), I64, -3, 4)], dict(dim=1)))))
add("amax", {"torch.amax": torch.amax, "Tensor.amax": m("amax")}, reduce_samples())
add("amin", {"torch.amin": torch.amin, "Tensor.amin": m("amin")}, reduce_samples())
add("amax_dims", {"torch.amax": torch.amax, "torch.amin": torch.amin}, multi_dim_samples)
add("max_full", {"torch.max": torch.max, "Tensor.max": m("max"), "torch.min": torch.min,
                 "Tensor.min": m("min")}, reduce_samples(dims=False))
add("max_dim", {"torch.max(dim)": torch.max, "Tensor.max(dim)": m("max"),
                "torch.min(dim)": torch.min, "Tensor.min(dim)": m("min")},
    reduce_samples(full=False))
add("argmax", {"torch.argmax": torch.argmax, "Tensor.argmax": m("argmax"),
               "torch.argmin": torch.argmin, "Tensor.argmin": m("argmin")},
    reduce_samples(), grad=False)
add("var", {"torch.var": torch.var, "Tensor.var": m("var"), "torch.std": torch.std,
            "Tensor.std": m("std")},
    fixed(("all", lambda r: [R3(r)]), ("dim", lambda r: ([R3(r, layout="t")], dict(dim=1))),
          ("dims_keep", lambda r: ([R3(r, F64)], dict(dim=(0, 2), keepdim=True))),
          ("biased", lambda r: ([R3(r, layout="s")], dict(dim=-1, unbiased=False))),
          ("correction", lambda r: ([R3(r)], dict(dim=0, correction=2)))))
add("all_any", {"torch.all": torch.all, "Tensor.all": m("all"), "torch.any": torch.any,
                "Tensor.any": m("any")},
    fixed(("bool", lambda r: [make(r, (3, 4, 5), BOOL)]),
          ("bool_dim", lambda r: ([make(r, (3, 4, 5), BOOL, layout="t")], dict(dim=1))),
          ("float_dim_keep", lambda r: ([make(r, (4, 5)) * 0 + (make(r, (4, 5)) > 1)],
                                        dict(dim=-1, keepdim=True))),
          ("int", lambda r: [make(r, (4, 5), I64, 0, 3)])), grad=False)
add("softmax", {"torch.softmax": torch.softmax, "Tensor.softmax": m("softmax"),
                "F.softmax": F.softmax, "torch.log_softmax": torch.log_softmax,
                "Tensor.log_softmax": m("log_softmax"), "F.log_softmax": F.log_softmax,
                "F.softmin": F.softmin},
    fixed(("last", lambda r: [R3(r), -1]), ("mid_perm", lambda r: [R3(r, layout="t"), 1]),
          ("first_f64", lambda r: [R3(r, F64), 0]), ("1d", lambda r: [make(r, (7,)), 0])))
add("softmax_dtype", {"F.softmax(dtype)": lambda x, d: F.softmax(x, d, dtype=F64),
                      "F.log_softmax(dtype)": lambda x, d: F.log_softmax(x, d, dtype=F64)},
    fixed(("f32", lambda r: [R3(r), 2])))

# linear algebra
add("matmul", {"torch.matmul": torch.matmul, "Tensor.matmul": m("matmul"),
               "Tensor.__matmul__": m("__matmul__"),
               "Tensor.__rmatmul__": lambda a, b: b.__rmatmul__(a)},
    fixed(("2d", lambda r: [make(r, (4, 6)), make(r, (6, 5))]),
          ("perm", lambda r: [make(r, (4, 6), layout="t"), make(r, (6, 5), layout="t")]),
          ("batched_bcast", lambda r: [make(r, (2, 3, 4, 6)), make(r, (6, 5))]),
          ("1d_2d", lambda r: [make(r, (6,)), make(r, (6, 5))]),
          ("2d_1d", lambda r: [make(r, (4, 6), F64), make(r, (6,), F64)]),
          ("1d_1d", lambda r: [make(r, (6,)), make(r, (6,), layout="s")]),
          ("batch_1d", lambda r: [make(r, (3, 4, 6)), make(r, (6,))])))
add("mm_family", {"torch.mm": torch.mm, "Tensor.mm": m("mm")},
    fixed(("f32", lambda r: [make(r, (4, 6)), make(r, (6, 5), layout="t")]),
          ("f64", lambda r: [make(r, (4, 6), F64, layout="s"), make(r, (6, 5), F64)])))
add("bmm", {"torch.bmm": torch.bmm, "Tensor.bmm": m("bmm")},
    fixed(("f32", lambda r: [make(r, (3, 4, 6)), make(r, (3, 6, 5), layout="t")])))
add("mv", {"torch.mv": torch.mv, "Tensor.mv": m("mv")},
    fixed(("f32", lambda r: [make(r, (4, 6), layout="t"), make(r, (6,))])))
add("dot", {"torch.dot": torch.dot, "Tensor.dot": m("dot")},
    fixed(("f32", lambda r: [make(r, (6,)), make(r, (6,), layout="s")]),
          ("f64", lambda r: [make(r, (6,), F64), make(r, (6,), F64)])))

# movement and shape
X3 = fixed(("f32", lambda r: [R3(r)]), ("perm", lambda r: [R3(r, layout="t")]),
           ("slice_f64", lambda r: [R3(r, F64, "s")]),
           ("int", lambda r: [make(r, (3, 4, 5), I64, -5, 6)]))


def shape_op(name, variants, args=(), kwargs=None, samples=X3, **kw):
    add(name, {k: (lambda f: lambda x: f(x, *args, **(kwargs or {})))(f) for k, f in
               variants.items()}, samples, **kw)


shape_op("reshape", {"torch.reshape": torch.reshape, "Tensor.reshape": m("reshape")}, ((5, -1),))
shape_op("view", {"Tensor.view": m("view")}, (12, 5),
         samples=fixed(("f32", lambda r: [R3(r)]), ("f64", lambda r: [R3(r, F64)])))
shape_op("view_as", {"Tensor.view_as": m("view_as"), "Tensor.reshape_as": m("reshape_as")},
         (torch.zeros(12, 5),), samples=fixed(("f32", lambda r: [R3(r)])))
shape_op("permute", {"torch.permute": torch.permute, "Tensor.permute": m("permute")},
         ((2, 0, 1),))
shape_op("transpose", {"torch.transpose": torch.transpose, "Tensor.transpose": m("transpose"),
                       "torch.swapaxes": torch.swapaxes, "Tensor.swapaxes": m("swapaxes"),
                       "torch.swapdims": torch.swapdims, "Tensor.swapdims": m("swapdims"),
                       "Tensor.transpose_": inplace("transpose_"),
                       "Tensor.swapaxes_": inplace("swapaxes_"),
                       "Tensor.swapdims_": inplace("swapdims_")},
         (0, 2))
add("t", {"torch.t": torch.t, "Tensor.t": m("t"), "Tensor.T": lambda x: x.T,
          "Tensor.mT": lambda x: x.mT, "Tensor.t_": inplace("t_")},
    fixed(("2d", lambda r: [make(r, (4, 5))]), ("perm", lambda r: [make(r, (4, 5), layout="t")]),
          ("int", lambda r: [make(r, (4, 5), I64)])))
add("squeeze", {"torch.squeeze": torch.squeeze, "Tensor.squeeze": m("squeeze"),
                "Tensor.squeeze_": inplace("squeeze_")},
    fixed(("all", lambda r: [make(r, (3, 1, 5, 1))]),
          ("dim", lambda r: [make(r, (3, 1, 5), F64), 1]),
          ("noop", lambda r: [make(r, (4, 5), layout="t"), 0])))
add("unsqueeze", {"torch.unsqueeze": torch.unsqueeze, "Tensor.unsqueeze": m("unsqueeze"),
                  "Tensor.unsqueeze_": inplace("unsqueeze_")},
    fixed(("mid", lambda r: [R3(r), 1]), ("last_perm", lambda r: [R3(r, layout="t"), -1]),
          ("0d", lambda r: [make(r, ()), 0])))
add("flatten", {"torch.flatten": torch.flatten, "Tensor.flatten": m("flatten")},
    fixed(("all", lambda r: [R3(r)]), ("perm", lambda r: [R3(r, layout="t"), 1]),
          ("range", lambda r: [make(r, (2, 3, 4, 5), F64), 1, 2]), ("0d", lambda r: [make(r, ())])))
shape_op("unflatten", {"torch.unflatten": torch.unflatten, "Tensor.unflatten": m("unflatten")},
         (1, (2, 2)))
add("expand", {"Tensor.expand": lambda x: x.expand(3, 4, 5),
               "Tensor.expand_as": lambda x: x.expand_as(torch.zeros(3, 4, 5))},
    fixed(("row", lambda r: [make(r, (4, 1))]), ("0d", lambda r: [make(r, ())]),
          ("f64", lambda r: [make(r, (5,), F64)])))
add("copyish", {"Tensor.contiguous": m("contiguous"), "torch.clone": torch.clone,
                "Tensor.clone": m("clone"), "Tensor.cpu": m("cpu"),
                "Tensor.type_as": lambda x: x.type_as(x)}, X3)
add("memory_formats", {
    "Tensor.contiguous(channels_last)": lambda x: x.contiguous(
        memory_format=torch.channels_last) * 2,
    "Tensor.clone(channels_last)": lambda x: x.clone(memory_format=torch.channels_last) + 1,
    "Tensor.clone(preserve)": lambda x: x.clone(memory_format=torch.preserve_format) + 1,
    "Tensor.to(channels_last)": lambda x: x.to(memory_format=torch.channels_last) - x},
    fixed(("f32", lambda r: [make(r, (2, 3, 4, 5))]),
          ("f64_perm", lambda r: [make(r, (2, 3, 4, 5), F64, layout="t")])))
add("detach", {"Tensor.detach": lambda x: x.detach() * 1 + x}, X3)
add("cat", {"torch.cat": lambda a, b, c, d: torch.cat([a, b, c], d),
            "torch.concat": lambda a, b, c, d: torch.concat([a, b, c], d),
            "torch.concatenate": lambda a, b, c, d: torch.concatenate([a, b, c], d)},
    fixed(("dim0", lambda r: [make(r, (2, 5)), make(r, (3, 5), layout="t"), make(r, (1, 5)), 0]),
          ("dim1_f64", lambda r: [make(r, (4, 2), F64), make(r, (4, 3), F64, layout="s"),
                                  make(r, (4, 1), F64), 1]),
          ("promote", lambda r: [make(r, (4, 2)), make(r, (4, 3), F64), make(r, (4, 1), I64), -1]),
          ("int", lambda r: [make(r, (2, 5), I64), make(r, (3, 5), I64), make(r, (1, 5), I64),
                             0])))
add("stack", {"torch.stack": lambda a, b, d: torch.stack([a, b], d)},
    fixed(("dim0", lambda r: [make(r, (4, 5)), make(r, (4, 5), layout="t"), 0]),
          ("last", lambda r: [make(r, (4, 5), F64), make(r, (4, 5), F64, layout="s"), -1])))
add("narrow", {"torch.narrow": torch.narrow, "Tensor.narrow": m("narrow")},
    fixed(("d1", lambda r: [R3(r), 1, 1, 2]), ("d2_perm", lambda r: [R3(r, layout="t"), 2, 0, 3])))
add("split", {"torch.split": torch.split, "Tensor.split": m("split")},
    fixed(("size", lambda r: [R3(r), 2, 1]),
          ("sections", lambda r: [R3(r, layout="t"), [1, 4], 2])))
add("chunk", {"torch.chunk": torch.chunk, "Tensor.chunk": m("chunk")},
    fixed(("d1", lambda r: [R3(r), 2, 1]), ("uneven", lambda r: [R3(r, F64, "s"), 3, -1])))
add("unbind", {"torch.unbind": torch.unbind, "Tensor.unbind": m("unbind")},
    fixed(("d0", lambda r: [R3(r), 0]), ("d2_perm", lambda r: [R3(r, layout="t"), 2])))
add("gather", {"torch.gather": torch.gather, "Tensor.gather": m("gather")},
    fixed(("d1", lambda r: [make(r, (4, 5)), 1, make(r, (4, 3), I64, 0, 5)]),
          ("d0_perm", lambda r: [make(r, (4, 5), F64, layout="t"), 0, make(r, (2, 5), I64, 0, 4)])))
add("scatter_add", {"torch.scatter_add": torch.scatter_add, "Tensor.scatter_add": m("scatter_add"),
                    "Tensor.scatter_add_": inplace("scatter_add_")},
    fixed(("d1", lambda r: [make(r, (4, 5)), 1, make(r, (4, 3), I64, 0, 5), make(r, (4, 3))]),
          ("d0", lambda r: [make(r, (4, 5), F64), 0, make(r, (6, 5), I64, 0, 4),
                            make(r, (6, 5), F64)])))
add("index_select", {"torch.index_select": torch.index_select,
                     "Tensor.index_select": m("index_select")},
    fixed(("d0", lambda r: [make(r, (4, 5)), 0, torch.tensor([3, 0, 3])]),
          ("d1_perm", lambda r: [make(r, (4, 5), F64, layout="t"), 1, torch.tensor([4, 1])])))
add("flip", {"torch.flip": torch.flip, "Tensor.flip": m("flip")},
    fixed(("d0", lambda r: [R3(r), (0,)]), ("d12_perm", lambda r: [R3(r, layout="t"), (1, 2)]),
          ("int", lambda r: [make(r, (4, 5), I64), (1,)])))
add("repeat", {"Tensor.repeat": m("repeat")},
    fixed(("2d", lambda r: [make(r, (2, 3)), 2, 2]),
          ("more_dims", lambda r: [make(r, (2, 3), F64, layout="t"), 2, 1, 3])))
# (the compiled-vs-eager test reruns on other random values, masks too: every source has room
# for a mask of all True)
_MASK = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 0, 1]], dtype=bool)
add("masked_scatter", {"torch.masked_scatter": torch.masked_scatter,
                       "Tensor.masked_scatter": m("masked_scatter"),
                       "Tensor.masked_scatter_": inplace("masked_scatter_")},
    fixed(("f32", lambda r: [make(r, (3, 4)), torch.from_numpy(_MASK), make(r, (3, 4))]),
          ("f64_perm", lambda r: [make(r, (3, 4), F64, layout="t"), torch.from_numpy(_MASK),
                                  make(r, (14,), F64, layout="s")]),
          ("mask_bcast", lambda r: [make(r, (3, 4)), torch.from_numpy(_MASK[:1]),
                                    make(r, (2, 6))]),
          ("int", lambda r: [make(r, (3, 4), I64), torch.from_numpy(_MASK),
                             make(r, (12,), I64)])))
add("masked_scatter(bcast)", {"torch.masked_scatter(bcast)": torch.masked_scatter,
                              "Tensor.masked_scatter(bcast)": m("masked_scatter")},
    fixed(("input_bcast", lambda r: [make(r, (4,)), torch.from_numpy(_MASK), make(r, (12,))])))
add("fill_diagonal_", {"Tensor.fill_diagonal_": lambda x: x.clone().fill_diagonal_(2.5),
                       "Tensor.fill_diagonal_(wrap)": lambda x: x.clone().fill_diagonal_(
                           -1, wrap=True)},
    fixed(("tall", lambda r: [make(r, (7, 3))]), ("wide_perm", lambda r: [make(r, (3, 5),
                                                                                layout="t")]),
          ("cube_f64", lambda r: [make(r, (3, 3, 3), F64)]),
          ("int", lambda r: [make(r, (4, 4), I64)])))
add("getitem", {"Tensor.__getitem__": lambda x, k: x[k]},
    fixed(("int", lambda r: [R3(r), 1]), ("slice", lambda r: [R3(r, layout="t"), (slice(None),
                                                                                   slice(1, 3))]),
          ("step", lambda r: [R3(r), (Ellipsis, slice(None, None, 2))]),
          ("neg_none", lambda r: [R3(r, F64), (-1, None, slice(2, None))]),
          ("tensor", lambda r: [R3(r), torch.tensor([2, 0, 2])]),
          ("two_tensors", lambda r: [R3(r, layout="t"), (torch.tensor([0, 2]), slice(None),
                                                         torch.tensor([1, 4]))])))
add("setitem", {"Tensor.__setitem__": lambda x, k, v: _setitem(x, k, v)},
    fixed(("slice_scalar", lambda r: [R3(r), (slice(None), 1), 0.5]),
          ("slice_tensor", lambda r: [R3(r, F64), (Ellipsis, slice(0, 2)), make(r, (4, 2), F64)]),
          ("index_tensor", lambda r: [R3(r), torch.tensor([0, 2]), make(r, (4, 5))])))


def _setitem(x, key, value):
    y = x.clone()
    y[key] = value
    return y


# big enough for the parallel (OpenMP) loops and blocked float32 sums (> 2**16 elements)
BIG = fixed(("f32", lambda r: [make(r, (257, 300))]),
            ("perm", lambda r: [make(r, (257, 300), layout="t")]),
            ("f64_slice", lambda r: [make(r, (257, 300), F64, layout="s")]))
add("large_elementwise", {"tanh(exp(x*0.5+1).clamp(max=10)*x-0.25)": lambda x: torch.tanh(
    torch.exp(x * 0.5 + 1).clamp(max=10) * x - 0.25),
    "maximum(x, x[:, :1]).sigmoid() * x.abs().sqrt()": lambda x: torch.maximum(
        x, x[:, :1]).sigmoid() * x.abs().sqrt()}, BIG)
add("large_reductions", {"sum": lambda x: x.sum(), "mean(-1)": lambda x: x.mean(-1),
                         "sum(0)": lambda x: x.sum(0), "amax": lambda x: x.amax(),
                         "amin(-1, keepdim)": lambda x: x.amin(-1, keepdim=True) * 2,
                         "((x - 1) ** 2).sum()": lambda x: ((x - 1) ** 2).sum(),
                         "var(-1)": lambda x: x.var(-1), "softmax(-1)": lambda x: x.softmax(-1),
                         "log_softmax(0)": lambda x: x.log_softmax(0)}, BIG,
    # kernels add in double, eager numpy in float32 pairs: over ~257 values of size ~1 the
    # eager result itself is off by a few 1e-6 (a cancelling column: |sum| ~0.1, error 4.5e-6)
    atol=2e-5)

# casts and conversions
add("cast", {"Tensor.float": m("float"), "Tensor.double": m("double"), "Tensor.int": m("int"),
             "Tensor.long": m("long"), "Tensor.bool": m("bool"), "Tensor.short": m("short"),
             "Tensor.char": m("char"), "Tensor.byte": m("byte"),
             "Tensor.to": lambda x: x.to(F64), "Tensor.type": lambda x: x.type(torch.float64)},
    fixed(("f32", lambda r: [make(r, (4, 5), F32, -5, 5)]),
          ("f64_perm", lambda r: [make(r, (4, 5), F64, 0, 100, layout="t")]),
          ("int", lambda r: [make(r, (4, 5), I64, -9, 9)]),
          ("bool", lambda r: [make(r, (4, 5), BOOL)])), grad=False)
add("cast_grad", {"Tensor.double": m("double"), "Tensor.float": m("float"),
                  "Tensor.to": lambda x: x.to(F64)},
    fixed(("f32", lambda r: [make(r, (4, 5))]), ("f64", lambda r: [make(r, (4, 5), F64,
                                                                        layout="s")])))
add("half", {"Tensor.half": m("half"), "torch.half(dtype)": lambda x: x.to(torch.float16) * 2},
    fixed(("f32", lambda r: [make(r, (4, 5))])), grad=False, rtol=1e-3)

# creation functions inside a traced function (a tensor argument makes them part of the trace)
add("creation", {
    "torch.zeros_like": lambda x: torch.zeros_like(x) + x,
    "torch.ones_like": lambda x: torch.ones_like(x) * x,
    "torch.full_like": lambda x: torch.full_like(x, 2.5) - x,
    "torch.zeros": lambda x: torch.zeros(4, 5, dtype=x.dtype) + x,
    "torch.ones": lambda x: torch.ones(5, dtype=x.dtype) * x,
    "torch.full": lambda x: torch.full((4, 1), 3.0, dtype=x.dtype) * x,
    "torch.arange": lambda x: torch.arange(5, dtype=x.dtype) * x,
    "torch.linspace": lambda x: torch.linspace(0, 1, 5, dtype=x.dtype) + x,
    "torch.logspace": lambda x: torch.logspace(0, 1, 5, dtype=x.dtype) * x,
    "torch.eye": lambda x: torch.eye(4, 5, dtype=x.dtype) * x,
    "torch.tensor": lambda x: torch.tensor([1.0, -2.0, 3.0, 0.5, 2.0], dtype=x.dtype) * x,
    "torch.as_tensor": lambda x: torch.as_tensor([1.0, 2, 3, 4, 5], dtype=x.dtype) + x,
    "torch.from_numpy": lambda x: torch.from_numpy(np.arange(5.0)).to(x.dtype) + x,
    "Tensor.new_zeros": lambda x: x.new_zeros(4, 5) + x,
    "Tensor.new_ones": lambda x: x.new_ones(5) * x,
    "Tensor.new_full": lambda x: x.new_full((4, 5), 0.5) * x,
    "Tensor.new_tensor": lambda x: x.new_tensor([1.0, 2, 3, 4, 5]) * x,
    "Tensor.zero_": lambda x: x.clone().zero_() + x,
    "Tensor.fill_": lambda x: x.clone().fill_(0.25) * x,
    "Tensor.copy_": lambda x: torch.zeros(4, 5, dtype=x.dtype).copy_(x * 2),
    "torch.FloatTensor": lambda x: torch.FloatTensor([1, 2, 3, 4, 5]).to(x.dtype) * x,
    "torch.DoubleTensor": lambda x: torch.DoubleTensor([1, 2, 3, 4, 5]).to(x.dtype) * x,
}, fixed(("f32", lambda r: [make(r, (4, 5))]), ("f64_perm", lambda r: [make(r, (4, 5), F64,
                                                                             layout="t")])))

# scans, sorting and selection (issue 11): values against numpy in tests/tracer/test_scans.py
_SCAN = fixed(("f32", lambda r: [make(r, (3, 5))]),
              ("f64_perm", lambda r: [make(r, (2, 4, 5), F64, layout="t")]),
              ("slice", lambda r: [make(r, (3, 4, 5), layout="s")]),
              ("0d", lambda r: [make(r, ())]))
add("cumsum", {"torch.cumsum": op("cumsum", dim=-1), "Tensor.cumsum": lambda x: x.cumsum(0),
               "Tensor.cumsum_": lambda x: x.clone().cumsum_(-1),
               "torch.cumsum(dtype)": op("cumsum", dim=0, dtype=F64)}, _SCAN)
add("cumsum_int", {"torch.cumsum": op("cumsum", dim=1), "Tensor.cumsum_": lambda x:
                   x.clone().cumsum_(0)},
    fixed(("int", lambda r: [make(r, (4, 5), I64, -5, 6)]),
          ("int32", lambda r: [make(r, (4, 5), I32, -5, 6)])), grad=False)
add("cumsum_bool", {"torch.cumsum": op("cumsum", dim=0)},
    fixed(("bool", lambda r: [make(r, (4, 5), BOOL)])), grad=False)
add("cumprod", {"torch.cumprod": op("cumprod", dim=-1), "Tensor.cumprod": lambda x: x.cumprod(0),
                "Tensor.cumprod_": lambda x: x.clone().cumprod_(-1)},
    fixed(("f32", lambda r: [make(r, (3, 5), F32, 0.5, 1.5)]),
          ("zeros", lambda r: [make(r, (4, 5), F64) * (make(r, (4, 5)) > -1.2)]),
          ("f64_perm", lambda r: [make(r, (2, 4, 5), F64, 0.5, 1.5, layout="t")])))
add("logcumsumexp", {"torch.logcumsumexp": op("logcumsumexp", dim=-1),
                     "Tensor.logcumsumexp": lambda x: x.logcumsumexp(0)}, _SCAN)
add("selections", {
    "torch.cummax": lambda x: torch.cummax(x, -1).values,
    "Tensor.cummin": lambda x: x.cummin(0).values,
    "torch.cummin": lambda x: torch.cummin(x, -1).values,
    "Tensor.cummax": lambda x: x.cummax(0).values,
    "torch.sort": lambda x: torch.sort(x).values,
    "Tensor.sort": lambda x: x.sort(0, descending=True).values,
    "torch.topk": lambda x: torch.topk(x, 1).values,
    "Tensor.topk": lambda x: x.topk(1, dim=0, largest=False).values,
    "torch.kthvalue": lambda x: torch.kthvalue(x, 1).values,
    "Tensor.kthvalue": lambda x: x.kthvalue(1, 0, keepdim=True).values,
    "torch.median": torch.median, "Tensor.median": lambda x: x.median(-1).values,
    "torch.nanmedian": torch.nanmedian, "Tensor.nanmedian": lambda x: x.nanmedian(0).values,
    "torch.mode": lambda x: torch.mode(x).values,
    "Tensor.mode": lambda x: x.mode(0, keepdim=True).values}, _SCAN)
add("selection_indices", {
    "torch.sort": op("sort", stable=True), "torch.argsort": op("argsort", descending=True),
    "Tensor.argsort": lambda x: x.argsort(0), "torch.topk": lambda x: torch.topk(x, 1),
    "torch.kthvalue": lambda x: torch.kthvalue(x, 1, 0),
    "torch.median": lambda x: torch.median(x, 0),
    "torch.nanmedian": lambda x: torch.nanmedian(x, -1), "torch.mode": torch.mode,
    "torch.cummax": lambda x: torch.cummax(x, 0), "torch.cummin": lambda x: torch.cummin(x, -1)},
    fixed(("f32", lambda r: [make(r, (3, 5))]), ("nan", lambda r: [_with_nans(r)]),
          ("repeats", lambda r: [make(r, (4, 6), I64, 0, 3)])), grad=False)


def _q(x, *q):
    return torch.tensor(list(q), dtype=x.dtype, device=x.device)


add("quantile", {
    "torch.quantile": op("quantile", q=0.3),
    "Tensor.quantile": lambda x: x.quantile(_q(x, 0.1, 0.5, 1.0), dim=-1, keepdim=True),
    "torch.quantile(lower)": lambda x: torch.quantile(x, 0.6, 0, interpolation="lower"),
    "torch.quantile(higher)": lambda x: torch.quantile(x, _q(x, 0.6), interpolation="higher"),
    "torch.quantile(midpoint)": lambda x: torch.quantile(x, 0.25, -1,
                                                         interpolation="midpoint"),
    "torch.quantile(nearest)": lambda x: torch.quantile(x, _q(x, 0.2, 0.7), 0,
                                                        interpolation="nearest"),
    "torch.nanquantile": op("nanquantile", q=0.75, dim=-1),
    "Tensor.nanquantile": lambda x: x.nanquantile(_q(x, 0.0, 0.4), keepdim=True)}, _SCAN)
add("nanquantile_nans", {"torch.nanquantile": op("nanquantile", q=0.4, dim=1),
                         "torch.quantile": op("quantile", q=0.4, dim=0),
                         "torch.nanmedian": lambda x: torch.nanmedian(x, 1)},
    fixed(("nan", lambda r: [_with_nans(r)])), grad=False)
add("searching", {
    "torch.searchsorted": lambda x, v: torch.searchsorted(x.sort().values, v),
    "torch.searchsorted(right)": lambda x, v: torch.searchsorted(x.sort().values, v,
                                                                 right=True, out_int32=True),
    "torch.bucketize": lambda x, v: torch.bucketize(v, x[0].sort().values),
    "torch.histc": lambda x, v: torch.histc(x, bins=7),
    "Tensor.histc": lambda x, v: v.histc(5, -1.0, 1.0),
    "torch.count_nonzero": lambda x, v: torch.count_nonzero(x > 0.5, dim=-1),
    "Tensor.count_nonzero": lambda x, v: (v > 0).count_nonzero()},
    fixed(("f32", lambda r: [make(r, (3, 6)), make(r, (3, 4))]),
          ("f64", lambda r: [make(r, (2, 6), F64), make(r, (2, 5), F64)])), grad=False)
_IDX = np.array([[0, 3, -1], [5, -7, 2]])


def _idx(x, a):
    """An index tensor on x's device (the cuda-device test runs the entries on a stand-in)."""
    return torch.tensor(np.asarray(a), device=x.device)


add("take", {
    "torch.take": lambda x: torch.take(x, _idx(x, _IDX)),
    "Tensor.take": lambda x: x.take(_idx(x, _IDX % 4)),
    "torch.take_along_dim": lambda x: torch.take_along_dim(x, _idx(x, _IDX % 3), 1),
    "Tensor.take_along_dim": lambda x: x.take_along_dim(_idx(x, [[1], [0], [-2]]), 0),
    "torch.take_along_dim(flat)": lambda x: torch.take_along_dim(x, _idx(x, _IDX % 4))},
    fixed(("f32", lambda r: [make(r, (2, 4))]), ("f64_perm", lambda r: [make(r, (2, 4), F64,
                                                                             layout="t")])))

# ----------------------------------------------------------------------------- not covered

_NOT_OPS = "not an operation on tensor values (metadata, modes, modules, types or utilities)"
_RANDOM = "random: compiled and eager draw different numbers by design"
_DATA = "returns a Python value or a shape that depends on the values: graph-breaks by design " \
        "(test_graph_breaking_ops_warn_once_and_match_eager, test_data_dependent_ops_follow_" \
        "the_data)"
_UNINIT = "uninitialised memory: no value to compare"
SKIPPED = {
    **{f"torch.{n}": _NOT_OPS for n in (
        "Generator", "Size", "Tensor", "autograd", "backends", "codegen", "compile", "cuda",
        "device", "dtype", "enable_grad", "get_default_dtype", "inference_mode", "initial_seed",
        "ir", "is_floating_point", "is_grad_enabled", "is_tensor", "load", "manual_seed", "nn",
        "multiprocessing", "distributed",
        "no_grad", "numel", "optim", "promote_types", "result_type", "can_cast", "runtime",
        "save", "seed", "serialization", "set_default_dtype", "set_grad_enabled",
        "set_printoptions", "tracer", "utils", "bool", "double", "float", "float16", "float32",
        "float64", "half", "int", "int16", "int32", "int64", "int8", "long", "short", "uint8",
        "BoolTensor", "ByteTensor", "CharTensor", "HalfTensor", "IntTensor", "LongTensor",
        "ShortTensor", "memory_format", "contiguous_format", "preserve_format",
        "channels_last", "channels_last_3d")},
    **{f"torch.{n}": _RANDOM for n in ("rand", "rand_like", "randn", "randn_like", "randint",
                                       "randint_like", "randperm")},
    **{f"torch.{n}": _UNINIT for n in ("empty", "empty_like")},
    **{f"torch.{n}": _DATA for n in ("equal", "allclose", "nonzero")},
    **{f"Tensor.{n}": _NOT_OPS for n in (
        "backward", "data", "data_ptr", "device", "dim", "dtype", "element_size", "grad",
        "grad_fn", "is_contiguous", "is_cuda", "is_floating_point", "is_leaf", "itemsize",
        "nbytes", "ndim", "ndimension", "nelement", "numel", "register_hook", "requires_grad",
        "requires_grad_", "retain_grad", "retains_grad", "shape", "size", "stride", "cuda",
        "detach_", "is_shared", "share_memory_", "register_post_accumulate_grad_hook")},
    **{f"Tensor.{n}": _RANDOM for n in ("normal_", "uniform_")},
    "Tensor.new_empty": _UNINIT,
    **{f"Tensor.{n}": _DATA for n in ("item", "tolist", "numpy", "equal", "allclose",
                                      "nonzero")},
    **{f"F.{n}": _RANDOM + " (their eval/training=False identity is covered)" for n in ()},
    **{n: "a door setting strides by hand: values, checks, sharing and gradients are tested "
          "in tests/tracer/test_strided_doors.py" for n in (
        "torch.frombuffer", "torch.as_strided", "Tensor.as_strided")},
    "Tensor.storage_offset": _NOT_OPS,
    **{n: "DLPack, a door sharing memory with other libraries: sharing, dtypes, layouts and "
          "refusals are tested in tests/tracer/test_dlpack.py" for n in (
        "torch.from_dlpack", "Tensor.__dlpack__", "Tensor.__dlpack_device__")},
    **{f"nn.{n}": _NOT_OPS for n in ("Module", "Parameter", "Buffer", "UninitializedParameter",
                                     "UninitializedBuffer", "LinearCrossEntropyOptions", "RNNBase", "RNNCellBase",
                                     "RemovableHandle")},
    # random sampling and default device (issue 11): tests/tracer/test_random_more.py
    **{f"torch.{n}": _RANDOM for n in ("bernoulli", "multinomial", "normal", "poisson")},
    **{f"Tensor.{n}": _RANDOM for n in ("random_", "exponential_", "geometric_", "log_normal_",
                                        "cauchy_", "bernoulli_", "bernoulli", "multinomial")},
    **{f"torch.{n}": _NOT_OPS for n in ("get_default_device", "set_default_device",
                                        "distributions")},
}
RANDOM_IN_TRAINING = "dropout in training mode is random; its eval form is covered"
# misc layers and losses (issue 11)
SKIPPED["F.gumbel_softmax"] = _RANDOM + " (tests/nn/test_layers_more.py: sums, one-hot, " \
    "straight-through gradient)"

# shapes, products, scatters (tracer/functional_shape.py) and linear algebra (fusetorch/linalg)
def mp(method: str, *bound, **kw):
    """The Tensor method with positional arguments bound."""
    return lambda x, *a, **k: getattr(x, method)(*bound, *a, **kw, **k)


def _sq(r, n=3, dtype=F64, batch=()):
    a = r.uniform(-0.3, 0.3, batch + (n, n)) + 2 * np.eye(n)
    return torch.from_numpy(a.astype(_NP[dtype]))


def _spd(r, n=3, dtype=F64):
    a = r.uniform(-1, 1, (n, n))
    return torch.from_numpy((a @ a.T + n * np.eye(n)).astype(_NP[dtype]))


M34 = fixed(("f32", lambda r: [make(r, (3, 4))]), ("f64_perm", lambda r: [make(r, (3, 4), F64,
                                                                                 layout="t")]))
add("tril_triu", {"torch.tril": op("tril", diagonal=-1), "Tensor.tril": mp("tril", 1),
                  "Tensor.tril_": inplace("tril_"), "torch.triu": op("triu"),
                  "Tensor.triu": m("triu", diagonal=1), "Tensor.triu_": inplace("triu_")}, X3)
add("diagonals", {"torch.diagonal": op("diagonal", offset=1), "Tensor.diagonal": m("diagonal"),
                  "torch.diag": op("diag", diagonal=-1), "Tensor.diag": m("diag"),
                  "torch.trace": op("trace"), "Tensor.trace": m("trace"),
                  "torch.diag_embed": op("diag_embed", offset=1),
                  "Tensor.diag_embed": m("diag_embed")}, M34)
add("rearrange", {"torch.roll": op("roll", shifts=(1, -2), dims=(0, 1)),
                  "Tensor.roll": mp("roll", 2), "torch.rot90": op("rot90"),
                  "Tensor.rot90": mp("rot90", 3, (1, 0)), "torch.fliplr": op("fliplr"),
                  "Tensor.fliplr": m("fliplr"), "torch.flipud": op("flipud"),
                  "Tensor.flipud": m("flipud"), "torch.movedim": op("movedim", source=0,
                                                                     destination=1),
                  "Tensor.movedim": mp("movedim", 1, 0), "torch.moveaxis": op("moveaxis",
                                                                             source=1,
                                                                             destination=0),
                  "Tensor.moveaxis": mp("moveaxis", 0, 1), "torch.tile": op("tile", dims=(2,)),
                  "Tensor.tile": mp("tile", (2, 1, 1)),
                  "torch.broadcast_to": op("broadcast_to", size=(2, 3, 4)),
                  "Tensor.broadcast_to": mp("broadcast_to", (2, 3, 4)),
                  "torch.broadcast_tensors": lambda x: torch.broadcast_tensors(x, x[:1]),
                  "torch.select": op("select", dim=1, index=-1),
                  "Tensor.select": mp("select", 0, 1),
                  "Tensor.unfold": mp("unfold", 1, 2, 1),
                  "torch.repeat_interleave": op("repeat_interleave", repeats=2, dim=1),
                  "Tensor.repeat_interleave": mp("repeat_interleave", 2)}, M34)
add("stacking", {f"torch.{n}": (lambda n: lambda a, b: getattr(torch, n)([a, b]))(n) for n in (
    "vstack", "hstack", "dstack", "column_stack", "row_stack")} | {
    f"torch.{n}": (lambda n: lambda a, b: getattr(torch, n)(a, b))(n) for n in (
        "atleast_1d", "atleast_2d", "atleast_3d")} | {
    "torch.meshgrid": lambda a, b: torch.meshgrid(a[0], b[:, 0], indexing="xy")}, fixed(
    ("f32", lambda r: [make(r, (3, 4)), make(r, (3, 4), layout="t")]),
    ("f64", lambda r: [make(r, (3, 4), F64), make(r, (3, 4), F64)])))
add("products", {"torch.outer": lambda a, b: torch.outer(a[0], b[0]),
                 "Tensor.outer": lambda a, b: a[0].outer(b[1]),
                 "torch.ger": lambda a, b: torch.ger(a[0], b[0]),
                 "Tensor.ger": lambda a, b: a[1].ger(b[0]),
                 "torch.inner": torch.inner, "Tensor.inner": m("inner"),
                 "torch.kron": torch.kron, "Tensor.kron": m("kron"),
                 "torch.tensordot": lambda a, b: torch.tensordot(a, b, ([1], [1])),
                 "torch.einsum": lambda a, b: torch.einsum("ij,kj->ik", a, b),
                 "torch.einsum(...)": lambda a, b: torch.einsum("...j,...j", a, b),
                 "torch.cdist": torch.cdist, "torch.dist": torch.dist, "Tensor.dist": m("dist", p=3)},
    fixed(("f32", lambda r: [make(r, (3, 4)), make(r, (3, 4), layout="t")]),
          ("f64", lambda r: [make(r, (3, 4), F64), make(r, (3, 4), F64)])))
add("addmm_family", {"torch.addmm": lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2),
                     "Tensor.addmm": lambda i, a, b: i.addmm(a, b),
                     "Tensor.addmm_": lambda i, a, b: i.clone().addmm_(a, b, beta=2),
                     "torch.addmv": lambda i, a, b: torch.addmv(i[:, 0], a, b[:, 0]),
                     "Tensor.addmv": lambda i, a, b: i[:, 1].addmv(a, b[:, 1], alpha=3),
                     "Tensor.addmv_": lambda i, a, b: i[:, 1].clone().addmv_(a, b[:, 1]),
                     "torch.addbmm": lambda i, a, b: torch.addbmm(i, a[None], b[None]),
                     "Tensor.addbmm": lambda i, a, b: i.addbmm(a[None], b[None]),
                     "Tensor.addbmm_": lambda i, a, b: i.clone().addbmm_(a[None], b[None]),
                     "torch.baddbmm": lambda i, a, b: torch.baddbmm(i, a[None], b[None]),
                     "Tensor.baddbmm": lambda i, a, b: i[None].baddbmm(a[None], b[None]),
                     "Tensor.baddbmm_": lambda i, a, b: i[None].clone().baddbmm_(a[None],
                                                                                 b[None])},
    fixed(("f32", lambda r: [make(r, (2, 4)), make(r, (2, 3)), make(r, (3, 4), layout="t")]),
          ("f64", lambda r: [make(r, (2, 4), F64), make(r, (2, 3), F64), make(r, (3, 4), F64)])))
_I = lambda: torch.tensor([[1, 0, 2, 2], [0, 2, 1, 0]])  # noqa: E731
add("scatters", {"torch.scatter": lambda x, s: torch.scatter(x, 0, _I(), s),
                 "Tensor.scatter": lambda x, s: x.scatter(0, _I(), 2.5),
                 "Tensor.scatter_": lambda x, s: x.clone().scatter_(0, _I(), s),
                 "torch.scatter_reduce": lambda x, s: torch.scatter_reduce(x, 0, _I(), s, "sum"),
                 "Tensor.scatter_reduce": lambda x, s: x.scatter_reduce(0, _I(), s, "mean",
                                                                        include_self=False),
                 "Tensor.scatter_reduce_": lambda x, s: x.clone().scatter_reduce_(0, _I(), s,
                                                                                  "mean"),
                 "torch.index_add": lambda x, s: torch.index_add(x, 0, torch.tensor([2, 2]), s),
                 "Tensor.index_add": lambda x, s: x.index_add(0, torch.tensor([0, 2]), s,
                                                              alpha=2),
                 "Tensor.index_add_": lambda x, s: x.clone().index_add_(0, torch.tensor([1, 1]),
                                                                        s),
                 "torch.index_copy": lambda x, s: torch.index_copy(x, 0, torch.tensor([2, 0]),
                                                                   s),
                 "Tensor.index_copy": lambda x, s: x.index_copy(0, torch.tensor([1, 0]), s),
                 "Tensor.index_copy_": lambda x, s: x.clone().index_copy_(0, torch.tensor([0, 1]),
                                                                          s),
                 "torch.index_fill": lambda x, s: torch.index_fill(x, 1, torch.tensor([3]), 1.5),
                 "Tensor.index_fill": lambda x, s: x.index_fill(0, torch.tensor([1, 2]), -1.0),
                 "Tensor.index_fill_": lambda x, s: x.clone().index_fill_(1, torch.tensor([0]),
                                                                          2.0)},
    fixed(("f32", lambda r: [make(r, (3, 4)), make(r, (2, 4))]),
          ("f64", lambda r: [make(r, (3, 4), F64, layout="t"), make(r, (2, 4), F64)])))
add("scatter_reduce(prod/amax/amin)", {
    "torch.scatter_reduce(prod)": lambda x, s: torch.scatter_reduce(x, 0, _I(), s, "prod"),
    "Tensor.scatter_reduce(amax)": lambda x, s: x.scatter_reduce(0, _I(), s, "amax"),
    "Tensor.scatter_reduce(amin)": lambda x, s: x.scatter_reduce(0, _I(), s, "amin",
                                                                 include_self=False),
    "Tensor.scatter_reduce_(prod)": lambda x, s: x.clone().scatter_reduce_(
        0, _I(), s, "prod", include_self=False)},
    fixed(("f32", lambda r: [make(r, (3, 4)), make(r, (2, 4))]),
          ("f64", lambda r: [make(r, (3, 4), F64, layout="t"), make(r, (2, 4), F64)])))
add("linalg_square", {"torch.linalg.inv": torch.linalg.inv, "torch.inverse": torch.inverse,
                      "Tensor.inverse": m("inverse"), "torch.linalg.det": torch.linalg.det,
                      "torch.det": torch.det, "Tensor.det": m("det"),
                      "torch.linalg.slogdet": lambda a: torch.linalg.slogdet(a)[1],
                      "torch.slogdet": lambda a: torch.slogdet(a)[1],
                      "Tensor.slogdet": lambda a: a.slogdet().logabsdet,
                      "torch.logdet": torch.logdet, "Tensor.logdet": m("logdet"),
                      "torch.linalg.solve": lambda a: torch.linalg.solve(a, a[..., 0]),
                      "torch.linalg.matrix_power": lambda a: torch.linalg.matrix_power(a, -2),
                      "torch.matrix_power": op("matrix_power", n=3),
                      "Tensor.matrix_power": mp("matrix_power", 2),
                      "torch.linalg.pinv": torch.linalg.pinv, "torch.pinverse": torch.pinverse,
                      "Tensor.pinverse": m("pinverse"),
                      "torch.linalg.svdvals": torch.linalg.svdvals,
                      "torch.linalg.qr": lambda a: torch.linalg.qr(a)[1].abs(),
                      "torch.qr": lambda a: torch.qr(a)[1].abs(),
                      "Tensor.qr": lambda a: a.qr().R.abs(),
                      "torch.linalg.svd": lambda a: torch.linalg.svd(a)[1],
                      "torch.svd": lambda a: torch.svd(a)[1], "Tensor.svd": lambda a: a.svd().S,
                      "torch.linalg.norm": torch.linalg.norm,
                      "torch.linalg.matrix_norm": lambda a: torch.linalg.matrix_norm(a, "nuc"),
                      "torch.linalg.vector_norm": lambda a: torch.linalg.vector_norm(a, 3),
                      "torch.norm": torch.norm, "Tensor.norm": mp("norm", 1, dim=0)},
    fixed(("f32", lambda r: [_sq(r, dtype=F32)]), ("f64_batch", lambda r: [_sq(r, batch=(2,))])),
    grad_rtol=1e-3)
add("linalg_compositions", {
    "torch.linalg.multi_dot": lambda a: torch.linalg.multi_dot([a[..., 0, :], a, a.mT, a]),
    "torch.linalg.vecdot": lambda a: torch.linalg.vecdot(a, a[0]),
    "torch.linalg.vander": lambda a: torch.linalg.vander(a[0], N=4),
    "torch.linalg.diagonal": lambda a: torch.linalg.diagonal(a, offset=1),
    "torch.linalg.cond": torch.linalg.cond,
    "torch.linalg.cond(fro)": lambda a: torch.linalg.cond(a, "fro"),
    "torch.linalg.tensorinv": lambda a: torch.linalg.tensorinv(a.reshape(2, 2, 2, 2)),
    "torch.linalg.solve_triangular": lambda a: torch.linalg.solve_triangular(
        a + 4 * torch.eye(4, dtype=a.dtype, device=a.device), a[:, :2], upper=True),
    "torch.linalg.householder_product": lambda a: torch.linalg.householder_product(
        a, a[0, :3]),
    "torch.linalg.inv_ex": lambda a: torch.linalg.inv_ex(a)[0]},
    fixed(("f32", lambda r: [_sq(r, 4, dtype=F32)]), ("f64", lambda r: [_sq(r, 4)])),
    grad_rtol=1e-3)
add("linalg_spd", {"torch.linalg.cholesky": torch.linalg.cholesky,
                   "torch.cholesky": torch.cholesky, "Tensor.cholesky": m("cholesky", upper=True),
                   "torch.linalg.eigvalsh": torch.linalg.eigvalsh,
                   "torch.linalg.eigh": lambda a: torch.linalg.eigh(a)[0]},
    fixed(("f32", lambda r: [_spd(r, dtype=F32)]), ("f64", lambda r: [_spd(r)])),
    grad_rtol=1e-3)
add("cross", {"torch.linalg.cross": torch.linalg.cross, "torch.cross": torch.cross,
              "Tensor.cross": m("cross", dim=1)},
    fixed(("f32", lambda r: [make(r, (2, 3)), make(r, (2, 3))])))
SKIPPED.update({
    "torch.linalg": _NOT_OPS,
    **{f"torch.{n}": "index lists computed from sizes alone (tests/tracer/test_shapes_more.py)"
       for n in ("tril_indices", "triu_indices")},
})
# half-precision dtypes (issue 11): tests/tracer/test_half_dtypes.py
add("bfloat16", {"Tensor.bfloat16": lambda x: x.bfloat16().float(),
                 "torch.bfloat16(dtype)": lambda x: (x.to(torch.bfloat16) * 2).float()},
    fixed(("f32", lambda r: [make(r, (4, 5))])), grad=False)
SKIPPED.update({f"torch.{n}": _NOT_OPS for n in ("bfloat16", "BFloat16Tensor", "finfo",
                                                   "iinfo")})
# public-program smoke tests (issue 11): tests/programs/test_programs.py covers torch.accelerator
SKIPPED["torch.accelerator"] = _NOT_OPS
# scans, sorting and selection (issue 11): output sizes that depend on the values
for _n in ("unique", "unique_consecutive", "bincount", "masked_select"):
    SKIPPED[f"torch.{_n}"] = SKIPPED[f"Tensor.{_n}"] = _DATA + " (tests/tracer/test_scans.py)"

# fractional max pooling reads its random samples on the host to place its windows
for _n in ("F.fractional_max_pool2d", "F.fractional_max_pool2d_with_indices",
           "F.fractional_max_pool3d", "F.fractional_max_pool3d_with_indices",
           "nn.FractionalMaxPool2d", "nn.FractionalMaxPool3d"):
    SKIPPED[_n] = _DATA + " (tests/nn/test_pooling3d.py: PyTorch's windows, values, indices, " \
        "gradients)"

# checkpoint formats (issue 15): readers and writers, tests/test_checkpoint_formats.py
SKIPPED["torch.checkpoint_formats"] = _NOT_OPS
# thread settings: tests/runtime/test_threads.py
SKIPPED.update({f"torch.{n}": _NOT_OPS for n in (
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads")})
SKIPPED["torch.onnx"] = _NOT_OPS  # exports every op in this registry: tests/onnx

# the profiler (issue 15): tests/test_profiler.py
SKIPPED["torch.profiler"] = _NOT_OPS
# torch.special: its functions are covered under their torch.special names in the entries above
SKIPPED["torch.special"] = _NOT_OPS

# modules scripts import at the top (issue 11): amp (tests/amp/), jit, onnx, testing, cpu
# (tests/test_jit.py, tests/onnx/, tests/testing/); what tensors never are
# (tests/test_out_of_scope.py)
SKIPPED.update({f"torch.{n}": _NOT_OPS for n in (
    "amp", "cpu", "jit", "testing", "autocast", "autocast_decrement_nesting",
    "autocast_increment_nesting", "clear_autocast_cache", "get_autocast_dtype",
    "is_autocast_cache_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
    "set_autocast_dtype", "set_autocast_enabled", "is_complex")})
SKIPPED.update({f"Tensor.{n}": _NOT_OPS for n in (
    "is_complex", "is_nested", "is_quantized", "is_sparse", "is_sparse_csr", "is_cpu", "is_mps",
    "is_xpu", "is_meta", "is_mkldnn", "is_vulkan", "is_ipu", "is_xla", "is_mtia", "is_maia",
    "is_conj", "is_neg", "is_pinned", "is_distributed", "is_signed", "is_same_size",
    "is_nonzero", "layout")})  # tests/tracer/test_tensor_flags.py
# the sparse COO subset: tests/test_sparse.py (composites of index_add/index_select)
SKIPPED.update({n: _NOT_OPS for n in (
    "torch.sparse", "torch.sparse_coo_tensor", "torch.spmm", "torch.sparse_coo", "torch.strided",
    "torch.layout", "Tensor.to_sparse", "Tensor.to_sparse_coo", "Tensor.to_dense",
    "Tensor.indices", "Tensor.values", "Tensor.coalesce", "Tensor.is_coalesced",
    "Tensor.sparse_dim", "Tensor.dense_dim")})

# PyTorch's catalogue (issue 27): its entries are in tests/opinfo_catalogue.py, added to OPS
# and SKIPPED when it is imported here
import opinfo_catalogue  # noqa: E402,F401
