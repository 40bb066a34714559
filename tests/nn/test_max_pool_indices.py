"""Max pooling picks the element PyTorch's CPU kernels pick, in values, indices and gradients:
per window the scan starts at -inf with the window's first element inside the input, and an
element inside the input is taken `if (val > maxval || isnan(val))`. So the last NaN wins, else
the first maximum, and a window of -infs (padding around it) points at its first real element.
Checked against a float64 numpy scan written from that rule, on the numpy implementation
(FUSETORCH_EAGER_COMPILE=0), the eager kernel (templates/c/max_pool2d.c.j2), the primitives'
composition (ir/pool_ops.py, what backends without the kernel run) and `fusetorch.compile`."""
import numpy as np
import pytest

from fusetorch._policy import POLICY
from fusetorch.ir.ops import OPS
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.runtime import eager_kernels as ek
from fusetorch.tracer import composite_programs as cp


def _out(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def pool_rule(x, kernel, stride, padding, dilation, ceil_mode):
    """(values float64, flat indices int64) of PyTorch's scan, vectorised over the windows:
    for each window position in order, an inside element replaces the running maximum when it
    is greater or NaN; the index starts at the window's first inside element."""
    x = np.asarray(x, np.float64)
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    oh, ow = _out(h, kh, sh, ph, dh, ceil_mode), _out(w, kw, sw, pw, dw, ceil_mode)
    rows0 = np.arange(oh) * sh - ph  # each window's first row and column (maybe padding)
    cols0 = np.arange(ow) * sw - pw
    best = np.full((n, c, oh, ow), -np.inf)
    first_r = np.array([next(r0 + i * dh for i in range(kh) if 0 <= r0 + i * dh < h)
                        for r0 in rows0])
    first_c = np.array([next(c0 + j * dw for j in range(kw) if 0 <= c0 + j * dw < w)
                        for c0 in cols0])
    idx = np.broadcast_to(first_r[:, None] * w + first_c[None, :], best.shape).copy()
    for i in range(kh):
        for j in range(kw):
            r, q = rows0 + i * dh, cols0 + j * dw
            inside = ((r >= 0) & (r < h))[:, None] & ((q >= 0) & (q < w))[None, :]
            v = x[:, :, np.clip(r, 0, h - 1)][:, :, :, np.clip(q, 0, w - 1)]
            take = inside & ((v > best) | np.isnan(v))
            best = np.where(take, v, best)
            idx = np.where(take, (r[:, None] * w + q[None, :]), idx)
    return best, idx


def _grad_of(x_shape, idx, g):
    """The input gradient that routes each output's upstream gradient to its index."""
    n, c, h, w = x_shape
    out = np.zeros((n, c, h * w))
    np.add.at(out, (np.arange(n)[:, None, None], np.arange(c)[None, :, None],
                    idx.reshape(n, c, -1)), g.reshape(n, c, -1))
    return out.reshape(x_shape)


def _upstream(shape, seed):
    """Upstream gradients in quarters: their sums are exact in float32 too."""
    return np.random.default_rng(seed).integers(-8, 9, shape) / 4


def _data(shape, seed):
    """Small integers (ties), runs of NaN (several per window), +-inf, and -inf blocks at
    the edges (all -inf windows around padding)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float64)
    x[rng.random(shape) < 0.08] = np.nan
    x[rng.random(shape) < 0.05] = np.inf
    x[rng.random(shape) < 0.05] = -np.inf
    x[0, 0, :4, :] = -np.inf
    x[0, 1, :, :4] = -np.inf
    x[-1, -1, -3:, -3:] = -np.inf
    x[-1, 0, 2:5, 2:5] = np.nan
    return x


CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 2), (1, 2), (1, 1), (2, 1), False),
    ((2, 3), (3, 1), (1, 1), (1, 2), True),
    ((4, 4), (1, 3), (2, 2), (1, 1), True),
    ((3, 3), (2, 2), (0, 1), (1, 1), True),
]


@pytest.fixture(params=[False, True], ids=["numpy", "kernel"])
def eager_mode(request, monkeypatch):
    """FUSETORCH_EAGER_COMPILE=0 (numpy primitives) or 1 (the composite replayed, through the
    max pool kernel from the third call), from empty caches."""
    monkeypatch.setattr(POLICY, "eager_kernels", request.param)
    ek.clear()
    cp.clear()
    yield request.param
    ek.clear()
    cp.clear()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_max_pool2d_follows_pytorchs_scan_eager(eager_mode, dtype):
    shape = (2, 3, 24, 30)  # above POLICY.min_elements: the kernel applies
    for case in CASES:
        xs = _data(shape, 3)
        want_v, want_i = pool_rule(xs, *case)
        g = _upstream(want_v.shape, 4)
        for _ in range(3):  # the third call replays the captured graph (the kernel)
            x = torch.tensor(xs, dtype=dtype, requires_grad=True)
            v, i = F.max_pool2d(x, *case[:4], ceil_mode=case[4], return_indices=True)
            y = F.max_pool2d(x, *case[:4], ceil_mode=case[4])
            (y * torch.tensor(g, dtype=dtype)).sum().backward()
            np.testing.assert_array_equal(i.numpy(), want_i, err_msg=str(case))
            np.testing.assert_array_equal(v.detach().numpy(), want_v, err_msg=str(case))
            np.testing.assert_array_equal(y.detach().numpy(), want_v, err_msg=str(case))
            np.testing.assert_array_equal(x.grad.numpy(), _grad_of(shape, want_i, g),
                                          err_msg=str(case))
    if eager_mode:  # each case's forward ran the eager kernel (ir/pool_ops.py's primitives)
        assert sum(k[0] == "max_pool2d" for k in ek._PROGRAMS) >= len(CASES)


def test_the_two_reported_cases_and_modules(eager_mode):
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[[[nan, 1., nan, 2.]]]], requires_grad=True)
    v, i = F.max_pool2d(x, (1, 4), return_indices=True)
    v.sum().backward()
    assert np.isnan(v.item()) and i.item() == 2
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0, 0, 1, 0]]]])
    v, i = F.max_pool2d(torch.tensor([[[[-inf, -inf]]]]), (1, 2), padding=(0, 1), stride=1,
                        return_indices=True)
    np.testing.assert_array_equal(v.numpy(), [[[[-inf, -inf, -inf]]]])
    np.testing.assert_array_equal(i.numpy(), [[[[0, 0, 1]]]])
    v, i = nn.MaxPool1d(3, 1, 1, return_indices=True)(torch.tensor([[[-inf, -inf, 1.]]]))
    np.testing.assert_array_equal(i.numpy(), [[[0, 2, 2]]])
    v, i = nn.MaxPool2d((1, 3), 1, (0, 1), return_indices=True)(
        torch.tensor([[[[nan, 0., nan, nan]]]]))
    np.testing.assert_array_equal(i.numpy(), [[[[0, 2, 3, 3]]]])


@pytest.mark.parametrize("case", [(3, 2, 1, 1, False), (2, 1, 1, 2, True), (4, 3, 2, 1, True)])
def test_max_pool1d_follows_pytorchs_scan(eager_mode, case):
    k, s, p, d, ceil_mode = case
    xs = _data((2, 3, 4, 11), 5)[:, :, 1]  # [N, C, L]
    want_v, want_i = pool_rule(xs[:, :, None], (1, k), (1, s), (0, p), (1, d), ceil_mode)
    g = _upstream(want_v.shape[:2] + want_v.shape[3:], 6)
    x = torch.tensor(xs, requires_grad=True)
    v, i = F.max_pool1d(x, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    (v * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(i.numpy(), want_i[:, :, 0])
    np.testing.assert_array_equal(v.detach().numpy(), want_v[:, :, 0])
    np.testing.assert_array_equal(
        x.grad.numpy(), _grad_of(xs[:, :, None].shape, want_i, g[:, :, None])[:, :, 0])


def test_integer_max_pool_indices_skip_the_padding():
    x = torch.tensor([[[[-2**63, -2**63, 5], [-2**63, -2**63, 5]]]])
    v, i = F.max_pool2d(x, 2, 1, 1, return_indices=True)
    want_v, want_i = pool_rule(x.numpy().astype(np.float64), (2, 2), (1, 1), (1, 1), (1, 1),
                               False)
    np.testing.assert_array_equal(i.numpy(), want_i)
    assert v.dtype is torch.int64


def adaptive_rule(x, oh, ow):
    """PyTorch's adaptive windows with the same scan (no padding: the index starts at the
    window's first element)."""
    n, c, h, w = x.shape
    vals, idx = np.empty((n, c, oh, ow)), np.empty((n, c, oh, ow), np.int64)
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            v, k = pool_rule(x[:, :, r0:r1, c0:c1], (r1 - r0, c1 - c0), (1, 1), (0, 0),
                             (1, 1), False)
            vals[:, :, i, j] = v[:, :, 0, 0]
            rr, cc = np.divmod(k[:, :, 0, 0], c1 - c0)
            idx[:, :, i, j] = (r0 + rr) * w + c0 + cc
    return vals, idx


@pytest.mark.parametrize("out", [(3, 4), (2, 5), (1, 3)])
def test_adaptive_max_pool_follows_pytorchs_scan(eager_mode, out):
    xs = _data((2, 2, 7, 10), 8)
    want_v, want_i = adaptive_rule(xs, *out)
    g = _upstream(want_v.shape, 9)
    x = torch.tensor(xs, requires_grad=True)
    v, i = F.adaptive_max_pool2d(x, out, return_indices=True)
    (v * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(i.numpy(), want_i)
    np.testing.assert_array_equal(v.detach().numpy(), want_v)
    np.testing.assert_array_equal(x.grad.numpy(), _grad_of(xs.shape, want_i, g))
    v1, i1 = nn.AdaptiveMaxPool1d(out[1], return_indices=True)(torch.tensor(xs[:, :, 0]))
    w1, j1 = adaptive_rule(xs[:, :, :1], 1, out[1])
    np.testing.assert_array_equal(i1.numpy(), j1[:, :, 0])
    np.testing.assert_array_equal(v1.numpy(), w1[:, :, 0])


@pytest.fixture
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


@pytest.mark.usefixtures("_private_cache")
@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[4], CASES[5]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_max_pool_follows_pytorchs_scan(case, dtype):
    """A compiled step computes the forward as one max pooling kernel (codegen/fuse.py groups
    the primitives, max_pool2d_group.c.j2), from a contiguous input and from a strided view."""
    shape = (2, 3, 12, 28)
    xs = _data(shape, 10)
    for view in (False, True):
        src = xs[:, :, :, ::2] if view else xs
        want_v, want_i = pool_rule(src, *case)
        g = _upstream(want_v.shape, 11)

        def step(x, g):
            y = x[:, :, :, ::2] if view else x
            v, i = F.max_pool2d(y, *case[:4], ceil_mode=case[4], return_indices=True)
            (v * g).sum().backward()
            return v.detach(), i

        compiled = torch.compile(step)
        for _ in range(2):
            x = torch.tensor(xs, dtype=dtype, requires_grad=True)
            v, i = compiled(x, torch.tensor(g, dtype=dtype))
            np.testing.assert_array_equal(i.numpy(), want_i)
            np.testing.assert_array_equal(v.numpy(), want_v)
            grad = _grad_of(src.shape, want_i, g)
            if view:
                grad = np.stack([grad, np.zeros_like(grad)], -1).reshape(shape)
            np.testing.assert_array_equal(x.grad.numpy(), grad)
        assert any(" max_pool2d [" in line for line in compiled.kernels()), compiled.kernels()


def _primitive_graphs(shape, dtype, case):
    """(input node, max_pool2d node, max_pool2d_index node) of one max pooling."""
    from fusetorch.ir import dtypes as dts
    from fusetorch.ir.graph import make_node
    xin = make_node("input", [], {"shape": shape, "dtype": dts.float32 if dtype == np.float32
                                  else dts.float64})
    attrs = dict(zip(("kernel", "stride", "padding", "dilation", "ceil_mode"), case))
    return (xin, make_node("max_pool2d", [xin], attrs),
            make_node("max_pool2d_index", [xin], attrs))


def _values_and_grad(xin, values, index, x, g, table, composed: str):
    """values, indices and the input gradient for cotangent g: of the primitives (their own
    VJP, the max_pool2d_grad primitive, by the eager table), of their composition
    (`composed` "forward": passes.decompose, then differentiated) or with the gradient's
    composition ("backward": max_pool2d_grad decomposed)."""
    from fusetorch.ir.grad import backward_graph
    from fusetorch.ir.graph import Graph
    from fusetorch.ir.passes import decompose
    from fusetorch.runtime.runner import run_graph
    fwd = Graph([xin], [values, index])
    if composed == "forward":
        fwd = decompose(fwd)
        assert not any(n.op in ("max_pool2d", "max_pool2d_index") for n in fwd.nodes)
    v, i = fwd.outputs
    bg = backward_graph([v], [fwd.inputs[0]])
    back = bg.graph
    if composed == "backward":
        back = decompose(back)
        assert not any(n.op.startswith("max_pool2d") for n in back.nodes)
    saved = [f for f, _ in bg.values]
    outs = run_graph(Graph(fwd.inputs, [v, i] + saved), [x], table, np)
    (grad,) = run_graph(back, [g] + outs[2:], table, np)
    return outs[0], outs[1], grad


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_equals_the_composition(case, dtype, monkeypatch):
    """The primitives' kernels (eager table, templates/c/max_pool2d.c.j2, also for the
    gradient), their numpy implementation and their compositions (what backends without the
    kernel compute: the forward's, its gradient derived from its primitives, and
    max_pool2d_grad's) give the float64 scan's values, indices and gradient (overlapping
    windows add up at a repeated index), on ties, NaN and -inf."""
    from fusetorch.runtime.eager import make_table
    shape = (2, 3, 24, 30)
    xs = _data(shape, 12)
    x = xs.astype(dtype)
    want_v, want_i = pool_rule(xs, *case)
    g = _upstream(want_v.shape, 13).astype(dtype)
    want_g = _grad_of(shape, want_i, g)
    xin, values, index = _primitive_graphs(shape, dtype, case)
    for kernel, composed in ((True, ""), (False, ""), (False, "forward"), (False, "backward")):
        monkeypatch.setattr(POLICY, "eager_kernels", kernel)
        ek.clear()
        v, i, grad = _values_and_grad(xin, values, index, x, g, make_table(np), composed)
        assert any(k[0] == "max_pool2d" for k in ek._PROGRAMS) == kernel
        assert any(k[0] == "max_pool2d_grad" for k in ek._PROGRAMS) == kernel
        where = f"{case} kernel={kernel} composed={composed}"
        np.testing.assert_array_equal(i, want_i, err_msg=where)
        np.testing.assert_array_equal(v, want_v.astype(dtype), err_msg=where)
        assert v.dtype == dtype and i.dtype == np.int64
        np.testing.assert_array_equal(grad, want_g.astype(dtype), err_msg=where)
    # the array-module implementation other devices' tables hold (bincount, not add.at)
    attrs = dict(zip(("kernel", "stride", "padding", "dilation", "ceil_mode"), case))
    np.testing.assert_array_equal(OPS["max_pool2d_grad"].eager(np)(x, g, **attrs),
                                  want_g.astype(dtype))
