"""Each elementwise primitive, reductions and common layers: compiled against eager, values and
gradients (the first slice of 'every op test also runs compiled')."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


UNARY = ["neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "abs", "sign", "relu",
         "erf", "log1p", "expm1"]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
          lambda a, b: a.abs() ** b, torch.maximum, torch.minimum,
          lambda a, b: torch.where(a > b, a, b * 2), lambda a, b: (a < b).float() + (a >= b),
          lambda a, b: a.clamp(-0.5, 0.5) * b, lambda a, b: (a == a) & (b != 0)]


def _check(fn, *inputs, rtol=1e-5, atol=1e-6):
    cf = torch.compile(fn)
    cf(*inputs)
    got, want = cf(*inputs), fn(*inputs)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64),
                               rtol=rtol, atol=atol)
    return cf


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unary(name, dtype):
    x = torch.rand(7, 9, dtype=dtype) + 0.1
    _check(lambda t: getattr(torch, name)(t * 0.9 - 0.3) + 1, x)


@pytest.mark.parametrize("k", range(len(BINARY)))
def test_binary_with_broadcasting(k):
    a, b = torch.randn(6, 1, 5), torch.rand(4, 5) + 0.5
    _check(BINARY[k], a, b)


@pytest.mark.parametrize("fn", [
    lambda t: t.sum(), lambda t: t.sum(-1), lambda t: t.sum((1, 2)), lambda t: t.mean(0),
    lambda t: t.amax(-1), lambda t: (t * t).sum(-1, keepdim=True) / t.shape[-1],
    lambda t: t.softmax(-1), lambda t: t.log_softmax(1), lambda t: t.var(-1),
])
def test_reductions(fn):
    _check(fn, torch.randn(3, 4, 5))


@pytest.mark.parametrize("make", [
    lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 5)),
    lambda: nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3),
                          nn.LogSoftmax(-1)),
])
def test_layers_values_and_gradients(make):
    torch.manual_seed(0)
    m = make()
    x = torch.randn(3, 2, 8, 8) if isinstance(m[0], nn.Conv2d) else torch.randn(3, 6)
    target = torch.tensor([0, 2, 1])
    loss_fn = (lambda out: F.cross_entropy(out, target)) if isinstance(m[0], nn.Conv2d) else \
        (lambda out: F.nll_loss(out, target))
    cf = torch.compile(lambda t: loss_fn(m(t)))
    with torch.no_grad():
        cf(x)
        np.testing.assert_allclose(cf(x).item(), loss_fn(m(x)).item(), rtol=1e-5)
    grads = []
    for f in (cf, cf, lambda t: loss_fn(m(t))):
        m.zero_grad()
        f(x).backward()
        grads.append([p.grad.numpy().copy() for p in m.parameters()])
    for g_c, g_e in zip(grads[1], grads[2]):
        np.testing.assert_allclose(g_c, g_e, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dims", [0, 1, (0, 2), (0, 1), (1, 2), (2, 0, 1)])
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_any_dims_fuse_with_their_producers(dims, op, keepdim):
    x = torch.randn(5, 6, 7, dtype=torch.float64)
    y = torch.randn(6, 1, dtype=torch.float64)          # broadcast into the space
    f = torch.compile(lambda a, b: getattr(torch, op)(torch.exp(a * 0.5) - b, dims,
                                                      keepdim=keepdim))
    f(x, y)
    got = f(x, y)
    ref = {"sum": np.sum, "amax": np.max, "amin": np.min}[op](
        np.exp(x.numpy() * 0.5) - y.numpy(), axis=dims, keepdims=keepdim)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)
    (k,) = f.kernels()
    assert k.split(": ")[1].startswith("reduce [mul, exp, sub,"), k


def test_bias_gradient_is_one_kernel_over_the_batch():
    x = torch.randn(16, 8, requires_grad=True)
    f = torch.compile(lambda t: torch.relu(t * 2 - 1).sum(0))
    f(x.detach())
    got = f(x.detach())
    np.testing.assert_allclose(got.numpy(), np.maximum(x.detach().numpy() * 2 - 1, 0).sum(0),
                               rtol=1e-6)
    assert len(f.kernels()) == 1


def test_a_large_float32_sum_is_as_accurate_as_numpys():
    x = torch.rand(1 << 18) + 0.5  # same-sign values: the error grows with every addition
    f = torch.compile(lambda t: (t * 3).sum())
    f(x)
    got = float(f(x))
    ref = float((x.numpy().astype(np.float64) * 3).sum())
    assert abs(got - ref) / ref < 1e-6  # numpy's pairwise float32 sum is ~1e-7 here
    assert f.kernels()[0].startswith("ft_reduce")
