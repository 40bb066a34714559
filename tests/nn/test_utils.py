"""nn.utils: gradient clipping and parameter vectors, against numpy."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.nn.utils import (clip_grad_norm_, clip_grad_value_, parameters_to_vector,
                                vector_to_parameters)


def _params_with_grads(*grads):
    ps = []
    for g in grads:
        p = torch.zeros(*np.shape(g), requires_grad=True)
        p.grad = torch.tensor(np.asarray(g, dtype=np.float32))
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_clip_grad_norm_matches_numpy(norm_type):
    g1, g2 = np.random.randn(3, 4), np.random.randn(5)
    ps = _params_with_grads(g1, g2)
    flat = np.concatenate([g1.ravel(), g2.ravel()])
    total = np.abs(flat).max() if norm_type == float("inf") else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    got = clip_grad_norm_(ps, 0.5, norm_type)
    assert np.isclose(got.item(), total, rtol=1e-5)
    scale = min(1.0, 0.5 / (total + 1e-6))
    np.testing.assert_allclose(ps[0].grad.numpy(), g1 * scale, rtol=1e-5)
    np.testing.assert_allclose(ps[1].grad.numpy(), g2 * scale, rtol=1e-5)


def test_clip_grad_norm_leaves_small_gradients():
    ps = _params_with_grads([0.1, -0.2])
    clip_grad_norm_(ps, 10.0)
    np.testing.assert_allclose(ps[0].grad.numpy(), [0.1, -0.2], rtol=1e-6)


def test_clip_grad_norm_nonfinite_error():
    ps = _params_with_grads([np.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)


def test_get_total_norm_and_clip_grads_with_norm():
    # the two halves of clip_grad_norm_ (PyTorch 2.6), e.g. with the norm reduced in between
    g1, g2 = np.array([[3.0, 0.0], [0.0, -4.0]]), np.array([12.0])
    ps = _params_with_grads(g1, g2)
    total = nn.utils.get_total_norm([p.grad for p in ps])
    assert np.isclose(total.item(), 13.0, rtol=1e-6) and total.dim() == 0
    assert np.isclose(nn.utils.get_total_norm(ps[1].grad, norm_type=1).item(), 12.0)
    assert nn.utils.get_total_norm([]).item() == 0.0
    assert nn.utils.clip_grads_with_norm_(ps, 6.5, total) is None
    np.testing.assert_allclose(ps[0].grad.numpy(), g1 * 6.5 / (13.0 + 1e-6), rtol=1e-6)
    np.testing.assert_allclose(ps[1].grad.numpy(), g2 * 6.5 / (13.0 + 1e-6), rtol=1e-6)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        nn.utils.get_total_norm([torch.tensor([np.nan])], error_if_nonfinite=True)
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient "
                                         "clipping will occur."):
        clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_value():
    g = np.random.randn(10) * 3
    ps = _params_with_grads(g)
    clip_grad_value_(ps, 1.0)
    np.testing.assert_allclose(ps[0].grad.numpy(), np.clip(g, -1, 1), rtol=1e-6)


def test_vector_round_trip():
    ps = [torch.randn(2, 3), torch.randn(4)]
    v = parameters_to_vector(ps)
    np.testing.assert_array_equal(v.numpy(), np.concatenate([p.numpy().ravel() for p in ps]))
    vector_to_parameters(v * 2, ps)
    np.testing.assert_allclose(parameters_to_vector(ps).numpy(), v.numpy() * 2)


def test_legacy_spectral_norm_steps_v_then_u_and_divides_by_sigma():
    # numpy reference of PyTorch's legacy form: in training mode one step v = W^T u / |.|,
    # u = W v / |.|, then sigma = u . W v; in eval mode the buffers are used as they are
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 3))
    u0, v0 = rng.standard_normal(2), rng.standard_normal(3)
    x = rng.standard_normal((4, 3))
    m = nn.utils.spectral_norm(nn.Linear(3, 2).double())
    assert sorted(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    with torch.no_grad():
        m.weight_orig.copy_(torch.tensor(w))
        m.weight_u.copy_(torch.tensor(u0))
        m.weight_v.copy_(torch.tensor(v0))
        m.bias.zero_()
    out = m(torch.tensor(x))
    v = w.T @ u0 / np.linalg.norm(w.T @ u0)
    u = w @ v / np.linalg.norm(w @ v)
    np.testing.assert_allclose(out.detach().numpy(), x @ (w / (u @ w @ v)).T, rtol=1e-12)
    np.testing.assert_allclose(m.weight_u.numpy(), u, rtol=1e-12)
    np.testing.assert_allclose(m.weight_v.numpy(), v, rtol=1e-12)
    m.eval()
    m(torch.tensor(x))
    np.testing.assert_allclose(m.weight_v.numpy(), v, rtol=1e-12)  # no step in eval mode
    # the gradient treats u and v as constants: in eval mode that is the function itself
    xt = torch.tensor(x, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: F.linear(a, b / (m.weight_u @ b @ m.weight_v)),
                                    (xt, m.weight_orig))
    m(xt).sum().backward()
    eps = 1e-6
    for i, j in ((0, 0), (1, 2)):
        wp, wm = w.copy(), w.copy()
        wp[i, j] += eps
        wm[i, j] -= eps
        fd = (x @ (wp / (u @ wp @ v)).T - x @ (wm / (u @ wm @ v)).T).sum() / (2 * eps)
        assert abs(m.weight_orig.grad[i, j].item() - fd) < 1e-6
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]  # as PyTorch orders them
    np.testing.assert_allclose(m.weight.detach().numpy(), w / (u @ w @ v), rtol=1e-12)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(m)
    # transposed convolutions normalise along dim 1 (their output channels)
    c = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert c.weight_u.shape == (3,) and c.weight_v.shape == (8,)
    assert c(torch.ones(1, 2, 3, 3)).shape == (1, 3, 4, 4)


def _bn_eval(num, dims, rng):
    bn = (nn.BatchNorm2d if dims == 4 else nn.BatchNorm1d)(num).double().eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.tensor(rng.standard_normal(num)))
        bn.running_var.copy_(torch.tensor(rng.uniform(0.5, 2.0, num)))
        bn.weight.copy_(torch.tensor(rng.standard_normal(num)))
        bn.bias.copy_(torch.tensor(rng.standard_normal(num)))
    return bn


@pytest.mark.parametrize("kind", ["conv", "conv_no_bias", "conv_transpose", "linear"])
def test_fusion_folds_an_eval_batchnorm_into_the_layer(kind):
    from fusetorch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
    rng = np.random.RandomState(3)
    bn = _bn_eval(4, 2 if kind == "linear" else 4, rng)
    if kind == "linear":
        layer, x = nn.Linear(3, 4).double().eval(), rng.standard_normal((5, 3))
        fused = fuse_linear_bn_eval(layer, bn)
    else:
        layer = (nn.ConvTranspose2d(2, 4, 3) if kind == "conv_transpose" else
                 nn.Conv2d(2, 4, 3, bias=kind == "conv")).double().eval()
        x = rng.standard_normal((2, 2, 5, 5))
        fused = fuse_conv_bn_eval(layer, bn, transpose=kind == "conv_transpose")
    y = layer(torch.tensor(x)).detach().numpy()
    shape = (1, -1) if kind == "linear" else (1, -1, 1, 1)
    mean, var = bn.running_mean.numpy().reshape(shape), bn.running_var.numpy().reshape(shape)
    w, b = bn.weight.detach().numpy().reshape(shape), bn.bias.detach().numpy().reshape(shape)
    expect = (y - mean) / np.sqrt(var + bn.eps) * w + b
    np.testing.assert_allclose(fused(torch.tensor(x)).detach().numpy(), expect, rtol=1e-10,
                               atol=1e-12)
    assert isinstance(fused.weight, nn.Parameter) and isinstance(fused.bias, nn.Parameter)
    assert fused is not layer and fused.weight.shape == layer.weight.shape
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_linear_bn_eval(nn.Linear(3, 4), nn.BatchNorm1d(4))
    with pytest.raises(AssertionError, match="To fuse, linear.out_features == bn.num_features or "
                                             "bn.num_features == 1, got linear.out_features=4 "
                                             "and bn.num_features=3"):
        fuse_linear_bn_eval(nn.Linear(3, 4).eval(), nn.BatchNorm1d(3).eval())


def test_modules_utils_tuple_helpers_and_prefix_consumption():
    from fusetorch.nn.modules.utils import (_pair, _quadruple, _reverse_repeat_tuple, _single,
                                            _triple, consume_prefix_in_state_dict_if_present)
    assert _pair(3) == (3, 3) and _pair([1, 2]) == (1, 2) and _single(2) == (2,)
    assert _triple(0) == (0, 0, 0) and _quadruple(1) == (1, 1, 1, 1) and _pair.__name__ == "_pair"
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    model = nn.Sequential(nn.Linear(2, 2))
    sd = {"module." + k: v for k, v in model.state_dict().items()}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["0.weight", "0.bias"]
    model.load_state_dict(sd)


def test_clip_grad_norm_deprecated_name_warns_and_clips():
    ps = _params_with_grads(np.array([3.0, 4.0]))
    with pytest.warns(FutureWarning, match=r"`torch.nn.utils.clip_grad_norm` is now deprecated "
                                           r"in favor of `torch.nn.utils.clip_grad_norm_`."):
        total = nn.utils.clip_grad_norm(ps, 1.0)
    assert np.isclose(total.item(), 5.0)
    np.testing.assert_allclose(ps[0].grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_skip_init_builds_the_module_and_checks_its_class():
    m = nn.utils.skip_init(nn.Linear, 4, 3, bias=False, dtype=torch.float64)
    assert isinstance(m, nn.Linear) and m.weight.shape == (3, 4) and m.bias is None
    assert m.weight.dtype == torch.float64
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        nn.utils.skip_init(int, 2)
    with pytest.raises(TypeError, match="issubclass"):
        nn.utils.skip_init(torch.ones, 2)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip "
                                           "initialization"):
        nn.utils.skip_init(NoDevice, 2)
    assert nn.utils.fuse_conv_bn_eval is nn.utils.fusion.fuse_conv_bn_eval


def test_convert_conv2d_weight_memory_format_reaches_nested_convs():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.ReLU(), nn.ConvTranspose2d(4, 2, 2)),
                        nn.Linear(2, 2))
    before = [m.weight.detach().clone() for m in (net[0], net[1][1])]
    w0 = net[0].weight
    assert nn.utils.convert_conv2d_weight_memory_format(net, torch.channels_last) is net
    for m, b in zip((net[0], net[1][1]), before):
        assert m.weight.is_contiguous(memory_format=torch.channels_last)
        np.testing.assert_array_equal(m.weight.detach().numpy(), b.numpy())
    assert net[0].weight is w0  # (the Parameter itself, its data replaced)
    x = torch.randn(1, 3, 5, 5)
    assert net[1](net[0](x)).shape == (1, 2, 4, 4)
