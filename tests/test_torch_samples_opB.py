"""Regressions from PyTorch 2.13's OpInfo samples, op_db entries 350 on (tools/torch_opinfo_check.py,
issue 26) and its ModuleInfo samples (tools/torch_moduleinfo_check.py).

PyTorch's behaviour was checked by hand in a PyTorch 2.13 CPU venv; expected values are derived
here (numpy float64, the functions' definitions), never read from fusetorch.
"""
import math

import numpy as np
import pytest

import fusetorch as torch


# ---------------------------------------------------------------- gather with an empty index

@pytest.mark.parametrize("shape,dim,index_shape,index_dtype", [
    ((5,), 0, (2, 0), "uint8"),      # other dims and another dtype: PyTorch checks neither
    ((5,), 0, (2, 0), "float32"),
    ((2, 3), 1, (0,), "uint8"),
    ((2, 3), 1, (5, 0, 7), "int16"),
    ((), 0, (0,), "int64"),
])
def test_gather_with_an_empty_index_is_empty_of_its_shape(shape, dim, index_shape, index_dtype):
    x = torch.ones(shape, requires_grad=True)
    index = torch.empty(index_shape, dtype=getattr(torch, index_dtype))
    out = torch.gather(x, dim, index)
    assert tuple(out.shape) == index_shape and out.dtype == torch.float32
    assert out.requires_grad
    out.sum().backward()  # nothing selected: a zero gradient
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(shape))


def test_gather_with_an_empty_index_still_checks_dim():
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.gather(torch.ones(5), 3, torch.empty(2, 0, dtype=torch.int64))


# ---------------------------------------------------------------- out= overlapping itself

@pytest.mark.parametrize("call", [
    lambda out: torch.index_select(torch.ones(3, 6), 1, torch.tensor([0, 1]), out=out),
    lambda out: torch.add(torch.ones(3, 2), 1, out=out),
])
def test_out_overlapping_itself_is_refused_before_a_resize(call):
    # PyTorch's index_select and TensorIterator ops check the out tensor before resizing it
    out = torch.empty(1, 6).expand(2, 6)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        call(out)


def test_gather_resizes_an_overlapping_out_first():
    out = torch.empty(1, 6).expand(2, 6)
    r = torch.gather(torch.arange(6.0).reshape(3, 2), 1, torch.tensor([[1, 0]] * 3), out=out)
    np.testing.assert_array_equal(r.numpy(), [[1.0, 0.0], [3.0, 2.0], [5.0, 4.0]])


# ---------------------------------------------------------------- casts take memory_format

def test_bfloat16_takes_memory_format_as_the_other_casts():
    x = torch.arange(120.0).reshape(2, 3, 4, 5)
    y = x.bfloat16(memory_format=torch.channels_last)
    assert y.dtype == torch.bfloat16
    # channels_last strides of [N, C, H, W]: C fastest, then W, H, N
    assert y.stride() == (60, 1, 15, 3)
    np.testing.assert_array_equal(y.float().numpy(), np.arange(120.0).reshape(2, 3, 4, 5))
    assert x.bfloat16(memory_format=torch.contiguous_format).stride() == (60, 20, 5, 1)


# ---------------------------------------------------------------- lstsq's empty residuals

@pytest.mark.parametrize("driver", ["gels", "gelsy"])
def test_lstsq_empty_residuals_are_part_of_the_graph(driver):
    a_np = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    b_np = np.array([[1.0], [2.0], [3.0]])
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np, requires_grad=True)
    res = torch.linalg.lstsq(a, b, driver=driver)
    assert tuple(res.residuals.shape) == (0,) and res.residuals.requires_grad
    (g_x,) = torch.autograd.grad([res.solution, res.residuals],
                                 [b], [torch.ones(3, 1, dtype=torch.float64),
                                       torch.empty(0, dtype=torch.float64)])
    # x = A^-1 b: d(sum x)/db = A^-T 1
    np.testing.assert_allclose(g_x.numpy(), np.linalg.solve(a_np.T, np.ones((3, 1))),
                               rtol=1e-12)


