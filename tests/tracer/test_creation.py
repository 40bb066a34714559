"""Creation functions and legacy constructors.

Expected dtypes, shapes, error types and messages were observed by hand in PyTorch 2.13.0 (CPU)
and written in literally; values are compared with numpy computed in float64.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch

NP = {
    torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
    torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
    torch.float32: np.float32, torch.float64: np.float64,
}
ALL_DTYPES = list(NP)
FLOATS = [torch.float16, torch.float32, torch.float64]


def _np(t):
    return np.asarray(t.numpy())


# ------------------------------------------------------------------ tensor()

@pytest.mark.parametrize("data,dtype,shape", [
    (3, torch.int64, ()),
    (2.5, torch.float32, ()),
    (True, torch.bool, ()),
    (-7, torch.int64, ()),
    ([1, 2, 3], torch.int64, (3,)),
    ([1.0, 2.0], torch.float32, (2,)),
    ([True, False], torch.bool, (2,)),
    ([1, 2.5], torch.float32, (2,)),
    ([True, 2], torch.int64, (2,)),
    ([True, 2.5], torch.float32, (2,)),
    ([[1, 2], [3, 4]], torch.int64, (2, 2)),
    ([[[1.5], [2]], [[3], [4]]], torch.float32, (2, 2, 1)),
    ((1, 2), torch.int64, (2,)),
    ([(1, 2), (3, 4)], torch.int64, (2, 2)),
    ([], torch.float32, (0,)),
    ([[]], torch.float32, (1, 0)),
])
def test_tensor_from_python(data, dtype, shape):
    t = torch.tensor(data)
    assert t.dtype is dtype
    assert tuple(t.shape) == shape
    want = np.array(data, dtype=np.float64)
    np.testing.assert_array_equal(_np(t).astype(np.float64), want)
    assert _np(t).dtype == NP[dtype]


def test_tensor_value_precision():
    t = torch.tensor([0.1, 1e-3, 123456.789])
    np.testing.assert_allclose(_np(t).astype(np.float64), [0.1, 1e-3, 123456.789], rtol=1e-7)
    big = torch.tensor([2**40, -(2**62)])
    assert big.tolist() == [2**40, -(2**62)]


@pytest.mark.parametrize("npdt,want", [
    (np.bool_, torch.bool), (np.uint8, torch.uint8), (np.int8, torch.int8),
    (np.int16, torch.int16), (np.int32, torch.int32), (np.int64, torch.int64),
    (np.float16, torch.float16), (np.float32, torch.float32), (np.float64, torch.float64),
])
def test_tensor_from_numpy_keeps_dtype_and_copies(npdt, want):
    a = np.array([[1, 0, 2], [3, 1, 0]]).astype(npdt)
    t = torch.tensor(a)
    assert t.dtype is want and tuple(t.shape) == (2, 3)
    np.testing.assert_array_equal(_np(t), a)
    a[0, 0] = 0  # torch.tensor copies
    assert t.tolist()[0][0] == 1


def test_tensor_from_numpy_scalars_and_views():
    assert torch.tensor(np.float64(1.5)).dtype is torch.float64
    assert torch.tensor(np.float32(1.5)).dtype is torch.float32
    assert torch.tensor(np.int32(1)).dtype is torch.int32
    assert torch.tensor(np.int64(1)).dtype is torch.int64
    assert torch.tensor(np.bool_(True)).dtype is torch.bool
    assert torch.tensor([np.float64(1.5)]).dtype is torch.float64
    assert torch.tensor([np.float32(1.5)]).dtype is torch.float32
    assert torch.tensor([np.int32(1)]).dtype is torch.int32
    assert torch.tensor(np.float64(1.5)).item() == 1.5
    assert torch.tensor(np.array([[1, 2], [3, 4]]).T).tolist() == [[1, 3], [2, 4]]
    assert torch.tensor(np.zeros((0, 2), dtype=np.int16)).shape == (0, 2)


def test_tensor_from_list_of_tensors():
    t = torch.tensor([torch.tensor(1.0), torch.tensor(2.0)])
    assert t.dtype is torch.float32 and t.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("data,dtype,want", [
    ([1, 2], torch.float64, [1.0, 2.0]),
    ([1.7, -2.7], torch.int32, [1, -2]),
    ([1.5, 0.0], torch.bool, [True, False]),
    ([1, 2], torch.float16, [1.0, 2.0]),
    ([[1, 2]], torch.uint8, [[1, 2]]),
    (3, torch.float32, 3.0),
    (np.array([1.5, 2.5]), torch.float32, [1.5, 2.5]),
])
def test_tensor_dtype_argument(data, dtype, want):
    t = torch.tensor(data, dtype=dtype)
    assert t.dtype is dtype
    assert t.tolist() == want


def test_tensor_requires_grad():
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad is True
    assert torch.tensor([1.0]).requires_grad is False
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        torch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        torch.tensor([True], requires_grad=True)
    # the method words it differently in PyTorch 2.13
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require "
                                           "gradients"):
        torch.tensor([1, 2]).requires_grad_()


@pytest.mark.parametrize("data,err,msg", [
    ([[1, 2], [3]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1, 2], [3, 4, 5]], ValueError, r"expected sequence of length 2 at dim 1 \(got 3\)"),
    ([[[1], [2]], [[3]]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1, 2], 3], TypeError, "not a sequence"),
    ([[1], 2], TypeError, "not a sequence"),
])
def test_tensor_ragged_errors(data, err, msg):
    with pytest.raises(err, match=msg):
        torch.tensor(data)


def test_any_sequence_is_data_as_pytorch_takes_it():
    # PySequence_Check: a range or a deque is a sequence (sgrvinod's SSD loss builds
    # torch.LongTensor(range(n_objects))); a set or a generator is not
    import collections
    t = torch.tensor(range(3))
    assert t.dtype == torch.int64 and t.tolist() == [0, 1, 2]
    assert torch.LongTensor(range(2, 5)).tolist() == [2, 3, 4]
    assert torch.FloatTensor(range(2)).dtype == torch.float32
    assert torch.tensor(range(0)).shape == (0,) and torch.tensor(range(0)).dtype == torch.float32
    assert torch.tensor([range(2), [3, 4]]).tolist() == [[0, 1], [3, 4]]
    d = torch.tensor(collections.deque([1.5, 2]))
    assert d.dtype == torch.float32 and d.tolist() == [1.5, 2.0]
    assert torch.tensor(range(3), dtype=torch.float64).tolist() == [0.0, 1.0, 2.0]
    for bad, name in (({1, 2}, "set"), ((x for x in range(2)), "generator")):
        with pytest.raises(RuntimeError, match=f"^Could not infer dtype of {name}$"):
            torch.tensor(bad)


def test_tensor_bad_data_types():
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        torch.tensor("a")
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        torch.tensor([1, "a"])
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        torch.tensor(None)
    with pytest.raises(RuntimeError, match="Could not infer dtype of dict"):
        torch.tensor({1: 2})


# ------------------------------------------------------------------ legacy constructors

def test_legacy_tensor_sizes():
    t = torch.Tensor(2, 3)
    assert isinstance(t, torch.Tensor)
    assert t.shape == (2, 3) and t.dtype is torch.float32
    assert torch.Tensor(3).shape == (3,)
    assert torch.Tensor(torch.Size([2, 3])).shape == (2, 3)
    assert torch.Tensor(0, 4).shape == (0, 4)


def test_legacy_tensor_data():
    t = torch.Tensor([1, 2])
    assert t.dtype is torch.float32 and t.tolist() == [1.0, 2.0]
    t = torch.Tensor([3])
    assert t.shape == (1,) and t.tolist() == [3.0]
    t = torch.Tensor((2, 3))  # a tuple is data, not a size
    assert t.tolist() == [2.0, 3.0]
    t = torch.Tensor(np.array([1, 2]))
    assert t.dtype is torch.float32 and t.tolist() == [1.0, 2.0]
    t = torch.Tensor(np.array([1.5], dtype=np.float64))
    assert t.dtype is torch.float32 and t.tolist() == [1.5]
    t = torch.Tensor([[1, 2], [3, 4]])
    assert t.shape == (2, 2) and t.dtype is torch.float32


def test_legacy_tensor_empty():
    t = torch.Tensor()
    assert t.shape == (0,) and t.dtype is torch.float32
    e = torch.LongTensor()
    assert e.shape == (0,) and e.dtype is torch.int64


def test_legacy_tensor_from_tensor():
    f = torch.tensor([1.0, 2.0])
    assert torch.Tensor(f).tolist() == [1.0, 2.0]
    i = torch.tensor([1, 2])
    t = torch.Tensor(i)  # PyTorch returns the same data, dtype kept
    assert t.dtype is torch.int64 and t.tolist() == [1, 2]
    assert torch.LongTensor(i).tolist() == [1, 2]


def test_legacy_tensor_errors():
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got float\)"):
        torch.Tensor(2.5)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1\]"):
        torch.Tensor(-1)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1, 2\]"):
        torch.Tensor(-1, 2)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1\]"):
        torch.FloatTensor(-1)


@pytest.mark.parametrize("cls,dtype", [
    (torch.FloatTensor, torch.float32), (torch.DoubleTensor, torch.float64),
    (torch.HalfTensor, torch.float16), (torch.LongTensor, torch.int64),
    (torch.IntTensor, torch.int32), (torch.ShortTensor, torch.int16),
    (torch.CharTensor, torch.int8), (torch.ByteTensor, torch.uint8),
    (torch.BoolTensor, torch.bool),
])
def test_typed_legacy_constructors(cls, dtype):
    t = cls(2, 3)
    assert t.dtype is dtype and t.shape == (2, 3)
    assert type(t) is torch.Tensor
    assert isinstance(t, torch.Tensor)
    assert isinstance(t, cls)
    d = cls([1, 0, 1])
    assert d.dtype is dtype
    np.testing.assert_array_equal(_np(d), np.array([1, 0, 1]).astype(NP[dtype]))
    assert cls(torch.Size([4])).shape == (4,)
    assert cls().shape == (0,)


def test_legacy_value_conversion():
    assert torch.LongTensor([1.7, 2]).tolist() == [1, 2]
    assert torch.BoolTensor([1, 0]).tolist() == [True, False]
    assert torch.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
    assert torch.IntTensor([1, 2]).dtype is torch.int32


def test_isinstance_with_legacy_types():
    assert isinstance(torch.tensor([1.0]), torch.FloatTensor)
    assert not isinstance(torch.tensor([1]), torch.FloatTensor)
    assert isinstance(torch.tensor([1]), torch.LongTensor)
    assert not isinstance(torch.tensor([1]), torch.IntTensor)
    assert isinstance(torch.tensor([1.0], dtype=torch.float64), torch.DoubleTensor)
    assert not isinstance(torch.tensor([1.0], dtype=torch.float64), torch.FloatTensor)
    assert isinstance(torch.tensor([True]), torch.BoolTensor)
    assert isinstance(torch.zeros(2, dtype=torch.uint8), torch.ByteTensor)
    assert not isinstance([1.0], torch.FloatTensor)
    assert isinstance(torch.tensor([1]), torch.Tensor)


# ------------------------------------------------------------------ empty / zeros / ones

SIZE_FORMS = [
    ((2, 3), (2, 3)),
    (((2, 3),), (2, 3)),
    (([2, 3],), (2, 3)),
    ((torch.Size([2, 3]),), (2, 3)),
    ((4,), (4,)),
    ((np.int64(2), 3), (2, 3)),
    (((),), ()),
    (([],), ()),
    ((0,), (0,)),
    ((0, 3), (0, 3)),
    ((2, 1, 3), (2, 1, 3)),
]


@pytest.mark.parametrize("args,shape", SIZE_FORMS)
@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand", "randn"])
def test_size_argument_forms(fn, args, shape):
    t = getattr(torch, fn)(*args)
    assert tuple(t.shape) == shape
    assert t.shape == torch.Size(shape)
    assert t.dtype is torch.float32


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand", "randn"])
def test_negative_size(fn):
    with pytest.raises(RuntimeError, match="negative"):
        getattr(torch, fn)(-1)
    with pytest.raises(RuntimeError, match="negative"):
        getattr(torch, fn)(2, -3)
    with pytest.raises(RuntimeError, match="negative"):
        getattr(torch, fn)((2, -3))


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand"])
def test_non_integer_size(fn):
    with pytest.raises(TypeError):
        getattr(torch, fn)(2.5)
    with pytest.raises(TypeError):
        getattr(torch, fn)((2, "a"))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones_values(dtype):
    z = torch.zeros(2, 3, dtype=dtype)
    o = torch.ones((3,), dtype=dtype)
    e = torch.empty([1, 2], dtype=dtype)
    assert z.dtype is dtype and o.dtype is dtype and e.dtype is dtype
    np.testing.assert_array_equal(_np(z), np.zeros((2, 3), dtype=NP[dtype]))
    np.testing.assert_array_equal(_np(o), np.ones(3, dtype=NP[dtype]))
    assert _np(z).dtype == NP[dtype]
    assert e.shape == (1, 2)


def test_zeros_ones_zero_dim():
    z = torch.zeros(())
    assert z.shape == () and z.item() == 0.0
    o = torch.ones([])
    assert o.shape == () and o.item() == 1.0
    assert torch.ones(2, 3, dtype=torch.bool).tolist() == [[True] * 3] * 2


def test_zeros_ones_requires_grad():
    t = torch.ones(2, requires_grad=True)
    assert t.requires_grad
    assert not torch.zeros(2).requires_grad
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        torch.zeros(2, dtype=torch.int64, requires_grad=True)


def test_created_tensors_are_writable_and_independent():
    a = torch.zeros(3)
    b = torch.zeros(3)
    a.add_(1)
    assert a.tolist() == [1.0, 1.0, 1.0] and b.tolist() == [0.0, 0.0, 0.0]
    o = torch.ones(2, 2)
    o[0, 0] = 5
    assert o.tolist() == [[5.0, 1.0], [1.0, 1.0]]


# ------------------------------------------------------------------ full

@pytest.mark.parametrize("size,fill,dtype", [
    ((2, 3), 7, torch.int64),
    ((2,), 7.0, torch.float32),
    ((2,), True, torch.bool),
    ([2, 2], 1.5, torch.float32),
    ((), 3, torch.int64),
    ((0, 2), 2.5, torch.float32),
    (torch.Size([3]), -4, torch.int64),
])
def test_full_infers_dtype(size, fill, dtype):
    t = torch.full(size, fill)
    assert t.dtype is dtype
    assert tuple(t.shape) == tuple(size)
    np.testing.assert_array_equal(_np(t), np.full(tuple(size), fill, dtype=NP[dtype]))


def test_full_explicit_dtype_and_tensor_fill():
    t = torch.full((2,), 7, dtype=torch.float64)
    assert t.dtype is torch.float64 and t.tolist() == [7.0, 7.0]
    t = torch.full((2,), 7, dtype=torch.int32)
    assert t.dtype is torch.int32 and t.tolist() == [7, 7]
    t = torch.full((2,), torch.tensor(3))
    assert t.dtype is torch.int64 and t.tolist() == [3, 3]


def test_full_errors():
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        torch.full(2, 3)
    with pytest.raises(RuntimeError, match="negative"):
        torch.full((-1,), 1.0)


# ------------------------------------------------------------------ eye

@pytest.mark.parametrize("args,kw", [
    ((3,), {}), ((2, 3), {}), ((3, 2), {}), ((1,), {}), ((0,), {}), ((4,), {"dtype": torch.int64}),
    ((2, 2), {"dtype": torch.bool}), ((3,), {"dtype": torch.float64}),
])
def test_eye(args, kw):
    t = torch.eye(*args, **kw)
    dtype = kw.get("dtype", torch.float32)
    assert t.dtype is dtype
    want = np.eye(*args)
    assert tuple(t.shape) == want.shape
    np.testing.assert_array_equal(_np(t).astype(np.float64), want)


def test_eye_errors():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        torch.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -1"):
        torch.eye(2, -1)


# ------------------------------------------------------------------ arange / linspace

@pytest.mark.parametrize("args,dtype", [
    ((5,), torch.int64),
    ((1, 4), torch.int64),
    ((0, 10, 3), torch.int64),
    ((5, 0, -1), torch.int64),
    ((5, 0, -2), torch.int64),
    ((10, 0, -3), torch.int64),
    ((0,), torch.int64),
    ((2, 2), torch.int64),
    ((-3, 3), torch.int64),
    ((5.0,), torch.float32),
    ((0, 1, 0.25), torch.float32),
    ((0.0, -1.0, -0.3), torch.float32),
    ((1.5, 4), torch.float32),
    ((0, 1, 0.1), torch.float32),
    ((-1.0, 1.0, 0.5), torch.float32),
    ((1, 0, -0.25), torch.float32),
    ((1, 2.5, 0.5), torch.float32),
    ((0, 3, 1.5), torch.float32),
    ((np.int64(3),), torch.int64),
])
def test_arange(args, dtype):
    t = torch.arange(*args)
    assert t.dtype is dtype
    want = np.arange(*[float(a) for a in args])
    assert tuple(t.shape) == want.shape
    np.testing.assert_allclose(_np(t).astype(np.float64), want, rtol=1e-6, atol=1e-7)


def test_arange_lengths_and_dtype_argument():
    assert torch.arange(0, 1, 0.1).shape == (10,)
    assert torch.arange(0, 1, 0.1, dtype=torch.float64).shape == (10,)
    t = torch.arange(3, dtype=torch.float64)
    assert t.dtype is torch.float64 and t.tolist() == [0.0, 1.0, 2.0]
    t = torch.arange(0, 5, 2, dtype=torch.float32)
    assert t.dtype is torch.float32 and t.tolist() == [0.0, 2.0, 4.0]
    t = torch.arange(0, 3, dtype=torch.int32)
    assert t.dtype is torch.int32 and t.tolist() == [0, 1, 2]
    t = torch.arange(torch.tensor(3))
    assert t.dtype is torch.int64 and t.tolist() == [0, 1, 2]
    assert torch.arange(1, 4).tolist() == [1, 2, 3]
    assert torch.arange(5, 0, -2).tolist() == [5, 3, 1]


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with "
                                           "step sign"):
        torch.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with "
                                           "step sign"):
        torch.arange(5, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with "
                                           "step sign"):
        torch.arange(0.0, -1.0, 0.5)


@pytest.mark.parametrize("start,end,steps", [
    (0, 1, 5), (0, 1, 1), (0, 1, 0), (1, 0, 3), (-1, 1, 3), (0, 1, 11), (-3.5, 7.25, 17),
    (2, 2, 4),
])
def test_linspace(start, end, steps):
    t = torch.linspace(start, end, steps)
    assert t.dtype is torch.float32
    want = np.linspace(start, end, steps)
    assert tuple(t.shape) == (steps,)
    np.testing.assert_allclose(_np(t).astype(np.float64), want, rtol=1e-6, atol=1e-6)


def test_linspace_dtype_and_errors():
    t = torch.linspace(-1, 1, 3, dtype=torch.float64)
    assert t.dtype is torch.float64 and t.tolist() == [-1.0, 0.0, 1.0]
    t = torch.linspace(0, 10, 3, dtype=torch.int64)
    assert t.dtype is torch.int64 and t.tolist() == [0, 5, 10]
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1)


# ------------------------------------------------------------------ random

@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_range_and_statistics(dtype):
    t = torch.rand(100, 100, dtype=dtype)
    assert t.dtype is dtype and t.shape == (100, 100)
    a = _np(t).astype(np.float64)
    assert a.min() >= 0.0 and a.max() < 1.0 + (1e-3 if dtype is torch.float16 else 0)
    assert abs(a.mean() - 0.5) < 0.02
    assert abs(a.var() - 1 / 12) < 0.01
    assert len(np.unique(a)) > 100  # not a constant


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_statistics(dtype):
    t = torch.randn(200, 100, dtype=dtype)
    assert t.dtype is dtype and t.shape == (200, 100)
    a = _np(t).astype(np.float64)
    assert abs(a.mean()) < 0.03
    assert abs(a.std() - 1.0) < 0.03
    assert a.min() < -2.5 and a.max() > 2.5


def test_random_zero_dim_and_empty():
    assert torch.rand(()).shape == ()
    assert torch.randn(()).shape == ()
    assert torch.rand(0, 3).shape == (0, 3)
    assert torch.randint(10, (0,)).shape == (0,)
    assert torch.randint(10, ()).shape == ()


def test_random_float_only():
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented "
                                                  "for 'Long'"):
        torch.rand(2, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented "
                                                  "for 'Bool'"):
        torch.rand(2, dtype=torch.bool)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented "
                                                  "for 'Int'"):
        torch.randn(2, dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented "
                                                  "for 'Long'"):
        torch.rand_like(torch.tensor([1, 2]))


@pytest.mark.parametrize("args,kw,low,high,dtype,shape", [
    ((10, (1000,)), {}, 0, 10, torch.int64, (1000,)),
    ((3, 10, (40, 25)), {}, 3, 10, torch.int64, (40, 25)),
    ((-5, -2, (500,)), {}, -5, -2, torch.int64, (500,)),
    ((10, (1000,)), {"dtype": torch.int32}, 0, 10, torch.int32, (1000,)),
    ((0, 256, (4000,)), {"dtype": torch.uint8}, 0, 256, torch.uint8, (4000,)),
    ((3,), {"size": (500,)}, 0, 3, torch.int64, (500,)),
    ((1, 3), {"size": [500]}, 1, 3, torch.int64, (500,)),
    ((3, (500,)), {"dtype": torch.float32}, 0, 3, torch.float32, (500,)),
    ((2, torch.Size([10, 50])), {}, 0, 2, torch.int64, (10, 50)),
])
def test_randint(args, kw, low, high, dtype, shape):
    t = torch.randint(*args, **kw)
    assert t.dtype is dtype and tuple(t.shape) == shape
    a = _np(t).astype(np.float64)
    assert np.all(a == np.floor(a))
    assert a.min() == low and a.max() == high - 1  # both ends are drawn, high never
    assert len(np.unique(a)) == high - low


def test_randint_statistics():
    a = _np(torch.randint(0, 4, (20000,))).astype(np.float64)
    counts = np.bincount(a.astype(np.int64), minlength=4) / a.size
    np.testing.assert_allclose(counts, 0.25, atol=0.02)


def test_randint_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but "
                                           "got from=5 >= to=5"):
        torch.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but "
                                           "got from=5 >= to=3"):
        torch.randint(5, 3, (3,))
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but "
                                           "got from=0 >= to=0"):
        torch.randint(0, (3,))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        torch.randint(10, 3)
    with pytest.raises(RuntimeError, match="negative"):
        torch.randint(3, (-1,))


@pytest.mark.parametrize("draw", [
    lambda: torch.rand(3, 4),
    lambda: torch.randn(5),
    lambda: torch.randint(0, 1000, (6,)),
    lambda: torch.rand(2, dtype=torch.float64),
    lambda: torch.randperm(10),
])
def test_manual_seed_reproduces(draw):
    torch.manual_seed(123)
    a = _np(draw()).copy()
    b = _np(draw()).copy()
    torch.manual_seed(123)
    c = _np(draw()).copy()
    d = _np(draw()).copy()
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, d)
    assert not np.array_equal(a, b)  # the stream moves on
    torch.manual_seed(124)
    assert not np.array_equal(_np(draw()), a)


def test_manual_seed_returns_generator():
    g = torch.manual_seed(3)
    assert isinstance(g, torch.Generator)


@pytest.mark.parametrize("kind", ["rand", "randn", "randint"])
def test_generator_streams(kind):
    def draw(g):
        if kind == "randint":
            return _np(torch.randint(0, 10**6, (8,), generator=g)).copy()
        return _np(getattr(torch, kind)(8, generator=g)).copy()

    g1 = torch.Generator().manual_seed(1)
    g2 = torch.Generator().manual_seed(1)
    assert isinstance(g1, torch.Generator)
    a = draw(g1)
    np.testing.assert_array_equal(a, draw(g2))
    assert not np.array_equal(a, draw(g1))
    g3 = torch.Generator().manual_seed(2)
    assert not np.array_equal(a, draw(g3))
    # drawing from a generator does not advance the global stream
    torch.manual_seed(0)
    x = _np(torch.rand(4)).copy()
    torch.manual_seed(0)
    draw(torch.Generator().manual_seed(5))
    np.testing.assert_array_equal(_np(torch.rand(4)), x)


def test_random_requires_grad():
    assert torch.rand(2, requires_grad=True).requires_grad
    assert torch.randn(2, requires_grad=True).requires_grad


# ------------------------------------------------------------------ *_like

def test_like_functions_keep_shape_and_dtype():
    i = torch.tensor([[1, 2, 3]])
    z = torch.zeros_like(i)
    assert z.dtype is torch.int64 and z.tolist() == [[0, 0, 0]]
    o = torch.ones_like(i)
    assert o.dtype is torch.int64 and o.tolist() == [[1, 1, 1]]
    e = torch.empty_like(torch.zeros(2, 3, dtype=torch.float64))
    assert e.dtype is torch.float64 and e.shape == (2, 3)
    f = torch.full_like(i, 2.7)  # converted to the input's dtype
    assert f.dtype is torch.int64 and f.tolist() == [[2, 2, 2]]
    f = torch.full_like(torch.tensor([1.0, 2.0]), 2.7)
    assert f.dtype is torch.float32
    np.testing.assert_allclose(_np(f).astype(np.float64), [2.7, 2.7], rtol=1e-6)
    b = torch.full_like(torch.tensor([True, False]), 2)
    assert b.dtype is torch.bool and b.tolist() == [True, True]
    assert torch.zeros_like(torch.tensor(3.0)).shape == ()
    assert torch.ones_like(torch.zeros(0, 4)).shape == (0, 4)


def test_like_functions_dtype_override():
    o = torch.ones_like(torch.tensor([1.0, 2.0]), dtype=torch.int32)
    assert o.dtype is torch.int32 and o.tolist() == [1, 1]
    z = torch.zeros_like(torch.tensor([1, 2]), dtype=torch.float64)
    assert z.dtype is torch.float64 and z.tolist() == [0.0, 0.0]


def test_random_like():
    r = torch.rand_like(torch.zeros(30, 40, dtype=torch.float64))
    assert r.dtype is torch.float64 and r.shape == (30, 40)
    a = _np(r)
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    n = torch.randn_like(torch.zeros(2, 3))
    assert n.dtype is torch.float32 and n.shape == (2, 3)
    ri = torch.randint_like(torch.zeros(20, 30), 10)
    assert ri.dtype is torch.float32 and ri.shape == (20, 30)  # PyTorch keeps the input dtype
    a = _np(ri)
    assert np.all(a == np.floor(a)) and a.min() == 0 and a.max() == 9
    ri = torch.randint_like(torch.zeros(20, 30, dtype=torch.int32), 3, 10)
    assert ri.dtype is torch.int32
    a = _np(ri)
    assert a.min() == 3 and a.max() == 9


# ------------------------------------------------------------------ from_numpy / numpy / as_tensor

@pytest.mark.parametrize("npdt,dtype", [
    (np.bool_, torch.bool), (np.uint8, torch.uint8), (np.int8, torch.int8),
    (np.int16, torch.int16), (np.int32, torch.int32), (np.int64, torch.int64),
    (np.float16, torch.float16), (np.float32, torch.float32), (np.float64, torch.float64),
])
def test_from_numpy_dtypes(npdt, dtype):
    a = np.array([[1, 0], [0, 1]]).astype(npdt)
    t = torch.from_numpy(a)
    assert t.dtype is dtype and t.shape == (2, 2)
    np.testing.assert_array_equal(_np(t), a)


@pytest.mark.parametrize("npdt", [np.float32, np.float64, np.int64, np.int32])
def test_from_numpy_shares_memory_both_ways(npdt):
    a = np.zeros(3, dtype=npdt)
    t = torch.from_numpy(a)
    a[0] = 5  # numpy write seen by the tensor
    assert t.tolist() == [5, 0, 0]
    t.add_(1)  # in-place tensor ops seen by the array
    np.testing.assert_array_equal(a, np.array([6, 1, 1], dtype=npdt))
    t.mul_(2)
    np.testing.assert_array_equal(a, np.array([12, 2, 2], dtype=npdt))
    t[1] = 9
    np.testing.assert_array_equal(a, np.array([12, 9, 2], dtype=npdt))
    t.sub_(torch.ones(3, dtype=t.dtype))
    np.testing.assert_array_equal(a, np.array([11, 8, 1], dtype=npdt))
    t += 1
    np.testing.assert_array_equal(a, np.array([12, 9, 2], dtype=npdt))
    t.fill_(4)
    np.testing.assert_array_equal(a, np.array([4, 4, 4], dtype=npdt))
    t.zero_()
    np.testing.assert_array_equal(a, np.zeros(3, dtype=npdt))
    assert t.numpy() is a or np.shares_memory(t.numpy(), a)


def test_from_numpy_float_inplace_ops():
    a = np.array([[1.0, 4.0], [9.0, 16.0]], dtype=np.float32)
    t = torch.from_numpy(a)
    t.sqrt_()
    np.testing.assert_allclose(a, [[1, 2], [3, 4]])
    t.div_(torch.tensor([1.0, 2.0]))  # broadcast in place
    np.testing.assert_allclose(a, [[1, 1], [3, 2]])
    t.copy_(torch.tensor([[7.0, 8.0], [9.0, 10.0]]))
    np.testing.assert_allclose(a, [[7, 8], [9, 10]])
    t[0] = torch.tensor([0.5, 0.25])
    np.testing.assert_allclose(a, [[0.5, 0.25], [9, 10]])


def test_from_numpy_views_and_zero_dim():
    a = np.arange(6)
    t = torch.from_numpy(a[::2])
    assert t.tolist() == [0, 2, 4]
    a[2] = 40
    assert t.tolist() == [0, 40, 4]
    s = torch.from_numpy(np.array(5.0))
    assert s.shape == () and s.dtype is torch.float64 and s.item() == 5.0
    tr = torch.from_numpy(np.array([[1, 2], [3, 4]]).T)
    assert tr.tolist() == [[1, 3], [2, 4]]
    e = torch.from_numpy(np.zeros((0, 2), dtype=np.float32))
    assert e.shape == (0, 2) and e.dtype is torch.float32


def test_from_numpy_errors():
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        torch.from_numpy([1, 2])
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is "
                                         "negative"):
        torch.from_numpy(np.array([1, 2, 3])[::-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.uint8])
def test_numpy_shares_memory(dtype):
    t = torch.zeros(3, dtype=dtype)
    n = t.numpy()
    assert n.dtype == NP[dtype] and n.shape == (3,)
    n[0] = 4  # a numpy write is seen by the tensor
    assert t.tolist()[0] == 4
    t.add_(1)  # an in-place tensor op is seen by the array
    np.testing.assert_array_equal(n, np.array([5, 1, 1], dtype=NP[dtype]))
    t[2] = 7
    assert n[2] == 7


def test_numpy_of_zero_dim_and_bool():
    n = torch.tensor(2.5).numpy()
    assert isinstance(n, np.ndarray) and n.shape == () and n.dtype == np.float32
    b = torch.tensor([True, False]).numpy()
    assert b.dtype == np.bool_ and b.tolist() == [True, False]


def test_as_tensor():
    assert torch.as_tensor([1, 2]).dtype is torch.int64
    assert torch.as_tensor([1.0, 2]).dtype is torch.float32
    assert torch.as_tensor(np.array([1, 2], dtype=np.int16)).dtype is torch.int16
    # an ndarray of the same dtype is shared
    a = np.zeros(3)
    t = torch.as_tensor(a)
    a[0] = 1
    assert t.dtype is torch.float64 and t.tolist() == [1.0, 0.0, 0.0]
    t.add_(1)
    np.testing.assert_array_equal(a, [2.0, 1.0, 1.0])
    # a dtype change copies
    a = np.zeros(3)
    t = torch.as_tensor(a, dtype=torch.float32)
    a[0] = 1
    assert t.dtype is torch.float32 and t.tolist() == [0.0, 0.0, 0.0]
    # a tensor comes back as itself unless converted
    x = torch.tensor([1.0, 2.0])
    assert torch.as_tensor(x) is x
    y = torch.as_tensor(x, dtype=torch.float64)
    assert y is not x and y.dtype is torch.float64 and y.tolist() == [1.0, 2.0]


def test_tensor_copies_numpy():
    a = np.zeros(3)
    t = torch.tensor(a)
    a[0] = 1
    assert t.tolist() == [0.0, 0.0, 0.0]
    t.add_(2)
    np.testing.assert_array_equal(a, [1.0, 0.0, 0.0])


# ------------------------------------------------------------------ shapes by hypothesis

@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
       form=st.sampled_from(["ints", "tuple", "list", "size"]),
       dtype=st.sampled_from(ALL_DTYPES))
def test_creation_shapes(shape, form, dtype):
    args = {"ints": tuple(shape), "tuple": (tuple(shape),), "list": (list(shape),),
            "size": (torch.Size(shape),)}[form]
    if form == "ints" and not shape:
        args = ((),)
    for fn, fill in ((torch.zeros, 0), (torch.ones, 1)):
        t = fn(*args, dtype=dtype)
        assert tuple(t.shape) == tuple(shape)
        assert t.numel() == int(np.prod(shape))
        np.testing.assert_array_equal(_np(t), np.full(shape, fill, dtype=NP[dtype]))
    f = torch.full(tuple(shape), 3, dtype=dtype)
    np.testing.assert_array_equal(_np(f), np.full(shape, 3, dtype=NP[dtype]))
    if dtype.is_floating_point:
        r = torch.rand(*args, dtype=dtype)
        assert tuple(r.shape) == tuple(shape) and r.dtype is dtype


def _nested(depth: int):
    x = 1.0
    for _ in range(depth):
        x = [x]
    return x


def test_strings_and_deep_nesting_give_pytorchs_value_errors():
    """PyTorch sizes a nested sequence by its first elements up to 128 deep: a string is a
    sequence whose first element is itself, and a 1000-deep list stops there too (no
    RecursionError); a string that is not first is an invalid data type."""
    for data, kind in ((["a"], "str"), (("a",), "str"), (["ab", "c"], "str"),
                       (_nested(129), "list"), (_nested(1000), "list")):
        with pytest.raises(ValueError, match=f"^too many dimensions '{kind}'$"):
            torch.tensor(data)
    with pytest.raises(ValueError, match="^too many dimensions 'list'$"):
        torch.as_tensor(_nested(1000))
    with pytest.raises(TypeError, match=r"^new\(\): invalid data type 'str'$"):
        torch.tensor([1, "a"])
    with pytest.raises(TypeError, match=r"^new\(\): invalid data type 'str'$"):
        torch.tensor("a")
    assert torch.tensor(_nested(64)).shape == (1,) * 64
    with pytest.raises(ValueError, match="at most 64"):  # numpy's limit (PyTorch's is 128)
        torch.tensor(_nested(65))


def test_a_leaf_that_is_not_a_number_cannot_infer_a_dtype():
    import fractions
    for leaf, name in ((object(), "object"), (fractions.Fraction(1, 2), "Fraction"),
                       (None, "NoneType")):
        for data in ([leaf], [1, leaf]):
            with pytest.raises(RuntimeError, match=f"^Could not infer dtype of {name}$"):
                torch.tensor(data)


def test_randint_ends_must_fit_int64_and_the_dtype():
    """Ends outside int64 are PyTorch's ValueError; ends outside the dtype its RuntimeError
    (a uint8 draw from [0, 300) used to wrap around); the widest legal ranges still draw."""
    for args in ((0, 2**63), (2**63,), (-2**63 - 1, 0), (0, 2**64)):
        with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
            torch.randint(*args, (2,))
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
        torch.zeros(2, dtype=torch.int64).random_(0, 2**63)
    for d, args, what, cpp in ((torch.uint8, (0, 300), "to - 1", "unsigned char"),
                               (torch.uint8, (-1, 10), "from", "unsigned char"),
                               (torch.int8, (-129, 0), "from", "signed char"),
                               (torch.int16, (0, 2**15 + 1), "to - 1", "short int"),
                               (torch.int32, (0, 2**31 + 1), "to - 1", "int"),
                               (torch.bool, (0, 3), "to - 1", "bool")):
        with pytest.raises(RuntimeError, match=f"^{what} is out of bounds for {cpp}$"):
            torch.randint(*args, (2,), dtype=d)
    x = torch.randint(-2**63, 2**63 - 1, (64,))
    assert x.dtype == torch.int64 and len(set(x.tolist())) > 60
    u = torch.randint(0, 256, (4000,), dtype=torch.uint8).numpy()
    assert u.min() >= 0 and u.max() == 255
    assert torch.randint(-128, 128, (2000,), dtype=torch.int8).numpy().min() == -128


def test_an_empty_tensor_numpy_cannot_hold_is_a_clear_runtime_error():
    """PyTorch returns empty(2**62, 0); numpy sizes an empty array by its other sizes and
    cannot: a RuntimeError that says so (not numpy's ValueError). What numpy holds works."""
    for make in (torch.empty, torch.zeros, torch.ones, torch.randn):
        with pytest.raises(RuntimeError, match="is not supported"):
            make(2**62, 0)
    with pytest.raises(RuntimeError, match="^Storage size calculation overflowed"):
        torch.empty(2**62, 2**62, 0)  # PyTorch's product overflows before the 0
    assert torch.empty(2**40, 0).shape == (2**40, 0)
    assert torch.zeros(0, 2**40, dtype=torch.int8).sum().item() == 0


@pytest.mark.parametrize("make", [
    lambda **kw: torch.zeros(**kw), lambda **kw: torch.ones(**kw),
    lambda **kw: torch.empty(**kw), lambda **kw: torch.rand(**kw),
    lambda **kw: torch.randn(**kw), lambda **kw: torch.full(fill_value=2.0, **kw),
    lambda **kw: torch.randint(5, **kw), lambda **kw: torch.randint(low=1, high=5, **kw),
    lambda **kw: torch.ones(1).new_zeros(**kw), lambda **kw: torch.ones(1).new_ones(**kw),
    lambda **kw: torch.ones(1).new_empty(**kw),
    lambda **kw: torch.ones(1).new_full(fill_value=1.0, **kw),
])
def test_creation_takes_size_keyword(make):
    """Every creation function takes `size=` as PyTorch does (empty(size=...) was 0-d, the
    others a TypeError): a tuple, a list, a Size or ()."""
    for size in ((2, 3), [4], torch.Size([2, 1]), ()):
        t = make(size=size)
        assert tuple(t.shape) == tuple(size)


def test_creation_size_keyword_errors():
    """PyTorch's TypeErrors: a size both ways, a keyword size that is not a sequence."""
    with pytest.raises(TypeError, match="empty\\(\\) got multiple values for argument 'size'"):
        torch.empty(2, size=(3,))
    with pytest.raises(TypeError, match="ones\\(\\): argument 'size' must be tuple of ints, not "
                                        "int"):
        torch.ones(size=2)
    assert torch.zeros(size=(2,), dtype=torch.int64).dtype == torch.int64
    assert torch.rand(size=(3,), generator=torch.Generator().manual_seed(0)).shape == (3,)


def _trunc_range_reference(start, end, step, dtype):
    """PyTorch's integer arange (RangeFactories.cpp): the bounds and step truncated toward zero;
    int64 counts (end - start + step - sign(step)) / step with C's division, other integer
    dtypes ceil((end - start) / step) of the bounds as given."""
    s, e, st = int(start), int(end), int(step)
    if dtype == torch.int64:
        num = e - s + st - (1 if st > 0 else -1)
        n = abs(num) // abs(st) * (1 if (num >= 0) == (st > 0) else -1)
    else:
        n = int(np.ceil((end - start) / step))
    return [s + st * i for i in range(max(n, 0))]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16])
