"""Eager fast paths that replace a slow numpy call: same results as the plain numpy call."""
import numpy as np

from fusetorch._policy import POLICY
from fusetorch.runtime.eager import make_table
from fusetorch.ir.roles import Role

T = make_table(np)


def test_scatter_add_with_one_index_per_row_matches_add_at():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 5, 4)).astype(np.float32)
    idx = rng.integers(0, 4, (30, 5, 1))
    src = rng.standard_normal((30, 5, 1)).astype(np.float32)
    want = x.copy()
    np.add.at(want, (np.arange(30)[:, None, None], np.arange(5)[None, :, None], idx), src)
    np.testing.assert_array_equal(T["scatter_add"](x, idx, src, dim=2), want)


def test_gather_by_flat_take_matches_advanced_indexing():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 7, 5)).astype(np.float32)
    for dim in range(3):
        # an index smaller than x along the other dims, and a non-contiguous (expanded) one
        shape = [4, 5, 3]
        shape[dim] = 9
        idx = rng.integers(0, x.shape[dim], shape)
        grid = list(np.ix_(*[np.arange(n) for n in shape]))
        grid[dim] = idx
        np.testing.assert_array_equal(T["gather"](x, idx, dim=dim), x[tuple(grid)])
        row = np.broadcast_to(rng.integers(0, x.shape[dim], (1,) * 3), shape)
        grid[dim] = row
        np.testing.assert_array_equal(T["gather"](x, row, dim=dim), x[tuple(grid)])


# ---------------------------------------------------------------- compiled eager kernels

import pytest  # noqa: E402
from numpy.lib.stride_tricks import as_strided  # noqa: E402

from fusetorch.runtime import eager_kernels as ek  # noqa: E402


@pytest.fixture
def kernels(monkeypatch):
    """Eager kernels on (or off), from an empty program cache."""
    def use(on: bool):
        monkeypatch.setattr(POLICY, "eager_kernels", on)
        ek.clear()
    yield use
    ek.clear()


def _windows(x, k, s=1):
    n, c, h, w = x.shape
    st = x.strides
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    return as_strided(x, (n, c, k, k, oh, ow), (st[0], st[1], st[2], st[3], st[2] * s, st[3] * s),
                      writeable=False)


def test_reshape_of_a_strided_view_is_a_kernel_copy_from_its_second_sight(kernels):
    kernels(True)
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((8, 3, 12, 12)).astype(dtype)
        cols = _windows(x, 3)
        shape = (8, 27, 100)
        want = np.reshape(cols, shape)
        first = T["reshape"](cols, shape)  # numpy's copy; the layout is noted
        assert ek._PROGRAMS[("copy",) + ek._layout(cols)] == 1  # (sightings)
        second = T["reshape"](cols, shape)
        assert ek._PROGRAMS[("copy",) + ek._layout(cols)]
        held = T["reshape"](cols, shape)  # `second` is still held: a new buffer, not its own
        for got in (first, second, held):
            assert got.dtype == dtype and got.flags.c_contiguous
            np.testing.assert_array_equal(got, want)
        assert not np.shares_memory(second, held)
        # views that need no copy stay views
        assert np.shares_memory(T["reshape"](x[:, :, 2:], (8, 3, -1)[:2] + (120,)), x)


def test_copy_of_a_transpose_is_a_kernel_copy(kernels):
    kernels(True)
    x = np.random.default_rng(3).standard_normal((64, 96)).T
    for _ in range(3):
        got = T["copy"](x)
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, x)
    assert any(p for p in ek._PROGRAMS.values())


def test_a_compile_trace_builds_no_eager_kernel_but_runs_built_ones(kernels):
    # a trace's eager run happens once (the compiled program replaces it): building a kernel
    # for it cost ~0.07 s of compiler in a first compiled call, for nothing
    from fusetorch.tracer.trace import trace
    kernels(True)
    x = np.random.default_rng(3).standard_normal((64, 96)).T
    key = ("copy",) + ek._layout(x)
    with trace():
        for _ in range(3):
            np.testing.assert_array_equal(T["copy"](x), x)
    assert key not in ek._PROGRAMS  # not even counted as seen
    T["copy"](x), T["copy"](x)  # outside: built from the second sight
    program = ek._PROGRAMS[key]
    assert program
    runs, run = [], program.run
    program.run = lambda arrays: runs.append(1) or run(arrays)
    with trace():
        np.testing.assert_array_equal(T["copy"](x), x)
    assert ek._PROGRAMS[key] is program and runs == [1]


