"""Elementwise math, operators, in-place forms, matmul and conversions against numpy in float64.

Values are compared with numpy computed in float64 on the same inputs. Result dtypes, error types
and messages, and printed forms were observed by hand in PyTorch 2.13.0 (CPU) and are written in
literally; torch is not imported here.
"""
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import fusetorch as torch
from fusetorch import Tensor

SHAPES = [(), (0,), (5,), (2, 3, 4), (3, 0, 2)]
FLOATS = [torch.float32, torch.float64]
NP = {torch.float32: np.float32, torch.float64: np.float64, torch.int64: np.int64,
      torch.int32: np.int32, torch.bool: np.bool_}
# float32 results are compared with float64 numpy with float32 tolerances
TOL = {torch.float32: dict(rtol=2e-5, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-12),
       torch.float16: dict(rtol=2e-3, atol=1e-3)}
SETTINGS = settings(max_examples=15, deadline=None)
PAIRS = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                      max_side=4)


def rand(shape, dtype=torch.float32, kind="any"):
    """Random host data of `dtype`: 'any' normal, 'pos' in [0.5, 2], 'nonzero' |x| in [0.5, 2],
    'small' small integers (so that comparisons see ties)."""
    npd = NP[dtype]
    if dtype is torch.bool:
        return np.random.random_sample(shape) < 0.5
    if dtype in (torch.int64, torch.int32):
        lo, hi = {"pos": (0, 5), "nonzero": (1, 5)}.get(kind, (-4, 5))
        return np.random.randint(lo, hi, size=shape).astype(npd)
    if kind == "pos":
        a = np.random.uniform(0.5, 2.0, shape)
    elif kind == "nonzero":
        a = np.random.uniform(0.5, 2.0, shape) * np.where(np.random.random_sample(shape) < .5,
                                                          -1, 1)
    elif kind == "small":
        a = np.random.randint(-2, 3, size=shape).astype(np.float64)
    else:
        a = np.random.standard_normal(shape) * 2
    return np.asarray(a).astype(npd)


def f64(a):
    return np.asarray(a).astype(np.float64)


def check(result, expected, dtype, tol=None):
    """`result` is a Tensor of `dtype` and shape equal to the float64 (or exact) `expected`."""
    assert isinstance(result, Tensor), type(result)
    assert result.dtype is dtype, (result.dtype, dtype)
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape, (tuple(result.shape), expected.shape)
    got = np.asarray(result.numpy())
    assert got.dtype == NP.get(dtype, got.dtype)
    if dtype.is_floating_point:
        np.testing.assert_allclose(got.astype(np.float64), expected, equal_nan=True,
                                   **(tol or TOL[dtype]))
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


# ----------------------------------------------------------------------------- unary

SIGMOID = lambda a: 1.0 / (1.0 + np.exp(-a))  # noqa: E731
UNARY = [
    ("exp", np.exp, "any"), ("log", np.log, "pos"), ("sqrt", np.sqrt, "pos"),
    ("abs", np.abs, "any"), ("sin", np.sin, "any"), ("cos", np.cos, "any"),
    ("tanh", np.tanh, "any"), ("sigmoid", SIGMOID, "any"),
    ("relu", lambda a: np.maximum(a, 0.0), "any"), ("neg", np.negative, "any"),
]


@pytest.mark.parametrize("name,ref,kind", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_float(name, ref, kind, dtype, shape):
    a = rand(shape, dtype, kind)
    x = torch.tensor(a)
    expected = ref(f64(a))
    check(getattr(torch, name)(x), expected, dtype)
    check(getattr(x, name)(), expected, dtype)
    assert np.array_equal(x.numpy(), a)  # the input is left alone


def test_unary_operators():
    a = rand((3, 4))
    x = torch.tensor(a)
    check(-x, -f64(a), torch.float32)
    check(abs(x), np.abs(f64(a)), torch.float32)
    check(+x, f64(a), torch.float32)


@pytest.mark.parametrize("name,ref", [(n, r) for n, r, _ in UNARY
                                      if n in ("exp", "sin", "cos", "tanh", "sigmoid", "sqrt",
                                               "log")])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool], ids=str)
def test_unary_float_ops_of_integers_give_default_float(name, ref, dtype):
    a = rand((2, 5), dtype, "pos")
    with np.errstate(divide="ignore"):
        expected = ref(f64(a))
    check(getattr(torch, name)(torch.tensor(a)), expected, torch.float32)


@pytest.mark.parametrize("name,ref", [("abs", np.abs), ("neg", np.negative),
                                      ("relu", lambda a: np.maximum(a, 0))])
def test_unary_integer_ops_keep_dtype(name, ref):
    a = np.array([[1, -2, 0], [7, -9, 3]], dtype=np.int64)
    check(getattr(torch, name)(torch.tensor(a)), ref(a), torch.int64)


