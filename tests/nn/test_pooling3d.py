"""3-d pooling, max unpooling, conv_transpose3d, channel_shuffle and the 1-d/3-d power-average
pools against float64 numpy references written from PyTorch's definitions (window loops), and
their gradients against central differences."""
import itertools

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


def _out(n, k, s, p, d, ceil):
    span = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = span // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _max_pool3d_ref(x, k, s, p, d, ceil):
    """PyTorch's CPU kernel: per window, from -inf at its first inside element, take an
    element if it is greater or NaN; the index is into the flattened input volume."""
    n, c = x.shape[:2]
    size = x.shape[2:]
    out = [_out(size[i], k[i], s[i], p[i], d[i], ceil) for i in range(3)]
    vals = np.zeros((n, c, *out))
    idx = np.zeros((n, c, *out), np.int64)
    for b, ch, *o in itertools.product(range(n), range(c), *map(range, out)):
        best, at = -np.inf, None
        for w in itertools.product(*map(range, k)):
            pos = [o[i] * s[i] - p[i] + w[i] * d[i] for i in range(3)]
            if not all(0 <= pos[i] < size[i] for i in range(3)):
                continue
            v = x[b, ch, pos[0], pos[1], pos[2]]
            flat = (pos[0] * size[1] + pos[1]) * size[2] + pos[2]
            if at is None:
                at = flat
            if v > best or np.isnan(v):
                best, at = v, flat
        vals[b, ch][tuple(o)] = best
        idx[b, ch][tuple(o)] = at
    return vals, idx


def _avg_pool3d_ref(x, k, s, p, ceil, count_include_pad, divisor=None):
    n, c = x.shape[:2]
    size = x.shape[2:]
    out = [_out(size[i], k[i], s[i], p[i], 1, ceil) for i in range(3)]
    r = np.zeros((n, c, *out))
    for o in itertools.product(*map(range, out)):
        start = [o[i] * s[i] - p[i] for i in range(3)]
        end = [min(start[i] + k[i], size[i] + p[i]) for i in range(3)]
        pool = np.prod([end[i] - start[i] for i in range(3)])
        lo = [max(v, 0) for v in start]
        hi = [min(end[i], size[i]) for i in range(3)]
        total = x[:, :, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].sum((2, 3, 4))
        div = divisor or (pool if count_include_pad else np.prod([h - a for h, a in zip(hi, lo)]))
        r[(slice(None), slice(None)) + o] = total / div
    return r


def _cells(n, o):
    return [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]


def _adaptive_ref(x, out, fn):
    size = x.shape[2:]
    r = np.zeros(x.shape[:2] + tuple(out))
    for (i, (a0, a1)), (j, (b0, b1)), (m, (c0, c1)) in itertools.product(
            *[enumerate(_cells(n, o)) for n, o in zip(size, out)]):
        r[:, :, i, j, m] = fn(x[:, :, a0:a1, b0:b1, c0:c1].reshape(x.shape[:2] + (-1,)), -1)
    return r


RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 5, 6, 7))


@pytest.mark.parametrize("k,s,p,d,ceil", [
    ((2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), False),
    ((2, 3, 2), (1, 2, 3), (1, 1, 0), (2, 1, 1), True),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), False),
    ((3, 1, 2), (1, 1, 1), (1, 0, 1), (1, 1, 1), True)])
def test_max_pool3d_values_indices_and_gradient_follow_pytorchs_window_scan(k, s, p, d, ceil):
    x = X.copy()
    x[0, 0, 0, 0, :2] = np.nan
    x[1, 1, 1, :2, :2] = 0.25  # ties: the first in scan order wins
    want, want_idx = _max_pool3d_ref(x, k, s, p, d, ceil)
    t = torch.tensor(x, requires_grad=True)
    v, i = F.max_pool3d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)
    np.testing.assert_array_equal(v.detach().numpy(), want)
    np.testing.assert_array_equal(i.numpy(), want_idx)
    g = RNG.standard_normal(want.shape)
    (v * torch.tensor(g)).sum().backward()
    expect = np.zeros((2, 3, x[0, 0].size))
    for b, c in itertools.product(range(2), range(3)):
        np.add.at(expect[b, c], want_idx[b, c].ravel(), g[b, c].ravel())
    np.testing.assert_allclose(t.grad.numpy(), expect.reshape(x.shape), rtol=1e-12)