def test_argmax_kernel_keeps_numpys_first_extreme_and_nan(kernels):
    kernels(True)
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (16, 4, 9, 11)).astype(np.float32)  # many ties
    x[0, 1, 2, 3] = np.nan
    x[5, :, 4, 4] = np.nan  # NaN in every position of a window along dim 1
    x[6, 2, 0, 0] = -np.inf
    x[7, :, 0, 0] = -np.inf
    for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for dim in range(4):
            for keepdim in (True, False):
                want = fn(x, axis=dim, keepdims=keepdim)
                for _ in range(2):  # numpy, then the kernel
                    got = T[name](x, dims=(dim,), keepdim=keepdim)
                    assert got.dtype == np.int64
                    np.testing.assert_array_equal(got, want)
    assert sum(1 for p in ek._PROGRAMS.values() if p) == 8  # (keepdim is a reshape)


def test_small_arrays_other_dtypes_and_disabled_build_nothing(kernels):
    kernels(True)
    small = np.ones((4, 5, 6), np.float32)[:, :, ::2]
    ints = np.ones((64, 128), np.int64).T
    for _ in range(3):
        T["copy"](small)
        T["copy"](ints)
        T["argmax"](np.ones((64, 128), np.int32), dims=(0,), keepdim=False)
    assert not ek._PROGRAMS
    kernels(False)
    big = np.ones((64, 128), np.float32).T
    for _ in range(3):
        np.testing.assert_array_equal(T["copy"](big), big)
    assert not ek._PROGRAMS


def test_max_pool_and_conv_training_gradients_match_numpy_paths(kernels):
    import fusetorch as torch
    import fusetorch.nn.functional as F
    from fusetorch.tracer import autograd as A

    def grads(on: bool):
        kernels(on)
        A._CACHE.clear()  # each run's backward is interpreted, then compiled, alike
        torch.manual_seed(0)
        w = torch.randn(6, 3, 5, 5, requires_grad=True)
        b = torch.randn(6, requires_grad=True)
        x = torch.randn(16, 3, 24, 24, requires_grad=True)
        out = []
        for _ in range(3):
            y = F.max_pool2d(F.relu(F.conv2d(x, w, b)), 2)
            v, i = F.max_pool2d(y, 2, return_indices=True)
            (v.sum() + (y * y).mean()).backward()
            out.append([y.detach().numpy().copy(), i.numpy().copy()] +
                       [t.grad.numpy().copy() for t in (w, b, x)])
            w.grad = b.grad = x.grad = None
        return out

    want, got = grads(False), grads(True)
    assert any(p for p in ek._PROGRAMS.values())
    for a, b in zip(want, got):
        for u, v in zip(a, b):
            if u.dtype.kind == "f":  # the convolution's kernels sum in another order
                np.testing.assert_allclose(v, u, rtol=2e-5, atol=2e-5)
            else:
                np.testing.assert_array_equal(v, u)


def test_gather_of_one_index_per_row_is_a_kernel_select(kernels):
    kernels(True)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 6, 4, 9, 9)).astype(np.float32)
    x[0, 0, :, 0, 0] = [-0.0, 0.0, np.nan, 1.0]
    for dim, idx_shape in ((2, (32, 6, 1, 9, 9)), (2, (30, 5, 1, 9, 7)), (4, (32, 6, 4, 9, 1))):
        idx = rng.integers(0, x.shape[dim], idx_shape)
        idx[0, 0, 0, 0, 0] = 0
        grid = list(np.ix_(*[np.arange(n) for n in idx_shape]))
        grid[dim] = idx
        want = x[tuple(grid)]
        for _ in range(3):
            got = T["gather"](x, idx, dim=dim)
            np.testing.assert_array_equal(got, want)
        assert np.signbit(got[0, 0, 0, 0, 0])  # index 0 there: x's -0.0, sign kept
    assert sum(1 for key, p in ek._PROGRAMS.items() if p and key[0] == "gather") == 3


