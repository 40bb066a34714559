"""Scans, sorting, selection and counting (issue 11) against independent references: numpy in
float64 (np.cumsum, np.sort(kind='stable'), np.quantile's methods, np.unique, np.searchsorted,
np.histogram, np.bincount), Python loops where numpy has no twin (cummax's indices, mode), and
gradcheck (central differences in float64) for gradients. Compiled-vs-eager runs of the
differentiable ones are the opinfo entries; the data-dependent ones are compiled here."""
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.autograd import gradcheck

NAN = float("nan")
RNG = np.random.default_rng(11)


def _t(a, dtype=torch.float64, grad=False):
    return torch.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------- scans

def test_cumsum_cumprod_match_numpy_with_pytorch_dtypes():
    a = RNG.standard_normal((3, 4, 5))
    for dim in (0, 1, -1):
        np.testing.assert_allclose(_np(torch.cumsum(_t(a), dim)), np.cumsum(a, dim), 1e-12)
        np.testing.assert_allclose(_np(_t(a).cumprod(dim)), np.cumprod(a, dim), 1e-12)
    i = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    assert torch.cumsum(i, 1).dtype == torch.int64 and torch.cumsum(i, 1).tolist() == [[1, 3],
                                                                                       [3, 7]]
    assert torch.cumsum(torch.tensor([True, False, True]), 0).tolist() == [1, 1, 2]
    assert torch.cumsum(i, 0, dtype=torch.float32).dtype == torch.float32
    assert torch.cumsum(torch.tensor(3.0), 0).tolist() == 3.0  # 0-d: dim 0 or -1
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        torch.cumsum(i, 2)


def test_inplace_scans_compute_in_the_tensors_own_dtype():
    b = torch.tensor([100, 100, 100], dtype=torch.int8)
    assert b.cumsum_(0).tolist() == [100, -56, 44]  # wraps like int8 arithmetic
    x = torch.tensor([1.0, 2.0, 3.0])
    assert x.cumprod_(0) is x and x.tolist() == [1.0, 2.0, 6.0]
    with pytest.raises(RuntimeError, match="Bad in-place call: input tensor dtype long int and "
                                           "output tensor dtype float should match"):
        torch.tensor([1, 2]).cumsum_(0, dtype=torch.float32)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        torch.tensor([True]).cumsum_(0)


def test_logcumsumexp_is_stable_and_matches_numpy():
    a = RNG.standard_normal((3, 6)) * 5
    np.testing.assert_allclose(_np(torch.logcumsumexp(_t(a), 1)),
                               np.logaddexp.accumulate(a, axis=1), 1e-12)
    assert torch.logcumsumexp(torch.tensor([-1000.0, 0.0]), 0).tolist() == [-1000.0, 0.0]
    with pytest.raises(NotImplementedError, match="'Long'"):
        torch.logcumsumexp(torch.tensor([1, 2]), 0)


def _running_arg(row, better):
    out, best = [], 0
    for i, v in enumerate(row):
        if i and (np.isnan(v) or better(v, row[best]) or v == row[best]):
            if not np.isnan(row[best]) or np.isnan(v):
                best = i
        out.append(best)
    return out


def test_cummax_cummin_take_the_latest_tie_and_keep_nan():
    x = [1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0]
    r = torch.cummax(torch.tensor(x), 0)
    assert r.indices.tolist() == [0, 1, 2, 3, 3, 5, 5] == _running_arg(x, lambda a, b: a > b)
    assert type(r).__name__ == "cummax" and repr(r).startswith("torch.return_types.cummax(")
    y = [2.0, 1.0, 1.0, 3.0, 0.5]
    r = torch.tensor(y).cummin(0)
    assert r.indices.tolist() == [0, 1, 2, 2, 4] == _running_arg(y, lambda a, b: a < b)
    assert r.values.tolist() == list(np.minimum.accumulate(y))
    assert torch.cummax(torch.tensor([1, 1, 0, 1]), 0).indices.tolist() == [0, 1, 1, 3]


