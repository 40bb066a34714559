"""The row accumulation kernel behind an accumulating index_put by one index over the first
dim (Embedding's gradient; runtime/eager_kernels.add_rows): the same bits as numpy's
`add.at`, which adds in the same order, and numpy's path wherever it does not apply."""
import numpy as np
import pytest

from fusetorch._policy import POLICY
import fusetorch as torch
from fusetorch.runtime import eager_kernels
from fusetorch.runtime.device import cpu_backend

RNG = np.random.default_rng(3)


def _compiler():
    if not POLICY.eager_kernels:
        pytest.skip("FUSETORCH_EAGER_COMPILE=0: numpy adds")
    if eager_kernels._build_add_rows(np.dtype(np.float32)) is False:
        pytest.skip("no C compiler")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_as_add_at_with_repeats_and_negative_rows(dtype):
    _compiler()
    out = RNG.standard_normal((60, 33)).astype(dtype)
    rows = RNG.integers(-60, 60, 800)  # every row many times, negative ones wrapped
    v = RNG.standard_normal((800, 33)).astype(dtype)
    want = out.copy()
    np.add.at(want, (rows,), v)
    got = out.copy()
    assert eager_kernels.add_rows(got, rows, v)
    np.testing.assert_array_equal(got, want)


def test_what_it_does_not_take_goes_to_numpy():
    out = np.zeros((60, 80), np.float32)
    rows = RNG.integers(0, 60, 100)
    v = RNG.standard_normal((100, 80)).astype(np.float32)
    assert not eager_kernels.add_rows(out, rows, v.astype(np.float64))  # dtype
    assert not eager_kernels.add_rows(out, rows, np.asfortranarray(v))  # layout
    assert not eager_kernels.add_rows(out, rows > 30, v)  # a mask is not an index
    assert not eager_kernels.add_rows(out, rows[:10], v[:10])  # too small to pay
    assert not out.any()


def test_index_put_accumulate_and_embedding_gradient_against_float64():
    impl = cpu_backend().impl
    x = np.zeros((50, 96), np.float32)
    idx = RNG.integers(0, 50, 200)
    v = RNG.standard_normal((200, 96)).astype(np.float32)
    got = impl["index_put"](x, v, idx, spec=(("tensor", 0),), accumulate=True)
    want = np.zeros((50, 96))
    np.add.at(want, (idx,), v.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    emb = torch.nn.Embedding(50, 96)
    out = emb(torch.tensor(idx.reshape(8, 25)))
    g = RNG.standard_normal(out.shape).astype(np.float32)
    out.backward(torch.tensor(g))
    want = np.zeros((50, 96))
    np.add.at(want, (idx,), g.reshape(200, 96).astype(np.float64))
    np.testing.assert_allclose(emb.weight.grad.numpy(), want, rtol=1e-5, atol=1e-5)
