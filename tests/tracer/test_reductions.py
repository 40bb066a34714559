"""Reductions against numpy in float64: sum, mean, prod, max, min, amax, amin, argmax, argmin,
var, std, all, any, over hypothesis-generated shapes (0-d, size-1 and empty dims included) and
dims (int, negative, tuple where PyTorch takes one), with and without keepdim.

Result dtypes, error types and messages, and the printed named tuples were observed by hand in
PyTorch 2.13.0 (CPU) and are written in literally; torch is not imported here.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import fusetorch as torch
from fusetorch import Tensor

FLOATS = [torch.float32, torch.float64]
NP = {torch.float32: np.float32, torch.float64: np.float64, torch.int64: np.int64,
      torch.int32: np.int32, torch.bool: np.bool_, torch.float16: np.float16,
      torch.uint8: np.uint8, torch.int8: np.int8}
TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float64: dict(rtol=1e-11, atol=1e-11),
       torch.float16: dict(rtol=2e-3, atol=2e-3)}
SETTINGS = settings(max_examples=40, deadline=None)


def rand(shape, dtype=torch.float32, kind="any"):
    if kind == "small":  # few distinct values: ties in max/argmax, zeros for all/any
        a = np.random.randint(-1, 2, size=shape)
    elif kind == "prod":  # products stay near 1
        a = np.random.uniform(0.5, 1.5, shape) * np.where(np.random.random_sample(shape) < .5,
                                                          -1, 1)
    else:
        a = np.random.standard_normal(shape) * 2
    return np.asarray(a).astype(NP[dtype])


def f64(a):
    return np.asarray(a).astype(np.float64)


def check(result, expected, dtype):
    assert isinstance(result, Tensor), type(result)
    assert result.dtype is dtype, (result.dtype, dtype)
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape, (tuple(result.shape), expected.shape)
    got = np.asarray(result.numpy())
    assert got.dtype == NP[dtype]
    if dtype.is_floating_point:
        np.testing.assert_allclose(got.astype(np.float64), expected, equal_nan=True,
                                   **TOL[dtype])
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def np_axis(dim, ndim):
    """numpy's axis for a PyTorch `dim` (None, int or tuple; 0-d tensors take 0 and -1)."""
    if dim is None or ndim == 0:
        return None
    dims = (dim,) if isinstance(dim, int) else dim
    return tuple(sorted(d % ndim for d in dims))


def reduced(shape, dim):
    """The normalised dims a reduction runs over, in the order given."""
    if dim is None:
        return tuple(range(len(shape)))
    dims = (dim,) if isinstance(dim, int) else dim
    return tuple(d % len(shape) for d in dims) if shape else ()


def quiet(fn, *args, **kw):
    """numpy's value for an empty mean or a var without degrees of freedom, without warnings."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@st.composite
def shape_and_dim(draw, tuples=True, none=True):
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    n = max(len(shape), 1)  # a 0-d tensor takes dims 0 and -1
    kinds = ["int"] + (["none"] if none else []) + (["tuple"] if tuples else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-n, n - 1))
    dims = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    return shape, tuple(d - n if draw(st.booleans()) else d for d in dims)


def kw(dim, keepdim):
    """PyTorch's sum/mean/max/prod take keepdim only together with dim."""
    return {} if dim is None else {"dim": dim, "keepdim": keepdim}


