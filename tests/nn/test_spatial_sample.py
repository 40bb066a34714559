"""F.interpolate / Upsample layers, F.affine_grid and F.grid_sample.

References are direct numpy loops written from PyTorch's documented sampling formulas (one
output position at a time: source index, corner weights, padding modes), in float64; the
nearest modes' scale is float32 in PyTorch's kernels and is float32 here too. Gradients by
gradcheck on tiny float64 inputs; reprs and messages as PyTorch 2.13.0 prints them.
"""
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=atol)


def _raises(exc, msg, fn):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


# ================================================================ interpolate references

def _nearest_src(o, n_in, n_out, scale, exact):
    s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
    if exact:
        return min(int(math.floor(np.float32((o + 0.5) * float(s)))), n_in - 1)
    if n_out == n_in:
        return o
    if n_out == 2 * n_in:
        return o // 2
    return min(int(math.floor(np.float32(o) * s)), n_in - 1)


def _linear_src(o, n_in, n_out, scale, align, cubic=False):
    if align:
        return (n_in - 1) / (n_out - 1) * o if n_out > 1 else 0.0
    s = 1.0 / scale if scale else n_in / n_out
    src = s * (o + 0.5) - 0.5
    return src if cubic or src >= 0 else 0.0


def _cubic(t):
    a = -0.75
    c1 = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731
    c2 = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def interp_ref(x, out, mode, align=False, scales=None):
    """One output pixel at a time; x [N, C, *spatial] with 1 or 2 spatial dims."""
    sp = x.shape[2:]
    scales = scales or [None] * len(sp)
    res = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        if mode in ("nearest", "nearest-exact"):
            src = tuple(_nearest_src(o, n, m, s, mode == "nearest-exact")
                        for o, n, m, s in zip(pos, sp, out, scales))
            res[(..., *pos)] = x[(..., *src)]
            continue
        taps = []  # per dim: [(index, weight)]
        for o, n, m, s in zip(pos, sp, out, scales):
            real = _linear_src(o, n, m, s, align, mode == "bicubic")
            i0 = min(math.floor(real), n - 1)
            lam = min(max(real - i0, 0.0), 1.0)
            if mode == "bicubic":
                taps.append([(min(max(i0 - 1 + j, 0), n - 1), w)
                             for j, w in enumerate(_cubic(lam))])
            else:
                taps.append([(i0, 1 - lam), (i0 + (1 if i0 < n - 1 else 0), lam)])
        acc = 0.0
        for combo in np.ndindex(*[len(t) for t in taps]):
            idx = tuple(taps[d][k][0] for d, k in enumerate(combo))
            w = np.prod([taps[d][k][1] for d, k in enumerate(combo)])
            acc = acc + w * x[(..., *idx)]
        res[(..., *pos)] = acc
    return res


@pytest.mark.parametrize("shape,kw,out,scales", [
    ((2, 3, 4, 5), dict(scale_factor=2), (8, 10), None),
    ((2, 3, 4, 5), dict(size=(7, 3)), (7, 3), None),
    ((2, 3, 4, 5), dict(scale_factor=(1.7, 0.6)), (6, 3), (1.7, 0.6)),
    ((2, 3, 4, 5), dict(scale_factor=(1.7, 0.6), recompute_scale_factor=True), (6, 3), None),
    ((2, 3, 5), dict(scale_factor=2.3, mode="nearest-exact"), (11,), (2.3,)),
    ((1, 2, 4, 5), dict(size=(3, 7), mode="nearest-exact"), (3, 7), None),
    ((2, 3, 5), dict(size=9, mode="linear"), (9,), None),
    ((2, 3, 5), dict(size=9, mode="linear", align_corners=True), (9,), None),
    ((2, 3, 11), dict(scale_factor=0.37, mode="linear"), (4,), (0.37,)),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear"), (7, 3), None),
    ((2, 3, 4, 5), dict(scale_factor=(2.5, 1.3), mode="bilinear"), (10, 6), (2.5, 1.3)),
    ((2, 3, 4, 5), dict(scale_factor=(2.5, 1.3), mode="bilinear", align_corners=True), (10, 6),
     (2.5, 1.3)),
    ((1, 2, 4, 5), dict(size=(1, 6), mode="bilinear", align_corners=True), (1, 6), None),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bicubic"), (7, 3), None),
    ((1, 2, 4, 5), dict(scale_factor=(2.5, 1.3), mode="bicubic", align_corners=True), (10, 6),
     (2.5, 1.3)),
])
def test_interpolate_values(shape, kw, out, scales):
    x = np.random.default_rng(0).standard_normal(shape)
    got = F.interpolate(t64(x), **kw)
    mode = kw.get("mode", "nearest")
    close(got, interp_ref(x, out, "bilinear" if mode == "linear" else mode,
                          kw.get("align_corners", False), scales))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_half_precision_rounds_once(dtype, mode):
    # ATen's half kernels weigh and sum both dims in float32 and round once; a rounding after
    # each separable pass was 2-3 ulps off. Within half an ulp (+ float32's) of float64
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 5))
    d = getattr(torch, dtype)
    xh = torch.tensor(x, dtype=d)
    got = F.interpolate(xh, size=(5, 7), mode=mode, align_corners=True)
    want = interp_ref(xh.double().numpy(), (5, 7), mode, True)
    bits = 10 if dtype == "float16" else 7
    spacing = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(want), 1e-30))) - bits)
    assert got.dtype == d and (np.abs(got.double().numpy() - want) / spacing).max() <= 0.6


