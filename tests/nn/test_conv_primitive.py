"""The convolution primitive (`conv2d`, `conv2d_grad_input`, `conv2d_grad_weight`:
ir/conv_ops.py) and its CPU kernels (runtime/conv.py, templates/c/conv2d.c.j2): F.conv2d's
values and gradients against a float64 numpy convolution written here from the definition
(sliding windows and einsum), the C kernels against the reference over geometries that hit
every tile remainder, double backward by finite differences, and what records it."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from fusetorch._policy import POLICY
import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck, gradgradcheck
from fusetorch.ir.conv_ops import _conv, _conv_grad_input, _conv_grad_weight
from fusetorch.runtime import conv

RNG = np.random.default_rng(11)

# (x shape, w shape, stride, padding, dilation, groups): LeNet's two layers, then remainders of
# every tile (channels past one and two vectors, positions and window sizes past a block of
# 12, fewer than one), groups (depthwise too), strides, padding and dilation in each dim, and
# the kernels' products along padded rows (stride 1, few channels or wide rows: LeNet's first
# layer, the last two)
GEOMETRIES = [
    ((4, 1, 32, 32), (6, 1, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ((3, 6, 14, 14), (16, 6, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 9, 10), (17, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 5, 7, 7), (33, 5, 2, 3), (2, 1), (0, 2), (1, 1), 1),
    ((3, 4, 9, 8), (6, 2, 3, 2), (2, 1), (1, 2), (1, 2), 2),
    ((2, 8, 6, 5), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), 8),
    ((1, 2, 1, 1), (3, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((2, 5, 13, 11), (4, 5, 1, 4), (3, 2), (0, 3), (2, 3), 1),
    ((1, 13, 4, 4), (9, 13, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((2, 4, 9, 10), (6, 2, 3, 3), (1, 1), (1, 2), (2, 1), 2),
    ((3, 2, 6, 30), (8, 2, 2, 3), (1, 1), (0, 0), (1, 1), 1),
]


def _direct(x, w, stride, padding, dilation, groups):
    """conv2d from its definition in float64: out[n, o, y, x] = sum over the group's channels
    and the window of w[o, c, i, j] * xpad[n, c, y*sh + i*dh, x*sw + j*dw]."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # [N, C, OH, OW, kh, kw]
    n, _, oh, ow = win.shape[:4]
    win = win.reshape(n, groups, cg, oh, ow, kh, kw)
    wg = w.astype(np.float64).reshape(groups, o // groups, cg, kh, kw)
    return np.einsum("ngcyxij,gocij->ngoyx", win, wg).reshape(n, o, oh, ow)


def _adjoints(x, w, g, stride, padding, dilation, groups):
    """The input's and the weight's gradients of <g, conv2d(x, w)> in float64, from the
    definition: every (output, window position) pair adds g * w into the input's gradient and
    g * x into the weight's."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    o, cg, kh, kw = w.shape
    n, c, h, wd = x.shape
    oh, ow = g.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gx = np.zeros(xp.shape)
    gw = np.zeros(w.shape)
    for oc in range(o):
        grp = oc // (o // groups)
        chans = slice(grp * cg, (grp + 1) * cg)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                go = g[:, oc][:, None].astype(np.float64)  # [N, 1, OH, OW]
                gx[:, chans, rows, cols] += go * w[oc, :, i, j][None, :, None, None]
                gw[oc, :, i, j] += (go * xp[:, chans, rows, cols]).sum(axis=(0, 2, 3))
    return gx[:, :, ph:ph + h, pw:pw + wd], gw


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}x{g[1]}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv2d_values_and_gradients_match_the_definition(geometry, dtype):
    xs, ws, stride, padding, dilation, groups = geometry
    x = torch.tensor(RNG.standard_normal(xs), dtype=dtype, requires_grad=True)
    w = torch.tensor(RNG.standard_normal(ws), dtype=dtype, requires_grad=True)
    b = torch.tensor(RNG.standard_normal(ws[0]), dtype=dtype, requires_grad=True)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype is torch.float32 else dict(rtol=1e-10, atol=1e-10)
    for _ in range(3):  # plain, then the composite's capture and its replay
        x.grad = w.grad = b.grad = None
        y = F.conv2d(x, w, b, stride, padding, dilation, groups)
        want = _direct(x.detach().numpy(), w.detach().numpy(), stride, padding, dilation,
                       groups) + b.detach().numpy()[:, None, None]
        np.testing.assert_allclose(y.detach().numpy(), want, **tol)
        g = RNG.standard_normal(y.shape)
        y.backward(torch.tensor(g, dtype=dtype))
        gx, gw = _adjoints(x.detach().numpy(), w.detach().numpy(), g, stride, padding,
                           dilation, groups)
        np.testing.assert_allclose(x.grad.numpy(), gx, **tol)
        np.testing.assert_allclose(w.grad.numpy(), gw, **tol)
        np.testing.assert_allclose(b.grad.numpy(), g.sum(axis=(0, 2, 3)), **tol)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}x{g[1]}")
def test_c_kernels_match_the_reference(geometry):
    if conv._kernels(np.dtype(np.float32), np.zeros(1)) is None:
        pytest.skip("no C compiler: the reference runs")
    xs, ws, stride, padding, dilation, groups = geometry
    a = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    kernels = (conv.forward(_conv(np)), conv.grad_weight(_conv_grad_weight(np)),
               conv.grad_input(_conv_grad_input(np)))
    refs = (_conv(np), _conv_grad_weight(np), _conv_grad_input(np))
    for dtype, tol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        x, w = RNG.standard_normal(xs).astype(dtype), RNG.standard_normal(ws).astype(dtype)
        y = kernels[0](x, w, **a)
        g = RNG.standard_normal(y.shape).astype(dtype)
        got = [y, kernels[1](x, g, kernel=ws[2:], **a), kernels[2](g, w, size=xs[2:], **a)]
        x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
        want = [refs[0](x64, w64, **a), refs[1](x64, g64, kernel=ws[2:], **a),
                refs[2](g64, w64, size=xs[2:], **a)]
        for u, v in zip(got, want):
            assert u.dtype == dtype and u.shape == v.shape and u.flags.c_contiguous
            np.testing.assert_allclose(u, v, rtol=tol, atol=tol * np.abs(v).max())


def test_kernels_read_strided_operands():
    """A cotangent may reach the kernels as a transpose or a broadcast (of a sum's gradient)."""
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    for _ in range(3):
        x.grad = w.grad = None
        F.conv2d(x, w).sum().backward()
        gx, gw = _adjoints(x.detach().numpy(), w.detach().numpy(), np.ones((2, 4, 6, 6)),
                           (1, 1), (0, 0), (1, 1), 1)
        np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-12)
    xt = torch.randn(2, 8, 8, 3, dtype=torch.float64).permute(0, 3, 1, 2)
    np.testing.assert_allclose(F.conv2d(xt, w).detach().numpy(),
                               _direct(xt.numpy(), w.detach().numpy(), (1, 1), (0, 0), (1, 1),
                                       1), rtol=1e-12)


# (geometry, dtype), one build each (~0.6 s of gcc): LeNet's layers (the kernels along padded
# rows, and the tiles; the input gradient's rows of 10 of 14 columns), the rows weight
# gradient in tiles of 4 of 7 window positions, in float64 with padding, dilation and groups,
# and strides
SPECIALIZED = [(GEOMETRIES[0], np.float32), (GEOMETRIES[1], np.float32),
               (((2, 7, 8, 8), (5, 7, 1, 1), (1, 1), (0, 0), (1, 1), 1), np.float32),
               (GEOMETRIES[9], np.float64), (GEOMETRIES[4], np.float64)]


@pytest.mark.parametrize("geometry, dtype", SPECIALIZED,
                         ids=lambda g: f"{g[0]}x{g[1]}" if isinstance(g, tuple) else None)
def test_kernels_built_for_a_geometry_give_the_generic_kernels_bits(monkeypatch, geometry,
                                                                    dtype):
    """What a compiled program's convolution runs (`specialize`: the geometry as constants)
    sums as the kernels for any geometry do, so it gives their bits; other shapes than those
    it was built for run the generic kernels."""
    if conv._kernels(np.dtype(np.float32), np.zeros(1)) is None:
        pytest.skip("no C compiler: the reference runs")
    monkeypatch.setattr(POLICY, "specialize_fmas", 0)
    xs, ws, stride, padding, dilation, groups = geometry
    a = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    generic = (conv.forward(_conv(np)), conv.grad_weight(_conv_grad_weight(np)),
               conv.grad_input(_conv_grad_input(np)))
    for dtype in (dtype,):
        x, w = RNG.standard_normal(xs).astype(dtype), RNG.standard_normal(ws).astype(dtype)
        b = RNG.standard_normal(ws[0]).astype(dtype)
        y = generic[0](x, w, b, **a)
        g = RNG.standard_normal(y.shape).astype(dtype)
        ga = dict(a, kernel=ws[2:])
        special = (generic[0].specialize((xs, ws, (ws[0],)), a, dtype),
                   generic[1].specialize((xs, y.shape), ga, dtype),
                   generic[2].specialize((y.shape, ws), dict(a, size=xs[2:]), dtype))
        assert all(f is not None for f in special)
        want = [y, generic[1](x, g, **ga), generic[2](g, w, size=xs[2:], **a)]
        got = [special[0](x, w, b, **a), special[1](x, g, **ga),
               special[2](g, w, size=xs[2:], **a)]
        for u, v in zip(got, want):
            assert u.dtype == dtype and u.shape == v.shape
            np.testing.assert_array_equal(u, v)
        # another batch than the one built for: the generic kernels, the same values
        x2, g2 = x[:1], g[:1]
        np.testing.assert_array_equal(special[0](x2, w, b, **a), generic[0](x2, w, b, **a))
        np.testing.assert_array_equal(special[1](x2, g2, **ga), generic[1](x2, g2, **ga))
        np.testing.assert_array_equal(special[2](g2, w, size=xs[2:], **a),
                                      generic[2](g2, w, size=xs[2:], **a))
    # below the threshold, without eager kernels and for float16: nothing to specialize
    monkeypatch.setattr(POLICY, "specialize_fmas", 1 << 62)
    assert generic[0].specialize((xs, ws), a, np.float32) is None
    monkeypatch.setattr(POLICY, "specialize_fmas", 0)
    assert generic[0].specialize((xs, ws), a, np.float16) is None
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    assert generic[0].specialize((xs, ws), a, np.float32) is None


def test_a_compiled_step_runs_the_specialized_kernels(monkeypatch):
    """A compiled training step's convolution and its gradients run kernels built for their
    geometry, with eager's bits: the weight's gradient, which reads the forward's output
    (through the ReLU's mask and the square's gradient), is the same array."""
    if conv._kernels(np.dtype(np.float32), np.zeros(1)) is None:
        pytest.skip("no C compiler: the reference runs")
    monkeypatch.setattr(POLICY, "specialize_fmas", 0)
    calls = []
    monkeypatch.setattr(conv, "_specialize", lambda *a, _f=conv._specialize, **k:
                        calls.append(a[1:4]) or _f(*a, **k))
    xs, ws = SPECIALIZED[1][0][:2]
    x = torch.randn(*xs)
    w = torch.randn(*ws, requires_grad=True)
    b = torch.randn(ws[0], requires_grad=True)

    def step(a):
        w.grad = b.grad = None
        loss = F.relu(F.conv2d(a, w, b)).square().sum()
        loss.backward()
        return loss, w.grad, b.grad
    want = [t.detach().numpy().copy() for t in step(x)]
    compiled = torch.compile(step)
    for _ in range(3):
        got = [t.detach().numpy().copy() for t in compiled(x)]
    assert {c[:2] for c in calls} >= {(xs, ws), (xs, (xs[0], ws[0], 10, 10))}, calls
    # (the weight's gradient is the kernels' alone; the sums of the loss and of the bias's
    # gradient are the compiled reductions', in another order than numpy's)
    np.testing.assert_array_equal(got[1], want[1])
    for u, v in zip(got[::2], want[::2]):
        np.testing.assert_allclose(u, v, rtol=1e-6)


@pytest.mark.parametrize("stride, padding, dilation, groups",
                         [(1, 0, 1, 1), (2, 1, 1, 1), (1, 1, 2, 2)])
def test_double_backward_by_finite_differences(stride, padding, dilation, groups):
    """A gradient penalty differentiates conv2d's gradients (conv2d_grad_input and
    conv2d_grad_weight), as PyTorch allows; checked to second order."""
    x = torch.randn(2, 4, 6, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 4 // groups, 3, 2, dtype=torch.float64, requires_grad=True)
    f = lambda a, b: F.conv2d(a, b, None, stride, padding, dilation, groups)
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))

    def penalty(a, b):
        y = f(a, b)
        gx, gw = torch.autograd.grad((y * y).sum(), (a, b), create_graph=True)
        return (gx ** 2).sum() + (gw * b).sum()
    p = penalty(x, w)
    gx, gw = torch.autograd.grad(p, (x, w))
    eps = 1e-6
    for t, grad in ((x, gx), (w, gw)):
        base = t.detach().numpy()
        for i in RNG.choice(base.size, 6, replace=False):
            hi, lo = base.copy(), base.copy()
            hi.flat[i] += eps
            lo.flat[i] -= eps
            args = [torch.tensor(v, requires_grad=True) if s is t else
                    torch.tensor(s.detach().numpy(), requires_grad=True)
                    for s, v in ((x, hi), (w, hi))]
            p_hi = float(penalty(*args))
            args = [torch.tensor(v, requires_grad=True) if s is t else
                    torch.tensor(s.detach().numpy(), requires_grad=True)
                    for s, v in ((x, lo), (w, lo))]
            p_lo = float(penalty(*args))
            np.testing.assert_allclose(grad.numpy().flat[i], (p_hi - p_lo) / (2 * eps),
                                       rtol=1e-5, atol=1e-6)


