"""dtype objects, type promotion and dtype conversions.

Every expected dtype, error type and message below was observed by hand in PyTorch 2.13.0 (CPU)
and written in literally; values are checked against numpy computed in float64.
"""
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch

# ------------------------------------------------------------------ the dtypes

ORDER = ["b8", "u8", "i8", "i16", "i32", "i64", "f16", "f32", "f64"]
DT = {
    "b8": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
    "i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "f32": torch.float32,
    "f64": torch.float64,
}
NP = {
    "b8": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
    "i64": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
TOL = {"f16": 1e-3, "f32": 1e-6, "f64": 1e-12}


def _rows(text):
    """A literal table: one line per left dtype (in ORDER), one column per right dtype."""
    table = {}
    for line in text.strip().splitlines():
        left, *cols = line.split()
        assert len(cols) == len(ORDER)
        for right, res in zip(ORDER, cols):
            table[left, right] = res
    assert len(table) == len(ORDER) ** 2
    return table


# PyTorch 2.13: `ones(2, dtype=a) * ones(2, dtype=b)`, which also equals torch.promote_types(a, b)
# and the result of two 0-d tensors.
TENSOR_TENSOR = _rows("""
b8   b8  u8  i8  i16 i32 i64 f16 f32 f64
u8   u8  u8  i16 i16 i32 i64 f16 f32 f64
i8   i8  i16 i8  i16 i32 i64 f16 f32 f64
i16  i16 i16 i16 i16 i32 i64 f16 f32 f64
i32  i32 i32 i32 i32 i32 i64 f16 f32 f64
i64  i64 i64 i64 i64 i64 i64 f16 f32 f64
f16  f16 f16 f16 f16 f16 f16 f16 f32 f64
f32  f32 f32 f32 f32 f32 f32 f32 f32 f64
f64  f64 f64 f64 f64 f64 f64 f64 f64 f64
""")

# PyTorch 2.13: `ones(2, dtype=a) * ones((), dtype=b)` (and the reversed order): a 0-d tensor only
# takes part when it is of a higher category (bool < integer < floating) than the other tensor.
TENSOR_ZERODIM = _rows("""
b8   b8  u8  i8  i16 i32 i64 f16 f32 f64
u8   u8  u8  u8  u8  u8  u8  f16 f32 f64
i8   i8  i8  i8  i8  i8  i8  f16 f32 f64
i16  i16 i16 i16 i16 i16 i16 f16 f32 f64
i32  i32 i32 i32 i32 i32 i32 f16 f32 f64
i64  i64 i64 i64 i64 i64 i64 f16 f32 f64
f16  f16 f16 f16 f16 f16 f16 f16 f16 f16
f32  f32 f32 f32 f32 f32 f32 f32 f32 f32
f64  f64 f64 f64 f64 f64 f64 f64 f64 f64
""")

# PyTorch 2.13: `ones(2, dtype=a) * s` and `s * ones(2, dtype=a)` for s = True, 2, 2.5; the same
# for a 0-d tensor of dtype a.
SCALARS = (True, 2, 2.5)
TENSOR_SCALAR = {
    "b8": ("b8", "i64", "f32"),
    "u8": ("u8", "u8", "f32"),
    "i8": ("i8", "i8", "f32"),
    "i16": ("i16", "i16", "f32"),
    "i32": ("i32", "i32", "f32"),
    "i64": ("i64", "i64", "f32"),
    "f16": ("f16", "f16", "f16"),
    "f32": ("f32", "f32", "f32"),
    "f64": ("f64", "f64", "f64"),
}

PAIRS = [(a, b) for a in ORDER for b in ORDER]


def _vals(code, n=2, second=False):
    """Small non-negative values representable in every dtype."""
    if code == "b8":
        return np.array([True, False, True][:n] if not second else [True, True, False][:n])
    return np.array([1, 2, 3][:n] if not second else [3, 1, 2][:n], dtype=NP[code])


def _check_values(out, expected64, code):
    assert out.dtype is DT[code]
    got = out.numpy()
    assert got.dtype == NP[code]
    want = np.asarray(expected64).astype(NP[code])
    if code in TOL:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=TOL[code], atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def test_eight_dtypes_and_aliases():
    assert torch.float is torch.float32
    assert torch.double is torch.float64
    assert torch.half is torch.float16
    assert torch.long is torch.int64
    assert torch.int is torch.int32
    assert torch.short is torch.int16
    # the nine distinct objects
    assert len({id(d) for d in DT.values()}) == 9
    for d in DT.values():
        assert isinstance(d, torch.dtype)


@pytest.mark.parametrize("d,text", [
    (torch.bool, "torch.bool"), (torch.uint8, "torch.uint8"), (torch.int8, "torch.int8"),
    (torch.int16, "torch.int16"), (torch.int32, "torch.int32"), (torch.int64, "torch.int64"),
    (torch.float16, "torch.float16"), (torch.float32, "torch.float32"),
    (torch.float64, "torch.float64"), (torch.float, "torch.float32"),
    (torch.long, "torch.int64"), (torch.double, "torch.float64"), (torch.int, "torch.int32"),
    (torch.half, "torch.float16"),
])
def test_dtype_repr_and_str(d, text):
    assert repr(d) == text
    assert str(d) == text


def test_dtype_properties():
    assert torch.float32.is_floating_point and torch.float16.is_floating_point
    assert not torch.int32.is_floating_point and not torch.bool.is_floating_point
    assert torch.int8.is_signed and torch.float32.is_signed
    assert not torch.uint8.is_signed and not torch.bool.is_signed
    assert torch.float32.itemsize == 4 and torch.int16.itemsize == 2
    assert torch.float64.itemsize == 8 and torch.bool.itemsize == 1


def test_dtype_pickles_to_the_same_object():
    for d in DT.values():
        assert pickle.loads(pickle.dumps(d)) is d


def test_tensor_dtype_is_the_dtype_object():
    t = torch.tensor([1.0])
    assert t.dtype is torch.float32 and t.dtype is torch.float
    assert torch.tensor([1]).dtype is torch.long
    assert torch.tensor([True]).dtype is torch.bool


# ------------------------------------------------------------------ promote_types, result_type

@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_all_pairs(a, b):
    assert torch.promote_types(DT[a], DT[b]) is DT[TENSOR_TENSOR[a, b]]


def test_promote_types_table_is_symmetric():
    for a, b in PAIRS:
        assert TENSOR_TENSOR[a, b] == TENSOR_TENSOR[b, a]


@pytest.mark.parametrize("x,y,want", [
    (lambda: torch.tensor([1, 2]), lambda: 1.5, torch.float32),
    (lambda: torch.tensor([1, 2], dtype=torch.int32), lambda: 5, torch.int32),
    (lambda: torch.tensor([1.0]), lambda: torch.tensor(1.0, dtype=torch.float64), torch.float32),
    (lambda: torch.tensor([1]), lambda: torch.tensor(1.0, dtype=torch.float64), torch.float64),
    (lambda: torch.tensor([1], dtype=torch.uint8), lambda: torch.tensor([1], dtype=torch.int8),
     torch.int16),
    (lambda: torch.tensor(1), lambda: torch.tensor([1], dtype=torch.int8), torch.int8),
    (lambda: True, lambda: torch.tensor([1], dtype=torch.uint8), torch.uint8),
    (lambda: torch.tensor([1], dtype=torch.float16), lambda: 2.5, torch.float16),
    (lambda: torch.tensor(1, dtype=torch.int32), lambda: 2.5, torch.float32),
    (lambda: torch.tensor([True]), lambda: 2, torch.int64),
    (lambda: torch.tensor([True]), lambda: torch.tensor(2, dtype=torch.int16), torch.int16),
    (lambda: torch.tensor([1], dtype=torch.int8), lambda: torch.tensor(300), torch.int8),
    (lambda: 1, lambda: torch.tensor([1], dtype=torch.int8), torch.int8),
])
def test_result_type(x, y, want):
    assert torch.result_type(x(), y()) is want


# ------------------------------------------------------------------ promotion in binary ops

@pytest.mark.parametrize("a,b", PAIRS)
def test_tensor_tensor_promotion(a, b):
    x, y = _vals(a), _vals(b, second=True)
    tx, ty = torch.tensor(x), torch.tensor(y)
    want = TENSOR_TENSOR[a, b]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    _check_values(tx + ty, x64 + y64, want)
    _check_values(ty + tx, x64 + y64, want)
    _check_values(tx * ty, x64 * y64, want)
    _check_values(torch.mul(ty, tx), x64 * y64, want)
    assert torch.maximum(tx, ty).dtype is DT[want]


@pytest.mark.parametrize("a,b", PAIRS)
def test_zero_dim_with_zero_dim_promotes_like_tensors(a, b):
    x, y = _vals(a, 1), _vals(b, 1, second=True)
    tx, ty = torch.tensor(x[0]), torch.tensor(y[0])
    assert tx.shape == () and ty.shape == ()
    assert tx.dtype is DT[a] and ty.dtype is DT[b]
    out = tx * ty
    assert out.shape == ()
    _check_values(out, x[0].astype(np.float64) * y[0].astype(np.float64), TENSOR_TENSOR[a, b])


@pytest.mark.parametrize("a,b", PAIRS)
def test_tensor_zero_dim_promotion(a, b):
    x, y = _vals(a, 2), _vals(b, 1, second=True)
    tx = torch.tensor(x)
    ty = torch.tensor(y[0])
    assert ty.ndim == 0
    want = TENSOR_ZERODIM[a, b]
    x64, y64 = x.astype(np.float64), y[0].astype(np.float64)
    _check_values(tx * ty, x64 * y64, want)
    _check_values(ty * tx, x64 * y64, want)
    _check_values(tx + ty, x64 + y64, want)
    _check_values(ty + tx, x64 + y64, want)


@pytest.mark.parametrize("a", ORDER)
@pytest.mark.parametrize("k", range(3))
@pytest.mark.parametrize("zero_dim", [False, True], ids=["1d", "0d"])
def test_tensor_python_scalar_promotion(a, k, zero_dim):
    s = SCALARS[k]
    x = _vals(a, 2)
    if zero_dim:
        x = x[:1].reshape(())
    t = torch.tensor(x)
    want = TENSOR_SCALAR[a][k]
    x64 = x.astype(np.float64)
    _check_values(t * s, x64 * float(s), want)
    _check_values(s * t, x64 * float(s), want)
    _check_values(t + s, x64 + float(s), want)
    _check_values(s + t, x64 + float(s), want)


def test_named_promotion_rules():
    # a Python float with an integer tensor gives the default float dtype
    assert (torch.tensor([1, 2]) * 1.5).dtype is torch.float32
    assert (torch.tensor([1, 2], dtype=torch.int8) + 0.5).dtype is torch.float32
    # a Python scalar never widens a float32 tensor
    f = torch.tensor([1.0, 2.0])
    assert (f * 1e300).dtype is torch.float32
    assert (f + 2**40).dtype is torch.float32
    # nor an int32 / uint8 tensor when it is an int
    assert (torch.tensor([1], dtype=torch.int32) + 2**40).dtype is torch.int32
    assert (torch.tensor([1], dtype=torch.uint8) + 1000).dtype is torch.uint8
    # ... the int is wrapped to the tensor's dtype instead (PyTorch 2.13's values)
    assert (torch.tensor([1], dtype=torch.int32) + 2**40).tolist() == [1]
    assert (torch.tensor([1], dtype=torch.uint8) + 1000).tolist() == [233]
    assert (torch.tensor([1], dtype=torch.uint8) + (-1)).tolist() == [0]
    assert (torch.tensor([1], dtype=torch.uint8) - 2).tolist() == [255]
    assert (torch.tensor([1], dtype=torch.int8) * 300).tolist() == [44]
    assert (torch.tensor([1]) + 2**63).tolist() == [-9223372036854775807]
    assert (torch.tensor([1], dtype=torch.int8) < 300).tolist() == [True]
    assert (torch.tensor([1], dtype=torch.uint8) == 257).tolist() == [True]
    # a 0-d float64 tensor does not widen a float32 tensor, but does promote an int tensor
    z64 = torch.tensor(2.0, dtype=torch.float64)
    assert (f * z64).dtype is torch.float32
    assert (torch.tensor([1, 2]) * z64).dtype is torch.float64
    # uint8 + int8 -> int16, and the value does not wrap
    out = torch.tensor([200], dtype=torch.uint8) + torch.tensor([100], dtype=torch.int8)
    assert out.dtype is torch.int16
    assert out.tolist() == [300]
    out = torch.tensor([1, 2], dtype=torch.int8) + torch.tensor([1], dtype=torch.uint8)
    assert out.dtype is torch.int16 and out.tolist() == [2, 3]
    # bool tensor with a bool scalar stays bool; with an int it becomes int64
    assert (torch.tensor([True]) + True).dtype is torch.bool
    assert (torch.tensor([1, 2]) + True).tolist() == [2, 3]


def _broadcastable_pair(draw):
    ndim = draw(st.integers(1, 3))
    base = draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim))
    sa, sb = [], []
    for d in base:
        sa.append(d if draw(st.booleans()) else 1)
        sb.append(d if draw(st.booleans()) else 1)
    sb = sb[draw(st.integers(0, ndim - 1)):]  # b may have fewer dims
    return tuple(sa), tuple(sb)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_promotion_does_not_depend_on_shape(data):
    a = data.draw(st.sampled_from(ORDER))
    b = data.draw(st.sampled_from(ORDER))
    sa, sb = _broadcastable_pair(data.draw)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=sa).astype(NP[a])
    y = rng.integers(0, 4, size=sb).astype(NP[b])
    out = torch.tensor(x) + torch.tensor(y)
    assert tuple(out.shape) == np.broadcast_shapes(sa, sb)
    _check_values(out, x.astype(np.float64) + y.astype(np.float64), TENSOR_TENSOR[a, b])
    # against a 0-d tensor the other table applies, whatever the shape (empty ones included)
    z = torch.tensor(y.reshape(-1)[0] if y.size else NP[b](1))
    assert z.ndim == 0
    assert (torch.tensor(x) * z).dtype is DT[TENSOR_ZERODIM[a, b]]