def test_interpolate_trilinear_and_area():
    r = np.random.default_rng(1)
    x = r.standard_normal((1, 2, 3, 4, 2))
    got = F.interpolate(t64(x), size=(5, 3, 4), mode="trilinear", align_corners=True)
    # trilinear with align_corners: separable, so each dim's 1-d reference in turn
    want = x
    for d, m in zip(range(2, 5), (5, 3, 4)):
        moved = np.moveaxis(want, d, -1)
        flat = moved.reshape(1, -1, moved.shape[-1])
        moved = interp_ref(flat, (m,), "bilinear", True).reshape(moved.shape[:-1] + (m,))
        want = np.moveaxis(moved, -1, d)
    close(got, want)
    y = r.standard_normal((2, 3, 4, 6))
    close(F.interpolate(t64(y), scale_factor=0.5, mode="area"),
          y.reshape(2, 3, 2, 2, 3, 2).mean(axis=(3, 5)))


@pytest.mark.parametrize("kw", [dict(mode="bilinear", scale_factor=1.7),
                                dict(mode="bicubic", size=(3, 5), align_corners=True),
                                dict(mode="nearest", size=(5, 3)),
                                dict(mode="nearest-exact", scale_factor=(0.7, 2.1))])
def test_interpolate_gradcheck(kw):
    x = t64(np.random.default_rng(2).standard_normal((1, 2, 3, 4)), True)
    assert gradcheck(lambda a: F.interpolate(a, **kw), (x,))


def test_interpolate_errors():
    x = torch.randn(1, 1, 3, 3)
    _raises(ValueError, "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear",
            lambda: F.interpolate(x, scale_factor=2, align_corners=True))
    _raises(NotImplementedError, "Got 4D input, but linear mode needs 3D input",
            lambda: F.interpolate(x, scale_factor=2, mode="linear"))
    _raises(NotImplementedError, "Input Error: Only 3D, 4D and 5D input Tensors supported (got "
            "2D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
            "area | nearest-exact (got nearest)",
            lambda: F.interpolate(torch.randn(2, 3), scale_factor=2))
    _raises(RuntimeError, "Input and output sizes should be greater than 0, but got input (W: 3) "
            "and output (W: 0)", lambda: F.interpolate(torch.randn(1, 1, 3), size=0))
    _raises(RuntimeError, "Input and output sizes should be greater than 0, but got input (H: 3, "
            "W: 3) output (H: 2, W: 0)", lambda: F.interpolate(x, size=(2, 0)))
    _raises(ValueError, "only one of size or scale_factor should be defined",
            lambda: F.interpolate(x, size=2, scale_factor=2))
    _raises(ValueError, "recompute_scale_factor is not meaningful with an explicit size.",
            lambda: F.interpolate(x, size=2, recompute_scale_factor=True))
    _raises(NotImplementedError, "\"compute_indices_weights_linear\" not implemented for 'Long'",
            lambda: F.interpolate(torch.ones(1, 2, 3, dtype=torch.int64), size=4, mode="linear"))


