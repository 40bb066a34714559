"""unfold2d / fold2d, the primitives under convolution and pooling, against explicit loops."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck
from fusetorch.tracer import dispatch as D

CASES = [
    dict(kernel=(3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1)),
    dict(kernel=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    dict(kernel=(2, 2), stride=(2, 2), padding=(1, 1), dilation=(1, 1)),
    dict(kernel=(1, 3), stride=(1, 3), padding=(0, 2), dilation=(2, 1)),
]


def windows_by_loops(x, kernel, stride, padding, dilation, pad_value=0.0):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros(x.shape[:2] + (kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            for a in range(oh):
                for b in range(ow):
                    out[:, :, i, j, a, b] = xp[:, :, a * sh + i * dh, b * sw + j * dw]
    return out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("pad_value", [0.0, -np.inf])
def test_unfold_matches_loops(case, pad_value):
    x = np.random.randn(2, 3, 7, 6)
    got = D.apply("unfold2d", [torch.tensor(x)], dict(case, pad_value=pad_value)).numpy()
    np.testing.assert_array_equal(got, windows_by_loops(x, pad_value=pad_value, **case))


@pytest.mark.parametrize("case", CASES)
def test_fold_is_the_adjoint_of_unfold(case):
    # <unfold(x), c> == <x, fold(c)> for all x, c: fold sums each window back where it came from
    x = np.random.randn(2, 3, 7, 6)
    u = windows_by_loops(x, **case)
    c = np.random.randn(*u.shape)
    f = D.apply("fold2d", [torch.tensor(c)], dict(case, size=(7, 6))).numpy()
    assert np.isclose((u * c).sum(), (x * f).sum())


@pytest.mark.parametrize("case", CASES)
def test_gradients(case):
    x = torch.randn(1, 2, 7, 6, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: D.apply("unfold2d", [t], dict(case, pad_value=0.0)) * 1.5, (x,))
    n = D.apply("unfold2d", [x], dict(case, pad_value=0.0)).shape
    c = torch.randn(*n, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: D.apply("fold2d", [t], dict(case, size=(7, 6))), (c,))


def test_output_too_small_is_an_error():
    with pytest.raises(RuntimeError, match="Output size is too small"):
        D.apply("unfold2d", [torch.randn(1, 1, 2, 2)],
                dict(kernel=(3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                     pad_value=0.0))
