"""Run PyTorch's own OpInfo samples against fusetorch (a developer tool, NOT a test).

This script IMPORTS TORCH: it is never collected by pytest and the package never imports
it. It needs a scratch environment with PyTorch (and expecttest/hypothesis, which op_db's
module imports), run with the worktree on the path:

    PYTHONPATH=/path/to/fusetorch /tmp/tv/bin/python tools/torch_opinfo_check.py \
        --dtypes float32,float64,int64,bool --out /tmp/opcheck.json [--ops add,linalg.norm]
        [--start 0 --stop 100] [--timeout 120] [--max-samples 40]

For every entry of `torch.testing._internal.common_methods_invocations.op_db` it finds the
fusetorch callable (the entry's name and aliases walked through fusetorch's namespaces, a
Tensor method as fallback; entries whose op is a Python lambda run that lambda's code with
`torch` rebound to fusetorch), converts each SampleInput through numpy (strides kept, so the
non-contiguous variants stay non-contiguous), runs both and compares values (per-dtype
tolerances like torch.testing's), float64 gradients (one random cotangent per sample; a float32
or bfloat16 leaf's gradient at its dtype's tolerance) and the exception type of error_inputs.
A gradient disagreement is no failure (counted, and listed as "excused" with -v) where
central differences in float64 agree with fusetorch's and not with PyTorch's at every differing
element, the function being smooth there (`grad_nearer_fd`: addcmul's bfloat16 rounding inside
PyTorch's formula, as_strided_scatter's input gradient); where PyTorch's value is an overflowed
intermediate and fusetorch's a finite one near float64's limit (`grad_overflow`: ldexp); or
where the differing elements are NaN inputs at which PyTorch's own elementwise gradient
depends on its kernel path, vectorised or scalar, and fusetorch's is one of the two
(`grad_nan_path`: hardtanh, relu6, the shrinks, elu/celu/selu). Each op gets one class, worst
first:

    WRONG VALUE > WRONG GRAD > RAISES (on valid input) > WRONG ERROR > OK
    MISSING (no callable) and SKIP (out of scope: complex, fft, sparse, quantized, aten
    internals, CUDA-only jiterator entries)

`--out` gets per-op JSON (class, counts, the first failures' descriptions); the summary
table goes to stdout. `--merge a.json b.json ...` prints the table of several batch files.
"""
from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
import traceback
import types
import warnings

import numpy as np

CLASSES = ("WRONG VALUE", "WRONG GRAD", "RAISES", "WRONG ERROR", "TIMEOUT", "OK", "MISSING", "SKIP")
OUT_OF_SCOPE_PREFIXES = ("fft.", "_refs", "sparse", "to_sparse", "jiterator", "torch.ops.", "view_as_complex",
                         "view_as_real", "complex", "polar", "cfloat", "cdouble", "chalf", "quantized",
                         "nn.functional.scaled_dot_product_attention_", "resolve_conj", "resolve_neg",
                         "conj_physical", "torch._scaled_mm")  # (float8 products)
OUT_OF_SCOPE_NAMES = {"real", "imag", "angle", "conj", "isreal", "fft", "stft", "istft",
                      "native_dropout_backward", "slice",
                      "max_pool2d_with_indices_backward"}  # (ATen's backward kernels)
# Random or uninitialised results: compare shapes and dtypes, never values.
NONDETERMINISTIC = ("dropout", "rand", "bernoulli", "multinomial", "normal", "uniform", "exponential",
                    "cauchy", "geometric", "log_normal", "poisson", "rrelu", "empty", "fractional_max_pool",
                    "new_empty", "randint", "randn", "alpha_dropout", "feature_alpha_dropout")
TOL = {"float32": (1.3e-6 * 10, 1e-5), "float64": (1e-7, 1e-7), "float16": (1e-3, 1e-5),
       "bfloat16": (1.6e-2, 1e-5)}
GRAD_TOL = (1e-6, 1e-7)


def _out_of_int_range(sample, t_out):
    """Float elements a cast to t_out's integer dtype cannot hold (NaN, inf, beyond its range)."""
    x = sample.input
    if not x.dtype.is_floating_point or t_out.dtype.is_floating_point or t_out.dtype == x.dtype:
        return None
    import torch
    info = torch.iinfo(t_out.dtype) if t_out.dtype != torch.bool else None
    a = x.detach().double().numpy()
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(a) if info is None else ~np.isfinite(a) | (np.trunc(a) < info.min) | (
            np.trunc(a) > info.max)


def _polygamma_edges(sample, t_out):
    """polygamma's documented departures (fusetorch/ir/gamma.py): n >= 2 at +inf (0 here, NaN in
    PyTorch), trigamma at -inf and negative integers (+inf here; PyTorch NaN / a huge number)."""
    n = sample.kwargs.get("n", sample.args[0] if sample.args and isinstance(sample.args[0], int) else None)
    a = sample.input.detach().double().numpy()
    if n is None:
        return None
    neg_pole = (a == -np.inf) | ((a < 0) & (a == np.round(a)))
    # the gradient is polygamma(n + 1, x): n = 1 departs at +inf there
    return (a == np.inf) & (n >= 1) | neg_pole & (n == 1)


def _digamma_grad_edges(sample, t_out):
    """digamma's gradient is trigamma (see _polygamma_edges): only the gradient departs."""
    a = sample.input.detach().double().numpy()
    return (a == -np.inf) | ((a < 0) & (a == np.round(a)))


# Known departures: PyTorch behaviour fusetorch deliberately does not copy. Per op entry name:
# (reason, mask(sample, torch output) -> bool array over the first output or None, what: "value"
# and/or "grad"). Masked elements are left out of the comparison of the first output (values)
# and of the first input's gradient (elementwise ops only); counted as `departures`.
_CAST_UB = ("a float cast to an integer dtype is undefined out of the target's range (PyTorch's "
            "docs; x86 gives INT_MIN, other CPUs other values); fusetorch truncates through int64 "
            "and wraps", _out_of_int_range, ("value",))
DEPARTURES = {name: _CAST_UB for name in ("int", "short", "char", "byte", "long")}
DEPARTURES["signal.windows.kaiser"] = (
    "PyTorch's float32 i0 overflows from x = log(FLT_MAX) = 88.7 on (exp(x) first), though i0(x) is "
    "finite up to 91.9: inf / inf = NaN there; fusetorch's i0 gives the value",
    lambda sample, t_out: np.isnan(t_out.detach().numpy()) if str(t_out.dtype) == "torch.float32" and
    sample.kwargs.get("beta", 12.0) > 88.7 else None, ("value",))
