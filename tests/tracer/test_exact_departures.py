"""Departures from PyTorch 2.13 found by hand after the OpInfo checker passed, each observed in
PyTorch by hand (torch is not imported here); values from Python floats or numpy float64."""
import math

import numpy as np
import pytest

import fusetorch as torch


def _signs(t) -> list:
    return [math.copysign(1.0, v) for v in t.reshape(-1).tolist()]


# remainder's zero keeps the dividend's sign (ATen: fmod, then moved onto the divisor's sign only
# where nonzero), so remainder(-2., 1.) is -0.0; a nonzero result takes the divisor's sign.
ZEROS = [(-2.0, 1.0, -1.0), (2.0, -1.0, 1.0), (-0.0, 1.0, -1.0), (0.0, -1.0, 1.0), (3.0, 1.5, 1.0),
         (-3.0, -1.5, -1.0)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_remainder_zero_takes_the_dividend_sign(dtype):
    a = torch.tensor([z[0] for z in ZEROS], dtype=dtype)
    b = torch.tensor([z[1] for z in ZEROS], dtype=dtype)
    for r in (torch.remainder(a, b), a % b, torch.compile(lambda u, v: u % v)(a, b)):
        assert r.tolist() == [0.0] * len(ZEROS)
        assert _signs(r) == [z[2] for z in ZEROS]
    assert _signs(torch.remainder(torch.tensor(-2.0), 1.0)) == [-1.0]  # 0-d, scalar divisor
    assert torch.remainder(torch.zeros(0, 3), 2.0).shape == (0, 3)


def test_remainder_nonzero_values_follow_python():
    rng = np.random.default_rng(0)
    a = rng.uniform(-9, 9, (6, 8))
    b = rng.uniform(-3, 3, (8, 6)).T  # non-contiguous divisor
    got = torch.remainder(torch.tensor(a), torch.tensor(b)).numpy()
    want = np.array([[x % y for x, y in zip(r, s)] for r, s in zip(a.tolist(), b.tolist())])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert (np.sign(got) == np.sign(want)).all()


def _bools():
    return torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])


# ATen has pow(bool tensor, Scalar) but no bool kernel for a tensor exponent
@pytest.mark.parametrize("call", [lambda a, b: a ** b, lambda a, b: torch.pow(a, b),
                                  lambda a, b: True ** b, lambda a, b: a ** torch.tensor(True),
                                  lambda a, b: a.clone().pow_(b)],
                         ids=["**", "pow", "scalar base", "0-d exponent", "pow_"])
def test_bool_tensor_power_is_refused(call):
    a, b = _bools()
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        call(a, b)


def test_bool_tensor_to_a_bool_scalar():
    a, _ = _bools()
    assert (a ** True).dtype == torch.bool and (a ** True).tolist() == a.tolist()
    assert (a ** False).tolist() == [True] * 4  # x ** 0 is 1
    assert (a ** 2).dtype == torch.int64 and (a ** 2).tolist() == [1, 0, 1, 0]
    assert (a[:0] ** True).shape == (0,)


# ATen's clamp kernels have no bool case; one tensor bound is maximum/minimum, which has one
CLAMP_REFUSED = {
    "min scalar": (lambda a: a.clamp(min=True), "clamp_min_scalar_cpu"),
    "max scalar": (lambda a: torch.clamp(a, max=False), "clamp_max_scalar_cpu"),
    "both scalars": (lambda a: torch.clamp(a, False, True), "clamp_scalar_cpu"),
    "scalar and 0-d": (lambda a: torch.clamp(a, True, torch.tensor(True)), "clamp_scalar_cpu"),
    "two tensors": (lambda a: torch.clamp(a, torch.ones(4, dtype=torch.bool),
                                          torch.tensor(False)), "clamp_cpu"),
    "clamp_min": (lambda a: torch.clamp_min(a, True), "clamp_min_scalar_cpu"),
    "clip": (lambda a: a.clip(True), "clamp_min_scalar_cpu"),
    "in place": (lambda a: a.clamp_(min=True), "clamp_min_scalar_cpu"),
    "0-d": (lambda a: a[0].clamp(True), "clamp_min_scalar_cpu"),
    "zero-size": (lambda a: a[:0].clamp(True), "clamp_min_scalar_cpu"),
}


