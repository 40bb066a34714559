"""The int / tuple-of-ints arguments of convolution, pooling and unfold/fold: PyTorch's TypeError
for floats, bools and the like, and every good spelling still working.

What PyTorch 2.13.0 (CPU) does, observed by hand and written in literally below:
- `int[]` arguments (kernel_size, stride, padding, dilation, output_padding, output_size)
  accept a Python int, a numpy int, a one-element integer tensor, or a tuple/list of those; a
  float, bool, numpy float, float tensor, None or str is `TypeError: max_pool2d(): argument
  'kernel_size' (position 2) must be tuple of ints, not float`, and such an element of a tuple
  is `... must be tuple of ints, but found element of type float at pos 0`. A Python bool is
  rejected too, alone and inside a tuple, but a one-element bool tensor is taken as 0/1
  (max_pool2d(x, torch.tensor(True)) pools 1x1). stride=None means the kernel size (pooling
  only).
- `int` arguments (groups, divisor_override) take the same ints: `argument 'groups' must be
  int, not float`.
- conv1d/2d/3d have two overloads (padding ints or a string), so a bad type there is
  `TypeError: conv2d() received an invalid combination of arguments - got (Tensor, Tensor,
  NoneType, int, bool), but expected one of: ...`. padding='same' and 'valid' work.
- unfold/fold (im2col/col2im) go through Python's `_pair`, which makes a scalar a pair: a
  float is `... found element of type float at pos 0`, and a 0-d tensor is `TypeError:
  iteration over a 0-d tensor`.
- adaptive_avg/max_pool2d take len() of any output_size that is not a Python int, so a numpy
  int or a 0-d tensor there is a TypeError ("object of type 'numpy.int64' has no len()"),
  while the 1-d forms accept them. None inside the 2-d tuple keeps that input size.
- nn.Conv2d(2, 2, 3.0) fails at construction (the weight's empty() gets a float size);
  nn.Conv2d(2, 2, 3, stride=1.0) and nn.MaxPool2d(2.0) construct and fail at forward with
  the functional's TypeError.
"""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F

RNG = np.random.default_rng(0)
X2 = torch.tensor(RNG.standard_normal((1, 2, 6, 6)))
X1 = torch.tensor(RNG.standard_normal((1, 2, 6)))
X3 = torch.tensor(RNG.standard_normal((1, 2, 4, 4, 4)))
W2 = torch.tensor(RNG.standard_normal((2, 2, 3, 3)))
W1 = torch.tensor(RNG.standard_normal((2, 2, 3)))
W3 = torch.tensor(RNG.standard_normal((2, 2, 1, 1, 1)))
COLS = torch.tensor(RNG.standard_normal((1, 8, 9)))

# (function, call with the bad value v, message start that names function and argument)
_CALLS = {
    "max_pool2d kernel_size": (lambda v: F.max_pool2d(X2, v),
                               "max_pool2d(): argument 'kernel_size' (position 2)"),
    "max_pool2d stride": (lambda v: F.max_pool2d(X2, 2, v),
                          "max_pool2d(): argument 'stride' (position 3)"),
    "max_pool2d padding": (lambda v: F.max_pool2d(X2, 2, 2, v),
                           "max_pool2d(): argument 'padding' (position 4)"),
    "max_pool2d dilation": (lambda v: F.max_pool2d(X2, 2, 2, 0, v),
                            "max_pool2d(): argument 'dilation' (position 5)"),
    "max_pool1d kernel_size": (lambda v: F.max_pool1d(X1, v),
                               "max_pool1d(): argument 'kernel_size' (position 2)"),
    "max_pool1d stride": (lambda v: F.max_pool1d(X1, 2, v),
                          "max_pool1d(): argument 'stride' (position 3)"),
    "avg_pool2d kernel_size": (lambda v: F.avg_pool2d(X2, v),
                               "avg_pool2d(): argument 'kernel_size' (position 2)"),
    "avg_pool2d padding": (lambda v: F.avg_pool2d(X2, 2, 2, v),
                           "avg_pool2d(): argument 'padding' (position 4)"),
    "avg_pool1d kernel_size": (lambda v: F.avg_pool1d(X1, v),
                               "avg_pool1d(): argument 'kernel_size' (position 2)"),
    "conv_transpose2d stride": (lambda v: F.conv_transpose2d(X2, W2, None, v),
                                "conv_transpose2d(): argument 'stride'"),
    "conv_transpose2d output_padding": (
        lambda v: F.conv_transpose2d(X2, W2, None, 2, 0, v),
        "conv_transpose2d(): argument 'output_padding'"),
    "conv_transpose1d dilation": (lambda v: F.conv_transpose1d(X1, W1, None, 1, 0, 0, 1, v),
                                  "conv_transpose1d(): argument 'dilation'"),
    "adaptive_avg_pool1d": (lambda v: F.adaptive_avg_pool1d(X1, v),
                            "adaptive_avg_pool1d(): argument 'output_size' (position 2)"),
    "adaptive_max_pool1d": (lambda v: F.adaptive_max_pool1d(X1, v),
                            "adaptive_max_pool1d(): argument 'output_size' (position 2)"),
}
_CONV = {
    "conv2d stride": lambda v: F.conv2d(X2, W2, None, v),
    "conv2d padding": lambda v: F.conv2d(X2, W2, None, 1, v),
    "conv2d dilation": lambda v: F.conv2d(X2, W2, None, 1, 0, v),
    "conv1d padding": lambda v: F.conv1d(X1, W1, None, 1, v),
    "conv3d stride": lambda v: F.conv3d(X3, W3, None, v),
}
_BAD_SCALARS = {"float": 2.0, "bool": True, "numpy float": np.float64(2.0), "None": None,
                "float tensor": torch.tensor(2.0)}