def test_unary_special_values():
    x = torch.tensor([-1.0, 0.0, 1.0, float("inf"), float("nan")])
    with np.errstate(all="ignore"):
        check(torch.log(x), np.log([-1.0, 0.0, 1.0, np.inf, np.nan]), torch.float32)
        check(torch.sqrt(x), np.sqrt([-1.0, 0.0, 1.0, np.inf, np.nan]), torch.float32)
    check(torch.relu(x), [0.0, 0.0, 1.0, np.inf, np.nan], torch.float32)
    check(torch.sigmoid(x), [SIGMOID(-1.0), 0.5, SIGMOID(1.0), 1.0, np.nan], torch.float32)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sigmoid_large_inputs_no_overflow(dtype):
    a = np.array([-1e4, -1000.0, -100.0, -30.0, 0.0, 30.0, 100.0, 1000.0, 1e4], NP[dtype])
    x = torch.tensor(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            r = torch.sigmoid(x)
            r2 = x.sigmoid()
    # 1 / (1 + exp(-a)) computed as exp(a) / (1 + exp(a)) for negative a, in float64
    e = np.exp(-np.abs(f64(a)))
    expected = np.where(a >= 0, 1 / (1 + e), e / (1 + e))
    check(r, expected, dtype)
    check(r2, expected, dtype)
    assert np.all(np.isfinite(r.numpy()))
    assert r.numpy()[0] == 0.0 and r.numpy()[-1] == 1.0


def test_numerical_edge_cases_are_silent():
    """PyTorch computes log(0), sqrt(-1), 1/0 and exp overflow without warnings."""
    code = (
        "import fusetorch as torch\n"
        "x = torch.tensor([-1.0, 0.0, 1000.0])\n"
        "x.log(); x.sqrt(); x.exp(); 1 / x; x / 0; torch.tensor([0, 1]) / 0\n"
        "torch.log(torch.tensor([0, 1])); x.pow(-1); x.clone().div_(0)\n"
        "y = x.clone(); y /= 0; y = x.clone(); y.exp_(); (x * 1e38) * 1e38\n"
        "torch.tensor([0.0]) / torch.tensor([0.0])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr


# ----------------------------------------------------------------------------- binary

BINARY = {
    # name: (fusetorch call, numpy reference, kind of a, kind of b)
    "add": (lambda a, b: a + b, np.add, "any", "any"),
    "sub": (lambda a, b: a - b, np.subtract, "any", "any"),
    "mul": (lambda a, b: a * b, np.multiply, "any", "any"),
    "div": (lambda a, b: a / b, np.divide, "any", "nonzero"),
    "pow": (lambda a, b: a ** b, np.power, "pos", "any"),
    "maximum": (torch.maximum, np.maximum, "small", "small"),
    "minimum": (torch.minimum, np.minimum, "small", "small"),
    "add_fn": (torch.add, np.add, "any", "any"),
    "sub_fn": (torch.sub, np.subtract, "any", "any"),
    "mul_fn": (torch.mul, np.multiply, "any", "any"),
    "div_fn": (torch.div, np.divide, "any", "nonzero"),
    "pow_fn": (torch.pow, np.power, "pos", "any"),
}
COMPARE = {
    "==": (lambda a, b: a == b, np.equal), "!=": (lambda a, b: a != b, np.not_equal),
    "<": (lambda a, b: a < b, np.less), "<=": (lambda a, b: a <= b, np.less_equal),
    ">": (lambda a, b: a > b, np.greater), ">=": (lambda a, b: a >= b, np.greater_equal),
    "eq": (torch.eq, np.equal), "ne": (torch.ne, np.not_equal), "lt": (torch.lt, np.less),
    "le": (torch.le, np.less_equal), "gt": (torch.gt, np.greater),
    "ge": (torch.ge, np.greater_equal),
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(shapes=PAIRS)
def test_binary_broadcast(name, dtype, shapes):
    fn, ref, ka, kb = BINARY[name]
    sa, sb = shapes.input_shapes
    a, b = rand(sa, dtype, ka), rand(sb, dtype, kb)
    r = fn(torch.tensor(a), torch.tensor(b))
    check(r, ref(f64(a), f64(b)), dtype)
    assert tuple(r.shape) == shapes.result_shape


@pytest.mark.parametrize("name", ["add", "sub", "mul", "maximum", "minimum", "pow"])
@SETTINGS
@given(shapes=PAIRS)
def test_binary_broadcast_int64(name, shapes):
    fn, ref, _, _ = BINARY[name]
    sa, sb = shapes.input_shapes
    a, b = rand(sa, torch.int64), rand(sb, torch.int64, "pos" if name == "pow" else "any")
    check(fn(torch.tensor(a), torch.tensor(b)), ref(a, b), torch.int64)


@SETTINGS
@given(shapes=PAIRS)
def test_int_true_division_gives_float(shapes):
    sa, sb = shapes.input_shapes
    a, b = rand(sa, torch.int64), rand(sb, torch.int64, "nonzero")
    check(torch.tensor(a) / torch.tensor(b), f64(a) / f64(b), torch.float32)


@pytest.mark.parametrize("name", list(COMPARE))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
@SETTINGS
@given(shapes=PAIRS)
def test_comparisons_broadcast(name, dtype, shapes):
    fn, ref = COMPARE[name]
    sa, sb = shapes.input_shapes
    a, b = rand(sa, dtype, "small"), rand(sb, dtype, "small")
    check(fn(torch.tensor(a), torch.tensor(b)), ref(a, b), torch.bool)


@pytest.mark.parametrize("name", list(COMPARE)[:6])
@pytest.mark.parametrize("scalar", [0, 1.5, 0.1, -2])
def test_comparisons_with_scalars(name, scalar):
    fn, ref = COMPARE[name]
    a = np.array([[0.1, -2.0, 1.5], [0.0, 3.0, -0.5]], np.float32)
    x = torch.tensor(a)
    # the scalar takes part in float32, as in PyTorch: tensor([0.1]) == 0.1 is True
    check(fn(x, scalar), ref(a, np.float32(scalar)), torch.bool)
    check(fn(scalar, x), ref(np.float32(scalar), a), torch.bool)


def test_comparison_mixed_dtypes():
    i = torch.tensor([3, 5, -1])
    f = torch.tensor([3.0, 4.5, -1.0])
    check(i == f, [True, False, True], torch.bool)
    check(i < 1.5, [False, False, True], torch.bool)
    check(torch.tensor(2.5) > i, [False, False, True], torch.bool)
    check(torch.tensor([True, False]) == 1, [True, False], torch.bool)


def test_broadcast_mismatch_error():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        torch.ones(2, 3) + torch.ones(2, 4)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 2"):
        torch.ones(5, 3) * torch.ones(4, 1, 4)
    with pytest.raises(RuntimeError, match=r"tensor a \(3\) must match the size of tensor b "
                                           r"\(2\) at non-singleton dimension 1"):
        torch.ones(2, 3) < torch.ones(2, 2)
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b "
                                           r"\(3\) at non-singleton dimension 0"):
        torch.maximum(torch.ones(2), torch.ones(3))


# ------------------------------------------------------------------- Python scalars

OPS = {"+": (lambda a, b: a + b), "-": (lambda a, b: a - b), "*": (lambda a, b: a * b),
       "/": (lambda a, b: a / b), "**": (lambda a, b: a ** b)}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("scalar", [2, -3, 0.5, -1.5, True])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_float_tensor_with_python_scalar(op, scalar, shape):
    fn = OPS[op]
    a = rand(shape, torch.float32, "pos")  # positive: also a valid base of `**`
    x = torch.tensor(a)
    if op == "-" and scalar is True:  # PyTorch refuses bool in subtraction
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            fn(x, scalar)
        return
    s = float(scalar)
    check(fn(x, scalar), fn(f64(a), s), torch.float32)
    with np.errstate(invalid="ignore"):
        expected = fn(s, f64(a))  # reflected: 2 - x, 1 / x, 2 ** x; (-1.5) ** x is nan
    check(fn(scalar, x), expected, torch.float32)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("scalar", [2, 3, 1.5, -0.5, True])
def test_int_tensor_with_python_scalar(op, scalar):
    """int64 tensor with an int scalar stays int64 (except `/`); with a float scalar the
    result is float32 (the default dtype), as in PyTorch."""
    fn = OPS[op]
    a = np.array([[1, 2, 3], [4, 0, 2]], np.int64)
    x = torch.tensor(a)
    if op == "-" and scalar is True:  # PyTorch refuses bool in subtraction
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            fn(scalar, x)
        return
    is_float = isinstance(scalar, float) or op == "/"
    want = torch.float32 if is_float else torch.int64
    s = float(scalar)
    with np.errstate(divide="ignore", invalid="ignore"):
        check(fn(x, scalar), fn(f64(a), s), want)  # 0 ** -0.5 is inf
        expected = fn(s, f64(a))
    if not is_float and op == "**":
        expected = np.power(int(scalar), a)
    check(fn(scalar, x), expected, want)


def test_reflected_forms():
    a = np.array([0.5, -2.0, 4.0], np.float32)
    x = torch.tensor(a)
    check(2 - x, 2 - f64(a), torch.float32)
    check(1 / x, 1 / f64(a), torch.float32)
    check(2 ** x, 2 ** f64(a), torch.float32)
    check(3 * x, 3 * f64(a), torch.float32)
    check(1.5 + x, 1.5 + f64(a), torch.float32)
    check(torch.rsub(x, 2), 2 - f64(a), torch.float32)
    i = torch.tensor([1, 2, 3])
    check(2 - i, [1, 0, -1], torch.int64)
    check(2 ** i, [2, 4, 8], torch.int64)
    check(1 / i, [1.0, 0.5, 1 / 3], torch.float32)
    check(2.0 ** i, [2.0, 4.0, 8.0], torch.float32)


def test_promotion_table():
    """Result dtypes of mixed operands, each observed in PyTorch 2.13."""
    i64 = torch.tensor([1, -2, 3])
    i32 = torch.tensor([2], dtype=torch.int32)
    b = torch.tensor([True, False, True])
    check(i64 ** 2, [1, 4, 9], torch.int64)
    check(torch.tensor([1, 4]) ** 0.5, [1.0, 2.0], torch.float32)
    check(i64 + 1.5, [2.5, -0.5, 4.5], torch.float32)
    check(i64 * True, [1, -2, 3], torch.int64)
    check(b + b, [True, False, True], torch.bool)
    check(b * 2, [2, 0, 2], torch.int64)
    check(i32 + torch.tensor(7), [9], torch.int32)
    check(i32 + torch.tensor([1.5], dtype=torch.float64), [3.5], torch.float64)
    check(torch.tensor([2.0]) + torch.tensor(1.5, dtype=torch.float64), [3.5], torch.float32)
    check(i32 + torch.tensor(1.5, dtype=torch.float64), [3.5], torch.float64)
    check(torch.tensor([2], dtype=torch.uint8) + torch.tensor([1], dtype=torch.int8), [3],
          torch.int16)
    check(torch.tensor([1.0, 2.0]) ** torch.tensor(2), [1.0, 4.0], torch.float32)
    check(torch.tensor([3, 4]).pow(torch.tensor(2.0)), [9.0, 16.0], torch.float32)
    check(torch.pow(2, torch.tensor([1.0, 2.0])), [2.0, 4.0], torch.float32)
    check(torch.tensor([0.0]) ** -1, [np.inf], torch.float32)
    check(torch.tensor([0]) ** 0, [1], torch.int64)


def test_non_numbers_are_type_errors():
    x = torch.ones(2)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x * None


# ------------------------------------------------------------------------- errors

NEG_BOOL = r"Negation, the `-` operator, on a bool tensor is not supported"


def test_neg_of_bool_is_an_error():
    b = torch.tensor([True, False])
    with pytest.raises(RuntimeError, match=NEG_BOOL):
        -b
    with pytest.raises(RuntimeError, match=NEG_BOOL):
        torch.neg(b)
    with pytest.raises(RuntimeError, match=NEG_BOOL):
        b.neg()


def test_sub_of_bool_is_an_error():
    b = torch.tensor([True, False, True])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool "
                                           "tensors is not supported"):
        b - b
    one = "Subtraction, the `-` operator, with a bool tensor is not supported"
    with pytest.raises(RuntimeError, match=one):
        torch.ones(3) - b
    with pytest.raises(RuntimeError, match=one):
        b - 1
    with pytest.raises(RuntimeError, match=one):
        1 - b
    with pytest.raises(RuntimeError, match=one):
        torch.ones(3) - True


def test_int_to_negative_int_power_is_an_error():
    x = torch.tensor([2, 3])
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not "
                                           "allowed"):
        x ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        x.pow(-2)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.pow(x, -1)
    # a float exponent, or a float base, is fine
    check(x ** -1.0, [0.5, 1 / 3], torch.float32)
    check(torch.tensor([2.0, 4.0]) ** -1, [0.5, 0.25], torch.float32)


