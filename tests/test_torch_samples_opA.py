"""Regressions from PyTorch 2.13's OpInfo samples, op_db entries 0 to 350
(tools/torch_opinfo_check.py, issue 26).

Expected values are PyTorch's documented or derivatives.yaml formulas (checked by hand in a
PyTorch 2.13 CPU venv) evaluated here in numpy float64 or Python, never read from fusetorch.
Each case runs eagerly and compiled.
"""
import math

import numpy as np
import pytest

import fusetorch as torch

NAN, INF = math.nan, math.inf


def _grads(fn, arrays, cot, compiled):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out = (torch.compile(fn) if compiled else fn)(*ts)
    return [g.numpy() for g in torch.autograd.grad(out, ts, torch.tensor(cot))]


@pytest.mark.parametrize("compiled", [False, True])
def test_remainder_gradient_for_the_divisor_is_minus_the_exact_floor(compiled):
    # d remainder(a, b) / db = -div(a, b, rounding_mode="floor"), the floor of the exact quotient
    # (1.0 / 0.1 rounds to 10.0, but 0.1 fits 9 times: Python's // computes the same floor)
    a = np.array([1.0, 7.0, -1.0, 5.5, 0.3, -0.7])
    b = np.array([0.1, 0.7, 0.1, -2.0, 0.1, 0.1])
    cot = np.array([1.0, 2.0, -1.0, 0.5, 3.0, 1.5])
    ga, gb = _grads(torch.remainder, [a, b], cot, compiled)
    np.testing.assert_array_equal(ga, cot)
    np.testing.assert_array_equal(gb, -cot * np.array([float(x // y) for x, y in zip(a, b)]))


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", ["maximum", "minimum", "max", "min"])
def test_maximum_minimum_pass_the_whole_gradient_to_both_sides_at_nan(name, compiled):
    # derivatives.yaml: self: where(self == other, grad / 2, grad).masked_fill_(self < other, 0)
    # (maximum; `>` for minimum): at a NaN neither test holds, so both sides get `grad`
    x = np.array([INF, INF, INF, -INF, -INF, NAN, NAN, 1.0, 2.0, NAN, 3.0, -1.0])
    y = np.array([INF, -INF, NAN, INF, -INF, INF, NAN, 1.0, NAN, 2.0, 1.0, 0.0])
    cot = np.arange(1.0, 13.0)
    loses = np.less if name in ("maximum", "max") else np.greater
    with np.errstate(invalid="ignore"):
        tie = x == y
        gx = np.where(tie, cot / 2, np.where(loses(x, y), 0.0, cot))
        gy = np.where(tie, cot / 2, np.where(loses(y, x), 0.0, cot))
    got = _grads(lambda a, b: getattr(torch, name)(a, b), [x, y], cot, compiled)
    np.testing.assert_array_equal(got[0], gx)
    np.testing.assert_array_equal(got[1], gy)


def _igamma_edges(a: float, x: float, upper: bool) -> float:
    """PyTorch's calc_igamma/calc_igammac: these tests, in this order, before any series."""
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    if x < 0 or a < 0:
        return NAN
    if a == 0:
        return hi if x > 0 else NAN
    if x == 0:
        return lo
    if math.isinf(a):
        return NAN if math.isinf(x) else lo
    if math.isinf(x):
        return hi
    return NAN  # the series of a NaN


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_follows_pytorchs_edge_rules_at_nan(name, dtype, compiled):
    pairs = [(NAN, 0.0), (NAN, -0.0), (NAN, INF), (INF, NAN), (NAN, NAN), (NAN, 1.0), (1.0, NAN),
             (NAN, -INF), (-INF, NAN), (0.0, NAN), (NAN, -1.0)]
    a = torch.tensor([p[0] for p in pairs], dtype=getattr(torch, dtype))
    x = torch.tensor([p[1] for p in pairs], dtype=getattr(torch, dtype))
    fn = getattr(torch, name)
    got = (torch.compile(fn) if compiled else fn)(a, x)
    want = [_igamma_edges(p, q, name == "igammac") for p, q in pairs]
    np.testing.assert_array_equal(got.numpy(), np.array(want, dtype=dtype))
    assert got.dtype == a.dtype


def test_python2_division_names_are_division():
    t = torch.tensor([1.0, 2.0, 4.0, -0.5])
    np.testing.assert_array_equal(t.__rdiv__(2).numpy(), np.float32(2) / t.numpy())
    np.testing.assert_array_equal(t.__div__(2).numpy(), t.numpy() / np.float32(2))
    i = torch.tensor([1, 2, 4])
    assert i.__rdiv__(2).dtype == torch.float32  # true division, as PyTorch's
    np.testing.assert_array_equal(i.__rdiv__(2).numpy(), np.array([2.0, 1.0, 0.5], np.float32))


def _source_index(n_in: int, n_out: int, o: int, np_t) -> float:
    """PyTorch's area_pixel_compute_source_index without align_corners, its
    `scale * (o + 0.5) - 0.5` rounded once (the compiler contracts it to a fused multiply-add),
    scale = in / out in the input's dtype: exact in Fractions, then rounded."""
    from fractions import Fraction
    scale = np_t(n_in) / np_t(n_out)
    return max(np_t(float(Fraction(float(scale)) * Fraction(2 * o + 1, 2) - Fraction(1, 2))), 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n_in, n_out", [(345, 270), (456, 270), (10, 7), (7, 10)])
def test_linear_interpolation_weights_are_pytorchs_fused_source_index(n_in, n_out, dtype):
    # input 0, 1, 0, 1, ... (and its complement): each output is 0 * w0 + 1 * w1 for the
    # complement whose i0 + 1 is the 1, i.e. the weight lambda = src - floor(src) itself
    np_t = getattr(np, dtype)
    src = np.array([_source_index(n_in, n_out, o, np_t) for o in range(n_out)], dtype=dtype)
    i0 = np.floor(src).astype(np.int64)
    lam = (src - i0.astype(dtype)).astype(dtype)
    odd = np.arange(n_in) % 2
    for ramp, parity in ((odd, 0), (1 - odd, 1)):
        x = torch.tensor(ramp.astype(dtype).reshape(1, 1, n_in))
        got = torch.nn.functional.interpolate(x, size=n_out, mode="linear").numpy().reshape(-1)
        pick = (i0 % 2 == parity) & (i0 < n_in - 1)
        np.testing.assert_array_equal(got[pick], lam[pick])


def _aa_matrix(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """[n_out, n_in] weights of PyTorch's antialiased resampling (the PIL-style filter its docs
    name: the triangle, or Keys' cubic with a = -0.5, widened by the downscale factor, each row
    normalised), written as plain float64 loops."""
    scale = n_in / n_out
    half = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]
    support = half * scale if scale >= 1 else half
    stretch = 1 / scale if scale >= 1 else 1.0

    def f(x):
        x = abs(x)
        if mode == "bilinear":
            return max(0.0, 1 - x)
        if mode == "lanczos":  # Lanczos-3 (the docs: PIL's Image.LANCZOS)
            sinc = lambda v: 1.0 if v == 0 else math.sin(math.pi * v) / (math.pi * v)  # noqa: E731
            return sinc(x) * sinc(x / 3) if x < 3 else 0.0
        a = -0.5
        if x < 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        return (((x - 5) * x + 8) * x - 4) * a if x < 2 else 0.0

    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        c = scale * (i + 0.5)
        for j in range(max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n_in)):
            w[i, j] = f((j - c + 0.5) * stretch)
        w[i] /= w[i].sum()
    return w


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("hw, out", [((9, 10), (4, 3)), ((5, 4), (7, 9)), ((7, 7), (1, 2))])
def test_antialiased_interpolation_is_the_normalised_filter(mode, hw, out):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(hw)
    wh, ww = _aa_matrix(hw[0], out[0], mode), _aa_matrix(hw[1], out[1], mode)
    g = rng.standard_normal(out)
    for compiled in (False, True):
        t = torch.tensor(x.reshape(1, 1, *hw), requires_grad=True)
        fn = lambda v: torch.nn.functional.interpolate(v, size=out, mode=mode, antialias=True)  # noqa: E731
        y = (torch.compile(fn) if compiled else fn)(t)
        np.testing.assert_allclose(y.detach().numpy()[0, 0], wh @ x @ ww.T, rtol=1e-12, atol=1e-14)
        (gx,) = torch.autograd.grad(y, [t], torch.tensor(g.reshape(1, 1, *out)))
        np.testing.assert_allclose(gx.numpy()[0, 0], wh.T @ g @ ww, rtol=1e-12, atol=1e-14)
    # an infinite input reaches only the outputs whose filter covers it
    xi = x.copy()
    xi[0, 0] = np.inf
    y = torch.nn.functional.interpolate(torch.tensor(xi.reshape(1, 1, *hw)), size=out, mode=mode,
                                        antialias=True).numpy()[0, 0]
    covered = (wh[:, :1] != 0) @ (ww[:, :1] != 0).T
    assert not np.isnan(y[~covered]).any() and np.isfinite(y[~covered]).all()


@pytest.mark.parametrize("dtype, name", [("int64", "Long"), ("int32", "Int"), ("bool", "Bool"),
                                         ("uint8", "Byte")])
def test_hypot_of_two_integer_tensors_is_pytorchs_missing_kernel(dtype, name):
    a = torch.tensor([3, 1], dtype=getattr(torch, dtype))
    with pytest.raises(NotImplementedError, match=f"\"hypot_cpu\" not implemented for '{name}'"):
        torch.hypot(a, a)
    # one floating operand: the float kernel, as PyTorch's result type says
    np.testing.assert_allclose(torch.hypot(a, torch.tensor([4.0, 0.0])).numpy(),
                               np.hypot(a.numpy().astype(np.float64), [4.0, 0.0]), rtol=1e-7)


@pytest.mark.parametrize("name, args", [("max", (1,)), ("min", (1,)), ("kthvalue", (2, 1)),
                                        ("sort", (1,)), ("topk", (2,)), ("median", (1,)),
                                        ("mode", (1,)), ("cummax", (1,))])
def test_out_calls_return_pytorchs_out_named_tuples(name, args):
    # PyTorch: torch.kthvalue(x, 2, 1, out=o) is a torch.return_types.kthvalue_out holding o
    x = torch.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, 4.0]])
    o = (torch.empty(0), torch.empty(0, dtype=torch.int64))
    r = getattr(torch, name)(x, *args, out=o)
    assert type(r).__name__ == f"{name}_out" and type(r) is getattr(torch.return_types, f"{name}_out")
    assert not isinstance(r, getattr(torch.return_types, name))
    assert r[0] is o[0] and r[1] is o[1] and r.values is o[0] and r.indices is o[1]
    assert repr(r).startswith(f"torch.return_types.{name}_out(\nvalues=tensor(")
    plain = getattr(torch, name)(x, *args)
    np.testing.assert_array_equal(r.values.numpy(), plain.values.numpy())


def test_aminmax_out_is_an_aminmax_out():
    x = torch.tensor([[3.0, 1.0, 2.0]])
    o = (torch.empty(0), torch.empty(0))
    r = torch.aminmax(x, dim=1, out=o)
    assert type(r) is torch.return_types.aminmax_out
    assert r.min is o[0] and r.max is o[1] and r.min.tolist() == [1.0] and r.max.tolist() == [3.0]


def test_interpolate_refusals_are_pytorchs():
    F = torch.nn.functional
    x = torch.zeros(1, 1, 5, 7)
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        F.interpolate(x, size=(3, 3), mode="lanczos")
    with pytest.raises(ValueError, match="Lanczos mode does not support align_corners=True"):
        F.interpolate(x, size=(3, 3), mode="lanczos", antialias=True, align_corners=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(torch.zeros(1, 2, 7), size=4, mode="lanczos", antialias=True)
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D .*\(got lanczos\)"):
        F.interpolate(torch.zeros(1, 2, 7), size=4, mode="lanczos")
    with pytest.raises(NotImplementedError,
                       match="\"compute_index_ranges_weights\" not implemented for 'Int'"):
        F.interpolate(x.int(), size=(3, 3), mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="uint8 input .* not supported by fusetorch"):
        F.interpolate(x.to(torch.uint8), size=(3, 3), mode="bilinear")


_BF16 = [-8.5, -8.25, 1.5, 2.703125, 0.30078125, NAN, -3.203125, 300.0, -0.5, 2.5, -INF]


@pytest.mark.parametrize("name, ref", [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                                       ("round", np.rint), ("frac", lambda v: v - np.trunc(v))])
def test_bfloat16_rounding_rounds(name, ref):
    # the values are bfloat16's own, and so are their floors, ceils, ... (|x| < 2**8)
    got = getattr(torch, name)(torch.tensor(_BF16, dtype=torch.bfloat16))
    assert got.dtype == torch.bfloat16
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got.float().numpy().astype(np.float64), ref(np.array(_BF16)))


def test_bfloat16_running_max_keeps_a_nan_and_casts_wrap_as_pytorchs():
    x = torch.tensor(_BF16[:10], dtype=torch.bfloat16)
    r = torch.cummax(x, 0)  # docs: NaN propagates, and its index is the NaN's
    a = np.array(_BF16[:10])
    want = np.where(np.arange(10) >= 5, NAN, np.maximum.accumulate(np.where(np.isnan(a), -INF, a)))
    np.testing.assert_array_equal(r.values.float().numpy(), want)
    np.testing.assert_array_equal(r.indices.numpy(), [0, 1, 2, 3, 3, 5, 5, 5, 5, 5])
    # to integers: truncated toward zero, then wrapped to the width (PyTorch's CPU: -3.2 -> 253)
    finite = torch.tensor([v for v in _BF16 if math.isfinite(v)], dtype=torch.bfloat16)
    whole = np.trunc([v for v in _BF16 if math.isfinite(v)]).astype(np.int64)
    np.testing.assert_array_equal(finite.to(torch.uint8).numpy(), whole % 256)
    np.testing.assert_array_equal(finite.to(torch.int8).numpy(), (whole + 128) % 256 - 128)
    np.testing.assert_array_equal(finite.to(torch.int64).numpy(), whole)
    np.testing.assert_array_equal(torch.nan_to_num(x).float().numpy(),
                                  np.nan_to_num(a, nan=0.0).astype(np.float32))
    # inf becomes bfloat16's largest value, 2**128 (1 - 2**-8)
    assert torch.nan_to_num(torch.tensor([INF], dtype=torch.bfloat16)).item() == 2.0 ** 128 * (1 - 2.0 ** -8)


def test_softmin_negates_in_the_input_dtype_before_the_dtype_argument():
    # PyTorch: (-input).softmax(dim, dtype): -x of uint8 wraps to (256 - x) % 256, so 0 stays 0
    x = np.array([[0, 200, 3, 255]], dtype=np.uint8)
    got = torch.nn.functional.softmin(torch.tensor(x), 1, dtype=torch.float64).numpy()
    neg = ((256 - x.astype(np.int64)) % 256).astype(np.float64)
    e = np.exp(neg - neg.max())
    np.testing.assert_allclose(got, e / e.sum(), rtol=1e-13)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_half_precision_addcmul_addcdiv_round_once(name, half):
    # PyTorch's CPU kernel computes reduced floats in float32 (its opmath): input + value *
    # tensor1 (*|/) tensor2 in that order, one rounding to the half dtype at the end
    import ml_dtypes
    np_half = ml_dtypes.bfloat16 if half == "bfloat16" else np.float16
    rng = np.random.default_rng(3)
    a, b, c = (rng.uniform(0.5, 2.0, (6, 7)).astype(np_half) for _ in range(3))
    op = np.multiply if name == "addcmul" else np.divide
    f32 = lambda v: v.astype(np.float32)  # noqa: E731
    want = (f32(a) + op(np.float32(3.14) * f32(b), f32(c))).astype(np_half)
    dtype = getattr(torch, half)
    t = lambda v: torch.tensor(v.astype(np.float32)).to(dtype)  # noqa: E731
    got = getattr(torch, name)(t(a), t(b), t(c), value=3.14)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.float().numpy(), f32(want))


