"""fusetorch.compile, first slice: fused C kernels for inference calls, against eager.

Compiled results are compared with the eager run of the same function (and numpy float64 where
it is easy); kernel counts guard the fusion itself.
"""
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.runtime import build as runtime_build
from fusetorch.runtime import cbuild


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def close(a, b, rtol=2e-6, atol=1e-6):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol)


def chain(t):
    return torch.tanh(torch.exp(t * 0.5 + 1).clamp(max=10) * t - 0.25)


def test_elementwise_chain_is_one_kernel_reading_once_writing_once():
    x = torch.randn(1000)
    cf = torch.compile(chain)
    first, second = cf(x), cf(x)  # the first call traces and builds, the second runs C
    close(first, chain(x))
    close(second, chain(x))
    (k,) = cf.kernels()
    assert "reads 4000 B, writes 4000 B" in k and "[mul, add, exp, clamp, mul, sub, tanh]" in k
    assert "expf(" in cf.source() and "test_compile.py" in cf.source()  # user line comments


def test_squared_difference_sum_is_one_reduction_kernel():
    a, b = torch.randn(3000), torch.randn(3000)
    cf = torch.compile(lambda u, v: ((u - v) ** 2).sum())
    cf(a, b)
    got = cf(a, b)
    ref = ((a.numpy().astype(np.float64) - b.numpy()) ** 2).sum()
    assert abs(got.item() - ref) <= 1e-6 * ref
    (k,) = cf.kernels()
    assert k.split(":")[1].strip().startswith("reduce") and "writes 4 B" in k


@pytest.mark.parametrize("fn", [
    lambda a, b, c: (a.t() * b + c[None, :]).exp(),          # permuted and broadcast inputs
    lambda a, b, c: torch.where(a.t() > 0, b, -b).sigmoid() + c,
    lambda a, b, c: (b * 2 - c).relu().sum(1),                # sum over the trailing dim
    lambda a, b, c: (b * 2 - c).sum(0),                       # leading dim: a library call
    lambda a, b, c: torch.maximum(b, a.t()).abs().sqrt() * c.mean(),
    lambda a, b, c: ((b - c) ** 2).mean(dim=-1, keepdim=True) + b,
])
def test_compiled_matches_eager(fn):
    a, b, c = torch.randn(5, 4), torch.randn(4, 5), torch.randn(5)
    cf = torch.compile(fn)
    cf(a, b, c)
    close(cf(a, b, c), fn(a, b, c))


def test_nan_and_inf_propagate_like_eager():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 2.0])
    fn = lambda t: torch.maximum(t, t * 0.5).relu().clamp(-1, 1) + t.sign()  # noqa: E731
    cf = torch.compile(fn)
    cf(x)
    np.testing.assert_array_equal(cf(x).numpy(), fn(x).numpy())


def test_float64_kernels():
    x = torch.randn(100, dtype=torch.float64)
    cf = torch.compile(lambda t: (t.exp() * 3).log())
    cf(x)
    # libmvec exp/log are within a few ulp, like numpy's
    np.testing.assert_allclose(cf(x).numpy(), np.log(np.exp(x.numpy()) * 3), rtol=1e-12)


def test_guards_retrace_on_shape_dtype_and_strides():
    cf = torch.compile(lambda t: (t * 2 + 1).tanh())
    for x in (torch.randn(3, 4), torch.randn(5, 4), torch.randn(3, 4, dtype=torch.float64),
              torch.randn(4, 3).t()):
        cf(x)
        close(cf(x), (x * 2 + 1).tanh())
    assert len(cf._variants) == 4


def test_module_under_no_grad():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    cm = torch.compile(m)
    x = torch.randn(10, 8)
    with torch.no_grad():
        cm(x)
        close(cm(x), m(x), rtol=1e-5)
    assert cm.kernels(), "the tanh and the bias adds are fused kernels"
    assert list(cm.parameters()) == list(m.parameters())  # a compiled module is still the module