for _n in ("polygamma.polygamma_n_1", "polygamma.polygamma_n_2", "polygamma.polygamma_n_3",
           "polygamma.polygamma_n_4"):
    DEPARTURES[_n] = ("PyTorch's zeta(n + 1, +inf) is NaN (the limit is 0) and its trigamma is finite "
                      "at negative integers and NaN at -inf; fusetorch/ir/gamma.py", _polygamma_edges,
                      ("value", "grad"))
# op_db's n_0 variants sample n = 1..5 beside n = 0: polygamma's departures, and digamma's
# gradient ones at n = 0 (which mask its values there too: NaN on both sides at those points);
# int8/int16 samples reach the negative integers, which gh-106692 keeps int32/int64 ones off
for _n in ("polygamma.polygamma_n_0", "special.polygamma.special_polygamma_n_0"):
    DEPARTURES[_n] = (DEPARTURES["polygamma.polygamma_n_1"][0] + "; n = 0: digamma's gradient",
                      lambda sample, t_out: _digamma_grad_edges(sample, t_out) if sample.kwargs.get(
                          "n", sample.args[0] if sample.args else 0) == 0 else
                      _polygamma_edges(sample, t_out), ("value", "grad"))
for _n in ("digamma", "mvlgamma.mvlgamma_p_1", "mvlgamma.mvlgamma_p_3",
           "mvlgamma.mvlgamma_p_5"):
    DEPARTURES.setdefault(_n, ("the gradient is trigamma: see polygamma", _digamma_grad_edges, ("grad",)))



def _half_precision(sample, t_out):
    """Every element of a float16/bfloat16 result."""
    return np.ones(tuple(t_out.shape), bool) if str(t_out.dtype) in (
        "torch.float16", "torch.bfloat16") else None


DEPARTURES["matrix_exp"] = (
    "PyTorch's CPU matrix_exp evaluates its float64-tuned degree-18 polynomial in float16/bfloat16 "
    "(NaN or garbage for all but tiny norms; its own Inductor test skips Half); fusetorch computes "
    "in float32 and rounds once", _half_precision, ("value", "grad"))


def _grid_sample_int16(sample, t_out):
    """The outputs whose input offsets can pass 32767 elements in PyTorch's vectorised float16/
    bfloat16 2-d kernel, whose gather offsets are int_same_size_t<scalar_t> = int16: they wrap
    and read outside the image (NaN or 1e13 from foreign memory). Conservative: |unnormalised
    coordinate| + 2 taps."""
    x = sample.input
    if str(x.dtype) not in ("torch.float16", "torch.bfloat16") or x.dim() != 4:
        return None
    _, _, h, w = x.shape
    sh, sw = x.stride(2), x.stride(3)
    if (h - 1) * sh + (w - 1) * sw < 32768:
        return None
    grid = (sample.args[0] if sample.args else sample.kwargs["grid"]).detach().double().numpy()
    align = sample.args[3] if len(sample.args) > 3 else sample.kwargs.get("align_corners", False)
    gx, gy = grid[..., 0], grid[..., 1]
    if align:
        ix, iy = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
    else:
        ix, iy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
    with np.errstate(invalid="ignore"):
        far = ~((np.abs(iy) + 2) * sh + (np.abs(ix) + 2) * sw < 32768)
    return np.broadcast_to(far[:, None], tuple(t_out.shape))


DEPARTURES["nn.functional.grid_sample"] = (
    "PyTorch's float16/bfloat16 2-d grid sampler computes gather offsets in int16 (wrapping past 32767 "
    "elements of an image plane: reads outside the input); fusetorch reads the right pixels",
    _grid_sample_int16, ("value", "grad"))

class OpTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise OpTimeout()


class Converter:
    """torch objects to fusetorch ones, through numpy, keeping strides."""

    def __init__(self, torch, ft):
        self.torch, self.ft = torch, ft
        self.leaves = []  # (torch tensor, fusetorch tensor) pairs of requires_grad leaves
        self.storages = {}  # torch storage address -> fusetorch flat tensor (aliasing kept)

    def tensor(self, t):
        torch, ft = self.torch, self.ft
        if t.is_complex() or t.is_sparse or t.is_quantized or t.layout != torch.strided:
            raise Unrepresentable(str(t.dtype))
        name = str(t.dtype).split(".")[1]
        dt = getattr(ft, name, None)
        if dt is None or name.startswith(("uint16", "uint32", "uint64", "float8", "qint", "quint", "complex")):
            raise Unrepresentable(name)
        d = t.detach()
        # numpy has no bfloat16: its values travel as float32 (exact) and are cast back
        host = (lambda x: x.float().numpy()) if d.dtype == torch.bfloat16 else (lambda x: x.numpy())
        back = (lambda x: x.to(dt)) if d.dtype == torch.bfloat16 else (lambda x: x)
        # the whole reachable storage, copied, viewed with the sample's strides
        if d.numel() == 0 or not all(s >= 0 for s in d.stride()):
            arr = host(d.contiguous()).copy()
            out = back(ft.from_numpy(arr))
        else:
            # the whole storage (as_strided samples read outside the view), shared by every
            # tensor of the sample that shares it (out= aliasing an input), then the view
            total = d.untyped_storage().nbytes() // d.element_size()
            whole = host(torch.as_strided(d, (total,), (1,), 0)).copy()
            if t.requires_grad:  # a leaf of its own, over a copy of the whole storage
                out = back(ft.from_numpy(whole)).as_strided(tuple(d.shape), tuple(d.stride()),
                                                            d.storage_offset()).detach()
            else:
                key = (d.untyped_storage().data_ptr(), str(d.dtype))
                flat = self.storages.get(key)
                if flat is None:
                    flat = self.storages[key] = back(ft.from_numpy(whole))
                out = flat.as_strided(tuple(d.shape), tuple(d.stride()), d.storage_offset())
            arr = (out.float() if d.dtype == torch.bfloat16 else out).numpy()
        if d.dim() == 0:
            out = ft.tensor(arr.copy(), dtype=dt)
        if t.requires_grad:
            out.requires_grad_(True)
            self.leaves.append((t, out))
        return out

    def __call__(self, x):
        torch, ft = self.torch, self.ft
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, torch.dtype):
            name = str(x).split(".")[1]
            dt = getattr(ft, name, None)
            if dt is None or "complex" in name:
                raise Unrepresentable(name)
            return dt
        if isinstance(x, torch.device):
            return ft.device(str(x))
        if isinstance(x, torch.memory_format):
            return getattr(ft, str(x).split(".")[1])
        if isinstance(x, torch.Size):
            return tuple(x)
        if isinstance(x, torch.Generator):
            raise Unrepresentable("generator")
        if isinstance(x, torch.layout):
            if x != torch.strided:
                raise Unrepresentable(str(x))
            return ft.strided
        if isinstance(x, complex):
            raise Unrepresentable("complex scalar")
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*[self(v) for v in x])
        if isinstance(x, (list, tuple)):
            return type(x)(self(v) for v in x)
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        if isinstance(x, torch.nn.Module):
            return self.module(x)
        if isinstance(x, types.FunctionType) or callable(x) and getattr(x, "__module__", "") == "torch":
            return Resolver.callable_for(self.torch, self.ft, x)
        return x


    def module(self, m):
        """A parameterless torch layer (triplet_margin_with_distance_loss's PairwiseDistance()) as
        fusetorch's class of that name, with the same public attributes."""
        cls = getattr(self.ft.nn, type(m).__name__, None)
        if cls is None or any(True for _ in m.parameters()) or any(True for _ in m.buffers()):
            raise Unrepresentable(type(m).__name__)
        out = cls.__new__(cls)
        self.ft.nn.Module.__init__(out)
        for k, v in vars(m).items():
            if not k.startswith("_"):
                setattr(out, k, self(v))
        return out


