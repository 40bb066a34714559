"""nn.functional: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area; bilinear and bicubic with `antialias`) and the deprecated upsample / upsample_nearest /
upsample_bilinear.

Every mode but 'area' is separable, as PyTorch's CPU kernels compute it: one spatial dim at a
time, each output position reads a few input positions (taps) with fixed weights. Indices and
weights depend only on the shapes, so they are computed here in numpy with PyTorch's formulas
(source index, float32 scale for float32 inputs) and applied as `index_select` along the dim
times a constant weight; the gradient is index_select's scatter-add. 'area' is adaptive average
pooling, as in PyTorch.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...ir import dtypes as DT
from ...ir.fma import fma
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.opmath import half_dtype, round_to, to_float32
from ...tracer.tensor import Tensor
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_LINEAR_NDIM = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def _sizes(input: Tensor, size, scale_factor, mode: str, recompute_scale_factor):
    """(output sizes, scales or None per dim) as PyTorch's interpolate works them out."""
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format.")
            if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                       for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] "
                                "or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in size]}")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * dim
        scales = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, "
                    "d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = None  # the kernels recompute the scale from the integer sizes
    return out, scales if scales is not None else [None] * dim


def _inv_scale(np_t, scale, n_in: int, n_out: int):
    """PyTorch's compute_scales_value: 1/scale_factor when given, else in/out (in np_t)."""
    if scale is not None and scale > 0:
        return np_t(1.0 / scale)
    return np_t(np_t(n_in) / np_t(n_out))


def _nearest_taps(mode: str, n_in: int, n_out: int, scale) -> list:
    o = np.arange(n_out)
    s = _inv_scale(np.float32, scale, n_in, n_out)
    if mode == "nearest-exact":
        src = np.floor(((o + 0.5) * np.float64(s)).astype(np.float32))
    elif n_out == n_in:
        src = o
    elif n_out == 2 * n_in:
        src = o >> 1
    else:
        src = np.floor(o.astype(np.float32) * s)
    return [(np.minimum(src.astype(np.int64), n_in - 1), None)]


def _fma(a, b, c, np_t):
    """a * b + c rounded once in np_t, as PyTorch's kernels compute the source index (the
    compiler contracts it to a fused multiply-add): float32's product is exact in float64."""
    if np_t is np.float32:
        return (np.float64(a) * b.astype(np.float64) + np.float64(c)).astype(np.float32)
    return fma(np, a, b, c)


def _cubic_weights(t):
    a = -0.75
    conv1 = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731  |x| <= 1
    conv2 = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731  1 < |x| < 2
    return [conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t)]


