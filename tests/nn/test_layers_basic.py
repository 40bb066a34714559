"""Linear, convolution, pooling, activation, softmax, dropout and pad layers.

Forward values are checked against numpy float64 references written here with explicit loops
(not with fusetorch's own code paths), gradients with gradcheck in float64, reprs and error
messages against what PyTorch 2.13.0 prints (observed by hand and written in literally).
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck
from fusetorch.runtime.eager import make_table

D64 = torch.float64


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def rnd(*shape, grad=False):
    return t64(np.random.randn(*shape), grad)


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=atol)


# ================================================================ numpy references

def conv2d_ref(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """Direct cross-correlation: one loop per output channel and position."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, i, j] = np.einsum("nckl,ckl->n", patch, w[oc])
        if b is not None:
            out[:, oc] += b[oc]
    return out


def conv1d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    n, c, length = x.shape
    o, cg, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    ol = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    og = o // groups
    out = np.zeros((n, o, ol))
    for oc in range(o):
        g = oc // og
        for i in range(ol):
            for ci in range(cg):
                for kk in range(k):
                    out[:, oc, i] += xp[:, g * cg + ci, i * stride + kk * dilation] * w[oc, ci, kk]
        if b is not None:
            out[:, oc] += b[oc]
    return out


def pool_out(n, k, s, p, d, ceil_mode):
    """PyTorch's documented output size: floor (or ceil) of the window count, and with
    ceil_mode a last window starting in the right padding is dropped."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def max_pool2d_ref(x, k, s, p, d, ceil_mode=False):
    """Max over the in-bounds elements of each window, and the flat index of its first max
    (the last NaN; a window of -infs: its first in-bounds element)."""
    n, c, h, w = x.shape
    oh, ow = pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), pool_out(w, k[1], s[1], p[1],
                                                                         d[1], ceil_mode)
    vals, idx = np.zeros((n, c, oh, ow)), np.zeros((n, c, oh, ow), dtype=np.int64)
    for a in range(n):
        for b in range(c):
            for i in range(oh):
                for j in range(ow):
                    best, where = -np.inf, None  # PyTorch's scan: > or NaN is taken
                    for u in range(k[0]):
                        for v in range(k[1]):
                            r, q = i * s[0] - p[0] + u * d[0], j * s[1] - p[1] + v * d[1]
                            if 0 <= r < h and 0 <= q < w:
                                where = r * w + q if where is None else where
                                if x[a, b, r, q] > best or np.isnan(x[a, b, r, q]):
                                    best, where = x[a, b, r, q], r * w + q
                    vals[a, b, i, j], idx[a, b, i, j] = best, where
    return vals, idx


def avg_pool2d_ref(x, k, s, p, ceil_mode=False, count_include_pad=True, divisor=None):
    """Window sums divided as PyTorch's kernel documents: the window clipped to the padded
    input counts when count_include_pad, else only the in-bounds elements."""
    n, c, h, w = x.shape
    oh, ow = pool_out(h, k[0], s[0], p[0], 1, ceil_mode), pool_out(w, k[1], s[1], p[1], 1,
                                                                     ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            total = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
            den = divisor if divisor else (size if count_include_pad else (h1 - h0) * (w1 - w0))
            out[:, :, i, j] = total / den
    return out


def adaptive_avg_ref(x, oh, ow):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, r1 = math.floor(i * h / oh), math.ceil((i + 1) * h / oh)
            c0, c1 = math.floor(j * w / ow), math.ceil((j + 1) * w / ow)
            out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


ERF = np.vectorize(math.erf)


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(np.minimum(x * beta, 700))) / beta)


ACT_REF = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "relu6": (F.relu6, lambda x: np.minimum(np.maximum(x, 0), 6)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (F.tanh, np.tanh),
    "gelu": (F.gelu, lambda x: x * 0.5 * (1 + ERF(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                   * (x + 0.044715 * x ** 3)))),
    "elu": (lambda x: F.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "softplus": (F.softplus, softplus_ref),
    "softplus_beta": (lambda x: F.softplus(x, 2.0, 3.0), lambda x: softplus_ref(x, 2.0, 3.0)),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x))),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    "mish": (F.mish, lambda x: x * np.tanh(softplus_ref(x))),
    "logsigmoid": (F.logsigmoid, lambda x: -softplus_ref(-x)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "selu": (F.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x,
                                                             1.6732632423543772 * np.expm1(x))),
    "celu": (lambda x: F.celu(x, 2.0), lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0))),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x)),
    "threshold": (lambda x: F.threshold(x, 0.3, -2.0), lambda x: np.where(x > 0.3, x, -2.0)),
}


# ================================================================ linear

def test_linear_forward_and_shapes():
    x, w, b = np.random.randn(5, 4), np.random.randn(3, 4), np.random.randn(3)
    close(F.linear(t64(x), t64(w), t64(b)), x @ w.T + b)
    close(F.linear(t64(x), t64(w)), x @ w.T)
    x3 = np.random.randn(2, 5, 4)
    close(F.linear(t64(x3), t64(w), t64(b)), np.einsum("abi,oi->abo", x3, w) + b)
    close(F.linear(t64(x[0]), t64(w), t64(b)), w @ x[0] + b)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x5 and 3x4\)"):
        nn.Linear(3, 4)(torch.randn(2, 5))


def test_linear_module_parameters_and_init():
    m = nn.Linear(20, 7)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [("weight", (7, 20)),
                                                                       ("bias", (7,))]
    bound = 1 / math.sqrt(20)  # kaiming_uniform_(a=sqrt(5)) and the bias rule both give this
    for p in m.parameters():
        assert p.requires_grad and p.is_leaf and p.grad_fn is None
        a = p.detach().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.5 * bound
    assert nn.Linear(3, 2, bias=False).bias is None
    assert [n for n, _ in nn.Linear(3, 2, bias=False).named_parameters()] == ["weight"]
    assert nn.Linear(3, 2, dtype=D64).weight.dtype is D64
    x = torch.randn(4, 20)
    close(m(x), x.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy(), rtol=1e-5,
          atol=1e-6)


def test_linear_and_bilinear_gradcheck():
    x, w, b = rnd(3, 4, grad=True), rnd(2, 4, grad=True), rnd(2, grad=True)
    assert gradcheck(F.linear, (x, w, b))
    assert gradcheck(lambda a, c: F.linear(a, c), (rnd(2, 3, 4, grad=True), w))
    x1, x2 = rnd(3, 2, grad=True), rnd(3, 4, grad=True)
    a, bb = rnd(2, 2, 4, grad=True), rnd(2, grad=True)
    assert gradcheck(F.bilinear, (x1, x2, a, bb))


def test_bilinear_forward():
    x1, x2, a, b = (np.random.randn(5, 3), np.random.randn(5, 4), np.random.randn(2, 3, 4),
                    np.random.randn(2))
    close(F.bilinear(t64(x1), t64(x2), t64(a), t64(b)),
          np.einsum("ni,oij,nj->no", x1, a, x2) + b)
    m = nn.Bilinear(3, 4, 2)
    assert tuple(m.weight.shape) == (2, 3, 4) and tuple(m.bias.shape) == (2,)
    assert np.abs(m.weight.detach().numpy()).max() <= 1 / math.sqrt(3)


def test_identity():
    m = nn.Identity(54, unused="x")
    x = torch.randn(2)
    assert m(x) is x
    assert list(m.parameters()) == []


# ================================================================ convolution

CONV_CASES = [
    dict(stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1),
    dict(stride=(2, 1), padding=(1, 2), dilation=(1, 1), groups=1),
    dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=2),
    dict(stride=(3, 2), padding=(1, 1), dilation=(2, 2), groups=4),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_loops(case):
    x, w, b = np.random.randn(2, 4, 9, 8), np.random.randn(8, 4 // case["groups"], 3, 2), \
        np.random.randn(8)
    got = F.conv2d(t64(x), t64(w), t64(b), **case)
    close(got, conv2d_ref(x, w, b, **case))
    close(F.conv2d(t64(x), t64(w), None, **case), conv2d_ref(x, w, None, **case))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 2), st.integers(1, 2),
       st.sampled_from([1, 2]), st.integers(1, 3), st.integers(1, 3))
def test_conv2d_matches_loops_hypothesis(sh, sw, pad, dil, groups, kh, kw):
    x = np.random.randn(2, 2 * groups, 7, 6)
    w = np.random.randn(2 * groups, 2, kh, kw)
    case = dict(stride=(sh, sw), padding=(pad, pad), dilation=(dil, dil), groups=groups)
    close(F.conv2d(t64(x), t64(w), **case), conv2d_ref(x, w, **case))


def test_conv2d_int_arguments_and_unbatched():
    x, w = np.random.randn(3, 7, 7), np.random.randn(2, 3, 3, 3)
    got = F.conv2d(t64(x), t64(w), stride=2, padding=1, dilation=1)
    assert tuple(got.shape) == (2, 4, 4)
    close(got, conv2d_ref(x[None], w, stride=(2, 2), padding=(1, 1))[0])


@pytest.mark.parametrize("k,d", [((3, 3), (1, 1)), ((4, 2), (1, 3)), ((2, 5), (2, 1))])
def test_conv2d_same_and_valid(k, d):
    x, w = np.random.randn(1, 2, 7, 8), np.random.randn(3, 2, *k)
    # 'same': total padding d * (k - 1), the odd one on the right/bottom (PyTorch's rule)
    tot = [dd * (kk - 1) for kk, dd in zip(k, d)]
    xp = np.pad(x, ((0, 0), (0, 0), (tot[0] // 2, tot[0] - tot[0] // 2),
                    (tot[1] // 2, tot[1] - tot[1] // 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = F.conv2d(t64(x), t64(w), padding="same", dilation=d)
    assert tuple(got.shape) == (1, 3, 7, 8)
    close(got, conv2d_ref(xp, w, dilation=d))
    close(F.conv2d(t64(x), t64(w), padding="valid", dilation=d), conv2d_ref(x, w, dilation=d))


def test_conv2d_same_even_kernel_warns():
    with pytest.warns(UserWarning, match="Using padding='same' with even kernel lengths and odd "
                                         "dilation may require a zero-padded copy"):
        F.conv2d(torch.randn(1, 1, 5, 5), torch.randn(1, 1, 2, 2), padding="same")


@pytest.mark.parametrize("case", [dict(stride=1, padding=0, dilation=1, groups=1),
                                  dict(stride=2, padding=2, dilation=2, groups=3)])
def test_conv1d_matches_loops(case):
    x, w, b = np.random.randn(2, 6, 11), np.random.randn(3, 6 // case["groups"], 3), \
        np.random.randn(3)
    close(F.conv1d(t64(x), t64(w), t64(b), **case), conv1d_ref(x, w, b, **case))
    close(F.conv1d(t64(x[0]), t64(w), t64(b), **case), conv1d_ref(x[:1], w, b, **case)[0])


def test_conv_gradcheck():
    x, w, b = rnd(1, 4, 5, 4, grad=True), rnd(2, 2, 2, 3, grad=True), rnd(2, grad=True)
    assert gradcheck(lambda a, c, e: F.conv2d(a, c, e, stride=(2, 1), padding=1, dilation=(1, 2),
                                              groups=2), (x, w, b))
    x1, w1 = rnd(2, 2, 6, grad=True), rnd(2, 1, 3, grad=True)
    assert gradcheck(lambda a, c: F.conv1d(a, c, stride=2, padding=1, groups=2), (x1, w1))
    w2 = rnd(1, 4, 2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda a: F.conv2d(a, w2, padding="same"), (rnd(1, 4, 3, 3, grad=True),))


def test_conv_modules():
    m = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    assert tuple(m.weight.shape) == (6, 2, 3, 2) and tuple(m.bias.shape) == (6,)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    bound = 1 / math.sqrt(2 * 3 * 2)  # fan_in = in_channels / groups * kh * kw
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    x = torch.randn(2, 4, 7, 7, dtype=D64)
    m.double()
    close(m(x), conv2d_ref(x.numpy(), m.weight.detach().numpy(), m.bias.detach().numpy(),
                           (2, 2), (1, 1), (1, 1), 2))
    m1 = nn.Conv1d(2, 4, 3, padding=1, bias=False, dtype=D64)
    assert m1.bias is None and tuple(m1.weight.shape) == (4, 2, 3)
    x1 = torch.randn(3, 2, 5, dtype=D64)
    close(m1(x1), conv1d_ref(x1.numpy(), m1.weight.detach().numpy(), padding=1))


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_conv_padding_modes(mode, np_mode):
    m = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, dtype=D64)
    x = np.random.randn(1, 2, 5, 6)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode)
    close(m(t64(x)), conv2d_ref(xp, m.weight.detach().numpy(), m.bias.detach().numpy()))


def test_conv_output_is_contiguous_for_view():
    # classic scripts call x.view(-1, n) after conv/pool layers
    y = F.max_pool2d(F.relu(nn.Conv2d(1, 3, 3)(torch.randn(2, 1, 8, 8))), 2)
    assert y.is_contiguous()
    assert tuple(y.view(-1, 27).shape) == (2, 27)


CONV_ERRORS = [  # (call, error, message), observed in PyTorch 2.13.0
    (lambda: F.conv2d(torch.randn(3, 4), torch.randn(2, 4, 3, 3)), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 4]"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 3, 3, 3)), RuntimeError,
     "Given groups=1, weight of size [2, 3, 3, 3], expected input[2, 4, 7, 7] to have 3 "
     "channels, but got 4 channels instead"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 2, 3, 3), groups=3), RuntimeError,
     "Given groups=3, expected weight to be at least 3 at dimension 0, but got weight of size "
     "[2, 2, 3, 3] instead"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(3, 2, 3, 3), groups=2), RuntimeError,
     "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of "
     "size [[3, 2, 3, 3]] instead"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 9, 9)), RuntimeError,
     "Calculated padded input size per channel: (7 x 7). Kernel size: (9 x 9). Kernel size "
     "can't be greater than actual input size"),
    (lambda: F.conv1d(torch.randn(2, 4, 7), torch.randn(2, 4, 9)), RuntimeError,
     "Calculated padded input size per channel: (7). Kernel size: (9). Kernel size can't be "
     "greater than actual input size"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 3, 3), bias=torch.randn(3)),
     RuntimeError, "Given weight of size [2, 4, 3, 3], expected bias to be 1-dimensional with 2 "
                   "elements, but got bias of size [3] instead"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 3, 3), padding="foo"),
     RuntimeError, "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 3, 3), padding="same",
                      stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 3, 3), stride=0), RuntimeError,
     "non-positive stride is not supported"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 3, 3), padding=-1),
     RuntimeError, "negative padding is not supported"),
    (lambda: F.conv2d(torch.randn(2, 4, 7, 7), torch.randn(2, 4, 3, 3).double()), RuntimeError,
     "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same or "
     "input should be a MKLDNN tensor and weight is a dense tensor"),
    (lambda: F.conv1d(torch.randn(2, 4, 7), torch.randn(2, 4, 3), stride=(1, 2)), RuntimeError,
     "expected stride to be a single integer value or a list of 1 values to match the "
     "convolution dimensions, but got stride=[1, 2]"),
    (lambda: F.conv1d(torch.randn(2, 4, 7, 3), torch.randn(2, 4, 3)), RuntimeError,
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
     "[2, 4, 7, 3]"),
    (lambda: nn.Conv2d(4, 6, 3, groups=4), ValueError, "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(5, 6, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 6, 3, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 6, 3, padding="foo"), ValueError,
     "Invalid padding string 'foo', should be one of {'valid', 'same'}"),
    (lambda: nn.Conv2d(4, 6, 3, stride=2, padding="same"), ValueError,
     "padding='same' is not supported for strided convolutions"),
]


@pytest.mark.parametrize("i", range(len(CONV_ERRORS)))
def test_conv_errors(i):
    call, err, msg = CONV_ERRORS[i]
    with pytest.raises(err) as info:
        call()
    assert str(info.value) == msg


def test_conv_padding_mode_error_lists_modes():
    with pytest.raises(ValueError) as info:
        nn.Conv2d(4, 6, 3, padding_mode="foo")
    assert str(info.value) == ("padding_mode must be one of {'circular', 'replicate', 'reflect', "
                               "'zeros'}, but got padding_mode='foo'")


# ================================================================ pooling

MAXPOOL_CASES = [
    dict(k=(2, 2), s=(2, 2), p=(0, 0), d=(1, 1), ceil_mode=False),
    dict(k=(3, 2), s=(1, 2), p=(1, 1), d=(1, 1), ceil_mode=False),
    dict(k=(3, 3), s=(2, 2), p=(1, 0), d=(2, 1), ceil_mode=False),
    dict(k=(2, 2), s=(2, 2), p=(0, 0), d=(1, 1), ceil_mode=True),
    dict(k=(3, 2), s=(2, 3), p=(1, 1), d=(1, 2), ceil_mode=True),
]


@pytest.mark.parametrize("case", MAXPOOL_CASES)
def test_max_pool2d_matches_loops(case):
    x = np.random.randn(2, 3, 7, 8)
    want_v, want_i = max_pool2d_ref(x, case["k"], case["s"], case["p"], case["d"],
                                    case["ceil_mode"])
    got_v, got_i = F.max_pool2d(t64(x), case["k"], case["s"], case["p"], case["d"],
                                ceil_mode=case["ceil_mode"], return_indices=True)
    close(got_v, want_v, 0, 0)
    assert got_i.dtype is torch.int64
    np.testing.assert_array_equal(got_i.numpy(), want_i)
    assert gradcheck(lambda a: F.max_pool2d(a, case["k"], case["s"], case["p"], case["d"],
                                            ceil_mode=case["ceil_mode"]),
                     (rnd(1, 1, 7, 8, grad=True),))


def test_max_pool2d_stride_defaults_to_kernel_and_unbatched():
    x = np.random.randn(3, 6, 6)
    got = F.max_pool2d(t64(x), 3)
    close(got, max_pool2d_ref(x[None], (3, 3), (3, 3), (0, 0), (1, 1))[0][0], 0, 0)
    assert tuple(nn.MaxPool2d(2)(torch.randn(2, 3, 8, 8)).shape) == (2, 3, 4, 4)


def test_max_pool_gradient_goes_to_the_first_maximum():
    # ties: PyTorch sends the whole gradient to the first maximum of each window
    x = t64([[[[1.0, 1.0], [0.0, 1.0]]]], grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[1.0, 0.0], [0.0, 0.0]]]])


def test_max_pool_ceil_mode_observed_values():
    # observed in PyTorch 2.13.0 on arange(25).reshape(1, 1, 5, 5)
    x = torch.arange(25.).reshape(1, 1, 5, 5)
    np.testing.assert_array_equal(F.max_pool2d(x, 2, ceil_mode=True).numpy()[0, 0],
                                  [[6., 8., 9.], [16., 18., 19.], [21., 23., 24.]])
    v, i = F.max_pool2d(x, 2, ceil_mode=True, padding=1, return_indices=True)
    np.testing.assert_array_equal(i.numpy()[0, 0], [[0, 2, 4], [10, 12, 14], [20, 22, 24]])


@pytest.mark.parametrize("case", [dict(k=3, s=2, p=1, d=1, ceil_mode=False),
                                  dict(k=2, s=1, p=0, d=2, ceil_mode=True)])
def test_max_pool1d(case):
    x = np.random.randn(2, 3, 9)
    want, want_i = max_pool2d_ref(x[:, :, None, :], (1, case["k"]), (1, case["s"]),
                                  (0, case["p"]), (1, case["d"]), case["ceil_mode"])
    got, got_i = F.max_pool1d(t64(x), case["k"], case["s"], case["p"], case["d"],
                              ceil_mode=case["ceil_mode"], return_indices=True)
    close(got, want[:, :, 0], 0, 0)
    np.testing.assert_array_equal(got_i.numpy(), want_i[:, :, 0])
    assert gradcheck(lambda a: F.max_pool1d(a, 3, 2, 1), (rnd(1, 2, 7, grad=True),))


AVGPOOL_CASES = [
    dict(k=(2, 2), s=(2, 2), p=(0, 0), ceil_mode=False, count_include_pad=True, divisor=None),
    dict(k=(3, 3), s=(2, 2), p=(1, 1), ceil_mode=False, count_include_pad=True, divisor=None),
    dict(k=(3, 3), s=(2, 2), p=(1, 1), ceil_mode=False, count_include_pad=False, divisor=None),
    dict(k=(2, 3), s=(2, 2), p=(1, 1), ceil_mode=True, count_include_pad=True, divisor=None),
    dict(k=(2, 3), s=(2, 2), p=(1, 0), ceil_mode=True, count_include_pad=False, divisor=None),
    dict(k=(3, 2), s=(1, 2), p=(0, 1), ceil_mode=False, count_include_pad=True, divisor=5),
]


@pytest.mark.parametrize("case", AVGPOOL_CASES)
def test_avg_pool2d_matches_loops(case):
    x = np.random.randn(2, 3, 7, 8)
    want = avg_pool2d_ref(x, case["k"], case["s"], case["p"], case["ceil_mode"],
                          case["count_include_pad"], case["divisor"])
    got = F.avg_pool2d(t64(x), case["k"], case["s"], case["p"], case["ceil_mode"],
                       case["count_include_pad"], case["divisor"])
    close(got, want)
    assert gradcheck(lambda a: F.avg_pool2d(a, case["k"], case["s"], case["p"], case["ceil_mode"],
                                            case["count_include_pad"], case["divisor"]),
                     (rnd(1, 1, 5, 6, grad=True),))


def test_avg_pool_observed_values():
    # observed in PyTorch 2.13.0 on arange(25).reshape(1, 1, 5, 5)
    x = torch.arange(25.).reshape(1, 1, 5, 5)
    got = F.avg_pool2d(x, 2, ceil_mode=True, padding=1).numpy()[0, 0]
    np.testing.assert_allclose(got, [[0., .75, 1.75], [3.75, 9., 11.], [8.75, 19., 21.]])
    got = F.avg_pool2d(x, 3, stride=2, ceil_mode=True, padding=1).numpy()[0, 0]
    np.testing.assert_allclose(got, [[4 / 3, 3., 8 / 3], [7., 12., 9.], [8., 13., 28 / 3]],
                               rtol=1e-6)
    got = F.avg_pool2d(x, 2, ceil_mode=True, padding=1, count_include_pad=False).numpy()[0, 0]
    np.testing.assert_allclose(got, [[0., 1.5, 3.5], [7.5, 9., 11.], [17.5, 19., 21.]])


def test_avg_pool1d():
    x = np.random.randn(2, 3, 9)
    want = avg_pool2d_ref(x[:, :, None, :], (1, 3), (1, 2), (0, 1), False, False)
    close(F.avg_pool1d(t64(x), 3, 2, 1, count_include_pad=False), want[:, :, 0])
    close(nn.AvgPool1d(3)(t64(x[0])), x[0].reshape(3, 3, 3).mean(-1))


@pytest.mark.parametrize("out", [(4, 4), (3, 5), (1, 1), (7, 2), 3, (None, 3), (8, 9)])
def test_adaptive_avg_pool2d_matches_loops(out):
    x = np.random.randn(2, 3, 8, 9)
    oh, ow = (out, out) if isinstance(out, int) else (out[0] or 8, out[1] or 9)
    close(F.adaptive_avg_pool2d(t64(x), out), adaptive_avg_ref(x, oh, ow))
    close(nn.AdaptiveAvgPool2d(out)(t64(x[0])), adaptive_avg_ref(x[0], oh, ow))


def test_adaptive_avg_pool_gradients_and_names():
    for out in ((2, 2), (3, 2), 1):
        assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, out), (rnd(1, 2, 4, 5, grad=True),))
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    assert F.adaptive_avg_pool2d(x, 2).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F.adaptive_avg_pool2d(x, 1).grad_fn.name() == "MeanBackward1"
    assert tuple(F.adaptive_avg_pool2d(torch.randn(2, 4, 7, 7), 0).shape) == (2, 4, 0, 0)
    close(F.adaptive_avg_pool1d(t64([[1., 2., 3., 4., 5.]]), 2), [[2.0, 4.0]])


POOL_ERRORS = [  # observed in PyTorch 2.13.0
    (lambda: F.max_pool2d(torch.randn(2, 4, 7, 7), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     "dilation=1"),
    (lambda: F.max_pool2d(torch.randn(2, 4, 7, 7), 9), RuntimeError,
     "Given input size: (4x7x7). Calculated output size: (4x0x0). Output size is too small"),
    (lambda: F.max_pool2d(torch.randn(3, 4), 2), RuntimeError,
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda: F.max_pool2d(torch.randn(2, 4, 7, 7), 2, stride=0), RuntimeError,
     "stride should not be zero"),
    (lambda: F.avg_pool2d(torch.randn(2, 4, 7, 7), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     "dilation=1"),
    (lambda: F.avg_pool2d(torch.randn(2, 4, 7, 7), 9), RuntimeError,
     "Given input size: (4x7x7). Calculated output size: (4x0x0). Output size is too small"),
    (lambda: F.avg_pool2d(torch.randn(1, 1, 4, 4), 2, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    (lambda: F.adaptive_avg_pool2d(torch.randn(3, 4), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [3, 4]"),
    (lambda: F.adaptive_avg_pool2d(torch.randn(2, 4, 7, 7), (2, 3, 4)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    (lambda: F.max_pool1d(torch.randn(2, 3, 9), 2, padding=2), RuntimeError,
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and "
     "kernel_size=2"),
    (lambda: F.max_pool1d(torch.randn(2, 3, 1), 2), RuntimeError,
     "max_pool1d() Invalid computed output size: 0"),
    (lambda: F.max_pool1d(torch.randn(3), 2), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
     "input, but got:[3]"),
    (lambda: F.avg_pool1d(torch.randn(3), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while "
     "checking arguments for avg_pool1d)"),
]


@pytest.mark.parametrize("i", range(len(POOL_ERRORS)))
def test_pool_errors(i):
    call, err, msg = POOL_ERRORS[i]
    with pytest.raises(err) as info:
        call()
    assert str(info.value) == msg


# ================================================================ activations

@pytest.mark.parametrize("name", sorted(ACT_REF))
def test_activation_values(name):
    fn, ref = ACT_REF[name]
    x = np.concatenate([np.linspace(-8, 8, 161), [-50.0, -25.0, 25.0, 50.0, 0.0]])
    close(fn(t64(x)), ref(x), rtol=1e-12, atol=1e-14)
    # float32 stays float32
    assert fn(torch.tensor(x.astype(np.float32))).dtype is torch.float32


@pytest.mark.parametrize("name", sorted(ACT_REF))
def test_activation_gradcheck(name):
    fn, _ = ACT_REF[name]
    # points away from every kink and threshold
    x = t64([-3.7, -2.2, -0.7, -0.2, 0.35, 0.9, 1.3, 2.6, 3.3, 4.1, 7.0], grad=True)
    assert gradcheck(fn, (x,))


# gradients at the kinks, observed in PyTorch 2.13.0
KINKS = [
    (lambda x: F.leaky_relu(x, 0.2), [0.0], [0.2]),
    (lambda x: F.elu(x, 0.5), [0.0], [0.5]),
    (F.hardtanh, [-1.0, 1.0, 0.5], [0.0, 0.0, 1.0]),
    (F.relu6, [0.0, 6.0], [0.0, 0.0]),
    (lambda x: F.softplus(x, 2.0, 10.0), [5.0, 5.0000001, 4.99999],
     [0.9999546021312976, 1.0, 0.9999546012233723]),
    (F.relu, [0.0], [0.0]),
    (F.gelu, [0.0], [0.5]),
    (F.silu, [0.0], [0.5]),
    (lambda x: F.threshold(x, 0.5, 2.0), [0.5], [0.0]),
    (F.hardswish, [-3.0, 3.0, 0.0], [0.0, 1.0, 0.5]),
    (F.hardsigmoid, [-3.0, 3.0], [0.0, 0.0]),
]


@pytest.mark.parametrize("i", range(len(KINKS)))
def test_gradients_at_kinks(i):
    fn, pts, want = KINKS[i]
    x = t64(pts, grad=True)
    fn(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-9)


def test_softplus_observed_values():
    got = F.softplus(torch.tensor([20.0, 20.01, -100.0])).numpy()
    np.testing.assert_allclose(got, [20.0, 20.01, 3.7835e-44], rtol=1e-4)


def test_inplace_activations():
    x = torch.randn(5)
    y = x.clone()
    assert F.relu(y, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), 0))
    y = x.clone()
    assert nn.LeakyReLU(0.5, inplace=True)(y) is y
    np.testing.assert_allclose(y.numpy(), np.where(x.numpy() > 0, x.numpy(), 0.5 * x.numpy()))
    y = x.clone()
    assert F.hardtanh(y, -0.1, 0.1, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), np.clip(x.numpy(), np.float32(-0.1), np.float32(0.1)))
    y = x.clone()
    assert F.elu(y, inplace=True) is y and F.silu(y, inplace=True) is y
    # an in-place activation on a non-leaf keeps the gradient right
    a = torch.randn(4, dtype=D64, requires_grad=True)
    b = a * 2
    F.relu(b, inplace=True).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.where(a.detach().numpy() > 0, 2.0, 0.0))


@pytest.mark.parametrize("make", [
    lambda: nn.Sequential(nn.Conv2d(2, 3, 3, bias=False), nn.ReLU(inplace=True)),
    lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.MaxPool2d(2), nn.ReLU(inplace=True)),
    lambda: nn.Sequential(nn.Conv1d(2, 3, 3), nn.LeakyReLU(0.1, inplace=True)),
    lambda: nn.Sequential(nn.Flatten(), nn.Linear(72, 4, bias=False), nn.ReLU(inplace=True),
                          nn.Dropout(0.0, inplace=True)),
])
def test_inplace_layers_after_conv_pool_linear(make):
    # PyTorch allows ReLU(inplace=True) right after these layers; gradients are unchanged
    torch.manual_seed(2)
    net = make().double()
    x = torch.randn(2, 2, 6, 6, dtype=D64)
    if isinstance(net[0], nn.Conv1d):
        x = x[:, :, 0]
    net(x).sum().backward()
    got = [p.grad.numpy().copy() for p in net.parameters()]
    net.zero_grad()
    for m in net:
        if hasattr(m, "inplace"):
            m.inplace = False
    net(x).sum().backward()
    for g, p in zip(got, net.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-12)


def test_activation_errors():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
        F.gelu(torch.randn(2), approximate="foo")
    with pytest.raises(NotImplementedError, match="\"leaky_relu_cpu\" not implemented for "
                                                  "'Long'"):
        F.leaky_relu(torch.tensor([1, -2]))
    with pytest.raises(NotImplementedError, match="\"elu_cpu\" not implemented for 'Long'"):
        F.elu(torch.tensor([1, -2]))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(torch.randn(2), 2, 1)
    with pytest.raises(AssertionError, match=r"max_val \(0\) must be greater than min_val \(1\)"):
        nn.Hardtanh(1, 0)
    # relu keeps integer dtypes
    assert F.relu(torch.tensor([1, -2, 3])).tolist() == [1, 0, 3]


def test_erf_primitive_against_libm():
    """erf's eager implementation (series below 2.5, continued fraction above) is within a few
    ulp of libm over the whole line, including its edges."""
    erf = make_table(np)["erf"]
    x = np.concatenate([np.linspace(-7, 7, 20001), np.logspace(-300, 1.5, 400),
                        -np.logspace(-300, 1.5, 400), [0.0, 2.5, -2.5, 2.5000001, 30.0]])
    want = ERF(x)
    np.testing.assert_allclose(erf(x), want, rtol=2e-15, atol=0)
    special = erf(np.array([np.inf, -np.inf, np.nan, -0.0]))
    assert special[0] == 1.0 and special[1] == -1.0 and np.isnan(special[2])
    assert np.signbit(special[3])
    assert erf(np.float32([0.5])).dtype == np.float32
    np.testing.assert_allclose(torch.erf(t64(x[:50])).numpy(), want[:50], rtol=2e-15)
    assert gradcheck(torch.erf, (t64([-3.1, -0.4, 0.0, 0.7, 2.9], grad=True),))
    assert gradcheck(torch.log1p, (t64([-0.5, 1e-3, 2.0], grad=True),))
    assert gradcheck(torch.expm1, (t64([-2.0, 1e-3, 1.5], grad=True),))
    assert torch.log1p(t64([1e-20])).item() == 1e-20
    assert torch.expm1(t64([1e-20])).item() == 1e-20


# ================================================================ softmax

def logsumexp_ref(x, axis):
    return np.logaddexp.reduce(x, axis=axis, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_stable(dim):
    x = np.random.randn(3, 4) * 5
    x[0, 0], x[1, 1], x[2, :] = 1000.0, -1000.0, [800.0, 801.0, -800.0, 700.0]
    want_log = x - logsumexp_ref(x, dim)
    close(F.log_softmax(t64(x), dim), want_log, rtol=1e-12, atol=1e-12)
    close(F.softmax(t64(x), dim), np.exp(want_log), rtol=1e-12, atol=1e-300)
    # float32 with large inputs: no overflow, no nan
    got = F.softmax(torch.tensor(x.astype(np.float32)), dim).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, np.exp(want_log), rtol=1e-5, atol=1e-6)


def test_softmax_observed_values():
    # observed in PyTorch 2.13.0
    x = t64([[1000., 0., -1000.], [-1e308, 5., 5.]])
    close(F.softmax(x, 1), [[1., 0., 0.], [0., .5, .5]], 0, 1e-300)
    close(F.log_softmax(x, 1), [[0., -1000., -2000.], [-1e308, -math.log(2), -math.log(2)]],
          1e-15, 0)
    x = torch.tensor([float("-inf"), 0., 1.], requires_grad=True)
    y = F.log_softmax(x, 0)
    y[1].backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.7311, -0.7311], atol=1e-4)
    assert np.isnan(F.softmax(torch.tensor([float("-inf")] * 2), 0).numpy()).all()
    assert F.softmax(torch.tensor(3.), 0).item() == 1.0
    assert F.log_softmax(torch.tensor(3.), 0).item() == 0.0
    assert tuple(F.softmax(torch.randn(0, 3), 1).shape) == (0, 3)


def test_softmax_gradients():
    x = rnd(3, 4, grad=True)
    for fn in (lambda a: F.softmax(a, 1), lambda a: F.log_softmax(a, 0),
               lambda a: F.softmin(a, 1), lambda a: F.log_softmax(a * 300, -1)):
        assert gradcheck(fn, (x,))
    assert F.softmax(x, 1).grad_fn.name() == "SoftmaxBackward0"
    assert F.log_softmax(x, 1).grad_fn.name() == "LogSoftmaxBackward0"


def test_softmax_implicit_dim_and_dtype():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been "
                                         "deprecated. Change the call to include dim=X as an "
                                         "argument."):
        r = F.softmax(torch.randn(3, 4))
    np.testing.assert_allclose(r.sum(1).numpy(), 1.0, rtol=1e-6)  # dim 1 for 2-d input
    with pytest.warns(UserWarning):
        r = nn.LogSoftmax()(torch.randn(2, 3, 4))
    np.testing.assert_allclose(np.exp(r.numpy()).sum(0), 1.0, rtol=1e-5)  # dim 0 for 3-d
    assert F.softmax(torch.randn(3), 0, dtype=torch.float64).dtype is torch.float64
    with pytest.raises(NotImplementedError, match="\"softmax_lastdim_kernel_impl\" not "
                                                  "implemented for 'Long'"):
        F.softmax(torch.tensor([1, 2, 3]), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        F.softmax(torch.randn(3, 4), dim=2)


def test_softmax_traces_to_a_rerunnable_graph():
    # the max is taken under no_grad, which still records: a captured graph reproduces it
    from fusetorch.tracer import capture, run
    g, _ = capture(lambda a: F.log_softmax(a, 1), torch.randn(2, 3))
    x = torch.randn(2, 3) * 100
    (y,) = run(g, x)
    np.testing.assert_allclose(y.numpy(), F.log_softmax(x, 1).numpy(), rtol=1e-6)


# ================================================================ dropout

def test_dropout_training_scales_and_drops():
    x = torch.ones(200, 100)
    y = F.dropout(x, 0.3, training=True)
    vals = np.unique(y.numpy())
    np.testing.assert_allclose(vals, [0.0, np.float32(1.0) / np.float32(0.7)])
    frac = (y.numpy() == 0).mean()
    assert abs(frac - 0.3) < 5 * math.sqrt(0.3 * 0.7 / x.numel())
    # the gradient is the same mask and scale
    a = torch.randn(50, 40, dtype=D64, requires_grad=True)
    out = F.dropout(a, 0.5)
    out.sum().backward()
    kept = out.detach().numpy() != 0
    np.testing.assert_array_equal(a.grad.numpy(), np.where(kept, 2.0, 0.0))
    np.testing.assert_allclose(out.detach().numpy()[kept], 2 * a.detach().numpy()[kept])
    assert out.grad_fn.name() == "MulBackward0"


def test_dropout_edges():
    x = torch.randn(4, 5)
    assert F.dropout(x, 0.0, True) is x
    assert F.dropout(x, 0.7, False) is x
    assert (F.dropout(x, 1.0, True).numpy() == 0).all()
    a = torch.randn(3, requires_grad=True)
    F.dropout(a, 1.0).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0, 0.0])
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, "
                                             f"but got {p}"):
            F.dropout(x, p)
        with pytest.raises(ValueError):
            nn.Dropout(p)


def test_dropout_module_train_eval_and_inplace():
    m = nn.Dropout(0.5)
    x = torch.ones(1000)
    assert m.training
    y = m(x)
    assert 0 < (y.numpy() == 0).sum() < 1000
    m.eval()
    assert m(x) is x
    m.train()
    z = torch.ones(1000)
    w = nn.Dropout(0.25, inplace=True)(z)
    assert w is z and set(np.unique(z.numpy())) <= {0.0, np.float32(1) / np.float32(0.75)}
    # same seed, same mask: the draws come from the global generator
    torch.manual_seed(3)
    a = F.dropout(torch.ones(50))
    torch.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), F.dropout(torch.ones(50)).numpy())


def test_feature_dropout_drops_whole_channels():
    y = F.dropout2d(torch.ones(8, 16, 3, 3), 0.5)
    per_map = y.numpy().reshape(8, 16, 9)
    assert ((per_map == 0).all(-1) | (per_map == 2).all(-1)).all()
    y = nn.Dropout1d(0.5)(torch.ones(4, 6, 5)).numpy()
    assert ((y == 0).all(-1) | (y == 2).all(-1)).all()
    assert nn.Dropout2d(0.5).eval()(y := torch.ones(2, 3, 4, 4)) is y


# ================================================================ pad

@pytest.mark.parametrize("pad", [(1, 2), (0, 1, 2, 0), (2, 1, 1, 3, 1, 0)])
def test_pad_constant(pad):
    x = np.random.randn(2, 3, 4)
    width = [(0, 0)] * 3
    for k in range(len(pad) // 2):
        width[2 - k] = (pad[2 * k], pad[2 * k + 1])
    close(F.pad(t64(x), pad, value=1.5), np.pad(x, width, constant_values=1.5))
    assert gradcheck(lambda a: F.pad(a, pad), (rnd(1, 2, 3, grad=True),))


def test_pad_negative_crops():
    x = torch.arange(3.).reshape(1, 3)
    assert F.pad(x, (-1, 2), value=5).tolist() == [[1.0, 2.0, 5.0, 5.0]]  # PyTorch 2.13.0
    assert F.pad(torch.randn(1, 3), (1, 1)).grad_fn is None


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes(mode, np_mode):
    x = np.random.randn(2, 3, 4, 5)
    close(F.pad(t64(x), (2, 1, 1, 3), mode=mode),
          np.pad(x, ((0, 0), (0, 0), (1, 3), (2, 1)), mode=np_mode))
    close(F.pad(t64(x[0]), (3, 2), mode=mode), np.pad(x[0], ((0, 0), (0, 0), (3, 2)),
                                                       mode=np_mode))
    assert gradcheck(lambda a: F.pad(a, (2, 1), mode=mode), (rnd(1, 2, 3, grad=True),))


PAD_ERRORS = [  # observed in PyTorch 2.13.0
    (lambda: F.pad(torch.randn(3, 3), (1,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda: F.pad(torch.randn(3, 3), (1, 1, 1, 1, 1, 1)), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 6 and input of dimension 2"),
    (lambda: F.pad(torch.randn(1, 3, 3), (3, 3), mode="reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: "
     "padding (3, 3) at dimension 2 of input [1, 3, 3]"),
    (lambda: F.pad(torch.randn(1, 3, 3), (1, 1, 1, 1), mode="foo"), NotImplementedError,
     "Unrecognised padding mode foo"),
    (lambda: F.pad(torch.randn(3), (1, 1), mode="replicate"), NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor.\nSupported combinations for "
     "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
     "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: "
     "padding size = 6 (pads last 3 dimensions)"),
    (lambda: F.pad(torch.randn(1, 3), (1, 1), mode="reflect", value=5), RuntimeError,
     'Padding mode "reflect" doesn\'t take in value argument'),
]


@pytest.mark.parametrize("i", range(len(PAD_ERRORS)))
def test_pad_errors(i):
    call, err, msg = PAD_ERRORS[i]
    with pytest.raises(err) as info:
        call()
    assert str(info.value) == msg


# ================================================================ flatten, modules, reprs

def test_flatten_unflatten():
    x = torch.randn(2, 3, 4, 5)
    assert tuple(nn.Flatten()(x).shape) == (2, 60)
    assert tuple(nn.Flatten(0, 2)(x).shape) == (24, 5)
    np.testing.assert_array_equal(nn.Flatten()(x).numpy(), x.numpy().reshape(2, 60))
    assert tuple(nn.Unflatten(1, (2, 5))(torch.randn(3, 10)).shape) == (3, 2, 5)
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found "
                                        "type int"):
        nn.Unflatten(1, 5)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found "
                                        "element of type float at pos 1"):
        nn.Unflatten(1, (2, 2.5))


def test_modules_match_functional():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 8, 8)
    pairs = [
        (nn.MaxPool2d(2), F.max_pool2d(x, 2)), (nn.AvgPool2d(3, 2, 1), F.avg_pool2d(x, 3, 2, 1)),
        (nn.AdaptiveAvgPool2d((3, 5)), F.adaptive_avg_pool2d(x, (3, 5))),
        (nn.ReLU(), F.relu(x)), (nn.LeakyReLU(0.3), F.leaky_relu(x, 0.3)),
        (nn.Sigmoid(), torch.sigmoid(x)), (nn.Tanh(), torch.tanh(x)), (nn.GELU(), F.gelu(x)),
        (nn.GELU("tanh"), F.gelu(x, approximate="tanh")), (nn.ELU(0.3), F.elu(x, 0.3)),
        (nn.Softplus(2, 5), F.softplus(x, 2, 5)), (nn.SiLU(), F.silu(x)),
        (nn.Softmax(1), F.softmax(x, 1)), (nn.LogSoftmax(-1), F.log_softmax(x, -1)),
        (nn.Hardtanh(-0.5, 0.5), F.hardtanh(x, -0.5, 0.5)), (nn.ReLU6(), F.relu6(x)),
    ]
    for m, want in pairs:
        np.testing.assert_array_equal(m(x).numpy(), want.numpy(), err_msg=repr(m))
    v, i = nn.MaxPool2d(2, return_indices=True)(x)
    assert tuple(i.shape) == (2, 3, 4, 4)


def test_grad_fn_names():
    # observed in PyTorch 2.13.0
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    w, b = torch.randn(4, 3, 3, 3, requires_grad=True), torch.randn(4, requires_grad=True)
    v, W, B = (torch.randn(5, 6, requires_grad=True), torch.randn(7, 6, requires_grad=True),
               torch.randn(7, requires_grad=True))
    names = {
        "ConvolutionBackward0": F.conv2d(x, w, b), "AddmmBackward0": F.linear(v, W, B),
        "MmBackward0": F.linear(v, W), "MaxPool2DWithIndicesBackward0": F.max_pool2d(x, 2),
        "AvgPool2DBackward0": F.avg_pool2d(x, 2), "ReluBackward0": F.relu(v),
        "LeakyReluBackward0": F.leaky_relu(v), "GeluBackward0": F.gelu(v),
        "EluBackward0": F.elu(v), "SoftplusBackward0": F.softplus(v), "SiluBackward0": F.silu(v),
        "HardtanhBackward0": F.hardtanh(v), "ConstantPadNdBackward0": F.pad(v, (1, 1)),
        "SqueezeBackward1": F.max_pool1d(x[0], 2),
    }
    for name, y in names.items():
        assert y.grad_fn.name() == name
    # adaptive max pooling is its own node in PyTorch, also where its windows tile the input
    # (the evenly dividing case reuses max_pool2d's graph here)
    for size in (4, 3, (2, 4)):
        assert F.adaptive_max_pool2d(x, size).grad_fn.name() == "AdaptiveMaxPool2DBackward0"
        v2, _ = F.adaptive_max_pool2d(x, size, return_indices=True)
        assert v2.grad_fn.name() == "AdaptiveMaxPool2DBackward0"
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    conv = F.conv2d(x, w, b).grad_fn.next_functions
    assert [type(f).__name__ for f, _ in conv] == ["AccumulateGrad"] * 3
    assert F.conv2d(x, w).grad_fn.next_functions[2][0] is None
    assert type(F.linear(v, W, B).grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"


REPRS = [  # printed by PyTorch 2.13.0
    (lambda: nn.Linear(1000, 100), "Linear(in_features=1000, out_features=100, bias=True)"),
    (lambda: nn.Linear(3, 4, bias=False), "Linear(in_features=3, out_features=4, bias=False)"),
    (lambda: nn.Bilinear(2, 3, 4), "Bilinear(in1_features=2, in2_features=3, out_features=4, "
                                   "bias=True)"),
    (lambda: nn.Identity(), "Identity()"),
    (lambda: nn.Conv1d(3, 6, 3), "Conv1d(3, 6, kernel_size=(3,), stride=(1,))"),
    (lambda: nn.Conv1d(3, 6, 3, stride=2, padding=1, dilation=2, groups=3, bias=False),
     "Conv1d(3, 6, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), groups=3, "
     "bias=False)"),
    (lambda: nn.Conv2d(1, 6, 5), "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))"),
    (lambda: nn.Conv2d(4, 8, (3, 5), stride=1, padding="same", dilation=2, groups=2),
     "Conv2d(4, 8, kernel_size=(3, 5), stride=(1, 1), padding=same, dilation=(2, 2), groups=2)"),
    (lambda: nn.Conv2d(4, 8, 3, padding="valid"),
     "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=valid)"),
    (lambda: nn.Conv2d(4, 8, 3, padding=(1, 2)),
     "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 2))"),
    (lambda: nn.Conv2d(4, 8, 3, padding=1, padding_mode="reflect"),
     "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), padding_mode=reflect)"),
    (lambda: nn.MaxPool2d(2),
     "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (lambda: nn.MaxPool2d((2, 3), stride=1, padding=1, dilation=2, ceil_mode=True,
                          return_indices=True),
     "MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=2, ceil_mode=True)"),
    (lambda: nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=2),
     "AvgPool2d(kernel_size=3, stride=2, padding=1)"),
    (lambda: nn.AdaptiveAvgPool2d((5, 7)), "AdaptiveAvgPool2d(output_size=(5, 7))"),
    (lambda: nn.AdaptiveAvgPool2d((None, 3)), "AdaptiveAvgPool2d(output_size=(None, 3))"),
    (lambda: nn.MaxPool1d(3), "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, "
                              "ceil_mode=False)"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (lambda: nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (lambda: nn.Unflatten(1, (2, 5)), "Unflatten(dim=1, unflattened_size=(2, 5))"),
    (lambda: nn.Dropout(), "Dropout(p=0.5, inplace=False)"),
    (lambda: nn.Dropout(0.2, True), "Dropout(p=0.2, inplace=True)"),
    (lambda: nn.Dropout2d(), "Dropout2d(p=0.5, inplace=False)"),
    (lambda: nn.ReLU(), "ReLU()"), (lambda: nn.ReLU(True), "ReLU(inplace=True)"),
    (lambda: nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (lambda: nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (lambda: nn.Sigmoid(), "Sigmoid()"), (lambda: nn.Tanh(), "Tanh()"),
    (lambda: nn.GELU(), "GELU(approximate='none')"),
    (lambda: nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (lambda: nn.ELU(), "ELU(alpha=1.0)"),
    (lambda: nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"),
    (lambda: nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (lambda: nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)"),
    (lambda: nn.SiLU(), "SiLU()"), (lambda: nn.SiLU(True), "SiLU(inplace=True)"),
    (lambda: nn.Softmax(dim=1), "Softmax(dim=1)"), (lambda: nn.Softmax(), "Softmax(dim=None)"),
    (lambda: nn.LogSoftmax(1), "LogSoftmax(dim=1)"),
    (lambda: nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (lambda: nn.Hardtanh(-2, 3, True), "Hardtanh(min_val=-2, max_val=3, inplace=True)"),
    (lambda: nn.ReLU6(), "ReLU6()"), (lambda: nn.Mish(), "Mish()"),
    (lambda: nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (lambda: nn.Softmin(1), "Softmin(dim=1)"), (lambda: nn.SELU(), "SELU()"),
    (lambda: nn.AdaptiveAvgPool1d(4), "AdaptiveAvgPool1d(output_size=4)"),
]


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_reprs(i):
    make, want = REPRS[i]
    assert repr(make()) == want


def test_lenet_repr_and_training_step():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = x.view(-1, 16 * 5 * 5)
            return self.fc2(F.relu(self.fc1(x)))

    net = Net()
    assert repr(net) == (
        "Net(\n  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))\n"
        "  (pool): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "  (conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))\n"
        "  (fc1): Linear(in_features=400, out_features=120, bias=True)\n"
        "  (fc2): Linear(in_features=120, out_features=10, bias=True)\n)")
    assert [n for n, _ in net.named_parameters()] == [
        "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias",
        "fc2.weight", "fc2.bias"]
    x = torch.randn(4, 1, 32, 32)
    target = torch.randn(4, 10)
    losses = []
    for _ in range(5):
        out = net(x)
        loss = ((out - target) ** 2).mean()
        net.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= 0.05 * p.grad
        losses.append(loss.item())
    assert all(p.grad is not None for p in net.parameters())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("fn", [
    lambda t: F.elu(t, inplace=True), lambda t: F.selu(t, inplace=True),
    lambda t: F.celu(t, 0.7, inplace=True), lambda t: F.hardswish(t, inplace=True),
    lambda t: t.clamp_(torch.full_like(t, -0.5), torch.full_like(t, 0.8)),
])
def test_in_place_composites_on_non_leaves_differentiate(fn):
    # the composite's inner ops saved the input that the in-place write then overwrites
    x = torch.tensor([-1.3, -0.4, 0.2, 0.9, 2.5], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: fn(a * 1), (x,))


def _circular_reference(a, pads):
    """numpy: crop each dim by its negative pads, then wrap the rest by the positive ones."""
    for k in range(len(pads) // 2):
        d, left, right = a.ndim - 1 - k, pads[2 * k], pads[2 * k + 1]
        n = a.shape[d]
        core = np.take(a, np.arange(max(-left, 0), n - max(-right, 0)), axis=d)
        m = core.shape[d]
        a = np.take(core, np.arange(-max(left, 0), m + max(right, 0)) % m, axis=d)
    return a


@pytest.mark.parametrize("pads", [(-1, 1, -2, 1), (1, -1, 2, -2), (-2, 3, 0, 0),
                                  (-1, -1, 1, 1), (0, 0, -3, 2), (-1, 4, 0, 0)])
def test_circular_pad_with_negative_pads_wraps_the_cropped_tensor(pads):
    """PyTorch crops first and wraps around what is left ([1, 3, 4, 4], (-1, 1, -2, 1): 18 of
    36 values were wrong); the gradient adds back into the copied positions."""
    a = np.arange(48.0).reshape(1, 3, 4, 4)
    got = F.pad(torch.tensor(a), pads, mode="circular")
    np.testing.assert_array_equal(got.numpy(), _circular_reference(a, pads))
    assert gradcheck(lambda t: F.pad(t, pads, mode="circular"),
                     (torch.tensor(a[:, :1], requires_grad=True),))


def test_circular_pad_refuses_a_left_wrap_longer_than_the_cropped_dim():
    """PyTorch copies uninitialised memory there; refused with its wrap-around error."""
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(torch.zeros(1, 1, 4), (3, -2), mode="circular")


def test_adaptive_avg_pool2d_to_one_by_one_is_a_mean_for_any_rank():
    # ATen's shortcut comes before its 3-d/4-d check (checked by hand against PyTorch 2.13):
    # [2, 2] -> [1, 1], [1, 2, 3, 4, 5] -> [1, 2, 3, 1, 1], a 1-d input is mean's IndexError,
    # a tuple longer than the input stays the Python wrapper's ValueError
    x = np.arange(120.0).reshape(1, 2, 3, 4, 5)
    for shape in [(2, 2), (1, 2, 3, 4, 5), (3, 4, 5)]:
        a = x.reshape(-1)[:int(np.prod(shape))].reshape(shape)
        for size in (1, (1, 1)):
            if size == (1, 1) and len(shape) <= 2:
                with pytest.raises(ValueError, match="Input dimension should be at least 3"):
                    torch.nn.functional.adaptive_avg_pool2d(torch.tensor(a), size)
                continue
            got = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(a), size)
            np.testing.assert_allclose(got.numpy(), a.mean((-2, -1), keepdims=True))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.nn.functional.adaptive_avg_pool2d(torch.ones(3), 1)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        torch.nn.functional.adaptive_avg_pool2d(torch.ones(2, 2), 2)


def _f16(v):
    return np.asarray(v, dtype=np.float16).astype(np.float64)


def test_half_activations_compute_in_float32_and_round_once():
    # ATen's CPU kernels compute a float16/bfloat16 input in float32: the float64 value
    # rounded to half is within a half ulp of theirs, where rounding every step lost it
    x16 = np.linspace(-4, 1, 41).astype(np.float16)
    a = x16.astype(np.float64)
    sp = lambda v, b=1.0, t=20.0: np.where(b * v > t, v, np.log1p(np.exp(b * v)) / b)  # noqa
    s_a, s_s = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    refs = {
        "gelu": (lambda x: F.gelu(x, approximate="tanh"),
                 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
        "elu": (lambda x: F.elu(x, 0.8), np.where(a <= 0, 0.8 * np.expm1(a), a)),
        "celu": (lambda x: F.celu(x, 0.8), np.where(a <= 0, 0.8 * np.expm1(a / 0.8), a)),
        "selu": (F.selu, s_s * np.where(a <= 0, s_a * np.expm1(a), a)),
        "softplus": (lambda x: F.softplus(x, 3, 0.2), sp(a, 3.0, 0.2)),
        "mish": (F.mish, a * np.tanh(sp(a))),
    }
    for name, (fn, ref) in refs.items():
        for d, rtol in ((torch.float16, 2 ** -11), (torch.bfloat16, 2 ** -8)):
            out = fn(torch.tensor(x16).to(d))
            assert out.dtype is d, name
            got = out.double().numpy()
            # one rounding: at most half an ulp of the result's binade (plus subnormals' step)
            np.testing.assert_allclose(got, ref, rtol=rtol * 1.01, atol=2 ** -24, err_msg=name)
    z = F.gelu(torch.zeros(0, 3, dtype=torch.float16), approximate="tanh")
    assert z.shape == (0, 3) and z.dtype is torch.float16
    nc = torch.tensor(np.repeat(x16[:, None], 2, 1)).t()[0]  # a strided half view
    np.testing.assert_array_equal(F.elu(nc, 0.8).double().numpy(),
                                  F.elu(torch.tensor(x16), 0.8).double().numpy())


def test_half_adaptive_avg_pool2d_rounds_once():
    # ATen's 2-d kernel sums each window in float32 and divides before the one rounding
    r = np.random.default_rng(4)
    a = r.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float16)
    for d, eps in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        x = torch.tensor(a).to(d)
        src = x.double().numpy()
        for oh, ow in ((5, 7), (4, 4), (3, 8)):
            got = F.adaptive_avg_pool2d(x, (oh, ow))
            assert got.dtype is d
            ref = np.empty((2, 3, oh, ow))
            for i in range(oh):
                for j in range(ow):
                    h0, h1 = i * 8 // oh, -(-(i + 1) * 8 // oh)
                    w0, w1 = j * 8 // ow, -(-(j + 1) * 8 // ow)
                    ref[..., i, j] = src[..., h0:h1, w0:w1].mean((-2, -1))
            np.testing.assert_allclose(got.double().numpy(), ref, rtol=eps * 1.01,
                                       atol=2.0 ** -24)
        nc = F.adaptive_avg_pool2d(x.transpose(2, 3), (5, 7))  # a non-contiguous input
        assert nc.shape == (2, 3, 5, 7)