class Unrepresentable(Exception):
    pass


class Resolver:
    NAMESPACES = {"torch": "", "torch.nn.functional": "nn.functional", "torch._C._nn": "nn.functional",
                  "torch._C._linalg": "linalg", "torch._C._special": "special", "torch.linalg": "linalg",
                  "torch.special": "special", "torch._C._VariableFunctions": "", "torch.functional": "",
                  "torch._tensor": ""}

    @staticmethod
    def walk(root, dotted):
        obj = root
        for part in dotted.split("."):
            if not part:
                continue
            try:
                obj = getattr(obj, part)
            except Exception:
                return None
        return obj

    @classmethod
    def callable_for(cls, torch, ft, fn):
        """The fusetorch counterpart of one torch callable (also used for callables in args)."""
        if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
            return cls.rebind(torch, ft, fn)
        name = getattr(fn, "__name__", None)
        mod = getattr(fn, "__module__", None) or ""
        qual = getattr(fn, "__qualname__", "") or ""
        if name is None:
            return None
        if qual.startswith(("TensorBase.", "Tensor.")) or type(fn).__name__ in ("method_descriptor",
                                                                                 "wrapper_descriptor"):
            return getattr(ft.Tensor, name, None)
        ns = cls.NAMESPACES.get(mod)
        if mod.startswith("torch.nn.functional") or mod.startswith("torch.nn.modules"):
            ns = "nn.functional"
        if ns is None:
            ns = mod[len("torch."):] if mod.startswith("torch.") else ""
        short = name
        for prefix in ("linalg_", "special_"):
            if ns in ("linalg", "special") and short.startswith(prefix):
                short = short[len(prefix):]
        found = cls.walk(ft, (ns + "." if ns else "") + short)
        return found

    @staticmethod
    def rebind(torch, ft, fn):
        """Run a testing lambda's code with `torch` (and its submodules) rebound to fusetorch."""
        g = dict(fn.__globals__)
        g["torch"] = ft
        for k, v in list(g.items()):
            if isinstance(v, types.ModuleType) and v.__name__.startswith("torch.") and not \
                    v.__name__.startswith("torch.testing"):
                sub = Resolver.walk(ft, v.__name__[len("torch."):])
                if sub is not None:
                    g[k] = sub
        closure = None
        if fn.__closure__:
            conv = Converter(torch, ft)
            cells = []
            for c in fn.__closure__:
                try:
                    v = c.cell_contents
                except ValueError:
                    cells.append(c)
                    continue
                if callable(v) and not isinstance(v, type) and (getattr(v, "__module__", "") or "").startswith(
                        "torch") and not isinstance(v, torch.Tensor):
                    v = Resolver.callable_for(torch, ft, v) or v
                elif isinstance(v, (torch.Tensor, torch.dtype)):
                    v = conv(v)
                cells.append(types.CellType(v))
            closure = tuple(cells)
        new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, closure)
        new.__kwdefaults__ = fn.__kwdefaults__
        return new

    @classmethod
    def for_op(cls, torch, ft, op):
        if isinstance(op.op, types.FunctionType) and op.op.__module__.startswith("torch.testing"):
            return cls.rebind(torch, ft, op.op), "lambda"
        names = [op.name] + [a.name for a in op.aliases]
        for n in names:
            for root in (ft,):
                f = cls.walk(root, n)
                if f is not None and callable(f):
                    return f, n
            f = getattr(ft.Tensor, n, None) if "." not in n else None
            if f is not None:
                return f, "Tensor." + n
        f = cls.callable_for(torch, ft, op.op)
        if f is not None:
            return f, "by __name__"
        return None, None


def flatten(x, torch_mode, torch=None, ft=None):
    """Leaves of an output structure, in order."""
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(flatten(v, torch_mode, torch, ft))
        return out
    return [x]


def as_array(x, torch, ft):
    if isinstance(x, torch.Tensor):
        d = x.detach()
        if d._is_zerotensor():
            d = torch.zeros(d.shape, dtype=d.dtype)
        if d.dtype == torch.bfloat16:
            d = d.float()
        return d.resolve_conj().resolve_neg().numpy(), str(x.dtype)
    if isinstance(x, ft.Tensor):
        d = x.detach()
        name = str(d.dtype)
        if name == "torch.bfloat16":
            d = d.float()
        return np.asarray(d.numpy()), name
    return None, None


