"""The activations whose pure part is a `@composite` (nn/_functional/activation.py): from the
replays on, a large input's fused program and a small input's interpreted graph give numpy's
float64 values and the textbook gradients, with the special values (0, +-inf, NaN) at their
places, and the same grad_fn as a plain call."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch._policy import POLICY
from fusetorch.runtime.program import wait_for_builds
from fusetorch.tracer import composite_programs as cp

F = torch.nn.functional
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _softplus(x, beta=1.0, threshold=20.0):
    bx = x * beta
    with np.errstate(over="ignore"):
        return np.where(bx > threshold, x, np.log1p(np.exp(np.minimum(bx, threshold))) / beta)


def _sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))


# name -> (call, numpy value, numpy derivative away from kinks, grad_fn)
CASES = {
    "elu": (lambda t: F.elu(t, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0))),
            lambda x: np.where(x > 0, 1.0, 0.7 * np.exp(np.minimum(x, 0))), "EluBackward0"),
    "selu": (F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
             lambda x: SELU_SCALE * np.where(x > 0, 1.0, SELU_ALPHA * np.exp(np.minimum(x, 0))),
             "EluBackward0"),
    "celu": (lambda t: F.celu(t, 2.0), lambda x: np.where(x > 0, x, 2.0 * np.expm1(np.minimum(x, 0) / 2)),
             lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0) / 2)), "EluBackward0"),
    "softplus": (lambda t: F.softplus(t, 2.0, 5.0), lambda x: _softplus(x, 2.0, 5.0),
                 lambda x: np.where(2 * x > 5, 1.0, _sigmoid(2 * x)), "SoftplusBackward0"),
    "logsigmoid": (F.logsigmoid, lambda x: -_softplus(-x), lambda x: _sigmoid(-x),
                   "LogSigmoidBackward0"),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x)),
             lambda x: np.tanh(_softplus(x)) + x * (1 - np.tanh(_softplus(x)) ** 2) * _sigmoid(x),
             "MishBackward0"),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
                  lambda x: 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
                  + 0.5 * x * (1 - np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)) ** 2)
                  * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x ** 2), "GeluBackward0"),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
                    lambda x: np.where(np.abs(x) < 3, 1 / 6, 0.0), "HardsigmoidBackward0"),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: np.where(x < -3, 0.0, np.where(x > 3, 1.0, (2 * x + 3) / 6)),
                  "HardswishBackward0"),
    "hardtanh": (lambda t: F.hardtanh(t, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0),
                 lambda x: np.where((x > -0.5) & (x < 2.0), 1.0, 0.0), "HardtanhBackward0"),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6), lambda x: np.where((x > 0) & (x < 6), 1.0, 0.0),
              "HardtanhBackward0"),
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
                   lambda x: np.where(x > 0, 1.0, 0.2), "LeakyReluBackward0"),
    "threshold": (lambda t: F.threshold(t, 0.5, -2.0), lambda x: np.where(x <= 0.5, -2.0, x),
                  lambda x: np.where(x > 0.5, 1.0, 0.0), "ThresholdBackward0"),
    "hardshrink": (lambda t: F.hardshrink(t, 0.5), lambda x: np.where(np.abs(x) > 0.5, x, 0.0),
                   lambda x: np.where(np.abs(x) > 0.5, 1.0, 0.0), "HardshrinkBackward0"),
    "softshrink": (lambda t: F.softshrink(t, 0.5),
                   lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0)),
                   lambda x: np.where(np.abs(x) > 0.5, 1.0, 0.0), "SoftshrinkBackward0"),
}
KINKS = {"gelu_tanh": [], "elu": [0], "selu": [0], "celu": [0], "softplus": [2.5], "hardsigmoid": [-3, 3],
         "hardswish": [-3, 3], "hardtanh": [-0.5, 2], "relu6": [0, 6], "leaky_relu": [0],
         "threshold": [0.5], "hardshrink": [-0.5, 0.5], "softshrink": [-0.5, 0.5], "logsigmoid": [],
         "mish": []}


@pytest.fixture
def replays(monkeypatch):
    monkeypatch.setattr(POLICY, "eager_kernels", True)
    cp.clear()
    yield
    cp.clear()


def _inputs(shape, rng):
    x = rng.uniform(-8, 8, shape)
    flat = x.reshape(-1)
    flat[:4] = [0.0, -0.0, np.inf, -np.inf]
    return x


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("shape", [(64, 80), (3, 5)])
def test_replayed_activation_values_and_gradients(replays, name, shape):
    call, value, slope, grad_fn = CASES[name]
    rng = np.random.default_rng(7)
    xv = _inputs(shape, rng)
    gv = rng.standard_normal(shape)
    with np.errstate(invalid="ignore"):
        want, dwant = value(xv), gv * slope(xv)
    away = np.all([np.abs(xv - k) > 1e-9 for k in KINKS[name]], axis=0) & np.isfinite(xv)
    for k in range(4):  # plain, the capture, then replays
        x = torch.tensor(xv, requires_grad=True)
        y = call(x)
        if k == 3:
            wait_for_builds(60)
        assert type(y.grad_fn).__name__ == grad_fn
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-14)
        y.backward(torch.tensor(gv))
        np.testing.assert_allclose(x.grad.numpy()[away], dwant[away], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["elu", "hardtanh", "leaky_relu", "threshold", "hardsigmoid"])
def test_in_place_forms_write_the_replayed_value(replays, name):
    call = {"elu": lambda t: F.elu(t, 0.7, inplace=True),
            "hardtanh": lambda t: F.hardtanh(t, -0.5, 2.0, inplace=True),
            "leaky_relu": lambda t: F.leaky_relu(t, 0.2, inplace=True),
            "threshold": lambda t: F.threshold(t, 0.5, -2.0, inplace=True),
            "hardsigmoid": lambda t: F.hardsigmoid(t, inplace=True)}[name]
    xv = _inputs((64, 80), np.random.default_rng(3))
    for _ in range(4):
        t = torch.tensor(xv)
        out = call(t)
        assert out is t
        np.testing.assert_allclose(t.numpy(), CASES[name][1](xv), rtol=1e-12)
    wait_for_builds(60)


def test_nan_passes_as_plain_eager():
    """NaN inputs: the replayed composite gives what the plain call gave (PyTorch's NaN
    branches), whichever path runs."""
    xv = np.full((64, 80), np.nan)
    for name, (call, *_rest) in sorted(CASES.items()):
        plain = [call(torch.tensor(xv)).numpy() for _ in range(4)]
        for p in plain[1:]:
            np.testing.assert_array_equal(p, plain[0])


def test_hardswish_edges_as_pytorch():
    """x * relu6(x + 3) / 6: NaN at -inf (-inf * 0), -0 below -3; gradient (PyTorch's formula)
    0 up to -3, (2x + 3) / 6 strictly inside, 1 from 3 on, and 0 (not inf * 0) at -inf."""
    x = torch.tensor([-np.inf, -4.0, -3.0, 0.5, 3.0, np.inf], dtype=torch.float64,
                     requires_grad=True)
    y = F.hardswish(x)
    got = y.detach().numpy()
    assert np.isnan(got[0]) and got[1] == 0 and np.signbit(got[1]) and np.signbit(got[2])
    assert got[3] == 0.5 * 3.5 / 6 and got[4] == 3.0 and got[5] == np.inf
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 4.0 / 6, 1.0, 1.0]


@pytest.mark.parametrize("shape", [(64, 80), (3, 5)])
def test_replayed_nan_to_num_and_logit(replays, shape):
    """nan_to_num and logit replay as @composite: numpy's values (NaN, +-inf and the dtype's
    limits in place; logit NaN outside [0, 1], clamped with eps) and logit's gradient
    1 / (x (1 - x))."""
    rng = np.random.default_rng(11)
    xv = rng.uniform(-0.2, 1.2, shape)
    flat = xv.reshape(-1)
    flat[:5] = [np.nan, np.inf, -np.inf, 0.0, 1.0]
    inside = (xv > 0) & (xv < 1)
    with np.errstate(all="ignore"):
        want_logit = np.where((xv < 0) | (xv > 1), np.nan, np.log(xv) - np.log1p(-xv))
        c = np.clip(xv, 0.1, 0.9)
        want_eps = np.where(np.isnan(xv), np.nan, np.log(c) - np.log1p(-c))
    for k in range(4):
        x = torch.tensor(xv, requires_grad=True)
        y = torch.logit(x)
        if k == 3:
            wait_for_builds(60)
        np.testing.assert_allclose(y.detach().numpy(), want_logit, rtol=1e-12)
        y.backward(torch.ones(shape, dtype=torch.float64))
        np.testing.assert_allclose(x.grad.numpy()[inside], 1 / (xv * (1 - xv))[inside],
                                   rtol=1e-10)
        np.testing.assert_allclose(torch.logit(torch.tensor(xv), 0.1).numpy(), want_eps,
                                   rtol=1e-12)
        got = torch.nan_to_num(torch.tensor(xv), 2.0, posinf=5.0).numpy()
        big = np.finfo(np.float64).max
        np.testing.assert_array_equal(got, np.nan_to_num(xv, nan=2.0, posinf=5.0, neginf=-big))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_logit_of_half_precision_rounds_once(dtype):
    """logit of float16/bfloat16 computes in float32 and rounds once (log x - log1p(-x) in half
    cancelled: 0.3501 gave -0.6191 for -0.6186): within half an ulp of float64's value."""
    xs = np.linspace(0.02, 0.98, 97)
    t = torch.tensor(xs).to(dtype)
    x64 = t.double().numpy()
    want = np.log(x64) - np.log1p(-x64)
    got = torch.logit(t).double().numpy()
    np.testing.assert_array_equal(got, torch.tensor(want).to(dtype).double().numpy())