# ------------------------------------------------------------------ division and comparisons

@pytest.mark.parametrize("a,b", PAIRS)
def test_true_division_gives_float(a, b):
    x = _vals(a)
    y = np.array([2, 4], dtype=NP[b]) if b != "b8" else np.array([True, True])
    out = torch.tensor(x) / torch.tensor(y)
    promoted = TENSOR_TENSOR[a, b]
    want = promoted if promoted.startswith("f") else "f32"
    _check_values(out, x.astype(np.float64) / y.astype(np.float64), want)


def test_integer_division_cases():
    out = torch.tensor([3, 4]) / torch.tensor([2, 2])
    assert out.dtype is torch.float32 and out.tolist() == [1.5, 2.0]
    out = torch.tensor([3, 4]) / 2
    assert out.dtype is torch.float32 and out.tolist() == [1.5, 2.0]
    out = 7 / torch.tensor([2])
    assert out.dtype is torch.float32 and out.tolist() == [3.5]
    out = torch.tensor([3, 4], dtype=torch.int32) / torch.tensor([2.0], dtype=torch.float64)
    assert out.dtype is torch.float64 and out.tolist() == [1.5, 2.0]
    out = torch.tensor([3], dtype=torch.uint8) / torch.tensor([2], dtype=torch.uint8)
    assert out.dtype is torch.float32 and out.tolist() == [1.5]
    out = torch.tensor([3, 4]) / torch.tensor([2, 2], dtype=torch.float16)
    assert out.dtype is torch.float16 and out.tolist() == [1.5, 2.0]
    out = torch.div(torch.tensor([True]), torch.tensor([True]))
    assert out.dtype is torch.float32 and out.tolist() == [1.0]
    out = torch.tensor([1, -2]) / torch.tensor([0, 0])
    assert out.dtype is torch.float32 and out.tolist() == [float("inf"), float("-inf")]