@pytest.mark.parametrize("args", [(0.0, -8.000001, -4.0), (0, 5, 1.5), (0.5, 7.9, 2.5),
                                  (-3.7, 4.2, 1.1), (10, 1, -3), (-1.5, 1.5, 1), (3, 3.5, 1),
                                  (2.5, -2.5, -1.7)])
def test_arange_integer_dtype_with_float_bounds(args, dtype):
    """arange(0.0, -8.000001, -4.0, dtype=int64) is [0, -4] in PyTorch (was [0, -4, -8]);
    int32 of (0, 5, 1.5) is [0, 1, 2, 3] (checked by hand in PyTorch 2.13)."""
    assert torch.arange(*args, dtype=dtype).tolist() == _trunc_range_reference(*args, dtype)


def test_arange_linspace_logspace_hand_checked_values():
    """Values read off PyTorch 2.13 by hand (CPU)."""
    assert torch.arange(0.0, -8.000001, -4.0, dtype=torch.int64).tolist() == [0, -4]
    assert torch.arange(0, 5, 1.5, dtype=torch.int32).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="step must be nonzero"):
        torch.arange(0, 1, 0.5, dtype=torch.int64)  # the step truncates to 0
    assert torch.arange(0.9, 5.1, 0.999, dtype=torch.int32).tolist() == [0] * 5
    lin = torch.linspace(4.3, 1, 50, dtype=torch.int64).tolist()
    assert lin[:3] == [4, 3, 3] and lin.count(3) == 16 and lin.count(1) == 17
    assert torch.logspace(-2.5, 3.7, 6, base=2.0, dtype=torch.int64).tolist() == [0, 0, 1, 2, 4,
                                                                                  8]
    assert torch.logspace(4.3, 1, 3, base=2.0, dtype=torch.int64).tolist() == [16, 5, 2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without "
                                           "overflow"):
        torch.linspace(-2.5, 3.7, 6, dtype=torch.uint8)
    assert torch.linspace(-7.9, 7.9, 9).tolist()[3] == np.float32(-1.975000023841858)
    assert torch.linspace(-7.9, 7.9, 9, dtype=torch.float64).tolist()[3] == -1.975
    assert torch.linspace(0, 10, 7, dtype=torch.float64).tolist()[4] == 6.666666666666666
    assert torch.arange(-3.7, 4.2, 1.1, dtype=torch.float64).tolist()[5] == 1.8000000000000003