@pytest.mark.parametrize("k,s,p,d,ceil", [
    ((2, 3, 2), (1, 2, 3), (1, 1, 0), (2, 1, 1), True),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), False)])
def test_max_pool3d_primitives_equal_their_compositions(k, s, p, d, ceil):
    """The max_pool3d primitives' eager scan and their compositions (what compiled graphs
    run: passes.decompose), values, indices and the gradient primitive, on NaN and ties."""
    from fusetorch.ir import dtypes as dts
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.ir.passes import decompose
    from fusetorch.runtime.eager import make_table
    from fusetorch.runtime.runner import run_graph
    x = X.copy()
    x[0, 0, 0, 0, :2] = np.nan
    x[1, 1, 1, :2, :2] = 0.25
    want, want_idx = _max_pool3d_ref(x, k, s, p, d, ceil)
    g = RNG.standard_normal(want.shape)
    expect = np.zeros((2, 3, x[0, 0].size))
    for b, c in itertools.product(range(2), range(3)):
        np.add.at(expect[b, c], want_idx[b, c].ravel(), g[b, c].ravel())
    attrs = {"kernel": k, "stride": s, "padding": p, "dilation": d, "ceil_mode": ceil}
    xin = make_node("input", [], {"shape": x.shape, "dtype": dts.float64})
    gin = make_node("input", [], {"shape": want.shape, "dtype": dts.float64})
    graph = Graph([xin, gin], [make_node("max_pool3d", [xin], attrs),
                               make_node("max_pool3d_index", [xin], attrs),
                               make_node("max_pool3d_grad", [xin, gin], attrs)])
    composed = decompose(graph)
    assert not any(n.op.startswith("max_pool3d") for n in composed.nodes)
    for gr in (graph, composed):
        v, i, grad = run_graph(gr, [x, g], make_table(np), np)
        np.testing.assert_array_equal(v, want)
        np.testing.assert_array_equal(i, want_idx)
        np.testing.assert_allclose(grad, expect.reshape(x.shape), rtol=1e-12, atol=1e-15)


def test_max_pool3d_of_an_all_minus_inf_window_points_inside_and_ints_pool_in_ints():
    x = torch.full((1, 1, 3, 3, 3), -float("inf"))
    _, i = F.max_pool3d(x, 2, 2, 1, return_indices=True)
    # windows start at -1 (first inside element 0) and 1 along each dim: never the padding
    assert i.flatten().tolist() == [(a * 3 + b) * 3 + c for a in (0, 1) for b in (0, 1)
                                    for c in (0, 1)]
    xi = torch.tensor(RNG.integers(-9, 9, (1, 2, 4, 4, 4)))
    v, i = F.max_pool3d(xi, 2, return_indices=True)
    want, want_idx = _max_pool3d_ref(xi.numpy().astype(np.float64), (2,) * 3, (2,) * 3, (0,) * 3,
                                     (1,) * 3, False)
    assert v.dtype == torch.int64
    np.testing.assert_array_equal(v.numpy(), want)
    np.testing.assert_array_equal(i.numpy(), want_idx)


@pytest.mark.parametrize("k,s,p,ceil,cip,div", [
    ((2, 2, 2), (2, 2, 2), (0, 0, 0), False, True, None),
    ((2, 3, 2), (1, 2, 3), (1, 1, 0), True, True, None),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), True, False, None),
    ((2, 2, 2), (1, 1, 1), (1, 1, 1), False, True, 3)])
def test_avg_pool3d_divides_by_pytorchs_divisor(k, s, p, ceil, cip, div):
    want = _avg_pool3d_ref(X, k, s, p, ceil, cip, div)
    got = F.avg_pool3d(torch.tensor(X), k, s, p, ceil, cip, div)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("out", [(2, 3, 4), (3, 6, 5), (4, 4, 5), (1, 2, 7)])