@pytest.mark.parametrize("a,b", PAIRS)
def test_comparisons_give_bool(a, b):
    x, y = _vals(a, 3), _vals(b, 3, second=True)
    tx, ty = torch.tensor(x), torch.tensor(y)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    for got, want in ((tx == ty, x64 == y64), (tx != ty, x64 != y64), (tx < ty, x64 < y64),
                      (tx <= ty, x64 <= y64), (tx > ty, x64 > y64), (tx >= ty, x64 >= y64)):
        assert got.dtype is torch.bool
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("a", ORDER)
def test_comparisons_with_scalars_give_bool(a):
    x = _vals(a, 3)
    t = torch.tensor(x)
    for s in SCALARS:
        for got, want in ((t < s, x.astype(np.float64) < float(s)),
                          (t == s, x.astype(np.float64) == float(s)),
                          (s >= t, float(s) >= x.astype(np.float64))):
            assert got.dtype is torch.bool
            np.testing.assert_array_equal(got.numpy(), want)
    assert (torch.tensor([1, 2]) < 1.5).tolist() == [True, False]
    assert (torch.tensor([1, 2]) == torch.tensor([1.0, 3.0])).tolist() == [True, False]


# ------------------------------------------------------------------ reductions' dtypes

@pytest.mark.parametrize("a,want", [
    ("b8", "i64"), ("u8", "i64"), ("i8", "i64"), ("i16", "i64"), ("i32", "i64"), ("i64", "i64"),
    ("f16", "f16"), ("f32", "f32"), ("f64", "f64"),
])
def test_sum_dtype(a, want):
    x = np.array([[1, 0, 1], [1, 1, 0]], dtype=NP[a])
    t = torch.tensor(x)
    _check_values(t.sum(), x.astype(np.float64).sum(), want)
    _check_values(torch.sum(t, 0), x.astype(np.float64).sum(0), want)
    _check_values(t.sum(dim=1), x.astype(np.float64).sum(1), want)


