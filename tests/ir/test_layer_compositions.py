"""The compositions (OpDef.composition) of conv2d, conv2d_grad_input, lstm_scan (what ONNX
export emits where no single operator computes the node; compiled graphs keep these whole on
every backend, Role.KEPT_WHOLE) and window_max (what compiled graphs run), and their eager
kernels, against float64 references written here."""
from __future__ import annotations

import numpy as np
import pytest

from fusetorch.ir import dtypes as dts
from fusetorch.ir.graph import Graph, make_node
from fusetorch.ir.passes import CPU, DEFAULT, decompose, optimize
from fusetorch.runtime.eager import make_table
from fusetorch.runtime.runner import run_graph

DT = {np.float32: dts.float32, np.float64: dts.float64, np.int64: dts.int64}


def _inputs(*arrays):
    return [make_node("input", [], {"shape": a.shape, "dtype": DT[a.dtype.type]})
            for a in arrays]


def _both(node, ins, arrays):
    """(the primitive's value through the eager table, its composition's, interpreted)."""
    g = Graph(ins, [node])
    composed = decompose(g, every_dtype=True, keep=lambda n: False)
    assert node.op not in {n.op for n in composed.nodes}
    table = make_table(np)
    return run_graph(g, arrays, table, np)[0], run_graph(composed, arrays, table, np)[0]


def _conv_reference(x, w, b, stride, padding, dilation, groups):
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        gi = oc // og
        for i in range(kh):
            for j in range(kw):
                win = x[:, gi * cg:(gi + 1) * cg, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                        j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, oc] += np.einsum("nchw,c->nhw", win, w[oc, :, i, j].astype(np.float64))
        if b is not None:
            out[:, oc] += b[oc]
    return out


