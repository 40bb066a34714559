"""Registry entries (tests/opinfo.py's form) for the functions of PyTorch's catalogue added by
issue 27: everyday math and statistics, signal windows, torch.special. Imported at the end of
opinfo.py, so they are in `opinfo.OPS` and `opinfo.SKIPPED` for every runner."""
from __future__ import annotations

import numpy as np

import fusetorch as torch
from opinfo import (BOOL, F32, F64, I32, I64, SKIPPED, _DATA, Sample, add, binary, fixed,
                    inplace, m, make, op, unary, unary_family)

# ----------------------------------------------------------------------------- elementwise


def _family(name, samples, methods=True, inplace_too=True, extra=None, **kw):
    v = {f"torch.{name}": getattr(torch, name)}
    if methods:
        v[f"Tensor.{name}"] = m(name)
    if inplace_too:
        v[f"Tensor.{name}_"] = inplace(name + "_")
    v.update(extra or {})
    add(name, v, samples, **kw)


_family("erfc", unary(-3.0, 3.0, away=()),
        extra={"torch.special.erfc": torch.special.erfc})
_family("i0", unary(-4.0, 4.0, away=()),
        extra={"torch.special.i0": torch.special.i0})
_family("logit", unary(0.05, 0.95, away=()),
        extra={"torch.logit(eps)": op("logit", eps=0.2), "Tensor.logit(eps)": m("logit", eps=0.3),
               "torch.special.logit": torch.special.logit})
_family("sinc", fixed(("f32", lambda r: [make(r, (4, 5))]),
                      ("zeros", lambda r: [make(r, (4, 5), F64) * (make(r, (4, 5)) > 0)]),
                      ("perm", lambda r: [make(r, (3, 4), layout="t")])),
        extra={"torch.special.sinc": torch.special.sinc})
for _n in ("deg2rad", "rad2deg"):
    _family(_n, unary(-4.0, 4.0, away=()))
# integers compute in the default float type (not in place: PyTorch refuses that cast too)
add("float_of_int", {f"torch.{n}": getattr(torch, n) for n in (
    "erfc", "i0", "sinc", "deg2rad", "rad2deg", "logit", "angle")},
    fixed(("int64", lambda r: [make(r, (4, 5), I64, -3, 4)]),
          ("int32", lambda r: [make(r, (5,), I32, 0, 3)]),
          ("bool", lambda r: [make(r, (4, 5), BOOL)])), grad=False)
add("clamp_min_max", {"torch.clamp_min": op("clamp_min", min=-0.5),
                      "Tensor.clamp_min": m("clamp_min", min=0.25),
                      "Tensor.clamp_min_": lambda x: x.clone().clamp_min_(-0.5),
                      "torch.clamp_max": op("clamp_max", max=0.5),
                      "Tensor.clamp_max": m("clamp_max", max=-0.25),
                      "Tensor.clamp_max_": lambda x: x.clone().clamp_max_(0.5)},
    unary(away=(-0.5, 0.25, 0.5, -0.25)))
add("identities", {"torch.positive": torch.positive, "Tensor.positive": m("positive"),
                   "torch.conj": torch.conj, "Tensor.conj": m("conj"),
                   "torch.conj_physical": torch.conj_physical,
                   "Tensor.conj_physical": m("conj_physical"),
                   "Tensor.conj_physical_": inplace("conj_physical_"),
                   "torch.resolve_conj": torch.resolve_conj,
                   "Tensor.resolve_conj": m("resolve_conj"),
                   "torch.resolve_neg": torch.resolve_neg, "Tensor.resolve_neg": m("resolve_neg"),
                   "torch.angle": torch.angle, "Tensor.angle": m("angle")},
    unary(ints=True))
add("real_predicates", {"torch.isreal": torch.isreal, "Tensor.isreal": m("isreal"),
                        "torch.signbit": torch.signbit, "Tensor.signbit": m("signbit")},
    fixed(("f32", lambda r: [make(r, (4, 5))]),
          ("signed_zeros", lambda r: [torch.tensor([0.0, -0.0, float("nan"), -float("nan"),
                                                    -1.5, float("-inf")])]),
          ("int", lambda r: [make(r, (4, 5), I64, -5, 6)]),
          ("bool", lambda r: [make(r, (4, 5), BOOL)])), grad=False)