def test_sum_of_int32_is_int64():
    t = torch.tensor([2**30, 2**30, 2**30], dtype=torch.int32)
    s = t.sum()
    assert s.dtype is torch.int64
    assert s.item() == 3 * 2**30  # no int32 overflow
    assert torch.tensor([True, True]).sum().item() == 2


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
       a=st.sampled_from(["b8", "u8", "i8", "i16", "i32"]))
def test_integer_sum_dtype_any_shape(shape, a):
    x = np.random.default_rng(1).integers(0, 3, size=shape).astype(NP[a])
    s = torch.tensor(x).sum()
    assert s.dtype is torch.int64
    assert s.shape == ()
    assert s.item() == int(x.astype(np.int64).sum())


@pytest.mark.parametrize("a,name", [("i32", "Int"), ("i64", "Long"), ("b8", "Bool"),
                                    ("u8", "Byte"), ("i16", "Short"), ("i8", "Char")])
def test_mean_of_integers_raises(a, name):
    t = torch.tensor(_vals(a, 2))
    msg = ("mean\\(\\): could not infer output dtype. Input dtype must be either a floating "
           f"point or complex dtype. Got: {name}")
    with pytest.raises(RuntimeError, match=msg):
        t.mean()
    with pytest.raises(RuntimeError, match=msg):
        torch.mean(t)


