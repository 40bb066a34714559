"""conv_transpose1d/2d, conv3d and their layers.

Values are checked against direct numpy float64 loops written here (each input pixel scattered
through its window for the transposed convolution; one sum per output position for conv3d),
gradients with gradcheck on tiny float64 inputs, reprs, parameter shapes, init bounds and error
messages against what PyTorch 2.13.0 prints (observed by hand, written in literally).
"""
import itertools
import math

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


# ================================================================ numpy references

def conv_transpose_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    """Every input value x[n, ci, *pos] adds x * w[ci, co, *k] at pos * stride - padding +
    k * dilation of output channel g * Cog + co (g: ci's group); positions that fall into
    the cropped padding are dropped."""
    nd = x.ndim - 2
    n, cin = x.shape[:2]
    cog, kernel = w.shape[1], w.shape[2:]
    cig = cin // groups
    size = [(x.shape[2 + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel[d] - 1)
            + output_padding[d] + 1 for d in range(nd)]
    out = np.zeros((n, cog * groups, *size))
    for b_, ci in itertools.product(range(n), range(cin)):
        g = ci // cig
        for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
            for co in range(cog):
                for k in itertools.product(*[range(s) for s in kernel]):
                    o = [pos[d] * stride[d] - padding[d] + k[d] * dilation[d] for d in range(nd)]
                    if all(0 <= o[d] < size[d] for d in range(nd)):
                        out[(b_, g * cog + co, *o)] += x[(b_, ci, *pos)] * w[(ci, co, *k)]
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def conv3d_ref(x, w, b, stride, padding, dilation, groups):
    n, c, *sp = x.shape
    o, cg, *k = w.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    osz = [(sp[d] + 2 * padding[d] - dilation[d] * (k[d] - 1) - 1) // stride[d] + 1
           for d in range(3)]
    og = o // groups
    out = np.zeros((n, o, *osz))
    for b_, oc in itertools.product(range(n), range(o)):
        g = oc // og
        for pos in itertools.product(*[range(s) for s in osz]):
            acc = 0.0
            for ci in range(cg):
                for kk in itertools.product(*[range(s) for s in k]):
                    idx = [pos[d] * stride[d] + kk[d] * dilation[d] for d in range(3)]
                    acc += xp[(b_, g * cg + ci, *idx)] * w[(oc, ci, *kk)]
            out[(b_, oc, *pos)] = acc + (b[oc] if b is not None else 0.0)
    return out


# ================================================================ conv_transpose


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=(2, 2), padding=(1, 1), output_padding=(1, 1)),
    dict(stride=(2, 3), padding=(1, 2), output_padding=(1, 2), dilation=(1, 2)),
    dict(stride=(2, 1), groups=2),
    # output_padding >= stride (allowed below the dilation): the crop-then-pad path
    dict(dilation=(3, 2), stride=(1, 2), output_padding=(2, 1), padding=(1, 0)),
])
def test_conv_transpose2d_values(kw):
    r = np.random.default_rng(0)
    g = kw.get("groups", 1)
    x, w, b = r.standard_normal((2, 4, 3, 4)), r.standard_normal((4, 3, 3, 2)), \
        r.standard_normal(3 * g)
    full = dict(stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1,
                dilation=(1, 1), **{k: v for k, v in kw.items()
                                    if k not in ("stride", "padding", "output_padding",
                                                 "groups", "dilation")})
    full.update(kw)
    got = F.conv_transpose2d(t64(x), t64(w), t64(b), **kw)
    close(got, conv_transpose_ref(x, w, b, **full))


def test_conv_transpose1d_values_and_unbatched():
    r = np.random.default_rng(1)
    x, w, b = r.standard_normal((2, 4, 5)), r.standard_normal((4, 1, 3)), r.standard_normal(2)
    got = F.conv_transpose1d(t64(x), t64(w), t64(b), stride=2, padding=1, output_padding=1,
                             groups=2, dilation=2)
    close(got, conv_transpose_ref(x, w, b, (2,), (1,), (1,), 2, (2,)))
    got = F.conv_transpose1d(t64(x[0]), t64(w), None, groups=2)
    close(got, conv_transpose_ref(x[:1], w, None, (1,), (0,), (0,), 2, (1,))[0])
    x2 = r.standard_normal((4, 3, 2))
    got = F.conv_transpose2d(t64(x2), t64(r.standard_normal((4, 2, 2, 2))))
    assert tuple(got.shape) == (2, 4, 3)


