"""grid_sample on 5-D input (trilinear and nearest, every padding mode) and aten's
grid_sampler / grid_sampler_2d / grid_sampler_3d / affine_grid_generator, against a numpy
float64 loop written from PyTorch's documented algorithm (unnormalise, pad by clipping or
reflecting, 8 corners weighted by their opposite volumes, 0 outside), and central differences
for the gradients of input and grid."""
import itertools

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F


def _unnormalise(c, size, align):
    return (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2


def _reflect(v, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    v = abs(v - lo)
    flips, extra = divmod(v, span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _pad(v, size, mode, align):
    if mode == "border":
        return min(max(v, 0), size - 1)
    if mode == "reflection":
        v = _reflect(v, 0, 2 * (size - 1)) if align else _reflect(v, -1, 2 * size - 1)
        return min(max(v, 0), size - 1)
    return v


def _ref(x, grid, mode, padding, align):
    n, c, d, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:4])
    for b, i, j, k in itertools.product(range(n), *map(range, grid.shape[1:4])):
        gx, gy, gz = grid[b, i, j, k]
        src = [_pad(_unnormalise(v, s, align), s, padding, align)
               for v, s in ((gx, w), (gy, h), (gz, d))]
        if mode == "nearest":
            cx, cy, cz = (int(np.rint(v)) for v in src)
            if 0 <= cx < w and 0 <= cy < h and 0 <= cz < d:
                out[b, :, i, j, k] = x[b, :, cz, cy, cx]
            continue
        lo = [int(np.floor(v)) for v in src]
        for corner in itertools.product((0, 1), repeat=3):
            at = [lo[q] + corner[q] for q in range(3)]
            wt = np.prod([src[q] - lo[q] if corner[q] else lo[q] + 1 - src[q] for q in range(3)])
            if 0 <= at[0] < w and 0 <= at[1] < h and 0 <= at[2] < d:
                out[b, :, i, j, k] += wt * x[b, :, at[2], at[1], at[0]]
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_5d_matches_numpy(mode, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2, 3, 4, 5))
    g = rng.uniform(-1.4, 1.4, (2, 2, 3, 2, 3))
    for align in (False, True):
        got = F.grid_sample(torch.tensor(x), torch.tensor(g), mode=mode, padding_mode=padding,
                            align_corners=align)
        np.testing.assert_allclose(got.numpy(), _ref(x, g, mode, padding, align), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_3d_gradients(padding):
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((1, 2, 2, 3, 3)), requires_grad=True)
    g = torch.tensor(rng.uniform(-1.2, 1.2, (1, 2, 2, 1, 3)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: torch.grid_sampler_3d(a, b, 0, padding, False),
                                    (x, g))
    out = torch.grid_sampler(x, g, 1, padding, True)  # nearest: no gradient for the grid
    out.sum().backward()
    assert float(g.grad.abs().sum()) == 0.0


def test_aten_entry_points_check_as_pytorch():
    x5, g5 = torch.zeros(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3)
    x4, g4 = torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 1, 2)
    assert torch.grid_sampler_2d(x4, g4, 2, 1, False).shape == (1, 1, 1, 1)
    with pytest.raises(RuntimeError, match="expected 4D input and grid with same number"):
        torch.grid_sampler_2d(x5, g5, 0, 0, False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        torch.grid_sampler_3d(x5[0], g5[0], 0, 0, False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(x5, g5, mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="interpolation_mode must be"):
        torch.grid_sampler(x4, g4, 3, 0, False)
    with pytest.raises(RuntimeError, match="padding_mode must be"):
        torch.grid_sampler(x4, g4, 0, 3, False)
    theta = torch.tensor(np.random.default_rng(2).standard_normal((2, 3, 4)))
    grid = torch.affine_grid_generator(theta, [2, 1, 2, 3, 4], True)
    z, y, xs = np.meshgrid(np.linspace(-1, 1, 2), np.linspace(-1, 1, 3), np.linspace(-1, 1, 4),
                           indexing="ij")
    base = np.stack([xs, y, z, np.ones_like(z)], -1)
    np.testing.assert_allclose(grid.numpy(), base @ theta.numpy().transpose(0, 2, 1)[:, None,
                                                                                     None],
                               rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="first two dimensions of batch2 tensor to be: "
                                           "\\[2, 3\\] but got: \\[2, 4\\]"):
        torch.affine_grid_generator(theta, [2, 3, 4, 5], False)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_corners_of_a_volume_past_float16s_integers(dtype, mode):
    # 13 * 14 * 15 = 2730 voxels: the last one's flat position 2729 is no float16 (spacing 2
    # above 2048), so the position is computed in int64; the grid's corners pick corner voxels
    rng = np.random.default_rng(3)
    vol = rng.standard_normal((1, 2, 13, 14, 15)).astype(dtype)
    corners = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))  # (x, y, z)
    grid = corners.reshape(1, 1, 1, 8, 3).astype(dtype)
    out = F.grid_sample(torch.tensor(vol), torch.tensor(grid), mode=mode, align_corners=True)
    assert out.dtype == getattr(torch, dtype) and tuple(out.shape) == (1, 2, 1, 1, 8)
    for k, (x, y, z) in enumerate(corners):
        i, j, l = (0 if z < 0 else 12), (0 if y < 0 else 13), (0 if x < 0 else 14)
        np.testing.assert_array_equal(out.numpy()[0, :, 0, 0, k], vol[0, :, i, j, l])
