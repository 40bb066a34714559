"""grid_sample(mode='bicubic') and adaptive_avg_pool3d / interpolate(mode='area') on 5-D
input (issue 26), against numpy float64 loops written from PyTorch's documented algorithms
(grid_sampler_2d's bicubic taps with A = -0.75; adaptive windows [floor(i*n/o),
ceil((i+1)*n/o))) and central differences for the gradients."""
import math

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F

A = -0.75


def _w(t):
    near = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1  # noqa: E731
    far = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A  # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_ref(x, grid, padding_mode, align_corners):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])

    def tap(v, size):
        if padding_mode == "border":
            return min(max(v, 0), size - 1)
        return v

    for b in range(n):
        for i, j in np.ndindex(grid.shape[1:3]):
            gx, gy = grid[b, i, j]
            if align_corners:
                ix, iy = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
            else:
                ix, iy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
            x0, y0 = math.floor(ix), math.floor(iy)
            wx, wy = _w(ix - x0), _w(iy - y0)
            for ch in range(c):
                acc = 0.0
                for q in range(4):
                    yy = tap(y0 - 1 + q, h)
                    row = 0.0
                    for p in range(4):
                        xx = tap(x0 - 1 + p, w)
                        if 0 <= xx < w and 0 <= yy < h:
                            row += x[b, ch, yy, xx] * wx[p]
                    acc += row * wy[q]
                out[b, ch, i, j] = acc
    return out


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (f(a) - f(b)) / (2 * eps)
    return g


@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_grid_sample_values_and_gradients(padding_mode, align_corners):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 5))
    grid = rng.uniform(-1.2, 1.2, (1, 3, 2, 2))
    wts = rng.standard_normal((1, 2, 3, 2))
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    r = F.grid_sample(tx, tg, mode="bicubic", padding_mode=padding_mode,
                      align_corners=align_corners)
    np.testing.assert_allclose(r.detach().numpy(),
                               _bicubic_ref(x, grid, padding_mode, align_corners), atol=1e-12)
    (r * torch.tensor(wts)).sum().backward()

    def loss_x(v):
        return (_bicubic_ref(v, grid, padding_mode, align_corners) * wts).sum()

    def loss_g(v):
        return (_bicubic_ref(x, v, padding_mode, align_corners) * wts).sum()

    np.testing.assert_allclose(tx.grad.numpy(), _fd(loss_x, x), atol=1e-6)
    np.testing.assert_allclose(tg.grad.numpy(), _fd(loss_g, grid), atol=1e-5)


def test_bicubic_reflection_stays_inside_and_keeps_constants():
    # reflection maps every tap inside, so a constant image stays constant (weights sum to 1)
    x = torch.full((1, 1, 3, 4), 2.5, dtype=torch.float64)
    g = torch.tensor(np.random.default_rng(1).uniform(-3, 3, (1, 5, 5, 2)))
    for ac in (False, True):
        r = F.grid_sample(x, g, mode="bicubic", padding_mode="reflection", align_corners=ac)
        np.testing.assert_allclose(r.numpy(), 2.5, rtol=1e-12)


def _adaptive_ref(x, out):
    res = x.astype(np.float64)
    for k, o in enumerate(out):
        dim = x.ndim - 3 + k
        n = res.shape[dim]
        cells = []
        for i in range(o):
            lo, hi = (i * n) // o, -((-(i + 1) * n) // o)
            cells.append(np.take(res, range(lo, hi), axis=dim).mean(axis=dim, keepdims=True))
        res = np.concatenate(cells, axis=dim)
    return res


@pytest.mark.parametrize("shape, out", [((2, 3, 4, 6, 5), (2, 3, 2)), ((2, 5, 3, 4), (3, 2, 3)),
                                        ((1, 1, 4, 4, 4), (2, 2, 2))])
def test_adaptive_avg_pool3d_and_area_interpolation(shape, out):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    t = torch.tensor(x, requires_grad=True)
    r = F.adaptive_avg_pool3d(t, out)
    np.testing.assert_allclose(r.detach().numpy(), _adaptive_ref(x, out), atol=1e-12)
    wts = rng.standard_normal(r.shape)
    (r * torch.tensor(wts)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), _fd(lambda v: (_adaptive_ref(v, out) * wts).sum(),
                                                   x), atol=1e-6)
    if len(shape) == 5:
        area = F.interpolate(torch.tensor(x), size=out, mode="area")
        np.testing.assert_allclose(area.numpy(), _adaptive_ref(x, out), atol=1e-12)
    assert torch.nn.AdaptiveAvgPool3d(out)(torch.tensor(x)).shape == r.shape


def test_adaptive_avg_pool3d_errors():
    with pytest.raises(RuntimeError, match=r"Expected 4D or 5D tensor, but got \[2, 3, 4\]"):
        F.adaptive_avg_pool3d(torch.ones(2, 3, 4), 2)
    with pytest.raises(ValueError, match="Input dimension should be at least 4"):
        F.adaptive_avg_pool3d(torch.ones(2, 3, 4), (1, 1, 1))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.adaptive_avg_pool3d(torch.ones(1, 2, 3, 4, dtype=torch.long), 2)
