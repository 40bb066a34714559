"""Compiled eager composites: from a key's third call a composite (conv2d, max_pool2d, softmax,
losses, norms) replays its captured graph and autograd records. Values, gradients, grad_fn
names and errors are the plain call's: bitwise through the interpreter (small inputs), within
rounding through compiled kernels (large ones)."""
import numpy as np
import pytest

from fusetorch._policy import POLICY
import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.tracer import autograd as A
from fusetorch.tracer import composite_programs as cp


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Replays on (also in a FUSETORCH_EAGER_COMPILE=0 run), from an empty cache."""
    monkeypatch.setattr(POLICY, "eager_kernels", True)
    cp.clear()
    yield
    cp.clear()


def _states(fn):
    name = f"{fn.__wrapped__.__module__}.{fn.__wrapped__.__qualname__}"
    return [v for k, v in cp._CACHE.items() if k[0] == name]


def _run(fn, make_args, kwargs, calls=4):
    """Outputs, input gradients and grad_fn names of `calls` calls of `fn`, each on fresh copies
    of the same inputs (backward of the sum of the float outputs, weighted)."""
    results = []
    for _ in range(calls):
        args = make_args()
        out = fn(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        loss = None
        for k, o in enumerate(outs):
            if o is not None and o.dtype.is_floating_point and o.requires_grad:
                w = torch.linspace(0.5, 1.5, o.numel(), dtype=o.dtype).reshape(o.shape)
                term = (o * w).sum() * (k + 1)
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        results.append((
            [None if o is None else o.detach().numpy().copy() for o in outs],
            [a.grad.numpy().copy() if isinstance(a, torch.Tensor) and a.grad is not None
             else None for a in args],
            [type(o.grad_fn).__name__ if o is not None and o.grad_fn is not None else None
             for o in outs]))
    return results


def _maker(arrays, grads):
    def make():
        return [torch.tensor(a, requires_grad=g) if isinstance(a, np.ndarray) else a
                for a, g in zip(arrays, grads)]
    return make


def _compare(fn, arrays, grads, kwargs, exact):
    make = _maker(arrays, grads)
    A._CACHE.clear()  # both runs' backward: interpreted first, then compiled (large graphs)
    want = _run(fn.__wrapped__, make, kwargs)
    A._CACHE.clear()
    got = _run(fn, make, kwargs)
    (state,) = _states(fn)
    assert isinstance(state, cp._Template), "the third call should replay"
    for (wo, wg, wn), (go, gg, gn) in zip(want, got):
        assert wn == gn
        for a, b in zip(wo + wg, go + gg):
            if a is None:
                assert b is None
            elif exact:
                np.testing.assert_array_equal(b, a)
            else:
                tol = 1e-5 if a.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
    return state


rng = np.random.default_rng(0)


def _f(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


SMALL = [  # (function, arrays, which require grad, kwargs): interpreted replays, bitwise
    (F.conv2d, [_f(2, 3, 7, 7), _f(4, 3, 3, 3), _f(4)], [True, True, True],
     {"stride": 2, "padding": 1}),
    (F.conv2d, [_f(2, 4, 6, 6), _f(4, 2, 3, 3)], [True, False], {"groups": 2}),
    (F.max_pool2d, [_f(2, 3, 8, 8)], [True], {"kernel_size": 2}),
    (F.max_pool2d, [_f(2, 3, 9, 9)], [True],
     {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True}),
    (F.cross_entropy, [_f(8, 5), rng.integers(0, 5, (8,))], [True, False], {}),
    (F.cross_entropy, [_f(8, 5), np.array([0, 1, -100, 4, 2, 2, -100, 3]), _f(5) ** 2],
     [True, False, False], {"ignore_index": -100, "reduction": "sum"}),
    (F.cross_entropy, [_f(8, 5), rng.integers(0, 5, (8,))], [True, False],
     {"label_smoothing": 0.1}),
    (F.layer_norm, [_f(4, 6), (6,), _f(6), _f(6)], [True, None, True, True], {}),
    (F.group_norm, [_f(2, 4, 3), 2, _f(4), _f(4)], [True, None, True, True], {}),
    (F.conv2d, [_f(2, 3, 5, 5, dtype=np.float64), _f(4, 3, 3, 3, dtype=np.float64)],
     [False, False], {}),
]


@pytest.mark.parametrize("fn,arrays,grads,kwargs", SMALL,
                         ids=[f"{c[0].__name__}{i}" for i, c in enumerate(SMALL)])
def test_small_replays_are_the_plain_calls_bit_for_bit(fn, arrays, grads, kwargs):
    state = _compare(fn, arrays, grads, kwargs, exact=True)
    assert state.interpret and state.program is None


@pytest.mark.parametrize("fn,array,dim,name", [
    (F.softmax, _f(5, 7), 1, "SoftmaxBackward0"),
    (F.log_softmax, _f(3, 4, 5), -1, "LogSoftmaxBackward0"),
    (F.log_softmax, _f(1, 57), 1, "LogSoftmaxBackward0")])
def test_small_softmaxes_run_plainly_and_keep_no_key(fn, array, dim, name):
    # (one primitive: a small input's replay would be that primitive interpreted)
    make = _maker([array], [True])
    want = _run(fn.__wrapped__, make, {"dim": dim})
    got = _run(fn, make, {"dim": dim})
    assert _states(fn) == []
    for (wo, wg, wn), (go, gg, gn) in zip(want, got):
        assert wn == gn == [name]
        for a, b in zip(wo + wg, go + gg):
            np.testing.assert_array_equal(b, a)


LARGE = [  # compiled programs where they fuse: within rounding
    (F.log_softmax, [_f(64, 100)], [True], {"dim": 1}),
    (F.cross_entropy, [_f(256, 40), rng.integers(0, 40, (256,))], [True, False], {}),
    (F.layer_norm, [_f(64, 128, dtype=np.float64), (128,)], [True, None], {}),
    (F.softmax, [_f(32, 16, 24)], [True], {"dim": 1}),
]


@pytest.mark.parametrize("fn,arrays,grads,kwargs", LARGE,
                         ids=[f"{c[0].__name__}{i}" for i, c in enumerate(LARGE)])
def test_large_replays_run_a_program_with_the_plain_calls_values(fn, arrays, grads, kwargs):
    state = _compare(fn, arrays, grads, kwargs, exact=False)
    assert not state.interpret and state.program.prepared


UNFUSED = [  # large, but nothing to fuse: interpreted (their hot spots are eager kernels)
    (F.conv2d, [_f(8, 3, 20, 20), _f(6, 3, 5, 5), _f(6)], [True, True, True], {}),
]


@pytest.mark.parametrize("fn,arrays,grads,kwargs", UNFUSED,
                         ids=[f"{c[0].__name__}{i}" for i, c in enumerate(UNFUSED)])
def test_large_replays_without_fusion_build_no_program(fn, arrays, grads, kwargs):
    state = _compare(fn, arrays, grads, kwargs, exact=True)
    assert state.interpret and state.program is False


def test_max_pool_with_indices_replays_as_a_program_of_the_max_pool_kernel():
    """return_indices adds the max_pool2d_index primitive beside max_pool2d: the program's
    max pooling group (codegen/fuse.py) computes the values and indices in one kernel,
    exactly."""
    state = _compare(F.max_pool2d, [_f(8, 6, 16, 16)], [True],
                     {"kernel_size": 2, "return_indices": True}, exact=True)
    assert not state.interpret
    groups = state.program.plan.groups()
    assert [g.kind for g in groups] == ["max_pool2d"] and len(groups[0].outputs) == 2


@pytest.mark.parametrize("shape", [(4, 3, 5, 5), (16, 8, 12, 12)], ids=["small", "large"])
def test_batch_norm_replays_its_pure_part_and_updates_running_statistics(shape, monkeypatch):
    import fusetorch.nn as nn

    def steps(on: bool):
        monkeypatch.setattr(POLICY, "eager_kernels", on)
        cp.clear()
        torch.manual_seed(0)
        bn = nn.BatchNorm2d(shape[1]).double()
        x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
        out = []
        for k in range(5):
            bn.train(k != 4)
            y = bn(x)
            (y * y).sum().backward()
            out.append([y.detach().numpy().copy(), x.grad.numpy().copy(),
                        bn.weight.grad.numpy().copy(), bn.running_mean.numpy().copy(),
                        bn.running_var.numpy().copy()])
            x.grad = bn.weight.grad = bn.bias.grad = None
        return out

    want, got = steps(False), steps(True)
    assert any(isinstance(v, cp._Template) and k[0].endswith("_batch_norm_train")
               for k, v in cp._CACHE.items())
    for a, b in zip(want, got):
        for u, v in zip(a, b):
            np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-12)


def test_no_grad_replays_and_held_results_keep_their_values():
    x = torch.randn(8, 3, 20, 20)
    w = torch.randn(6, 3, 5, 5)
    with torch.no_grad():
        outs = [F.conv2d(x, w) for _ in range(5)]
    want = F.conv2d.__wrapped__(x, w).numpy()
    for o in outs:  # later calls reused no buffer a held result lives in
        np.testing.assert_allclose(o.numpy(), want, rtol=1e-5, atol=1e-5)
        assert not o.requires_grad


def test_value_checks_raise_in_a_replay():
    x = torch.randn(6, 4, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 0, 1])
    for _ in range(3):
        F.cross_entropy(x, y)
    assert isinstance(_states(F.cross_entropy)[0], cp._Template)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, torch.tensor([0, 1, 7, 3, 0, 1]))


def test_saved_inputs_are_version_checked_in_a_replay():
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    for _ in range(3):
        x = torch.randn(2, 3, 5, 5)
        y = F.conv2d(x, w)
    assert isinstance(_states(F.conv2d)[0], cp._Template)
    x.add_(1)  # conv2d saved x for w's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_views_of_inputs_share_their_version_counter_in_a_replay():
    @cp.composite
    def linear(x, w):  # (F.linear is one primitive, with no view of w)
        return x.matmul(w.t())

    w = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(5, 3, requires_grad=True)
    for _ in range(3):
        y = linear(x, w)  # matmul saved w.t(), a view of w
    assert isinstance(_states(linear)[0], cp._Template)
    with torch.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_outputs_that_were_views_of_temporaries_stay_views():
    @cp.composite
    def f(x):
        return (x * 2).reshape(-1)[1::2]

    def grad_after_write(fn):
        x = torch.randn(3, 4, requires_grad=True, generator=torch.Generator().manual_seed(1))
        y = fn(x)
        y.mul_(3)  # rebased onto the view's base (tracer/views.py), as in PyTorch
        (y * y).sum().backward()
        return y.detach().numpy().copy(), x.grad.numpy().copy(), y._base is not None

    want = grad_after_write(f.__wrapped__)
    for _ in range(3):
        got = grad_after_write(f)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[2] and want[2]
    assert isinstance(_states(f)[0], cp._Template)


def test_calls_that_cannot_be_replayed_stay_plain():
    @cp.composite
    def writes(x):
        y = x * 2
        y.add_(1)
        return y

    @cp.composite
    def reads(x):
        return x * float(x.sum())

    @cp.composite
    def view(x):
        return x.reshape(-1)

    x = torch.randn(3, 4)
    for fn in (writes, reads, view):
        for _ in range(3):
            np.testing.assert_allclose(fn(x).numpy(), fn.__wrapped__(x).numpy())
        assert _states(fn) == [cp._PLAIN]


def test_disabled_and_traced_calls_capture_nothing(monkeypatch):
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    for _ in range(3):
        F.max_pool2d(x, 2)
    assert not cp._CACHE
    monkeypatch.setattr(POLICY, "eager_kernels", True)
    compiled = torch.compile(lambda t: F.max_pool2d(t, 2).sum())
    for _ in range(3):
        compiled(x).backward()
    assert not cp._CACHE  # compile traces the primitives itself


def test_autocast_and_the_profiler_see_plain_calls():
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    w = torch.randn(5, 3, 3, 3, requires_grad=True)
    for _ in range(3):
        F.conv2d(x, w)  # a template for float32 inputs
    with torch.autocast("cpu", dtype=torch.bfloat16):
        # the autocast entry casts, then calls conv2d with autocast off (a key of its own)
        outs = [F.conv2d(x, w) for _ in range(4)]
        want = F.conv2d.__wrapped__(x, w)
    for o in outs:
        assert o.dtype == torch.bfloat16
        np.testing.assert_array_equal(o.float().detach().numpy(), want.float().detach().numpy())
    from fusetorch.profiler import profile
    with profile() as prof:
        F.conv2d(x, w)
    names = {e.key for e in prof.key_averages()}
    assert any("conv" in n for n in names), names


def test_checkpointed_regions_replay_nothing():
    from fusetorch.utils.checkpoint import checkpoint
    x = torch.randn(4, 6, requires_grad=True)  # (layer_norm: small softmaxes keep no key)
    for _ in range(3):
        F.layer_norm(x, (6,))  # a template exists for this key
    assert isinstance(_states(F.layer_norm)[0], cp._Template)
    y = checkpoint(lambda t: F.layer_norm(t, (6,)), x, use_reentrant=False)
    (y * y).sum().backward()
    g = x.grad.clone()
    x.grad = None
    (lambda r: (r * r).sum())(F.layer_norm.__wrapped__(x, (6,))).backward()
    np.testing.assert_array_equal(g.numpy(), x.grad.numpy())


def test_backward_graphs_of_replays_are_the_plain_ones():
    x = torch.randn(4, 3, 9, 9, requires_grad=True)
    w = torch.randn(5, 3, 3, 3, requires_grad=True)
    texts = []
    for _ in range(4):
        y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
        texts.append(A.backward_graph_text(y.sum()))
        A.backward([y.sum()])
    assert len(set(texts)) == 1 and "max_pool2d_grad" in texts[0]
