"""F.interpolate(antialias=True): ATen's (PIL's) separable filter. Exact factor-2 bilinear
downsampling is the [1, 3, 3, 1] / 8 filter (renormalized at the edges), derived by hand from
the triangle filter stretched by 2; other sizes against a float64 numpy loop over the same
definition; gradients by central differences. Matches PyTorch 2.13 to rounding (checked by hand
in a scratch venv, float32 and float64, up- and downsampling, align_corners)."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.nn import functional as F


def _aa_1d(x: np.ndarray, n_out: int, cubic: bool) -> np.ndarray:
    """Resample the last axis: output i weighs input p by filter((p + 0.5 - c) / s), c = s (i +
    0.5), s = n_in / n_out, normalized; the filter is stretched only when downsampling."""
    n_in = x.shape[-1]
    s = n_in / n_out
    stretch = max(s, 1.0)

    def filt(t):
        t = abs(t)
        if not cubic:
            return max(0.0, 1 - t)
        a = -0.5
        if t < 1:
            return ((a + 2) * t - (a + 3)) * t * t + 1
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0
    out = np.zeros(x.shape[:-1] + (n_out,))
    for i in range(n_out):
        c = s * (i + 0.5)
        w = np.array([filt((p + 0.5 - c) / stretch) for p in range(n_in)])
        out[..., i] = (x * w).sum(-1) / w.sum()
    return out


def test_factor_two_bilinear_is_the_1331_filter():
    x = np.arange(8.0) ** 2
    y = F.interpolate(torch.tensor(x).reshape(1, 1, 1, 8), size=(1, 4), mode="bilinear",
                      antialias=True).reshape(-1).numpy()
    want = [(0.75 * x[0] + 0.75 * x[1] + 0.25 * x[2]) / 1.75]
    want += [(x[2 * i - 1] + 3 * x[2 * i] + 3 * x[2 * i + 1] + x[2 * i + 2]) / 8
             for i in (1, 2)]
    want += [(0.25 * x[5] + 0.75 * x[6] + 0.75 * x[7]) / 1.75]
    np.testing.assert_allclose(y, want, rtol=1e-14)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 5), (11, 4), (7, 9)])
def test_separable_filter_matches_its_definition(mode, size):
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 9))
    y = F.interpolate(torch.tensor(x), size=size, mode=mode, antialias=True).numpy()
    cubic = mode == "bicubic"
    want = _aa_1d(_aa_1d(x, size[1], cubic).swapaxes(-1, -2), size[0], cubic).swapaxes(-1, -2)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-13)


def test_gradients_and_refusals():
    x = torch.tensor(np.random.default_rng(2).standard_normal((1, 2, 6, 5)),
                     requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: F.interpolate(t, size=(4, 2), mode="bicubic", antialias=True), (x,))
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic"):
        F.interpolate(x, size=(2, 2), mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="requires a 4-D tensor"):
        F.interpolate(x[0], size=2, mode="linear", antialias=True)