@pytest.mark.parametrize("name", list(CLAMP_REFUSED))
def test_bool_clamp_is_refused(name):
    call, kernel = CLAMP_REFUSED[name]
    with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Bool'"):
        call(_bools()[0])


def test_bool_clamp_by_one_tensor_or_to_integers():
    a, b = _bools()
    an, bn = a.numpy(), b.numpy()
    assert torch.clamp(a, min=b).tolist() == np.maximum(an, bn).tolist()
    assert torch.clamp_max(a[::2], b[1::2]).tolist() == np.minimum(an[::2], bn[1::2]).tolist()
    r = torch.clamp(a, 0, 1)  # an int bound: int64, which has a kernel
    assert r.dtype == torch.int64 and r.tolist() == an.astype(np.int64).tolist()


@pytest.mark.parametrize("call", [lambda a, b: torch.addcmul(a, a, b),
                                  lambda a, b: a.addcmul(a, b, value=True),
                                  lambda a, b: a.clone().addcmul_(b, b),
                                  lambda a, b: torch.addcmul(a[0], a[0], b[0])])
def test_bool_addcmul_is_refused(call):
    with pytest.raises(NotImplementedError, match="\"addcmul_cpu_out\" not implemented for"):
        call(*_bools())


def test_bool_addcmul_beside_an_integer_is_integer():
    a, b = _bools()
    r = torch.addcmul(a, torch.tensor([2, 2, 2, 2]), b)
    assert r.dtype == torch.int64
    assert r.tolist() == (a.numpy() + 2 * b.numpy().astype(np.int64)).tolist()


@pytest.mark.parametrize("alpha", [2, -1, 0, False, True])
def test_bool_add_alpha_is_a_bool(alpha):
    """add(bool, bool, alpha) stays bool, alpha read as a bool (PyTorch: [T, F] + 2 * [T, T] is
    [T, T]); a Python bool operand too; an int operand makes it int64."""
    a, b = _bools()
    want = (a.numpy() | (b.numpy() & bool(alpha))).tolist()
    for r in (a.add(b, alpha=alpha), torch.add(a, b, alpha=alpha), a.clone().add_(b, alpha=alpha)):
        assert r.dtype == torch.bool and r.tolist() == want
    r = a.add(True, alpha=alpha)
    assert r.dtype == torch.bool and r.tolist() == (a.numpy() | bool(alpha)).tolist()
    assert a[0].add(b[1], alpha=alpha).tolist() == want[0]
    assert torch.add(a, 1, alpha=2).tolist() == (a.numpy() + 2).tolist()


# In place, the operands' result type must be writable before a kernel is looked for
CAST_FIRST = {
    "b &= 1.5": (lambda: torch.tensor([True, False]).__iand__(1.5), "Float", "Bool"),
    "b |= float tensor": (lambda: torch.tensor([True]).__ior__(torch.tensor([1.5])), "Float",
                          "Bool"),
    "i ^= 1.5": (lambda: torch.tensor([1, 2]).__ixor__(1.5), "Float", "Long"),
    "i <<= 1.5": (lambda: torch.tensor([1, 2]).__ilshift__(1.5), "Float", "Long"),
    "i.gcd_(float)": (lambda: torch.tensor([4]).gcd_(torch.tensor([2.0])), "Float", "Long"),
    "i.lcm_(double, 0-d)": (lambda: torch.tensor(4).lcm_(torch.tensor(2.0, dtype=torch.float64)),
                            "Double", "Long"),
}


@pytest.mark.parametrize("name", list(CAST_FIRST))
def test_in_place_cast_is_checked_before_the_kernel(name):
    call, src, dst = CAST_FIRST[name]
    with pytest.raises(RuntimeError, match=f"result type {src} can't be cast to the desired "
                                           f"output type {dst}"):
        call()


def test_in_place_bitwise_values_still_written():
    x = torch.tensor([6, 5, 0])
    x &= torch.tensor([3, 1, 7])
    assert x.tolist() == [6 & 3, 5 & 1, 0]
    b = torch.tensor([True, False])
    b |= True
    assert b.tolist() == [True, True]
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu"):
        torch.tensor([1.5]).__iand__(torch.tensor([1.0]))  # float self: castable, no kernel


def test_lerp_checks_dtypes_before_the_kernel():
    b, i = torch.tensor([True]), torch.tensor([1])
    with pytest.raises(RuntimeError, match="expected dtype bool for `end` but got dtype float"):
        b.lerp_(torch.tensor([1.5]), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype long int for `weight` but got dtype "
                                           "float"):
        i.lerp_(i, torch.tensor([0.5]))
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented for "
                                                  "'Long'"):
        torch.lerp(i, i, 0.5)