def test_upsample_layers():
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True)) == \
        "Upsample(size=(3, 4), mode='bilinear')"
    assert repr(nn.UpsamplingNearest2d(scale_factor=2)) == \
        "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    m = nn.UpsamplingBilinear2d(size=5)
    assert repr(m) == "UpsamplingBilinear2d(size=5, mode='bilinear')"
    assert m.align_corners is True
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4))
    close(m(t64(x)), interp_ref(x, (5, 5), "bilinear", True))
    close(nn.Upsample(scale_factor=(2, 1.5), mode="bicubic")(t64(x)),
          interp_ref(x, (6, 6), "bicubic", False, (2.0, 1.5)))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        close(F.upsample_bilinear(t64(x), size=5), interp_ref(x, (5, 5), "bilinear", True))


# ================================================================ affine_grid / grid_sample

def affine_grid_ref(theta, size, align):
    n, _, h, w = size
    lin = lambda k, j: (-1 + 2 * j / (k - 1) if align else (2 * j + 1) / k - 1) if k > 1 \
        else 0.0  # noqa: E731
    out = np.zeros((n, h, w, 2))
    for b, i, j in np.ndindex(n, h, w):
        out[b, i, j] = theta[b] @ np.array([lin(w, j), lin(h, i), 1.0])
    return out


def _reflect_ref(v, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    v = abs(v - lo)
    extra, flips = math.fmod(v, span), math.floor(v / span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _coord_ref(g, size, pad, align):
    v = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
    if pad == "reflection":
        v = _reflect_ref(v, 0, 2 * (size - 1)) if align else _reflect_ref(v, -1, 2 * size - 1)
    if pad in ("border", "reflection"):
        v = min(size - 1, max(v, 0))
    return v


def grid_sample_ref(x, grid, mode, pad, align):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in np.ndindex(*grid.shape[:3]):
        ix = _coord_ref(grid[b, i, j, 0], w, pad, align)
        iy = _coord_ref(grid[b, i, j, 1], h, pad, align)
        at = lambda yy, xx: x[b, :, yy, xx] if 0 <= yy < h and 0 <= xx < w else 0.0  # noqa
        if mode == "nearest":
            out[b, :, i, j] = at(int(np.rint(iy)), int(np.rint(ix)))
            continue
        x0, y0 = math.floor(ix), math.floor(iy)
        out[b, :, i, j] = ((x0 + 1 - ix) * (y0 + 1 - iy) * at(y0, x0)
                           + (ix - x0) * (y0 + 1 - iy) * at(y0, x0 + 1)
                           + (x0 + 1 - ix) * (iy - y0) * at(y0 + 1, x0)
                           + (ix - x0) * (iy - y0) * at(y0 + 1, x0 + 1))
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_values(mode, pad, align):
    r = np.random.default_rng(4)
    x = r.standard_normal((2, 3, 4, 5))
    grid = r.uniform(-2.5, 2.5, (2, 3, 6, 2))  # well past the edges: padding modes matter
    grid[0, 0, :3] = [[-1, -1], [1, 1], [0.25, -0.5]]  # corners and exact pixel positions
    got = F.grid_sample(t64(x), t64(grid), mode=mode, padding_mode=pad, align_corners=align)
    close(got, grid_sample_ref(x, grid, mode, pad, align))


@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
def test_grid_sample_gradcheck(pad):
    r = np.random.default_rng(5)
    x = t64(r.standard_normal((1, 2, 3, 4)), True)
    g = t64(r.uniform(-1.6, 1.6, (1, 2, 3, 2)), True)
    assert gradcheck(lambda a, b: F.grid_sample(a, b, padding_mode=pad, align_corners=False),
                     (x, g))
    gn = t64(r.uniform(-1.2, 1.2, (1, 2, 3, 2)), True)
    assert gradcheck(lambda a: F.grid_sample(a, gn.detach(), mode="nearest", padding_mode=pad,
                                             align_corners=True), (x,))
    # nearest: the grid gets a zero gradient (a tensor, as PyTorch gives), not None
    F.grid_sample(x, gn, mode="nearest", padding_mode=pad, align_corners=True).sum().backward()
    assert gn.grad is not None and not gn.grad.numpy().any()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_half_precision_at_pixel_positions_returns_the_pixel(dtype, mode):
    # W = 513, H = 129, align_corners: x = (g + 1) * 256 and y = (g + 1) * 64, exact in both
    # dtypes for these g, so every mode returns the pixel. In bfloat16 the corner x0 + 1
    # rounds to x0 past 256 and 133 + 0.5 rounds to 134 (once weight 0 and the wrong pixel);
    # offsets pass 2**15 (PyTorch's half kernel gathers with int16 offsets)
    h, w = 129, 513
    img = (np.arange(h * w).reshape(1, 1, h, w) % 251).astype(np.float64)  # exact integers
    xs, ys = np.array([256, 133, 500, 0, 512]), np.array([1, 64, 100, 128, 0])
    g = np.stack([xs / 256 - 1, ys / 64 - 1], -1)[None, None]
    d = getattr(torch, dtype)
    got = F.grid_sample(torch.tensor(img, dtype=d), torch.tensor(g, dtype=d), mode=mode,
                        align_corners=True)
    assert got.dtype == d
    np.testing.assert_array_equal(got.double().numpy()[0, 0, 0], img[0, 0, ys, xs])


def test_affine_grid_values_and_gradient():
    r = np.random.default_rng(6)
    theta = r.standard_normal((2, 2, 3))
    for align in (False, True):
        close(F.affine_grid(t64(theta), (2, 3, 4, 5), align_corners=align),
              affine_grid_ref(theta, (2, 3, 4, 5), align))
    th = t64(theta, True)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 2), align_corners=False), (th,))
    theta3 = r.standard_normal((1, 3, 4))
    got = F.affine_grid(t64(theta3), (1, 1, 2, 3, 4), align_corners=True).numpy()
    z, y, x = 1, 2, 3  # the last voxel: every coordinate at +1
    np.testing.assert_allclose(got[0, z, y, x], theta3[0] @ np.array([1.0, 1.0, 1.0, 1.0]))
    # the identity transform reproduces the image (a spatial transformer's sanity check)
    img = r.standard_normal((1, 2, 4, 5))
    ident = t64(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]))
    for align in (False, True):
        grid = F.affine_grid(ident, (1, 2, 4, 5), align_corners=align)
        close(F.grid_sample(t64(img), grid, align_corners=align), img)