_BAD_TUPLES = {"float": (2.0, 2), "bool": (True, 2), "second float": (2, 2.0)}


def _type_name(v) -> str:
    t = type(v)
    return f"numpy.{t.__name__}" if t.__module__ == "numpy" else t.__name__


@pytest.mark.parametrize("call", _CALLS, ids=str)
@pytest.mark.parametrize("bad", _BAD_SCALARS, ids=str)
def test_bad_scalar_is_type_error(call, bad):
    f, start = _CALLS[call]
    v = _BAD_SCALARS[bad]
    if call.startswith("max_pool") and call.endswith("stride") and v is None:
        f(v)  # stride=None: the kernel size
        return
    with pytest.raises(TypeError) as e:
        f(v)
    assert str(e.value) == f"{start} must be tuple of ints, not {_type_name(v)}"


@pytest.mark.parametrize("call", _CALLS, ids=str)
@pytest.mark.parametrize("bad", _BAD_TUPLES, ids=str)
def test_bad_element_is_type_error(call, bad):
    f, start = _CALLS[call]
    v = _BAD_TUPLES[bad]
    if call.split()[0][-2:] == "1d" or call.startswith("adaptive"):
        v = v[1:] if bad == "second float" else v[:1]  # the 1-d forms take one value
    pos = next(i for i, e in enumerate(v) if type(e) is not int)
    with pytest.raises(TypeError) as e:
        f(v)
    assert str(e.value) == (f"{start} must be tuple of ints, but found element of type "
                            f"{type(v[pos]).__name__} at pos {pos}")


@pytest.mark.parametrize("call", _CONV, ids=str)
@pytest.mark.parametrize("bad", ["float", "bool", "tuple"])
def test_conv_bad_argument_is_invalid_combination(call, bad):
    v = {"float": 1.0, "bool": True, "tuple": (1.0, 1)}[bad]
    name = call.split()[0]
    with pytest.raises(TypeError) as e:
        _CONV[call](v)
    msg = str(e.value)
    assert msg.startswith(f"{name}() received an invalid combination of arguments - got (")
    assert f", {type(v).__name__})" in msg.splitlines()[0]
    assert "tuple of ints stride = 1" in msg and 'str padding = "valid"' in msg


def test_conv_invalid_combination_message_as_pytorch():
    with pytest.raises(TypeError) as e:
        F.conv2d(X2, W2, None, 1, True)
    assert str(e.value) == (
        "conv2d() received an invalid combination of arguments - got (Tensor, Tensor, NoneType, "
        "int, bool), but expected one of:\n"
        " * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, tuple of "
        "ints padding = 0, tuple of ints dilation = 1, int groups = 1)\n"
        " * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, str "
        "padding = \"valid\", tuple of ints dilation = 1, int groups = 1)\n")


