"""The fused LSTM layer (`lstm_scan`, ir/recurrent_ops.py; its CPU kernels,
runtime/recurrent.py). test_rnn.py checks LSTM values against numpy and gradients by finite
differences, which now run through it; here: the fused layer against the unrolled one
(`torch.backends.cudnn.flags(enabled=False)`, PyTorch's switch for its fused RNN layers), the C
kernels against the reference loop, the gate cotangents nothing in nn reads, double
backward's error, and what records it."""
import numpy as np
import pytest

from fusetorch._policy import POLICY
import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.autograd import gradcheck
from fusetorch.ir.ops import OPS
from fusetorch.runtime import eager_kernels, recurrent
from fusetorch.runtime.device import cpu_backend

F64 = torch.float64
RNG = np.random.default_rng(5)


def _run(model, x, state, loss_of):
    out, (h, c) = model(x, state)
    loss = loss_of(out, h, c)
    params = [x, *state, *model.parameters()]
    return [out, h, c, *torch.autograd.grad(loss, params)]


CONFIGS = [dict(), dict(batch_first=True), dict(bidirectional=True, num_layers=2),
           dict(bias=False), dict(num_layers=3, batch_first=True)]


@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: ",".join(kw) or "plain")
@pytest.mark.parametrize("steps", [1, 4])
def test_fused_layer_equals_the_unrolled_steps(kw, steps):
    torch.manual_seed(1)
    model = nn.LSTM(5, 6, **kw).double()
    d = (2 if model.bidirectional else 1) * model.num_layers
    x = torch.randn(*((3, steps) if model.batch_first else (steps, 3)), 5, dtype=F64,
                    requires_grad=True)
    state = tuple(torch.randn(d, 3, 6, dtype=F64, requires_grad=True) for _ in range(2))
    loss_of = lambda o, h, c: o.sin().sum() + (1.5 * h).pow(2).sum() + c.cos().sum()  # noqa: E731
    fused = _run(model, x, state, loss_of)
    with torch.backends.cudnn.flags(enabled=False):
        unrolled = _run(model, x, state, loss_of)
    for a, b in zip(fused, unrolled):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)
    if steps > 1:  # PyTorch's layout: [T, B, H], a transposed view when batch_first
        assert fused[0].is_contiguous() != model.batch_first


def test_unbatched_input_and_default_state():
    torch.manual_seed(2)
    model = nn.LSTM(4, 3).double()
    x = torch.randn(5, 4, dtype=F64)
    out, (h, c) = model(x)
    with torch.backends.cudnn.flags(enabled=False):
        ref, (rh, rc) = model(x)
    assert out.shape == (5, 3) and h.shape == (1, 3) and c.shape == (1, 3)
    for a, b in ((out, ref), (h, rh), (c, rc)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-13)


@pytest.mark.parametrize("batched", [True, False])
def test_lstm_cell_is_one_fused_step(batched):
    torch.manual_seed(6)
    cell = nn.LSTMCell(4, 5).double()
    x = torch.randn(*((3, 4) if batched else (4,)), dtype=F64, requires_grad=True)
    h0 = torch.randn(*((3, 5) if batched else (5,)), dtype=F64, requires_grad=True)
    c0 = torch.randn_like(h0).requires_grad_()

    def run():
        h, c = x, None
        for _ in range(3):  # a loop of steps, as scripts write them
            h, c = cell(x, (h0, c0) if c is None else (h, c))
        loss = (h * 1.5).sin().sum() + c.pow(2).sum()
        return [h, c, *torch.autograd.grad(loss, [x, h0, c0, *cell.parameters()])]
    fused = run()
    with torch.backends.cudnn.flags(enabled=False):
        unrolled = run()
    for a, b in zip(fused, unrolled):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)


@pytest.mark.parametrize("lengths", [[5, 3, 3, 1], [4, 4, 4], [2, 6, 1, 6, 3]])
@pytest.mark.parametrize("kw", [dict(), dict(bidirectional=True, num_layers=2)],
                         ids=["one", "bidirectional,2"])