def test_one_primitive_records_a_convolution():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, torch.zeros(4, requires_grad=True))
    assert y.grad_fn.name() == "ConvolutionBackward0"
    compiled = torch.compile(lambda a, b: F.conv2d(a, b, padding=1).sum())
    compiled(x, w).backward()
    forward, backward = compiled.graph(), compiled.backward_graph()
    assert forward.count("conv2d(") == 1 and "unfold2d" not in forward, forward
    assert "matmul" not in forward, forward
    assert backward.count("conv2d_grad_input(") == 1, backward
    assert backward.count("conv2d_grad_weight(") == 1, backward
    assert "fold2d" not in backward, backward


def test_half_precision_and_empty_batches():
    """float16 keeps im2col + matmul (the primitive computes float32 and float64); a batch of
    none gives an empty output and gradients of zeros, as PyTorch's."""
    x = torch.randn(2, 3, 6, 6).half()
    w = torch.randn(4, 3, 3, 3).half()
    want = _direct(x.float().numpy(), w.float().numpy(), (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(F.conv2d(x, w).float().numpy(), want, rtol=2e-2, atol=2e-2)
    x = torch.randn(0, 3, 6, 6, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(x, w)
    assert tuple(y.shape) == (0, 4, 4, 4)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 6, 6)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 3, 3, 3)))