def test_grid_sample_errors_and_warning():
    x = torch.randn(1, 2, 3, 4)
    _raises(ValueError, "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
            "or 'bicubic', but got: 'foo'",
            lambda: F.grid_sample(x, torch.zeros(1, 2, 2, 2), mode="foo", align_corners=False))
    _raises(RuntimeError, "grid_sampler(): expected grid and input to have same batch size, but "
            "got input with sizes [1, 2, 3, 4] and grid with sizes [2, 2, 2, 2]",
            lambda: F.grid_sample(x, torch.zeros(2, 2, 2, 2), align_corners=False))
    _raises(RuntimeError, "grid_sampler(): expected grid to have size 2 in last dimension, but "
            "got grid with sizes [1, 2, 2, 3]",
            lambda: F.grid_sample(x, torch.zeros(1, 2, 2, 3), align_corners=False))
    _raises(RuntimeError, "expected scalar type Float but found Double",
            lambda: F.grid_sample(x, torch.zeros(1, 2, 2, 2).double(), align_corners=False))
    _raises(ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
            "(1, 1, 2, 2). Got torch.Size([1, 2, 4]).",
            lambda: F.affine_grid(torch.zeros(1, 2, 4), (1, 1, 2, 2), align_corners=False))
    _raises(ValueError, "Expected non-zero, positive output size. Got (1, 1, 0, 2)",
            lambda: F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 0, 2), align_corners=False))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(x, torch.zeros(1, 2, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2, 2), align_corners=False)


def test_grid_sample_of_0d_tensors_says_they_have_no_dims():
    # found by the registry's 0-d samples (was Python's "tuple index out of range")
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        F.grid_sample(torch.tensor(1.0), torch.tensor(1.0), align_corners=False)