def test_a_packed_batch_runs_one_scan_per_batch_size(lengths, kw, monkeypatch):
    """Sequences of k distinct lengths: k scans, states carried between them (shrinking
    forwards, growing in reverse) as the unrolled steps carry them; unsorted lengths too."""
    from fusetorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    impl, scans = cpu_backend().impl, []
    scan = impl["lstm_scan"]
    monkeypatch.setitem(impl, "lstm_scan", lambda *a, **k: scans.append(1) or scan(*a, **k))
    torch.manual_seed(7)
    model = nn.LSTM(3, 4, batch_first=True, **kw).double()
    d = (2 if model.bidirectional else 1) * model.num_layers
    x = torch.randn(len(lengths), max(lengths), 3, dtype=F64, requires_grad=True)
    h0 = torch.randn(d, len(lengths), 4, dtype=F64, requires_grad=True)
    c0 = torch.randn(d, len(lengths), 4, dtype=F64, requires_grad=True)

    def run():
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = model(packed, (h0, c0))
        padded, _ = pad_packed_sequence(out, batch_first=True)
        loss = padded.sin().sum() + (1.5 * h).pow(2).sum() + c.cos().sum()
        return [padded, h, c, *torch.autograd.grad(loss, [x, h0, c0, *model.parameters()])]
    fused = run()
    assert len(scans) == len(set(lengths)) * (2 if model.bidirectional else 1) * \
        model.num_layers
    with torch.backends.cudnn.flags(enabled=False):
        unrolled = run()
    for a, b in zip(fused, unrolled):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)


def test_gradcheck_through_a_reversed_layer():
    torch.manual_seed(3)
    model = nn.LSTM(2, 3, bidirectional=True).double()
    x = torch.randn(3, 2, 2, dtype=F64, requires_grad=True)
    h0 = torch.randn(2, 2, 3, dtype=F64, requires_grad=True)
    c0 = torch.randn(2, 2, 3, dtype=F64, requires_grad=True)
    w = model.weight_hh_l0_reverse

    def f(x, h0, c0, w):
        out, (h, c) = model(x, (h0, c0))
        return out.sum() + h.pow(2).sum() + (c * 0.5).sum()
    assert gradcheck(f, (x, h0, c0, w))


# ---------------------------------------------------------------- the primitives themselves

def _arrays(dtype, t=7, b=3, hid=5):
    gi = RNG.standard_normal((t, b, 4 * hid)).astype(dtype)
    h0, c0 = (RNG.standard_normal((b, hid)).astype(dtype) for _ in range(2))
    w = (RNG.standard_normal((4 * hid, hid)) * 0.5).astype(dtype)
    return gi, h0, c0, w


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("size", [(7, 3, 5), (4, 6, 70)])
def test_step_kernels_agree_with_the_reference_loop(dtype, tol, reverse, size):
    """Sizes with the product's column blocks (64 floats wide with AVX-512), their remainder
    columns and rows past the last block of 4, and with none but remainders."""
    impl = cpu_backend().impl
    gi, h0, c0, w = _arrays(dtype, *size)
    if recurrent._kernels(np.dtype(dtype), size[2]) is None:
        pytest.skip("no C compiler: the reference runs")
    ws = impl["lstm_scan"](gi, h0, c0, w, reverse=reverse)
    ref = OPS["lstm_scan"].eager(np)(gi, h0, c0, w, reverse=reverse)
    np.testing.assert_allclose(ws, ref, rtol=tol, atol=tol)
    # every part of the cotangent nonzero: the gate activations' too, which nn never reads
    g = RNG.standard_normal(ws.shape).astype(dtype)
    d = impl["lstm_scan_grad"](g, ws, h0, c0, w, reverse=reverse)
    d_ref = OPS["lstm_scan_grad"].eager(np)(g, ref, h0, c0, w, reverse=reverse)
    np.testing.assert_allclose(d, d_ref, rtol=tol * 10, atol=tol * 10)
    assert not d[-1, :, 2 * size[2]:].any()  # the last row: [dh0 | dc0 | 0 | 0]