def test_mean_of_floats_keeps_dtype():
    for code in ("f16", "f32", "f64"):
        x = np.array([1.5, 2.5, 4.0], dtype=NP[code])
        _check_values(torch.tensor(x).mean(), x.astype(np.float64).mean(), code)
    assert torch.tensor([1, 2]).float().mean().item() == 1.5


# ------------------------------------------------------------------ in-place ops keep dtype

@pytest.mark.parametrize("make,op,msg", [
    (lambda: torch.tensor([1, 2]), lambda t: t.add_(1.5),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: torch.tensor([1, 2], dtype=torch.int32), lambda t: t.add_(1.5),
     "result type Float can't be cast to the desired output type Int"),
    (lambda: torch.tensor([True]), lambda t: t.add_(1),
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: torch.tensor([1, 2]), lambda t: t.mul_(torch.tensor([1.5, 2.0])),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: torch.tensor([1, 2]), lambda t: t.div_(2),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: torch.tensor([1, 2], dtype=torch.int32), lambda t: t.sub_(torch.tensor([1.0])),
     "result type Float can't be cast to the desired output type Int"),
])
def test_inplace_cannot_downcast_category(make, op, msg):
    t = make()
    before = t.numpy().copy()
    with pytest.raises(RuntimeError, match=msg):
        op(t)
    np.testing.assert_array_equal(t.numpy(), before)  # nothing was written


def test_inplace_int_add_float_operator():
    t = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        t += 1.5