def test_linspace_of_integer_dtype_matches_the_kernel_formula():
    """Integers: truncated bounds, a double step, start + step * i for the first half and
    end - step * (steps - 1 - i) for the second, truncated (numpy float64 reference)."""
    for start, end, steps in ((4.3, 1, 50), (-7.9, 7.9, 9), (0, 10, 7), (1.9, 1.1, 3)):
        s, e = int(start), int(end)
        step = (e - s) / (steps - 1)
        i = np.arange(steps)
        want = np.where(i < steps // 2, s + step * i, e - step * (steps - 1 - i))
        got = torch.linspace(start, end, steps, dtype=torch.int64).tolist()
        assert got == np.trunc(want).astype(np.int64).tolist()
        got = torch.logspace(start, end, steps, base=3.0, dtype=torch.int32).tolist()
        assert got == np.trunc(3.0 ** want).astype(np.int64).tolist()


def test_range_tensor_bounds_compute_in_the_dtype_asked():
    """Tensor bounds are read as numbers: with dtype=float64 nothing rounds through float32
    beyond the bounds' own float32 values."""
    s, e = np.float32(0.1), np.float32(1.3)
    got = torch.linspace(torch.tensor(0.1), torch.tensor(1.3), 7, dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), np.linspace(float(s), float(e), 7), rtol=1e-15)
    got = torch.logspace(torch.tensor(0.1), torch.tensor(1.3), 7, dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), 10.0 ** np.linspace(float(s), float(e), 7),
                               rtol=1e-14)
    got = torch.arange(torch.tensor(0.1), torch.tensor(1.3), torch.tensor(0.2),
                       dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), float(s) + np.arange(6) * float(np.float32(0.2)),
                               rtol=1e-15)