def test_scan_gradients():
    x = _t(RNG.standard_normal((3, 4)), grad=True)
    assert gradcheck(lambda t: torch.cumsum(t, 1), (x,))
    assert gradcheck(lambda t: torch.logcumsumexp(t, 0), (x,))
    assert gradcheck(lambda t: torch.cummax(t, 1).values, (x,))
    assert gradcheck(lambda t: torch.cummin(t, 0).values, (x,))
    # cumprod across zeros: one zero, two zeros, a zero first (all finite differences exist)
    for row in ([0.5, 0.0, 2.0, -1.5], [1.5, 0.0, 3.0, 0.0, 2.0], [0.0, 2.0, 0.5],
                [0.7, -1.2, 2.0]):
        assert gradcheck(lambda t: torch.cumprod(t, 0), (_t(row, grad=True),))
    assert gradcheck(lambda t: torch.cumprod(t, 1), (x,))


def test_scan_second_derivatives_and_logcumsumexp_at_minus_inf():
    from fusetorch.autograd import gradgradcheck
    x = _t(RNG.standard_normal((2, 3)), grad=True)
    for fn in (lambda t: torch.cumsum(t, 1), lambda t: torch.cumprod(t, 1),
               lambda t: torch.logcumsumexp(t, 1), lambda t: torch.sort(t, 0).values ** 2):
        assert gradgradcheck(fn, (x,))
    # a prefix of -inf sums to -inf: exp(x_i - out_j) is 0 there, not nan (PyTorch gives nan
    # at the leading -inf; 0 is the limit)
    z = _t([-np.inf, 0.2, -np.inf], grad=True)
    torch.logcumsumexp(z, 0).sum().backward()
    assert z.grad.tolist() == [0.0, 2.0, 0.0]


def test_cumprod_gradient_at_a_zero_by_hand():
    # d/dx1 of sum(cumprod([2, 0, 3])) = 2 + 2*3 = 8; nothing reaches x2 past the zero
    x = _t([2.0, 0.0, 3.0], grad=True)
    torch.cumprod(x, 0).sum().backward()
    assert x.grad.tolist() == [1.0, 8.0, 0.0]


def test_cummax_gradient_goes_to_the_running_index():
    x = _t([1.0, 3.0, 2.0, 3.0], grad=True)
    torch.cummax(x, 0).values.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 0.0, 1.0]  # indices 0, 1, 1, 3


# ---------------------------------------------------------------- sorting and selection

def test_sort_argsort_match_stable_numpy_with_nan_last():
    a = RNG.integers(0, 4, (3, 7)).astype(np.float64)
    a[0, 2] = a[1, 5] = a[1, 0] = NAN
    for dim in (0, 1):
        r = torch.sort(_t(a), dim)
        want = np.argsort(a, dim, kind="stable")
        np.testing.assert_array_equal(_np(r.indices), want)
        np.testing.assert_array_equal(_np(r.values), np.take_along_axis(a, want, dim))
        np.testing.assert_array_equal(_np(torch.argsort(_t(a), dim, stable=True)), want)
    # descending and stable: the first of equal values first, NaN (the largest) at the front
    d = torch.sort(torch.tensor([3.0, NAN, 1.0, NAN, 3.0]), descending=True)
    assert d.indices.tolist() == [1, 3, 0, 4, 2]
    v = [5, 1, 5, 2, 1]
    want = sorted(range(5), key=lambda i: -v[i])  # Python's sort is stable
    assert torch.tensor(v).argsort(descending=True).tolist() == want
    assert torch.sort(torch.tensor([True, False])).indices.tolist() == [1, 0]
    s = torch.sort(torch.tensor(3.0))
    assert s.values.shape == () and s.indices.tolist() == 0


def _stable_order(values: list, descending: bool) -> list[int]:
    """Python's stable sort of positions by value, NaN the largest and -0.0 equal to 0.0: an
    independent reference for the packed-key sort of narrow dtypes."""
    def key(i):
        v = values[i]
        big = v != v
        v = 0.0 if big else v
        return (big, v) if not descending else (not big, -v)
    return sorted(range(len(values)), key=key)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int16", "int32", "uint8",
                                   "bool"])