def _linear_taps(mode: str, n_in: int, n_out: int, scale, align_corners: bool, np_t) -> list:
    o = np.arange(n_out).astype(np_t)
    if align_corners:
        s = np_t(np_t(n_in - 1) / np_t(n_out - 1)) if n_out > 1 else np_t(0)
        src = s * o
    else:
        s = _inv_scale(np_t, scale, n_in, n_out)
        src = _fma(s, o + np_t(0.5), np_t(-0.5), np_t)
        if mode != "bicubic":
            src = np.maximum(src, np_t(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0.astype(np_t), 0, 1).astype(np_t)
    if mode == "bicubic":
        return [(np.clip(i0 - 1 + j, 0, n_in - 1), w.astype(np_t))
                for j, w in enumerate(_cubic_weights(lam))]
    i1 = i0 + (i0 < n_in - 1)
    return [(i0, (1 - lam).astype(np_t)), (i1, lam)]


def _aa_filter(mode: str, x, np_t):
    """PyTorch's antialiasing filters (UpSampleKernel.cpp's aa_filter): the triangle, Keys'
    cubic with a = -0.5 (not the -0.75 of plain bicubic), in its C types (a is a double), and
    Lanczos-3."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, np_t(1) - x, np_t(0)).astype(np_t)
    if mode == "lanczos":  # Lanczos-3, PIL's: sinc(x) sinc(x / 3) inside |x| < 3
        x64 = x.astype(np.float64)
        return np.where(x < 3, np.sinc(x64) * np.sinc(x64 / 3), 0.0).astype(np_t)
    a, x64 = -0.5, x.astype(np.float64)
    near = ((a + 2) * x64 - (a + 3)) * x64 * x64 + 1
    far = ((((x - np_t(5)) * x + np_t(8)) * x - np_t(4)).astype(np.float64)) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0)).astype(np_t)


def _aa_taps(mode: str, n_in: int, n_out: int, scale, align_corners: bool, np_t) -> list:
    """PyTorch's antialiased taps (_compute_weights_aa): output i averages the inputs within
    `support` of its centre, the filter stretched by the downscale factor, weights normalised
    to sum 1. Outputs have up to ceil(support) * 2 + 1 taps; unused ones are masked."""
    if align_corners:
        s = np_t(np_t(n_in - 1) / np_t(n_out - 1)) if n_out > 1 else np_t(0)
    else:
        s = _inv_scale(np_t, scale, n_in, n_out)
    half = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]  # interp_size * 0.5
    support = np_t(half * np.float64(s)) if s >= 1 else np_t(half)
    width = int(math.ceil(support)) * 2 + 1
    invscale = np_t(1.0 / np.float64(s)) if s >= 1 else np_t(1)
    center = (np.float64(s) * (np.arange(n_out) + 0.5)).astype(np_t)
    xmin = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    xsize = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64), n_in) - xmin
    xsize = np.clip(xsize, 0, width)
    ws = []
    for j in range(width):
        at = ((xmin + j).astype(np_t) - center).astype(np.float64) + 0.5
        w = _aa_filter(mode, (at * np.float64(invscale)).astype(np_t), np_t)
        ws.append(np.where(j < xsize, w, np_t(0)).astype(np_t))
    total = np_t(0)
    for w in ws:
        total = (total + w).astype(np_t)
    ws = [np.where(total != 0, w / np.where(total != 0, total, np_t(1)), w).astype(np_t) for w in ws]
    return [(np.minimum(xmin + j, n_in - 1), w, j < xsize if (xsize <= j).any() else None)
            for j, w in enumerate(ws)]


def _resample(x: Tensor, dim: int, taps: list) -> Tensor:
    idx0, w0 = taps[0][:2]
    if w0 is None and np.array_equal(idx0, np.arange(x.shape[dim])):
        return x
    shape = [1] * x.ndim
    shape[dim] = -1
    out = None
    for idx, w, *used in taps:
        part = F.index_select(x, dim, C.tensor(idx, device=x.device))
        if w is not None:
            part = part * C.tensor(w.reshape(shape), dtype=x.dtype, device=x.device)
        if used and used[0] is not None:  # taps an output does not have: no 0 * inf
            part = F.where(C.tensor(used[0].reshape(shape), device=x.device), part, 0.0)
        out = part if out is None else out + part
    return out


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of [N, C, *spatial] (1 to 3 of them) to `size` or by
    `scale_factor`; sampling as PyTorch's kernels sample (source-index formulas included)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if input.ndim not in (3, 4, 5) or mode not in _MODES.split(" | "):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: {_MODES} (got {mode})")
    out, scales = _sizes(input, size, scale_factor, mode, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    want = _LINEAR_NDIM.get(mode)
    if want is not None and input.ndim != want:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want}D input")
    if mode == "lanczos":
        if input.ndim != 4:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                      f"(got {input.ndim}D) for the modes: {_MODES} (got {mode})")
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    spatial = tuple(input.shape[2:])
    if any(s <= 0 for s in spatial) or any(o <= 0 for o in out):
        names = "DHW"[3 - len(spatial):]
        fmt = lambda v: ", ".join(f"{a}: {b}" for a, b in zip(names, v))  # noqa: E731
        sep = " and " if len(spatial) == 1 else " "  # PyTorch's 1-d message has the "and"
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({fmt(spatial)}){sep}output ({fmt(out)})")
    if mode == "area":
        pool = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}[
            input.ndim]
        return pool(input, out[0] if input.ndim == 3 else tuple(out))
    if input._dtype is DT.uint8 and (antialias or mode in ("bilinear", "bicubic")):
        raise NotImplementedError(f"interpolate: uint8 input with mode={mode!r} (PyTorch's "
                                  f"fixed-point uint8 kernels) is not supported by fusetorch; "
                                  f"convert it to a floating dtype")
    if not input._dtype.is_floating_point and not (mode.startswith("nearest") and
                                                   input._dtype is DT.uint8):
        kernel = {"nearest": "nearest", "nearest-exact": "nearest", "bicubic": "cubic"}.get(
            mode, "linear")
        if antialias:
            raise NotImplementedError(f'"compute_index_ranges_weights" not implemented for '
                                      f"'{D._torch_name(input._dtype)}'")
        raise NotImplementedError(f'"compute_indices_weights_{kernel}" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    np_t = np.float64 if input._dtype is DT.float64 else np.float32
    if half_dtype(input) and not mode.startswith("nearest"):
        # ATen's half kernels weigh and sum in float32, rounding once (not once per pass)
        return round_to(_interpolate_at(to_float32(input), out, scales, mode, align_corners,
                                        antialias), half_dtype(input))
    return _interpolate_at(input, out, scales, mode, align_corners, antialias)


def _interpolate_at(input: Tensor, out: tuple, scales: tuple, mode: str, align_corners,
                    antialias: bool) -> Tensor:
    """interpolate's resampling once the output sizes and scales are known."""
    spatial = tuple(input.shape[2:])
    np_t = np.float64 if input._dtype is DT.float64 else np.float32
    x = input
    if antialias:  # PyTorch's separable kernel: the last dim first, unchanged dims skipped
        for d in reversed(range(len(spatial))):
            if spatial[d] != out[d]:
                x = _resample(x, 2 + d, _aa_taps(mode, spatial[d], out[d], scales[d],
                                                 align_corners, np_t))
        return x.clone() if x is input else x
    for d, (n_in, n_out, s) in enumerate(zip(spatial, out, scales)):
        if mode in ("nearest", "nearest-exact"):
            taps = _nearest_taps(mode, n_in, n_out, s)
        else:
            taps = _linear_taps(mode, n_in, n_out, s, align_corners, np_t)
        x = _resample(x, 2 + d, taps)
    return x.clone() if x is input else x


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated spelling of `interpolate`."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
