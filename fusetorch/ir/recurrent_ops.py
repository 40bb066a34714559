"""A whole LSTM layer's recurrence as one primitive (issue 13: the character-level models).

Unrolled, an LSTM layer of T steps is ~15 primitives per step: ~1000 autograd records, a
backward graph of ~1000 nodes to key and sort, and hundreds of small program steps per training
step. PyTorch's CPU LSTM is one op (MkldnnRnnLayer); so is this one:

    lstm_scan(gi [T, B, 4H], h0 [B, H], c0 [B, H], w_hh [4H, H], reverse) -> ws [6, T, B, H]

`gi` is the input projection of every step, x @ W_ih^T + b_ih + b_hh: one `linear`, which the
layer primitive `lstm` (below) holds with the scan (a packed batch's runs of steps are
lstm_scans of slices of one projection). Each step t (T-1 down to 0 when
`reverse`) computes gates = gi[t] + h @ w_hh^T in PyTorch's order i, f, g, o, then
c = f c + i g and h = o tanh(c). The workspace holds, per step, h, c and the four gate
activations (parts 0-5): part 0 is the layer's output [T, B, H], contiguous as PyTorch's; the
last step's h and c are its final state; the backward reads the rest.

Its VJP is one more primitive, `lstm_scan_grad` (the recurrence run backwards through time:
the cotangents of the pre-activation gates at every step, and of h0 and c0, in a [T + 1, B, 4H]
array whose last row is [dh0 | dc0 | 0 | 0]), and ordinary primitives for the rest: the gates'
cotangents are gi's, and w_hh's is one product over every step, dG^T @ h_prev. The gradient of
`lstm_scan_grad` itself is not defined, as cuDNN's RNN backward is not in PyTorch: a double
backward raises PyTorch's message, and `torch.backends.cudnn.flags(enabled=False)` runs the
unrolled layer, which has one (nn/modules/rnn.py chooses).

The eager implementations here are the reference, on any array module (no numpy in ir/); the
CPU eager table runs a C kernel per step instead where it can (runtime/recurrent.py).
"""
from __future__ import annotations

from . import dtypes as dt
from .ops import _def, arg, matmul_grads

PARTS = 6  # the workspace's parts: h, c, i, f, g, o


