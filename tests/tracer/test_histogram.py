"""torch.histogram / histogramdd against numpy.histogram / histogramdd in float64 (same edges,
same rule: bins closed on the left, the last also on the right), and PyTorch 2.13's errors and
edge cases, checked by hand."""
import numpy as np
import pytest

import fusetorch as torch


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("density", [False, True])
def test_histogram_matches_numpy(density):
    a = _data((6, 7))
    w = np.random.default_rng(1).uniform(0, 2, a.shape)
    x = torch.tensor(a)
    h, e = torch.histogram(x, 6, weight=torch.tensor(w), density=density)  # the data's range
    want, edges = np.histogram(a, 6, weights=w, density=density)
    np.testing.assert_allclose(e.numpy(), edges, rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-12)
    edges = np.array([-2.0, -0.5, 0.0, 0.1, 1.5])
    h, e = x.t().histogram(torch.tensor(edges), density=density)  # non-contiguous input
    np.testing.assert_allclose(h.numpy(), np.histogram(a, edges, density=density)[0],
                               rtol=1e-12)
    assert not h.requires_grad


def test_histogram_edges_and_outside_values():
    x = torch.tensor([0.0, 1.0, 1.0, 4.0, 4.5, float("nan"), float("inf"), -1.0])
    h, e = torch.histogram(x, 4, range=(0.0, 4.0))
    np.testing.assert_array_equal(h.numpy(), [1, 2, 0, 1])  # 4.0 in the last bin
    h, e = torch.histogram(torch.tensor([3.0, 3.0]), 2)  # zero width widens by 0.5
    np.testing.assert_array_equal(e.numpy(), [2.5, 3.0, 3.5])
    h, e = torch.histogram(torch.tensor([]), 2)
    np.testing.assert_array_equal(e.numpy(), [0.0, 0.5, 1.0])
    h, e = torch.histogram(torch.tensor(2.0, dtype=torch.float64), 1)  # 0-d
    assert h.dtype == torch.float64 and h.tolist() == [1.0]
    h, e = torch.histogram(torch.tensor([1.0, 1.0, 2.0]), torch.tensor([1.0, 1.0, 2.0]))
    assert h.tolist() == [0.0, 3.0]  # repeated edges: upper_bound's bin


def test_histogram_errors():
    x = torch.tensor([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        torch.histogram(torch.tensor([1, 2]), 2)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0"):
        torch.histogram(x, 0)
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 3 max 1"):
        torch.histogram(x, 2, range=(3.0, 1.0))
    with pytest.raises(RuntimeError, match=r"range \[1, inf\] is not finite"):
        torch.histogram(torch.tensor([1.0, float("inf")]), 2)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.histogram(x, torch.tensor([0.0, 1.0], dtype=torch.float64))
    with pytest.raises(RuntimeError, match="same dtype, but got input\\(float\\), and "
                                           "weight\\(double\\)"):
        torch.histogram(x, 2, weight=torch.ones(2, dtype=torch.float64))


def test_histogramdd_matches_numpy():
    a = _data((5, 4, 3), 2)
    pts = a.reshape(-1, 3)
    w = np.random.default_rng(3).uniform(0, 1, a.shape[:-1])
    h, e = torch.histogramdd(torch.tensor(a), [3, 2, 4], weight=torch.tensor(w), density=True)
    want, edges = np.histogramdd(pts, [3, 2, 4], weights=w.ravel(), density=True)
    assert isinstance(e, tuple) and len(e) == 3
    for got, ref in zip(e, edges):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-12)
    bins = [np.array([-1.0, 0.0, 2.0]), np.array([-3.0, 3.0]), np.array([-0.5, 0.5, 1.0])]
    h, _ = torch.histogramdd(torch.tensor(a), [torch.tensor(b) for b in bins])
    np.testing.assert_allclose(h.numpy(), np.histogramdd(pts, bins)[0])
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.histogramdd(torch.tensor([1.0]), [2])
    with pytest.raises(RuntimeError, match="size of bins must be equal"):
        torch.histogramdd(torch.tensor(a), [2, 2])
    with pytest.raises(RuntimeError, match="range should have 6 elements, but got 2"):
        torch.histogramdd(torch.tensor(a), 2, range=[0.0, 1.0])


def test_equal_width_bins_agree_with_the_same_edges_given():
    # the linear guess with its local search and the binary search find the same bins, on
    # values at, just below and just above every edge
    e = torch.linspace(-1.7, 2.3, 12)
    x = torch.cat([e, e.nextafter(e - 1), e.nextafter(e + 1), torch.rand(50) * 4 - 1.7])
    a, _ = torch.histogram(x, 11, range=(-1.7, 2.3))
    b, _ = torch.histogram(x, e)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = torch.compile(lambda v: torch.histogram(v, 11, range=(-1.7, 2.3)).hist)
    np.testing.assert_array_equal(c(x).numpy(), a.numpy())