@pytest.mark.parametrize("reverse", [False, True])
def test_threads_share_the_batch_and_give_one_threads_bits(reverse, monkeypatch):
    """On OpenMP's threads the batch's rows are split (blocks of 4; each row's recurrence
    reads no other): every thread count gives one thread's bits, and the reference's values.
    Batches that split evenly, unevenly and into a short last range."""
    from fusetorch import _threads
    impl = cpu_backend().impl
    if recurrent._kernels(np.dtype(np.float32), 70) is None:
        pytest.skip("no C compiler: the reference runs")
    monkeypatch.setattr(_threads, "PARALLEL_FMAS", 0)
    monkeypatch.setattr(_threads, "others_busy", lambda: False)
    monkeypatch.setattr(_threads, "last_threaded_product", float("-inf"))
    for t, b in ((5, 16), (4, 10), (3, 9)):
        gi, h0, c0, w = _arrays(np.float32, t, b, 70)
        g = None
        runs = []
        for threads in (1, 2, 3):
            monkeypatch.setattr(_threads, "get_num_threads", lambda n=threads: n)
            ws = impl["lstm_scan"](gi, h0, c0, w, reverse=reverse)
            g = RNG.standard_normal(ws.shape).astype(np.float32) if g is None else g
            runs.append((ws, impl["lstm_scan_grad"](g, ws, h0, c0, w, reverse=reverse)))
        for ws, d in runs[1:]:
            np.testing.assert_array_equal(ws, runs[0][0])
            np.testing.assert_array_equal(d, runs[0][1])
        ref = OPS["lstm_scan"].eager(np)(gi, h0, c0, w, reverse=reverse)
        np.testing.assert_allclose(runs[0][0], ref, rtol=2e-5, atol=2e-5)
    assert recurrent._threads_for(50, 16, 128) == 3  # (the last count patched in)
    assert recurrent._threads_for(50, 4, 128) == 1  # one block of rows