CONVS = [((1, 1), (0, 0), (1, 1), 1, True), ((2, 1), (1, 2), (1, 2), 2, False),
         ((1, 2), (2, 0), (2, 1), 3, True)]


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", CONVS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_kernel_and_composition(stride, padding, dilation, groups, bias, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 9, 8)).astype(dtype)
    w = rng.standard_normal((6, 6 // groups, 3, 2)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype) if bias else None
    arrays = [x, w] + ([b] if bias else [])
    ins = _inputs(*arrays)
    node = make_node("conv2d", ins, {"stride": stride, "padding": padding,
                                     "dilation": dilation, "groups": groups})
    want = _conv_reference(x, w, b, stride, padding, dilation, groups)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got in _both(node, ins, arrays):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _transposed_reference(g, w, size, stride, padding, dilation, groups):
    """The adjoint of the convolution: each cotangent element added into its window."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, o, oh, ow = g.shape
    _, cg, kh, kw = w.shape
    out = np.zeros((n, groups * cg, size[0] + 2 * ph, size[1] + 2 * pw))
    og = o // groups
    for oc in range(o):
        ch = slice(oc // og * cg, (oc // og + 1) * cg)
        for i in range(kh):
            for j in range(kw):
                out[:, ch, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                    j * dw:j * dw + sw * (ow - 1) + 1:sw] += np.einsum(
                        "nhw,c->nchw", g[:, oc].astype(np.float64), w[oc, :, i, j])
    return out[:, :, ph:ph + size[0], pw:pw + size[1]]


@pytest.mark.parametrize("stride,padding,dilation,groups,_", CONVS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_grad_input_kernel_and_composition(stride, padding, dilation, groups, _, dtype):
    rng = np.random.default_rng(2)
    size = (9, 8)
    w = rng.standard_normal((6, 6 // groups, 3, 2)).astype(dtype)
    x = _inputs(np.zeros((2, 6) + size, dtype), w)
    conv = make_node("conv2d", x, {"stride": stride, "padding": padding, "dilation": dilation,
                                   "groups": groups})
    g = rng.standard_normal(conv.shape).astype(dtype)
    ins = _inputs(g, w)
    node = make_node("conv2d_grad_input", ins, {"stride": stride, "padding": padding,
                                                "dilation": dilation, "groups": groups,
                                                "size": size})
    want = _transposed_reference(g, w, size, stride, padding, dilation, groups)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got in _both(node, ins, [g, w]):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _lstm_reference(gi, h, c, w_hh, reverse):
    gi, h, c, w_hh = (a.astype(np.float64) for a in (gi, h, c, w_hh))
    t_len, hid = gi.shape[0], h.shape[1]
    ws = np.zeros((6, t_len, h.shape[0], hid))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        z = gi[t] + h @ w_hh.T
        i, f, g, o = (z[:, k * hid:(k + 1) * hid] for k in range(4))
        i, f, g, o = sig(i), sig(f), np.tanh(g), sig(o)
        c = f * c + i * g
        h = o * np.tanh(c)
        ws[:, t] = h, c, i, f, g, o
    return ws


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_scan_kernel_and_composition(reverse, dtype):
    rng = np.random.default_rng(1)
    t_len, batch, hid = 5, 3, 4
    arrays = [rng.standard_normal(s).astype(dtype) for s in
              ((t_len, batch, 4 * hid), (batch, hid), (batch, hid), (4 * hid, hid))]
    ins = _inputs(*arrays)
    node = make_node("lstm_scan", ins, {"reverse": reverse})
    want = _lstm_reference(*arrays, reverse)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got in _both(node, ins, arrays):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_compiled_graphs_keep_the_layers_whole():
    x, w, gi, h, c, r = _inputs(np.zeros((1, 2, 5, 5), np.float32),
                                np.zeros((3, 2, 3, 3), np.float32),
                                np.zeros((2, 1, 8), np.float32), np.zeros((1, 2), np.float32),
                                np.zeros((1, 2), np.float32), np.zeros((8, 2), np.float32))
    conv = make_node("conv2d", [x, w], {"stride": (1, 1), "padding": (0, 0),
                                        "dilation": (1, 1), "groups": 1})
    scan = make_node("lstm_scan", [gi, h, c, r], {"reverse": False})
    for passes in (CPU, DEFAULT):
        g = optimize(Graph([x, w, gi, h, c, r], [conv, scan]), passes)
        assert {"conv2d", "lstm_scan"} <= {n.op for n in g.nodes}


def test_window_max_kernel_and_composition():
    """window_max (adaptive and fractional max pooling's windows from a table): values, the
    pick's position (the last NaN, else the first maximum; a shorter window repeats its last
    position) and the gradient, eager and composed, against a loop over the windows."""
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (2, 3, 12)).astype(np.float64)  # small integers: ties
    x[0, 0, [1, 4]] = np.nan
    table = np.array([[0, 1, 4, 4], [2, 3, 5, 6], [6, 7, 8, 8], [9, 10, 11, 11]],
                     np.int64).T.reshape(1, 1, 4, 2, 2)
    g = rng.standard_normal((2, 3, 2, 2))
    want_v, want_i = np.zeros((2, 3, 2, 2)), np.zeros((2, 3, 2, 2), np.int64)
    want_g = np.zeros_like(x)
    for b, c, i, j in np.ndindex(2, 3, 2, 2):
        at = None
        for p in table[0, 0, :, i, j]:
            if at is None or x[b, c, p] > x[b, c, at] or np.isnan(x[b, c, p]):
                at = p
        want_v[b, c, i, j], want_i[b, c, i, j] = x[b, c, at], at
        want_g[b, c, at] += g[b, c, i, j]
    ins = _inputs(x, table)
    got = _both(make_node("window_max", ins, {}), ins, [x, table])
    for v in got:
        np.testing.assert_array_equal(v, want_v)
    for i in _both(make_node("window_max_index", ins, {}), ins, [x, table]):
        np.testing.assert_array_equal(i, want_i)
    ins3 = _inputs(x, table, g)
    for grad in _both(make_node("window_max_grad", ins3, {}), ins3, [x, table, g]):
        np.testing.assert_allclose(grad, want_g, rtol=1e-12, atol=1e-15)