@pytest.mark.parametrize("bad", [1.0, True, (1,), np.float64(1.0), None])
def test_groups_must_be_int(bad):
    with pytest.raises(TypeError, match="conv2d\\(\\) received an invalid combination"):
        F.conv2d(X2, W2, None, 1, 0, 1, bad)
    with pytest.raises(TypeError) as e:
        F.conv_transpose2d(X2, W2, None, 1, 0, 0, bad)
    assert str(e.value) == ("conv_transpose2d(): argument 'groups' must be int, not "
                            f"{_type_name(bad)}")


@pytest.mark.parametrize("bad", [2.0, True])
def test_divisor_override_must_be_int(bad):
    with pytest.raises(TypeError) as e:
        F.avg_pool2d(X2, 2, divisor_override=bad)
    assert str(e.value) == ("avg_pool2d(): argument 'divisor_override' must be int, not "
                            f"{type(bad).__name__}")


@pytest.mark.parametrize("fn,name,pos", [
    (lambda v: F.unfold(X2, v), "im2col(): argument 'kernel_size' (position 2)", 0),
    (lambda v: F.unfold(X2, 2, stride=v), "im2col(): argument 'stride' (position 5)", 0),
    (lambda v: F.fold(COLS, v, 2), "col2im(): argument 'output_size' (position 2)", 0),
    (lambda v: F.fold(COLS, 4, v), "col2im(): argument 'kernel_size' (position 3)", 0),
])
@pytest.mark.parametrize("bad", [2.0, True, np.float64(2.0), (2, 2.0)])
def test_unfold_fold_bad_is_type_error(fn, name, pos, bad):
    elem = bad[1] if isinstance(bad, tuple) else bad
    at = 1 if isinstance(bad, tuple) else 0
    with pytest.raises(TypeError) as e:
        fn(bad)
    assert str(e.value) == (f"{name} must be tuple of ints, but found element of type "
                            f"{_type_name(elem)} at pos {at}")


def test_unfold_zero_dim_tensor_is_type_error():
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        F.unfold(X2, torch.tensor(2))


@pytest.mark.parametrize("fn", [F.adaptive_avg_pool2d, F.adaptive_max_pool2d])
def test_adaptive_2d_output_size(fn):
    name = fn.__name__
    with pytest.raises(TypeError, match="object of type 'float' has no len"):
        fn(X2, 2.0)
    with pytest.raises(TypeError, match="object of type 'numpy.int64' has no len"):
        fn(X2, np.int64(2))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        fn(X2, torch.tensor(2))
    with pytest.raises(TypeError) as e:
        fn(X2, True)
    assert str(e.value) == (f"{name}(): argument 'output_size' (position 2) must be tuple of "
                            "ints, not bool")
    with pytest.raises(TypeError) as e:
        fn(X2, (None, 2.0))
    assert "must be tuple of ints, but found element of type float at pos 1" in str(e.value)
    assert fn(X2, (None, 2)).shape == (1, 2, 6, 2)
    assert fn(X2, [np.int64(3), 3]).shape == (1, 2, 3, 3)


def test_bool_tensor_is_an_int():
    np.testing.assert_allclose(F.max_pool2d(X2, torch.tensor(True)).numpy(), X2.numpy())


def test_one_d_wrong_length_is_runtime_error():
    with pytest.raises(RuntimeError, match="max_pool1d\\(\\) kernel_size must be an int, list of "
                       "ints or tuple of ints of size 1 but got size 2"):
        F.max_pool1d(X1, (2, 2))
    with pytest.raises(RuntimeError, match="avg_pool1d\\(\\) argument 'kernel_size' should "
                       "contain one int \\(got 2\\)"):
        F.avg_pool1d(X1, [2, 2])


# ---------------------------------------------------------------- the good spellings

_GOOD_PAIRS = [2, (2, 2), [2, 2], [2], np.int64(2), (np.int32(2), 2), torch.tensor(2),
               (torch.tensor(2), 2)]