def test_sort_of_narrow_dtypes_is_stable_and_orders_nan_signed_zero_and_extremes(dtype):
    n = 257
    if dtype.startswith("float"):
        info = np.finfo(dtype)
        pool = [NAN, -NAN, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, info.max, info.min,
                info.tiny, -info.tiny]
    elif dtype == "bool":
        pool = [True, False]
    else:
        info = np.iinfo(dtype)
        pool = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 7]
    a = np.array(RNG.choice(np.array(pool, dtype=object), n).tolist(), dtype=dtype)
    as_list = a.astype(np.float64).tolist()
    for descending in (False, True):
        want = _stable_order(as_list, descending)
        r = torch.sort(torch.from_numpy(a.copy()), descending=descending, stable=True)
        assert r.indices.tolist() == want
        np.testing.assert_array_equal(r.values.numpy().view(np.uint8),
                                      a[want].view(np.uint8))  # -0.0 stays -0.0
    # along an inner dim of a 3-d tensor: each row sorted on its own
    b = a[:252].reshape(3, 12, 7)
    got = torch.sort(torch.from_numpy(b.copy()), dim=1, stable=True).indices.numpy()
    for i in range(3):
        for j in range(7):
            assert got[i, :, j].tolist() == _stable_order(b[i, :, j].astype(np.float64).tolist(),
                                                          False)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_a_few_among_many_selects_the_extremes_in_order(largest):
    a = RNG.standard_normal((3, 1000)).astype(np.float32)
    a[0, [5, 900]] = NAN  # NaN is the largest value
    a[1, :500] = 0.25     # many ties
    r = torch.topk(torch.from_numpy(a), 7, dim=1, largest=largest)
    for i in range(3):
        want = _stable_order(a[i].astype(np.float64).tolist(), largest)[:7]
        np.testing.assert_array_equal(r.values.numpy()[i], a[i, want])
        idx = r.indices.numpy()[i]
        np.testing.assert_array_equal(a[i, idx], r.values.numpy()[i])
        assert len(set(idx.tolist())) == 7


def test_topk_kthvalue():
    a = RNG.permutation(20).reshape(4, 5).astype(np.float64)
    r = torch.topk(_t(a), 2)
    np.testing.assert_array_equal(_np(r.values), -np.sort(-a, 1)[:, :2])
    np.testing.assert_array_equal(_np(r.indices), np.argsort(-a, 1)[:, :2])
    r = _t(a).topk(3, dim=0, largest=False)
    np.testing.assert_array_equal(_np(r.values), np.sort(a, 0)[:3])
    assert torch.topk(torch.tensor([1.0, NAN, 2.0]), 1).indices.tolist() == [1]
    assert torch.topk(_t(a), 0).values.shape == (4, 0)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        torch.topk(_t(a), 6)
    k = torch.kthvalue(_t(a), 3, 1, keepdim=True)
    np.testing.assert_array_equal(_np(k.values), np.sort(a, 1)[:, 2:3])
    np.testing.assert_array_equal(_np(k.indices), np.argsort(a, 1)[:, 2:3])
    assert type(k).__name__ == "kthvalue"
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        torch.kthvalue(_t(a), 0)


def test_median_is_the_lower_median_and_propagates_nan():
    a = RNG.permutation(24).reshape(4, 6).astype(np.float64)
    lower = np.sort(a, 1)[:, 2]  # 6 values: the 3rd smallest
    r = torch.median(_t(a), 1)
    np.testing.assert_array_equal(_np(r.values), lower)
    np.testing.assert_array_equal(np.take_along_axis(a, _np(r.indices)[:, None], 1)[:, 0], lower)
    assert torch.median(_t(a)).tolist() == np.sort(a.ravel())[11]
    assert torch.median(_t(a)).shape == ()
    r = torch.median(torch.tensor([3.0, NAN, 1.0, NAN]), 0)
    assert np.isnan(r.values.item()) and r.indices.item() == 1  # the first NaN
    n = torch.nanmedian(torch.tensor([[3.0, NAN, 1.0, NAN], [4.0, 2.0, 9.0, NAN]]), 1)
    assert n.values.tolist() == [1.0, 4.0] and n.indices.tolist() == [2, 0]
    assert np.isnan(torch.median(torch.tensor([])).item())
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have"):
        torch.median(torch.zeros(0, 2), 0)
    assert torch.median(torch.tensor([3, 1, 2])).tolist() == 2


def _mode_ref(row):
    vals, counts = np.unique(row, return_counts=True)
    v = vals[np.argmax(counts)]  # the first (smallest) of the most frequent
    return v, max(i for i, x in enumerate(row) if x == v)


