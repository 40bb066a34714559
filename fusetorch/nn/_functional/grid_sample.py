"""nn.functional: affine_grid and grid_sample (4-D input: bilinear, nearest or bicubic
sampling, padding_mode zeros / border / reflection).

grid_sample follows PyTorch's grid_sampler_2d: grid values in [-1, 1] are unnormalised to pixel
coordinates, clipped or reflected by padding_mode, and each output pixel reads the input at the
integer corners around its coordinate (`gather` on the flattened image; its gradient is a
scatter-add), weighted by the bilinear weights, whose derivative is the gradient with respect to
the grid. A corner outside the image gets weight 0 (padding_mode 'zeros').

There is no floor primitive: `_floor` casts to int64 (truncation) and steps down where that
rounded up, on a value clamped into a range where the cast is exact. The integer corner indices
come out of the graph the same way, so compiled replays compute them from the data too.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer import functional_math as FM
from ...tracer.tensor import Tensor
from ...tracer import autocast as _ac

__all__ = ["affine_grid", "grid_sample"]
TORCH_PUBLIC = ("grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator")

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
                  "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
                  "See the documentation of grid_sample for details.")


def _linspace(n: int, align_corners: bool) -> np.ndarray:
    """PyTorch's linspace_from_neg_one: pixel centres in [-1, 1] coordinates."""
    if n <= 1:
        return np.zeros(max(n, 0))
    r = np.linspace(-1.0, 1.0, n)
    return r if align_corners else r * (n - 1) / n


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """Sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of the affine maps theta [N, 2, 3]
    (or [N, 3, 4]) applied to the output pixels' normalised coordinates."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta._dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta._dtype}")
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        nd, want = 2, (2, 3)
    elif len(size) == 5:
        nd, want = 3, (3, 4)
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != want:
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{want[0]}x"
                         f"{want[1]} for size {size}. Got {theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if align_corners and max(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    return affine_grid_generator(theta, size, align_corners)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """aten::affine_grid_generator: the grid of F.affine_grid without its Python-level
    checks (a theta of the wrong shape meets the batched product's error)."""
    D.check_tensor(theta, "affine_grid_generator", "theta", 1)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    nd = len(size) - 2
    n = size[0]
    if theta.ndim < 3:
        k = max(theta.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{k}, {k - 1}], "
                         f"but got 2)")
    if theta.ndim > 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if theta.shape[0] != n or theta.shape[2] != nd + 1:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {nd + 1}] but got: [{theta.shape[0]}, {theta.shape[2]}].")
    spatial = size[2:]
    # base[..., :] = (x, y[, z], 1): x runs along the last dim
    axes = [_linspace(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W order
    base = np.stack([m for m in reversed(mesh)] + [np.ones(spatial)], axis=-1)
    base = C.tensor(base.reshape(1, -1, nd + 1), dtype=theta.dtype, device=theta.device)
    grid = F.matmul(F.expand(base, n, base.shape[1], nd + 1), F.transpose(theta, 1, 2))
    return F.reshape(grid, (n,) + spatial + (nd,))


# ----------------------------------------------------------------------------- grid_sample

def _floor(t: Tensor) -> Tensor:
    """floor(t) as a float tensor, for |t| below 2**40 (callers clamp first)."""
    tr = F.clamp(t, -2.0 ** 40, 2.0 ** 40).long().to(t.dtype)
    return F.where(tr > t, tr - 1, tr)


def _clip(t: Tensor, size: int) -> Tensor:
    """PyTorch's clip_coordinates; its gradient is 0 at and past both ends."""
    zero = F.mul(t, 0.0)
    return F.where(t <= 0, zero, F.where(t >= size - 1, zero + (size - 1), t))


def _reflect(t: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """PyTorch's (vectorised) reflect_coordinates: fold t into [low, high] by mirroring at
    both ends, in its steps (whole periods off by trunc, then the nearer of the two images),
    so half precision rounds as its kernel does; the gradient is its +-1 (+1 at t = low and
    at the fold's tie)."""
    if twice_low == twice_high:
        return F.mul(t, 0.0)
    low, twice_span = twice_low / 2, twice_high - twice_low
    t = t - low
    t = F.where(t < 0, -t, t)
    extra = t - _floor(t / twice_span) * twice_span  # t >= 0: floor is trunc
    other = twice_span - extra
    return F.where(extra > other, other, extra) + low


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """Pixel coordinates of grid values in [-1, 1], as PyTorch's vectorised kernel computes
    them (one scale, the half-pixel shift after it), which every dtype's CPU path takes."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return (coord + 1) * (size / 2) - 0.5


def _source(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    x = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        x = _clip(x, size)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = _clip(x, size)
    return x


def _point(flat: Tensor, coords: list, sizes: list, weight: Tensor,
           shifts: tuple | None = None) -> Tensor:
    """The image values at integer coordinates `coords` ([x, y(, z)], each [N, L] floats,
    `sizes` [W, H(, D)] alike) plus integer `shifts`, weight-scaled, 0 outside the image."""
    inside, idx = None, None
    shifts = shifts or (0,) * len(coords)
    for c, size, up in zip(reversed(coords), reversed(sizes), reversed(shifts)):  # z, y, x
        # in int64: a float16/bfloat16 corner `c + 1` rounds back to c past 2048/256, and
        # a flat position in float16 (or float32 past 2**24) would round out of range
        k = c.long() + up if up else c.long()
        ok = F.logical_and(k >= 0, k <= size - 1)
        inside = ok if inside is None else F.logical_and(inside, ok)
        k = F.clamp(k, 0, size - 1)
        idx = k if idx is None else idx * size + k
    n, c, _ = flat.shape
    vals = F.gather(flat, 2, F.expand(F.unsqueeze(idx, 1), n, c, idx.shape[1]))
    wt = F.where(inside, weight, F.mul(weight, 0.0))
    return vals * F.unsqueeze(wt, 1)


def _corner(flat: Tensor, xc: Tensor, yc: Tensor, w: int, h: int, weight: Tensor) -> Tensor:
    return _point(flat, [xc, yc], [w, h], weight)


MODES = ("bilinear", "nearest", "bicubic")  # aten's interpolation_mode integers, in order
PADDINGS = ("zeros", "border", "reflection")  # aten's padding_mode integers, in order


@_ac.op("grid_sample")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample input [N, C, H, W] at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]): [N, C, Ho, Wo];
    or input [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] ((x, y, z)): [N, C, Do, Ho, Wo]."""
    if mode not in MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, MODES.index(mode), PADDINGS.index(padding_mode),
                        align_corners)


def _check_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                   ndim: int | None) -> None:
    """aten's grid_sampler checks, in its order (`ndim`: the 2d/3d entry points' one)."""
    D.check_tensor(input, "grid_sampler", "input", 1)
    D.check_tensor(grid, "grid_sampler", "grid", 2)
    if input.ndim != grid.ndim:
        raise RuntimeError(f"grid_sampler(): expected {input.ndim}D input and grid with same "
                           f"number of dimensions, but got input with sizes {list(input.shape)} "
                           f"and grid with sizes {list(grid.shape)}")
    if input.ndim == 0:  # (both: the dims agree) PyTorch's input.size(0)
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if ndim is not None and input.ndim != ndim:
        raise RuntimeError(f"grid_sampler(): expected {ndim}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    # PyTorch reads other integers as undefined behaviour; they are refused here
    if interpolation_mode not in (0, 1, 2) or isinstance(interpolation_mode, bool):
        raise RuntimeError(f"grid_sampler(): interpolation_mode must be 0 (bilinear), 1 "
                           f"(nearest) or 2 (bicubic), but got {interpolation_mode}")
    if padding_mode not in (0, 1, 2) or isinstance(padding_mode, bool):
        raise RuntimeError(f"grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 "
                           f"(reflection), but got {padding_mode}")
    if input.ndim == 5 and interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    for i, s in enumerate(input.shape[2:]):
        if s <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i + 2} being empty")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f'"grid_sampler_{input.ndim - 2}d_cpu_kernel_impl" not '
                                  f"implemented for '{D._torch_name(input._dtype)}'")
    if grid._dtype is not input._dtype:
        raise RuntimeError(f"expected scalar type {D._torch_name(input._dtype)} but found "
                           f"{D._torch_name(grid._dtype)}")


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """aten::grid_sampler: grid_sample with its modes as integers (0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection), 4-D or 5-D input."""
    _check_sampler(input, grid, interpolation_mode, padding_mode, None)
    return _sample(input, grid, MODES[interpolation_mode], PADDINGS[padding_mode],
                   bool(align_corners))


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    _check_sampler(input, grid, interpolation_mode, padding_mode, 4)
    return _sample(input, grid, MODES[interpolation_mode], PADDINGS[padding_mode],
                   bool(align_corners))


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    _check_sampler(input, grid, interpolation_mode, padding_mode, 5)
    return _sample(input, grid, MODES[interpolation_mode], PADDINGS[padding_mode],
                   bool(align_corners))