def _pair(name, samples, methods=True, inplace_too=True, **kw):
    _family(name, samples, methods, inplace_too, **kw)


_pair("fmax", binary(scalar=None, ints=True), inplace_too=False)
_pair("fmin", binary(scalar=None, ints=True), inplace_too=False)
add("fmax_nan", {"torch.fmax": torch.fmax, "torch.fmin": torch.fmin,
                 "Tensor.fmax": m("fmax"), "Tensor.fmin": m("fmin")},
    fixed(("nan", lambda r: [torch.tensor([1.0, float("nan"), float("nan"), -2.0]),
                             torch.tensor([float("nan"), 3.0, float("nan"), 1.0])])))
_pair("copysign", binary(a=(0.3, 2.0), scalar=-1.0))
_pair("logaddexp2", binary(scalar=None), inplace_too=False)
_pair("nextafter", fixed(("same", lambda r: [make(r, (4, 5)), make(r, (4, 5))]),
                         ("bcast", lambda r: [make(r, (4, 5), F64), make(r, (5,), F64)]),
                         ("equal", lambda r: [torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0])])))
_pair("float_power", binary(a=(0.3, 2.0), b=(-1.5, 1.5), scalar=2), inplace_too=False)
add("float_power_", {"Tensor.float_power_": inplace("float_power_")},
    fixed(("f64", lambda r: [make(r, (4, 5), F64, 0.3, 2.0), make(r, (5,), F64)]),
          ("scalar", lambda r: [make(r, (4, 5), F64, 0.3, 2.0), 0.5])))
_pair("ldexp", fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (5,), I64, -3, 4)]),
                     ("f64", lambda r: [make(r, (4, 5), F64), make(r, (4, 5), I64, -3, 4)])))
add("ldexp_int", {"torch.ldexp": torch.ldexp, "Tensor.ldexp": m("ldexp")},
    fixed(("int", lambda r: [make(r, (4, 5), I64, -3, 4), make(r, (5,), I64, 0, 4)])),
    grad=False)
_INTS = fixed(("int", lambda r: [make(r, (4, 5), I64, -30, 30), make(r, (5,), I64, -12, 13)]),
              ("int32", lambda r: [make(r, (4, 5), I32, 0, 30), make(r, (4, 5), I32, 1, 9)]))
for _n in ("gcd", "lcm"):
    _pair(_n, _INTS, grad=False)
_BITS = fixed(("bool", lambda r: [make(r, (4, 5), BOOL), make(r, (5,), BOOL)]),
              ("int", lambda r: [make(r, (4, 5), I64, -9, 9), make(r, (5,), I64, 0, 9)]),
              ("int_scalar", lambda r: [make(r, (4, 5), I32, 0, 99), 6]))
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _pair(_n, _BITS, grad=False)
_pair("logical_xor", binary(scalar=None, ints=True), grad=False)
add("bitwise_not", {"torch.bitwise_not": torch.bitwise_not, "Tensor.bitwise_not": m("bitwise_not"),
                    "Tensor.bitwise_not_": inplace("bitwise_not_"),
                    "Tensor.__invert__": m("__invert__")},
    fixed(("bool", lambda r: [make(r, (4, 5), BOOL)]),
          ("int", lambda r: [make(r, (4, 5), I64, -9, 9, layout="t")]),
          ("uint8", lambda r: [torch.tensor([0, 1, 7, 255], dtype=torch.uint8)])), grad=False)

# ----------------------------------------------------------------------------- statistics

add("diff", {"torch.diff": torch.diff, "Tensor.diff": m("diff"),
             "torch.diff(n2_dim0)": op("diff", n=2, dim=0),
             "torch.diff(prepend)": lambda x: torch.diff(x, prepend=x[:, :2], append=x[:, 1:]),
             "torch.diff(n_large)": op("diff", n=7)},
    fixed(("f32", lambda r: [make(r, (4, 5))]), ("f64_perm", lambda r: [make(r, (4, 5), F64,
                                                                             layout="t")]),
          ("slice", lambda r: [make(r, (3, 6), layout="s")])))
