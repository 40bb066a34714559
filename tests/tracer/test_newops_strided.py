"""as_strided_scatter, nonzero_static and empty_permuted against numpy (a storage written
through np.lib.stride_tricks, np.argwhere) and PyTorch 2.13's errors, checked by hand."""
import numpy as np
import pytest

import fusetorch as torch


def _scatter_ref(storage, own_offset, shape, strides, src, size, stride, offset):
    """PyTorch's as_strided_scatter: the whole storage cloned, src written through the view."""
    st = storage.copy()
    view = np.lib.stride_tricks.as_strided(st[offset:], size, tuple(s * 8 for s in stride))
    view[...] = src
    return np.lib.stride_tricks.as_strided(st[own_offset:], shape, tuple(s * 8 for s in strides))


@pytest.mark.parametrize("case", ["contiguous", "transposed", "row_slice", "column_slice"])
def test_as_strided_scatter_matches_a_storage_write(case):
    base = np.arange(20.0).reshape(4, 5)
    t = torch.tensor(base)
    x, own, shape, strides = {
        "contiguous": (t, 0, (4, 5), (5, 1)), "transposed": (t.t(), 0, (5, 4), (1, 5)),
        "row_slice": (t[1:], 5, (3, 5), (5, 1)), "column_slice": (t[:, 2:], 2, (4, 3), (5, 1)),
    }[case]
    src = np.random.default_rng(0).standard_normal((2, 3))
    for offset in (None, 4):
        got = torch.as_strided_scatter(x, torch.tensor(src), (2, 3), (1, 6), offset)
        want = _scatter_ref(base.ravel(), own, shape, strides, src, (2, 3), (1, 6),
                            own if offset is None else offset)
        np.testing.assert_array_equal(got.numpy(), want)


def test_as_strided_scatter_gradients_and_errors():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    s = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, s: torch.as_strided_scatter(
        x[1:], s, (2, 2), (1, 2), 5), (x, s))
    a = torch.zeros(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.as_strided_scatter(a, torch.ones(2, 2), (2, 2), (0, 1))
    with pytest.raises(RuntimeError, match="src size = \\[2, 2\\], slice size = \\[2, 3\\]"):
        torch.as_strided_scatter(a, torch.ones(2, 2), (2, 3), (1, 2))
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        torch.as_strided_scatter(a, torch.ones(2, 2), (2, 2), (5, 2), 6)


def test_nonzero_static_matches_argwhere():
    rng = np.random.default_rng(1)
    a = (rng.uniform(size=(3, 4, 2)) > 0.6) * rng.standard_normal((3, 4, 2))
    want = np.argwhere(a)
    for size in (0, 3, len(want), len(want) + 4):
        got = torch.nonzero_static(torch.tensor(a), size=size, fill_value=-9).numpy()
        ref = np.full((size, 3), -9)
        k = min(size, len(want))
        ref[:k] = want[:k]
        np.testing.assert_array_equal(got, ref)
    assert torch.nonzero_static(torch.tensor(3.0), size=2).shape == (2, 0)
    assert torch.tensor([[0, 1]]).nonzero_static(size=1).tolist() == [[0, 1]]
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        torch.nonzero_static(torch.ones(2), size=-1)


def test_empty_permuted_strides_and_errors():
    t = torch.empty_permuted((2, 3, 4), (2, 0, 1), dtype=torch.float64)
    assert t.shape == (2, 3, 4) and t.stride() == (3, 1, 6) and t.dtype == torch.float64
    assert torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == (12, 1, 3)
    assert torch.empty_permuted([2, 3], [1, 0], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
        torch.empty_permuted((2, 3, 4), (0, 0, 1))
    with pytest.raises(RuntimeError, match="len\\(size\\) = 3 is not equal to "
                                           "len\\(physical_layout\\) = 2"):
        torch.empty_permuted((2, 3, 4), (0, 1))
    with pytest.raises(RuntimeError, match="but got 3 at index 2"):
        torch.empty_permuted((2, 3, 4), (0, 1, 3))


def test_nonzero_static_in_a_graph_equals_eager():
    x = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    f = torch.compile(lambda v, n=0: torch.nonzero_static(v * 2, size=5, fill_value=-3))
    for v in (x, torch.zeros(2, 3), x.t().contiguous().t()):
        np.testing.assert_array_equal(f(v).numpy(), torch.nonzero_static(v, size=5,
                                                                          fill_value=-3).numpy())
