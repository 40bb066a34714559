"""RNN, LSTM, GRU and their cells.

Forward values against a numpy float64 reference written here from PyTorch's documented
equations (nn.RNN / nn.LSTM / nn.GRU docs: gate order i, f, g, o for the LSTM and r, z, n for the
GRU with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); layer k > 0 reads the previous layer's
outputs, both directions concatenated), gradients through `gradcheck` in float64 over short
sequences. Parameter names, shapes, reprs and error messages were observed by hand in PyTorch
2.13.0 (CPU) and are written literally; torch is not imported here.
"""
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.autograd import gradcheck

F64 = torch.float64
RNG = np.random.default_rng(11)


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def np_(t):
    return t.detach().numpy()


def sig(x):
    return 1 / (1 + np.exp(-x))


# ---------------------------------------------------------------- numpy reference

def cell_np(mode, x, h, c, p):
    """One step; p: dict with w_ih, w_hh, b_ih, b_hh (biases may be None), w_hr."""
    b_ih = 0 if p["b_ih"] is None else p["b_ih"]
    b_hh = 0 if p["b_hh"] is None else p["b_hh"]
    gi = x @ p["w_ih"].T + b_ih
    gh = h @ p["w_hh"].T + b_hh
    if mode == "RNN_TANH":
        return np.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0), None
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        if p.get("w_hr") is not None:
            h = h @ p["w_hr"].T
        return h, c
    ir, iz, in_ = np.split(gi, 3, axis=-1)
    hr, hz, hn = np.split(gh, 3, axis=-1)
    r, z = sig(ir + hr), sig(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (1 - z) * n + z * h, None


def params_np(module, layer, suffix=""):
    def get(name):
        t = getattr(module, f"{name}_l{layer}{suffix}", None)
        return None if t is None else np_(t).astype(np.float64)
    return {"w_ih": get("weight_ih"), "w_hh": get("weight_hh"), "b_ih": get("bias_ih"),
            "b_hh": get("bias_hh"), "w_hr": get("weight_hr")}


def rnn_np(module, mode, x, h0=None, c0=None):
    """x: [T, B, I] (seq-first). Returns output [T, B, D*H'], h_n, c_n as PyTorch lays them out."""
    L, D = module.num_layers, 2 if module.bidirectional else 1
    H = module.hidden_size
    Hp = module.proj_size or H
    T, B = x.shape[:2]
    h0 = np.zeros((L * D, B, Hp)) if h0 is None else h0
    c0 = np.zeros((L * D, B, H)) if c0 is None else c0
    hn, cn = [], []
    inp = x
    for layer in range(L):
        outs = []
        for d in range(D):
            p = params_np(module, layer, "_reverse" if d else "")
            h, c = h0[layer * D + d], c0[layer * D + d]
            out = np.zeros((T, B, Hp))
            steps = range(T - 1, -1, -1) if d else range(T)
            for t in steps:
                h, c = cell_np(mode, inp[t], h, c, p)
                out[t] = h
            outs.append(out)
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, axis=-1)
    return inp, np.stack(hn), (np.stack(cn) if mode == "LSTM" else None)


MODES = {"RNN": "RNN_TANH", "LSTM": "LSTM", "GRU": "GRU"}


def make(kind, *args, **kw):
    return getattr(nn, kind)(*args, **kw).double()


# ---------------------------------------------------------------- given weights

def test_lstm_with_given_weights_over_steps():
    """Weights set by hand (not the random init), four steps of the documented equations."""
    m = make("LSTM", 2, 3)
    w_ih = np.arange(24, dtype=np.float64).reshape(12, 2) / 20 - 0.5
    w_hh = np.cos(np.arange(36, dtype=np.float64)).reshape(12, 3) * 0.4
    b_ih = np.linspace(-0.3, 0.3, 12)
    b_hh = np.linspace(0.2, -0.1, 12)
    with torch.no_grad():
        for name, v in (("weight_ih_l0", w_ih), ("weight_hh_l0", w_hh), ("bias_ih_l0", b_ih),
                        ("bias_hh_l0", b_hh)):
            getattr(m, name).copy_(t64(v))
    x = np.array([[[0.5, -1.0]], [[1.5, 0.25]], [[-0.75, 0.0]], [[0.1, 2.0]]])
    out, (h, c) = m(t64(x))
    # written out step by step (i, f, g, o order)
    hh, cc = np.zeros((1, 3)), np.zeros((1, 3))
    want = []
    for t in range(4):
        gates = x[t] @ w_ih.T + b_ih + hh @ w_hh.T + b_hh
        i, f, g, o = sig(gates[:, :3]), sig(gates[:, 3:6]), np.tanh(gates[:, 6:9]), \
            sig(gates[:, 9:])
        cc = f * cc + i * g
        hh = o * np.tanh(cc)
        want.append(hh)
    np.testing.assert_allclose(np_(out), np.stack(want), rtol=1e-12)
    np.testing.assert_allclose(np_(h), hh[None], rtol=1e-12)
    np.testing.assert_allclose(np_(c), cc[None], rtol=1e-12)