def compare(t_out, f_out, torch, ft, values=True, tol=None, skip=None):
    """None if equal, else a short reason. `skip`: elements of the first output not compared."""
    tl, fl = flatten(t_out, True), flatten(f_out, False)
    if len(tl) != len(fl):
        return f"{len(tl)} outputs, fusetorch {len(fl)}"
    for i, (a, b) in enumerate(zip(tl, fl)):
        at, adt = as_array(a, torch, ft)
        if at is None:
            if isinstance(a, torch.dtype) or isinstance(a, torch.Size):
                if str(a) != str(b) and tuple(a) if isinstance(a, torch.Size) else str(a) != str(b):
                    if not (isinstance(a, torch.Size) and tuple(a) == tuple(b)):
                        return f"out {i}: {a} vs {b}"
                continue
            if isinstance(b, ft.Tensor):
                return f"out {i}: torch {type(a).__name__} {a!r:.40}, fusetorch a tensor"
            if isinstance(a, (int, float, bool)) and isinstance(b, (int, float, bool, np.generic)):
                if values and not (a == b or (isinstance(a, float) and math.isclose(a, float(b), rel_tol=1e-6,
                                                                                     abs_tol=1e-7))
                                   or (a != a and b != b)):
                    return f"out {i}: {a!r} vs {b!r}"
                if type(a) is not type(b) and not isinstance(b, np.generic):
                    return f"out {i}: torch {type(a).__name__}, fusetorch {type(b).__name__}"
                continue
            if a is None and b is None:
                continue
            if a != b:
                return f"out {i}: {a!r:.60} vs {b!r:.60}"
            continue
        bt, bdt = as_array(b, torch, ft)
        if bt is None:
            return f"out {i}: torch tensor, fusetorch {type(b).__name__}"
        if adt != bdt:
            return f"out {i}: dtype {adt} vs {bdt}"
        if at.shape != bt.shape:
            return f"out {i}: shape {at.shape} vs {bt.shape}"
        if not values or at.size == 0:
            continue
        keep = np.ones(at.shape, bool) if skip is None or i else ~np.broadcast_to(skip, at.shape)
        if at.dtype.kind in "fc":
            rtol, atol = tol or TOL.get(adt.split(".")[1], (1e-5, 1e-6))
            a64, b64 = at.astype(np.float64), bt.astype(np.float64)
            same_nan = np.isnan(a64) == np.isnan(b64)
            fin = ~np.isnan(a64) & ~np.isnan(b64)
            inf_ok = np.where(np.isinf(a64) | np.isinf(b64), a64 == b64, True)
            close = np.abs(a64 - b64) <= atol + rtol * np.abs(a64)
            bad = (~same_nan | (fin & ~inf_ok) | (fin & ~np.isinf(a64) & ~np.isinf(b64) & ~close)) & keep
            if bad.any():
                k = int(np.argmax(bad.reshape(-1)))
                return (f"out {i}: {int(bad.sum())}/{bad.size} differ, e.g. {a64.reshape(-1)[k]!r} vs "
                        f"{b64.reshape(-1)[k]!r} (dtype {adt}, shape {at.shape})")
        else:
            diff = (at != bt) & keep
            if diff.any():
                k = int(np.argmax(diff.reshape(-1)))
                return f"out {i}: {int(diff.sum())}/{at.size} differ, e.g. {at.reshape(-1)[k]} vs " \
                       f"{bt.reshape(-1)[k]} ({adt})"
    return None


def describe(sample, torch):
    def d(x):
        if isinstance(x, torch.Tensor):
            nc = "" if x.is_contiguous() else ",nc"
            return f"T{list(x.shape)}{str(x.dtype)[6:]}{nc}"
        if isinstance(x, (list, tuple)):
            return "[" + ",".join(d(v) for v in x) + "]"
        if isinstance(x, dict):
            return "{" + ",".join(f"{k}={d(v)}" for k, v in x.items()) + "}"
        return repr(x)[:30]
    return f"{d(sample.input)} args={d(sample.args)} kw={d(sample.kwargs)}"


def err(e):
    msg = str(e).split("\n")[0][:150]
    return f"{type(e).__name__}: {msg}"


class OpResult:
    def __init__(self, name):
        self.name = name
        self.counts = {"value_ok": 0, "value_bad": 0, "grad_ok": 0, "grad_bad": 0, "raises": 0,
                       "error_ok": 0, "error_bad": 0, "skipped": 0, "torch_raises": 0,
                       "value_precision": 0, "grad_detached": 0, "departures": 0,
                       "grad_nearer_fd": 0, "grad_overflow": 0, "grad_nan_path": 0}
        self.fails = {"WRONG VALUE": [], "WRONG GRAD": [], "RAISES": [], "WRONG ERROR": []}
        self.notes = []  # gradient disagreements decided for fusetorch (central differences, overflow)
        self.status = None
        self.how = None
        self.missing_variants = []

    def fail(self, cls, text):
        if len(self.fails[cls]) < 6:
            self.fails[cls].append(text)

    def klass(self):
        if self.status:
            return self.status
        if not self.counts["value_ok"] and self.fails["RAISES"] and all(
                "has no attribute" in f for f in self.fails["RAISES"]):
            return "MISSING"  # a testing lambda calling a function fusetorch lacks
        for c, k in (("WRONG VALUE", "value_bad"), ("WRONG GRAD", "grad_bad"), ("RAISES", "raises"),
                     ("WRONG ERROR", "error_bad")):
            if self.counts[k]:
                return c
        return "OK"


def is_nondeterministic(op):
    n = op.name.lower()
    return any(k in n for k in NONDETERMINISTIC)


# Index outputs of selections are PyTorch's choice among equal values (not a contract): only
# their shape and dtype are compared. Eigenvectors are compared up to sign.
TIE_INDICES = {"sort", "argsort", "topk", "kthvalue", "mode", "median", "nanmedian", "msort", "max", "min"}
SIGN_FREE = {"linalg.eigh", "linalg.svd", "svd", "linalg.qr", "svd_lowrank", "pca_lowrank"}
# (U, S, V) results whose singular vectors are unique up to a sign per pair (PyTorch's svd docs):
# each pair is turned to a canonical sign (U's largest-magnitude entry of the column positive)
# on both sides, a stronger comparison than SIGN_FREE's absolute values. index of V, V transposed
SVD_PAIRS = {"svd": (2, False), "svd_lowrank": (2, False), "pca_lowrank": (2, False), "linalg.svd": (2, True)}


def canonical_svd(flat, v_index, v_rows, torch, ft):
    arrs = [as_array(v, torch, ft)[0] for v in flat]
    u, v = arrs[0], arrs[v_index]
    if u is None or v is None or u.ndim < 2 or u.size == 0:
        return flat
    k = min(u.shape[-1], v.shape[-2] if v_rows else v.shape[-1])
    u = u[..., :k].astype(np.float64)
    big = np.take_along_axis(u, np.abs(u).argmax(axis=-2)[..., None, :], axis=-2)
    sign = np.where(big < 0, -1.0, 1.0)  # shape (..., 1, k)
    out = list(flat)
    u_full = arrs[0].astype(np.float64).copy()
    u_full[..., :k] *= sign
    v_full = arrs[v_index].astype(np.float64).copy()
    if v_rows:
        v_full[..., :k, :] *= np.swapaxes(sign, -1, -2)
    else:
        v_full[..., :k] *= sign
    # full_matrices: the vectors past k are "arbitrary bases of the corresponding subspaces"
    # (linalg.svd's docs; MKL and OpenBLAS pick different ones): compared as their projector
    u_rest = u_full[..., k:]
    v_rest = np.swapaxes(v_full[..., k:, :], -1, -2) if v_rows else v_full[..., k:]
    extra = [u_rest @ np.swapaxes(u_rest, -1, -2), v_rest @ np.swapaxes(v_rest, -1, -2)]
    u_full, v_full = u_full[..., :k], v_full[..., :k, :] if v_rows else v_full[..., :k]
    dt = arrs[0].dtype
    out[0] = torch.from_numpy(u_full.astype(dt))
    out[v_index] = torch.from_numpy(v_full.astype(arrs[v_index].dtype))
    return out + [torch.from_numpy(e.astype(dt)) for e in extra]