def test_adaptive_pools_use_pytorchs_cells(out):
    x = torch.tensor(X)
    np.testing.assert_allclose(F.adaptive_avg_pool3d(x, out).numpy(),
                               _adaptive_ref(X, out, np.mean), rtol=1e-12)
    np.testing.assert_array_equal(F.adaptive_max_pool3d(x, out).numpy(),
                                  _adaptive_ref(X, out, np.max))


def test_adaptive_average_pooling_keeps_a_nan_in_its_own_cells():
    # an averaging matrix multiplies every input by a weight, 0 * NaN included: before, one NaN
    # made every output cell of its row NaN
    x = X.copy()
    x[0, 0, 0, 0, 0] = np.nan
    got = F.adaptive_avg_pool3d(torch.tensor(x), (2, 3, 4)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(_adaptive_ref(x, (2, 3, 4), np.mean)))
    assert np.isnan(got).sum() == 1
    got2 = F.adaptive_avg_pool2d(torch.tensor(x[:, :, 0]), (4, 5)).numpy()
    assert np.isnan(got2).sum() == 1


def test_gradients_match_central_differences():
    x = torch.tensor(RNG.permutation(2 * 2 * 4 * 3 * 5).reshape(2, 2, 4, 3, 5) / 7.0,
                     requires_grad=True)
    for fn in (lambda t: F.max_pool3d(t, 2, 1, 1), lambda t: F.avg_pool3d(t, 3, 2, 1, True, False),
               lambda t: F.adaptive_avg_pool3d(t, (3, 2, 4)),
               lambda t: F.adaptive_max_pool3d(t, (3, 2, 4)),
               lambda t: F.lp_pool3d(t.abs() + 1, 2.0, 2),
               lambda t: F.lp_pool1d(t[:, :, 0, 0].abs() + 1, 3.0, 2),
               lambda t: F.channel_shuffle(t, 2)):
        assert torch.autograd.gradcheck(fn, (x,))


def test_max_unpool_inverts_max_pool_where_it_kept_values():
    x = torch.tensor(X)
    for nd, sample in ((1, x[:, :, 0, 0]), (2, x[:, :, 0]), (3, x)):
        v, i = getattr(F, f"max_pool{nd}d")(sample, 2, return_indices=True)
        r = getattr(F, f"max_unpool{nd}d")(v, i, 2, output_size=sample.shape[2:])
        flat = np.zeros(sample.shape[:2] + (np.prod(sample.shape[2:]),))
        for b, c in itertools.product(range(2), range(3)):
            flat[b, c, i.numpy()[b, c].ravel()] = v.numpy()[b, c].ravel()
        np.testing.assert_array_equal(r.numpy(), flat.reshape(sample.shape))
        assert getattr(nn, f"MaxUnpool{nd}d")(2)(v, i, output_size=sample.shape).shape == \
            sample.shape


def test_max_unpool_errors_are_pytorchs():
    v, i = F.max_pool2d(torch.tensor(X[:, :, 0]), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="Found an invalid max index: .* of size 6x6"):
        F.max_unpool2d(v, i, 2)  # the default output is smaller than the pooled input
    bad = i.clone()
    bad[0, 0, 0, 0] = -1
    with pytest.raises(RuntimeError, match="invalid max index: -1"):
        F.max_unpool2d(v, bad, 2, output_size=(5, 7))
    with pytest.raises(RuntimeError, match="should be type int64 but got: Int"):
        F.max_unpool2d(v, i.int(), 2, output_size=(5, 7))
    with pytest.raises(RuntimeError, match="Expected shape of indices"):
        F.max_unpool2d(v, i[..., :1], 2)
    with pytest.raises(ValueError, match=r"dim 0 must be between 4 and 8"):
        F.max_unpool2d(v, i, 2, output_size=(9, 7))
    with pytest.raises(ValueError, match="2 or 4 elements"):
        F.max_unpool2d(v, i, 2, output_size=(5,))


