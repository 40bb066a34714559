"""Registry entries (tests/opinfo.py's form) for the last pieces of PyTorch's catalogue of issue
27 built on the newops branch: the aten `native_*` functions, histogram/histogramdd,
as_strided_scatter, empty_permuted, nonzero_static, the grid_sampler family. Imported at the
end of tests/opinfo_catalogue.py."""
from __future__ import annotations

import fusetorch as torch
import fusetorch.nn.functional as F
from opinfo import F32, F64, I64, SKIPPED, WIDEN_SKIP, add, fixed, make

# ----------------------------------------------------------------------------- native norms

_BN = fixed(("4d_perm", lambda r: [make(r, (2, 3, 4, 5), layout="t"), make(r, (3,)),
                                   make(r, (3,))]),
            ("f64_3d", lambda r: [make(r, (2, 3, 5), F64), make(r, (3,), F64),
                                  make(r, (3,), F64)]))
add("native_batch_norm", {
    "torch.native_batch_norm": lambda x, w, b: torch.native_batch_norm(x, w, b, None, None, True,
                                                                       0.1, 1e-5),
    "torch.native_batch_norm(eval)": lambda x, w, b: torch.native_batch_norm(
        x, None, None, w * 0.5, b * b + 0.5, False, 0.1, 1e-3)[0]}, _BN)
add("native_layer_norm", {
    "torch.native_layer_norm": lambda x, w, b: torch.native_layer_norm(x, w.shape, w, b, 1e-5),
    "torch.native_layer_norm(noaffine)": lambda x, w, b: torch.native_layer_norm(
        x, w.shape, None, None, 1e-3)},
    fixed(("two_dims_perm", lambda r: [make(r, (3, 4, 5), layout="t"), make(r, (4, 5)),
                                       make(r, (4, 5))]),
          ("f64", lambda r: [make(r, (2, 5), F64), make(r, (5,), F64), make(r, (5,), F64)])))
add("native_group_norm", {
    "torch.native_group_norm": lambda x, w, b: torch.native_group_norm(
        x, w, b, x.shape[0], x.shape[1], x[0, 0].numel(), 2, 1e-5),
    "torch.native_group_norm(noaffine)": lambda x, w, b: torch.native_group_norm(
        x, None, None, x.shape[0], x.shape[1], x[0, 0].numel(), 4, 1e-5)},
    fixed(("4d", lambda r: [make(r, (2, 4, 3, 5)), make(r, (4,)), make(r, (4,))]),
          ("3d_f64", lambda r: [make(r, (2, 4, 5), F64, layout="s"), make(r, (4,), F64),
                                make(r, (4,), F64)])))
add("native_dropout(eval)", {
    "torch.native_dropout": lambda x: torch.native_dropout(x, 0.3, False)},
    fixed(("f32", lambda r: [make(r, (3, 4))]), ("f64", lambda r: [make(r, (5,), F64)])))
add("norm_except_dim", {
    "torch.norm_except_dim": lambda x: torch.norm_except_dim(x, 2, 0),
    "torch.norm_except_dim(p3,dim1)": lambda x: torch.norm_except_dim(x, 3, 1),
    "torch.norm_except_dim(all)": lambda x: torch.norm_except_dim(x, 2, -1),
    "torch.native_norm": lambda x: torch.native_norm(x),
    "torch.native_norm(dim)": lambda x: torch.native_norm(x, 3, [1], True, None)},
    fixed(("f32", lambda r: [make(r, (3, 4, 2))]), ("f64_perm", lambda r: [make(r, (3, 4), F64,
                                                                               layout="t")])))

# ----------------------------------------------------------------------------- histograms
# (the data's own range is read on the host, as PyTorch's .item(): tests/tracer/test_histogram.py)

_EDGES = lambda x: torch.tensor([-1.5, -0.25, 0.0, 0.5, 1.75], dtype=x.dtype,
                                 device=x.device)  # noqa: E731