add("diff_int_bool", {"torch.diff": torch.diff, "Tensor.diff": m("diff", dim=0)},
    fixed(("int", lambda r: [make(r, (4, 5), I64, -9, 9)]),
          ("bool", lambda r: [make(r, (4, 5), BOOL)])), grad=False)
add("isin", {"torch.isin": torch.isin, "torch.isin(invert)": op("isin", invert=True)},
    fixed(("int", lambda r: [make(r, (4, 5), I64, 0, 9), make(r, (3,), I64, 0, 9)]),
          ("float_int", lambda r: [make(r, (4, 5), I64, 0, 5).float(), make(r, (2, 2), I64, 0,
                                                                              5)]),
          ("scalar", lambda r: [make(r, (4, 5), I64, 0, 4), 2]),
          ("sorted", lambda r: [make(r, (4, 5), I64, 0, 40), make(r, (30,), I64, 0, 40)])),
    grad=False)
_OBS = fixed(("f32", lambda r: [make(r, (3, 6))]),
             ("f64_perm", lambda r: [make(r, (3, 6), F64, layout="t")]),
             ("1d", lambda r: [make(r, (6,), F64)]))
add("cov", {"torch.cov": torch.cov, "Tensor.cov": m("cov"),
            "torch.cov(correction0)": op("cov", correction=0),
            "torch.cov(weights)": lambda x: torch.cov(
                x, fweights=torch.tensor([1, 2, 1, 3, 1, 2]),
                aweights=torch.tensor([0.5, 1.0, 2.0, 0.25, 1.5, 1.0]))}, _OBS)
add("corrcoef", {"torch.corrcoef": torch.corrcoef, "Tensor.corrcoef": m("corrcoef")},
    fixed(("f32", lambda r: [make(r, (3, 6))]),
          ("f64_perm", lambda r: [make(r, (3, 6), F64, layout="t")])))
add("var_std_mean", {"torch.var_mean": torch.var_mean,
                     "torch.var_mean(dim)": op("var_mean", dim=1, keepdim=True),
                     "torch.std_mean": op("std_mean", dim=(0, 1), correction=0),
                     "torch.std_mean(unbiased)": lambda x: torch.std_mean(x, 0, False)},
    fixed(("f32", lambda r: [make(r, (3, 4, 5))]),
          ("f64_perm", lambda r: [make(r, (3, 4, 5), F64, layout="t")])))
add("aminmax", {"torch.aminmax": torch.aminmax, "Tensor.aminmax": m("aminmax", dim=1),
                "torch.aminmax(keepdim)": op("aminmax", dim=-1, keepdim=True)},
    fixed(("f32", lambda r: [make(r, (3, 4, 5))]),
          ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t")]),
          ("int", lambda r: [make(r, (4, 5), I64, -9, 9)])))
for _n in ("torch.argwhere", "Tensor.argwhere"):
    SKIPPED[_n] = _DATA + " (tests/tracer/test_catalogue.py)"

# ----------------------------------------------------------------------------- pieces


def _mp(method, *bound, **kw):
    return lambda x, *a, **k: getattr(x, method)(*bound, *a, **kw, **k)


X34 = fixed(("f32", lambda r: [make(r, (4, 6))]),
            ("f64_perm", lambda r: [make(r, (4, 6), F64, layout="t")]))
add("tensor_split", {"torch.tensor_split": op("tensor_split", indices_or_sections=3),
                     "torch.tensor_split(indices)": lambda x: torch.tensor_split(x, [1, -2, 9],
                                                                                 dim=1),
                     "Tensor.tensor_split": _mp("tensor_split", 4, 1),
                     "torch.hsplit": lambda x: torch.hsplit(x, 2),
                     "Tensor.hsplit": _mp("hsplit", [1, 4]),
                     "torch.vsplit": lambda x: torch.vsplit(x, [3]),
                     "Tensor.vsplit": _mp("vsplit", 2),
                     "torch.dsplit": lambda x: torch.dsplit(x[None], [1]),
                     "Tensor.dsplit": lambda x: x[None].dsplit(3),
                     "torch.split_with_sizes": lambda x: torch.split_with_sizes(x, [1, 3]),
                     "Tensor.split_with_sizes": _mp("split_with_sizes", [4, 2], 1),
                     "torch.unsafe_split": lambda x: torch.unsafe_split(x, 3, 1),
                     "Tensor.unsafe_split": _mp("unsafe_split", 3),
                     "torch.unsafe_chunk": lambda x: torch.unsafe_chunk(x, 3, 1),
                     "Tensor.unsafe_chunk": _mp("unsafe_chunk", 3)}, X34)
