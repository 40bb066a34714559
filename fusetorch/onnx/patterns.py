"""Composites that ONNX has one operator for, recognised in the IR.

fusetorch records conv2d as unfold2d + reshape + matmul (under export), Linear as matmul by a
transposed weight, softmax as max/sub/exp/sum/div, layer_norm as
mean/sub/mul/sqrt/div, gelu through erf. Each of these would export correctly primitive by
primitive; as Conv, AveragePool, Gemm, Softmax, LogSoftmax, LayerNormalization (opset
17) and Gelu (opset 20) it is smaller, faster in a runtime, reads as the model does, and needs
no size constants (a Conv follows any input size). `find(graph, opset)` maps the last node of
each match to a `Match`: the IR nodes the operator reads (`roots`) and how to emit it. The
exporter then computes only what the outputs need, so the matched interior disappears unless
something else reads it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir import dtypes as _dt

_F32 = _dt.float32


@dataclass
class Match:
    roots: list  # IR nodes whose values the ONNX operator reads
    emit: Callable  # (ctx, root value names) -> the result's value name


def _float(n) -> bool:
    # onnxruntime implements Conv and AveragePool for float32 only (float64 and the half
    # types export primitive by primitive, which it runs)
    return n.dtype is _F32


def _real(n) -> bool:
    # ... and Gemm, Softmax, LogSoftmax for float32 and float64
    return n.dtype is _F32 or n.dtype is _dt.float64


def _windows(u) -> dict:
    a = u.attrs
    (ph, pw) = a["padding"]
    return {"kernel_shape": list(a["kernel"]), "strides": list(a["stride"]),
            "pads": [ph, pw, ph, pw], "dilations": list(a["dilation"])}


def _conv(n, opset=None):
    """reshape(matmul(reshape(W), reshape(unfold2d(x)))) -> Conv(x, W): nn.functional.conv2d."""
    if n.op != "reshape" or not _float(n) or n.inputs[0].op != "matmul":
        return None
    wm, cr = n.inputs[0].inputs
    if wm.op != "reshape" or cr.op != "reshape" or cr.inputs[0].op != "unfold2d":
        return None
    w, u = wm.inputs[0], cr.inputs[0]
    if u.attrs["pad_value"] != 0 or len(w.shape) != 4:
        return None
    o, cg, kh, kw = w.shape
    nb, c, kh2, kw2, oh, ow = u.shape
    if (kh, kw) != (kh2, kw2) or cg == 0 or c % cg:
        return None
    g = c // cg
    if o % g or wm.shape != (g, o // g, cg * kh * kw) or \
            cr.shape != (nb, g, cg * kh * kw, oh * ow) or n.shape != (nb, o, oh, ow):
        return None
    attrs = dict(_windows(u), group=g)
    return Match([u.inputs[0], w], lambda ctx, xs: ctx.b.op("Conv", xs, **attrs))


def _conv_bias(n, opset=None):
    """add(conv, reshape(b, (O, 1, 1))) -> Conv(x, W, b)."""
    if n.op != "add":
        return None
    for c, rb in (n.inputs, n.inputs[::-1]):
        m = _conv(c, opset)
        if m is None or rb.op != "reshape" or c.shape != n.shape:
            continue
        bias = rb.inputs[0]
        if rb.shape == (c.shape[1], 1, 1) and bias.shape == (c.shape[1],):
            return Match(m.roots + [bias], m.emit)
    return None


def _avg_pool(n, opset=None):
    """div(sum(unfold2d(x), (2, 3)), kh * kw) -> AveragePool (padded zeros counted)."""
    if n.op != "div" or not _float(n):
        return None
    s, k = n.inputs
    if s.op != "sum" or s.inputs[0].op != "unfold2d" or k.op != "constant" or k.shape != ():
        return None
    u = s.inputs[0]
    kh, kw = u.attrs["kernel"]
    if tuple(s.attrs["dims"]) != (2, 3) or s.attrs["keepdim"] or u.attrs["pad_value"] != 0 \
            or tuple(u.attrs["dilation"]) != (1, 1) or k.attrs["value"] != kh * kw:
        return None
    attrs = _windows(u)
    del attrs["dilations"]
    return Match([u.inputs[0]], lambda ctx, xs: ctx.b.op("AveragePool", xs, count_include_pad=1,
                                                         **attrs))


def _gemm(n, opset=None):
    """matmul(x, permute(W, (1, 0))) for 2-d x -> Gemm(x, W, transB=1): nn.Linear."""
    if n.op != "matmul" or not _real(n):
        return None
    x, t = n.inputs
    if t.op != "permute" or tuple(t.attrs["perm"]) != (1, 0) or len(x.shape) != 2:
        return None
    return Match([x, t.inputs[0]], lambda ctx, xs: ctx.b.op("Gemm", xs, transB=1))


def _gemm_bias(n, opset=None):
    """add(matmul(x, W^T), b) with b of W.shape[0] elements -> Gemm(x, W, b, transB=1)."""
    if n.op != "add":
        return None
    for mm, bias in (n.inputs, n.inputs[::-1]):
        m = _gemm(mm, opset)
        if m is not None and mm.shape == n.shape and bias.shape == (mm.shape[1],):
            return Match(m.roots + [bias], m.emit)
    return None


def _shifted(z, x=None):
    """z = sub(x, max(x, (d,), keepdim)): (x, d) or None."""
    if z.op != "sub":
        return None
    x, m = z.inputs
    if m.op != "max" or m.inputs[0] is not x or len(m.attrs["dims"]) != 1 or \
            not m.attrs["keepdim"]:
        return None
    return x, m.attrs["dims"][0]


def _sum_of_exp(s, z, d) -> bool:
    return s.op == "sum" and s.inputs[0].op == "exp" and s.inputs[0].inputs[0] is z and \
        tuple(s.attrs["dims"]) == (d,) and s.attrs["keepdim"]


def _softmax(n, opset=None):
    """div(exp(z), sum(exp(z), d)), z = x - max(x, d) -> Softmax(x, axis=d)."""
    if n.op != "div" or not _real(n):
        return None
    e, s = n.inputs
    if e.op != "exp" or s.op != "sum" or s.inputs[0] is not e:
        return None
    found = _shifted(e.inputs[0])
    if found is None or not _sum_of_exp(s, e.inputs[0], found[1]):
        return None
    axis = found[1]
    return Match([found[0]], lambda ctx, xs: ctx.b.op("Softmax", xs, axis=axis))


def _log_softmax(n, opset=None):
    """sub(z, log(sum(exp(z), d))), z = x - max(x, d) -> LogSoftmax(x, axis=d)."""
    if n.op != "sub" or not _real(n):
        return None
    z, lg = n.inputs
    found = _shifted(z)
    if found is None or lg.op != "log" or not _sum_of_exp(lg.inputs[0], z, found[1]):
        return None
    axis = found[1]
    return Match([found[0]], lambda ctx, xs: ctx.b.op("LogSoftmax", xs, axis=axis))


def _scalar(n, value=None):
    """n is a 0-d constant (equal to `value` when given): its value, else None."""
    if n.op != "constant" or n.shape != () or not isinstance(n.attrs["value"], (int, float)):
        return None
    v = n.attrs["value"]
    return v if value is None or v == value else None


def _mean(n, x):
    """n = sum(x, dims, keepdim) / numel over dims: dims, or None."""
    if n.op != "div" or n.inputs[0].op != "sum" or n.inputs[0].inputs[0] is not x:
        return None
    s, count = n.inputs[0], _scalar(n.inputs[1])
    dims = tuple(s.attrs["dims"])
    size = 1
    for d in dims:
        size *= x.shape[d]
    return dims if s.attrs["keepdim"] and count == size else None


def _layer_norm_core(n):
    """n = c * (1 / sqrt(mean(c * c) + eps)), c = x - mean(x), over the last dims:
    (x, first normalised dim, eps), or None."""
    if n.op != "mul" or not _real(n):
        return None
    c, r = n.inputs
    if c.op != "sub" or r.op != "div" or _scalar(r.inputs[0], 1.0) is None:
        return None
    x, dims = c.inputs[0], _mean(c.inputs[1], c.inputs[0])
    if dims is None or dims != tuple(range(len(x.shape) - len(dims), len(x.shape))):
        return None
    sq = r.inputs[1]
    if sq.op != "sqrt" or sq.inputs[0].op != "add":
        return None
    var, eps = sq.inputs[0].inputs
    eps = _scalar(eps)
    sq2 = var.inputs[0].inputs[0] if var.op == "div" and var.inputs[0].op == "sum" else None
    if eps is None or sq2 is None or sq2.op != "mul" or sq2.inputs[0] is not c or \
            sq2.inputs[1] is not c or _mean(var, sq2) != dims:
        return None
    return x, dims[0], float(eps)


def _layer_norm(n, opset):
    """nn.functional.layer_norm (core, `* weight`, `+ bias`) -> LayerNormalization (opset 17)."""
    if opset is None or opset < 17 or n.op not in ("add", "mul") or not _real(n):
        return None
    core, weight, bias = n, None, None
    if n.op == "add" and n.inputs[0].op == "mul":
        core, bias = n.inputs[0], n.inputs[1]
    if core.op == "mul" and _layer_norm_core(core) is None:
        core, weight = core.inputs[0], core.inputs[1]
    found = _layer_norm_core(core)
    if found is None:
        return None
    x, axis, eps = found
    norm = tuple(x.shape[axis:])
    if any(t is not None and (t.shape != norm or t.dtype is not x.dtype)
           for t in (weight, bias)) or (bias is not None and weight is None):
        return None
    if n.op == "add" and bias is None:
        return None

    def emit(ctx, xs):
        import numpy as np

        from ..runtime.device import NP_DTYPES
        scale = xs[1] if weight is not None else ctx.b.const(
            np.ones(norm, dtype=NP_DTYPES[x.dtype]))
        return ctx.b.op("LayerNormalization", [xs[0], scale] + xs[2:], axis=axis, epsilon=eps)
    return Match([t for t in (x, weight, bias) if t is not None], emit)


def _gelu(n, opset):
    """x * 0.5 * (erf(x * 1/sqrt(2)) + 1) -> Gelu (opset 20)."""
    if opset is None or opset < 20 or n.op != "mul" or not _real(n):
        return None
    half, one_plus = n.inputs
    if half.op != "mul" or _scalar(half.inputs[1], 0.5) is None or one_plus.op != "add" or \
            _scalar(one_plus.inputs[1], 1.0) is None or one_plus.inputs[0].op != "erf":
        return None
    x = half.inputs[0]
    scaled = one_plus.inputs[0].inputs[0]
    if scaled.op != "mul" or scaled.inputs[0] is not x or \
            _scalar(scaled.inputs[1], 0.7071067811865476) is None:
        return None
    return Match([x], lambda ctx, xs: ctx.b.op("Gelu", xs))


PATTERNS = (_conv_bias, _conv, _avg_pool, _gemm_bias, _gemm, _softmax, _log_softmax,
            _layer_norm, _gelu)


def find(graph, opset: int | None = None) -> dict:
    """id(node) -> Match for every node some pattern recognises (the first that does); some
    patterns need an operator from a later opset than `opset`."""
    out = {}
    for n in graph.nodes:
        for p in PATTERNS:
            m = p(n, opset)
            if m is not None:
                out[id(n)] = m
                break
    return out
