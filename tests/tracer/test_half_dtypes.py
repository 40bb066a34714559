"""float16 and bfloat16 as first-class dtypes (issue 11): objects, PyTorch's promotion, limits,
eager values against numpy float32 references rounded to the dtype (ml_dtypes for bfloat16),
printing, autograd, compile and save/load.

Expected dtypes, reprs and messages below were taken from PyTorch 2.13 by hand and are written
out literally."""
from __future__ import annotations

import io
import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.ir import dtypes as dt
from fusetorch.ir.folding import round_float

H, B, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
I64, I32 = torch.int64, torch.int32
NPDT = {H: np.float16, B: ml_dtypes.bfloat16}
EPS = {H: 2.0 ** -10, B: 2.0 ** -7}
LOW = [H, B]


def rounded(a, d) -> np.ndarray:
    """numpy float32 values rounded to dtype d, as float64 for comparing."""
    return np.asarray(a, dtype=np.float32).astype(NPDT[d]).astype(np.float64)


def values(t) -> np.ndarray:
    return t.detach().double().numpy()


def assert_rounded_close(got, want32, d, ulps=1):
    """`got` (a tensor of dtype d) is `want32` (float32 math) rounded to d, within `ulps` of the
    dtype (numpy's float32 transcendentals and the C library's may differ in the last bit)."""
    assert got.dtype is d
    want = rounded(want32, d)
    tol = ulps * EPS[d] * np.maximum(np.abs(want), 2.0 ** -14)
    np.testing.assert_array_less(np.abs(values(got) - want), tol + 1e-30)


# ----------------------------------------------------------------------------- the dtype objects

def test_dtype_objects_and_aliases():
    assert repr(B) == str(B) == "torch.bfloat16" and repr(H) == "torch.float16"
    assert torch.half is H and torch.bfloat16 is dt.bfloat16
    for d in LOW:
        assert d.is_floating_point and d.itemsize == 2 and not d.is_complex
        x = torch.ones(3, dtype=d)
        assert x.is_floating_point() and torch.is_floating_point(x)
        assert x.element_size() == 2 and x.itemsize == 2 and x.nbytes == 6
    assert torch.ones(2, dtype=B).type() == "torch.BFloat16Tensor"
    assert torch.ones(2, dtype=H).type() == "torch.HalfTensor"
    assert torch.ones(2).type("torch.BFloat16Tensor").dtype is B


def test_legacy_constructors():
    x = torch.BFloat16Tensor([1, 2])
    assert x.dtype is B and isinstance(x, torch.BFloat16Tensor)
    assert not isinstance(x, torch.HalfTensor)
    assert values(x).tolist() == [1.0, 2.0]
    assert torch.HalfTensor(2, 3).shape == (2, 3)


@pytest.mark.parametrize("d", LOW, ids=str)
def test_conversions(d):
    x = torch.tensor([0.1, -2.5, 3.0])
    for y in (x.bfloat16() if d is B else x.half(), x.to(d), x.to(dtype=d), x.type(d)):
        assert y.dtype is d
        np.testing.assert_array_equal(values(y), rounded([0.1, -2.5, 3.0], d))
    assert x.to(d).float().dtype is F32 and x.to(d).double().dtype is F64
    assert x.to(d).bfloat16().dtype is B and x.to(d).half().dtype is H
    np.testing.assert_array_equal(x.to(d).to(I64).numpy(), [0, -2, 3])