def test_int_tensor_to_negative_int_tensor_power():
    """With a tensor exponent PyTorch computes integer powers: 2 ** -1 == 0, 1 ** -1 == 1."""
    check(torch.tensor([2, 3, 1, -1]) ** torch.tensor([-1, 2, -3, -3]), [0, 9, 1, -1],
          torch.int64)
    check(2 ** torch.tensor([-1, 2]), [0, 4], torch.int64)


# ------------------------------------------------------------------------- bool ops

@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3, 4)], ids=str)
def test_bool_bitwise_ops(shape):
    a, c = rand(shape, torch.bool), rand(shape, torch.bool)
    x, y = torch.tensor(a), torch.tensor(c)
    check(x & y, a & c, torch.bool)
    check(x | y, a | c, torch.bool)
    check(x ^ y, a ^ c, torch.bool)
    check(~x, ~a, torch.bool)
    check(torch.logical_and(x, y), a & c, torch.bool)
    check(torch.logical_or(x, y), a | c, torch.bool)
    check(torch.logical_not(x), ~a, torch.bool)


@SETTINGS
@given(shapes=PAIRS)
def test_bool_bitwise_broadcast(shapes):
    sa, sb = shapes.input_shapes
    a, c = rand(sa, torch.bool), rand(sb, torch.bool)
    x, y = torch.tensor(a), torch.tensor(c)
    check(x & y, a & c, torch.bool)
    check(x | y, a | c, torch.bool)
    check(x ^ y, a ^ c, torch.bool)


def test_bool_bitwise_with_python_bools():
    b = torch.tensor([True, False, True])
    check(b & True, [True, False, True], torch.bool)
    check(True ^ b, [False, True, False], torch.bool)
    check(False | b, [True, False, True], torch.bool)