def test_mode_smallest_most_frequent_value_at_its_last_index():
    a = RNG.integers(0, 4, (5, 9))
    r = torch.mode(torch.tensor(a), 1)
    for i, row in enumerate(a):
        assert (r.values[i].item(), r.indices[i].item()) == _mode_ref(row)
    r = torch.tensor([4.0, 2.0, 2.0, 1.0, 4.0, 4.0, 2.0]).mode()
    assert (r.values.item(), r.indices.item()) == (2.0, 6)
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 0"):
        torch.mode(torch.tensor([]))


def test_selection_gradients_go_to_the_selected_elements():
    x = _t(RNG.permutation(12).reshape(3, 4) / 3.0, grad=True)
    for fn in (lambda t: torch.sort(t, 1, descending=True).values,
               lambda t: torch.topk(t, 2, 0).values,
               lambda t: torch.kthvalue(t, 2, 1).values,
               lambda t: torch.median(t), lambda t: torch.median(t, 0).values,
               lambda t: torch.nanmedian(t, 1).values,
               lambda t: torch.quantile(t, 0.3, 1), lambda t: torch.nanquantile(t, 0.6)):
        assert gradcheck(fn, (x,))
    m = _t([1.0, 2.0, 2.0, 0.5], grad=True)
    torch.mode(m).values.backward()
    assert m.grad.tolist() == [0.0, 0.0, 1.0, 0.0]


def test_selection_grad_fn_names():
    x = torch.tensor([1.0, 3.0, 2.0], requires_grad=True)
    names = {"SortBackward0": torch.sort(x).values, "TopkBackward0": torch.topk(x, 2).values,
             "CumsumBackward0": torch.cumsum(x, 0), "CumprodBackward0": torch.cumprod(x, 0),
             "CummaxBackward0": torch.cummax(x, 0).values,
             "LogcumsumexpBackward0": torch.logcumsumexp(x, 0),
             "MedianBackward0": torch.median(x), "MedianBackward1": torch.median(x, 0).values,
             "ModeBackward0": torch.mode(x).values,
             "KthvalueBackward0": torch.kthvalue(x, 1).values,
             "TakeBackward0": torch.take(x, torch.tensor([0]))}
    for name, t in names.items():
        assert type(t.grad_fn).__name__ == name


# ---------------------------------------------------------------- quantiles

@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_numpy_methods(method):
    a = RNG.standard_normal((3, 7))
    q = np.array([0.0, 0.125, 0.5, 0.6, 1.0])
    got = torch.quantile(_t(a), _t(q), dim=1, keepdim=True, interpolation=method)
    want = np.quantile(a, q, axis=1, keepdims=True, method=method)
    assert got.shape == want.shape
    np.testing.assert_allclose(_np(got), want, 1e-12)
    got = torch.quantile(_t(a), 0.3, interpolation=method)
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), np.quantile(a, 0.3, method=method), 1e-12)
    # nearest rounds half to even, as numpy: positions 0.5, 1.5, 2.5 of 5 values
    r = torch.quantile(torch.tensor([1.0, 2, 3, 4, 5]), torch.tensor([0.125, 0.375, 0.625]),
                       interpolation="nearest")
    assert r.tolist() == [1.0, 3.0, 3.0]