@pytest.mark.parametrize("d", LOW, ids=str)
def test_creation_with_dtype(d):
    for t in (torch.zeros(2, 3, dtype=d), torch.ones(4, dtype=d), torch.randn(5, dtype=d),
              torch.rand(5, dtype=d), torch.empty(2, dtype=d), torch.full((2,), 1.5, dtype=d),
              torch.arange(4, dtype=d), torch.tensor([1, 2], dtype=d),
              torch.tensor(np.array([0.1, 0.2]), dtype=d), torch.as_tensor([1.5], dtype=d),
              torch.zeros_like(torch.ones(2), dtype=d), torch.ones(2, dtype=d).new_zeros(3),
              torch.linspace(0, 1, 5, dtype=d)):
        assert t.dtype is d and t.numel() == t.detach().float().numel()
    np.testing.assert_array_equal(values(torch.tensor([0.1, 0.2], dtype=d)),
                                  rounded([0.1, 0.2], d))
    r = values(torch.rand(200, dtype=d))
    assert r.min() >= 0 and r.max() <= 1 and np.array_equal(r, rounded(r, d))
    u = values(torch.empty(100, dtype=d).uniform_(-2, 2))
    assert u.min() >= -2 and u.max() <= 2
    assert nn.Linear(3, 2, dtype=d).weight.dtype is d


def test_item_tolist_and_numpy():
    x = torch.tensor([1.5, 2.0], dtype=B)
    assert x.tolist() == [1.5, 2.0] and type(x.tolist()[0]) is float
    assert x[0].item() == 1.5 and type(x[0].item()) is float
    with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
        x.numpy()
    assert torch.tensor([1.5], dtype=H).numpy().dtype == np.float16


# ----------------------------------------------------------------------------- promotion

def _t(d, zero_dim=False):
    return torch.tensor(1.0, dtype=d) if zero_dim else torch.ones(2, dtype=d)


# (a, b, result) as PyTorch 2.13 gives them; a 0-d tensor is ("0d", dtype), scalars are Python
PROMOTION = [
    (H, B, F32), (B, H, F32), (B, ("0d", H), B), (("0d", H), ("0d", B), F32),
    (I64, H, H), (I32, B, B), (torch.uint8, B, B), (torch.bool, B, B), (torch.int8, H, H),
    (H, 2.5, H), (B, 2.5, B), (B, 2, B), (B, True, B), (("0d", B), 2.5, B),
    (B, ("0d", F32), B), (H, ("0d", F64), H), (I64, ("0d", B), B), (I64, ("0d", H), H),
    (F32, B, F32), (B, F64, F64), (H, F32, F32), (("0d", B), ("0d", F32), F32),
    (("0d", I64), ("0d", B), B), (("0d", B), ("0d", I64), B),
]


def _operand(spec):
    if isinstance(spec, tuple):
        return _t(spec[1], zero_dim=True)
    if isinstance(spec, dt.DType):
        return _t(spec)
    return spec


@pytest.mark.parametrize("a,b,want", PROMOTION, ids=[str(i) for i in range(len(PROMOTION))])
def test_promotion_matches_pytorch(a, b, want):
    x, y = _operand(a), _operand(b)
    assert torch.result_type(x, y) is want
    out = x + y
    assert out.dtype is want
    other = 1.0 if isinstance(y, torch.Tensor) else float(y)  # all exact in every dtype here
    assert np.all(values(out) == 1.0 + other)
    if isinstance(y, torch.Tensor):
        assert (y * x).dtype is want


def test_promote_types_table():
    assert torch.promote_types(H, B) is F32 and torch.promote_types(B, H) is F32
    assert torch.promote_types(B, I64) is B and torch.promote_types(torch.bool, B) is B
    assert torch.promote_types(B, F32) is F32 and torch.promote_types(H, F64) is F64
    assert torch.promote_types(B, B) is B


def test_mixed_values_follow_promotion():
    # int64 tensor times a float16 one: computed in float16 (PyTorch: [0.3000, 0.6001])
    got = torch.tensor([1, 2]) * torch.tensor([0.3], dtype=H)
    assert got.dtype is H
    np.testing.assert_array_equal(values(got), rounded(np.float16(0.3) * np.float32([1, 2]), H))
    # bfloat16 with float16: both widen exactly to float32
    got = torch.tensor([0.1], dtype=B) + torch.tensor([0.1], dtype=H)
    want = np.float32(ml_dtypes.bfloat16(0.1)) + np.float32(np.float16(0.1))
    assert got.dtype is F32 and got.item() == float(want)


