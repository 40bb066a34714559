"""nn.utils: gradient clipping and parameter vectors, against numpy."""
import numpy as np
import pytest

import fusetorch as torch
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