def _scan_shape(shapes, _a):
    gi, h0, c0, w = shapes
    if len(gi) != 3 or gi[2] % 4 or tuple(h0) != (gi[1], gi[2] // 4) or tuple(c0) != tuple(h0) \
            or tuple(w) != (gi[2], gi[2] // 4):
        raise RuntimeError(f"lstm_scan: inconsistent shapes {[list(s) for s in shapes]}")
    return (PARTS,) + tuple(gi[:2]) + (gi[2] // 4,)


def _grad_shape(shapes, _a):
    g, ws = shapes[0], shapes[1]
    if tuple(g) != tuple(ws):
        raise RuntimeError(f"lstm_scan_grad: cotangent {list(g)} for a workspace {list(ws)}")
    return (ws[1] + 1, ws[2], 4 * ws[3])


def _float_dtype(dtypes, _a):
    if any(d is not dtypes[0] for d in dtypes) or dtypes[0] not in (dt.float32, dt.float64):
        raise RuntimeError(f"lstm_scan: float32 or float64 inputs of one dtype, got {dtypes}")
    return dtypes[0]


def steps(n: int, reverse: bool) -> range:
    return range(n - 1, -1, -1) if reverse else range(n)


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


def _scan(xp):
    def lstm_scan(gi, h0, c0, w_hh, *, reverse):
        t_len, batch, hid = gi.shape[0], gi.shape[1], gi.shape[2] // 4
        ws = xp.empty((PARTS, t_len, batch, hid), gi.dtype)
        w_t = xp.ascontiguousarray(w_hh.T)
        h, c = h0, c0
        for t in steps(t_len, reverse):
            z = gi[t] + h @ w_t
            i, f = _sigmoid(xp, z[:, :hid]), _sigmoid(xp, z[:, hid:2 * hid])
            g, o = xp.tanh(z[:, 2 * hid:3 * hid]), _sigmoid(xp, z[:, 3 * hid:])
            c = f * c + i * g
            h = o * xp.tanh(c)
            for k, part in enumerate((h, c, i, f, g, o)):
                ws[k, t] = part
        return ws
    return lstm_scan


def _scan_grad(xp):
    def lstm_scan_grad(gws, ws, h0, c0, w_hh, *, reverse):
        _, t_len, batch, hid = ws.shape
        out = xp.zeros((t_len + 1, batch, 4 * hid), ws.dtype)
        dh_next = xp.zeros((batch, hid), ws.dtype)
        dc = xp.zeros((batch, hid), ws.dtype)
        order = list(steps(t_len, reverse))
        for n, t in enumerate(reversed(order)):
            back = len(order) - 1 - n  # position of t in the forward order
            c_prev = c0 if back == 0 else ws[1, order[back - 1]]
            c, i, f, g, o = (ws[k, t] for k in range(1, PARTS))
            dh = gws[0, t] + dh_next
            tc = xp.tanh(c)
            dc = dc + gws[1, t] + dh * o * (1 - tc * tc)
            do = dh * tc + gws[5, t]
            di, df, dg = dc * g + gws[2, t], dc * c_prev + gws[3, t], dc * i + gws[4, t]
            dz = out[t]
            dz[:, :hid] = di * i * (1 - i)
            dz[:, hid:2 * hid] = df * f * (1 - f)
            dz[:, 2 * hid:3 * hid] = dg * (1 - g * g)
            dz[:, 3 * hid:] = do * o * (1 - o)
            dc = dc * f
            dh_next = dz @ w_hh
        out[t_len, :, :hid] = dh_next
        out[t_len, :, hid:2 * hid] = dc
        return out
    return lstm_scan_grad


def _vjp_scan(b, n, g):
    return _scan_grads(b, n, arg(n, 1), arg(n, 2), arg(n, 3), g)


def _scan_grads(b, n, h0, c0, w, g) -> tuple:
    """The cotangents of gi, h0, c0 and w_hh of a recurrence whose workspace is node n's
    (lstm_scan, or lstm, whose gi is its own input projection)."""
    reverse = n.attrs["reverse"]
    t_len, batch, hid = n.shape[1], n.shape[2], n.shape[3]
    ws, h0v = b.value(n), b.value(h0)
    d = b.op("lstm_scan_grad", g, ws, h0v, b.value(c0), b.value(w), reverse=reverse)
    all_b = ("slice", 0, batch, 1)
    d_gi = b.op("index", d, spec=(("slice", 0, t_len, 1),))
    dh0 = b.op("index", d, spec=(("int", t_len), all_b, ("slice", 0, hid, 1)))
    dc0 = b.op("index", d, spec=(("int", t_len), all_b, ("slice", hid, 2 * hid, 1)))
    # w_hh's cotangent: sum over steps of dz_t^T @ h_prev(t), as one product over all steps
    hs = b.op("index", ws, spec=(("int", 0),))
    first = b.op("reshape", h0v, shape=(1, batch, hid))
    if t_len == 1:
        prev = first
    elif reverse:  # step t follows step t + 1
        prev = b.op("cat", b.op("index", hs, spec=(("slice", 1, t_len, 1),)), first, dim=0)
    else:
        prev = b.op("cat", first, b.op("index", hs, spec=(("slice", 0, t_len - 1, 1),)), dim=0)
    dz = b.op("reshape", d_gi, shape=(t_len * batch, 4 * hid))
    dw = b.op("matmul", b.op("permute", dz, perm=(1, 0)),
              b.op("reshape", prev, shape=(t_len * batch, hid)))
    return d_gi, dh0, dc0, dw


def _vjp_scan_grad(b, n, g):
    raise RuntimeError("Double backwards is not supported for fused LSTM layers. To run double "
                       "backwards, please disable the fused path temporarily while running the "
                       "forward pass of your RNN. For example: \nwith "
                       "torch.backends.cudnn.flags(enabled=False):\n    output = model(inputs)")


def _scan_parts(n, make):
    """The recurrence unrolled into primitives, step by step as `_scan` computes it (ONNX
    export where no LSTM operator computes the node), the workspace stacked from its parts."""
    gi, h, c, w = n.inputs
    meta, (t_len, batch, hid) = n.meta, n.shape[1:]

    def op(name, *ins, **attrs):
        return make(name, list(ins), attrs, meta)

    def cols(z, k):
        return op("index", z, spec=(("slice", 0, batch, 1), ("slice", k * hid, (k + 1) * hid, 1)))
    w_t = op("permute", w, perm=(1, 0))
    parts: list = [[None] * t_len for _ in range(PARTS)]
    for t in steps(t_len, n.attrs["reverse"]):
        z = op("add", op("index", gi, spec=(("int", t),)), op("matmul", h, w_t))
        i, f = op("sigmoid", cols(z, 0)), op("sigmoid", cols(z, 1))
        g, o = op("tanh", cols(z, 2)), op("sigmoid", cols(z, 3))
        c = op("add", op("mul", f, c), op("mul", i, g))
        h = op("mul", o, op("tanh", c))
        for k, part in enumerate((h, c, i, f, g, o)):
            parts[k][t] = op("reshape", part, shape=(1, 1, batch, hid))
    return op("cat", *(op("cat", *p, dim=1) for p in parts), dim=0)


_def("lstm_scan", "extern", 4, _scan_shape, _float_dtype, attrs=("reverse",), eager=_scan,
     vjp=_vjp_scan, saves=(1, 2, 3, "out"), grad_name="MkldnnRnnLayerBackward0",
     kept_whole=True, composition=_scan_parts,
     doc="an LSTM layer's recurrence over gi = x W_ih^T + b: the workspace [6, T, B, H] of "
         "h, c and the gates i, f, g, o at every step")
# ---------------------------------------------------------------- the layer
#
# lstm(x [T, B, I], h0, c0, w_ih [4H, I], w_hh [4H, H][, b [4H]]; reverse) -> ws [6, T, B, H]:
# a layer with its input projection, gi = linear(x, w_ih, b) then lstm_scan, as one node, so
# that ONNX's LSTM, which multiplies its X by a W itself, is written from the node's own
# inputs. Eager is the two calls (runtime/eager.py), the VJP lstm_scan's and linear's rules
# one after the other, compiled graphs the composition (the projection's add fuses; lstm_scan
# keeps its kernel).

def _layer_shape(shapes, a):
    x, h0, c0, w_ih, w_hh = shapes[:5]
    if len(x) != 3 or len(w_ih) != 2 or w_ih[1] != x[2] or (
            len(shapes) == 6 and tuple(shapes[5]) != (w_ih[0],)):
        raise RuntimeError(f"lstm: inconsistent shapes {[list(s) for s in shapes]}")
    return _scan_shape([(x[0], x[1], w_ih[0]), h0, c0, w_hh], a)


def _layer_parts(n, make):
    x, h0, c0, w_ih, w_hh = n.inputs[:5]
    gi = make("linear", [x, w_ih] + list(n.inputs[5:]), {}, n.meta)
    return make("lstm_scan", [gi, h0, c0, w_hh], {"reverse": n.attrs["reverse"]}, n.meta)


def _vjp_layer(b, n, g):
    x, h0, c0, w_ih, w_hh = n.inputs[:5]
    d_gi, dh0, dc0, dw_hh = _scan_grads(b, n, h0, c0, w_hh, g)
    wt = b.op("permute", b.value(w_ih), perm=(1, 0))
    gx, gwt = matmul_grads(b, b.value(x), wt, d_gi)
    grads = (gx, dh0, dc0, b.op("permute", gwt, perm=(1, 0)), dw_hh)
    return grads + (b.sum_to(d_gi, arg(n, 5).shape),) if len(n.inputs) == 6 else grads


_def("lstm", "extern", None, _layer_shape, _float_dtype, attrs=("reverse",), vjp=_vjp_layer,
     saves=(0, 1, 2, 3, 4, "out"), grad_name="MkldnnRnnLayerBackward0",
     composition=_layer_parts,
     doc="an LSTM layer with its input projection: lstm_scan over linear(x, w_ih, b); inputs "
         "x, h0, c0, w_ih, w_hh[, b]")
_def("lstm_scan_grad", "extern", 5, _grad_shape, _float_dtype, attrs=("reverse",),
     eager=_scan_grad, vjp=_vjp_scan_grad,
     doc="lstm_scan's recurrence backwards through time: the pre-activation gates' cotangents "
         "[T, B, 4H] and a last row [dh0 | dc0 | 0 | 0]")