# ---------------------------------------------------------------- orthogonal polynomials, large n

def test_polynomial_recurrences_end_at_nan_for_huge_degrees():
    # |x| > 1: the three-term recurrences overflow, then inf - inf is NaN at every later step
    # (ATen's loops stop there); n = 4988429 is one of PyTorch's own samples
    x = torch.tensor([-501.0, 501.0, 1001.2], dtype=torch.float64)
    n = torch.tensor([4988429.0, 4988429.0, 13437.0], dtype=torch.float64)
    for fn in (torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
               torch.special.hermite_polynomial_h, torch.special.legendre_polynomial_p):
        assert np.isnan(fn(x, n).numpy()).all(), fn


def test_chebyshev_closed_form_lanes_beside_a_long_recurrence():
    # inside (-1, 1) with n > 6, T_n(x) = cos(n arccos x); the lane at 3 runs the recurrence
    x_np = np.array([0.3, -0.7, 3.0, 1.0, -1.0])
    n_np = np.array([10.0 ** 6, 12345.0, 5.0, 10.0 ** 6, 10.0 ** 6 + 1])
    got = torch.special.chebyshev_polynomial_t(torch.tensor(x_np), torch.tensor(n_np)).numpy()
    want = np.cos(n_np * np.arccos(np.clip(x_np, -1, 1)))
    want[2] = np.polynomial.chebyshev.chebval(3.0, [0] * 5 + [1])  # T_5(3) = 16 * 3^5 - ...
    want[3], want[4] = 1.0, -1.0  # T_n(1) = 1, T_n(-1) = (-1)^n
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert math.isclose(want[2], 16 * 3 ** 5 - 20 * 3 ** 3 + 5 * 3)


# ---------------------------------------------------------------- torch.masked dtypes, no mask

def test_masked_logsumexp_casts_to_the_input_dtype():
    x = torch.tensor([1, 2, 3])
    lse = math.log(math.e + math.e ** 2 + math.e ** 3)  # 3.41: an int64 result truncates it
    r = torch.masked.logsumexp(x, 0)
    assert r.dtype == torch.int64 and int(r) == int(lse)
    keep = torch.tensor([True, False, True])
    assert int(torch.masked.logsumexp(x, 0, mask=keep)) == int(math.log(math.e + math.e ** 3))
    # nothing kept: the integer identity (int64's minimum), as PyTorch
    empty = torch.masked.logsumexp(x, 0, mask=torch.zeros(3, dtype=torch.bool))
    assert int(empty) == -2 ** 63
    r64 = torch.masked.logsumexp(x, 0, dtype=torch.float64)
    assert r64.dtype == torch.float64 and math.isclose(float(r64), lse, rel_tol=1e-6)


def test_masked_prod_of_bools_and_small_integers_is_int64():
    assert torch.masked.prod(torch.tensor(True)).dtype == torch.int64
    assert int(torch.masked.prod(torch.tensor(True))) == 1
    r = torch.masked.prod(torch.tensor([2, 3], dtype=torch.int8), 0, mask=torch.tensor([True, False]))
    assert r.dtype == torch.int64 and int(r) == 2


def test_masked_var_and_std_without_a_mask():
    x = np.arange(6.0).reshape(2, 3)
    got = torch.masked.var(torch.tensor(x), 1, unbiased=False).numpy()
    np.testing.assert_allclose(got, x.var(axis=1), rtol=1e-12)
    s = torch.masked.std(torch.tensor(x), 1, unbiased=True, keepdim=True).numpy()
    np.testing.assert_allclose(s, x.std(axis=1, ddof=1, keepdims=True), rtol=1e-12)
    v = torch.masked.var(torch.arange(5))  # an integer input: float32, all dims
    assert v.dtype == torch.float32 and math.isclose(float(v), np.arange(5).var(ddof=1))


def test_gather_with_an_empty_index_compiles():
    f = torch.compile(lambda x, i: torch.gather(x, 0, i) * 2)
    x = torch.ones(5, requires_grad=True)
    for _ in range(2):  # the trace, then the compiled replay
        out = f(x, torch.empty(2, 0, dtype=torch.int64))
        assert tuple(out.shape) == (2, 0)
    (g,) = torch.autograd.grad(out.sum(), [x])
    np.testing.assert_array_equal(g.numpy(), np.zeros(5))