def normalise(op, out, torch, ft):
    """Outputs with their unspecified parts removed (see TIE_INDICES, SIGN_FREE)."""
    flat = flatten(out, False)
    name = op.name if hasattr(op, "name") else ""
    if name in TIE_INDICES:
        flat = [None if k and as_array(v, torch, ft)[1] == "torch.int64" else v for k, v in enumerate(flat)] \
            if len(flat) > 1 else ([None] if name == "argsort" else flat)
    if name in SVD_PAIRS and len(flat) == 3:
        return canonical_svd(flat, *SVD_PAIRS[name], torch, ft)
    if name in SIGN_FREE:
        flat = [v.abs() if isinstance(v, (torch.Tensor, ft.Tensor)) and v.dtype.is_floating_point else v
                for v in flat]
    return flat


def lowrank_exact(sample):
    """Whether op_db's svd/pca_lowrank sample (a @ b.mT, minus M) has rank <= q: then the
    randomized range finder finds the exact subspace and the result is determined."""
    a, b = sample.input.detach().double().numpy(), sample.args[0].detach().double().numpy()
    m = a @ np.swapaxes(b, -1, -2)
    if sample.kwargs.get("M") is not None:
        m = m - sample.kwargs["M"].detach().double().numpy()
    if sample.kwargs.get("center"):
        m = m - m.mean(axis=-2, keepdims=True)
    q = sample.kwargs.get("q") or min(6, *m.shape[-2:])
    return bool(np.all(np.linalg.matrix_rank(m) <= q))


def call(fn, sample, conv):
    inp = conv(sample.input)
    args = conv(tuple(sample.args))
    kwargs = conv(dict(sample.kwargs))
    return fn(inp, *args, **kwargs)


# Functions whose float64 reference is scipy's (Cephes at full accuracy): PyTorch's own ports of
# the Bessel and Airy functions are off by up to 1e-6 relative near their roots in float64 (and
# 4e-4 for airy_ai in float32), fusetorch computes with scipy. A difference is no bug where
# fusetorch is at least as close to scipy as torch is, element by element.
# Likewise PyTorch's Hurwitz zeta is NaN at q = +inf and at (1e20, 1e20), where it is 0.
SCIPY_REFERENCE = {"special.bessel_j0": "j0", "special.bessel_j1": "j1", "special.bessel_y0": "y0",
                   "special.bessel_y1": "y1", "special.airy_ai": "airy", "special.zeta": "zeta"}


def scipy_reference(op, sample):
    import scipy.special as sp
    name = SCIPY_REFERENCE[op.name]
    f64 = (lambda v: v.detach().double().numpy() if hasattr(v, "detach") else np.float64(v))
    args = [f64(sample.input)] + [f64(a) for a in sample.args]
    with np.errstate(all="ignore"):
        return sp.airy(*args)[0] if name == "airy" else getattr(sp, name)(*args)


# float16/bfloat16: (mantissa bits, the smallest spacing), for half an ulp of a reference value
HALF_ULP = {"torch.float16": (10, 2.0 ** -24), "torch.bfloat16": (7, 2.0 ** -133)}


def closer_than_torch(op, sample, t_out, f_out, torch, ft):
    """A float32, float16 or bfloat16 difference is no bug where fusetorch is about as close to
    the float64 evaluation of the same inputs as torch is (in half precision within half an
    ulp: PyTorch's half kernels differ by path, e.g. i0e's scalar tail and non-contiguous
    loops compute in Half, its vector loops in float; ndtr's 1 + erf cancels in the dtype);
    nor one where fusetorch is as close as torch to an independent reference (SCIPY_REFERENCE)."""
    LOW = (torch.float32, torch.float16, torch.bfloat16)
    if getattr(op, "name", "") in SCIPY_REFERENCE:
        a, b = as_array(t_out, torch, ft)[0], as_array(f_out, torch, ft)[0]
        if a is None or b is None or a.shape != b.shape:
            return False
        r = scipy_reference(op, sample)
        with np.errstate(invalid="ignore"):
            et, ef = np.abs(a.astype(np.float64) - r), np.abs(b.astype(np.float64) - r)
        et = np.where(np.isnan(et) & ~np.isnan(r), np.inf, et)  # torch NaN where scipy has a value
        eps = np.finfo(a.dtype).eps * np.abs(r)
        ok = (ef <= et + eps) | (np.isnan(r) & np.isnan(b)) | (a == b) | (r == b)
        return bool(ok.all())

    def up(x):
        if isinstance(x, torch.Tensor):
            return x.detach().double() if x.dtype in LOW else x.detach()
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        if isinstance(x, dict):
            return {k: up(v) for k, v in x.items()}
        return x
    try:
        ref = op.op(up(sample.input), *up(tuple(sample.args)), **up(dict(sample.kwargs)))
    except Exception:
        return False
    tl, fl, rl = flatten(t_out, True), flatten(f_out, False), flatten(ref, True)
    if not (len(tl) == len(fl) == len(rl)):
        return False
    for a, b, r in zip(tl, fl, rl):
        at, _ = as_array(a, torch, ft)
        bt, _ = as_array(b, torch, ft)
        rt, _ = as_array(r, torch, ft)
        if at is None or bt is None or rt is None or at.shape != bt.shape or rt.shape != at.shape:
            return False
        if at.dtype.kind != "f":
            if not np.array_equal(at, bt):
                return False
            continue
        a64, b64, r64 = (v.astype(np.float64) for v in (at, bt, rt))
        with np.errstate(invalid="ignore"):
            et = np.nan_to_num(np.abs(a64 - r64), nan=0.0, posinf=0.0)
            ef = np.abs(b64 - r64)
        scale = 1e-5 + 1e-5 * np.abs(r64)
        if str(a.dtype) in HALF_ULP:  # one rounding to the dtype: half its unit in the last place
            bits, tiny = HALF_ULP[str(a.dtype)]
            scale = np.maximum(np.abs(r64) * 2.0 ** -bits, tiny) / 2
        ok = (ef <= 2 * et + scale) | (np.isnan(r64) & np.isnan(b64)) | (r64 == b64)
        if not ok.all() and not as_accurate(et, ef, r64, b64):
            return False
    return True