def test_gru_with_given_weights_over_steps():
    m = make("GRU", 2, 2)
    w_ih = np.sin(np.arange(12, dtype=np.float64)).reshape(6, 2)
    w_hh = np.cos(np.arange(12, dtype=np.float64)).reshape(6, 2) * 0.5
    b_ih = np.linspace(-0.2, 0.4, 6)
    b_hh = np.linspace(0.3, -0.3, 6)
    with torch.no_grad():
        for name, v in (("weight_ih_l0", w_ih), ("weight_hh_l0", w_hh), ("bias_ih_l0", b_ih),
                        ("bias_hh_l0", b_hh)):
            getattr(m, name).copy_(t64(v))
    x = np.array([[[1.0, -0.5]], [[0.3, 0.8]], [[-1.2, 0.4]]])
    h0 = np.array([[[0.2, -0.7]]])
    out, h = m(t64(x), t64(h0))
    hh = h0[0]
    for t in range(3):
        r = sig(x[t] @ w_ih[0:2].T + b_ih[0:2] + hh @ w_hh[0:2].T + b_hh[0:2])
        z = sig(x[t] @ w_ih[2:4].T + b_ih[2:4] + hh @ w_hh[2:4].T + b_hh[2:4])
        n = np.tanh(x[t] @ w_ih[4:6].T + b_ih[4:6] + r * (hh @ w_hh[4:6].T + b_hh[4:6]))
        hh = (1 - z) * n + z * hh
        np.testing.assert_allclose(np_(out)[t], hh, rtol=1e-12)
    np.testing.assert_allclose(np_(h)[0], hh, rtol=1e-12)


# ---------------------------------------------------------------- against the reference