def _conv_transpose3d_ref(x, w, b, s, p, op, g, d):
    n, cin = x.shape[:2]
    cog = w.shape[1]
    k = w.shape[2:]
    out = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1
           for i in range(3)]
    full = np.zeros((n, cog * g) + tuple(o + 2 * pp for o, pp in zip(out, p)))
    cig = cin // g
    for ci, pos in itertools.product(range(cin), itertools.product(*map(range, x.shape[2:]))):
        grp = ci // cig
        for kk in itertools.product(*map(range, k)):
            o = [pos[i] * s[i] + kk[i] * d[i] for i in range(3)]
            if any(o[i] >= full.shape[2 + i] for i in range(3)):
                continue
            full[:, grp * cog:(grp + 1) * cog, o[0], o[1], o[2]] += (
                x[:, ci, pos[0], pos[1], pos[2]][:, None] * w[ci, :, kk[0], kk[1], kk[2]])
    r = full[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1], p[2]:p[2] + out[2]]
    return r + b[None, :, None, None, None]


@pytest.mark.parametrize("s,p,op,g,d", [((1, 1, 1), (0, 0, 0), (0, 0, 0), 1, (1, 1, 1)),
                                        ((2, 1, 2), (1, 0, 1), (1, 0, 0), 2, (1, 2, 1)),
                                        ((3, 2, 1), (0, 1, 0), (2, 1, 0), 1, (1, 1, 2))])
def test_conv_transpose3d_is_the_sum_of_each_inputs_scaled_window(s, p, op, g, d):
    x = RNG.standard_normal((2, 4, 3, 2, 3))
    w = RNG.standard_normal((4, 3, 2, 3, 2))
    b = RNG.standard_normal(3 * g)
    got = F.conv_transpose3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), s, p, op, g, d)
    np.testing.assert_allclose(got.numpy(), _conv_transpose3d_ref(x, w, b, s, p, op, g, d),
                               rtol=1e-10, atol=1e-12)
    m = nn.ConvTranspose3d(4, 3 * g, (2, 3, 2), s, p, op, g, dilation=d).double()
    assert m(torch.tensor(x)).shape == got.shape


def test_conv_transpose3d_gradients_and_checks():
    args = [torch.tensor(RNG.standard_normal(shape), requires_grad=True)
            for shape in ((1, 2, 2, 3, 2), (2, 2, 2, 2, 3), (2,))]
    assert torch.autograd.gradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, (2, 1, 1), (0, 1, 0), (1, 0, 0)), args)
    with pytest.raises(RuntimeError, match="output_padding_depth: 1 output_padding_height: 1"):
        F.conv_transpose3d(torch.ones(1, 1, 2, 2, 2), torch.ones(1, 1, 2, 2, 2),
                           output_padding=1)


def test_channel_shuffle_interleaves_the_groups():
    x = np.arange(2 * 6 * 4.0).reshape(2, 6, 4)
    want = x.reshape(2, 2, 3, 4).transpose(0, 2, 1, 3).reshape(2, 6, 4)
    np.testing.assert_array_equal(F.channel_shuffle(torch.tensor(x), 2).numpy(), want)
    np.testing.assert_array_equal(nn.ChannelShuffle(2)(torch.tensor(x)).numpy(), want)
    with pytest.raises(RuntimeError, match="divisible by groups. Got 6 channels and 4 groups"):
        F.channel_shuffle(torch.tensor(x), 4)
    with pytest.raises(RuntimeError, match="> 2 dims"):
        F.channel_shuffle(torch.ones(1, 4), 2)


def test_lp_pools_are_pytorchs_formula():
    x = np.abs(X[:, :, 0, 0]) + 0.1  # [2, 3, 7]
    want = np.stack([(x[..., i:i + 3] ** 2).sum(-1) ** 0.5 for i in (0, 2, 4)], -1)
    np.testing.assert_allclose(F.lp_pool1d(torch.tensor(x), 2, 3, 2).numpy(), want, rtol=1e-12)
    v = np.abs(X[:, :, :4, :4, :4]) + 0.1
    want = (v ** 3).reshape(2, 3, 2, 2, 2, 2, 2, 2).sum((3, 5, 7)) ** (1 / 3)
    np.testing.assert_allclose(F.lp_pool3d(torch.tensor(v), 3, 2).numpy(), want, rtol=1e-12)


