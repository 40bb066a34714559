"""Splitting, assembling, index arithmetic, gradient and trapezoid rules of issue 27 against
numpy (float64), itertools and central differences; PyTorch's errors as checked by hand."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

R = np.random.default_rng(2027)


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def leaf(a):
    return t64(a).requires_grad_()


def _same_pieces(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)


@pytest.mark.parametrize("spec", [3, 4, 7, [1, 6, 20], [7, 3], [-2], []])
def test_tensor_split_is_numpy_array_split(spec):
    x = R.uniform(-1, 1, (10, 3))
    _same_pieces(torch.tensor_split(t64(x), spec), np.array_split(x, spec))
    _same_pieces(torch.tensor_split(t64(x).t(), spec, dim=1), np.array_split(x.T, spec, 1))


def test_tensor_split_of_tensor_indices_and_errors():
    x = np.arange(10.0)
    _same_pieces(torch.tensor_split(t64(x), torch.tensor([2, 5])), np.array_split(x, [2, 5]))
    _same_pieces(torch.tensor_split(t64(x), torch.tensor(4)), np.array_split(x, 4))
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0"):
        torch.tensor_split(t64(x), 0)
    with pytest.raises(RuntimeError, match="at least a 1-dimensional tensor"):
        torch.tensor_split(torch.tensor(1.0), 2)


def test_directional_splits():
    x = R.uniform(-1, 1, (4, 6, 2))
    _same_pieces(torch.hsplit(t64(x), 3), np.hsplit(x, 3))
    _same_pieces(torch.vsplit(t64(x), [1, 3]), np.vsplit(x, [1, 3]))
    _same_pieces(torch.dsplit(t64(x), 2), np.dsplit(x, 2))
    _same_pieces(torch.hsplit(t64(x[:, 0, 0]), 2), np.hsplit(x[:, 0, 0], 2))
    with pytest.raises(RuntimeError, match="not divisible by the split_size 4"):
        torch.hsplit(t64(x), 4)
    with pytest.raises(RuntimeError, match="torch.dsplit requires a tensor with at least 3"):
        torch.dsplit(t64(x[0]), 2)
    _same_pieces(torch.split_with_sizes(t64(x), [1, 3]), [x[:1], x[1:]])
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 4"):
        torch.split_with_sizes(t64(x), [1, 2])
    _same_pieces(torch.unsafe_chunk(t64(x), 3, 1), np.split(x, 3, 1))
    _same_pieces(torch.unsafe_split(t64(x), 3), [x[:3], x[3:]])


def test_ravel_msort_diagflat():
    x = R.uniform(-1, 1, (3, 4))
    np.testing.assert_array_equal(torch.ravel(t64(x).t()).numpy(), x.T.ravel())
    np.testing.assert_array_equal(torch.msort(t64(x)).numpy(), np.sort(x, 0))
    np.testing.assert_array_equal(torch.diagflat(t64(x), 2).numpy(), np.diagflat(x, 2))
    np.testing.assert_array_equal(torch.diagflat(t64(x), -1).numpy(), np.diagflat(x, -1))


def test_block_diag_cartesian_prod_combinations():
    a, b, c = R.uniform(-1, 1, (2, 3)), R.uniform(-1, 1, 2), np.array(5.0)
    want = np.zeros((4, 6))
    want[:2, :3], want[2, 3:5], want[3, 5] = a, b, c
    got = torch.block_diag(t64(a), t64(b), t64(c))
    np.testing.assert_array_equal(got.numpy(), want)
    assert torch.block_diag(torch.tensor([1]), t64([2.0])).dtype == torch.float64
    assert torch.block_diag().shape == (1, 0)
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        torch.block_diag(torch.zeros(1, 1, 1))
    x, y = np.array([1, 2]), np.array([3, 4, 5])
    assert torch.cartesian_prod(torch.tensor(x), torch.tensor(y)).tolist() == \
        [list(p) for p in itertools.product(x.tolist(), y.tolist())]
    v = torch.tensor([4, 7, 9, 1])
    for r in (1, 2, 3):
        assert torch.combinations(v, r).tolist() == \
            [list(p) for p in itertools.combinations([4, 7, 9, 1], r)]
        assert torch.combinations(v, r, with_replacement=True).tolist() == \
            [list(p) for p in itertools.combinations_with_replacement([4, 7, 9, 1], r)]
    assert torch.combinations(v, 5).shape == (0, 5)
    assert torch.combinations(v, 0).shape == (0,)
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        torch.combinations(torch.zeros(2, 2))


def test_broadcast_shapes_and_unravel_index():
    assert torch.broadcast_shapes((2, 1), (3,), 1) == torch.Size([2, 3])
    assert torch.broadcast_shapes() == torch.Size([])
    with pytest.raises(RuntimeError):
        torch.broadcast_shapes((2, 1), (3, 2))
    idx = np.array([0, 5, 11, 7])
    got = torch.unravel_index(torch.tensor(idx), (3, 4))
    for g, w in zip(got, np.unravel_index(idx, (3, 4))):
        np.testing.assert_array_equal(g.numpy(), w)
    # PyTorch 2.13 wraps out-of-range and negative indices modulo the size
    assert [t.tolist() for t in torch.unravel_index(torch.tensor([-1, 12]), (3, 4))] == \
        [[2, 0], [3, 0]]
    assert torch.unravel_index(torch.tensor([0]), ()) == ()
    with pytest.raises(TypeError, match="integer dtype"):
        torch.unravel_index(torch.tensor([1.0]), (2, 3))
    with pytest.raises(ValueError, match="cannot have negative values"):
        torch.unravel_index(torch.tensor([1]), (2, -3))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_is_numpys(edge_order):
    f = R.uniform(-1, 1, (5, 6))
    for got, want in zip(torch.gradient(t64(f), edge_order=edge_order),
                         np.gradient(f, edge_order=edge_order)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-14)
    (got,) = torch.gradient(t64(f), spacing=0.25, dim=1, edge_order=edge_order)
    np.testing.assert_allclose(got.numpy(), np.gradient(f, 0.25, axis=1,
                                                        edge_order=edge_order), rtol=1e-13)
    xs, ys = np.cumsum(R.uniform(0.2, 1, 5)), np.cumsum(R.uniform(0.2, 1, 6))
    got = torch.gradient(t64(f).t(), spacing=[t64(ys), t64(xs)], edge_order=edge_order)
    want = np.gradient(f.T, ys, xs, edge_order=edge_order)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-13)
    assert torch.gradient(torch.tensor([1, 4, 9, 16]))[0].dtype == torch.float32
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        torch.gradient(torch.tensor([1.0, 2.0]), edge_order=2)


def test_trapezoid_family_is_numpys():
    y, x = R.uniform(-1, 1, (3, 5)), np.cumsum(R.uniform(0.1, 1, 5))
    np.testing.assert_allclose(torch.trapezoid(t64(y)).numpy(), np.trapezoid(y), rtol=1e-14)
    np.testing.assert_allclose(torch.trapezoid(t64(y), t64(x)).numpy(), np.trapezoid(y, x),
                               rtol=1e-14)
    np.testing.assert_allclose(torch.trapz(t64(y), dx=0.5, dim=0).numpy(),
                               np.trapezoid(y, dx=0.5, axis=0), rtol=1e-14)
    xx = np.cumsum(R.uniform(0.1, 1, (3, 5)), 1)
    np.testing.assert_allclose(torch.trapezoid(t64(y), t64(xx)).numpy(), np.trapezoid(y, xx),
                               rtol=1e-14)
    steps = np.diff(x) * (y[:, 1:] + y[:, :-1]) / 2
    np.testing.assert_allclose(torch.cumulative_trapezoid(t64(y), t64(x)).numpy(),
                               np.cumsum(steps, 1), rtol=1e-14)
    assert torch.trapezoid(torch.tensor([])).item() == 0.0
    assert torch.trapezoid(torch.tensor([1, 2, 4])).item() == 4.5
    assert torch.cumulative_trapezoid(torch.zeros(2, 1)).shape == (2, 0)


def test_trapezoid_integer_inputs_keep_their_dtype_until_the_halving():
    # ATen adds neighbours and differences x in the inputs' dtype: uint8 wraps modulo 256
    y = np.array([[100, 200, 30], [4, 5, 250]], dtype=np.uint8)
    x = np.array([[1, 3, 7], [0, 5, 2]], dtype=np.uint8)
    pairs = (y[:, 1:] + y[:, :-1]).astype(np.int64)  # numpy's uint8 sum wraps the same way
    steps = (x[:, 1:] - x[:, :-1]).astype(np.int64)
    ty, tx = torch.tensor(y), torch.tensor(x)
    areas = (steps * pairs) % 256 / 2  # the uint8 product wraps before the halving
    out = torch.trapezoid(ty, tx)
    assert out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), areas.sum(1))
    np.testing.assert_array_equal(torch.cumulative_trapezoid(ty, tx).numpy(), np.cumsum(areas, 1))
    ends = (y[:, 0] + y[:, -1]).astype(np.int64)
    np.testing.assert_array_equal(torch.trapz(ty, dx=2.5).numpy(),
                                  (y.astype(np.int64).sum(1) - ends * 0.5) * 2.5)
    np.testing.assert_array_equal(torch.cumulative_trapezoid(ty, dx=3).numpy(),
                                  np.cumsum(1.5 * pairs, 1))
    # a float y with float64 x promotes to float64; an empty dim gives zeros in y's dtype
    yf = torch.tensor(y.astype(np.float32))
    assert torch.trapezoid(yf, torch.tensor(np.array([1.0, 2.5, 4.0]))).dtype == torch.float64
    empty = torch.trapezoid(torch.zeros(2, 0, dtype=torch.uint8))
    assert empty.dtype == torch.uint8 and empty.tolist() == [0, 0]
    b = torch.tensor([True, False, True])
    with pytest.raises(RuntimeError, match="trapezoid: received a bool input for `y`, but bool"):
        torch.trapezoid(b)
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: received a bool input for "
                                           "`x` or `y`"):
        torch.cumulative_trapezoid(yf[0], b)


GRADCHECKS = {
    "tensor_split": lambda x: torch.cat(torch.tensor_split(x, [1, 3], dim=1)[::-1], 1),
    "hsplit": lambda x: torch.hsplit(x, 2)[1],
    "block_diag": lambda x: torch.block_diag(x, x[0], x[1, 2]),
    "cartesian_prod": lambda x: torch.cartesian_prod(x[0], x[1]),
    "combinations": lambda x: torch.combinations(x[0], 2, with_replacement=True),
    "diagflat": lambda x: torch.diagflat(x, 1),
    "gradient": lambda x: torch.gradient(x, edge_order=2),
    "gradient_coords": lambda x: torch.gradient(x, spacing=[t64([0.0, 1.0, 1.5]),
                                                            t64([0.0, 0.2, 1.0, 2.0])]),
    "trapezoid": lambda x: torch.trapezoid(x, t64([0.0, 0.5, 2.0, 2.5])),
    "cumulative_trapezoid": lambda x: torch.cumulative_trapezoid(x, dx=0.5, dim=0),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradients_match_central_differences(name):
    assert gradcheck(GRADCHECKS[name], (leaf(R.uniform(-1, 1, (3, 4))),), eps=1e-6,
                     atol=1e-8, rtol=1e-6)


def test_gradient_reaches_coordinates_too():
    xs = leaf([0.0, 0.4, 1.5, 2.0])
    assert gradcheck(lambda c: torch.gradient(t64([1.0, 3.0, 2.0, 5.0]), spacing=[c],
                                              edge_order=2), (xs,), eps=1e-6, atol=1e-8,
                     rtol=1e-6)