def test_conv_transpose_is_the_adjoint_of_conv():
    # <conv(y), x> == <y, conv_transpose(x)> for the same weight: the defining property
    r = np.random.default_rng(2)
    w = t64(r.standard_normal((4, 3, 3, 3)))
    y = t64(r.standard_normal((1, 3, 7, 8)))
    x = t64(r.standard_normal((1, 4, 4, 4)))
    lhs = float((F.conv2d(y, w, stride=2, padding=1) * x).sum())
    rhs = float((y * F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=(0, 1))).sum())
    assert math.isclose(lhs, rhs, rel_tol=1e-12)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1),
                                dict(groups=2, dilation=(2, 1)),
                                dict(dilation=2, output_padding=(1, 0), stride=(1, 2))])
def test_conv_transpose2d_gradcheck(kw):
    r = np.random.default_rng(3)
    x = t64(r.standard_normal((1, 4, 3, 3)), True)
    w = t64(r.standard_normal((4, 1, 2, 3)), True)
    b = t64(r.standard_normal(w.shape[1] * kw.get("groups", 1)), True)
    assert gradcheck(lambda a, c, d: F.conv_transpose2d(a, c, d, **kw), (x, w, b))


def test_conv_transpose1d_gradcheck():
    r = np.random.default_rng(4)
    x, w = t64(r.standard_normal((2, 2, 4)), True), t64(r.standard_normal((2, 3, 2)), True)
    assert gradcheck(lambda a, c: F.conv_transpose1d(a, c, stride=3, padding=1), (x, w))


def _raises(exc, msg, fn):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


def test_conv_transpose_errors():
    x = torch.randn(1, 4, 5, 5)
    _raises(RuntimeError, "output padding must be smaller than either stride or dilation, but "
            "got output_padding_height: 2 output_padding_width: 2 stride_height: 2 stride_width: "
            "2 dilation_height: 1 dilation_width: 1",
            lambda: F.conv_transpose2d(x, torch.randn(4, 3, 3, 3), stride=2, output_padding=2))
    _raises(RuntimeError, "output padding must be smaller than either stride or dilation, but "
            "got output_padding_height: 0 output_padding_width: 2 stride_height: 1 stride_width: "
            "2 dilation_height: 1 dilation_width: 1",
            lambda: F.conv_transpose1d(torch.randn(1, 4, 5), torch.randn(4, 3, 3), stride=2,
                                       output_padding=2))
    _raises(RuntimeError, "Given transposed=1, weight of size [3, 3, 3, 3], expected input[1, 4, "
            "5, 5] to have 3 channels, but got 4 channels instead",
            lambda: F.conv_transpose2d(x, torch.randn(3, 3, 3, 3)))
    _raises(RuntimeError, "Given groups=3, expected weight to be divisible by 3 at dimension 0, "
            "but got weight of size [[4, 3, 3, 3]] instead",
            lambda: F.conv_transpose2d(x, torch.randn(4, 3, 3, 3), groups=3))
    _raises(RuntimeError, "Given input size per channel: (5 x 5). Calculated output size per "
            "channel: (-3 x -3). Output size is too small",
            lambda: F.conv_transpose2d(x, torch.randn(4, 3, 3, 3), padding=5))
    _raises(RuntimeError, "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be "
            "1-dimensional with 3 elements, but got bias of size [4] instead",
            lambda: F.conv_transpose2d(x, torch.randn(4, 3, 3, 3), torch.randn(4)))
    _raises(RuntimeError, "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, "
            "but got input of size: [4, 5]",
            lambda: F.conv_transpose2d(torch.randn(4, 5), torch.randn(4, 3, 3, 3)))
    _raises(TypeError, "conv_transpose2d(): argument 'padding' must be tuple of ints, not str",
            lambda: F.conv_transpose2d(x, torch.randn(4, 3, 3, 3), padding="same"))
    _raises(RuntimeError, "negative output_padding is not supported",
            lambda: F.conv_transpose2d(x, torch.randn(4, 3, 3, 3), output_padding=-1))
    _raises(RuntimeError, "expected scalar type Double but found Float",
            lambda: F.conv_transpose2d(x.double(), torch.randn(4, 3, 3, 3)))