FLOAT_KERNELS_ONLY = {
    "logaddexp int": (lambda: torch.logaddexp(torch.tensor([1]), torch.tensor([2])),
                      '"logaddexp_cpu" not implemented for \'Long\''),
    "logaddexp bool": (lambda: torch.tensor([True]).logaddexp(torch.tensor([False])),
                       '"logaddexp_cpu" not implemented for \'Bool\''),
    "logaddexp2 bool int": (lambda: torch.logaddexp2(torch.tensor([True]), torch.tensor([2])),
                            '"logaddexp2_cpu" not implemented for \'Long\''),
    "frac int": (lambda: torch.frac(torch.tensor([3])), '"frac_cpu" not implemented for \'Long\''),
    "frac_ bool": (lambda: torch.tensor([True]).frac_(), '"frac_cpu" not implemented for \'Bool\''),
}


@pytest.mark.parametrize("name", list(FLOAT_KERNELS_ONLY))
def test_float_only_kernels_refuse_integers(name):
    call, message = FLOAT_KERNELS_ONLY[name]
    with pytest.raises(NotImplementedError, match=message):
        call()


def test_float_kernels_take_one_float_operand():
    a, b = np.array([0.5, -2.0, 30.0]), np.array([1, 2, 3])
    got = torch.logaddexp(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(got, np.logaddexp(a, b), rtol=1e-12)
    np.testing.assert_allclose(torch.frac(torch.tensor(a)).numpy(), a - np.trunc(a))


@pytest.mark.parametrize("call", [lambda b: torch.relu(b), lambda b: b.relu_(),
                                  lambda b: torch.nn.functional.relu(b, inplace=True),
                                  lambda b: torch.nn.ReLU()(b[0])])
def test_bool_relu_is_refused(call):
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        call(torch.tensor([True, False]))


def test_integer_relu_and_bool_mvlgamma():
    assert torch.relu(torch.tensor([-3, 0, 2])).tolist() == [0, 0, 2]
    with pytest.raises(RuntimeError, match="The input tensor may not be a boolean tensor."):
        torch.mvlgamma(torch.tensor([True]), 1)


# Writes into an expanded tensor: PyTorch refuses only a write whose target has a zero stride over
# several elements (assert_no_internal_overlap), and fill_/zero_/masked_fill_/index_fill_ (and
# advanced index_put_) skip even that: memory takes the value written, once per location.
def _expanded():
    x = torch.arange(4.0).reshape(1, 4)
    return x, x.expand(3, 4)


@pytest.mark.parametrize("value", [1.5, 0, True, -7])
def test_fill_writes_an_expanded_tensor(value):
    x, y = _expanded()
    v = y._version
    assert y.fill_(value) is y
    assert x.tolist() == [[float(value)] * 4] and y.tolist() == [[float(value)] * 4] * 3
    assert y._version == x._version == v + 1
    x, y = _expanded()
    y.zero_()
    assert x.tolist() == [[0.0] * 4]
    z = torch.zeros(()).expand(5)  # 0-d storage
    torch.fill_(z, 2)
    assert z.tolist() == [2.0] * 5
    w = torch.zeros(2, 1).expand(2, 3).t()  # permuted
    w.fill_(7)
    assert w.tolist() == [[7.0, 7.0]] * 3


def test_masked_fill_of_an_expanded_tensor_writes_where_any_alias_is_masked():
    x, y = _expanded()
    mask = np.zeros((3, 4), bool)
    mask[1, 2] = mask[2, 0] = True
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
        y.masked_fill_(torch.tensor(mask), -1.0)
    want = np.where(mask.any(0), -1.0, np.arange(4.0))
    assert x.numpy().tolist() == [want.tolist()]
    assert y.numpy().tolist() == [want.tolist()] * 3
    xi = torch.tensor([[1, 2, 3]])
    with pytest.warns(UserWarning):
        xi.expand(2, 3).masked_fill_(torch.tensor([True, False, False]), torch.tensor(9))
    assert xi.tolist() == [[9, 2, 3]]
    xn = torch.tensor([[float("nan"), 1.0]])  # a NaN not masked does not undo a masked alias
    with pytest.warns(UserWarning):
        xn.expand(2, 2).masked_fill_(torch.tensor([[True, False], [False, False]]), 5.0)
    assert xn.tolist() == [[5.0, 1.0]]


def test_index_fill_and_advanced_writes_of_an_expanded_tensor():
    x, y = _expanded()
    with pytest.warns(UserWarning, match="Use of index_fill_ on expanded tensors"):
        y.index_fill_(1, torch.tensor([1, 3]), 8.0)
    assert x.tolist() == [[0.0, 8.0, 2.0, 8.0]]
    x, y = _expanded()
    with pytest.warns(UserWarning, match="Use of index_put_ on expanded tensors"):
        y[torch.tensor([0]), torch.tensor([2])] = 5.0
    assert x.tolist() == [[0.0, 1.0, 5.0, 3.0]]


def test_a_basic_index_of_an_expanded_tensor_is_written_where_it_holds_each_element_once():
    x, y = _expanded()
    y[0, 1] = 3.0
    y[1] = torch.tensor([4.0, 5.0, 6.0, 7.0])
    assert x.tolist() == [[4.0, 5.0, 6.0, 7.0]]
    y[2].add_(1)
    assert x.tolist() == [[5.0, 6.0, 7.0, 8.0]]


OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


@pytest.mark.parametrize("write", [lambda y: y.add_(1), lambda y: y.__setitem__(slice(None), 1.0),
                                   lambda y: y.__setitem__((slice(None), 1), 1.0),
                                   lambda y: y.fill_(torch.tensor(2.0)),
                                   lambda y: y.copy_(torch.ones(3, 4))],
                         ids=["add_", "[:]", "[:, 1]", "fill_ tensor", "copy_"])
def test_other_writes_of_an_expanded_tensor_are_refused(write):
    x, y = _expanded()
    with pytest.raises(RuntimeError, match=OVERLAP):
        write(y)
    assert x.tolist() == [[0.0, 1.0, 2.0, 3.0]]


def test_fill_of_an_expanded_view_needing_grad_refuses():
    x = torch.zeros(1, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.expand(3, 4).fill_(1)


@pytest.mark.parametrize("make, want", [
    (lambda x: x * 2, (torch.int64, 2)), (lambda x: 2 * x, (torch.int64, 2)),
    (lambda x: x / 2, (torch.int64, 2)), (lambda x: x * True, (torch.bool, True)),
    (lambda x: x * 2.5, (torch.float64, 2.5)), (lambda x: x.double().mul(3), (torch.int64, 3)),
    (lambda x: x[0] * 2, (torch.int64, 2))])
def test_a_python_number_is_saved_with_its_python_type(make, want):
    """PyTorch's wrapped number: `(x * 2).grad_fn._saved_other` is an int64 2, a float64 2.5."""
    y = make(torch.ones(3, requires_grad=True))
    saved = y.grad_fn._saved_other
    assert saved.dtype == want[0] and saved.ndim == 0 and saved.item() == want[1]
    y.sum().backward()  # the value taken is the float: the gradient is unchanged


def test_a_python_int_exponent_is_saved_as_an_int():
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    for e, kind in ((2, int), (2.0, float)):
        y = x.pow(e)
        assert y.grad_fn._saved_exponent == e and type(y.grad_fn._saved_exponent) is kind
        (g,) = torch.autograd.grad(y.sum(), x)
        np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy())


def test_out_cast_is_checked_before_the_kernel():
    b, i, f = torch.tensor([True, False]), torch.tensor([4, 6]), torch.tensor([1.5, 2.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Bool"):
        torch.bitwise_and(b, 1.5, out=b.clone())
    with pytest.raises(RuntimeError, match="output type Long"):
        torch.gcd(i, f, out=i.clone())
    out = torch.zeros(2)  # int operands into a float out: castable, and written
    torch.bitwise_or(i, torch.tensor([1, 1]), out=out)
    assert out.tolist() == [5.0, 7.0]


def test_clamp_by_tensors_computes_in_the_three_operands_dtype():
    """clamp(uint8, 0-d int64 -8, float32 max) compares in float32: the bound is -8., where a
    pairwise maximum would have wrapped it to 248 first (PyTorch: [-1.5, 3, 100, 255])."""
    xs = np.array([[0, 5, 200, 255]], np.uint8).repeat(3, 0)
    hi = np.array([[-1.5, 3.0, 100.0, 300.0]], np.float32)
    x = torch.tensor(xs)
    got = torch.clamp(x, torch.tensor(-8), torch.tensor(hi))
    assert got.dtype == torch.float32
    assert got.tolist() == np.minimum(np.maximum(xs.astype(np.float64), -8.0), hi).tolist()
    got = torch.clamp(x.t(), torch.tensor([-8, 1, 2]), torch.tensor(hi).t())  # non-contiguous
    assert got.tolist() == np.minimum(np.maximum(xs.T.astype(np.float64), [-8, 1, 2]),
                                      hi.T).tolist()
    assert torch.clamp(x, torch.tensor(-8)).tolist() == [[248, 248, 248, 255]] * 3  # uint8 wraps
    assert torch.clamp(x[:0], torch.tensor(-8), torch.tensor(hi[:, :1])).shape == (0, 4)


def test_integer_isclose_does_not_wrap():
    """|a - b| of integers is taken in float (PyTorch: int8 -128 and 127 differ by 255, not by
    int8's wrapped 1); zero tolerances are equality (2**62 and 2**62 + 1 differ, though float32
    holds both as one number)."""
    a = np.array([-128, 127, 100, -100, 0, 5, -5], np.int8)
    b = np.array([127, -128, -100, 100, 0, 5, -6], np.int8)
    exact = np.abs(a.astype(np.int64) - b.astype(np.int64))
    for rtol, atol in ((1e-5, 1e-8), (0.5, 1.0)):
        want = exact <= atol + rtol * np.abs(b.astype(np.float64))
        assert torch.isclose(torch.tensor(a), torch.tensor(b), rtol, atol).tolist() == want.tolist()
        assert torch.isclose(torch.tensor(a)[::2], torch.tensor(b)[::2], rtol, atol).tolist() == \
            want[::2].tolist()
    u, v = torch.tensor([200], dtype=torch.uint8), torch.tensor([10], dtype=torch.uint8)
    assert torch.isclose(v, u, rtol=0, atol=66).tolist() == [False]  # uint8's 10 - 200 is 66
    big = torch.tensor(2 ** 62)
    assert torch.isclose(big, big + 1, rtol=0, atol=0).item() is False
    assert torch.isclose(torch.tensor([True]), torch.tensor([False]), atol=1).tolist() == [True]


# ATen's CPU kernels run the polynomial recurrences with each step contracted into one fma:
# float32 values as PyTorch 2.13 gives them (observed by hand; the plain loop's L_182(9) is
# -0.07067502, the float64 value -0.0706595873), float64 ones against scipy's evaluation.
LAGUERRE_F32 = {(9, 182): -0.07065664231777191, (9, 196): 0.7274858951568604,
                (10, 117): -0.2689724266529083, (10, 128): 0.17214533686637878}


def test_laguerre_recurrence_rounds_as_aten_s_fused_steps():
    pts = list(LAGUERRE_F32)
    x = torch.tensor([float(a) for a, _ in pts])
    n = torch.tensor([float(b) for _, b in pts])
    assert torch.special.laguerre_polynomial_l(x, n).tolist() == list(LAGUERRE_F32.values())
    xi = torch.tensor([a for a, _ in pts], dtype=torch.uint8)  # integer inputs compute in float32
    ni = torch.tensor([b for _, b in pts], dtype=torch.uint8)
    assert torch.special.laguerre_polynomial_l(xi, ni).tolist() == list(LAGUERRE_F32.values())
    from scipy.special import eval_laguerre, eval_legendre
    xs = np.linspace(-3.0, 0.0, 31)  # (x <= 0: every term of L_n positive, well conditioned)
    ns = np.arange(31.0) * 7
    got = torch.special.laguerre_polynomial_l(torch.tensor(xs), torch.tensor(ns)).numpy()
    np.testing.assert_allclose(got, eval_laguerre(ns, xs), rtol=1e-9, atol=1e-12)
    xs = np.linspace(-0.99, 0.99, 31)
    column = torch.tensor(np.stack([xs, xs], 1))[:, 0]  # non-contiguous
    got = torch.special.legendre_polynomial_p(column, torch.tensor(ns))
    np.testing.assert_allclose(got.numpy(), eval_legendre(ns, xs), rtol=1e-9, atol=1e-12)
    assert torch.special.legendre_polynomial_p(torch.tensor([0.9]), torch.tensor([182.0])) \
        .item() == 0.08837347477674484