def test_pooling_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool3d(torch.ones(1, 1, 2, 2, 2), 3)
    with pytest.raises(RuntimeError, match=r"input image \(T: 2 H: 2 W: 2\) smaller than kernel"):
        F.avg_pool3d(torch.ones(1, 1, 2, 2, 2), 3)
    with pytest.raises(RuntimeError, match="non-empty 4D or 5D"):
        F.max_pool3d(torch.ones(3, 3, 3), 1)
    with pytest.raises(RuntimeError, match="max_pool3d: kernel_size must either be a single int"):
        F.max_pool3d(torch.ones(1, 1, 4, 4, 4), (2, 2))
    with pytest.raises(RuntimeError, match="avg_pool3d: stride must be omitted"):
        F.avg_pool3d(torch.ones(1, 1, 4, 4, 4), 2, stride=(1, 1))
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.max_pool3d(torch.ones(1, 1, 2, 2, 2), 1, dilation=0)
    with pytest.raises(NotImplementedError, match="adaptive_max_pool3d_cpu"):
        F.adaptive_max_pool3d(torch.ones(1, 1, 2, 2, 2, dtype=torch.int64), 2)
    assert F.adaptive_avg_pool3d(torch.ones(1, 2, 2), 1).shape == (1, 1, 1)  # a mean, as PyTorch


def test_dropout3d_and_feature_alpha_dropout_drop_whole_channels():
    torch.manual_seed(0)
    x = torch.ones(4, 8, 2, 3, 3)
    y = F.dropout3d(x, 0.5, True)
    per_channel = y.reshape(4, 8, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    z = F.feature_alpha_dropout(x, 0.5, True).reshape(4, 8, -1)
    assert (z == z[..., :1]).all() and len(set(z[..., 0].flatten().tolist())) == 2
    assert F.feature_alpha_dropout(x, 0.5) is x  # training defaults to False, as PyTorch
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(torch.ones(3), 0.5, True)


def _intervals_ref(u, n, o, k):
    """PyTorch's generate_intervals, written out in float32 as its kernel computes it."""
    if o == 1:
        return [n - k]
    alpha = np.float32(n - k) / np.float32(o - 1)
    return [int(np.float32(i + np.float32(u)) * alpha) - int(np.float32(u) * alpha)
            for i in range(o - 1)] + [n - k]


def test_fractional_max_pool2d_pools_pytorchs_windows():
    x = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32)
    u = RNG.random((2, 3, 2)).astype(np.float32)
    k, out = (3, 2), (4, 5)
    v, i = F.fractional_max_pool2d(torch.tensor(x), k, output_size=out, return_indices=True,
                                   _random_samples=torch.tensor(u))
    for b, c in itertools.product(range(2), range(3)):
        rows = _intervals_ref(u[b, c, 1], 9, out[0], k[0])  # sample 1: the height
        cols = _intervals_ref(u[b, c, 0], 11, out[1], k[1])
        for (a, r0), (m, c0) in itertools.product(enumerate(rows), enumerate(cols)):
            win = x[b, c, r0:r0 + k[0], c0:c0 + k[1]]
            assert v[b, c, a, m].item() == win.max()
            r, q = np.unravel_index(np.argmax(win), win.shape)
            assert i[b, c, a, m].item() == (r0 + r) * 11 + c0 + q
    t = torch.tensor(x.astype(np.float64), requires_grad=True)
    u64 = torch.tensor(u.astype(np.float64))
    assert torch.autograd.gradcheck(lambda t: F.fractional_max_pool2d(
        t, k, output_size=out, _random_samples=u64), (t,))
    m = nn.FractionalMaxPool3d(2, output_ratio=0.5)
    assert m(torch.randn(1, 2, 6, 8, 4)).shape == (1, 2, 3, 4, 2)
    with pytest.raises(RuntimeError, match="pool height 4 too large relative to input height 3"):
        F.fractional_max_pool2d(torch.ones(1, 1, 3, 3), 4, output_size=1)
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(torch.ones(1, 1, 3, 3), 2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