def test_gradients_flow_through_the_compiled_backward_program():
    w = torch.randn(4, requires_grad=True)
    cf = torch.compile(lambda t: (t * w).tanh().sum())
    x = torch.randn(4)
    cf(x)
    out = cf(x)  # a compiled call: one node whose backward is a compiled program
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    out.backward()
    np.testing.assert_allclose(w.grad.numpy(), x.numpy() / np.cosh(x.numpy() * w.detach().numpy())
                               ** 2, rtol=1e-5)


def test_compiled_training_step_matches_eager():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 3))
    twin = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 3))
    twin.load_state_dict(net.state_dict())
    x, y = torch.randn(8, 20), torch.randn(8, 3)
    loss_fn = nn.MSELoss()
    step = torch.compile(lambda a, b: loss_fn(net(a), b))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (net, twin)]
    for _ in range(5):
        for model, opt, fn in ((net, opts[0], step), (twin, opts[1], lambda a, b:
                                                       loss_fn(twin(a), b))):
            opt.zero_grad()
            loss = fn(x, y)
            loss.backward()
            opt.step()
    for p, q in zip(net.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert step.backward_graph().count("matmul") >= 2


def test_double_backward_through_compiled_code_is_refused():
    x = torch.randn(3, requires_grad=True)
    cf = torch.compile(lambda t: (t ** 3).sum())
    cf(x)
    (g,) = torch.autograd.grad(cf(x), x, create_graph=False)
    np.testing.assert_allclose(g.numpy(), 3 * x.detach().numpy() ** 2, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="double backward"):
        torch.autograd.grad(cf(x), x, create_graph=True)


def test_graph_break_warns_once_and_runs_eagerly():
    def fn(t):
        if t.sum().item() > 0:  # data-dependent Python control flow
            return t * 2
        return t * 3

    cf = torch.compile(fn)
    x = torch.ones(3)
    with pytest.warns(UserWarning, match=r"graph break .*item\(\).*test_compile.py"):
        close(cf(x), x * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(cf(x), x * 2)  # the key is remembered: no second warning
    with pytest.raises(RuntimeError, match="fullgraph=True"):
        torch.compile(fn, fullgraph=True)(x)


def test_no_compiler_warns_once_and_runs_eagerly(monkeypatch):
    def no_cc(*a, **k):
        raise cbuild.CompilerUnavailable("no C compiler found")

    monkeypatch.setattr(cbuild, "build_all", no_cc)
    monkeypatch.setattr(runtime_build, "_warned", set())  # (the one "cannot build" warning)
    cf = torch.compile(lambda t: t.exp() + 1)
    x = torch.randn(7)
    with pytest.warns(UserWarning, match="no C compiler"):
        close(cf(x), x.exp() + 1)
    close(cf(x), x.exp() + 1)


def test_inspection_shows_the_ir():
    cf = torch.compile(chain)
    cf(torch.randn(8))
    text = cf.graph()
    assert "%0 = input() : f32[8]" in text and "tanh(" in text and text.endswith(")")


def test_tensors_read_from_a_closure_are_read_afresh_each_call():
    w = torch.ones(6)
    cf = torch.compile(lambda t: (t * w).exp())
    x = torch.randn(6)
    cf(x)
    w.mul_(2)  # the compiled program must see the new value, not a constant from the trace
    close(cf(x), (x * w).exp())


def test_reused_output_buffers_never_overwrite_results_still_held():
    cf = torch.compile(lambda t: t * 2 + 1)
    x = torch.randn(50)
    cf(x)
    held = cf(x)          # kept by the caller
    view = cf(x)[:10]     # kept only through a view
    cf(torch.ones(50))    # later calls must not write into either
    cf(torch.ones(50))
    close(held, x * 2 + 1)
    close(view, (x * 2 + 1)[:10])


@pytest.mark.parametrize("fn", [lambda t: t.amax(-1), lambda t: (t * 2).amin((1, 2)),
                                lambda t: t.max(), lambda t: t.exp().sum()])
def test_reduction_kernels_propagate_nan(fn):
    x = torch.randn(3, 4, 5)
    x[1, 2, 3] = float("nan")
    cf = torch.compile(fn)
    cf(x)
    got, want = cf(x).numpy(), fn(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    assert np.isnan(got).any() and np.array_equal(np.isnan(got), np.isnan(want))
    assert any("reduce" in k for k in cf.kernels())


_LEADING = [((64, 100), (0,)), ((8, 6, 7, 5), (0, 2, 3)), ((6, 5, 4), (0, 1)),
            ((3, 4, 5, 6), (1, 3)), ((5, 2000), (0,)), ((64, 6, 4, 14, 14), (2,)),
            # tiled rows: 4 parallel tiles of 512; a row too long for one (5 tiles of 1000,
            # after a kept dim); a prime width, one tile of the whole row
            ((1024, 2048), (0,)), ((2, 50, 5000), (1,)), ((4100, 257), (0,))]


@pytest.mark.parametrize("op, shape, dims", [
    (op, shape, dims) for op in ("sum", "amax", "amin", "argmax", "argmin")
    for shape, dims in _LEADING if len(dims) == 1 or not op.startswith("arg")])  # arg: one dim
@pytest.mark.parametrize("nan", [False, True])
def test_reductions_over_leading_dims_fold_into_a_row_in_memory_order(op, shape, dims, nan):
    """A reduction whose reduced dims are not all innermost reads in memory order into
    accumulator rows (reduce_outer.c.j2); values against numpy in float64 (argmax/argmin: the
    first extreme, or the first NaN, of the float32 values the kernel compares)."""
    arg = op.startswith("arg")
    x = torch.randn(*shape)
    if nan:
        x.view(-1)[7] = float("nan")
    fn = lambda t: getattr(torch.where(t > -1.0, t * 3, t), op)(dims[0] if arg else dims)
    cf = torch.compile(fn)
    cf(x)
    got = cf(x).numpy()
    a = x.numpy() if arg else x.numpy().astype(np.float64)
    a = np.where(a > -1.0, a * np.float32(3), a)
    want = {"sum": np.sum, "amax": np.max, "amin": np.min, "argmax": np.argmax,
            "argmin": np.argmin}[op](a, axis=dims[0] if arg else dims)
    if arg:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
        assert np.array_equal(np.isnan(got), np.isnan(want))
    assert "into rows of" in cf.source(), cf.source()


@pytest.mark.parametrize("hw, kernel, stride, padding, dilation", [
    ((14, 14), (5, 5), 1, 0, 1), ((7, 9), (3, 3), 2, 1, 1), ((8, 8), (3, 3), 1, 2, 2),
    ((5, 6), (2, 3), (1, 2), (1, 0), 1), ((9, 7), (4, 2), (3, 1), (2, 1), (1, 2))])
def test_unfold_gradient_folds_in_one_c_kernel(hw, kernel, stride, padding, dilation):
    """fold2d (col2im, the gradient of unfold and conv_transpose2d's last step) is a C kernel
    of its own (fold2d.c.j2): padding, stride and dilation against float64 finite
    differences of the eager op."""
    x = torch.randn(2, 3, *hw, dtype=torch.float64, requires_grad=True)
    f = lambda a: (F.unfold(a, kernel, stride=stride, padding=padding, dilation=dilation)
                   ** 2).sum()
    cf = torch.compile(f)
    for _ in range(2):
        x.grad = None
        cf(x).backward()
    assert any("fold2d" in k and "(backward)" in k for k in cf.kernels()), cf.kernels()
    got = x.grad.numpy().copy()
    base, eps = x.detach().numpy().copy(), 1e-6
    want = np.zeros_like(base)
    for i in np.random.default_rng(0).choice(base.size, 12, replace=False):
        hi, lo = base.copy(), base.copy()
        hi.flat[i] += eps
        lo.flat[i] -= eps
        want.flat[i] = (float(f(torch.tensor(hi))) - float(f(torch.tensor(lo)))) / (2 * eps)
        np.testing.assert_allclose(got.flat[i], want.flat[i], rtol=1e-5, atol=1e-6)
    x.grad = None
    f(x).backward()  # eager: the same sums in the same order
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_integer_results_of_inputs_that_require_grad():
    x = torch.randn(4, 5, requires_grad=True)
    cf = torch.compile(lambda t: (t * 2 > 0).sum(1))
    cf(x)
    got = cf(x)
    np.testing.assert_array_equal(got.numpy(), (x.detach().numpy() * 2 > 0).sum(1))
    assert got.grad_fn is None and got.dtype is torch.int64


def test_backward_recomputes_cheap_elementwise_values_instead_of_saving_them():
    x = torch.randn(50, 40, dtype=torch.float64, requires_grad=True)
    w = torch.randn(40, 30, dtype=torch.float64, requires_grad=True)
    f = torch.compile(lambda a, b: (torch.sigmoid(a) * torch.tanh(a) @ b).relu().sum())
    for _ in range(2):
        x.grad = w.grad = None
        f(x, w).backward()
    got = x.grad.numpy().copy(), w.grad.numpy().copy()
    # saved for backward: x (sigmoid and tanh are recomputed from it), the product's input
    # (for w's gradient) and the matmul output (relu's mask); never sigmoid(x) or tanh(x)
    forward = f.graph()
    saved_line = forward.strip().splitlines()[-1]
    n_saved = saved_line.count("%") - 1
    assert n_saved == 3, forward
    assert "sigmoid" in f.backward_graph() and "tanh" in f.backward_graph()
    xa, wa = x.detach().numpy(), w.detach().numpy()
    s, t = 1 / (1 + np.exp(-xa)), np.tanh(xa)
    h = (s * t) @ wa
    g = (h > 0).astype(np.float64)
    gp = g @ wa.T
    np.testing.assert_allclose(got[1], (s * t).T @ g, rtol=1e-10)
    np.testing.assert_allclose(got[0], gp * (s * (1 - s) * t + s * (1 - t * t)), rtol=1e-10)


def test_independent_work_over_one_space_shares_a_kernel():
    a, b, c = torch.randn(30, 20), torch.randn(30, 20), torch.randn(20, 20)
    f = torch.compile(lambda x, y, z: (torch.exp(x) * 2, torch.sin(y @ z) - 1, x.abs()))
    f(a, b, c)
    got = f(a, b, c)
    want = (np.exp(a.numpy()) * 2, np.sin(b.numpy() @ c.numpy()) - 1, np.abs(a.numpy()))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)
    # abs depends on neither exp/mul nor sin/sub: it shares a loop with one of them
    kernels = f.kernels()
    assert len(kernels) == 2, kernels
    assert sum("abs" in k for k in kernels) == 1, kernels


def test_output_buffers_are_reused_only_when_nobody_holds_them():
    x = torch.randn(300, 300)
    f = torch.compile(lambda t: torch.exp(t) * 2 + 1)
    f(x)
    a = f(x)
    address = a.numpy().__array_interface__["data"][0]
    keep = a.numpy().copy()
    b = f(x)  # `a` is still held: a new buffer, `a` unchanged
    b_address = b.numpy().__array_interface__["data"][0]
    assert b_address != address
    np.testing.assert_array_equal(a.numpy(), keep)
    del a, b
    import tracemalloc
    tracemalloc.start()
    try:
        c = f(x)  # nothing holds the last buffer any more: it is reused, nothing allocated
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert c.numpy().__array_interface__["data"][0] == b_address
    assert peak < x.numpy().nbytes // 4
    np.testing.assert_allclose(c.numpy(), np.exp(x.numpy()) * 2 + 1, rtol=1e-6)


def test_a_transpose_between_elementwise_ops_is_index_arithmetic():
    x, y = torch.randn(30, 20), torch.randn(20, 30)
    f = torch.compile(lambda a, b: torch.tanh(a * 2 + 1).t() * b - 1)
    f(x, y)
    got = f(x, y)
    np.testing.assert_allclose(got.numpy(), np.tanh(x.numpy() * 2 + 1).T * y.numpy() - 1,
                               rtol=1e-5, atol=1e-6)
    (k,) = f.kernels()  # one kernel reading x transposed in place: no buffer in between
    assert "[mul, add, tanh, mul, sub]" in k and "reads 4800 B, writes 2400 B" in k, k


def _grads_of(fn, *tensors):
    for t in tensors:
        t.grad = None
    fn().backward()
    return [t.grad.numpy().copy() for t in tensors]


def test_several_differentiable_outputs_each_carry_their_gradient():
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    fn = lambda a, b: (a @ b, (torch.tanh(a) * 2).sum(), a > 0, [torch.exp(b)])
    f = torch.compile(fn)
    f(x, w)
    outs = f(x, w)
    ref = fn(x, w)
    assert isinstance(outs, tuple) and isinstance(outs[3], list)
    assert outs[2].dtype is torch.bool and not outs[2].requires_grad
    for o, r in zip((outs[0], outs[1], outs[3][0]), (ref[0], ref[1], ref[3][0])):
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-12)
    # each output's cotangent reaches the compiled backward; unused ones count as zeros
    loss = lambda o: (o[0] * torch.arange(3.0, dtype=torch.float64)).sum() + o[1] * 3 + \
        o[3][0].sum()
    got = _grads_of(lambda: loss(f(x, w)), x, w)
    want = _grads_of(lambda: loss(fn(x, w)), x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-10)
    only_first = _grads_of(lambda: f(x, w)[1], x)
    np.testing.assert_allclose(only_first[0], 2 / np.cosh(x.detach().numpy()) ** 2, rtol=1e-10)


def test_an_lstm_with_nested_outputs_compiles_with_gradients():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(6, 5, batch_first=True)
    x = torch.randn(3, 4, 6)
    cl = torch.compile(lstm)
    cl(x)
    out, (h, c) = cl(x)
    ref_out, (ref_h, ref_c) = lstm(x)
    for a, b in ((out, ref_out), (h, ref_h), (c, ref_c)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    params = list(lstm.parameters())
    got = _grads_of(lambda: (lambda o: o[0].sum() + o[1][1].pow(2).sum())(cl(x)), *params)
    want = _grads_of(lambda: (lambda o: o[0].sum() + o[1][1].pow(2).sum())(lstm(x)), *params)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6)
    assert cl.kernels()


def test_new_batches_of_one_layout_run_the_same_program():
    f = torch.compile(lambda t: (t * 2).exp())
    traced = []
    orig = f._compile
    f._compile = lambda *a, **k: traced.append(1) or orig(*a, **k)
    for _ in range(4):
        x = torch.randn(8)
        np.testing.assert_allclose(f(x).numpy(), np.exp(x.numpy() * 2), rtol=1e-6)
    assert len(traced) == 1


def test_a_boolean_mask_read_follows_the_data():
    f = torch.compile(lambda a, b: a[a > b] * 2)
    a = torch.tensor([0.5, -1.0, 2.0, 3.0])
    with pytest.warns(UserWarning, match="nonzero"):
        f(a, torch.zeros(4))
    for threshold in (0.0, 1.0, 5.0):
        b = torch.full((4,), threshold)
        np.testing.assert_array_equal(f(a, b).numpy(), a.numpy()[a.numpy() > threshold] * 2)


def test_kernels_that_differ_only_in_what_they_store_are_two_kernels():
    # softmax stores exp(x - max), log_softmax stores x - max: same loops, same sums
    a, b = torch.randn(3, 5, 4).transpose(1, 2), torch.randn(3, 5, 4).transpose(1, 2)
    fn = lambda s, t: (torch.softmax(s, 1), torch.log_softmax(t, 1))
    f = torch.compile(fn)
    f(a, b)
    for g, w in zip(f(a, b), fn(a, b)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    names = [k.split(":")[0] for k in f.kernels() if "sum]" in k]  # (the maxes are kernels too)
    assert len(names) == 2 and names[0] != names[1], f.kernels()


def test_the_first_call_computes_once_and_builds_without_running_the_graph(monkeypatch):
    # the trace's eager run is the first call's result: building needs no second run (which
    # would also draw from the random generator a second time)
    from fusetorch.runtime import interpret, layouts, runner
    fn = lambda t: (t + torch.rand(64)).exp() * 2
    x = torch.randn(64)
    evaluated = []
    orig = interpret.eval_node
    for module in (layouts, runner):  # (where planning and scheduling evaluate nodes)
        monkeypatch.setattr(module, "eval_node", lambda n, *a, **k: evaluated.append(n.op) or
                            orig(n, *a, **k))
    torch.manual_seed(3)
    got = torch.compile(fn)(x)
    after_compiled = torch.rand(3)
    torch.manual_seed(3)
    want = fn(x)
    np.testing.assert_array_equal(torch.rand(3).numpy(), after_compiled.numpy())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert "random" not in evaluated and "exp" not in evaluated, evaluated


def test_layouts_are_derived_for_views_and_dense_externs():
    # a permuted view of a matmul read by a kernel (strided, in place), a broadcast slice of an
    # input, and an unfused cast of a transposed int64 tensor, which numpy returns transposed
    # (order K): the schedule makes such a dense extern C-contiguous, as the kernel expects
    def fn(a, b, i):
        m = (a @ b).t()
        return (m * 2 + a[:1, :4].t()).exp() + (i.t() * 3).float()
    a, b = torch.randn(4, 6), torch.randn(6, 4)
    i = torch.arange(16).reshape(4, 4)
    cf = torch.compile(fn)
    for _ in range(3):
        np.testing.assert_allclose(cf(a, b, i).numpy(), fn(a, b, i).numpy(), rtol=1e-5)
    assert any("pointwise" in k for k in cf.kernels())


def test_a_large_float_sum_does_not_depend_on_the_number_of_threads():
    # block sums, added in double per chunk, chunks added in order: the same bits whichever
    # thread ran which chunk (an OpenMP reduction combines per-thread sums in any order)
    a, b = torch.randn(1 << 22), torch.randn(1 << 22)
    cf = torch.compile(lambda u, v: ((u - v) ** 2).sum() + (u * 1e3).sum())
    cf(a, b)  # (the first call's result is the trace's eager one)
    before = torch.get_num_threads()
    try:
        got = {}
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            got[n] = cf(a, b).numpy().tobytes()
    finally:
        torch.set_num_threads(before)
    assert got[1] == got[2] == got[3]
    ref = ((a.numpy().astype(np.float64) - b.numpy()) ** 2).sum() + \
        (a.numpy().astype(np.float64) * 1e3).sum()
    assert abs(cf(a, b).item() - ref) <= 1e-6 * abs(ref)


def _documented_blocked_sum(v: np.ndarray) -> np.float32:
    """reduce.c.j2's order, step by step in numpy: blocks of 4096, element i of a block into
    float lane i % 64 in index order, the 64 lanes folded pairwise (lane j += lane j + w for
    w = 32, 16, ..., 1), block sums added in double per chunk of 64 blocks, chunks in order."""
    nblocks = -(-v.size // 4096)
    lanes_in = np.zeros(nblocks * 4096, np.float32)  # a short last block: its lanes add nothing
    lanes_in[:v.size] = v
    rows = lanes_in.reshape(nblocks, 64, 64)
    lane = np.zeros((nblocks, 64), np.float32)
    for k in range(64):
        lane += rows[:, k, :]
    w = 32
    while w:
        lane[:, :w] += lane[:, w:2 * w]
        w //= 2
    blocks = np.zeros(-(-nblocks // 64) * 64)
    blocks[:nblocks] = lane[:, 0]
    chunks = np.zeros(len(blocks) // 64)
    for b in range(64):
        chunks += blocks.reshape(-1, 64)[:, b]
    total = 0.0
    for c in chunks:
        total += c
    return np.float32(total)


def test_a_large_float_sum_adds_in_its_documented_order():
    # the order is written in the kernel's source, not chosen by the vectoriser: the same bits
    # as a numpy model of that order. The data cancel to almost nothing (each value comes
    # back negated in another block, magnitudes 1e-2..1e4), so what remains is the float
    # lanes' rounding, which any other order changes; the last block is shorter than a lane row
    rng = np.random.default_rng(0)
    half = rng.standard_normal(1 << 19) * 10.0 ** rng.uniform(-2, 4, 1 << 19)
    x = np.concatenate([half, -half[rng.permutation(half.size)], half[:100]]).astype(np.float32)
    cf = torch.compile(lambda u: u.sum())
    t = torch.from_numpy(x)
    cf(t)
    got = cf(t).numpy()
    want = _documented_blocked_sum(x)
    exact = half[:100].astype(np.float32).astype(np.float64).sum()
    assert abs(want - exact) > 1e-3  # the lanes' rounding shows in the result
    assert got.tobytes() == want.tobytes()
    assert "lane[j] += " in cf.source()
    a, b = torch.randn((1 << 20) + 100), torch.randn((1 << 20) + 100)
    sq = torch.compile(lambda u, v: ((u - v) ** 2).sum())
    sq(a, b)
    d = a.numpy() - b.numpy()
    assert sq(a, b).numpy().tobytes() == _documented_blocked_sum(d * d).tobytes()
    ref = ((a.numpy().astype(np.float64) - b.numpy()) ** 2).sum()
    assert abs(sq(a, b).item() - ref) <= 1e-6 * ref


def test_large_reductions_over_the_leading_dim_read_rows_in_parallel_tiles():
    # [4096, 4096].sum(0) read each column with a stride of a whole row: 50x slower than
    # numpy. Now tiles of the row fold every reduced row in memory order, in parallel
    x, y = torch.randn(1024, 2048), torch.randn(1024, 2048)
    cf = torch.compile(lambda a, b: ((a * b).sum(0), a.amax(0), b.argmax(0)))
    cf(x, y)
    s, m, i = cf(x, y)
    a, b = x.numpy().astype(np.float64), y.numpy()
    np.testing.assert_allclose(s.numpy(), (a * b).sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(m.numpy(), x.numpy().max(0))
    np.testing.assert_array_equal(i.numpy(), b.argmax(0))
    src = cf.source()
    assert src.count("into rows of 512") == 3 and "omp parallel for" in src, src
    assert "float part[512]" in src  # the sum adds float rows of 64 reduced rows into double


def test_a_transposed_input_keeps_the_reduced_dim_innermost():
    # the leading dim is the contiguous one here: reading it innermost is reading in order
    x = torch.randn(2048, 1024).t()
    cf = torch.compile(lambda a: (a * 2).sum(0))
    cf(x)
    np.testing.assert_allclose(cf(x).numpy(), (x.numpy().astype(np.float64) * 2).sum(0),
                               rtol=1e-5, atol=1e-4)
    assert "into rows of" not in cf.source()


@pytest.mark.parametrize("shape", [(64, 100), (3, 10000)])
def test_float_row_sums_add_float_blocks_in_double(shape):
    # a row's float32 sum in float (full-width SIMD) per block of 4096, blocks added in
    # double: as accurate as numpy's pairwise float sums, against float64 here
    x = torch.randn(*shape)
    cf = torch.compile(lambda u: (u * u).sum(1) - u.sum(-1))
    cf(x)
    a = x.numpy().astype(np.float64)
    np.testing.assert_allclose(cf(x).numpy(), (a * a).sum(1) - a.sum(1), rtol=1e-5,
                               atol=1e-6 * shape[1])
    assert "float part = 0;" in cf.source()


def test_a_scalar_constant_output_beside_a_kernel_is_handed_out():
    # `torch.ones(()) * 2` folds to a 0-d constant that no kernel computes; the partition gave
    # it no step of its own, and the compiled call raised KeyError. Also read by the kernel
    # (as a literal), and handed out as a copy: a write into it does not reach the next call
    x = torch.randn(1000)
    cf = torch.compile(lambda t: (t.sin(), t * (torch.ones(()) * 2), torch.ones(()) * 2))
    a = x.numpy().astype(np.float64)
    for _ in range(3):
        s, twice, c = cf(x)
        np.testing.assert_allclose(s.numpy(), np.sin(a), rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(twice.numpy(), a * 2)
        assert c.shape == () and c.dtype == torch.float32 and c.item() == 2.0
        c.fill_(7.0)
    assert len(cf.kernels()) == 1