add("histogram", {
    "torch.histogram": lambda x, w: torch.histogram(x, 5, range=(-1.0, 1.5)),
    "torch.histogram(weight,density)": lambda x, w: torch.histogram(
        x, 4, range=(-2.0, 2.0), weight=w, density=True),
    "torch.histogram(edges)": lambda x, w: torch.histogram(x, _EDGES(x), weight=w),
    "Tensor.histogram": lambda x, w: x.histogram(_EDGES(x), density=True)},
    fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5), F32, 0.0, 1.0)]),
          ("f64_perm", lambda r: [make(r, (3, 4), F64, -3.0, 3.0, layout="t"),
                                  make(r, (3, 4), F64, 0.0, 2.0)])), grad=False)
add("histogramdd", {
    "torch.histogramdd": lambda x, w: torch.histogramdd(x, [3, 2], range=[-1.0, 1.0, -2.0, 0.5]),
    "torch.histogramdd(weight,density)": lambda x, w: torch.histogramdd(
        x, 2, range=[-1.0, 1.0, -2.0, 0.5], weight=w, density=True),
    "torch.histogramdd(edges)": lambda x, w: torch.histogramdd(
        x, [_EDGES(x), _EDGES(x)[1:]], weight=w)},
    fixed(("f32", lambda r: [make(r, (7, 2)), make(r, (7,), F32, 0.0, 1.0)]),
          ("f64_3d", lambda r: [make(r, (2, 5, 2), F64), make(r, (2, 5), F64, 0.0, 1.0)])),
    grad=False)

# ----------------------------------------------------------------------------- strided writes

add("as_strided_scatter", {
    "torch.as_strided_scatter": lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (1, 2)),
    "torch.as_strided_scatter(offset)": lambda x, s: torch.as_strided_scatter(
        x, s[:, :1], (2, 1), (4, 1), 3),
    "Tensor.as_strided_scatter": lambda x, s: x.as_strided_scatter(s.t(), (2, 2), (2, 1), 1)},
    fixed(("f32", lambda r: [make(r, (3, 4)), make(r, (2, 2))]),
          ("f64", lambda r: [make(r, (4, 3), F64), make(r, (2, 2), F64)])))
add("nonzero_static", {
    "torch.nonzero_static": lambda x: torch.nonzero_static(x, size=5),
    "Tensor.nonzero_static": lambda x: x.nonzero_static(size=2, fill_value=7)},
    fixed(("f32", lambda r: [make(r, (3, 4)) * (make(r, (3, 4)) > 0)]),
          ("bool_3d", lambda r: [make(r, (2, 3, 2)) > 0.5]),
          ("i64_perm", lambda r: [make(r, (3, 4), I64, -1, 2, layout="t")])), grad=False)
SKIPPED["torch.empty_permuted"] = ("uninitialised memory: no value to compare (strides tested "
                                   "in tests/tracer/test_newops_strided.py)")

# ----------------------------------------------------------------------------- grid sampling

_GRID3 = fixed(("f32", lambda r: [make(r, (2, 2, 3, 4, 5)), make(r, (2, 2, 3, 2, 3), F32, -1.4,
                                                                1.4)]),
               ("f64_perm", lambda r: [make(r, (1, 2, 2, 3, 4), F64, layout="t"),
                                       make(r, (1, 3, 2, 2, 3), F64, -1.6, 1.6)]))
for _pad, _p in (("zeros", 0), ("border", 1), ("reflection", 2)):
    add(f"grid_sampler_3d({_pad})", {
        "F.grid_sample(5d)": lambda x, g, p=_pad: F.grid_sample(x, g, padding_mode=p,
                                                                align_corners=False),
        "torch.grid_sampler_3d": lambda x, g, p=_p: torch.grid_sampler_3d(x, g, 0, p, True),
        "torch.grid_sampler(5d)": lambda x, g, p=_p: torch.grid_sampler(x, g, 0, p, False)},
        _GRID3)
    add(f"grid_sampler_3d(nearest,{_pad})", {
        "torch.grid_sampler_3d": lambda x, g, p=_p: torch.grid_sampler_3d(x, g, 1, p, False)},
        _GRID3)