add("ravel_msort_diagflat", {"torch.ravel": torch.ravel, "Tensor.ravel": m("ravel"),
                             "torch.msort": torch.msort, "Tensor.msort": m("msort"),
                             "torch.diagflat": op("diagflat", offset=-1),
                             "Tensor.diagflat": m("diagflat")},
    fixed(("f32", lambda r: [make(r, (3, 4))]),
          ("f64_perm", lambda r: [make(r, (3, 4), F64, layout="t")]),
          ("0d", lambda r: [make(r, ())])))
add("assemble", {"torch.block_diag": lambda a, b, c: torch.block_diag(a, b, c),
                 "torch.cartesian_prod": lambda a, b, c: torch.cartesian_prod(a[0], c, b[:2]),
                 "torch.combinations": lambda a, b, c: torch.combinations(c, 3),
                 "torch.combinations(replacement)": lambda a, b, c: torch.combinations(
                     b, with_replacement=True)},
    fixed(("f32", lambda r: [make(r, (2, 3)), make(r, (3,)), make(r, (4,))]),
          ("f64", lambda r: [make(r, (2, 3), F64, layout="t"), make(r, (3,), F64),
                             make(r, (4,), F64)]),
          ("int", lambda r: [make(r, (2, 3), I64, -5, 5), make(r, (3,), I64, -5, 5),
                             make(r, (4,), I64, -5, 5)])))
add("unravel_index", {"torch.unravel_index": lambda i: torch.unravel_index(i, (3, 4)),
                      "torch.unravel_index(int)": lambda i: torch.unravel_index(i, 12)},
    fixed(("int", lambda r: [make(r, (5,), I64, -12, 24)]),
          ("0d", lambda r: [torch.tensor(7)])), grad=False)
SKIPPED["torch.broadcast_shapes"] = "sizes only, no tensor (tests/tracer/test_catalogue.py)"

# ----------------------------------------------------------------------------- calculus