def _max_pool_ref(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


@pytest.mark.parametrize("k", _GOOD_PAIRS, ids=repr)
def test_good_spellings_pool(k):
    x = X2.numpy()
    np.testing.assert_allclose(F.max_pool2d(X2, k).numpy(), _max_pool_ref(x))
    np.testing.assert_allclose(F.max_pool2d(X2, 2, k).numpy(), _max_pool_ref(x))
    mean = x.reshape(1, 2, 3, 2, 3, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(F.avg_pool2d(X2, k).numpy(), mean)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(X1, 3).numpy(),
                               X1.numpy().reshape(1, 2, 3, 2).mean(-1))
    if not isinstance(k, (tuple, list)) or len(k) == 1:
        got = F.max_pool1d(X1, k).numpy()
        np.testing.assert_allclose(got, X1.numpy().reshape(1, 2, 3, 2).max(-1))
        np.testing.assert_allclose(F.avg_pool1d(X1, k).numpy(),
                                   X1.numpy().reshape(1, 2, 3, 2).mean(-1))
        np.testing.assert_allclose(F.adaptive_max_pool1d(X1, k).numpy(),
                                   X1.numpy().reshape(1, 2, 2, 3).max(-1))


def _conv_ref(x, w, stride, padding):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    o, _, kh, kw = w.shape
    oh = (x.shape[2] - kh) // stride + 1
    ow = (x.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", win, w)
    return out


@pytest.mark.parametrize("s", _GOOD_PAIRS, ids=repr)
def test_good_spellings_conv(s):
    want = _conv_ref(X2.numpy(), W2.numpy(), 2, 0)
    np.testing.assert_allclose(F.conv2d(X2, W2, None, s).numpy(), want, rtol=1e-12)
    want = _conv_ref(X2.numpy(), W2.numpy(), 1, 2)
    np.testing.assert_allclose(F.conv2d(X2, W2, None, 1, s).numpy(), want, rtol=1e-12)
    assert F.conv_transpose2d(X2, W2, None, s).shape == (1, 2, 13, 13)
    if not isinstance(s, torch.Tensor) and np.size(s) != 1 or isinstance(s, (int, np.integer)):
        assert F.unfold(X2, 2, stride=s).shape == (1, 8, 9)  # no one-element list: as PyTorch


@pytest.mark.parametrize("fn,arg,rule", [
    (lambda v: F.max_pool2d(X2, v), "max_pool2d: kernel_size", "either be a single int,"),
    (lambda v: F.max_pool2d(X2, 2, v), "max_pool2d: stride",
     "either be omitted, a single int,"),
    (lambda v: F.max_pool2d(X2, 2, 2, 0, v), "max_pool2d: dilation", "be either a single int,"),
    (lambda v: F.avg_pool2d(X2, 2, 2, v), "avg_pool2d: padding", "either be a single int,"),
])
def test_pool_wrong_length_is_runtime_error(fn, arg, rule):
    with pytest.raises(RuntimeError) as e:
        fn([1, 1, 1])
    assert str(e.value) == f"{arg} must {rule} or a tuple of two ints"


def test_groups_and_padding_strings():
    want = _conv_ref(X2.numpy(), W2.numpy(), 1, 0)
    for g in (1, np.int64(1), torch.tensor(1)):
        np.testing.assert_allclose(F.conv2d(X2, W2, None, 1, 0, 1, g).numpy(), want,
                                   rtol=1e-12)
        assert F.conv_transpose2d(X2, W2, None, 1, 0, 0, g).shape == (1, 2, 8, 8)
    np.testing.assert_allclose(F.conv2d(X2, W2, padding="valid").numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(F.conv2d(X2, W2, padding="same").numpy(),
                               _conv_ref(X2.numpy(), W2.numpy(), 1, 1), rtol=1e-12)
    np.testing.assert_allclose(F.avg_pool2d(X2, 2, divisor_override=np.int64(4)).numpy(),
                               X2.numpy().reshape(1, 2, 3, 2, 3, 2).mean(axis=(3, 5)))


def test_modules_fail_where_pytorch_fails():
    with pytest.raises(TypeError):
        nn.Conv2d(2, 2, 3.0)  # the weight's size
    conv = nn.Conv2d(2, 2, 3, stride=1.0)  # constructs; forward rejects it
    with pytest.raises(TypeError, match="conv2d\\(\\) received an invalid combination"):
        conv(X2.float())
    pool = nn.MaxPool2d(2.0)
    with pytest.raises(TypeError) as e:
        pool(X2)
    assert str(e.value) == ("max_pool2d(): argument 'kernel_size' (position 2) must be tuple of "
                            "ints, not float")
    with pytest.raises(TypeError, match="avg_pool2d\\(\\): argument 'kernel_size'"):
        nn.AvgPool2d(2.0)(X2)