add("grid_sampler_2d", {
    "torch.grid_sampler_2d": lambda x, g: torch.grid_sampler_2d(x, g, 0, 2, False),
    "torch.grid_sampler_2d(bicubic)": lambda x, g: torch.grid_sampler_2d(x, g, 2, 1, True),
    "torch.grid_sampler": lambda x, g: torch.grid_sampler(x, g, 1, 0, True)},
    fixed(("f32", lambda r: [make(r, (2, 3, 4, 5)), make(r, (2, 3, 6, 2), F32, -1.6, 1.6)]),
          ("f64", lambda r: [make(r, (1, 2, 4, 5), F64), make(r, (1, 5, 2, 2), F64, -2.5, 2.5)])))
add("affine_grid_generator", {
    "torch.affine_grid_generator": lambda t: torch.affine_grid_generator(t, (2, 3, 4, 5), False),
    "torch.affine_grid_generator(align)": lambda t: torch.affine_grid_generator(
        t, (2, 3, 4, 5), True)},
    fixed(("f32", lambda r: [make(r, (2, 2, 3))]), ("f64", lambda r: [make(r, (2, 2, 3), F64)])))
add("affine_grid_generator_3d", {
    "torch.affine_grid_generator": lambda t: torch.affine_grid_generator(t, (1, 2, 2, 3, 4), True),
    "F.affine_grid(5d)": lambda t: F.affine_grid(t, (1, 2, 3, 2, 2), align_corners=False)},
    fixed(("f64", lambda r: [make(r, (1, 3, 4), F64)])))

# ----------------------------------------------------------------------------- nn modules
SKIPPED["nn.AdaptiveLogSoftmaxWithLoss"] = (
    "selects each cluster's rows on the host (nonzero), as PyTorch's module does: a graph break "
    "by design (tests/nn/test_adaptive_cross_map.py: values and gradients against numpy)")
SKIPPED["nn.CrossMapLRN2d"] = (
    "an autograd.Function with PyTorch's own backward (not the forward's derivative), as "
    "PyTorch's legacy module: a graph break by design (tests/nn/test_adaptive_cross_map.py)")

# ----------------------------------------------------------------------------- segment_reduce
_LEN = lambda x, *v: torch.tensor(list(v), device=x.device)  # noqa: E731
add("segment_reduce", {
    "torch.segment_reduce": lambda x: torch.segment_reduce(x, "sum", lengths=_LEN(x, 2, 0, 3, 1)),
    "torch.segment_reduce(mean,initial)": lambda x: torch.segment_reduce(
        x, "mean", lengths=_LEN(x, 1, 4, 1), initial=0.5),
    "torch.segment_reduce(max)": lambda x: torch.segment_reduce(x, "max",
                                                                lengths=_LEN(x, 3, 3)),
    "torch.segment_reduce(min,offsets)": lambda x: torch.segment_reduce(
        x, "min", offsets=_LEN(x, 0, 2, 6), initial=1.5),
    "torch.segment_reduce(prod)": lambda x: torch.segment_reduce(x, "prod",
                                                                 lengths=_LEN(x, 4, 2))},
    fixed(("f32", lambda r: [make(r, (6,))]), ("f64_2d", lambda r: [make(r, (6, 3), F64)])))
add("segment_reduce(axis)", {
    "torch.segment_reduce(axis1)": lambda x: torch.segment_reduce(
        x, "sum", lengths=torch.tensor([[2, 2], [1, 3]], device=x.device), axis=1)},
    fixed(("f64", lambda r: [make(r, (2, 4, 3), F64)]), ("perm", lambda r: [make(
        r, (2, 4), layout="t")])))


# the samples' lambda reads N and C from the input's shape: a 0-d input is the test's own error
WIDEN_SKIP[("native_group_norm", "0d")] = "the sample reads N, C from the input's shape"