def _sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str,
            align_corners: bool) -> Tensor:
    """PyTorch's grid_sampler_2d / grid_sampler_3d: each output point's source coordinates
    (x along W, y along H, z along D) mapped by padding_mode, then the nearest pixel, or the
    2 (4) or 8 corners around it weighted by their bilinear (trilinear) weights."""
    n, c = input.shape[:2]
    spatial = tuple(input.shape[2:])
    sizes = list(reversed(spatial))  # [W, H(, D)], the grid's coordinate order
    k = len(sizes)
    out_spatial = tuple(grid.shape[1:-1])
    g = F.reshape(grid, (n, math.prod(out_spatial), k))
    flat = F.reshape(input, (n, c, math.prod(spatial)))
    if mode == "bicubic":
        out = _bicubic(flat, g[:, :, 0], g[:, :, 1], sizes[0], sizes[1], padding_mode,
                       align_corners)
        return F.reshape(out, (n, c) + out_spatial)
    src = [_source(g[:, :, i], sizes[i], padding_mode, align_corners) for i in range(k)]
    # corners of a clamped copy: past the edges every corner is outside anyway
    near = [F.clamp(v, -2.0, size + 1.0) for v, size in zip(src, sizes)]
    if mode == "nearest":
        # weight 1 that still depends on the grid: its gradient is zeros, as PyTorch's
        one = sum(near[1:], near[0]) * 0.0 + 1.0
        out = _point(flat, [_round_half_even(v) for v in near], sizes, one)
    else:
        low = [_floor(v) for v in near]
        out = None
        # corners in PyTorch's order: x fastest, then y, then z (nw, ne, sw, se; top first)
        # PyTorch's weights: the distance w past the low corner and 1 - w (in half precision
        # low + 1 - x can round to 0 where 1 - w is 1)
        frac = [v - lo for v, lo in zip(src, low)]
        for corner in itertools.product((0, 1), repeat=k):
            weight = None
            for i, up in enumerate(reversed(corner)):
                f = frac[i] if up else 1 - frac[i]
                weight = f if weight is None else weight * f
            v = _point(flat, low, sizes, weight, tuple(reversed(corner)))
            out = v if out is None else out + v
    return F.reshape(out, (n, c) + out_spatial)