add("gradient", {"torch.gradient": torch.gradient,
                 "torch.gradient(edge2)": lambda x: torch.gradient(x, spacing=0.5, dim=1,
                                                                   edge_order=2),
                 "torch.gradient(coordinates)": lambda x: torch.gradient(
                     x, spacing=[torch.tensor([0.0, 0.5, 2.0, 2.5], dtype=x.dtype),
                                 torch.tensor([0.0, 1.0, 1.5, 3.0, 4.0], dtype=x.dtype)],
                     edge_order=2)},
    fixed(("f32", lambda r: [make(r, (4, 5))]),
          ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t")])))
add("trapezoid", {"torch.trapezoid": torch.trapezoid,
                  "torch.trapezoid(x)": lambda y: torch.trapezoid(
                      y, torch.tensor([0.0, 0.5, 2.0, 2.5, 4.0], dtype=y.dtype)),
                  "torch.trapezoid(dx)": lambda y: torch.trapezoid(y, dx=0.5, dim=0),
                  "torch.trapz": lambda y: torch.trapz(y, dx=2.0),
                  "torch.cumulative_trapezoid": torch.cumulative_trapezoid,
                  "torch.cumulative_trapezoid(x)": lambda y: torch.cumulative_trapezoid(
                      y, torch.tensor([0.0, 1.0, 3.0, 4.5], dtype=y.dtype), dim=0)},
    fixed(("f32", lambda r: [make(r, (4, 5))]),
          ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t")])))

# ----------------------------------------------------------------------------- writes, copies


def _ix(x, a):
    return torch.tensor(np.asarray(a), device=x.device)


add("index_put", {
    "torch.index_put": lambda x, v: torch.index_put(x, (_ix(x, [0, 2, 2]), _ix(x, [1, 3, 3])),
                                                    v[0, :3]),
    "torch.index_put(accumulate)": lambda x, v: torch.index_put(
        x, (_ix(x, [0, 2, 2]),), v, accumulate=True),
    "Tensor.index_put": lambda x, v: x.index_put((_ix(x, [1]),), v[1]),
    "Tensor.index_put_": lambda x, v: x.clone().index_put_((_ix(x, [1, 1]),), v[:2],
                                                          accumulate=True),
    "torch.put": lambda x, v: torch.put(x, _ix(x, [0, 5, -1]), v[0, :3]),
    "Tensor.put": lambda x, v: x.put(_ix(x, [3, 3]), v[1, :2], accumulate=True),
    "Tensor.put_": lambda x, v: x.clone().put_(_ix(x, [2, -3]), v[0, 1:3])},
    fixed(("f32", lambda r: [make(r, (3, 4)), make(r, (3, 4))]),
          ("f64_perm", lambda r: [make(r, (3, 4), F64, layout="t"), make(r, (3, 4), F64)])))
add("scatters_more", {
    "torch.select_scatter": lambda x, s: torch.select_scatter(x, s[0], 0, 1),
    "Tensor.select_scatter": lambda x, s: x.select_scatter(s[:, 0], 1, -1),
    "torch.slice_scatter": lambda x, s: torch.slice_scatter(x, s[:2], 0, 1, None, 2),
    "Tensor.slice_scatter": lambda x, s: x.slice_scatter(s[:, :2], dim=1, start=-2),
    "torch.diagonal_scatter": lambda x, s: torch.diagonal_scatter(x, s[0, :3], 1),
    "Tensor.diagonal_scatter": lambda x, s: x.diagonal_scatter(s[1, :2], -2),
    "torch.fill": lambda x, s: torch.fill(x, s[0, 0]),
    "torch.fill(number)": lambda x, s: torch.fill(x, 2.5) + s,
    "torch.constant_pad_nd": lambda x, s: torch.constant_pad_nd(x, (1, 2, -1, 0), 0.5)},
    fixed(("f32", lambda r: [make(r, (4, 4)), make(r, (4, 4))]),
          ("f64_perm", lambda r: [make(r, (4, 4), F64, layout="t"), make(r, (4, 4), F64)])))
add("in_place_fills", {"torch.zero_": lambda x: torch.zero_(x.clone()) + x,
                       "torch.fill_": lambda x: torch.fill_(x.clone(), -1.5) * x},
    fixed(("f32", lambda r: [make(r, (3, 4))])))
_COPY_CALLS = {
    "view_copy": lambda x: torch.view_copy(x, (4, 3)),
    "permute_copy": lambda x: torch.permute_copy(x, (1, 0)),
    "transpose_copy": lambda x: torch.transpose_copy(x, 0, 1),
    "expand_copy": lambda x: torch.expand_copy(x[:1], (2, 4)),
    "narrow_copy": lambda x: torch.narrow_copy(x, 1, 1, 2),
    "squeeze_copy": lambda x: torch.squeeze_copy(x[:1]),
    "unsqueeze_copy": lambda x: torch.unsqueeze_copy(x, 1),
    "t_copy": torch.t_copy,
    "diagonal_copy": lambda x: torch.diagonal_copy(x, 1),
    "select_copy": lambda x: torch.select_copy(x, 1, -1),
    "slice_copy": lambda x: torch.slice_copy(x, 1, 1, None, 2),
    "split_copy": lambda x: torch.split_copy(x, 2, 1),
    "split_with_sizes_copy": lambda x: torch.split_with_sizes_copy(x, [1, 2]),
    "unbind_copy": lambda x: torch.unbind_copy(x, 1),
    "detach_copy": lambda x: torch.detach_copy(x) * x,
    "alias_copy": torch.alias_copy,
    "as_strided_copy": lambda x: torch.as_strided_copy(x.contiguous(), (2, 2), (1, 2)),
    "unfold_copy": lambda x: torch.unfold_copy(x, 1, 2, 1)}
add("view_copies", {f"torch.{n}": f for n, f in _COPY_CALLS.items()} | {
    "Tensor.narrow_copy": lambda x: x.narrow_copy(0, 1, 2)}, fixed(
    ("f32", lambda r: [make(r, (3, 4))]), ("f64_perm", lambda r: [make(r, (3, 4), F64,
                                                                       layout="t")])))
add("products_more", {"torch.vdot": lambda a, b: torch.vdot(a[0], b[1]),
                      "Tensor.vdot": lambda a, b: a[1].vdot(b[0]),
                      "torch.addr": lambda a, b: torch.addr(a, a[:, 0], b[0], beta=0.5, alpha=2),
                      "Tensor.addr": lambda a, b: a.addr(b[:, 1], a[1]),
                      "Tensor.addr_": lambda a, b: a.clone().addr_(b[:, 1], a[1], beta=0),
                      "torch.renorm": lambda a, b: torch.renorm(a, 2, 0, 1.0),
                      "Tensor.renorm": lambda a, b: a.renorm(1, 1, 0.5),
                      "Tensor.renorm_": lambda a, b: a.clone().renorm_(3, 0, 0.8),
                      "Tensor.sum_to_size": lambda a, b: b.sum_to_size(1, 4),
                      "Tensor.H": lambda a, b: a.H * b.t(),
                      "Tensor.mH": lambda a, b: a[None].mH,
                      "torch.adjoint": lambda a, b: torch.adjoint(a),
                      "Tensor.adjoint": lambda a, b: b.adjoint()},
    fixed(("f32", lambda r: [make(r, (4, 4)), make(r, (4, 4))]),
          ("f64_perm", lambda r: [make(r, (4, 4), F64, layout="t"), make(r, (4, 4), F64)])))
add("scalar_tensor", {"torch.scalar_tensor": lambda x: torch.scalar_tensor(2.5) * x,
                      "torch.scalar_tensor(dtype)": lambda x: torch.scalar_tensor(
                          3, dtype=torch.float64) + x},
    fixed(("f32", lambda r: [make(r, (3,))])))
SKIPPED.update({
    "torch.empty_strided": "uninitialised memory: no value to compare (strides tested in "
                           "tests/tracer/test_catalogue_writes.py)",
    "Tensor.new_empty_strided": "uninitialised memory: no value to compare",
    "Tensor.resize_": "changes a tensor's size in place, a graph break when compiling "
                      "(tests/tracer/test_catalogue_writes.py)",
    "Tensor.resize_as_": "changes a tensor's size in place (tests/tracer/test_catalogue_writes.py)",
})

# ----------------------------------------------------------------------------- windows

_W = torch.signal.windows
add("signal_windows", {
    "torch.signal.windows.bartlett": lambda x: _W.bartlett(5, dtype=x.dtype) * x,
    "torch.signal.windows.blackman": lambda x: _W.blackman(5, sym=False, dtype=x.dtype) * x,
    "torch.signal.windows.cosine": lambda x: _W.cosine(5, dtype=x.dtype) * x,
    "torch.signal.windows.exponential": lambda x: _W.exponential(
        5, center=1.5, tau=2.0, sym=False, dtype=x.dtype) * x,
    "torch.signal.windows.gaussian": lambda x: _W.gaussian(5, std=0.8, dtype=x.dtype) * x,
    "torch.signal.windows.general_cosine": lambda x: _W.general_cosine(
        5, a=[0.5, 0.3, 0.2], dtype=x.dtype) * x,
    "torch.signal.windows.general_hamming": lambda x: _W.general_hamming(
        5, alpha=0.6, dtype=x.dtype) * x,
    "torch.signal.windows.hamming": lambda x: _W.hamming(5, dtype=x.dtype) * x,
    "torch.signal.windows.hann": lambda x: _W.hann(5, sym=False, dtype=x.dtype) * x,
    "torch.signal.windows.kaiser": lambda x: _W.kaiser(5, beta=4.0, dtype=x.dtype) * x,
    "torch.signal.windows.nuttall": lambda x: _W.nuttall(5, dtype=x.dtype) * x,
    "torch.hann_window": lambda x: torch.hann_window(5, dtype=x.dtype) * x,
    "torch.hamming_window": lambda x: torch.hamming_window(5, False, 0.6, 0.35,
                                                           dtype=x.dtype) * x,
    "torch.blackman_window": lambda x: torch.blackman_window(5, dtype=x.dtype) * x,
    "torch.bartlett_window": lambda x: torch.bartlett_window(5, False, dtype=x.dtype) * x,
    "torch.kaiser_window": lambda x: torch.kaiser_window(5, beta=6.0, dtype=x.dtype) * x},
    fixed(("f32", lambda r: [make(r, (3, 5))]), ("f64", lambda r: [make(r, (5,), F64)])))
SKIPPED["torch.signal"] = "a namespace: its windows are covered under their own names"

# ----------------------------------------------------------------------------- torch.special

_S = torch.special
add("special_i", {"torch.special.i0e": _S.i0e, "torch.special.i1": _S.i1,
                  "torch.special.i1e": _S.i1e, "torch.special.erfcx": _S.erfcx,
                  "torch.special.log_ndtr": _S.log_ndtr, "torch.special.ndtr": _S.ndtr,
                  "torch.special.entr": lambda x: _S.entr(x.abs() + 0.1),
                  "torch.special.xlog1py": lambda x: _S.xlog1py(x, x.abs()),
                  "torch.special.ndtri": lambda x: _S.ndtri(x.abs() * 0.2 + 0.05)},
    unary(-3.0, 3.0, away=()))
add("special_no_grad", {
    f"torch.special.{n}": getattr(_S, n) for n in (
        "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
        "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
        "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0")},
    unary(0.2, 4.0, away=()), grad=False)
add("special_binary", {"torch.special.zeta": lambda a, b: _S.zeta(a + 1.5, b),
                       "torch.special.gammainc": _S.gammainc,
                       "torch.special.gammaincc": _S.gammaincc,
                       "torch.igamma": torch.igamma, "torch.igammac": torch.igammac,
                       "Tensor.igamma": m("igamma"), "Tensor.igammac": m("igammac"),
                       "Tensor.igamma_": inplace("igamma_"),
                       "Tensor.igammac_": inplace("igammac_")},
    fixed(("f32", lambda r: [make(r, (4, 5), F32, 0.3, 3.0), make(r, (4, 5), F32, 0.2, 4.0)]),
          ("f64_bcast", lambda r: [make(r, (4, 5), F64, 0.3, 3.0, layout="t"),
                                   make(r, (5,), F64, 0.2, 4.0)])), grad=False)
add("igamma_grad", {"torch.special.gammainc": _S.gammainc, "torch.special.gammaincc": _S.gammaincc},
    fixed(("f64", lambda r: [make(r, (4, 5), I64, 1, 4), make(r, (4, 5), F64, 0.2, 4.0)])))

# ----------------------------------------------------------------------------- torch.masked


def _some(r, shape):
    """A random mask with the first element of every last-dim row kept."""
    a = r.random(shape) > 0.4
    a[..., 0] = True
    return torch.from_numpy(a)


_MK = torch.masked
add("masked_reductions", {
    "torch.masked.sum": lambda x, k: _MK.sum(x, 1, mask=k),
    "torch.masked.prod": lambda x, k: _MK.prod(x, (0, 1), keepdim=True, mask=k),
    "torch.masked.amax": lambda x, k: _MK.amax(x, 1, mask=k),
    "torch.masked.amin": lambda x, k: _MK.amin(x, mask=k),
    "torch.masked.argmax": lambda x, k: _MK.argmax(x, 1, mask=k),
    "torch.masked.argmin": lambda x, k: _MK.argmin(x, 1, keepdim=True, mask=k),
    "torch.masked.mean": lambda x, k: _MK.mean(x, 1, mask=k),
    "torch.masked.median": lambda x, k: _MK.median(x, 1, mask=k),
    "torch.masked.norm": lambda x, k: _MK.norm(x, 2.0, 1, mask=k),
    "torch.masked.var": lambda x, k: _MK.var(x, 1, mask=k),
    "torch.masked.std": lambda x, k: _MK.std(x, 1, correction=0, mask=k),
    "torch.masked.logsumexp": lambda x, k: _MK.logsumexp(x, 1, mask=k),
    "torch.masked.cumsum": lambda x, k: _MK.cumsum(x, 1, mask=k),
    "torch.masked.cumprod": lambda x, k: _MK.cumprod(x, 1, mask=k),
    "torch.masked.softmax": lambda x, k: _MK.softmax(x, 1, mask=k),
    "torch.masked.log_softmax": lambda x, k: _MK.log_softmax(x, 1, mask=k),
    "torch.masked.softmin": lambda x, k: _MK.softmin(x, 1, mask=k),
    "torch.masked.normalize": lambda x, k: _MK.normalize(x, 2.0, 1, mask=k),
    "torch.masked.logaddexp": lambda x, k: _MK.logaddexp(x, x * 2, input_mask=k,
                                                         other_mask=k)},
    fixed(("f32", lambda r: [make(r, (3, 5)), _some(r, (3, 5))]),
          ("f64_bcast", lambda r: [make(r, (3, 5), F64, layout="t"), _some(r, (5,))])))
SKIPPED["torch.masked"] = "a namespace: its functions are covered under their own names"
add("frexp", {"torch.frexp": torch.frexp, "Tensor.frexp": m("frexp"),
              "torch.frexp(mantissa)": lambda x: torch.frexp(x * 3.0).mantissa},
    fixed(("f32", lambda r: [make(r, (4, 5), F32, -40.0, 40.0)]),
          ("f64_perm", lambda r: [make(r, (4, 5), F64, -1e3, 1e3, layout="t")]),
          ("edges", lambda r: [torch.tensor([0.0, -0.0, float("inf"), float("nan"), 1e-40])])))
add("index_reduce", {
    "torch.index_reduce": lambda x, s: torch.index_reduce(x, 0, _ix(x, [0, 2, 0, 2]), s, "prod"),
    "torch.index_reduce(mean)": lambda x, s: torch.index_reduce(
        x, 0, _ix(x, [1, 1, 0, -1]), s, "mean", include_self=False),
    "Tensor.index_reduce": lambda x, s: x.index_reduce(0, _ix(x, [2, 2, 1, 2]), s, "amax"),
    "Tensor.index_reduce_": lambda x, s: x.clone().index_reduce_(
        0, _ix(x, [0, 0, 0, 2]), s, "amin", include_self=False)},
    fixed(("f32", lambda r: [make(r, (3, 5)), make(r, (4, 5))]),
          ("f64_perm", lambda r: [make(r, (3, 5), F64, layout="t"), make(r, (4, 5), F64)])))
_POLYS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
          "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
          "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
          "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p")
add("special_polynomials", {f"torch.special.{p}": getattr(_S, p) for p in _POLYS} | {
    "torch.special.chebyshev_polynomial_t(scalar n)":
        lambda x, n: _S.chebyshev_polynomial_t(x, 3)},
    fixed(("f32", lambda r: [make(r, (4, 5), F32, -1.2, 1.2), make(r, (4, 5), I64, -1, 12)]),
          ("f64_bcast", lambda r: [make(r, (4, 5), F64, -1.0, 1.0, layout="t"),
                                   make(r, (5,), F64, 0, 10).floor()]),
          ("edges", lambda r: [torch.tensor([-1.0, 1.0, 0.0, 0.5, 1.0, -1.0]),
                               torch.tensor([3.0, 4.0, 9.0, 0.0, 10.0, 11.0])])), grad=False,
    rtol=1e-4, atol=1e-5)  # (float32 recurrences cancel: kernels and numpy round apart)

import opinfo_modcheck  # noqa: E402,F401  (index ops with their indices as sample arguments)
import opinfo_linalg_factor  # noqa: E402,F401  (issue 27: the LU/LDL family, lstsq, matrix_exp)
import opinfo_newops  # noqa: E402,F401  (the newops branch's entries)
import opinfo_names  # noqa: E402,F401  (issue 27, the names work: tests/opinfo_names.py)
import opinfo_programs  # noqa: E402,F401  (names that public programs needed)
import opinfo_breadth  # noqa: E402,F401  (issue 27, the breadth work: tests/opinfo_breadth.py)
import opinfo_opA  # noqa: E402,F401  (issue 26: op_db entries 0-350, tests/opinfo_opA.py)