# ------------------------------------------------------------------ sum, mean, var

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(sd=shape_and_dim(), keepdim=st.booleans())
def test_sum(dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype)
    x = torch.tensor(a)
    expected = np.sum(f64(a), axis=np_axis(dim, len(shape)), keepdims=keepdim and dim is not None)
    check(torch.sum(x, **kw(dim, keepdim)), expected, dtype)
    check(x.sum(**kw(dim, keepdim)), expected, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(sd=shape_and_dim(), keepdim=st.booleans())
def test_mean(dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype)
    x = torch.tensor(a)
    expected = quiet(np.mean, f64(a), axis=np_axis(dim, len(shape)),
                     keepdims=keepdim and dim is not None)
    check(torch.mean(x, **kw(dim, keepdim)), expected, dtype)
    check(x.mean(**kw(dim, keepdim)), expected, dtype)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(sd=shape_and_dim(), keepdim=st.booleans(), form=st.sampled_from(
    ["default", "unbiased=True", "unbiased=False", "correction=0", "correction=1",
     "correction=2"]))
def test_var_std(name, dtype, sd, keepdim, form):
    shape, dim = sd
    a = rand(shape, dtype)
    x = torch.tensor(a)
    ddof = {"default": 1, "unbiased=True": 1, "unbiased=False": 0}.get(form)
    extra = {}
    if form.startswith("unbiased"):
        extra["unbiased"] = form.endswith("True")
    elif form.startswith("correction"):
        ddof = int(form[-1])
        extra["correction"] = ddof
    ref = np.var if name == "var" else np.std
    expected = quiet(ref, f64(a), axis=np_axis(dim, len(shape)), ddof=ddof, keepdims=keepdim)
    args = {"dim": dim, "keepdim": keepdim, **extra}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns when there are no degrees of freedom
        check(getattr(torch, name)(x, **args), expected, dtype)
        check(getattr(x, name)(**args), expected, dtype)


def test_var_std_values():
    x = torch.arange(6.0).reshape(2, 3)
    check(x.var(0, unbiased=False), [2.25, 2.25, 2.25], torch.float32)
    check(x.var(0, correction=0), [2.25, 2.25, 2.25], torch.float32)
    check(x.var(1, correction=2), [2.0, 2.0], torch.float32)
    check(x.var(0, correction=1.5), [9.0, 9.0, 9.0], torch.float32)
    check(x.var(), 3.5, torch.float32)
    check(x.std(), np.sqrt(3.5), torch.float32)
    check(x.std(False), np.sqrt(17.5 / 6), torch.float32)  # std(unbiased) positionally
    check(x.var(0, False), [2.25, 2.25, 2.25], torch.float32)
    check(torch.var(x, 1, keepdim=True, unbiased=True), [[1.0], [1.0]], torch.float32)
    check(torch.var(x, 1, True, True), [[1.0], [1.0]], torch.float32)
    check(x.var((0, 1)), 3.5, torch.float32)
    check(x.std((0, 1), keepdim=True), [[np.sqrt(3.5)]], torch.float32)


def test_var_without_degrees_of_freedom():
    """N - correction <= 0: nan when the sum of squares is 0 (0/0), inf otherwise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = torch.arange(6.0)
        check(x.var(correction=6), np.inf, torch.float32)
        check(x.var(correction=7), np.inf, torch.float32)
        check(torch.ones(1).var(), np.nan, torch.float32)
        check(torch.ones(1).std(0), np.nan, torch.float32)
        check(torch.ones(2, 1).var(1), [np.nan, np.nan], torch.float32)
        check(torch.tensor(5.0).std(), np.nan, torch.float32)
        check(torch.tensor(5.0).std(unbiased=False), 0.0, torch.float32)
        check(torch.tensor(5.0).var(0, correction=0), 0.0, torch.float32)
        check(torch.zeros(0, 3).var(), np.nan, torch.float32)
        check(torch.zeros(0, 3).std(0), [np.nan] * 3, torch.float32)
        check(torch.zeros(0, 3).var(1), np.zeros(0), torch.float32)


def test_var_mean_of_integers_are_errors():
    i = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input "
                                           "dtype must be either a floating point or complex "
                                           "dtype. Got: Int"):
        i.mean()
    with pytest.raises(RuntimeError, match="std and var only support floating point and "
                                           "complex dtypes"):
        i.var()
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        torch.std(torch.tensor([1, 2]))
    check(i.mean(dtype=torch.float64), 2.5, torch.float64)
    check(torch.mean(torch.ones(2, 3, dtype=torch.int64), dim=1, dtype=torch.float64),
          [1.0, 1.0], torch.float64)


def test_empty_dim_list_reduces_everything():
    a = rand((2, 3))
    x = torch.tensor(a)
    check(x.sum(()), f64(a).sum(), torch.float32)
    check(x.sum([]), f64(a).sum(), torch.float32)
    check(x.mean(()), f64(a).mean(), torch.float32)
    check(x.amax(()), f64(a).max(), torch.float32)
    check(x.var(()), f64(a).var(ddof=1), torch.float32)


# --------------------------------------------------------------------- empty inputs

def test_empty_sum_mean_prod():
    e = torch.zeros(0, 3)
    check(e.sum(), 0.0, torch.float32)
    check(torch.zeros(0).sum(), 0.0, torch.float32)
    check(e.sum(0), [0.0, 0.0, 0.0], torch.float32)
    check(e.sum(1), np.zeros(0), torch.float32)
    check(e.mean(), np.nan, torch.float32)
    check(torch.zeros(0).mean(), np.nan, torch.float32)
    check(e.mean(0), [np.nan] * 3, torch.float32)
    check(e.mean(1), np.zeros(0), torch.float32)
    check(e.prod(), 1.0, torch.float32)
    check(e.prod(0), [1.0, 1.0, 1.0], torch.float32)
    check(torch.zeros(0, dtype=torch.int64).sum(), 0, torch.int64)
    check(torch.zeros(2, 0, dtype=torch.bool).sum(1), [0, 0], torch.int64)


def test_empty_all_any():
    e = torch.zeros(0, 3)
    check(e.all(), True, torch.bool)
    check(e.any(), False, torch.bool)
    check(e.all(0), [True, True, True], torch.bool)
    check(e.any(0), [False, False, False], torch.bool)
    check(e.any(1), np.zeros(0, bool), torch.bool)


EMPTY_FULL = "Expected reduction dim to be specified for input.numel\\(\\) == 0"


def test_max_min_of_empty_are_errors():
    e = torch.zeros(0, 3)
    for name in ("max", "min", "amax", "amin"):
        with pytest.raises(RuntimeError, match=f"{name}\\(\\): {EMPTY_FULL}. Specify the "
                                               "reduction dim with the 'dim' argument."):
            getattr(e, name)()
        with pytest.raises(RuntimeError, match=f"{name}\\(\\): {EMPTY_FULL}"):
            getattr(torch, name)(torch.zeros(0))
    for name in ("argmax", "argmin"):
        with pytest.raises(IndexError, match=f"{name}\\(\\): {EMPTY_FULL}."):
            getattr(e, name)()
    for name in ("max", "min", "amax", "amin", "argmax", "argmin"):
        with pytest.raises(IndexError, match=f"{name}\\(\\): Expected reduction dim 0 to have "
                                             "non-zero size."):
            getattr(e, name)(0)
    for name in ("max", "min", "argmax", "argmin"):  # reported as a non-negative dim
        with pytest.raises(IndexError, match=f"{name}\\(\\): Expected reduction dim 0 to have "
                                             "non-zero size."):
            getattr(e, name)(-2)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 0 to have "
                                         "non-zero size."):
        e.amax((1, 0))
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 1 to have "
                                         "non-zero size."):
        torch.zeros(3, 0, 2).amax((2, 1))


def test_max_min_over_nonempty_dims_of_empty_tensors():
    e = torch.zeros(0, 3)
    r = e.max(1)
    check(r.values, np.zeros(0), torch.float32)
    check(r.indices, np.zeros(0), torch.int64)
    check(e.argmax(1), np.zeros(0), torch.int64)
    check(e.amin(1), np.zeros(0), torch.float32)
    check(torch.zeros(3, 0).amax(0), np.zeros(0), torch.float32)
    v, i = torch.zeros(3, 0).min(0, keepdim=True)
    check(v, np.zeros((1, 0)), torch.float32)
    check(i, np.zeros((1, 0)), torch.int64)


# -------------------------------------------------------------------- max, min, arg

def nonempty(shape, dim):
    return all(shape[d] > 0 for d in reduced(shape, dim)) and \
        (dim is not None or int(np.prod(shape)) > 0)


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(sd=shape_and_dim(), keepdim=st.booleans())
def test_amax_amin(name, dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype, "small")
    x = torch.tensor(a)
    args = {"keepdim": keepdim} if dim is None else {"dim": dim, "keepdim": keepdim}
    if not nonempty(shape, dim):
        err = RuntimeError if dim is None else IndexError
        with pytest.raises(err, match=f"{name}\\(\\): Expected reduction dim"):
            getattr(torch, name)(x, **args)
        return
    ref = np.max if name == "amax" else np.min
    expected = ref(f64(a), axis=np_axis(dim, len(shape)), keepdims=keepdim)
    check(getattr(torch, name)(x, **args), expected, dtype)
    check(getattr(x, name)(**args), expected, dtype)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
@SETTINGS
@given(sd=shape_and_dim(tuples=False), keepdim=st.booleans())
def test_max_min(name, dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype, "small")  # ties: the index is the first one, as numpy's
    x = torch.tensor(a)
    fn = getattr(torch, name)
    if not nonempty(shape, dim):
        with pytest.raises(RuntimeError if dim is None else IndexError,
                           match=f"{name}\\(\\): Expected reduction dim"):
            fn(x, **kw(dim, keepdim))
        return
    ref = np.max if name == "max" else np.min
    aref = np.argmax if name == "max" else np.argmin
    if dim is None:
        check(fn(x), ref(a), dtype)
        check(getattr(x, name)(), ref(a), dtype)
        return
    axis = np_axis(dim, len(shape))
    values = ref(a, axis=axis, keepdims=keepdim)
    indices = np.asarray(0) if not shape else aref(a, axis=axis[0], keepdims=keepdim)
    r = fn(x, dim, keepdim)
    assert isinstance(r, tuple) and len(r) == 2 and type(r).__name__ == name
    check(r.values, values, dtype)
    check(r.indices, indices, torch.int64)
    v, i = getattr(x, name)(dim=dim, keepdim=keepdim)
    check(v, values, dtype)
    check(i, indices, torch.int64)
    assert r[0] is r.values and r[1] is r.indices


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
@SETTINGS
@given(sd=shape_and_dim(tuples=False), keepdim=st.booleans())
def test_argmax_argmin(name, dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype, "small")
    x = torch.tensor(a)
    fn = getattr(torch, name)
    if not nonempty(shape, dim):
        with pytest.raises(IndexError, match=f"{name}\\(\\): Expected reduction dim"):
            fn(x, dim=dim, keepdim=keepdim)
        return
    ref = np.argmax if name == "argmax" else np.argmin
    if dim is None:  # the index into the flattened tensor; keepdim keeps every dim as 1
        expected = np.asarray(ref(a.reshape(-1)))
        if keepdim:
            expected = expected.reshape((1,) * len(shape))
    elif not shape:
        expected = np.asarray(0)
    else:
        expected = ref(a, axis=np_axis(dim, len(shape))[0], keepdims=keepdim)
    check(fn(x, dim=dim, keepdim=keepdim), expected, torch.int64)
    check(getattr(x, name)(dim, keepdim), expected, torch.int64)


def test_ties_give_the_first_index():
    x = torch.tensor([1.0, 3.0, 3.0, 0.0])
    check(x.argmax(), 1, torch.int64)
    check(torch.tensor([1.0, 0.0, 3.0, 0.0]).argmin(), 1, torch.int64)
    r = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]]).max(1)
    check(r.values, [3.0, 2.0], torch.float32)
    check(r.indices, [1, 0], torch.int64)
    r = torch.tensor([[5, 5], [5, 5]]).min(0)
    check(r.indices, [0, 0], torch.int64)
    check(torch.full((3, 4), 2.0).argmax(), 0, torch.int64)


def test_nan_wins_max_and_argmax():
    x = torch.tensor([1.0, float("nan"), 3.0])
    check(x.max(), np.nan, torch.float32)
    check(x.min(), np.nan, torch.float32)
    check(x.argmax(), 1, torch.int64)
    check(x.argmin(), 1, torch.int64)
    v, i = x.max(0)
    check(v, np.nan, torch.float32)
    check(i, 1, torch.int64)
    check(x.amax(0), np.nan, torch.float32)


def test_max_named_tuple():
    x = torch.arange(6.0).reshape(2, 3)
    r = x.max(1)
    assert type(r).__name__ == "max"
    assert isinstance(r, tuple) and len(r) == 2
    check(r.values, [2.0, 5.0], torch.float32)
    check(r.indices, [2, 2], torch.int64)
    values, indices = r
    assert values is r.values and indices is r.indices
    assert repr(r) == ("torch.return_types.max(\nvalues=tensor([2., 5.]),\n"
                       "indices=tensor([2, 2]))")
    r = x.min(dim=0, keepdim=True)
    assert type(r).__name__ == "min"
    assert repr(r) == ("torch.return_types.min(\nvalues=tensor([[0., 1., 2.]]),\n"
                       "indices=tensor([[0, 0, 0]]))")
    r = torch.max(x, 1, True)  # keepdim positionally
    check(r.values, [[2.0], [5.0]], torch.float32)
    check(r.indices, [[2], [2]], torch.int64)
    r = torch.max(x, dim=-1, keepdim=True)
    check(r.indices, [[2], [2]], torch.int64)
    r = torch.tensor(5).max(dim=0, keepdim=True)
    check(r.values, 5, torch.int64)
    check(r.indices, 0, torch.int64)
    assert repr(r) == "torch.return_types.max(\nvalues=tensor(5),\nindices=tensor(0))"


def test_max_min_of_another_tensor():
    a, b = rand((2, 3)), rand((3,))
    x, y = torch.tensor(a), torch.tensor(b)
    check(torch.max(x, y), np.maximum(f64(a), f64(b)), torch.float32)
    check(x.max(y), np.maximum(f64(a), f64(b)), torch.float32)
    check(torch.min(x, y), np.minimum(f64(a), f64(b)), torch.float32)
    check(x.min(y), np.minimum(f64(a), f64(b)), torch.float32)
    check(torch.max(x, torch.tensor(0.0)), np.maximum(f64(a), 0.0), torch.float32)
    x = torch.arange(6.0).reshape(2, 3)
    check(x.max(other=torch.tensor([1.0, 10.0, 0.0])), [[1, 10, 2], [3, 10, 5]], torch.float32)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 1"):
        torch.max(x, torch.ones(2))


def test_max_min_keep_dtype():
    i = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    check(i.max(), 4, torch.int32)
    check(i.amax(0), [3, 4], torch.int32)
    v, idx = i.max(1)
    check(v, [2, 4], torch.int32)
    check(idx, [1, 1], torch.int64)
    check(torch.tensor([True, False]).max(), True, torch.bool)
    check(torch.tensor([[True, False], [False, False]]).amin(1), [False, False], torch.bool)
    v, idx = torch.tensor([[True, False], [False, False]]).max(1)
    check(v, [True, False], torch.bool)
    check(idx, [0, 0], torch.int64)


# --------------------------------------------------------------------------- prod

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(sd=shape_and_dim(tuples=False), keepdim=st.booleans())
def test_prod(dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype, "prod")
    x = torch.tensor(a)
    expected = np.prod(f64(a), axis=np_axis(dim, len(shape)), keepdims=keepdim and dim is not None)
    check(torch.prod(x, **kw(dim, keepdim)), expected, dtype)
    check(x.prod(**kw(dim, keepdim)), expected, dtype)


def test_prod_dtypes():
    check(torch.tensor([[1, 2], [3, 4]], dtype=torch.int32).prod(), 24, torch.int64)
    check(torch.tensor([True, False]).prod(), 0, torch.int64)
    check(torch.tensor([True, True]).prod(0), 1, torch.int64)
    check(torch.tensor([2.0, 3.0]).prod(0, dtype=torch.float64), 6.0, torch.float64)
    check(torch.tensor([2, 3]).prod(dtype=torch.float64), 6.0, torch.float64)
    check(torch.tensor([[1, 2], [3, 4]]).prod(dtype=torch.float32), 24.0, torch.float32)


# --------------------------------------------------------------------------- all, any

@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
@SETTINGS
@given(sd=shape_and_dim(), keepdim=st.booleans())
def test_all_any(name, dtype, sd, keepdim):
    shape, dim = sd
    a = rand(shape, dtype, "small") if dtype is not torch.bool else \
        np.random.random_sample(shape) < 0.7
    x = torch.tensor(a)
    ref = np.all if name == "all" else np.any
    expected = ref(a != 0, axis=np_axis(dim, len(shape)), keepdims=keepdim)
    args = {"keepdim": keepdim} if dim is None else {"dim": dim, "keepdim": keepdim}
    check(getattr(torch, name)(x, **args), expected, torch.bool)
    check(getattr(x, name)(**args), expected, torch.bool)


def test_all_any_values():
    x = torch.tensor([[1, 0], [2, 3]])
    check(x.all(1), [False, True], torch.bool)
    check(x.any(0, keepdim=True), [[True, True]], torch.bool)
    check(torch.tensor([1.0, 0.0]).all(), False, torch.bool)
    check(torch.tensor([0.0, float("nan")]).any(), True, torch.bool)  # nan is nonzero
    check(torch.arange(6.0).reshape(2, 3).all((0, 1)), False, torch.bool)
    check(torch.arange(6.0).reshape(2, 3).any((0,)), [True, True, True], torch.bool)


def test_all_any_of_uint8_give_uint8():
    check(torch.tensor([1, 2], dtype=torch.uint8).all(), 1, torch.uint8)
    check(torch.tensor([1, 0], dtype=torch.uint8).any(0), 1, torch.uint8)
    check(torch.tensor([[1, 0]], dtype=torch.uint8).all(1), [0], torch.uint8)


# --------------------------------------------------------------------------- dtypes

def test_sum_dtypes():
    i = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    check(i.sum(), 10, torch.int64)
    check(i.sum(0), [4, 6], torch.int64)
    check(torch.tensor([True, False, True]).sum(), 2, torch.int64)
    check(torch.tensor([[True, False], [True, True]]).sum(1), [1, 2], torch.int64)
    check(torch.tensor([1, 2], dtype=torch.int8).sum(), 3, torch.int64)
    check(torch.tensor([200, 100], dtype=torch.uint8).sum(), 300, torch.int64)  # no wrap
    check(torch.tensor([1.0, 2.0], dtype=torch.float16).sum(), 3.0, torch.float16)
    check(torch.tensor([1.0, 2.0], dtype=torch.float64).sum(), 3.0, torch.float64)
    check(i.sum(dtype=torch.float64), 10.0, torch.float64)
    check(torch.arange(6.0).reshape(2, 3).sum(dtype=torch.float64), 15.0, torch.float64)
    check(torch.tensor([[0.5, 1.7, 2.9], [3.2, 4.0, 5.5]]).sum(0, dtype=torch.int32),
          [3, 5, 7], torch.int32)  # cast first, then sum
    check(torch.tensor([True, True]).sum(dtype=torch.bool), True, torch.bool)
    # dtype=float64 sums in float64: 1e8 + 1 is not rounded back to 1e8
    check(torch.tensor([1e8, 1.0, -1e8]).sum(dtype=torch.float64), 1.0, torch.float64)


def test_mean_sum_of_0d():
    s = torch.tensor(2.5)
    for r in (s.sum(), s.sum(0), s.sum(-1), s.sum((0,)), s.mean(-1), s.amax(0), s.prod(0),
              s.mean(0, keepdim=True)):
        check(r, 2.5, torch.float32)
    check(torch.tensor(5).sum(0, keepdim=True), 5, torch.int64)
    check(torch.tensor(True).all(0, keepdim=True), True, torch.bool)
    check(s.argmax(0), 0, torch.int64)
    check(s.argmax(), 0, torch.int64)
    check(s.argmax(keepdim=True), 0, torch.int64)
    check(torch.tensor(5.0).argmax(-1), 0, torch.int64)
    v, i = s.max(0)
    check(v, 2.5, torch.float32)
    check(i, 0, torch.int64)


def test_positional_dim_and_keepdim():
    x = torch.arange(6.0).reshape(2, 3)
    check(torch.sum(x, 1, True), [[3.0], [12.0]], torch.float32)
    check(torch.mean(x, -1, True), [[1.0], [4.0]], torch.float32)
    check(x.sum(dim=1, keepdim=True), [[3.0], [12.0]], torch.float32)
    check(torch.ones(2, 3).argmax(1, True), [[0], [0]], torch.int64)
    check(x.amax(keepdim=True), [[5.0]], torch.float32)
    check(x.argmax(keepdim=True), [[5]], torch.int64)
    check(x.var(keepdim=True), [[3.5]], torch.float32)
    check(x.all(keepdim=True), [[False]], torch.bool)


# --------------------------------------------------------------------------- errors

DIM_CALLS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d),
    "prod": lambda x, d: x.prod(d), "max": lambda x, d: x.max(d),
    "min": lambda x, d: x.min(d), "amax": lambda x, d: x.amax(d),
    "amin": lambda x, d: x.amin(d), "argmax": lambda x, d: x.argmax(d),
    "argmin": lambda x, d: x.argmin(d), "var": lambda x, d: x.var(d),
    "std": lambda x, d: x.std(d), "all": lambda x, d: x.all(d), "any": lambda x, d: x.any(d),
    "sum_tuple": lambda x, d: x.sum((0, d)), "amax_tuple": lambda x, d: x.amax((d, 0)),
    "torch.sum": lambda x, d: torch.sum(x, dim=d, keepdim=True),
}


@pytest.mark.parametrize("name", list(DIM_CALLS))
@pytest.mark.parametrize("dim", [2, -3, 5])
def test_dim_out_of_range(name, dim):
    x = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         rf"\[-2, 1\], but got {dim}\)"):
        DIM_CALLS[name](x, dim)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "argmax", "var", "all"])
@pytest.mark.parametrize("dim", [1, -2])
def test_dim_out_of_range_0d(name, dim):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         rf"\[-1, 0\], but got {dim}\)"):
        DIM_CALLS[name](torch.tensor(2.5), dim)


@pytest.mark.parametrize("dims,dup", [((0, 0), 0), ((0, -2), 0), ((1, -1), 1), ((0, 1, 0), 0),
                                      ((1, 0, -1), 1)])
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "var", "all"])
def test_repeated_dims(name, dims, dup):
    x = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match=f"dim {dup} appears multiple times in the list of "
                                           "dims"):
        getattr(x, name)(dims)


def test_repeated_dims_0d():
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        torch.tensor(2.5).sum((0, -1))


@pytest.mark.parametrize("grad", [False, True])
def test_max_min_along_a_dim_with_and_without_autograd(grad):
    # values and the index of the first extreme along the dim (NaN the extreme, as PyTorch),
    # from a Python loop over the rows; with no autograd the result is made off the recording
    # path, and must be the same: plain tensors, not views of the input
    a = np.array([[1.0, 3.0, 3.0, -2.0], [np.nan, 0.5, np.nan, 7.0], [-1.0, -1.0, -4.0, -4.0]],
                 dtype=np.float32)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            for name in ("max", "min"):
                x = torch.tensor(a, requires_grad=grad)
                with torch.set_grad_enabled(grad):
                    v, i = getattr(torch, name)(x, dim, keepdim=keepdim)
                lines = a if dim != 0 else a.T
                want_i = []
                for line in lines:
                    nan = [j for j, e in enumerate(line) if e != e]
                    best = max(line) if name == "max" else min(line)
                    want_i.append(nan[0] if nan else list(line).index(
                        max(e for e in line) if name == "max" else min(e for e in line)))
                shape = (3, 1) if keepdim and dim != 0 else (1, 4) if keepdim else \
                    ((4,) if dim == 0 else (3,))
                assert tuple(v.shape) == shape and tuple(i.shape) == shape
                assert i.reshape(-1).tolist() == want_i
                got = v.detach().reshape(-1).tolist()
                for g, line, j in zip(got, lines, want_i):
                    assert g == line[j] or (g != g and line[j] != line[j])
                assert v.requires_grad == grad
                v[...] = 0  # (a write to the result leaves the input alone)
                np.testing.assert_array_equal(x.detach().numpy(), a)


def test_half_var_and_std_compute_in_float32():
    # ATen's CPU var/std compute float16/bfloat16 in float32 and round once: the float64
    # value of the half inputs rounded to half is within half an ulp
    r = np.random.default_rng(5)
    a = r.uniform(-20, 20, (5, 7, 5)).astype(np.float16)
    for d, eps in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        x = torch.tensor(a).to(d)
        src = x.double().numpy()
        for corr in (0, 1, 2):
            v = torch.var(x, dim=1, correction=corr)
            assert v.dtype is d
            ref = src.var(1, ddof=corr)
            np.testing.assert_allclose(v.double().numpy(), ref, rtol=eps * 1.01)
            np.testing.assert_allclose(torch.std(x, dim=[0, 2], correction=corr).double().numpy(),
                                       np.sqrt(src.var((0, 2), ddof=corr)), rtol=eps * 1.01)
        vm = torch.var_mean(x.transpose(0, 2), dim=0)  # a non-contiguous view
        np.testing.assert_allclose(vm[0].double().numpy(), src.transpose(2, 1, 0).var(0, ddof=1),
                                   rtol=eps * 1.01)
        assert torch.var(torch.tensor(3.0).to(d), correction=0).item() == 0.0
        assert torch.std(torch.zeros(0, 3, dtype=d), 0).shape == (3,)


def test_variance_without_degrees_of_freedom_warns_as_pytorch_and_is_nan():
    msg = ("{}(): degrees of freedom is <= 0. Correction should be strictly less than the "
           "reduction factor (input numel divided by output numel).")
    calls = [("var", lambda: torch.ones(1).var()), ("std", lambda: torch.ones(1).std()),
             ("var", lambda: torch.ones(2, 0).var(1)),
             ("var", lambda: torch.ones(2).var(correction=2)),
             ("var_mean", lambda: torch.var_mean(torch.ones(1))[0]),
             ("std_mean", lambda: torch.std_mean(torch.ones(3, 1), 1)[0])]
    for name, call in calls:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            r = call()
        user = [w for w in seen if w.category is UserWarning]
        assert [str(w.message) for w in user] == [msg.format(name)], name
        assert user[0].filename == __file__  # (the caller's line, as PyTorch's)
        assert np.isnan(r.numpy()).all() or r.numel() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        torch.ones(2).var()
        torch.ones(1).var(correction=0)