# c10's checked_convert, the rule every fill follows (observed by hand in PyTorch 2.13):
# an unsigned dtype takes negatives down to -max as two's complement, floats must lie in
# [lowest, max] before truncation, NaN never becomes an integer.
@pytest.mark.parametrize("make", [
    lambda v, d: torch.full((2,), v, dtype=d),
    lambda v, d: torch.full_like(torch.zeros(2, dtype=d), v),
    lambda v, d: torch.zeros(2, dtype=d).new_full((2,), v),
    lambda v, d: torch.zeros(4, dtype=d)[::2].fill_(v),
    lambda v, d: torch.zeros(2, dtype=d).masked_fill(torch.tensor([True, True]), v),
])
def test_fill_values_convert_as_c10s_checked_convert(make):
    u8, i8 = torch.uint8, torch.int8
    for v, d, want in ((-9, u8, 247), (-255, u8, 1), (255, u8, 255), (True, u8, 1),
                       (2.7, u8, 2), (-128, i8, -128), (127.0, i8, 127), (-2 ** 63, torch.int64,
                                                                         -2 ** 63)):
        assert make(v, d).tolist() == [want, want]
    for v, d, name in ((-256, u8, "uint8_t"), (256, u8, "uint8_t"), (-2.7, u8, "uint8_t"),
                       (255.5, u8, "uint8_t"), (127.9, i8, "int8_t"), (-129, i8, "int8_t"),
                       (2 ** 31, torch.int32, "int"), (float("nan"), torch.int32, "int"),
                       (float("inf"), torch.int64, "int64_t"), (2 ** 63, torch.int64, "int64_t"),
                       (40000, torch.int16, "int16_t")):
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} "
                                               f"without overflow"):
            make(v, d)
    assert make(-9, u8).shape == (2,)
    assert torch.full((), -1, dtype=u8).item() == 255
    assert torch.full((0, 3), -1, dtype=u8).shape == (0, 3)


