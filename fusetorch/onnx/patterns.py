"""Composites with no primitive behind them that ONNX has one operator for, recognised in the IR.

Layers that are primitives (conv2d, conv2d_grad_input, lstm_scan, max pooling, softmax,
layer_norm; gelu is an elementwise primitive) are emitted as their operator from the node itself
(ops.WHOLE, ops.EMIT). Two composites are not primitives: Linear is a matmul by a transposed
weight plus a bias (apart, so that compiled kernels fuse the add with what follows), avg_pool2d
a sum over unfold2d windows. Each exports correctly primitive by primitive; as Gemm and
AveragePool it is smaller, reads as the model does and, for the pool, needs no size constants.
`find(graph, opset)` maps the last node of each match to a `Match`: the IR nodes the operator
reads (`roots`) and how to emit it. The exporter then computes only what the outputs need, so
the matched interior disappears unless something else reads it.
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
    # onnxruntime implements AveragePool for float32 only (float64 and the half types export
    # primitive by primitive, which it runs)
    return n.dtype is _F32


def _real(n) -> bool:
    # ... and Gemm for float32 and float64
    return n.dtype is _F32 or n.dtype is _dt.float64


def _windows(u) -> dict:
    a = u.attrs
    (ph, pw) = a["padding"]
    return {"kernel_shape": list(a["kernel"]), "strides": list(a["stride"]),
            "pads": [ph, pw, ph, pw], "dilations": list(a["dilation"])}


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


PATTERNS = (_avg_pool, _gemm_bias, _gemm)


def find(graph, opset: int | None = None) -> dict:
    """id(node) -> Match for every node some pattern recognises (the first that does); a
    pattern may ask for the operator's opset."""
    out = {}
    for n in graph.nodes:
        for p in PATTERNS:
            m = p(n, opset)
            if m is not None:
                out[id(n)] = m
                break
    return out