def test_conv_transpose_layers():
    torch.manual_seed(0)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert repr(m) == ("ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
                       "output_padding=(1, 1), groups=2)")
    assert tuple(m.weight.shape) == (4, 3, 3, 3) and tuple(m.bias.shape) == (6,)
    bound = 1 / math.sqrt(3 * 9)  # fan_in of a transposed weight: out/groups * kh * kw
    assert float(m.weight.detach().abs().max()) <= bound
    assert float(m.weight.detach().abs().max()) > 0.8 * bound
    assert float(m.bias.detach().abs().max()) <= bound
    m1 = nn.ConvTranspose1d(4, 2, 3, bias=False, dilation=2)
    assert repr(m1) == ("ConvTranspose1d(4, 2, kernel_size=(3,), stride=(1,), dilation=(2,), "
                        "bias=False)")
    assert tuple(m1.weight.shape) == (4, 2, 3) and m1.bias is None
    x = np.random.default_rng(5).standard_normal((2, 4, 5, 5))
    m = m.double()
    got = m(t64(x))
    want = conv_transpose_ref(x, m.weight.detach().numpy(), m.bias.detach().numpy(), (2, 2),
                              (1, 1), (1, 1), 2, (1, 1))
    close(got, want)
    # output_size picks output_padding
    assert tuple(m(t64(x), output_size=[9, 10]).shape) == (2, 6, 9, 10)
    assert tuple(m(t64(x), output_size=(2, 6, 10, 9)).shape) == (2, 6, 10, 9)
    _raises(ValueError, "requested an output size of [11, 9], but valid sizes range from [9, 9] "
            "to [10, 10] (for an input of torch.Size([5, 5]))",
            lambda: m(t64(x), output_size=[11, 9]))
    _raises(ValueError, 'Only "zeros" padding mode is supported for ConvTranspose2d',
            lambda: nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"))


# ================================================================ conv3d


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=(2, 1, 2), padding=(1, 0, 1)),
    dict(stride=(1, 2, 1), padding=(1, 0, 2), dilation=(2, 1, 1), groups=2),
    dict(padding="same", dilation=(1, 2, 1)),
])
def test_conv3d_values(kw):
    r = np.random.default_rng(6)
    g = kw.get("groups", 1)
    x, w, b = r.standard_normal((2, 4, 5, 4, 5)), r.standard_normal((4, 4 // g, 3, 2, 2)), \
        r.standard_normal(4)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'same' with an even kernel warns, as in PyTorch
        got = F.conv3d(t64(x), t64(w), t64(b), **kw)
    if kw.get("padding") == "same":
        # total d * (k - 1) per dim, the odd one on the right: (1, 1), (1, 1), (0, 1)
        x = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (0, 1)])
        kw = dict(kw, padding=(0, 0, 0))
    ref = conv3d_ref(x, w, b, kw.get("stride", (1, 1, 1)), kw.get("padding", (0, 0, 0)),
                     kw.get("dilation", (1, 1, 1)), g)
    close(got, ref)


def test_conv3d_gradcheck_and_unbatched():
    r = np.random.default_rng(7)
    x = t64(r.standard_normal((1, 2, 3, 3, 4)), True)
    w = t64(r.standard_normal((2, 1, 2, 2, 2)), True)
    b = t64(r.standard_normal(2), True)
    assert gradcheck(lambda a, c, d: F.conv3d(a, c, d, stride=(2, 1, 2), padding=1, groups=2),
                     (x, w, b))
    got = F.conv3d(x[0], w, b, groups=2)
    close(got, conv3d_ref(x.detach().numpy(), w.detach().numpy(), b.detach().numpy(),
                          (1, 1, 1), (0, 0, 0), (1, 1, 1), 2)[0])


def test_conv3d_layer():
    torch.manual_seed(0)
    m = nn.Conv3d(4, 6, 3, padding=(1, 0, 1))
    assert repr(m) == "Conv3d(4, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 0, 1))"
    assert tuple(m.weight.shape) == (6, 4, 3, 3, 3)
    assert float(m.weight.detach().abs().max()) <= 1 / math.sqrt(4 * 27)
    m = nn.Conv3d(2, 2, (2, 3, 1), padding=1, padding_mode="circular", bias=False).double()
    assert repr(m) == ("Conv3d(2, 2, kernel_size=(2, 3, 1), stride=(1, 1, 1), padding=(1, 1, 1), "
                       "bias=False, padding_mode=circular)")
    x = np.random.default_rng(8).standard_normal((1, 2, 3, 4, 3))
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1)], mode="wrap")
    close(m(t64(x)), conv3d_ref(xp, m.weight.detach().numpy(), None, (1, 1, 1), (0, 0, 0),
                                (1, 1, 1), 1))