def test_bitwise_ops_on_float_are_errors():
    f = torch.tensor([0.5, 1.5])
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer "
                                        r"and Boolean-type tensors"):
        ~f
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                                                  "'Float'"):
        f & f


# ------------------------------------------------------------ clamp, maximum, where

@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_clamp(shape, dtype):
    a = rand(shape, dtype)
    x = torch.tensor(a)
    check(torch.clamp(x, min=-0.5, max=1.0), np.clip(f64(a), -0.5, 1.0), dtype)
    check(x.clamp(-0.5, 1.0), np.clip(f64(a), -0.5, 1.0), dtype)
    check(x.clamp(min=0.25), np.maximum(f64(a), 0.25), dtype)
    check(x.clamp(max=0.25), np.minimum(f64(a), 0.25), dtype)
    check(torch.clip(x, -1, 1), np.clip(f64(a), -1, 1), dtype)


def test_clamp_min_above_max_gives_max():
    check(torch.clamp(torch.tensor([-3.0, 0.5, 3.0]), min=1.0, max=0.0), [0.0, 0.0, 0.0],
          torch.float32)


def test_clamp_int_tensors():
    i = torch.tensor([1, -2, 3])
    check(i.clamp(min=0), [1, 0, 3], torch.int64)
    check(i.clamp(max=1), [1, -2, 1], torch.int64)
    check(i.clamp(0, 2), [1, 0, 2], torch.int64)
    # a float bound promotes to the default float dtype
    check(i.clamp(min=0.5), [1.0, 0.5, 3.0], torch.float32)
    check(i.clamp(min=-1, max=2.5), [1.0, -1.0, 2.5], torch.float32)


def test_clamp_tensor_bounds_broadcast():
    a = rand((4, 3))
    lo, hi = rand((3,)) - 1, rand((4, 1)) + 1
    r = torch.clamp(torch.tensor(a), min=torch.tensor(lo), max=torch.tensor(hi))
    check(r, np.minimum(np.maximum(f64(a), lo), hi), torch.float32)


def test_clamp_without_bounds_is_an_error():
    with pytest.raises(RuntimeError, match="torch.clamp: At least one of 'min' or 'max' must "
                                           "not be None"):
        torch.ones(3).clamp()


def test_clamp_nan_propagates():
    check(torch.clamp(torch.tensor([1.0, float("nan")]), 0.0, 0.5), [0.5, np.nan],
          torch.float32)


@SETTINGS
@given(shapes=PAIRS)
def test_maximum_minimum_propagate_nan(shapes):
    sa, sb = shapes.input_shapes
    a, b = rand(sa), rand(sb)
    a[np.random.random_sample(sa) < 0.3] = np.nan
    x, y = torch.tensor(a), torch.tensor(b)
    check(torch.maximum(x, y), np.maximum(f64(a), f64(b)), torch.float32)
    check(torch.minimum(x, y), np.minimum(f64(a), f64(b)), torch.float32)
    check(x.maximum(y), np.maximum(f64(a), f64(b)), torch.float32)


def test_maximum_mixed_dtypes():
    check(torch.maximum(torch.tensor([1, -2, 3]), torch.tensor([0.5, 1.5, -2.0])),
          [1.0, 1.5, 3.0], torch.float32)
    check(torch.minimum(torch.tensor([1, -2, 3]), torch.tensor(2)), [1, -2, 2], torch.int64)


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=0,
                                            max_side=3))
def test_where_broadcast(shapes):
    sc, sa, sb = shapes.input_shapes
    c, a, b = rand(sc, torch.bool), rand(sa), rand(sb)
    r = torch.where(torch.tensor(c), torch.tensor(a), torch.tensor(b))
    check(r, np.where(c, f64(a), f64(b)), torch.float32)
    r = torch.tensor(a).where(torch.tensor(c), torch.tensor(b))
    check(r, np.where(c, f64(a), f64(b)), torch.float32)


def test_where_with_scalars():
    c = torch.tensor([True, False, True])
    f = torch.tensor([0.5, 1.5, -2.0])
    i = torch.tensor([1, 2, 3])
    check(torch.where(c, f, 0.0), [0.5, 0.0, -2.0], torch.float32)
    check(torch.where(c, 1.0, 0.0), [1.0, 0.0, 1.0], torch.float32)
    check(torch.where(c, 1, 0), [1, 0, 1], torch.int64)
    check(torch.where(c, i, 2.5), [1.0, 2.5, 3.0], torch.float32)
    check(torch.where(c, 2, f), [2.0, 1.5, 2.0], torch.float32)
    check(torch.where(torch.tensor(True), f, torch.zeros(2, 1)),
          np.broadcast_to([0.5, 1.5, -2.0], (2, 3)), torch.float32)


def test_where_condition_must_be_bool():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, "
                                           "but got a tensor with dtype Long"):
        torch.where(torch.tensor([1, 0]), torch.ones(2), torch.zeros(2))


# ---------------------------------------------------------------- add/sub alpha, out=

def test_add_sub_alpha():
    a, b = rand((2, 3)), rand((3,))
    x, y = torch.tensor(a), torch.tensor(b)
    check(torch.add(x, y, alpha=2), f64(a) + 2 * f64(b), torch.float32)
    check(x.add(y, alpha=-0.5), f64(a) - 0.5 * f64(b), torch.float32)
    check(torch.sub(x, y, alpha=3), f64(a) - 3 * f64(b), torch.float32)
    check(torch.add(x, 1, alpha=3), f64(a) + 3, torch.float32)
    i = torch.tensor([1, 2])
    check(torch.add(i, i, alpha=2), [3, 6], torch.int64)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must "
                                           "not be a floating point number"):
        torch.add(i, i, alpha=2.5)