def _pool_reference(x, kernel, stride, padding, dilation, extra=(0, 0)):
    """PyTorch's max pooling scan, in float64 over the -inf padded input (extra at the bottom
    and right: ceil mode): per window the index starts at its first element inside the input
    and an element is taken when greater than the maximum so far or NaN (the last NaN wins,
    else the first maximum); values and indices (row * W + col in x's plane)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph + extra[0]),
                                       (pw, pw + extra[1])), constant_values=-np.inf)
    n, c, h, w = xp.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    st = xp.strides
    win = as_strided(xp, (n, c, kh, kw, oh, ow),
                     (st[0], st[1], st[2] * dh, st[3] * dw, st[2] * sh, st[3] * sw))
    rows = np.arange(oh)[:, None] * sh + np.arange(kh)[None, :] * dh  # [OH, kh] padded rows
    cols = np.arange(ow)[:, None] * sw + np.arange(kw)[None, :] * dw
    in_r = (rows >= ph) & (rows < ph + x.shape[2])
    in_c = (cols >= pw) & (cols < pw + x.shape[3])
    best = np.full((n, c, oh, ow), -np.inf)
    arg = np.broadcast_to((in_r.argmax(1) * kw)[:, None] + in_c.argmax(1)[None, :],
                          best.shape).copy()
    for i in range(kh):
        for j in range(kw):
            v = win[:, :, i, j]
            take = in_r[:, i][:, None] & in_c[:, j][None, :] & ((v > best) | np.isnan(v))
            best, arg = np.where(take, v, best), np.where(take, i * kw + j, arg)
    row = (np.arange(oh) * sh - ph)[:, None] + (arg // kw) * dh
    col = (np.arange(ow) * sw - pw)[None, :] + (arg % kw) * dw
    return best, row * x.shape[3] + col


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel, stride, padding, dilation, extra", [
    ((2, 2), (2, 2), (0, 0), (1, 1), (0, 0)), ((3, 3), (2, 2), (1, 1), (1, 1), (0, 0)),
    ((3, 2), (1, 2), (1, 1), (1, 2), (0, 0)), ((2, 3), (3, 1), (0, 1), (2, 1), (0, 0)),
    ((4, 4), (1, 1), (2, 2), (1, 1), (0, 0)), ((3, 3), (2, 2), (0, 0), (1, 1), (1, 1)),
    ((2, 3), (2, 3), (1, 0), (1, 1), (1, 2))])
def test_max_pool_kernel_matches_the_window_argmax(kernels, dtype, kernel, stride, padding,
                                                   dilation, extra):
    """templates/c/max_pool2d.c.j2: values and indices of PyTorch's scan (first
    maximum, last NaN, -0.0 before 0.0, a window of -infs at its first inside element, the
    padding never), for contiguous, channels-last and sliced inputs, narrow rows (scalar loop)
    and wide ones (vector loop)."""
    kernels(True)
    rng = np.random.default_rng(7)
    base = rng.integers(-3, 3, (3, 4, 13, 37)).astype(dtype)  # small integers: many ties
    base[0, 0, :4, :4] = np.nan
    base[0, 1, 1, :6] = [np.nan, 1, np.nan, 5, -np.inf, np.inf]
    base[1, 2, :3, :3] = -np.inf
    base[1, 1, :, :3] = -np.inf  # whole -inf windows along the padded left edge
    base[2, 0, 5:8, 5:8] = np.nan
    base[2, 3, :2, :2] = [[-0.0, 0.0], [0.0, -0.0]]
    layouts = [base, np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
               base[:, ::-1, 1:, 2:33:2], base[:, :, :, :6]]
    for x in layouts:
        want_v, want_i = _pool_reference(x, kernel, stride, padding, dilation, extra)
        got_v, got_i = ek.max_pool2d(x, kernel, stride, padding, dilation, extra)
        assert got_v.dtype == dtype and got_i.dtype == np.int64
        np.testing.assert_array_equal(got_i, want_i)
        np.testing.assert_array_equal(got_v, want_v)
        assert np.array_equal(np.signbit(got_v), np.signbit(want_v))


def test_max_pool_replays_through_its_kernel(kernels):
    """max_pool2d's primitives run the kernel (padded, dilated, ceil_mode too), also in a
    key's replays: outputs and input gradients equal to the numpy implementation's, bit for
    bit."""
    import fusetorch as torch
    import fusetorch.nn.functional as F
    from fusetorch.tracer import composite_programs as cp

    def run(on: bool):
        kernels(on)
        cp.clear()
        torch.manual_seed(1)
        x = torch.randn(8, 5, 20, 22).round()  # ties
        x[0, 0, :2, :2] = float("nan")
        x.requires_grad_(True)
        out = []
        for _ in range(4):
            for args in ((2,), (3, 2, 1), ((3, 2), (2, 1), (1, 0), (2, 1)), (3, 2, 0, 1, True)):
                y = F.max_pool2d(x, *args)
                (y.nan_to_num() * torch.arange(float(y.numel())).reshape(y.shape)).sum() \
                    .backward()
                out += [y.detach().numpy().copy(), x.grad.numpy().copy()]
                x.grad = None
        return out, sum(key[0] == "max_pool2d" for key in ek._PROGRAMS)

    (want, _), (got, used) = run(False), run(True)
    assert used == 4
    for a, b in zip(want, got):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_along_the_last_dim_adds_repeats_as_add_at(kernels, dtype):
    """templates/c/scatter_add_last.c.j2 (max pooling's gradient): repeated targets add up in
    np.add.at's order, bit for bit, from a broadcast source too; in place where the program
    hands input 0 over (`reuses_input0`)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5, 70)).astype(dtype)
    index = rng.integers(0, 70, (6, 5, 200))
    index[0, 0, :50] = 3  # one target, many additions
    for src in (rng.standard_normal((6, 5, 200)).astype(dtype),
                np.broadcast_to(np.asarray(0.1, dtype), (6, 5, 200))):
        want = x.copy()
        np.add.at(want, (np.arange(6)[:, None, None], np.arange(5)[None, :, None], index), src)
        kernels(True)
        got = T["scatter_add"](x, index, src, dim=2)
        assert any(k[0] == "scatter_add_last" for k in ek._PROGRAMS)
        np.testing.assert_array_equal(got, want)
        kernels(False)
        np.testing.assert_array_equal(T["scatter_add"](x, index, src, dim=2), want)
        mine = x.copy()
        assert T["scatter_add"](mine, index, src, dim=2, inplace=True) is mine
        np.testing.assert_array_equal(mine, want)