def test_quantile_nan_and_nanquantile():
    a = RNG.standard_normal((4, 6))
    a[0, 1] = a[2, 0] = a[2, 5] = NAN
    a[3] = NAN
    got = torch.quantile(_t(a), 0.4, dim=1)
    np.testing.assert_array_equal(np.isnan(_np(got)), np.isnan(a).any(1))
    np.testing.assert_allclose(_np(got)[1], np.quantile(a[1], 0.4), 1e-12)
    q = np.array([0.2, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns about the all-NaN row
        want = np.nanquantile(a, q, axis=1)
    np.testing.assert_allclose(_np(torch.nanquantile(_t(a), _t(q), 1)), want, 1e-12)


def test_quantile_errors_as_pytorch():
    x = torch.tensor([1.0, 2.0])
    for call, msg in [
        (lambda: torch.quantile(torch.tensor([1, 2]), 0.5), "input tensor must be either float"),
        (lambda: torch.quantile(x, 1.5), r"q must be in the range \[0, 1\] but got 1.5"),
        (lambda: torch.quantile(x, torch.tensor([1.5])), r"q values must be in the range"),
        (lambda: torch.quantile(x, torch.tensor([0.5], dtype=torch.float64)), "same dtype"),
        (lambda: torch.quantile(x, torch.tensor([[0.5]])), "q must be a scalar or 1D tensor"),
        (lambda: torch.quantile(x, 0.5, interpolation="foo"), "but got foo"),
        (lambda: torch.quantile(torch.tensor([]), 0.5), "input tensor must be non-empty"),
    ]:
        with pytest.raises(RuntimeError, match=msg):
            call()


def test_quantile_q_check_stays_in_a_compiled_graph():
    f = torch.compile(lambda x, q: torch.quantile(x, q))
    x = torch.tensor([1.0, 2.0, 3.0])
    assert f(x, torch.tensor([0.5])).tolist() == [2.0]
    with pytest.raises(RuntimeError, match="q values must be in the range"):
        f(x, torch.tensor([1.5]))


# ---------------------------------------------------------------- searching and counting

def test_searchsorted_and_bucketize_match_numpy():
    seq = np.sort(RNG.integers(0, 6, 8)).astype(np.float64)
    v = RNG.integers(-1, 8, (3, 4)).astype(np.float64)
    for right in (False, True):
        side = "right" if right else "left"
        want = np.searchsorted(seq, v, side=side)
        np.testing.assert_array_equal(_np(torch.searchsorted(_t(seq), _t(v), right=right)), want)
        np.testing.assert_array_equal(_np(torch.searchsorted(_t(seq), _t(v), side=side)), want)
        np.testing.assert_array_equal(_np(torch.bucketize(_t(v), _t(seq), right=right)), want)
    rows = np.sort(RNG.standard_normal((3, 5)), 1)
    vals = RNG.standard_normal((3, 4))
    got = torch.searchsorted(_t(rows), _t(vals), out_int32=True)
    assert got.dtype == torch.int32
    np.testing.assert_array_equal(_np(got), [np.searchsorted(r, x) for r, x in zip(rows, vals)])
    # a sorter, mixed dtypes, a Python scalar
    perm = np.argsort(-seq, kind="stable")
    got = torch.searchsorted(_t(seq[perm]), _t(v), sorter=torch.tensor(np.argsort(seq[perm])))
    np.testing.assert_array_equal(_np(got), np.searchsorted(seq, v))
    assert torch.searchsorted(torch.tensor([1, 2, 3]), torch.tensor([2.0, 5.0])).tolist() == [1,
                                                                                            3]
    assert torch.searchsorted(torch.tensor([1.0, 2, 3]), 2.0).shape == ()


def test_searchsorted_errors_as_pytorch():
    s = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        torch.searchsorted(s, s, side="left", right=True)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got middle"):
        torch.searchsorted(s, s, side="middle")
    with pytest.raises(RuntimeError, match="first N-1 dimensions of boundaries tensor"):
        torch.searchsorted(torch.ones(2, 3), torch.ones(2))
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got "
                                           r"dim\(2\)"):
        torch.bucketize(s, torch.ones(1, 3))


def test_histc_matches_numpy_histogram():
    a = RNG.standard_normal(50)
    got = torch.histc(_t(a), bins=6, min=-1.0, max=1.5)
    want, _ = np.histogram(a, bins=6, range=(-1.0, 1.5))
    np.testing.assert_array_equal(_np(got), want)
    got = _t(a).histc(7)  # the data's range
    np.testing.assert_array_equal(_np(got), np.histogram(a, bins=7)[0])
    assert torch.histc(torch.tensor([1.0, 1.0]), bins=4).tolist() == [0, 0, 2, 0]  # [0, 2]
    # bins [0, 2/3) [2/3, 4/3) [4/3, 2]: NaN and 5 are not counted, 2 (= max) is the last's
    assert torch.histc(torch.tensor([1.0, NAN, 5.0, 2.0]), 3, 0, 2).tolist() == [0, 1, 1]
    assert torch.histc(torch.tensor([1.0]), 2).dtype == torch.float32
    with pytest.raises(NotImplementedError, match="'Long'"):
        torch.histc(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0"):
        torch.histc(torch.tensor([1.0]), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(torch.tensor([1.0]), 3, min=3, max=1)


def test_count_nonzero_and_bincount():
    a = RNG.integers(-1, 2, (3, 4, 5))
    assert torch.count_nonzero(torch.tensor(a)).item() == np.count_nonzero(a)
    np.testing.assert_array_equal(_np(torch.tensor(a).count_nonzero(1)),
                                  np.count_nonzero(a, axis=1))
    np.testing.assert_array_equal(_np(torch.count_nonzero(torch.tensor(a), (0, 2))),
                                  np.count_nonzero(a, axis=(0, 2)))
    b = RNG.integers(0, 6, 20)
    w = RNG.standard_normal(20)
    np.testing.assert_array_equal(_np(torch.bincount(torch.tensor(b))), np.bincount(b))
    got = torch.bincount(torch.tensor(b), _t(w), minlength=9)
    assert got.dtype == torch.float64
    np.testing.assert_allclose(_np(got), np.bincount(b, w, minlength=9), 1e-12)
    assert torch.bincount(torch.tensor(b), torch.tensor(w, dtype=torch.float32)).dtype == \
        torch.float32
    assert torch.bincount(torch.tensor(b), torch.tensor(b)).dtype == torch.float64
    with pytest.raises(RuntimeError, match="1-d non-negative integral inputs"):
        torch.bincount(torch.tensor([-1]))
    with pytest.raises(NotImplementedError, match="'Float'"):
        torch.bincount(torch.tensor([1.0]))


# ---------------------------------------------------------------- gathering by index

def test_take_and_take_along_dim_match_numpy():
    a = RNG.standard_normal((3, 4))
    idx = np.array([[0, 11], [-1, 5]])
    np.testing.assert_array_equal(_np(torch.take(_t(a), torch.tensor(idx))), a.ravel()[idx])
    ix = RNG.integers(-4, 4, (3, 6))
    np.testing.assert_array_equal(_np(torch.take_along_dim(_t(a), torch.tensor(ix), 1)),
                                  np.take_along_axis(a, ix % 4, 1))
    # broadcasting apart from dim, and the flattened form
    ix = np.array([[2], [0]])
    np.testing.assert_array_equal(_np(_t(a).take_along_dim(torch.tensor(ix), 0)),
                                  np.take_along_axis(np.broadcast_to(a, (3, 4)), ix, 0))
    np.testing.assert_array_equal(_np(torch.take_along_dim(_t(a), torch.tensor([7, 0]))),
                                  a.ravel()[[7, 0]])
    x = _t(a, grad=True)
    assert gradcheck(lambda t: torch.take(t, torch.tensor([[0, 5], [5, -1]])), (x,))
    assert gradcheck(lambda t: torch.take_along_dim(t, torch.tensor([[1, 1, 0, 2]]), 0), (x,))


def test_take_bounds_checks_stay_in_compiled_graphs():
    x = torch.tensor([[3.0, 1.0], [2.0, 1.0]])
    with pytest.raises(IndexError, match="out of range: tried to access index 4 on a tensor of "
                                         "4 elements."):
        torch.take(x, torch.tensor([4]))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Int"):
        torch.take(x, torch.tensor([1], dtype=torch.int32))
    with pytest.raises(RuntimeError, match="index 2 is out of bounds for dimension 1 with size "
                                           "2"):
        torch.take_along_dim(x, torch.tensor([[2]]), 1)
    with pytest.raises(RuntimeError, match="should have the same number of dimensions, but got "
                                           "2 dimensions for input, and 1 dimensions"):
        torch.take_along_dim(x, torch.tensor([1]), 1)
    f = torch.compile(lambda t, i: torch.take(t, i) * 2)
    g = torch.compile(lambda t, i: torch.take_along_dim(t, i, 1) + 1)
    assert f(x, torch.tensor([0, 3])).tolist() == [6.0, 2.0]
    assert g(x, torch.tensor([[1], [0]])).tolist() == [[2.0], [3.0]]
    with pytest.raises(IndexError, match="tried to access index -5"):
        f(x, torch.tensor([0, -5]))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds"):
        g(x, torch.tensor([[1], [3]]))


# ---------------------------------------------------------------- data-dependent shapes

def test_masked_select():
    a = RNG.standard_normal((3, 4))
    mask = np.array([True, False, True, True])
    np.testing.assert_array_equal(_np(torch.masked_select(_t(a), torch.tensor(mask))),
                                  np.broadcast_to(a, (3, 4))[np.broadcast_to(mask, (3, 4))])
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        torch.masked_select(_t(a), torch.tensor([1, 0, 1, 1]))
    x = _t(a, grad=True)
    assert gradcheck(lambda t: torch.masked_select(t, torch.tensor(mask)), (x,))


def test_unique_matches_numpy():
    a = RNG.integers(0, 5, (4, 6))
    v, inv, cnt = torch.unique(torch.tensor(a), return_inverse=True, return_counts=True)
    wv, winv, wcnt = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(_np(v), wv)
    np.testing.assert_array_equal(_np(inv), winv.reshape(a.shape))
    np.testing.assert_array_equal(_np(cnt), wcnt)
    assert torch.tensor(a).unique().dtype == torch.int64
    rows = np.array([[1, 2], [1, 2], [0, 5]])
    v, inv, cnt = torch.unique(torch.tensor(rows), dim=0, return_inverse=True,
                               return_counts=True)
    assert v.tolist() == [[0, 5], [1, 2]] and inv.tolist() == [1, 1, 0] and cnt.tolist() == [1,
                                                                                            2]
    assert len(torch.unique(torch.tensor([1.0, NAN, NAN])).tolist()) == 3  # NaNs are distinct


def test_unique_consecutive():
    v, inv, cnt = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]),
                                           return_inverse=True, return_counts=True)
    assert v.tolist() == [1, 2, 3, 1] and inv.tolist() == [0, 0, 1, 1, 2, 3, 3]
    assert cnt.tolist() == [2, 2, 1, 2]
    v, cnt = torch.unique_consecutive(torch.tensor([[1, 2], [1, 2], [0, 5], [1, 2]]), dim=0,
                                      return_counts=True)
    assert v.tolist() == [[1, 2], [0, 5], [1, 2]] and cnt.tolist() == [2, 1, 1]