def test_out_argument_shares_the_out_tensor():
    a, b = rand((2, 3)), rand((2, 3))
    z = torch.zeros(2, 3)
    r = torch.add(torch.tensor(a), torch.tensor(b), out=z)
    assert r is z
    check(z, f64(a) + f64(b), torch.float32)
    alias = z.view(6)
    torch.mul(torch.tensor(a), 2, out=z)
    check(alias, (2 * f64(a)).reshape(6), torch.float32)  # written into z's own memory
    zi = torch.zeros(3)
    assert torch.add(torch.tensor([1, 2, 3]), 1, out=zi) is zi
    check(zi, [2.0, 3.0, 4.0], torch.float32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        torch.add(torch.ones(3), 1, out=torch.zeros(3, dtype=torch.int64))


# ------------------------------------------------------------------------ in-place

@st.composite
def inplace_shapes(draw):
    """(self shape, other shape) where other broadcasts to self without growing it."""
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    n = draw(st.integers(0, len(shape)))
    other = tuple(d if draw(st.booleans()) else 1 for d in shape[len(shape) - n:])
    return shape, other


INPLACE = {
    "+=": (lambda x, y: x.__iadd__(y), np.add), "-=": (lambda x, y: x.__isub__(y), np.subtract),
    "*=": (lambda x, y: x.__imul__(y), np.multiply),
    "/=": (lambda x, y: x.__itruediv__(y), np.divide),
    "add_": (lambda x, y: x.add_(y), np.add), "sub_": (lambda x, y: x.sub_(y), np.subtract),
    "mul_": (lambda x, y: x.mul_(y), np.multiply), "div_": (lambda x, y: x.div_(y), np.divide),
    "pow_": (lambda x, y: x.pow_(y), np.power),
}


@pytest.mark.parametrize("name", list(INPLACE))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(shapes=inplace_shapes())
def test_inplace_binary(name, dtype, shapes):
    fn, ref = INPLACE[name]
    sa, sb = shapes
    a = rand(sa, dtype, "pos")
    b = rand(sb, dtype, "nonzero")
    x = torch.tensor(a.copy())
    r = fn(x, torch.tensor(b))
    assert r is x
    check(x, ref(f64(a), f64(b)), dtype)


@pytest.mark.parametrize("name", list(INPLACE))
@pytest.mark.parametrize("scalar", [2, -1.5])
def test_inplace_binary_with_scalars(name, scalar):
    fn, ref = INPLACE[name]
    a = rand((3, 4), torch.float32, "pos")
    x = torch.tensor(a.copy())
    y = x
    r = fn(y, scalar)
    assert r is x
    check(x, ref(f64(a), scalar), torch.float32)


def test_inplace_operator_statements_keep_identity():
    x = torch.ones(2, 3)
    y = x
    y += 1
    y *= torch.tensor([1.0, 2.0, 3.0])
    y -= 0.5
    y /= 2
    assert y is x
    check(x, ((2 * np.array([1.0, 2.0, 3.0]) - 0.5) / 2) * np.ones((2, 1)), torch.float32)


def test_inplace_float_into_int_is_an_error():
    i = torch.tensor([1, 2, 3])
    msg = "result type Float can't be cast to the desired output type Long"
    with pytest.raises(RuntimeError, match=msg):
        i += 1.5
    with pytest.raises(RuntimeError, match=msg):
        i.div_(2)
    with pytest.raises(RuntimeError, match=msg):
        i.add_(torch.tensor([0.5, 1.5, -2.0]))
    with pytest.raises(RuntimeError, match=msg):
        i.exp_()
    check(i, [1, 2, 3], torch.int64)  # untouched
    i += 2
    i *= torch.tensor(3)
    check(i, [9, 12, 15], torch.int64)


def test_inplace_float32_with_float64_keeps_float32():
    x = torch.ones(3)
    x.add_(torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64))
    check(x, [1.5, 2.5, 3.5], torch.float32)


def test_inplace_shape_error():
    x = torch.ones(3)
    msg = r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"
    for fn in (lambda: x.add_(torch.ones(2, 3)), lambda: x.__iadd__(torch.ones(2, 3)),
               lambda: x.mul_(torch.ones(2, 3)), lambda: x.sub_(torch.ones(2, 3)),
               lambda: x.div_(torch.ones(2, 3)), lambda: x.pow_(torch.ones(2, 3)),
               lambda: x.clamp_(min=torch.zeros(2, 3))):
        with pytest.raises(RuntimeError, match=msg):
            fn()
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 1\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        torch.ones(2, 1).add_(torch.ones(3))
    check(x, [1.0, 1.0, 1.0], torch.float32)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_inplace_unary_methods(shape):
    a = rand(shape)
    x = torch.tensor(a.copy())
    assert x.clamp_(-0.5, 0.5) is x
    check(x, np.clip(f64(a), -0.5, 0.5), torch.float32)
    assert x.exp_() is x
    check(x, np.exp(np.clip(f64(a), -0.5, 0.5)), torch.float32)
    x = torch.tensor(a.copy())
    assert x.clamp_(max=0.0) is x
    check(x, np.minimum(f64(a), 0.0), torch.float32)
    x = torch.tensor(a.copy())
    assert x.clamp_(min=0.0) is x
    check(x, np.maximum(f64(a), 0.0), torch.float32)


def test_inplace_add_sub_alpha():
    check(torch.ones(3).add_(torch.ones(3), alpha=2), [3.0, 3.0, 3.0], torch.float32)
    check(torch.ones(3).sub_(torch.ones(3), alpha=2), [-1.0, -1.0, -1.0], torch.float32)
    check(torch.ones(3).add_(2, alpha=2), [5.0, 5.0, 5.0], torch.float32)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_zero_fill_copy(shape):
    a = rand(shape)
    x = torch.tensor(a.copy())
    assert x.zero_() is x
    check(x, np.zeros(shape), torch.float32)
    assert x.fill_(2.5) is x
    check(x, np.full(shape, 2.5), torch.float32)
    assert x.fill_(torch.tensor(-1)) is x
    check(x, np.full(shape, -1.0), torch.float32)
    assert x.copy_(torch.tensor(a)) is x
    check(x, f64(a), torch.float32)


def test_fill_and_copy_cast_to_self_dtype():
    i = torch.tensor([1, 2, 3])
    check(i.fill_(2.7), [2, 2, 2], torch.int64)
    check(torch.tensor([1, 2]).copy_(torch.tensor([1.7, -2.7])), [1, -2], torch.int64)
    check(torch.tensor([1.0, 2.0]).fill_(True), [1.0, 1.0], torch.float32)
    check(torch.tensor([True, False]).zero_(), [False, False], torch.bool)
    # copy_ broadcasts its source
    check(torch.zeros(2, 3).copy_(torch.tensor([1, 2, 3])), [[1, 2, 3], [1, 2, 3]],
          torch.float32)
    check(torch.zeros(2).copy_(torch.tensor(3)), [3.0, 3.0], torch.float32)