def test_inplace_allowed_casts_keep_self_dtype():
    t = torch.tensor([1.0, 2.0])
    out = t.add_(torch.tensor([1.0], dtype=torch.float64))
    assert out is t and t.dtype is torch.float32 and t.tolist() == [2.0, 3.0]
    t = torch.tensor([1, 2], dtype=torch.int32)
    t.add_(torch.tensor(3))
    assert t.dtype is torch.int32 and t.tolist() == [4, 5]
    t = torch.tensor([1, 2], dtype=torch.int8)
    t.add_(torch.tensor([3], dtype=torch.int64))
    assert t.dtype is torch.int8 and t.tolist() == [4, 5]
    t = torch.tensor([1.5, 2.5], dtype=torch.float16)
    t.add_(torch.tensor([1.0], dtype=torch.float64))
    assert t.dtype is torch.float16 and t.tolist() == [2.5, 3.5]
    t = torch.tensor([1.0, 2.0])
    t.add_(1)
    assert t.dtype is torch.float32 and t.tolist() == [2.0, 3.0]
    t = torch.tensor([True, False])
    t.add_(True)
    assert t.dtype is torch.bool and t.tolist() == [True, True]


# ------------------------------------------------------------------ conversions

@pytest.mark.parametrize("code,name", [
    ("b8", "torch.BoolTensor"), ("u8", "torch.ByteTensor"), ("i8", "torch.CharTensor"),
    ("i16", "torch.ShortTensor"), ("i32", "torch.IntTensor"), ("i64", "torch.LongTensor"),
    ("f16", "torch.HalfTensor"), ("f32", "torch.FloatTensor"), ("f64", "torch.DoubleTensor"),
])
def test_type_name(code, name):
    assert torch.zeros(2, dtype=DT[code]).type() == name


def test_type_conversions():
    t = torch.tensor([1])
    d = t.type("torch.DoubleTensor")
    assert d.dtype is torch.float64 and d.tolist() == [1.0]
    i = torch.tensor([1.5]).type(torch.int32)
    assert i.dtype is torch.int32 and i.tolist() == [1]
    i = torch.tensor([1.7, -1.7]).type(torch.IntTensor)
    assert i.dtype is torch.int32 and i.tolist() == [1, -1]
    f = torch.tensor([1]).type(torch.float64)
    assert f.dtype is torch.float64
    f = torch.tensor([1.5]).type(torch.FloatTensor)
    assert f.dtype is torch.float32 and f.tolist() == [1.5]
    f = torch.tensor([1.7]).type("torch.FloatTensor")
    assert f.dtype is torch.float32


def test_type_invalid_names():
    with pytest.raises(ValueError, match="invalid type: 'torch.Foo'"):
        torch.tensor([1.7]).type("torch.Foo")
    with pytest.raises(ValueError, match="invalid type: 'DoubleTensor'"):
        torch.tensor([1.7]).type("DoubleTensor")


def test_same_dtype_conversions_return_self():
    t = torch.tensor([1.0, 2.0])
    assert t.to(torch.float32) is t
    assert t.to("cpu") is t
    assert t.float() is t
    assert t.type(torch.float32) is t
    assert t.type("torch.FloatTensor") is t
    c = t.to(torch.float32, copy=True)
    assert c is not t and c.tolist() == [1.0, 2.0]
    c.add_(1)
    assert t.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("method,code", [
    ("float", "f32"), ("double", "f64"), ("half", "f16"), ("long", "i64"), ("int", "i32"),
    ("short", "i16"), ("char", "i8"), ("byte", "u8"), ("bool", "b8"),
])
def test_conversion_methods(method, code):
    x = np.array([0.0, 1.0, 2.75, 100.5])
    out = getattr(torch.tensor(x, dtype=torch.float64), method)()
    assert out.dtype is DT[code]
    np.testing.assert_array_equal(out.numpy(), x.astype(NP[code]))


def test_conversion_values_follow_pytorch():
    assert torch.tensor([-1.5, 2.7]).long().tolist() == [-1, 2]  # truncation toward zero
    assert torch.tensor([-1.5, 2.7]).int().tolist() == [-1, 2]
    assert torch.tensor([0.0, 2.7, -0.1]).bool().tolist() == [False, True, True]
    assert torch.tensor([1, 2]).half().dtype is torch.float16
    assert torch.tensor([1, 2]).float().tolist() == [1.0, 2.0]
    assert torch.tensor([1, 2]).double().dtype is torch.float64
    assert torch.tensor([300, -1]).to(torch.uint8).tolist() == [44, 255]
    assert torch.tensor(1.5).long().item() == 1
    assert torch.tensor(1.5).long().shape == ()