def test_a_layout_refused_once_is_not_planned_again(kernels, monkeypatch):
    # a program whose plan is not one kernel is remembered as False; False == 0 made it look
    # unseen, so it was planned again every other call
    kernels(True)
    builds = []
    monkeypatch.setattr(ek, "_build", lambda arrays, make: builds.append(1) or False)
    x = np.random.default_rng(4).standard_normal((64, 96)).T
    for _ in range(6):
        np.testing.assert_array_equal(T["copy"](x), x)
    assert builds == [1]


# ---------------------------------------------------------------- slow elementwise ops

from fusetorch.ir.ops import OPS  # noqa: E402

SLOW = sorted(name for name, d in OPS.items() if Role.EAGER_KERNEL in d.roles)


def _operands(name: str, dtype, rng) -> list:
    """Arguments over each op's interesting range, with its special values among them."""
    n = 64 * 80
    if name == "erfinv":
        x = rng.uniform(-1, 1, n)
        x[:6] = [-1, 1, 0, 1.5, np.nan, -1 + 1e-7]
    elif name in ("lgamma", "digamma"):
        x = rng.uniform(-6, 12, n)
        x[:7] = [0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-8]
    else:
        x = rng.standard_normal(n) * 4
        x[:5] = [0.0, np.inf, -np.inf, np.nan, -0.0]
    x = x.astype(dtype).reshape(64, 80)
    if OPS[name].nin == 1:
        return [x]
    y = (rng.uniform(0.5, 3, n) * rng.choice([-1, 1], n)).astype(dtype).reshape(64, 80)
    if name == "pow":
        x = np.abs(x)  # (a negative base to a fractional power is NaN in both)
    return [x, y]


def _numpy(name: str, args):
    """What numpy computes for it (the eager table with the eager kernels off)."""
    was, POLICY.eager_kernels = POLICY.eager_kernels, False
    try:
        with np.errstate(all="ignore"):
            return T[name](*args)
    finally:
        POLICY.eager_kernels = was


@pytest.mark.parametrize("name", SLOW)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slow_elementwise_ops_run_as_kernels_with_numpys_values(kernels, name, dtype):
    """From the second sight of a layout, its kernel (the C expression compiled code runs);
    values as numpy's (float64 references of both: tests/ir/test_ops_table.py) within a few
    ulp of the dtype, NaN and infinities where numpy has them; a transposed view is read in
    place."""
    kernels(True)
    args = _operands(name, dtype, np.random.default_rng(5))
    tol = (2e-6 if dtype == np.float32 else 1e-13) * (10 if name == "erfinv" else 1)
    for views in (args, [a.T for a in args]):
        want = _numpy(name, views)
        for _ in range(2):
            with np.errstate(all="ignore"):
                got = T[name](*views)
            assert got.dtype == dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert len([k for k, p in ek._PROGRAMS.items() if p and k[0] == name]) == 2


def test_slow_elementwise_ops_leave_other_arguments_to_numpy(kernels):
    """Integer and half dtypes, a numpy scalar operand, broadcasting, 0-d and zero-size arrays:
    numpy's promotion and values; no kernel is built."""
    kernels(True)
    big = np.linspace(0.5, 3, 8192, dtype=np.float32).reshape(64, 128)
    ints = np.arange(8192).reshape(64, 128)
    for _ in range(3):
        np.testing.assert_array_equal(T["pow"](ints, ints % 3), ints ** (ints % 3))
        np.testing.assert_array_equal(T["pow"](big, np.float32(2.0)), big ** np.float32(2.0))
        np.testing.assert_array_equal(T["pow"](big, big[:1]), big ** big[:1])
        np.testing.assert_array_equal(T["pow"](2.0, big), 2.0 ** big)
        assert T["erf"](np.zeros((0, 5), np.float32)).shape == (0, 5)
        assert T["erf"](np.array(0.5, np.float32)).shape == ()
        assert T["sigmoid"](big.astype(np.float16)).dtype == np.float16
    assert not [k for k, p in ek._PROGRAMS.items() if p]