def test_fill_copy_errors():
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but "
                                           "got tensor with 1 dimensions"):
        torch.zeros(3).fill_(torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        torch.ones(2).copy_(torch.ones(3))


def test_inplace_on_view_writes_into_base():
    x = torch.zeros(6)
    v = x[1:3]
    v += 2
    check(x, [0, 2, 2, 0, 0, 0], torch.float32)
    v.mul_(3)
    check(x, [0, 6, 6, 0, 0, 0], torch.float32)
    x.view(2, 3)[1].fill_(1.5)
    check(x, [0, 6, 6, 1.5, 1.5, 1.5], torch.float32)
    x.view(2, 3)[:, 0].add_(torch.tensor([10.0, 20.0]))
    check(x, [10, 6, 6, 21.5, 1.5, 1.5], torch.float32)
    x[4:].zero_()
    check(x, [10, 6, 6, 21.5, 0, 0], torch.float32)
    x[:2].clamp_(max=7.0)
    check(x, [7, 6, 6, 21.5, 0, 0], torch.float32)
    x[2:4].copy_(torch.tensor([-1.0, -2.0]))
    check(x, [7, 6, -1, -2, 0, 0], torch.float32)
    x[4:].exp_()
    check(x, [7, 6, -1, -2, 1, 1], torch.float32)
    x.view(3, 2)[0].sub_(1).div_(2)
    check(x, [3, 2.5, -1, -2, 1, 1], torch.float32)
    x[::2].pow_(2)
    check(x, [9, 2.5, 1, -2, 1, 1], torch.float32)
    d = x.detach()
    d[0] = 0.0
    check(x, [0, 2.5, 1, -2, 1, 1], torch.float32)


# ---------------------------------------------------------------------- numpy mixing

def test_numpy_arrays_mixed_with_tensors():
    a = np.array([1.0, 2.0, 3.0])
    x = torch.tensor([0.5, 1.5, -1.0])
    for r, e in ((a + x, a + [0.5, 1.5, -1.0]), (x + a, a + [0.5, 1.5, -1.0]),
                 (a - x, a - [0.5, 1.5, -1.0]), (x * a, a * [0.5, 1.5, -1.0]),
                 # `a / x` is x.__rtruediv__(a), PyTorch's x.reciprocal() * a: the reciprocal
                 # rounds to float32 first (as PyTorch 2.13 gives it)
                 (a / x, a * (1 / np.float32([0.5, 1.5, -1.0])).astype(np.float64))):
        # a float64 ndarray takes part like a float64 tensor
        check(r, e, torch.float64)
    r = np.ones((2, 3), np.float32) @ torch.ones(3, 4)
    check(r, np.full((2, 4), 3.0), torch.float32)
    r = np.ones((2, 1), np.float32) * torch.tensor([1.0, 2.0])
    check(r, [[1.0, 2.0], [1.0, 2.0]], torch.float32)


def test_numpy_scalars_act_as_python_scalars():
    x = torch.tensor([1.0, 2.0])
    check(np.float64(2.0) * x, [2.0, 4.0], torch.float32)
    check(x - np.float64(0.5), [0.5, 1.5], torch.float32)
    check(np.float64(3.0) - x, [2.0, 1.0], torch.float32)


# -------------------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((3,), (3,)), ((0,), (0,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (3, 3, 5)), ((1, 2, 3), (4, 3, 2)), ((3,), (2, 7, 3, 5)),
    ((2, 7, 4, 3), (3,)), ((0, 2, 3), (3, 4)), ((2, 3, 0), (2, 0, 3)), ((6, 4, 3), (1, 3, 2)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul(sa, sb, dtype):
    a, b = rand(sa, dtype), rand(sb, dtype)
    x, y = torch.tensor(a), torch.tensor(b)
    expected = np.matmul(f64(a), f64(b))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is torch.float32 else None
    check(torch.matmul(x, y), expected, dtype, tol)
    check(x @ y, expected, dtype, tol)
    check(x.matmul(y), expected, dtype, tol)


@settings(max_examples=30, deadline=None)
@given(batch=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0,
                                           max_side=3),
       n=st.integers(0, 3), k=st.integers(0, 3), m=st.integers(0, 3))
def test_matmul_broadcast_batches(batch, n, k, m):
    ba, bb = batch.input_shapes
    a, b = rand(ba + (n, k), torch.float64), rand(bb + (k, m), torch.float64)
    check(torch.tensor(a) @ torch.tensor(b), np.matmul(a, b), torch.float64)


def test_matmul_integers_are_exact():
    a = np.random.randint(-50, 50, (3, 4, 5))
    b = np.random.randint(-50, 50, (5, 2))
    check(torch.tensor(a) @ torch.tensor(b), a @ b, torch.int64)
    v = np.random.randint(-9, 9, 7).astype(np.int32)
    check(torch.tensor(v) @ torch.tensor(v), v.astype(np.int64) @ v, torch.int32)


def test_mm_and_bmm():
    a, b = rand((2, 3)), rand((3, 4))
    check(torch.mm(torch.tensor(a), torch.tensor(b)), f64(a) @ f64(b), torch.float32)
    check(torch.tensor(a).mm(torch.tensor(b)), f64(a) @ f64(b), torch.float32)
    a, b = rand((5, 2, 3)), rand((5, 3, 4))
    check(torch.bmm(torch.tensor(a), torch.tensor(b)), f64(a) @ f64(b), torch.float32)
    check(torch.tensor(a).bmm(torch.tensor(b)), f64(a) @ f64(b), torch.float32)
    a, b = rand((0, 2, 3)), rand((0, 3, 4))
    check(torch.bmm(torch.tensor(a), torch.tensor(b)), np.zeros((0, 2, 4)), torch.float32)
    check(torch.mm(torch.ones(2, 0), torch.ones(0, 3)), np.zeros((2, 3)), torch.float32)


MATMUL_ERRORS = [
    # (a shape, b shape, function, message), each observed in PyTorch 2.13
    ((2, 3), (4, 5), "matmul", r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((2, 3), (4, 5), "mm", r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4,), "matmul", r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to "
                           r"have the same number of elements, but got 3 and 4 elements "
                           r"respectively"),
    ((2, 3), (4,), "matmul", r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    ((3,), (4, 5), "matmul", r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    ((7, 2, 3), (7, 4, 5), "matmul", r"Expected size for first two dimensions of batch2 tensor "
                                     r"to be: \[7, 3\] but got: \[7, 4\]\."),
    ((2, 2, 3), (3, 3, 5), "matmul", r"The size of tensor a \(2\) must match the size of tensor "
                                     r"b \(3\) at non-singleton dimension 0"),
    ((2, 5, 2, 3), (3, 3, 5), "matmul", r"The size of tensor a \(5\) must match the size of "
                                        r"tensor b \(3\) at non-singleton dimension 1"),
    ((2, 3), (7, 4, 5), "matmul", r"Expected size for first two dimensions of batch2 tensor to "
                                  r"be: \[7, 3\] but got: \[7, 4\]\."),
    ((7, 2, 3), (4, 5), "matmul", r"mat1 and mat2 shapes cannot be multiplied \(14x3 and "
                                  r"4x5\)"),
    ((7, 2, 3), (4,), "matmul", r"size mismatch, got input \(14\), mat \(14x3\), vec \(4\)"),
    ((3,), (7, 4, 5), "matmul", r"Expected size for first two dimensions of batch2 tensor to "
                                r"be: \[7, 3\] but got: \[7, 4\]\."),
    ((5, 2, 3), (1, 4, 5), "matmul", r"Expected size for first two dimensions of batch2 tensor "
                                     r"to be: \[5, 3\] but got: \[5, 4\]\."),
    ((2, 1, 2, 3), (3, 4, 5), "matmul", r"Expected size for first two dimensions of batch2 "
                                        r"tensor to be: \[6, 3\] but got: \[6, 4\]\."),
    ((2, 1, 2, 3), (4, 5), "matmul", r"mat1 and mat2 shapes cannot be multiplied \(4x3 and "
                                     r"4x5\)"),
    ((2, 6, 2, 3), (4,), "matmul", r"size mismatch, got input \(24\), mat \(24x3\), vec "
                                   r"\(4\)"),
    ((3,), (2, 7, 4, 5), "matmul", r"Expected size for first two dimensions of batch2 tensor "
                                   r"to be: \[14, 3\] but got: \[14, 4\]\."),
    ((), (3,), "matmul", r"both arguments to matmul need to be at least 1D, but they are 0D and "
                         r"1D"),
    ((3,), (), "matmul", r"both arguments to matmul need to be at least 1D, but they are 1D and "
                         r"0D"),
    ((3,), (3, 4), "mm", r"self must be a matrix"),
    ((2, 3), (3,), "mm", r"mat2 must be a matrix"),
    ((2, 3), (2, 3, 4), "bmm", r"batch1 must be a 3D tensor"),
    ((2, 2, 3), (2, 3), "bmm", r"batch2 must be a 3D tensor"),
    ((2, 2, 3), (2, 4, 5), "bmm", r"Expected size for first two dimensions of batch2 tensor to "
                                  r"be: \[2, 3\] but got: \[2, 4\]\."),
    ((2, 2, 3), (3, 3, 5), "bmm", r"Expected size for first two dimensions of batch2 tensor to "
                                  r"be: \[2, 3\] but got: \[3, 3\]\."),
    ((1, 2, 3), (2, 3, 4), "bmm", r"Expected size for first two dimensions of batch2 tensor to "
                                  r"be: \[1, 3\] but got: \[2, 3\]\."),
]


@pytest.mark.parametrize("sa,sb,fn,msg", MATMUL_ERRORS,
                         ids=[f"{e[2]}-{e[0]}-{e[1]}" for e in MATMUL_ERRORS])
def test_matmul_errors(sa, sb, fn, msg):
    x, y = torch.ones(sa), torch.ones(sb)  # (a size tuple: ones(*()) is a TypeError)
    with pytest.raises(RuntimeError, match=msg):
        getattr(torch, fn)(x, y)
    if fn == "matmul":
        with pytest.raises(RuntimeError, match=msg):
            x @ y


def test_matmul_dtype_mismatch():
    msg = "expected m1 and m2 to have the same dtype, but got: float != double"
    with pytest.raises(RuntimeError, match=msg):
        torch.mm(torch.ones(2, 3), torch.ones(3, 4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=msg):
        torch.ones(2, 3) @ torch.ones(3, 4, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != long int"):
        torch.ones(2, 3) @ torch.ones(3, 4, dtype=torch.int64)


# -------------------------------------------------------- copies and Python values

def test_clone_is_an_independent_copy():
    a = rand((2, 3))
    x = torch.tensor(a)
    c = x.clone()
    check(c, f64(a), torch.float32)
    c.add_(1)
    check(x, f64(a), torch.float32)
    c2 = torch.clone(x)
    x.zero_()
    check(c2, f64(a), torch.float32)
    check(torch.tensor([1, 2]).clone(), [1, 2], torch.int64)


def test_detach_shares_memory():
    x = torch.tensor([1.0, 2.0, 3.0])
    d = x.detach()
    check(d, [1.0, 2.0, 3.0], torch.float32)
    d.mul_(2)
    check(x, [2.0, 4.0, 6.0], torch.float32)
    x.add_(1)
    check(d, [3.0, 5.0, 7.0], torch.float32)


def test_item():
    v = torch.tensor(2.5).item()
    assert v == 2.5 and type(v) is float
    v = torch.tensor([[7]]).item()
    assert v == 7 and type(v) is int
    v = torch.tensor([True]).item()
    assert v is True
    v = torch.tensor(0.1).item()  # the float32 value, widened
    assert type(v) is float and v == float(np.float32(0.1)) and v != 0.1
    for t, n in ((torch.ones(2), 2), (torch.ones(0), 0), (torch.ones(2, 3), 6)):
        with pytest.raises(RuntimeError, match=f"a Tensor with {n} elements cannot be "
                                               "converted to Scalar"):
            t.item()


def test_tolist():
    assert torch.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    r = torch.tensor([1.5, -2.0]).tolist()
    assert r == [1.5, -2.0] and all(type(v) is float for v in r)
    assert torch.tensor(2.5).tolist() == 2.5
    assert torch.tensor(3).tolist() == 3
    assert torch.tensor([True, False]).tolist() == [True, False]
    assert torch.ones(0, 2).tolist() == []
    assert torch.ones(2, 0).tolist() == [[], []]
    a = rand((2, 3, 4))
    assert torch.tensor(a).tolist() == a.tolist()


def test_python_number_conversions():
    assert float(torch.tensor([3])) == 3.0 and type(float(torch.tensor([3]))) is float
    assert int(torch.tensor(3.9)) == 3
    assert int(torch.tensor(-3.9)) == -3
    assert int(torch.tensor([[2.7]])) == 2
    assert float(torch.ones(1, 1)) == 1.0
    assert bool(torch.tensor(0.5)) is True
    assert bool(torch.tensor([[0]])) is False
    assert bool(torch.tensor([0.0])) is False


def test_python_number_conversion_errors():
    for conv in (float, int):
        with pytest.raises(ValueError, match="only one element tensors can be converted to "
                                             "Python scalars"):
            conv(torch.ones(2))
        with pytest.raises(ValueError, match="only one element tensors can be converted to "
                                             "Python scalars"):
            conv(torch.ones(0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value "
                                           "is ambiguous"):
        bool(torch.ones(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is "
                                           "ambiguous"):
        bool(torch.ones(0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value"):
        if torch.tensor([1, 2]) > 0:
            pass


def test_len_and_iteration():
    x = torch.tensor(rand((4, 3)))
    assert len(x) == 4
    assert len(torch.ones(0, 3)) == 0
    rows = list(x)
    assert len(rows) == 4
    for i, row in enumerate(rows):
        check(row, f64(x.numpy()[i]), torch.float32)
    assert list(torch.ones(0, 3)) == []
    assert [v.item() for v in torch.tensor([5, 6, 7])] == [5, 6, 7]
    assert all(v.ndim == 0 for v in torch.tensor([5, 6, 7]))
    a, b = torch.tensor([1.0, 2.0])  # unpacking
    assert a.item() == 1.0 and b.item() == 2.0
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(torch.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(torch.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(torch.tensor(1.0))


def test_format_0d():
    assert f"{torch.tensor(3.14159):.3f}" == "3.142"
    assert f"{torch.tensor(3.14159):>10.2f}" == "      3.14"
    assert f"{torch.tensor(3)}" == "3"
    assert f"{torch.tensor(3):5d}" == "    3"
    assert f"{torch.tensor(7):x}" == "7"
    assert f"{torch.tensor(True)}" == "True"
    assert f"{torch.tensor(True):d}" == "1"
    assert f"{torch.tensor(2.5)}" == "2.5"
    assert f"{torch.tensor(0.1)}" == "0.10000000149011612"
    assert f"{torch.tensor(0.1, dtype=torch.float64)}" == "0.1"
    assert "{:.2e}".format(torch.tensor(1234.5)) == "1.23e+03"
    assert "%.2f" % torch.tensor(1.234) == "1.23"


def test_format_nd():
    assert f"{torch.tensor([1.5, 2.0])}" == "tensor([1.5000, 2.0000])"
    assert f"{torch.tensor([[1, 2], [3, 4]])}" == "tensor([[1, 2],\n        [3, 4]])"
    assert format(torch.tensor([1.5]), "") == "tensor([1.5000])"
    assert f"{torch.tensor([[1.5, 2.0]]):}" == "tensor([[1.5000, 2.0000]])"
    with pytest.raises(TypeError, match="unsupported format string passed to "
                                        "Tensor.__format__"):
        f"{torch.tensor([2.5]):.1f}"


@pytest.mark.parametrize("op", ["&=", "|=", "^=", "<<=", ">>=", "%=", "//=", "+=", "-=", "*=",
                                "**="])
def test_augmented_assignment_writes_into_the_tensor(op):
    """`x op= y` updates x itself (every alias sees it), as PyTorch's __iand__ & co. do; `&=`,
    `|=`, `^=` had no __i*__ and rebound x to a new tensor (issue 26). Values: numpy int64."""
    a, b = np.array([5, 6, -7, 12]), np.array([3, 1, 2, 5])
    ns = {"x": torch.tensor(a), "torch": torch, "b": b}
    alias, view = ns["x"], ns["x"][1:]
    exec(f"x {op} torch.tensor(b)", ns)
    want = eval(f"a {op[:-1]} b")
    assert ns["x"] is alias
    assert alias.tolist() == want.tolist() and view.tolist() == want[1:].tolist()
    m = torch.tensor([True, False, True])
    alias = m
    m &= torch.tensor([True, True, False])
    m |= False
    assert alias is m and alias.tolist() == [True, False, False]


def test_bitwise_functions_and_methods():
    """torch.bitwise_and/or/xor and their Tensor methods (in-place too), ints and bools."""
    a, b = np.array([5, 6, -7]), np.array([3, 1, 2])
    assert torch.bitwise_and(torch.tensor(a), torch.tensor(b)).tolist() == (a & b).tolist()
    assert torch.bitwise_or(torch.tensor(a), 8).tolist() == (a | 8).tolist()
    assert torch.tensor(a).bitwise_xor(torch.tensor(b)).tolist() == (a ^ b).tolist()
    t = torch.tensor(a)
    assert t.bitwise_and_(3) is t and t.tolist() == (a & 3).tolist()
    assert torch.bitwise_xor(torch.tensor([True, False]), True).tolist() == [False, True]


def test_square_of_bool_is_int64():
    """square(bool) is PyTorch's pow(x, 2): int64; square_ of a bool tensor cannot hold it."""
    b = torch.tensor([True, False])
    for r in (torch.square(b), b.square(), torch.compile(torch.square)(b)):
        assert r.dtype == torch.int64 and r.tolist() == [1, 0]
    assert torch.square(torch.tensor([-3], dtype=torch.int8)).dtype == torch.int8
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        b.square_()
    assert b.tolist() == [True, False]


@pytest.mark.parametrize("fn,kernel,inplace", [
    (lambda a, b: a << b, "lshift_cpu", "__ilshift__"),
    (lambda a, b: a >> b, "rshift_cpu", "__irshift__"),
    (lambda a, b: a % b, "remainder_cpu", "__imod__"),
    (lambda a, b: torch.fmod(a, b), "fmod_cpu", "fmod_"),
    (lambda a, b: a // b, "div_floor_cpu", "__ifloordiv__")])
def test_bool_shifts_and_divisions_are_refused(fn, kernel, inplace):
    """PyTorch has no bool kernel for these (`b <<= b` computed silently here, issue 26), with
    a bool tensor or a Python bool on the right; an int scalar promotes to int64 and works."""
    b = torch.tensor([True, False, True])
    for other in (b, True):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for '
                                                      f"'Bool'"):
            fn(b, other)
    x = b.clone()
    with pytest.raises(NotImplementedError, match=kernel):
        getattr(x, inplace)(b)
    assert x.tolist() == [True, False, True]
    assert fn(b, 1).dtype == torch.int64


def test_float_of_a_tensor_requiring_grad_warns_once_as_pytorch(monkeypatch):
    from fusetorch.tracer import tensor as tensor_module
    monkeypatch.setattr(tensor_module, "_WARNED_SCALAR_OF_GRAD", [])
    t = torch.ones(1, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert int(t) == 1 and t.item() == 1.0  # only float() warns
        assert not seen
        assert float(t) == 1.0 and float(t * 2) == 2.0 and float(torch.ones(1)) == 1.0
    assert [str(w.message) for w in seen] == [
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first."]
    assert seen[0].filename == __file__