_A = -0.75  # PyTorch's bicubic convolution constant


def _cubic_weights(t: Tensor) -> list:
    """PyTorch's get_cubic_upsample_coefficients: the weights of the 4 taps around a point
    at fraction t past the second."""
    def near(x):  # |x| <= 1
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A
    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _tap(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's compute_coordinates for one integer tap position (no gradient flows: the
    position comes from a floor)."""
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _floor(_clip(_reflect(coord, *twice), size))
    return coord


def _bicubic(flat: Tensor, gx: Tensor, gy: Tensor, w: int, h: int, padding_mode: str,
             align_corners: bool) -> Tensor:
    """PyTorch's bicubic grid_sampler_2d: the 4 x 4 taps around the unnormalised (unclipped)
    point, each position mapped by padding_mode and 0 outside the image, interpolated along x
    in each of the 4 rows, then along y, in PyTorch's order."""
    ix, iy = _unnormalize(gx, w, align_corners), _unnormalize(gy, h, align_corners)
    x0, y0 = _floor(ix), _floor(iy)
    wx, wy = _cubic_weights(ix - x0), _cubic_weights(iy - y0)
    xs = [_tap(x0 + (i - 1), w, padding_mode, align_corners) for i in range(4)]
    out = None
    for j in range(4):
        yj = _tap(y0 + (j - 1), h, padding_mode, align_corners)
        row = None
        for i in range(4):
            v = _corner(flat, xs[i], yj, w, h, wx[i])
            row = v if row is None else row + v
        term = row * F.unsqueeze(wy[j], 1)
        out = term if out is None else out + term
    return out


def _round_half_even(t: Tensor) -> Tensor:
    """nearbyint: the nearest integer, ties to even (as PyTorch's nearest mode rounds); not
    floor(t + 0.5), whose sum rounds in half precision (bfloat16 133 + 0.5 is 134)."""
    return FM.round(t)