CONFIGS = [
    dict(),
    dict(num_layers=2),
    dict(num_layers=2, bidirectional=True),
    dict(batch_first=True, bias=False),
    dict(num_layers=3, bidirectional=True, batch_first=True),
]


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=[str(c) for c in CONFIGS])
def test_forward_matches_reference(kind, cfg):
    m = make(kind, 3, 4, **cfg)
    T, B = 5, 2
    x = RNG.standard_normal((T, B, 3))
    xin = x.transpose(1, 0, 2) if m.batch_first else x
    out, state = m(t64(xin))
    want, hn, cn = rnn_np(m, MODES[kind], x)
    got = np_(out).transpose(1, 0, 2) if m.batch_first else np_(out)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    if kind == "LSTM":
        np.testing.assert_allclose(np_(state[0]), hn, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(np_(state[1]), cn, rtol=1e-11, atol=1e-12)
    else:
        np.testing.assert_allclose(np_(state), hn, rtol=1e-11, atol=1e-12)


def test_relu_rnn_and_initial_states():
    m = make("RNN", 3, 4, 2, "relu")
    assert m.nonlinearity == "relu" and m.mode == "RNN_RELU"
    x = RNG.standard_normal((4, 2, 3))
    h0 = RNG.standard_normal((2, 2, 4))
    out, h = m(t64(x), t64(h0))
    want, hn, _ = rnn_np(m, "RNN_RELU", x, h0)
    np.testing.assert_allclose(np_(out), want, rtol=1e-12)
    np.testing.assert_allclose(np_(h), hn, rtol=1e-12)
    lstm = make("LSTM", 3, 4, num_layers=2, bidirectional=True)
    h0, c0 = RNG.standard_normal((4, 2, 4)), RNG.standard_normal((4, 2, 4))
    out, (h, c) = lstm(t64(x), (t64(h0), t64(c0)))
    want, hn, cn = rnn_np(lstm, "LSTM", x, h0, c0)
    np.testing.assert_allclose(np_(out), want, rtol=1e-12)
    np.testing.assert_allclose(np_(c), cn, rtol=1e-12)


def test_lstm_projections():
    m = make("LSTM", 3, 5, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["weight_hh_l0"] == (20, 2) and shapes["weight_hr_l0"] == (2, 5)
    assert shapes["weight_ih_l1_reverse"] == (20, 4)
    x = RNG.standard_normal((4, 2, 3))
    out, (h, c) = m(t64(x))
    want, hn, cn = rnn_np(m, "LSTM", x)
    assert out.shape == (4, 2, 4) and h.shape == (4, 2, 2) and c.shape == (4, 2, 5)
    np.testing.assert_allclose(np_(out), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(np_(c), cn, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_equals_batch_of_one(kind):
    m = make(kind, 3, 4, num_layers=2, batch_first=True)
    x = RNG.standard_normal((6, 3))
    out, state = m(t64(x))
    out_b, state_b = m(t64(x[None]))
    np.testing.assert_allclose(np_(out), np_(out_b)[0], rtol=1e-13)
    s, sb = (state[0], state_b[0]) if kind == "LSTM" else (state, state_b)
    assert s.shape == (2, 4)
    np.testing.assert_allclose(np_(s), np_(sb)[:, 0], rtol=1e-13)
    if kind != "LSTM":  # an unbatched initial state is 2-D
        out2, _ = m(t64(x), t64(np_(s)))
        assert out2.shape == (6, 4)


def test_variable_sequence_lengths_reuse_one_module():
    m = make("GRU", 2, 3)
    for T in (1, 3, 7):
        x = RNG.standard_normal((T, 2, 2))
        out, h = m(t64(x))
        assert out.shape == (T, 2, 3)
        np.testing.assert_allclose(np_(out), rnn_np(m, "GRU", x)[0], rtol=1e-12)
    # running a long sequence in two chunks, carrying the state, gives the same result
    x = RNG.standard_normal((6, 2, 2))
    full, _ = m(t64(x))
    a, h = m(t64(x[:4]))
    b, _ = m(t64(x[4:]), h)
    np.testing.assert_allclose(np.concatenate([np_(a), np_(b)]), np_(full), rtol=1e-12)


# ---------------------------------------------------------------- parameters and init

def test_parameter_names_shapes_and_init():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert names[4:8] == ["weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                          "bias_hh_l0_reverse"]
    assert len(names) == 16
    shapes = dict((n, tuple(p.shape)) for n, p in m.named_parameters())
    assert shapes["weight_ih_l0"] == (80, 10) and shapes["weight_hh_l0"] == (80, 20)
    assert shapes["weight_ih_l1"] == (80, 40) and shapes["bias_hh_l1_reverse"] == (80,)
    assert tuple(nn.GRU(10, 20).weight_ih_l0.shape) == (60, 10)
    assert tuple(nn.RNN(10, 20).weight_hh_l0.shape) == (20, 20)
    assert [n for n, _ in nn.GRU(3, 4, bias=False).named_parameters()] == \
        ["weight_ih_l0", "weight_hh_l0"]
    bound = 1 / math.sqrt(20)
    for p in m.parameters():
        a = np_(p)
        assert p.dtype == torch.float32 and p.requires_grad
        assert a.min() >= -bound and a.max() <= bound
    allv = np.concatenate([np_(p).ravel() for p in m.parameters()])
    assert allv.min() < -0.95 * bound and allv.max() > 0.95 * bound  # uniform over the range
    assert abs(allv.mean()) < 0.01
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse
    m.flatten_parameters()  # a no-op, as on the CPU


def test_reprs_and_attributes():
    assert repr(nn.LSTM(10, 20, num_layers=2, batch_first=True)) == \
        "LSTM(10, 20, num_layers=2, batch_first=True)"
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last"):
        g = nn.GRU(10, 20, bias=False, dropout=0.5, bidirectional=True)
    assert repr(g) == "GRU(10, 20, bias=False, dropout=0.5, bidirectional=True)"
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"
    assert repr(nn.RNNCell(3, 4)) == "RNNCell(3, 4)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.GRUCell(3, 4, bias=False)) == "GRUCell(3, 4, bias=False)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    m = nn.LSTM(3, 4)
    assert (m.input_size, m.hidden_size, m.num_layers, m.bias, m.batch_first, m.dropout,
            m.bidirectional, m.proj_size) == (3, 4, 1, True, False, 0.0, False, 0)


def test_dtype_follows_module():
    m = nn.GRU(2, 3)
    out, _ = m(torch.randn(4, 1, 2))
    assert out.dtype == torch.float32
    m.double()
    out, h = m(torch.randn(4, 1, 2, dtype=F64))
    assert out.dtype == F64 and h.dtype == F64


# ---------------------------------------------------------------- dropout between layers

def test_dropout_between_layers_only_in_training():
    m = make("LSTM", 3, 8, num_layers=2, dropout=0.5)
    x = t64(RNG.standard_normal((4, 2, 3)))
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(np_(a), np_(b))
    np.testing.assert_allclose(np_(a), rnn_np(m, "LSTM", np_(x))[0], rtol=1e-12)
    m.train()
    torch.manual_seed(1)
    c, _ = m(x)
    assert not np.allclose(np_(c), np_(a))
    single = make("LSTM", 3, 8, num_layers=2)  # no dropout: train == eval
    np.testing.assert_array_equal(np_(single(x)[0]), np_(single.eval()(x)[0]))


# ---------------------------------------------------------------- cells

@pytest.mark.parametrize("kind,mode", [("RNNCell", "RNN_TANH"), ("LSTMCell", "LSTM"),
                                       ("GRUCell", "GRU")])
def test_cells_match_reference(kind, mode):
    cell = make(kind, 3, 4)
    p = {"w_ih": np_(cell.weight_ih), "w_hh": np_(cell.weight_hh), "b_ih": np_(cell.bias_ih),
         "b_hh": np_(cell.bias_hh)}
    x = RNG.standard_normal((2, 3))
    h = RNG.standard_normal((2, 4))
    c = RNG.standard_normal((2, 4))
    if mode == "LSTM":
        h1, c1 = cell(t64(x), (t64(h), t64(c)))
        wh, wc = cell_np(mode, x, h, c, p)
        np.testing.assert_allclose(np_(c1), wc, rtol=1e-12)
        h0, _ = cell(t64(x[0]))  # unbatched, zero state
        np.testing.assert_allclose(np_(h0), cell_np(mode, x[:1], 0 * h[:1], 0 * c[:1], p)[0][0],
                                   rtol=1e-12)
    else:
        h1 = cell(t64(x), t64(h))
        wh, _ = cell_np(mode, x, h, None, p)
        assert cell(t64(x[0])).shape == (4,)
    np.testing.assert_allclose(np_(h1), wh, rtol=1e-12)
    relu = make("RNNCell", 3, 4, nonlinearity="relu")
    pr = {"w_ih": np_(relu.weight_ih), "w_hh": np_(relu.weight_hh), "b_ih": np_(relu.bias_ih),
          "b_hh": np_(relu.bias_hh)}
    np.testing.assert_allclose(np_(relu(t64(x), t64(h))), cell_np("RNN_RELU", x, h, None, pr)[0],
                               rtol=1e-12)


# ---------------------------------------------------------------- gradients

@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_gradcheck_over_three_steps(kind):
    m = make(kind, 2, 2, num_layers=2, bidirectional=(kind == "GRU"))
    D = 2 if kind == "GRU" else 1
    x = t64(RNG.standard_normal((3, 1, 2)), grad=True)
    h0 = t64(RNG.standard_normal((2 * D, 1, 2)), grad=True)
    params = tuple(m.parameters())
    if kind == "LSTM":
        c0 = t64(RNG.standard_normal((2, 1, 2)), grad=True)
        fn = lambda a, h, c, *ps: m(a, (h, c))[0]  # noqa: E731
        assert gradcheck(fn, (x, h0, c0) + params)
        fn_state = lambda a, h, c, *ps: m(a, (h, c))[1][1]  # noqa: E731
        assert gradcheck(fn_state, (x, h0, c0) + params)
    else:
        assert gradcheck(lambda a, h, *ps: m(a, h)[0], (x, h0) + params)
        assert gradcheck(lambda a, h, *ps: m(a, h)[1], (x, h0) + params)


def test_gradcheck_cells():
    for kind in ("RNNCell", "GRUCell", "LSTMCell"):
        cell = make(kind, 2, 2)
        x = t64(RNG.standard_normal((2, 2)), grad=True)
        h = t64(RNG.standard_normal((2, 2)), grad=True)
        if kind == "LSTMCell":
            c = t64(RNG.standard_normal((2, 2)), grad=True)
            assert gradcheck(lambda a, b, d, *ps: cell(a, (b, d))[1],
                             (x, h, c) + tuple(cell.parameters()))
        else:
            assert gradcheck(lambda a, b, *ps: cell(a, b), (x, h) + tuple(cell.parameters()))


def test_backprop_through_time_learns_a_sum():
    """An RNN trained by plain gradient steps to output the running sum of its inputs."""
    torch.manual_seed(0)
    m = nn.RNN(1, 8)
    head = torch.randn(8, 1) * 0.1
    head.requires_grad_(True)
    x = torch.rand(6, 16, 1) - 0.5
    y = x.sum(0)
    losses = []
    for _ in range(60):
        out, h = m(x)
        loss = ((out[-1] @ head - y) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in list(m.parameters()) + [head]:
                p -= 0.1 * p.grad
                p.grad = None
    assert losses[-1] < 0.5 * losses[0]


# ---------------------------------------------------------------- errors

ERRORS = [
    (lambda: nn.LSTM(3, 4)(torch.zeros(5, 2, 4)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 3, got 4"),
    (lambda: nn.LSTM(3, 4)(torch.zeros(5, 2, 3), (torch.zeros(1, 3, 4), torch.zeros(1, 2, 4))),
     RuntimeError, "Expected hidden[0] size (1, 2, 4), got [1, 3, 4]"),
    (lambda: nn.LSTM(3, 4)(torch.zeros(5, 2, 3), (torch.zeros(1, 2, 4), torch.zeros(1, 2, 5))),
     RuntimeError, "Expected hidden[1] size (1, 2, 4), got [1, 2, 5]"),
    (lambda: nn.LSTM(3, 4)(torch.zeros(5, 2, 3), (torch.zeros(2, 4), torch.zeros(1, 2, 5))),
     RuntimeError, "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 3-D) "
     "tensors"),
    (lambda: nn.LSTM(3, 4)(torch.zeros(5, 1, 2, 3)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda: nn.GRU(3, 4)(torch.zeros(5, 2, 3), torch.zeros(2, 2, 4)), RuntimeError,
     "Expected hidden size (1, 2, 4), got [2, 2, 4]"),
    (lambda: nn.GRU(3, 4)(torch.zeros(5, 2, 3, dtype=F64)), ValueError,
     "RNN input dtype (torch.float64) does not match weight dtype (torch.float32). Convert "
     "input: input.to(torch.float32), or convert model: model.to(torch.float64)"),
    (lambda: nn.GRU(3, 4)(torch.zeros(5, 3), torch.zeros(1, 1, 4)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda: nn.GRU(3, 4)(torch.zeros(5, 2, 3), torch.zeros(1, 4)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda: nn.GRU(3, 4)(torch.zeros(5, 1, 2, 3)), ValueError,
     "GRU: Expected input to be 2D or 3D, got 4D instead"),
    (lambda: nn.RNN(3, 4)(torch.zeros(5, 1, 2, 3)), ValueError,
     "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError,
     "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'."),
    (lambda: nn.GRU(3, 4, proj_size=2), ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda: nn.LSTM(3, 4, dropout=1.5), ValueError,
     "dropout should be a number in range [0, 1] representing the probability of an element "
     "being zeroed"),
    (lambda: nn.LSTM(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than "
     "hidden_size"),
    (lambda: nn.RNNCell(3, 4)(torch.zeros(2, 5)), RuntimeError,
     "input has inconsistent input_size: got 5 expected 3"),
    (lambda: nn.RNNCell(3, 4)(torch.zeros(2, 3), torch.zeros(2, 5)), RuntimeError,
     "hidden0 has inconsistent hidden_size: got 5, expected 4"),
    (lambda: nn.RNNCell(3, 4)(torch.zeros(2, 3), torch.zeros(3, 4)), RuntimeError,
     "Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda: nn.LSTMCell(3, 4)(torch.zeros(2, 3), (torch.zeros(2, 4), torch.zeros(2, 5))),
     RuntimeError, "hidden1 has inconsistent hidden_size: got 5, expected 4"),
    (lambda: nn.GRUCell(3, 4)(torch.zeros(2, 3, 1)), ValueError,
     "GRUCell: Expected input to be 1D or 2D, got 3D instead"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_error_messages(fn, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            fn()
    assert str(info.value) == msg