# ----------------------------------------------------------------------------- limits

def test_finfo_values_and_repr():
    fb = torch.finfo(B)
    assert (fb.bits, fb.eps, fb.max, fb.min, fb.tiny, fb.smallest_normal, fb.resolution,
            fb.dtype) == (16, 0.0078125, 3.3895313892515355e+38, -3.3895313892515355e+38,
                          1.1754943508222875e-38, 1.1754943508222875e-38, 0.01, "bfloat16")
    fh = torch.finfo(H)
    assert (fh.bits, fh.eps, fh.max, fh.min, fh.tiny, fh.resolution) == (
        16, 0.0009765625, 65504.0, -65504.0, 6.103515625e-05, 0.001)
    assert repr(fb) == ("finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, "
                        "eps=0.0078125, smallest_normal=1.17549e-38, tiny=1.17549e-38, "
                        "dtype=bfloat16)")
    assert str(fh) == ("finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, "
                       "smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)")
    assert repr(torch.finfo()) == repr(torch.finfo(F32)) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)")
    assert torch.finfo(F64).eps == 2.0 ** -52 and torch.finfo(F64).resolution == 1e-15
    assert torch.finfo(B) == torch.finfo(B) and torch.finfo(B) != torch.finfo(H)


def test_iinfo_values_and_errors():
    i = torch.iinfo(torch.int16)
    assert (i.bits, i.min, i.max, i.dtype) == (16, -32768, 32767, "int16")
    assert torch.iinfo(torch.uint8).max == 255
    assert repr(torch.iinfo(torch.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    assert repr(torch.iinfo(I32)) == "iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)"
    with pytest.raises(TypeError, match=r"^torch.finfo\(\) requires a floating point input "
                                        r"type. Use torch.iinfo to handle 'torch.finfo'$"):
        torch.finfo(I32)
    with pytest.raises(TypeError, match=r"^torch.iinfo\(\) requires an integer input type. "
                                        r"Use torch.finfo to handle 'torch.iinfo'$"):
        torch.iinfo(B)
    with pytest.raises(TypeError, match="^torch.bool is not supported by torch.iinfo$"):
        torch.iinfo(torch.bool)


def test_error_messages_name_bfloat16():
    with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, but "
                                           r"got: c10::BFloat16 != float$"):
        torch.ones(2, 2, dtype=B) @ torch.ones(2, 2)
    with pytest.raises(RuntimeError, match="^to is out of bounds for c10::BFloat16$"):
        torch.empty(2, dtype=B).uniform_(0, 1e39)


# ----------------------------------------------------------------------------- eager values

_X = np.array([[0.37, -1.21, 2.5, 0.061], [-0.73, 1.9, -0.004, 3.3]])
_Y = np.array([[1.3, 0.52, -2.2, 0.81], [0.27, -1.6, 1.15, 0.9]])

UNARY = {
    "exp": (lambda t: t.exp(), np.exp), "log": (lambda t: t.abs().log(), lambda a: np.log(
        np.abs(a))), "tanh": (torch.tanh, np.tanh), "sqrt": (lambda t: t.abs().sqrt(),
                                                             lambda a: np.sqrt(np.abs(a))),
    "sin": (torch.sin, np.sin), "neg": (lambda t: -t, np.negative),
    "sigmoid": (torch.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
    "erf": (torch.erf, lambda a: np.float32([math.erf(v) for v in a.ravel()]).reshape(a.shape)),
    "relu": (torch.relu, lambda a: np.maximum(a, 0)),
    "clamp": (lambda t: t.clamp(-1, 1), lambda a: np.clip(a, -1, 1)),
    "square": (lambda t: t ** 2, np.square), "abs": (torch.abs, np.abs),
}


@pytest.mark.parametrize("d", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_are_float32_math_rounded(d, name):
    fn, ref = UNARY[name]
    x32 = rounded(_X, d).astype(np.float32)  # the dtype's own values of the inputs
    assert_rounded_close(fn(torch.tensor(_X, dtype=d)), ref(x32).astype(np.float32), d)


BINARY = {
    "add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply), "div": (lambda a, b: a / b, np.divide),
    "maximum": (torch.maximum, np.maximum), "pow": (lambda a, b: a.abs() ** b,
                                                    lambda a, b: np.abs(a) ** b),
    "scalar_mul": (lambda a, b: a * 2.7, lambda a, b: a * np.float32(2.7)),
    "rscalar_sub": (lambda a, b: 1.3 - a, lambda a, b: np.float32(1.3) - a),
    "scalar_div": (lambda a, b: a / 3, lambda a, b: a / np.float32(3)),
}


@pytest.mark.parametrize("d", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_are_float32_math_rounded(d, name):
    fn, ref = BINARY[name]
    x32, y32 = (rounded(a, d).astype(np.float32) for a in (_X, _Y))
    assert_rounded_close(fn(torch.tensor(_X, dtype=d), torch.tensor(_Y, dtype=d)),
                         ref(x32, y32).astype(np.float32), d)


@pytest.mark.parametrize("d", LOW, ids=str)
def test_inplace_with_scalars_keeps_dtype(d):
    x = torch.tensor([1.0, 2.0], dtype=d)
    x.add_(0.1)
    x.mul_(3)
    x.sub_(torch.tensor(0.5, dtype=d))
    assert x.dtype is d
    step = rounded(rounded([1.0, 2.0], d) + np.float32(0.1), d)
    step = rounded(step * 3, d)
    np.testing.assert_array_equal(values(x), rounded(step - 0.5, d))


@pytest.mark.parametrize("d", LOW, ids=str)
def test_sum_and_mean_accumulate_in_float32(d):
    # 1000 ones: an accumulator of the dtype itself would stall at 256 (bfloat16) / 2048
    ones = torch.ones(1000, dtype=d)
    assert ones.sum().dtype is d and ones.sum().item() == 1000.0
    assert torch.ones(3000, dtype=d).sum().item() == float(rounded(3000.0, d))
    np.testing.assert_array_equal(values(torch.ones(3000, 2, dtype=d).sum(0)),
                                  rounded([3000.0, 3000.0], d))  # numpy's own: 2048 for float16
    x = torch.tensor(_X, dtype=d)
    x32 = rounded(_X, d).astype(np.float32)
    assert_rounded_close(x.sum(1), x32.sum(1), d)
    assert_rounded_close(x.sum(), x32.sum(), d)
    assert_rounded_close(x.mean(0), x32.mean(0), d, ulps=2)  # sum rounded, then divided
    assert_rounded_close(x.prod(1), x32.prod(1), d)
    assert x.amax().item() == float(x32.max()) and x.argmin().item() == int(x32.argmin())


@pytest.mark.parametrize("d", LOW, ids=str)
def test_matmul_in_float32_then_rounded(d):
    a, b = np.linspace(-1, 1, 24).reshape(4, 6), np.linspace(2, -1, 18).reshape(6, 3)
    a32, b32 = (rounded(v, d).astype(np.float32) for v in (a, b))
    ta, tb = torch.tensor(a, dtype=d), torch.tensor(b, dtype=d)
    assert_rounded_close(ta @ tb, a32 @ b32, d)
    assert_rounded_close(ta[0] @ tb[:, 1], a32[0] @ b32[:, 1], d)
    assert_rounded_close(torch.matmul(ta.reshape(2, 2, 6), tb), (a32.reshape(2, 2, 6) @ b32), d)


@pytest.mark.parametrize("d", LOW, ids=str)
def test_composites_run_in_the_dtype(d):
    x = torch.tensor(_X, dtype=d)
    for out in (x.softmax(-1), x.var(1), torch.where(x > 0, x, 0.0), torch.cat([x, x]),
                x[:, 1:3].t(), x.reshape(8).flip(0), nn.functional.layer_norm(x, (4,))):
        assert out.dtype is d
    x64 = rounded(_X, d)
    sm = np.exp(x64 - x64.max(-1, keepdims=True))
    sm /= sm.sum(-1, keepdims=True)
    np.testing.assert_allclose(values(x.softmax(-1)), sm, rtol=4 * EPS[d])


def test_bfloat16_constant_folding_rounds_like_eager():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)
    v = np.concatenate([v, [3.3895313892515355e+38, 3.4e38, -1e39, 1e-40, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf in the reference
        want = v.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal([round_float(float(a), dt.bfloat16) for a in v], want)


# ----------------------------------------------------------------------------- printing

def test_printing_matches_pytorch():
    assert repr(torch.tensor([1.0, 2.5, 3.14159, -1e-3], dtype=B)) == (
        "tensor([ 1.0000e+00,  2.5000e+00,  3.1406e+00, -9.9945e-04],\n"
        "       dtype=torch.bfloat16)")
    assert repr(torch.tensor([1.0, 2.5, 3.14159, -1e-3], dtype=H)) == (
        "tensor([ 1.0000e+00,  2.5000e+00,  3.1406e+00, -1.0004e-03],\n"
        "       dtype=torch.float16)")
    assert repr(torch.tensor([1.0, 2.0], dtype=B)) == "tensor([1., 2.], dtype=torch.bfloat16)"
    assert repr(torch.tensor(3.14159, dtype=H)) == "tensor(3.1406, dtype=torch.float16)"
    assert repr(torch.tensor([1e5, 1.0], dtype=B)) == (
        "tensor([9.9840e+04, 1.0000e+00], dtype=torch.bfloat16)")
    assert repr(torch.tensor([1e5, 1.0], dtype=H)) == "tensor([inf, 1.], dtype=torch.float16)"
    assert repr(torch.tensor([[0.1, 200.3], [1e-4, 5]], dtype=B, requires_grad=True)) == (
        "tensor([[1.0010e-01, 2.0000e+02],\n"
        "        [1.0014e-04, 5.0000e+00]], dtype=torch.bfloat16, requires_grad=True)")
    assert repr(torch.tensor([], dtype=B)) == "tensor([], dtype=torch.bfloat16)"
    assert repr(torch.tensor([math.inf, math.nan, 1.5], dtype=B)) == (
        "tensor([   inf,    nan, 1.5000], dtype=torch.bfloat16)")
    assert repr(torch.arange(12, dtype=B).reshape(3, 4) / 3) == (
        "tensor([[0.0000, 0.3340, 0.6680, 1.0000],\n"
        "        [1.3359, 1.6641, 2.0000, 2.3281],\n"
        "        [2.6719, 3.0000, 3.3281, 3.6719]], dtype=torch.bfloat16)")
    assert repr(torch.tensor(0.1, dtype=B, requires_grad=True) * 2) == (
        "tensor(0.2002, dtype=torch.bfloat16, grad_fn=<MulBackward0>)")
    assert repr(torch.full((2,), 3.0, dtype=B) / 7) == (
        "tensor([0.4277, 0.4277], dtype=torch.bfloat16)")
    assert repr(torch.tensor([0.1, 0.2, 0.3], dtype=H)) == (
        "tensor([0.1000, 0.2000, 0.3000], dtype=torch.float16)")
    assert str(B) == "torch.bfloat16"


# ----------------------------------------------------------------------------- autograd

def _mlp_grads(d, seed=0):
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (8, 6))
    target = rng.uniform(-1, 1, (8, 3))
    m = m.to(d)
    loss = ((m(torch.tensor(x, dtype=d)) - torch.tensor(target, dtype=d)) ** 2).mean()
    loss.backward()
    return m, loss


@pytest.mark.parametrize("d", LOW, ids=str)
def test_mlp_gradients_in_the_dtype(d):
    m, loss = _mlp_grads(d)
    ref, ref_loss = _mlp_grads(F64)
    assert loss.dtype is d
    assert abs(loss.item() - ref_loss.item()) <= 0.05 * abs(ref_loss.item())
    for p, q in zip(m.parameters(), ref.parameters()):
        assert p.grad is not None and p.grad.dtype is d
        g, want = values(p.grad), values(q.grad)
        # the weights themselves were rounded to d: loose, relative to the largest component
        np.testing.assert_allclose(g, want, atol=0.08 * np.abs(want).max() + 1e-3)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    opt.step()
    assert all(p.dtype is d for p in m.parameters())


@pytest.mark.parametrize("d", LOW, ids=str)
def test_elementwise_gradient_matches_float32_rule(d):
    x = torch.tensor([0.5, -1.25, 2.0], dtype=d, requires_grad=True)
    (x.exp() * x).sum().backward()
    x32 = rounded([0.5, -1.25, 2.0], d)
    assert x.grad.dtype is d
    np.testing.assert_allclose(values(x.grad), np.exp(x32) * (x32 + 1), rtol=4 * EPS[d])


# ----------------------------------------------------------------------------- compile

def _fn(a, b):
    h = torch.tanh(a @ b + 0.5) * a.sum(-1, keepdim=True)
    return h.softmax(-1) + h.exp().mean()


@pytest.mark.parametrize("d", LOW, ids=str)
def test_compiled_equals_eager(d):
    rng = np.random.default_rng(1)
    a = torch.tensor(rng.uniform(-1, 1, (3, 4)), dtype=d)
    b = torch.tensor(rng.uniform(-1, 1, (4, 4)), dtype=d)
    cf = torch.compile(_fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break either
        first, second = cf(a, b), cf(a, b)
    want = _fn(a, b)
    for got in (first, second):
        assert got.dtype is d
        np.testing.assert_array_equal(values(got), values(want))


@pytest.mark.parametrize("d", LOW, ids=str)
def test_compiled_gradients_equal_eager(d):
    def loss_fn(w, x):
        return (torch.sigmoid(x @ w) ** 2).sum()

    rng = np.random.default_rng(2)
    x = torch.tensor(rng.uniform(-1, 1, (5, 3)), dtype=d)
    grads = []
    for fn in (loss_fn, torch.compile(loss_fn)):
        w = torch.tensor(rng.uniform(-1, 1, (3, 2)), dtype=d, requires_grad=True) \
            if not grads else torch.tensor(grads[0][0], dtype=d, requires_grad=True)
        loss = fn(w, x)
        loss.backward()
        grads.append((values(w), values(loss), values(w.grad)))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- save / load

@pytest.mark.parametrize("d", LOW, ids=str)
def test_save_load_round_trip(d):
    x = torch.tensor(_X, dtype=d)
    m = nn.Linear(4, 2).to(d)
    buf = io.BytesIO()
    torch.save({"x": x, "view": x[:, 1:3], "m": m.state_dict()}, buf)
    buf.seek(0)
    out = torch.load(buf)
    assert out["x"].dtype is d and torch.equal(out["x"], x)
    assert out["view"].dtype is d and torch.equal(out["view"], x[:, 1:3])
    m2 = nn.Linear(4, 2).to(d)
    m2.load_state_dict(out["m"])
    assert m2.weight.dtype is d and torch.equal(m2.weight, m.weight)


def _add_one(q, r):
    t = q.get()
    r.put((t.dtype.name, t.tolist()))
    t.add_(1)


def test_shared_memory_between_processes_keeps_bfloat16():
    import fusetorch.multiprocessing as mp
    ctx = mp.get_context("fork")
    q, r = ctx.Queue(), ctx.Queue()
    x = torch.tensor([1.5, 2.25], dtype=B)
    p = ctx.Process(target=_add_one, args=(q, r))
    p.start()
    q.put(x)
    assert r.get(timeout=60) == ("bfloat16", [1.5, 2.25])
    p.join(60)
    assert p.exitcode == 0 and x.dtype is B and x.tolist() == [2.5, 3.25]  # the same memory