def test_hash_tensor_is_out_of_scope_with_its_reason():
    # its result is uint64, a dtype fusetorch does not have
    from fusetorch._out_of_scope import OutOfScopeError
    with pytest.raises(OutOfScopeError, match="hash_tensor.*wide unsigned"):
        torch.hash_tensor(torch.ones(3))
    assert not hasattr(torch, "hash_tensor")


# ---------------------------------------------------------------- int32 products stay int32

def test_addbmm_of_int32_is_int32():
    # PyTorch's addbmm keeps its operands' integer dtype (sum alone would widen int32 to int64)
    rng = np.random.default_rng(0)
    a, b, c = (rng.integers(-4, 5, s).astype(np.int32) for s in ((3, 4), (2, 3, 5), (2, 5, 4)))
    r = torch.addbmm(torch.tensor(a), torch.tensor(b), torch.tensor(c), beta=2, alpha=3)
    assert r.dtype == torch.int32
    expected = 2 * a.astype(np.int64) + 3 * np.einsum("bij,bjk->ik", b.astype(np.int64), c)
    np.testing.assert_array_equal(r.numpy(), expected)


def test_bilinear_of_int32_is_int32():
    rng = np.random.default_rng(1)
    x1, x2 = rng.integers(-3, 4, (2, 3)).astype(np.int32), rng.integers(-3, 4, (2, 4)).astype(np.int32)
    w, bias = rng.integers(-3, 4, (5, 3, 4)).astype(np.int32), rng.integers(-3, 4, 5).astype(np.int32)
    r = torch.nn.functional.bilinear(torch.tensor(x1), torch.tensor(x2), torch.tensor(w), torch.tensor(bias))
    assert r.dtype == torch.int32
    expected = np.einsum("ni,oij,nj->no", x1.astype(np.int64), w, x2) + bias
    np.testing.assert_array_equal(r.numpy(), expected)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16"])
def test_einsum_keeps_a_narrow_integer_dtype(dtype):
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 4, (2, 3)).astype(dtype), rng.integers(0, 4, (1, 3)).astype(dtype)
    r = torch.einsum("ij,kj->ik", torch.tensor(a), torch.tensor(b))
    assert r.dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(r.numpy(), a.astype(np.int64) @ b.astype(np.int64).T)


def test_einsum_of_one_operand_sums_as_sum_does():
    # PyTorch (checked in 2.13): einsum('i->') over uint8 [200, 100] is int64 300, over bool int64 2,
    # over int32 int64: sum's widening, where a contraction keeps the operands' dtype
    r = torch.einsum("i->", torch.tensor([200, 100], dtype=torch.uint8))
    assert r.dtype == torch.int64 and int(r) == 300
    r = torch.einsum("i->", torch.tensor([True, True]))
    assert r.dtype == torch.int64 and int(r) == 2
    r = torch.einsum("ij->i", torch.tensor([[1, 2], [3, 4]], dtype=torch.int32))
    assert r.dtype == torch.int64
    np.testing.assert_array_equal(r.numpy(), [3, 7])


def test_masked_cumsum_and_cumprod_keep_int32():
    # torch.masked's scans default dtype to the input's (sum's widening does not apply)
    x = np.array([[1, 2], [3, 4]], dtype=np.int32)
    m = np.array([[True, False], [True, True]])
    r = torch.masked.cumsum(torch.tensor(x), 0, mask=torch.tensor(m))
    assert r.dtype == torch.int32
    np.testing.assert_array_equal(r.numpy(), np.cumsum(np.where(m, x, 0).astype(np.int64), 0))
    r = torch.masked.cumprod(torch.tensor(x), 1, mask=torch.tensor(m))
    assert r.dtype == torch.int32
    np.testing.assert_array_equal(r.numpy(), np.cumprod(np.where(m, x, 1).astype(np.int64), 1))