def test_reversed_operators_called_unbound_on_a_number_do_what_pytorchs_do():
    # torch/_tensor.py: __rdiv__ (= __rtruediv__) is `self.reciprocal() * other`, and __rsub__'s
    # TypeError becomes NotImplemented
    t = torch.tensor([1, 2, 3])
    with pytest.raises(AttributeError, match="'int' object has no attribute 'reciprocal'"):
        torch.Tensor.__rdiv__(2, t)
    with pytest.raises(AttributeError, match="'float' object has no attribute 'reciprocal'"):
        torch.Tensor.__rtruediv__(2.0, t)
    assert torch.Tensor.__rsub__(2, t) is NotImplemented
    np.testing.assert_array_equal((2 - t).numpy(), [1, 0, -1])


@pytest.mark.parametrize("fn", [lambda x, p: torch.linalg.vector_norm(x, p),
                                lambda x, p: torch.dist(x, torch.zeros_like(x), p),
                                lambda x, p: x.norm(p)])
@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_precision_norms_accumulate_past_the_dtypes_range(fn, half):
    # PyTorch accumulates |x|^p in float32: 125 * 9^4 = 820125 passes float16's 65504, the
    # 4-norm (30.09) does not; so with 3 * 300^2 for the 2-norm
    import ml_dtypes
    np_half = ml_dtypes.bfloat16 if half == "bfloat16" else np.float16
    for value, n, p in ((9.0, 125, 4), (300.0, 3, 2)):
        x = torch.full((n,), value, dtype=getattr(torch, half))
        got = fn(x, p)
        assert got.dtype == x.dtype
        assert float(got) == float(np_half((n * value ** p) ** (1 / p)))


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_precision_sinc_is_within_an_ulp(half):
    # PyTorch computes sin(pi x) / (pi x) in float32: rounding pi x to the half dtype first
    # moved sin(pi x) by up to 0.016 at x ~ 9 (4 float16 ulps of the result)
    x = torch.linspace(5.0, 9.0, 97).to(getattr(torch, half))
    exact = np.sinc(x.float().numpy().astype(np.float64))
    got = torch.sinc(x).float().numpy().astype(np.float64)
    eps = 2.0 ** (-10 if half == "float16" else -7)  # one ulp, relative
    assert torch.sinc(x).dtype == x.dtype
    # (at the integers float32's sin(pi n) is ~1e-7, not 0: an absolute allowance)
    assert np.all(np.abs(got - exact) <= eps * np.abs(exact) + 1e-6)


@pytest.mark.parametrize("start, end, steps", [(-2.0, 1.0, 50), (-2.0, 4.0, 50), (3.0, -7.5, 33)])
def test_float16_linspace_rounds_as_half_arithmetic(start, end, steps):
    # PyTorch's CPU kernel in c10::Half: step = (end - start) / (steps - 1) rounded to half, then
    # start + step * i (the product rounded, then the sum), the second half counted from end
    h = np.float16
    step = h((end - start) / (steps - 1))
    i = np.arange(steps)
    want = np.where(i < steps // 2, h(h(step * h(i)) + h(start)),
                    h(h(end) - h(step * h(steps - 1 - i))))
    got = torch.linspace(start, end, steps, dtype=torch.float16)
    np.testing.assert_array_equal(got.numpy(), want)
