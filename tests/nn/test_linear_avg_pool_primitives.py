"""linear (ir/linear_ops.py) and avg_pool2d (ir/pool_ops.py) as primitives with a composition:
values against float64 references written here, gradients against central differences and,
bit for bit, against the composed form (the same primitives the composition has), the
recorded graph one node that passes.decompose turns into the composition, compiled graphs
against eager, and the calls the primitives leave to the composed form."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.ir import passes
from fusetorch.tracer import dispatch as D
from fusetorch.tracer.trace import capture, run

RNG = np.random.default_rng(11)


def _central(f, x, g, eps=1e-6):
    """d<g, f(x)>/dx by central differences."""
    fd = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = ((g * f(x + e)).sum() - (g * f(x - e)).sum()) / (2 * eps)
    return fd


def _ops(graph) -> list:
    return [n.op for n in graph.nodes if n.op != "input"]


# ---------------------------------------------------------------- linear

@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 1, 2, 4), (0, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_values_and_gradients(shape, bias):
    x, w = RNG.standard_normal(shape), RNG.standard_normal((5, 4))
    b = RNG.standard_normal(5) if bias else None

    def ref(x_, w_=w, b_=b):
        return x_ @ w_.T + (0 if b_ is None else b_)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    y = F.linear(tx, tw, tb)
    np.testing.assert_allclose(y.detach().numpy(), ref(x), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(y.shape)
    y.backward(torch.tensor(g))
    np.testing.assert_allclose(tx.grad.numpy(), _central(ref, x, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tw.grad.numpy(), _central(lambda w_: ref(x, w_), w, g),
                               rtol=1e-6, atol=1e-8)
    if bias:
        np.testing.assert_allclose(tb.grad.numpy(), _central(lambda b_: ref(x, w, b_), b, g),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(1, 16), (6, 16), (3, 5, 16)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linear_equals_its_composed_form_bit_for_bit(shape, dtype):
    x = torch.randn(*shape, dtype=dtype, requires_grad=True)
    w = torch.randn(7, 16, dtype=dtype, requires_grad=True)
    b = torch.randn(7, dtype=dtype, requires_grad=True)
    got = []
    for f in (lambda: F.linear(x, w, b), lambda: torch.matmul(x, w.t()) + b):
        for p in (x, w, b):
            p.grad = None
        y = f()
        (y * y).sum().backward()
        got.append([y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()])
    for a, c in zip(*got):
        np.testing.assert_array_equal(a, c)


def test_linear_records_one_node_and_decomposes_to_matmul_and_add():
    x, w, b = torch.randn(4, 8), torch.randn(5, 8), torch.randn(5)
    g, y = capture(lambda x, w, b: F.linear(x, w, b), x, w, b)
    assert _ops(g) == ["linear"]
    d = passes.decompose(g)
    assert _ops(d) == ["permute", "matmul", "add"]  # (the add stays apart: kernels fuse it)
    (a,), (c,) = run(g, x, w, b), run(d, x, w, b)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_array_equal(a.numpy(), y.numpy())


def test_linear_grad_fn_names_stay_pytorchs():
    w = torch.randn(5, 8, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    assert type(F.linear(torch.randn(2, 8), w, b).grad_fn).__name__ == "AddmmBackward0"
    assert type(F.linear(torch.randn(2, 8), w).grad_fn).__name__ == "MmBackward0"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_in_half_precision_rounds_once_as_atens_gemm(dtype):
    # ATen adds the bias to the float32 products and rounds once; matmul then add rounded
    # twice (1 ulp off in 9 of these 24 outputs)
    r = np.random.default_rng(0)
    x, w, b = r.standard_normal((8, 3)), r.standard_normal((4, 3)), r.standard_normal(4)
    d = getattr(torch, dtype)
    xs = [torch.tensor(a, dtype=d) for a in (x, w, b)]
    g, y = capture(lambda x, w, b: F.linear(x, w, b), *xs)
    assert y.dtype == d
    x64, w64, b64 = (t.double().numpy() for t in xs)
    want = torch.tensor(x64 @ w64.T + b64).to(d).double().numpy()  # rounded once
    np.testing.assert_array_equal(y.double().numpy(), want)


@pytest.mark.parametrize("case", ["1-d", "broadcast bias", "int"])
def test_linear_other_calls_are_the_composed_form(case):
    w, b = torch.randn(5, 8), torch.randn(5)
    x = torch.randn(8) if case == "1-d" else torch.randn(3, 8)
    if case == "broadcast bias":
        b = torch.randn(1)
    if case == "int":
        x, w, b = (torch.randint(-3, 3, t.shape) for t in (x, w, b))
    g, y = capture(lambda x, w, b: F.linear(x, w, b), x, w, b)
    assert "linear" not in _ops(g)
    want = x.double().numpy() @ w.double().numpy().T + b.double().numpy()
    np.testing.assert_allclose(y.double().numpy(), want, rtol=1e-2, atol=1e-2)


def test_linear_mismatched_shapes_raise_pytorchs_error():
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(torch.randn(3, 7), torch.randn(5, 8))


def test_linear_relu_compiled_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x = torch.randn(5, 8)

    def loss(x):
        return (model(x) ** 2).sum()
    want = loss(x)
    grads = torch.autograd.grad(want, list(model.parameters()))
    f = torch.compile(loss)
    for _ in range(2):
        got = f(x)
        gg = torch.autograd.grad(got, list(model.parameters()))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        for a, c in zip(gg, grads):
            np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- average pooling

def _avg_reference(x, k, s, p, divisor):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh, ow = (h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = xp[:, :, i * s[0]:i * s[0] + k[0],
                                 j * s[1]:j * s[1] + k[1]].sum((2, 3)) / divisor
    return out


@pytest.mark.parametrize("k, s, p, override", [((2, 2), (2, 2), (0, 0), None),
                                               ((3, 2), (2, 1), (1, 1), None),
                                               ((3, 3), (1, 2), (1, 0), 4)])
def test_avg_pool2d_values_and_gradients(k, s, p, override):
    x = RNG.standard_normal((2, 2, 5, 6))
    divisor = override or k[0] * k[1]

    def ref(x_):
        return _avg_reference(x_, k, s, p, divisor)
    tx = torch.tensor(x, requires_grad=True)
    y = F.avg_pool2d(tx, k, s, p, divisor_override=override)
    np.testing.assert_allclose(y.detach().numpy(), ref(x), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(y.shape)
    y.backward(torch.tensor(g))
    np.testing.assert_allclose(tx.grad.numpy(), _central(ref, x, g), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_avg_pool2d_equals_its_composition_bit_for_bit(dtype):
    x = torch.randn(2, 3, 9, 9, dtype=dtype, requires_grad=True)
    g, y = capture(lambda x: F.avg_pool2d(x, 3, 2, 1), x)
    assert _ops(g) == ["avg_pool2d"]
    d = passes.decompose(g)
    assert _ops(d) == ["unfold2d", "sum", "constant", "div"]
    (c,) = run(d, x.detach())
    np.testing.assert_array_equal(y.detach().numpy(), c.numpy())
    # the gradient: the composed form's (unfold2d, sum, div and their VJPs) on one cotangent
    ct = torch.randn(*y.shape, dtype=dtype)
    (gx,) = torch.autograd.grad(F.avg_pool2d(x, 3, 2, 1), [x], ct)
    win = D.apply("unfold2d", [x], {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1),
                                    "dilation": (1, 1), "pad_value": 0})
    composed = win.sum((2, 3)) / 9
    np.testing.assert_array_equal(composed.detach().numpy(), y.detach().numpy())
    (want,) = torch.autograd.grad(composed, [x], ct)
    np.testing.assert_array_equal(gx.numpy(), want.numpy())


@pytest.mark.parametrize("kw", [dict(count_include_pad=False, padding=1),
                                dict(ceil_mode=True, stride=2)])
def test_avg_pool2d_windows_of_their_own_divisors_are_the_composed_form(kw):
    x = torch.randn(1, 2, 6, 6)
    g, _ = capture(lambda x: F.avg_pool2d(x, 3, **kw), x)
    assert "avg_pool2d" not in _ops(g) and "unfold2d" in _ops(g)


def test_avg_pool2d_ceil_mode_with_whole_windows_is_the_primitive():
    # ceil_mode's extra row reads padding that the functional adds before the primitive, but
    # a window past the edge has its own divisor: only a ceil_mode that adds no window is one
    x = torch.randn(1, 2, 6, 6)
    g, y = capture(lambda x: F.avg_pool2d(x, 2, ceil_mode=True), x)
    assert _ops(g) == ["avg_pool2d"]
    np.testing.assert_allclose(y.numpy(), _avg_reference(x.double().numpy(), (2, 2), (2, 2),
                                                         (0, 0), 4), rtol=1e-6, atol=1e-6)


def test_avg_pool2d_compiled_matches_eager():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)

    def loss(a):
        return (torch.relu(F.avg_pool2d(a, 2)) ** 2).sum()
    want = loss(x)
    (gw,) = torch.autograd.grad(want, [x])
    f = torch.compile(loss)
    for _ in range(2):
        got = f(x)
        (gg,) = torch.autograd.grad(got, [x])
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        np.testing.assert_allclose(gg.numpy(), gw.numpy(), rtol=1e-5, atol=1e-7)