def test_gate_cotangents_by_finite_differences():
    """The workspace's every part, gates included, differentiated against central differences
    of the reference loop in float64 (a random linear function of the workspace)."""
    gi, h0, c0, w = _arrays(np.float64, t=3, b=2, hid=2)
    scan = OPS["lstm_scan"].eager(np)
    g = RNG.standard_normal(scan(gi, h0, c0, w, reverse=False).shape)
    d = cpu_backend().impl["lstm_scan_grad"](g, scan(gi, h0, c0, w, reverse=False), h0, c0, w,
                                             reverse=False)
    eps = 1e-6
    for arr, want in ((gi, d[:3]), (h0, d[3, :, :2]), (c0, d[3, :, 2:4])):
        got = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = (g * scan(gi, h0, c0, w, reverse=False)).sum()
            arr[idx] = old - eps
            down = (g * scan(gi, h0, c0, w, reverse=False)).sum()
            arr[idx] = old
            got[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(want, got, rtol=1e-6, atol=1e-8)


def test_one_kernel_serves_every_sequence_length_and_batch():
    impl = cpu_backend().impl
    if recurrent._kernels(np.dtype(np.float32), 5) is None:
        pytest.skip("no C compiler")
    lstm_keys = lambda: {k for k in eager_kernels._PROGRAMS if k[0] == "lstm_scan"}  # noqa: E731
    before = lstm_keys()
    for t, b in ((2, 1), (9, 4), (30, 2)):
        gi, h0, c0, w = _arrays(np.float32, t, b)
        np.testing.assert_allclose(impl["lstm_scan"](gi, h0, c0, w, reverse=False),
                                   OPS["lstm_scan"].eager(np)(gi, h0, c0, w, reverse=False),
                                   rtol=2e-5, atol=2e-5)
    assert lstm_keys() == before


def test_without_eager_kernels_the_reference_runs(monkeypatch):
    monkeypatch.setattr(POLICY, "eager_kernels", False)
    assert recurrent._kernels(np.dtype(np.float32), 5) is None
    gi, h0, c0, w = _arrays(np.float32)
    np.testing.assert_array_equal(cpu_backend().impl["lstm_scan"](gi, h0, c0, w, reverse=True),
                                  OPS["lstm_scan"].eager(np)(gi, h0, c0, w, reverse=True))


# ---------------------------------------------------------------- autograd and recording

def test_double_backward_names_the_switch():
    model = nn.LSTM(2, 3).double()
    x = torch.randn(4, 1, 2, dtype=F64, requires_grad=True)

    def penalty():
        out, _ = model(x)
        (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        return g.pow(2).sum()
    with pytest.raises(RuntimeError, match=r"(?s)Double backwards is not supported.*"
                                           r"torch\.backends\.cudnn\.flags\(enabled=False\)"):
        penalty().backward()
    with torch.backends.cudnn.flags(enabled=False):
        penalty().backward()  # the unrolled layer has second derivatives
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_cudnn_flags_restore_the_old_values():
    cudnn = torch.backends.cudnn
    old = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
    with pytest.raises(KeyError):
        with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
            assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
            raise KeyError
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == old


def test_a_layer_records_one_scan_and_its_backward_one_scan_grad():
    model = nn.LSTM(3, 4, batch_first=True)
    x = torch.randn(2, 6, 3)
    x.requires_grad_()
    compiled = torch.compile(lambda x: model(x)[0].sum())
    compiled(x).backward()
    forward, backward = compiled.graph(), compiled.backward_graph()
    assert forward.count("lstm_scan(") == 1 and "tanh" not in forward
    assert backward.count("lstm_scan_grad(") == 1 and "tanh" not in backward


def test_half_precision_and_projection_run_unrolled():
    torch.manual_seed(4)
    for model, x in ((nn.LSTM(3, 4, proj_size=2), torch.randn(5, 2, 3)),
                     (nn.LSTM(3, 4).to(torch.bfloat16), torch.randn(5, 2, 3).bfloat16())):
        out, (h, c) = model(x)
        with torch.backends.cudnn.flags(enabled=False):
            ref, _ = model(x)
        np.testing.assert_array_equal(out.float().detach().numpy(),
                                      ref.float().detach().numpy())


# ---------------------------------------------------------------- the folded matmul

def test_a_stack_times_a_matrix_is_one_product_with_its_gradient():
    """The eager matmul folds a [.., M, K] stack (also a strided one) into one product, and
    the matrix's gradient is one product over all rows: values against numpy in float64."""
    a = RNG.standard_normal((5, 4, 3))
    b = RNG.standard_normal((3, 2))
    x = torch.tensor(a.transpose(1, 0, 2).copy(), requires_grad=True)  # [4, 5, 3]
    xs = x.transpose(0, 1)  # a strided [5, 4, 3]
    w = torch.tensor(b, requires_grad=True)
    y = xs @ w
    np.testing.assert_allclose(y.detach().numpy(), a @ b, rtol=1e-14)
    g = RNG.standard_normal((5, 4, 2))
    y.backward(torch.tensor(g))
    np.testing.assert_allclose(w.grad.numpy(), np.einsum("bmk,bmn->kn", a, g), rtol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), (g @ b.T).transpose(1, 0, 2), rtol=1e-13)


# ---------------------------------------------------------------- the layer primitive

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
def test_the_layer_is_one_lstm_node_equal_to_its_composition_bit_for_bit(bias, reverse):
    # lstm (ir/recurrent_ops.py) is linear then lstm_scan: its values and gradients are
    # theirs, recorded one node that passes.decompose turns into the two
    from fusetorch.ir import passes
    from fusetorch.tracer import dispatch as D
    from fusetorch.tracer.trace import capture
    torch.manual_seed(9)
    x = torch.randn(5, 3, 4, requires_grad=True)
    h0, c0 = torch.randn(3, 6, requires_grad=True), torch.randn(3, 6, requires_grad=True)
    w_ih, w_hh = torch.randn(24, 4, requires_grad=True), torch.randn(24, 6, requires_grad=True)
    b = [torch.randn(24, requires_grad=True)] if bias else []
    ins = [x, h0, c0, w_ih, w_hh] + b
    ct = torch.randn(6, 5, 3, 6)

    def whole():
        return D.apply("lstm", [x, h0, c0, w_ih, w_hh] + b, {"reverse": reverse})

    def composed():
        gi = torch.nn.functional.linear(x, w_ih, *b)
        return D.apply("lstm_scan", [gi, h0, c0, w_hh], {"reverse": reverse})
    got = [whole(), composed()]
    grads = [torch.autograd.grad(y, ins, ct) for y in got]
    np.testing.assert_array_equal(got[0].detach().numpy(), got[1].detach().numpy())
    for a, c in zip(*grads):
        np.testing.assert_array_equal(a.numpy(), c.numpy())
    g, _ = capture(lambda *ts: whole(), *ins)
    assert [n.op for n in g.nodes if n.op != "input"] == ["lstm"]
    ops = [n.op for n in passes.decompose(g).nodes if n.op != "input"]
    assert ops == ["permute", "matmul"] + ["add"] * bias + ["lstm_scan"]


def test_an_lstm_layer_records_one_lstm_node():
    from fusetorch.tracer.trace import capture
    model = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    g, _ = capture(lambda x: model(x)[0], torch.randn(5, 2, 3))
    assert sum(n.op == "lstm" for n in g.nodes) == 4 and \
        not any(n.op in ("matmul", "lstm_scan") for n in g.nodes)