def test_without_kernels_the_reference_runs(monkeypatch):
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    assert conv._kernels(np.dtype(np.float32), np.zeros(1)) is None
    x = torch.randn(2, 3, 7, 7, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    np.testing.assert_allclose(y.detach().numpy(),
                               _direct(x.detach().numpy(), w.detach().numpy(), (1, 1), (1, 1),
                                       (1, 1), 1), rtol=1e-12)


@pytest.mark.parametrize("stride, padding, output_padding, dilation, groups",
                         [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), ((2, 3), (0, 1), (1, 2), (1, 2), 2)])
def test_conv_transpose2d_is_the_convolutions_input_gradient(stride, padding, output_padding,
                                                              dilation, groups):
    """conv_transpose2d(x, w) runs as conv2d_grad_input: the adjoint of the convolution of an
    image of its output size, values against the definition and gradients by finite
    differences (gradcheck, and second order)."""
    pair = lambda v: (v, v) if isinstance(v, int) else v
    x = torch.randn(2, 4, 5, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 6 // groups, 3, 2, dtype=torch.float64, requires_grad=True)
    y = F.conv_transpose2d(x, w, None, stride, padding, output_padding, groups, dilation)
    out_hw = tuple(y.shape[2:])
    want, _ = _adjoints(np.zeros((2, 6) + out_hw), w.detach().numpy(), x.detach().numpy(),
                        pair(stride), pair(padding), pair(dilation), groups)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    f = lambda a, b: F.conv_transpose2d(a, b, None, stride, padding, output_padding, groups,
                                        dilation)
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def test_threads_give_the_same_bits(monkeypatch):
    """On OpenMP's threads (over samples; the weight gradient sums fixed chunks of the batch,
    then the chunks in order) every kernel gives one thread's bits, and the reference's
    values."""
    from fusetorch import _threads
    if conv._kernels(np.dtype(np.float32), np.zeros(1)) is None:
        pytest.skip("no C compiler: the reference runs")
    monkeypatch.setattr(_threads, "PARALLEL_FMAS", 0)
    monkeypatch.setattr(_threads, "others_busy", lambda: False)
    monkeypatch.setattr(_threads, "last_threaded_product", float("-inf"))  # (no BLAS spin)
    kernels = (conv.forward(_conv(np)), conv.grad_weight(_conv_grad_weight(np)),
               conv.grad_input(_conv_grad_input(np)))
    for xs, ws, stride, padding, dilation, groups in GEOMETRIES:
        xs = (9,) + xs[1:]  # more samples than chunks, not a multiple of them
        a = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        x, w = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(ws).astype(np.float32)
        b = RNG.standard_normal(ws[0]).astype(np.float32)
        g = RNG.standard_normal(_conv(np)(x, w, **a).shape).astype(np.float32)
        runs = []
        for threads in (1, 2, 3):
            monkeypatch.setattr(_threads, "get_num_threads", lambda n=threads: n)
            runs.append([kernels[0](x, w, b, **a), kernels[1](x, g, kernel=ws[2:], **a),
                         kernels[2](g, w, size=xs[2:], **a)])
        for other in runs[1:]:
            for u, v in zip(runs[0], other):
                np.testing.assert_array_equal(u, v)
        want = _conv(np)(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **a)
        np.testing.assert_allclose(runs[0][0], want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def test_threads_only_on_an_idle_machine_with_the_blas_asleep(monkeypatch):
    """A large call shares its samples among fusetorch's threads, unless other processes keep
    the cores busy or the BLAS's workers still spin after a product they got (beside them a
    second OpenMP thread gained 7% where it gave 1.9x). The clock is the test's own, so a
    loaded machine's pauses between two calls change nothing."""
    import time
    import types
    from fusetorch import _threads
    now = [1000.0]
    monkeypatch.setattr(_threads, "time", types.SimpleNamespace(
        monotonic=lambda: now[0], process_time=time.process_time))
    monkeypatch.setattr(_threads, "get_num_threads", lambda: 2)
    monkeypatch.setattr(_threads, "others_busy", lambda: False)
    monkeypatch.setattr(_threads, "free_cores", lambda: 2)
    monkeypatch.setattr(_threads, "last_threaded_product", float("-inf"))
    monkeypatch.setattr(_threads, "BLAS_SPIN", 0.1)  # (OpenBLAS's default timeout)
    monkeypatch.setattr(_threads, "ALWAYS_SERIAL_FLOPS", 8_000_000)  # (the defaults)
    monkeypatch.setattr(_threads, "SERIAL_FLOPS", 64_000_000)
    geometry = [64, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 1, 1, 1, 10, 10]  # 15 million FMAs
    assert conv._threads_for(geometry) == 2
    assert conv._threads_for([1] + geometry[1:]) == 1  # one sample
    assert conv._threads_for(geometry[:4] + [1] + geometry[5:]) == 1  # small
    _threads.matmul(np.ones((64, 1000), np.float32), np.ones((1000, 100), np.float32))
    assert _threads.last_threaded_product == 1000.0  # 12.8 MFLOP on an idle machine: threaded
    now[0] += 0.09
    assert conv._threads_for(geometry) == 1  # the BLAS's workers still spin
    now[0] += 0.02
    assert conv._threads_for(geometry) == 2  # past BLAS_SPIN they sleep
    _threads.matmul(np.ones((64, 400), np.float32), np.ones((400, 120), np.float32))
    assert _threads.last_threaded_product == 1000.0  # 6.1 MFLOP: one BLAS thread, no spin
    assert conv._threads_for(geometry) == 2
    monkeypatch.setattr(_threads, "others_busy", lambda: True)
    assert conv._threads_for(geometry) == 1
    monkeypatch.setattr(_threads, "others_busy", lambda: False)
    monkeypatch.setattr(_threads, "BLAS_SPIN", 0.0)  # OPENBLAS_THREAD_TIMEOUT=20: no spin
    _threads.matmul(np.ones((64, 1000), np.float32), np.ones((1000, 100), np.float32))
    assert conv._threads_for(geometry) == 2
