"""Eager fast paths that replace a slow numpy call: same results as the plain numpy call."""
import numpy as np

from fusetorch.runtime.eager import make_table

T = make_table(np)


def test_scatter_add_with_one_index_per_row_matches_add_at():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 5, 4)).astype(np.float32)
    idx = rng.integers(0, 4, (30, 5, 1))
    src = rng.standard_normal((30, 5, 1)).astype(np.float32)
    want = x.copy()
    np.add.at(want, (np.arange(30)[:, None, None], np.arange(5)[None, :, None], idx), src)
    np.testing.assert_array_equal(T["scatter_add"](x, idx, src, dim=2), want)
