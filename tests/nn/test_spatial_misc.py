"""F.unfold/F.fold, pixel_shuffle/unshuffle and the padding layers.

Values against numpy float64 references written here (explicit loops for im2col/col2im and the
pixel rearrangement, numpy's np.pad modes for the padding layers), gradients with gradcheck on
tiny float64 inputs, reprs and error messages as PyTorch 2.13.0 prints them (observed by hand).
"""
import itertools

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def close(got, want, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=atol)


def _raises(exc, msg, fn):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


# ================================================================ unfold / fold

def im2col_ref(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ci, i, j, y, z in itertools.product(range(c), range(k[0]), range(k[1]), range(oh),
                                            range(ow)):
        out[:, (ci * k[0] + i) * k[1] + j, y * ow + z] = xp[:, ci, y * s[0] + i * d[0],
                                                            z * s[1] + j * d[1]]
    return out


def col2im_ref(cols, size, k, d, p, s):
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    oh = (size[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (size[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for ci, i, j, y, z in itertools.product(range(c), range(k[0]), range(k[1]), range(oh),
                                            range(ow)):
        out[:, ci, y * s[0] + i * d[0], z * s[1] + j * d[1]] += \
            cols[:, (ci * k[0] + i) * k[1] + j, y * ow + z]
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def test_unfold_fold_values():
    r = np.random.default_rng(0)
    x = r.standard_normal((2, 3, 5, 6))
    args = ((2, 3), (1, 2), (1, 1), (2, 1))
    close(F.unfold(t64(x), *args), im2col_ref(x, *args))
    close(F.unfold(t64(x[0]), 2), im2col_ref(x[:1], (2, 2), (1, 1), (0, 0), (1, 1))[0])
    cols = r.standard_normal((2, 18, 12))
    close(F.fold(t64(cols), (5, 6), *args), col2im_ref(cols, (5, 6), *args))
    cols = r.standard_normal((12, 4))
    close(F.fold(t64(cols), 4, 2, stride=2),
          col2im_ref(cols[None], (4, 4), (2, 2), (1, 1), (0, 0), (2, 2))[0])
    # modules
    m = nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    assert repr(m) == "Unfold(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))"
    close(m(t64(x)), im2col_ref(x, *args))
    m = nn.Fold((4, 5), 2, stride=2)
    assert repr(m) == "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=2)"


def test_unfold_fold_gradcheck():
    r = np.random.default_rng(1)
    x = t64(r.standard_normal((1, 2, 4, 5)), True)
    assert gradcheck(lambda a: F.unfold(a, (2, 3), padding=(1, 0), stride=(1, 2)), (x,))
    c = t64(r.standard_normal((1, 8, 8)), True)
    assert gradcheck(lambda a: F.fold(a, (3, 4), 2, padding=(0, 1), dilation=(1, 2)), (c,))


def test_unfold_fold_errors():
    x = torch.randn(1, 2, 5, 5)
    _raises(RuntimeError, "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
            "other non-zero dimensions for input, but got: [1, 2, 3, 4, 5]",
            lambda: F.unfold(torch.randn(1, 2, 3, 4, 5), 3))
    _raises(RuntimeError, "stride should be greater than zero, but got stride_height: 0 "
            "stride_width: 0", lambda: F.unfold(x, 3, stride=0))
    _raises(RuntimeError, "padding should be non-negative, but got pad_height: -1 pad_width: -1",
            lambda: F.unfold(x, 3, padding=-1))
    _raises(RuntimeError, "It is expected kernel_size equals to 2, but got size 3",
            lambda: F.unfold(x, (3, 2, 1)))
    _raises(RuntimeError, "Given input with spatial size (5, 5), kernel_size=(7, 7), "
            "dilation=(1, 1), padding=(0, 0), calculated shape of the array of sliding blocks as "
            "(-1, -1), but its components must be at least one.", lambda: F.unfold(x, 7))
    _raises(NotImplementedError, "\"im2col_out_cpu\" not implemented for 'Long'",
            lambda: F.unfold(torch.zeros(1, 2, 5, 5, dtype=torch.int64), 3))
    _raises(RuntimeError, "Expected size of input's dimension 1 to be divisible by the product "
            "of kernel_size, but got input.size(1)=13 and kernel_size=(2, 2).",
            lambda: F.fold(torch.randn(1, 13, 4), (3, 3), 2))
    _raises(RuntimeError, "Given output_size=(3, 3), kernel_size=(2, 2), dilation=(1, 1), "
            "padding=(0, 0), stride=(1, 1), expected size of input's dimension 2 to match the "
            "calculated number of sliding blocks 2 * 2 = 4, but got input.size(2)=5.",
            lambda: F.fold(torch.randn(1, 12, 5), (3, 3), 2))
    _raises(RuntimeError, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
            "size and non-zero dimensions for input, but got: [1, 12, 4, 1]",
            lambda: F.fold(torch.randn(1, 12, 4, 1), (3, 3), 2))


# ================================================================ pixel shuffle

def test_pixel_shuffle_values_and_inverse():
    r = np.random.default_rng(2)
    x = r.standard_normal((2, 3, 8, 2, 3))  # two leading batch dims
    want = np.zeros((2, 3, 2, 4, 6))
    for c, i, j, h, w in itertools.product(range(2), range(2), range(2), range(2), range(3)):
        want[:, :, c, h * 2 + i, w * 2 + j] = x[:, :, c * 4 + i * 2 + j, h, w]
    got = F.pixel_shuffle(t64(x), 2)
    close(got, want)
    close(F.pixel_unshuffle(got, 2), x)
    m, u = nn.PixelShuffle(2), nn.PixelUnshuffle(3)
    assert (repr(m), repr(u)) == ("PixelShuffle(upscale_factor=2)",
                                  "PixelUnshuffle(downscale_factor=3)")
    y = r.standard_normal((1, 2, 6, 3))
    close(nn.PixelShuffle(3)(u(t64(y))), y)
    assert gradcheck(lambda a: F.pixel_shuffle(a, 2) * t64(np.arange(16.).reshape(1, 4, 4)),
                     (t64(r.standard_normal((4, 2, 2)), True),))


def test_pixel_shuffle_errors():
    _raises(RuntimeError, "pixel_shuffle expects its input's 'channel' dimension to be divisible "
            "by the square of upscale_factor, but input.size(-3)=6 is not divisible by 4",
            lambda: F.pixel_shuffle(torch.randn(1, 6, 2, 2), 2))
    _raises(RuntimeError, "pixel_shuffle expects input to have at least 3 dimensions, but got "
            "input with 2 dimension(s)", lambda: F.pixel_shuffle(torch.randn(6, 2), 2))
    _raises(RuntimeError, "pixel_unshuffle expects height to be divisible by downscale_factor, "
            "but input.size(-2)=3 is not divisible by 2",
            lambda: F.pixel_unshuffle(torch.randn(1, 2, 3, 4), 2))
    _raises(RuntimeError, "pixel_shuffle expects a positive upscale_factor, but got 0",
            lambda: F.pixel_shuffle(torch.randn(1, 8, 2, 2), 0))


# ================================================================ padding layers

@pytest.mark.parametrize("cls,np_mode,nd,padding,repr_", [
    (nn.ZeroPad1d, "constant", 1, 2, "ZeroPad1d((2, 2))"),
    (nn.ZeroPad2d, "constant", 2, (1, 2, 3, 0), "ZeroPad2d((1, 2, 3, 0))"),
    (nn.ZeroPad3d, "constant", 3, 1, "ZeroPad3d((1, 1, 1, 1, 1, 1))"),
    (nn.ReflectionPad1d, "reflect", 1, (2, 1), "ReflectionPad1d((2, 1))"),
    (nn.ReflectionPad2d, "reflect", 2, 1, "ReflectionPad2d((1, 1, 1, 1))"),
    (nn.ReflectionPad3d, "reflect", 3, (1, 0, 2, 1, 0, 1), "ReflectionPad3d((1, 0, 2, 1, 0, 1))"),
    (nn.ReplicationPad1d, "edge", 1, 3, "ReplicationPad1d((3, 3))"),
    (nn.ReplicationPad2d, "edge", 2, (0, 2, 1, 3), "ReplicationPad2d((0, 2, 1, 3))"),
    (nn.ReplicationPad3d, "edge", 3, 2, "ReplicationPad3d((2, 2, 2, 2, 2, 2))"),
    (nn.CircularPad1d, "wrap", 1, (1, 3), "CircularPad1d((1, 3))"),
    (nn.CircularPad2d, "wrap", 2, 1, "CircularPad2d((1, 1, 1, 1))"),
    (nn.CircularPad3d, "wrap", 3, (1, 2, 0, 1, 2, 1), "CircularPad3d((1, 2, 0, 1, 2, 1))"),
])
def test_padding_layers(cls, np_mode, nd, padding, repr_):
    m = cls(padding)
    assert repr(m) == repr_
    x = np.random.default_rng(3).standard_normal((2, 2) + (3, 4, 5)[3 - nd:])
    p = m.padding
    widths = [(0, 0), (0, 0)] + [(p[2 * k], p[2 * k + 1]) for k in reversed(range(nd))]
    close(m(t64(x)), np.pad(x, widths, mode=np_mode))
    close(m(t64(x[0])), np.pad(x[0], widths[1:], mode=np_mode))  # unbatched
    small = t64(np.random.default_rng(4).standard_normal((1, 1) + (3, 3, 4)[3 - nd:]), True)
    assert gradcheck(lambda a: m(a), (small,))


def test_constant_pad_layers():
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert repr(nn.ConstantPad2d(1, 0)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=0)"
    m = nn.ConstantPad3d((1, 2, 0, 1, 2, 0), -1.5)
    assert repr(m) == "ConstantPad3d(padding=(1, 2, 0, 1, 2, 0), value=-1.5)"
    x = np.random.default_rng(5).standard_normal((1, 2, 2, 3, 2))
    close(m(t64(x)), np.pad(x, [(0, 0), (0, 0), (2, 0), (0, 1), (1, 2)], constant_values=-1.5))
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d) and nn.ZeroPad2d(1).value == 0.0
    _raises(ValueError, "expected 3D or 4D input (got 2D input)",
            lambda: nn.CircularPad2d(1)(torch.randn(3, 3)))