def test_to_forms():
    t = torch.tensor([1.5, 2.0])
    a = t.to(torch.float64)
    assert a.dtype is torch.float64 and a.tolist() == [1.5, 2.0]
    b = t.to(torch.tensor([1], dtype=torch.int16))
    assert b.dtype is torch.int16 and b.tolist() == [1, 2]
    c = t.to("cpu", torch.float16)
    assert c.dtype is torch.float16 and c.tolist() == [1.5, 2.0]
    d = t.to(device="cpu", dtype=torch.float64)
    assert d.dtype is torch.float64
    e = t.to(dtype=torch.int32)
    assert e.dtype is torch.int32 and e.tolist() == [1, 2]
    f = torch.tensor([1, 2]).to("cpu")
    assert f.dtype is torch.int64 and f.device == torch.device("cpu")
    g = t.to(torch.device("cpu"))
    assert g is t
    assert t.type_as(torch.tensor([1], dtype=torch.int8)).dtype is torch.int8


def test_to_empty_and_zero_dim():
    e = torch.zeros(0, 3).to(torch.int32)
    assert e.dtype is torch.int32 and e.shape == (0, 3)
    z = torch.tensor(2.5).to(torch.int64)
    assert z.shape == () and z.item() == 2


# ------------------------------------------------------------------ default dtype

@pytest.fixture
def default_float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def test_get_default_dtype():
    assert torch.get_default_dtype() is torch.float32


def test_set_default_dtype_float64(default_float64):
    assert torch.get_default_dtype() is torch.float64
    assert torch.tensor([1.5]).dtype is torch.float64
    assert torch.tensor(1.5).dtype is torch.float64
    assert torch.zeros(2).dtype is torch.float64
    assert torch.ones(2).dtype is torch.float64
    assert torch.rand(2).dtype is torch.float64
    assert torch.randn(2).dtype is torch.float64
    assert torch.full((2,), 1.5).dtype is torch.float64
    assert torch.linspace(0, 1, 3).dtype is torch.float64
    assert torch.arange(0.0, 3.0).dtype is torch.float64
    assert torch.Tensor(2).dtype is torch.float64
    assert (torch.tensor([1]) * 1.5).dtype is torch.float64
    assert (torch.tensor([1]) / 2).dtype is torch.float64
    assert torch.tensor([1, 2.0]).type() == "torch.DoubleTensor"
    # explicit float32 stays float32
    assert (torch.ones(2, dtype=torch.float32) * 1.5).dtype is torch.float32
    assert torch.FloatTensor([1]).dtype is torch.float32
    assert torch.tensor(np.array([1.0], dtype=np.float32)).dtype is torch.float32
    # integer data is unaffected
    assert torch.tensor([1, 2]).dtype is torch.int64
    assert torch.arange(3).dtype is torch.int64


def test_set_default_dtype_float16_and_restore():
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float16)
        assert torch.get_default_dtype() is torch.float16
        assert torch.zeros(1).dtype is torch.float16
    finally:
        torch.set_default_dtype(old)
    assert torch.get_default_dtype() is torch.float32
    assert torch.zeros(1).dtype is torch.float32


@pytest.mark.parametrize("d", [torch.int64, torch.int32, torch.bool])
def test_set_default_dtype_rejects_non_float(d):
    with pytest.raises(TypeError, match="only floating-point types are supported as the "
                                        "default type"):
        torch.set_default_dtype(d)
    assert torch.get_default_dtype() is torch.float32


def test_floats_out_of_a_narrow_integers_range_truncate_then_wrap():
    # PyTorch on the CPU (checked with torch 2.13): truncate toward zero, then wrap modulo 2^bits.
    # The cast goes through int64 so every array module does the same: a direct float -> uint8
    # conversion is undefined in C and CUDA, and cupy gave 0 for -3.2 on an H100.
    vals = [-3.2, 2.7, -0.5, 300.4, -200.9, 1e3, -129.5]
    x = torch.tensor(vals)
    trunc = [math.trunc(v) for v in vals]
    for dtype, bits, signed in ((torch.uint8, 8, False), (torch.int8, 8, True),
                                (torch.int16, 16, True)):
        want = [((t + (1 << bits - 1)) % (1 << bits)) - (1 << bits - 1) if signed
                else t % (1 << bits) for t in trunc]
        assert x.to(dtype).tolist() == want, dtype
        assert x.double().to(dtype).tolist() == want, dtype