@pytest.mark.parametrize("fn", [
    lambda x: torch.unique(x.round()) * 2,
    lambda x: torch.unique_consecutive(x.round(), return_counts=True)[1] + 1,
    lambda x: torch.bincount(x.abs().round().long()) + 1,
    lambda x: torch.masked_select(x, x > 0) * 2,
])
def test_data_dependent_functions_break_a_compiled_graph_and_follow_the_data(fn):
    cf = torch.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for values in ([0.4, -1.2, 2.0, 2.1], [3.0, 3.2, -0.1, 0.3], [0.4, -1.2, 2.0, 2.1]):
            x = torch.tensor(values)
            np.testing.assert_array_equal(cf(x).numpy(), fn(x).numpy())


def test_compiled_scans_and_selections_match_eager_on_new_data():
    def fn(x):
        s = torch.sort(x, 1)
        return (torch.cumsum(x, 1) + torch.cummax(x, 0).values, s.indices,
                torch.quantile(x, 0.25, 1), torch.searchsorted(s.values, x),
                torch.histc(x, 4))
    cf = torch.compile(fn)
    for _ in range(3):
        x = torch.tensor(RNG.standard_normal((3, 5)))
        for g, w in zip(cf(x), fn(x)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), 1e-12)


@pytest.mark.parametrize("name", ["maximum", "minimum", "logaddexp", "add"])
def test_the_log_step_scan_matches_numpy_accumulate(name):
    # what cummax/cummin/logcumsumexp run on an array module whose ufuncs have no accumulate
    # (cupy: only add and multiply): every length around the powers of two, any axis, NaN
    # and -inf where they go
    from fusetorch.ir.scans import log_step_scan
    rng = np.random.default_rng(0)
    ufunc = getattr(np, name)
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33):
        x = rng.standard_normal((3, n, 2))
        x[rng.random(x.shape) < 0.1] = -np.inf
        if name != "logaddexp":
            x[rng.random(x.shape) < 0.05] = np.nan
        for axis in range(3):
            np.testing.assert_allclose(log_step_scan(np, ufunc, x, axis),
                                       ufunc.accumulate(x, axis=axis), rtol=1e-13, atol=0)