def test_scalar_operands_of_where_and_clamp_are_checked_too():
    u = torch.tensor([1, 200, 3], dtype=torch.uint8)
    m = torch.tensor([True, False, True])
    assert torch.where(m, u, -9).tolist() == [1, 247, 3]
    assert torch.clamp(u, min=-9).tolist() == [247, 247, 247]  # the bound itself is 247
    for f in (lambda: torch.where(m, u, 300), lambda: torch.clamp(u, max=300)):
        with pytest.raises(RuntimeError, match="uint8_t without overflow"):
            f()


def test_constant_pad_value_takes_no_negative_into_unsigned():
    # constant_pad_nd converts strictly: no two's complement for an unsigned dtype
    u = torch.tensor([5, 6], dtype=torch.uint8)
    pad = torch.nn.functional.pad
    assert pad(u, (1, 1), value=255).tolist() == [255, 5, 6, 255]
    assert pad(u, (1, 1), value=0.7).tolist() == [0, 5, 6, 0]
    for v in (-3, -0.5, 256):
        with pytest.raises(RuntimeError, match="uint8_t without overflow"):
            pad(u, (1, 1), value=v)
    assert pad(torch.tensor([5, 6], dtype=torch.int8), (1, 0), value=-3).tolist() == [-3, 5, 6]