def as_accurate(et, ef, r64, b64):
    """Element by element, two float32 roundings of one formula (PyTorch's kernels contract a * b
    + c into FMAs, grid_sample's vectorized kernel for one) are each the closer one about half the
    time: fusetorch is as accurate as torch where its errors against float64, at the same NaNs,
    are no larger in mean and maximum (by 2x, what one contracted FMA per step can gain: a real
    bug is off by far more than rounding)."""
    if not np.array_equal(np.isnan(r64), np.isnan(b64)):
        return False
    fin = ~np.isnan(r64) & np.isfinite(ef)
    if not np.all(np.isfinite(ef) | np.isnan(r64)) or not fin.any():
        return False
    e_t, e_f = et[fin], ef[fin]
    return bool(e_f.max() <= 2 * e_t.max() + 1e-6 and e_f.mean() <= 2 * e_t.mean() + 1e-7)


def grad_targets(torch, out):
    flat = [o for o in flatten(out, True)]
    return [(i, o) for i, o in enumerate(flat) if isinstance(o, torch.Tensor) and o.requires_grad
            and o.dtype.is_floating_point]


def check_sample(op, fn, sample, dtype_name, res, torch, ft, values, grads, rng):
    desc = f"[{dtype_name}] {describe(sample, torch)}"
    conv = Converter(torch, ft)
    try:
        ft_inp = (conv(sample.input), conv(tuple(sample.args)), conv(dict(sample.kwargs)))
    except Unrepresentable:
        res.counts["skipped"] += 1
        return
    except OpTimeout:
        raise
    except Exception as e:
        res.counts["skipped"] += 1
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            t_out = op.op(sample.input, *sample.args, **sample.kwargs)
    except OpTimeout:
        raise
    except Exception:
        res.counts["torch_raises"] += 1
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f_out = fn(ft_inp[0], *ft_inp[1], **ft_inp[2])
    except OpTimeout:
        raise
    except Exception as e:
        res.counts["raises"] += 1
        res.fail("RAISES", f"{desc}: {err(e)}")
        return
    if float(sample.kwargs.get("dropout_p", 0) or 0) > 0 or (
            sample.kwargs.get("training") and any(isinstance(a, float) and 0 < a < 1 for a in sample.args)):
        values = False  # dropout inside: random
    if getattr(op, "name", "") in ("svd_lowrank", "pca_lowrank") and not lowrank_exact(sample):
        values = False  # a randomized approximation: its error depends on the draw
    dep = DEPARTURES.get(res.name)
    skip = grad_skip = None
    if dep is not None and isinstance(flatten(t_out, True)[0], torch.Tensor):
        m = dep[1](sample, flatten(t_out, True)[0])
        if m is not None and m.any():
            res.counts["departures"] += 1
            skip = m if "value" in dep[2] else None
            grad_skip = m if "grad" in dep[2] else None
    try:
        why = compare(normalise(op, t_out, torch, ft), normalise(op, f_out, torch, ft), torch, ft, values=values,
                      skip=skip)
    except Exception as e:
        why = f"comparison failed: {err(e)}"
    if why and values and (dtype_name.startswith(("float32", "float16", "bfloat16")) or
                           getattr(op, "name", "") in SCIPY_REFERENCE) and \
            closer_than_torch(op, sample, t_out, f_out, torch, ft):
        res.counts["value_precision"] += 1
        why = None
    if why:
        res.counts["value_bad"] += 1
        res.fail("WRONG VALUE", f"{desc}: {why}")
        return
    res.counts["value_ok"] += 1
    if not grads or not conv.leaves or not values or getattr(op, "name", "") in SIGN_FREE:
        return
    if any(0 in t.stride() and t.numel() > 1 for t, _ in conv.leaves):
        return  # a leaf overlapping itself: PyTorch's gradient for it is no reference
    targets = grad_targets(torch, t_out)
    if not targets:
        return
    f_flat = flatten(f_out, False)
    cots = [torch.from_numpy(rng.standard_normal(o.shape)).to(o.dtype) for _, o in targets]
    t_leaves = [t for t, _ in conv.leaves]
    try:
        t_grads = torch.autograd.grad([o for _, o in targets], t_leaves, cots, allow_unused=True)
    except Exception:
        return
    f_targets = [f_flat[i] for i, _ in targets]
    if not all(isinstance(o, ft.Tensor) and o.requires_grad for o in f_targets):
        if all(g is None or not g.any() for g in t_grads):
            res.counts["grad_detached"] += 1
            res.counts["raises"] += 1
            res.fail("RAISES", f"{desc}: output does not require grad (PyTorch: zero gradient)")
        else:
            res.counts["grad_bad"] += 1
            res.fail("WRONG GRAD", f"{desc}: output does not require grad")
        return
    try:
        f_cots = [Converter(torch, ft)(c) for c in cots]
        f_grads = ft.autograd.grad(f_targets, [f for _, f in conv.leaves], f_cots, allow_unused=True)
    except OpTimeout:
        raise
    except Exception as e:
        res.counts["grad_bad"] += 1
        res.fail("WRONG GRAD", f"{desc}: backward raises {err(e)}")
        return
    for k, (tg, fg) in enumerate(zip(t_grads, f_grads)):
        if tg is None and fg is None:
            continue
        if tg is None and t_leaves[k]._base is not None:
            continue  # PyTorch gives no gradient to a leaf that is a view: no reference
        if tg is None:
            tg = torch.zeros_like(t_leaves[k])
        if fg is None:
            fg = ft.zeros(tuple(tg.shape), dtype=getattr(ft, str(tg.dtype).split(".")[1]))
        if tg._is_zerotensor():
            tg = torch.zeros(tg.shape, dtype=tg.dtype)
        tg = overflow_excused(tg, fg, res, desc, k, torch)
        # a float32 or bfloat16 leaf's gradient is rounded to its dtype: that dtype's tolerance
        tol = GRAD_TOL if tg.dtype == torch.float64 else TOL.get(str(tg.dtype).split(".")[1], GRAD_TOL)
        why = compare(tg, fg, torch, ft, tol=tol, skip=grad_skip if k == 0 and grad_skip is not None and
                      grad_skip.shape == tuple(tg.shape) else None)
        if why and nan_path_dependent(op, sample, targets, cots, t_leaves[k], tg, fg, torch):
            res.counts["grad_nan_path"] += 1
            if len(res.notes) < 6:
                res.notes.append(f"{desc}: grad of input {k}: {why}; at these NaN inputs PyTorch's own "
                                 f"gradient depends on its kernel path (vectorised or scalar), fusetorch's is one")
            why = None
        if why and nearer_central_differences(op, sample, targets, cots, t_leaves[k], tg, fg, tol, torch,
                                              ft):
            res.counts["grad_nearer_fd"] += 1
            if len(res.notes) < 6:
                res.notes.append(f"{desc}: grad of input {k}: {why}; fusetorch's is the central "
                                 f"differences' value, PyTorch's is not")
            why = None
        if why:
            res.counts["grad_bad"] += 1
            res.fail("WRONG GRAD", f"{desc}: grad of input {k}: {why}")
            return
    res.counts["grad_ok"] += 1