def test_topk_takes_the_first_of_tied_values_whatever_the_partition():
    # which of several equal values topk returns is left open by PyTorch; fusetorch takes the
    # first ones, in index order, on every device (a partition's own pick differed between
    # numpy and cupy). Reference: a Python sort on (value, index), NaN as the largest.
    rng = np.random.default_rng(3)
    for trial in range(120):
        n = int(rng.integers(5, 60))
        k = int(rng.integers(1, max(2, n // 4)))  # 4k < n: the partition path
        a = rng.integers(0, 4, (3, n)).astype(np.float64)
        if trial % 3 == 0:
            a[rng.random(a.shape) < 0.2] = np.nan
        dtype = (torch.int64, torch.float32, torch.float64)[trial % 3] if trial % 3 else \
            torch.float64
        for largest in (True, False):
            v, i = torch.topk(_t(a, dtype), k, largest=largest)
            for row, got in zip(a, i.tolist()):
                key = [(np.inf if np.isnan(x) else x) for x in row]
                want = sorted(range(n), key=lambda j: ((-1 if largest else 1) * key[j], j))
                if not largest:  # NaN is the largest: the smallest never take it first
                    want = sorted(range(n), key=lambda j: (np.isnan(row[j]), key[j], j))
                assert got == want[:k], (row.tolist(), k, largest, got, want[:k])


@pytest.mark.parametrize("dim", [0, 1])
def test_topk_of_one_is_the_first_extreme_nan_largest(dim):
    # k=1 (argmax/argmin underneath): the first of tied values, NaN the largest (an all-NaN
    # row gives its first NaN either way), -0.0 and 0.0 equal. Reference: a Python sort on
    # (value, index) of each row.
    rows = [[0.0, -0.0, -1.0], [-0.0, 0.0, -2.0], [1.0, np.nan, 3.0, np.nan],
            [np.nan, np.nan, np.nan], [2.0, 2.0, -5.0, -5.0], [np.inf, np.nan, -np.inf, 1.0]]
    for row in rows:
        a = np.array([row, row[::-1]])
        a = a if dim == 1 else a.T.copy()
        for dtype in (torch.float32, torch.float64):
            for largest in (True, False):
                v, i = torch.topk(_t(a, dtype), 1, dim=dim, largest=largest)
                lines = a if dim == 1 else a.T
                got = i.numpy().reshape(-1).tolist()
                for line, g in zip(lines, got):
                    key = [(np.inf if np.isnan(x) else x) for x in line]
                    if largest:
                        want = sorted(range(len(line)),
                                      key=lambda j: (-key[j], not np.isnan(line[j]), j))
                    else:
                        want = sorted(range(len(line)),
                                      key=lambda j: (np.isnan(line[j]), key[j], j))
                    assert g == want[0], (line.tolist(), largest, g, want[0])
    ints = torch.tensor([[3, 7, 7, 1], [1, 1, 0, 0]])
    assert torch.topk(ints, 1).indices.tolist() == [[1], [0]]
    assert torch.topk(ints, 1, largest=False).indices.tolist() == [[3], [2]]


def test_unique_inverse_of_0d_is_0d():
    """The inverse has the input's shape: 0-d for a 0-d input (it came back [1], issue 26)."""
    x = torch.tensor(3.0)
    for fn in (torch.unique, torch.unique_consecutive):
        values, inverse, counts = fn(x, return_inverse=True, return_counts=True)
        assert values.tolist() == [3.0] and counts.tolist() == [1]
        assert inverse.shape == () and inverse.item() == 0


def test_half_scans_carry_float32_between_steps():
    # ATen's CPU cumsum/cumprod keep a float running value for float16/bfloat16, rounding
    # each output once: numpy's float16 cumsum rounds the running sum itself at every step
    r = np.random.default_rng(11)
    x16 = r.uniform(-1, 1, (3, 300)).astype(np.float16)
    p16 = r.uniform(0.9, 1.1, (3, 60)).astype(np.float16)
    for d, eps in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        xs = torch.tensor(x16).to(d)
        got = torch.cumsum(xs, 1).double().numpy()
        src = xs.double().numpy()  # the inputs as that dtype holds them
        ref = np.cumsum(src, 1)
        # the float32 carry's error is negligible beside one rounding of each output
        np.testing.assert_allclose(got, ref, rtol=eps * 1.01, atol=2.0 ** -24 * 300)
        ps = torch.tensor(p16).to(d)
        np.testing.assert_allclose(torch.cumprod(ps, 1).double().numpy(),
                                   np.cumprod(ps.double().numpy(), 1), rtol=eps * 1.05)
        nc = torch.tensor(x16).to(d).t()  # a transposed view, scanned along its dim 0
        np.testing.assert_array_equal(torch.cumsum(nc, 0).double().numpy(), got.T)
        assert torch.cumsum(torch.zeros(0, 3, dtype=d), 0).shape == (0, 3)
        assert torch.cumsum(torch.tensor(1.5).to(d), 0).item() == 1.5
