"""nn.init: gains, fan rules, and the distribution each initialiser draws from.

Statistics use thousands of draws with bounds several standard errors wide (the conftest seeds
the generator, so each run draws the same numbers). Gains and messages are PyTorch 2.13.0's.
"""
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.nn import init


def sample_std_ok(a, std, n=None):
    """The sample standard deviation is within 5 standard errors of `std`."""
    n = a.size if n is None else n
    return abs(a.std() - std) < 5 * std / math.sqrt(2 * n)


@pytest.mark.parametrize("name,param,want", [
    ("linear", None, 1), ("conv1d", None, 1), ("conv2d", None, 1), ("conv_transpose2d", None, 1),
    ("sigmoid", None, 1), ("tanh", None, 5.0 / 3), ("relu", None, math.sqrt(2.0)),
    ("leaky_relu", None, math.sqrt(2.0 / (1 + 0.01 ** 2))),
    ("leaky_relu", 0.2, math.sqrt(2.0 / 1.04)), ("leaky_relu", 1, 1.0),
    ("leaky_relu", math.sqrt(5), math.sqrt(2.0 / 6)), ("selu", None, 0.75),
])
def test_calculate_gain(name, param, want):
    assert init.calculate_gain(name, param) == pytest.approx(want, rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("shape,fans", [((7, 3), (3, 7)), ((6, 4, 3, 2), (24, 36)),
                                        ((5, 2, 3), (6, 15))])
def test_fan_in_and_fan_out(shape, fans):
    assert init._calculate_fan_in_and_fan_out(torch.empty(*shape)) == fans


def test_fan_needs_two_dims():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                                         "with fewer than 2 dimensions"):
        init.xavier_uniform_(torch.empty(5))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(torch.empty(3, 4), mode="fan_avg")


def test_uniform_and_normal():
    w = torch.empty(200, 100)
    assert init.uniform_(w, -0.3, 0.7) is w
    a = w.numpy()
    assert a.min() >= -0.3 and a.max() <= 0.7
    assert a.min() < -0.29 and a.max() > 0.69
    assert abs(a.mean() - 0.2) < 5 * (1 / math.sqrt(12)) / math.sqrt(a.size)
    assert init.normal_(w, 2.0, 0.5) is w
    a = w.numpy()
    assert abs(a.mean() - 2.0) < 5 * 0.5 / math.sqrt(a.size)
    assert sample_std_ok(a, 0.5)


def test_constant_ones_zeros_eye():
    w = torch.empty(3, 5)
    assert init.constant_(w, 0.25) is w and (w.numpy() == 0.25).all()
    assert init.ones_(w) is w and (w.numpy() == 1).all()
    assert init.zeros_(w) is w and (w.numpy() == 0).all()
    assert init.eye_(w) is w
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(torch.empty(2, 2, 2))


def test_dirac_makes_an_identity_convolution():
    w = torch.empty(4, 4, 3, 3)
    init.dirac_(w)
    x = torch.randn(2, 4, 6, 6)
    np.testing.assert_allclose(F.conv2d(x, w, padding=1).numpy(), x.numpy(), atol=1e-6)
    wg = torch.empty(6, 2, 3)
    init.dirac_(wg, groups=3)
    x1 = torch.randn(1, 6, 5)
    np.testing.assert_allclose(F.conv1d(x1, wg, padding=1, groups=3).numpy(), x1.numpy(),
                               atol=1e-6)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are "
                                         "supported"):
        init.dirac_(torch.empty(3, 3))


def test_xavier():
    w = torch.empty(300, 200)
    init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 500)
    a = w.numpy()
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    assert sample_std_ok(a, bound / math.sqrt(3))
    w4 = torch.empty(64, 32, 3, 3)  # fans 288 and 576
    init.xavier_normal_(w4)
    assert sample_std_ok(w4.numpy(), math.sqrt(2.0 / (288 + 576)))