def overflow_excused(tg, fg, res, desc, k, torch):
    """PyTorch's gradient where an intermediate of its formula overflowed (ldexp's
    `grad * self * 2**other * log 2` left to right) replaced by fusetorch's finite one: same
    sign and within a factor 4 of float64's largest value, so no step of the derivative's true
    value overflows."""
    if tg.dtype != torch.float64:
        return tg
    a = tg.detach().numpy()
    b = np.asarray(fg.detach().numpy(), dtype=np.float64)
    if a.shape != b.shape:
        return tg
    near = np.isinf(a) & np.isfinite(b) & (np.abs(b) > np.finfo(np.float64).max / 4) & (np.sign(a) == np.sign(b))
    if not near.any():
        return tg
    res.counts["grad_overflow"] += 1
    if len(res.notes) < 6:
        res.notes.append(f"{desc}: grad of input {k}: {int(near.sum())} elements inf in PyTorch (an overflowing "
                         f"intermediate), fusetorch's finite value near float64's limit")
    return torch.from_numpy(np.where(near, b, a))


def nan_path_dependent(op, sample, targets, cots, leaf, tg, fg, torch):
    """Whether every element where the gradients differ has a NaN input at which PyTorch's own
    elementwise gradient differs between its vectorised kernel (a long contiguous run) and its
    scalar loop (one element), fusetorch's being one of the two (hardtanh, relu6, elu at NaN)."""
    if leaf is not sample.input or len(targets) != 1 or any(
            isinstance(v, torch.Tensor) for v in list(sample.args) + list(sample.kwargs.values())):
        return False
    out, cot = targets[0][1], cots[0]
    if tuple(out.shape) != tuple(leaf.shape):
        return False
    a = tg.detach().double().reshape(-1).numpy()
    b = np.asarray(fg.detach().numpy(), dtype=np.float64).reshape(-1)
    x = leaf.detach().reshape(-1)
    c = cot.double().reshape(-1).numpy()
    same = (a == b) | (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= 1e-7 + 1e-6 * np.abs(a))
    differ = np.flatnonzero(~same)
    if not len(differ) or not bool(torch.isnan(x[differ]).all()):
        return False

    def grad_at(n):
        v = torch.full((n,), math.nan, dtype=leaf.dtype, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o = op.op(v, *sample.args, **sample.kwargs)
        return float(torch.autograd.grad(o, v, torch.ones_like(o))[0][0])
    try:
        paths = (grad_at(1), grad_at(4096))
    except Exception:
        return False
    if paths[0] == paths[1] or (math.isnan(paths[0]) and math.isnan(paths[1])):
        return False
    for j in differ:
        if not any(b[j] == c[j] * p or (math.isnan(b[j]) and math.isnan(p)) for p in paths):
            return False
    return True


FD_STEP = 1e-6
FD_ELEMENTS = 16


def nearer_central_differences(op, sample, targets, cots, leaf, tg, fg, tol, torch, ft):
    """Whether, at each element (up to FD_ELEMENTS) where the two gradients of `leaf` differ,
    fusetorch's agrees with float64 central differences of <cotangents, outputs> and PyTorch's
    does not, the function being smooth there (its one-sided differences agree: no kink, tie or
    NaN). Such a sample is PyTorch's gradient formula rounding or departing from the derivative of
    its own forward (addcmul's `tensor1 * value` rounded to bfloat16, as_strided_scatter's input
    gradient), not a fusetorch bug."""
    a = tg.detach().double().reshape(-1).numpy()
    b = np.asarray(fg.detach().numpy(), dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        return False
    with np.errstate(invalid="ignore"):
        differ = np.flatnonzero(~((a == b) | (np.abs(a - b) <= tol[1] + tol[0] * np.abs(a))))
    if not len(differ) or len(differ) > FD_ELEMENTS:
        return False
    idx = [i for i, _ in targets]

    def up(x, delta):
        if isinstance(x, torch.Tensor):
            if x is leaf:
                return x.detach().double() + delta
            return x.detach().double() if x.dtype.is_floating_point else x.detach()
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            return type(x)(up(v, delta) for v in x)
        if isinstance(x, dict):
            return {k: up(v, delta) for k, v in x.items()}
        return x

    def scalar(delta):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            out = op.op(up(sample.input, delta), *up(tuple(sample.args), delta),
                        **up(dict(sample.kwargs), delta))
        flat = flatten(out, True)
        return sum(float((c.double() * flat[i].detach().double()).sum()) for i, c in zip(idx, cots))

    try:
        with torch.no_grad():
            zero = torch.zeros(leaf.shape, dtype=torch.float64)
            s0 = scalar(zero)
            for j in differ:
                x = float(leaf.detach().double().reshape(-1)[j])
                h = FD_STEP * max(1.0, abs(x))
                step = zero.clone()
                step.view(-1)[j] = h
                sp, sm = scalar(step), scalar(-step)
                fd, fwd, bwd = (sp - sm) / (2 * h), (sp - s0) / h, (s0 - sm) / h
                if not all(math.isfinite(v) for v in (fd, fwd, bwd)):
                    return False
                near = 1e-5 * (1.0 + abs(fd))
                if abs(fwd - bwd) > 1e-3 * (1.0 + abs(fd)):
                    return False  # not smooth here: no derivative to judge by
                if not abs(b[j] - fd) <= near or abs(a[j] - fd) <= near:
                    return False
    except OpTimeout:
        raise
    except Exception:
        return False
    return True


def check_errors(op, fn, res, torch, ft):
    try:
        inputs = list(op.error_inputs("cpu"))
    except Exception:
        return
    for ei in inputs:
        sample = ei.sample_input
        desc = f"[error] {describe(sample, torch)} expects {ei.error_type.__name__}"
        try:  # an error input PyTorch itself accepts is no reference
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                op.op(sample.input, *sample.args, **sample.kwargs)
            continue
        except OpTimeout:
            raise
        except Exception:
            pass
        conv = Converter(torch, ft)
        try:
            ft_inp = (conv(sample.input), conv(tuple(sample.args)), conv(dict(sample.kwargs)))
        except OpTimeout:
            raise
        except Exception:
            res.counts["skipped"] += 1
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(ft_inp[0], *ft_inp[1], **ft_inp[2])
        except OpTimeout:
            raise
        except Exception as e:
            if isinstance(e, ei.error_type):
                res.counts["error_ok"] += 1
            else:
                res.counts["error_bad"] += 1
                res.fail("WRONG ERROR", f"{desc}: got {err(e)}")
            continue
        res.counts["error_bad"] += 1
        res.fail("WRONG ERROR", f"{desc}: accepted")


def declared_out_of_scope(ft, op):
    """Whether fusetorch answers the entry's name with its OutOfScopeError (linalg.eig: complex)."""
    from fusetorch._out_of_scope import OutOfScopeError
    obj = ft
    for part in op.name.split("."):
        try:
            obj = getattr(obj, part)
        except OutOfScopeError:
            return True
        except Exception:
            return False
    return False


def out_of_scope(op):
    n = op.name
    if n in OUT_OF_SCOPE_NAMES or n.startswith(OUT_OF_SCOPE_PREFIXES):
        return True
    if n.startswith("_") and not n.startswith("__"):  # ATen internals
        return True
    return type(op.op).__name__ in ("OpOverloadPacket", "OpOverload", "_JittedFunction")


def run_op(op, dtypes, torch, ft, max_samples, timeout, variants):
    res = OpResult(op.name + ("." + op.variant_test_name if op.variant_test_name else ""))
    if out_of_scope(op):
        res.status = "SKIP"
        return res
    fn, how = Resolver.for_op(torch, ft, op)
    res.how = how
    if fn is None:
        res.status = "SKIP" if declared_out_of_scope(ft, op) else "MISSING"
        return res
    rng = np.random.default_rng(0)
    values = not is_nondeterministic(op)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        supported = {str(d).split(".")[1] for d in op.supported_dtypes("cpu")}
        for dn in dtypes:
            if dn not in supported:
                continue
            dt = getattr(torch, dn)
            grads = dn == "float64" and op.supports_autograd
            try:
                gen = op.reference_inputs("cpu", dt, requires_grad=grads)
                samples = []
                for s in gen:
                    samples.append(s)
                    if len(samples) >= max_samples:
                        break
            except OpTimeout:
                raise
            except Exception:
                continue
            for s in samples:
                check_sample(op, fn, s, dn, res, torch, ft, values, grads, rng)
            if dn in ("float32", "int64"):
                for s in samples[: max_samples // 2]:
                    try:
                        nc = s.noncontiguous()
                    except Exception:
                        continue
                    check_sample(op, fn, nc, dn + ",nc", res, torch, ft, values, False, rng)
            if variants and dn == "float32":
                check_variants(op, samples, res, torch, ft, values, rng)
        check_errors(op, fn, res, torch, ft)
    except OpTimeout:
        res.status = "TIMEOUT"
    finally:
        signal.alarm(0)
    return res


def check_variants(op, samples, res, torch, ft, values, rng):
    """Method and in-place variants by name on float32 samples (values only)."""
    name = op.name
    for kind, tv, fname in (("method", op.method_variant, name), ("inplace", op.inplace_variant, name + "_")):
        if tv is None or "." in name or (kind == "inplace" and name.endswith("_")):
            continue
        ff = getattr(ft.Tensor, fname, None)
        if ff is None:
            res.missing_variants.append("Tensor." + fname)
            continue

        class V:
            pass
        v = V()
        v.op = tv
        for s in samples[:4]:
            check_sample(v, ff, s.clone() if hasattr(s, "clone") else s, f"float32,{kind}", res, torch, ft,
                         values, False, rng)


def table(results):
    by = {c: [] for c in CLASSES}
    for r in results:
        by[r["class"]].append(r["name"])
    lines = [f"{'class':<13} {'ops':>5}"]
    for c in CLASSES:
        lines.append(f"{c:<13} {len(by[c]):>5}")
    keys = dict.fromkeys(k for r in results for k in r["counts"])
    tot = {k: sum(r["counts"].get(k, 0) for r in results) for k in keys}
    lines.append("samples: " + ", ".join(f"{k}={v}" for k, v in tot.items()))
    for c in CLASSES[:5]:
        if by[c]:
            lines.append(f"\n{c}: " + " ".join(sorted(by[c])))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtypes", default="float32,float64,int64,bool")
    p.add_argument("--ops", default="", help="comma-separated entry names (default: all)")
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--stop", type=int, default=None)
    p.add_argument("--out", default="/tmp/torch_opinfo_check.json")
    p.add_argument("--timeout", type=int, default=120, help="seconds per op")
    p.add_argument("--max-samples", type=int, default=40)
    p.add_argument("--no-variants", action="store_true")
    p.add_argument("--merge", nargs="*", help="JSON files to merge into one table")
    p.add_argument("-v", "--verbose", action="store_true", help="print each failing op's first failures")
    a = p.parse_args(argv)
    if a.merge:
        results = []
        for f in a.merge:
            results.extend(json.load(open(f)))
        print(table(results))
        if a.verbose:
            for r in results:
                for c, fs in r["fails"].items():
                    for f in fs:
                        print(f"{r['name']}: {c}: {f}")
        return
    warnings.simplefilter("ignore")
    import torch
    from torch.testing._internal.common_methods_invocations import op_db
    import fusetorch as ft
    want = set(a.ops.split(",")) if a.ops else None
    ops = op_db[a.start:a.stop]
    results = []
    for op in ops:
        full = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if want and op.name not in want and full not in want:
            continue
        t0 = time.time()
        try:
            r = run_op(op, a.dtypes.split(","), torch, ft, a.max_samples, a.timeout, not a.no_variants)
        except Exception as e:
            r = OpResult(full)
            r.status = "RAISES"
            r.fail("RAISES", "tool: " + err(e) + " " + traceback.format_exc(limit=3)[-300:])
        results.append({"name": r.name, "class": r.klass(), "how": r.how, "counts": r.counts,
                        "missing_variants": r.missing_variants,
                        "fails": {k: v for k, v in r.fails.items() if v}, "notes": r.notes,
                        "seconds": round(time.time() - t0, 2)})
        print(f"{r.klass():<12} {r.name:<45} {time.time() - t0:6.1f}s", flush=True)
        if a.verbose:
            for c, fs in list(r.fails.items()) + [("excused", r.notes)]:
                for f in fs[:3]:
                    print(f"    {c}: {f}")
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    print(table(results))


if __name__ == "__main__":
    main()