def test_kaiming():
    w = torch.empty(256, 128, 3)  # fan_in 384, fan_out 768
    init.kaiming_uniform_(w, a=0, mode="fan_in", nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 384)
    a = w.numpy()
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    assert np.abs(w.numpy()).max() <= math.sqrt(2.0) * math.sqrt(3.0 / 768)
    init.kaiming_normal_(w, nonlinearity="relu")
    assert sample_std_ok(w.numpy(), math.sqrt(2.0 / 384))
    init.kaiming_normal_(w, a=0.2, mode="fan_out")  # leaky_relu with slope 0.2
    assert sample_std_ok(w.numpy(), math.sqrt(2.0 / 1.04) / math.sqrt(768))
    # the layers' default: a = sqrt(5) gives bound 1 / sqrt(fan_in)
    init.kaiming_uniform_(w, a=math.sqrt(5))
    assert np.abs(w.numpy()).max() <= 1 / math.sqrt(384)
    assert np.abs(w.numpy()).max() > 0.99 / math.sqrt(384)


def test_zero_element_tensors_warn():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(torch.empty(0, 3))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(torch.empty(3, 0))


@pytest.mark.parametrize("a,b", [(-2.0, 2.0), (0.5, 1.0), (-1.0, -0.8)])
def test_trunc_normal(a, b):
    w = torch.empty(100, 50)
    assert init.trunc_normal_(w, mean=0.0, std=1.0, a=a, b=b) is w
    arr = w.numpy()
    assert arr.min() >= a and arr.max() <= b
    # the mean of the truncated normal: mean + std * (phi(a) - phi(b)) / (Phi(b) - Phi(a))
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    want = (phi(a) - phi(b)) / (cdf(b) - cdf(a))
    assert abs(arr.mean() - want) < 5 * (b - a) / math.sqrt(12) / math.sqrt(arr.size) + 1e-3


def test_orthogonal():
    for shape in ((6, 4), (3, 8), (4, 2, 3)):
        w = torch.empty(*shape)
        assert init.orthogonal_(w, gain=2.0) is w
        m = w.numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
        if m.shape[0] >= m.shape[1]:
            np.testing.assert_allclose(m.T @ m, np.eye(m.shape[1]), atol=1e-5)
        else:
            np.testing.assert_allclose(m @ m.T, np.eye(m.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(torch.empty(3))


def test_sparse():
    w = torch.empty(10, 6)
    init.sparse_(w, 0.3, std=0.5)
    zeros_per_col = (w.numpy() == 0).sum(0)
    assert (zeros_per_col == 3).all()  # ceil(0.3 * 10)


def test_init_runs_without_grad_and_keeps_parameters_leaves():
    p = nn.Parameter(torch.empty(4, 3))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
               init.zeros_, init.ones_, init.eye_, init.orthogonal_,
               lambda t: init.constant_(t, 3), lambda t: init.trunc_normal_(t)):
        out = fn(p)
        assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    # in-place writes to a leaf that requires grad are refused outside no_grad; init is inside
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        p.fill_(1.0)


def test_generator_makes_draws_repeatable():
    g = torch.Generator().manual_seed(7)
    a = init.uniform_(torch.empty(5), generator=g).numpy().copy()
    g.manual_seed(7)
    b = init.uniform_(torch.empty(5), generator=g).numpy()
    np.testing.assert_array_equal(a, b)
    torch.manual_seed(5)
    c = init.normal_(torch.empty(5)).numpy().copy()
    torch.manual_seed(5)
    np.testing.assert_array_equal(c, init.normal_(torch.empty(5)).numpy())


def test_deprecated_aliases_warn():
    w = torch.empty(3, 3)
    with pytest.warns(FutureWarning, match="`nn.init.xavier_uniform` is now deprecated in favor "
                                           "of `nn.init.xavier_uniform_`."):
        init.xavier_uniform(w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert init.constant(w, 2.0) is w and (w.numpy() == 2).all()


def test_layer_defaults_follow_pytorch_fan_in():
    # Linear, Conv1d, Conv2d: weight and bias within 1/sqrt(fan_in), spread over that range
    for layer, fan_in in ((nn.Linear(300, 200), 300), (nn.Conv2d(8, 64, 3, groups=2), 36),
                          (nn.Conv1d(6, 300, 5), 30)):
        bound = 1 / math.sqrt(fan_in)
        wt = layer.weight.detach().numpy()
        assert np.abs(wt).max() <= bound and np.abs(wt).max() > 0.98 * bound
        assert sample_std_ok(wt, bound / math.sqrt(3))
        assert np.abs(layer.bias.detach().numpy()).max() <= bound
