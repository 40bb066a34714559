"""Max pooling's graph as nn.functional composes it, recognised for those that replace it whole.

max_pool2d (nn/_functional/pooling.py) is composed of primitives:

    r      = reshape(unfold2d(x, pad_value=lowest), [N, C, kh*kw, OH, OW])   the windows
    arg    = maximum(argmax(r, 2), max(where(r != r, iota_k, first), 2))     PyTorch's index
    values = reshape(gather(r, arg, 2), [N, C, OH, OW])

`arg` is the window position PyTorch's CPU kernels pick: the last NaN, else the first maximum,
and for a window of -infs its first element inside the input (`first`: the scalar 0 when no
window starts in the padding, else the [OH, OW] table `first_inside` gives; integer windows
have no NaN term and `maximum(argmax(r, 2), first)`, or the bare argmax without padding).
The eager max pool kernel (tracer/composite_programs.py) and ONNX export (onnx/patterns.py)
replace this graph by one operation; `match_max_pool` says whether a node is its values.
"""
from __future__ import annotations

import numpy as np

from .graph import Node


def first_inside(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 out_hw: tuple) -> np.ndarray | None:
    """[OH, OW] int64: each window's first position (i * kw + j) inside the input, or None when
    that is 0 for every window (no window starts in the padding). A window's inside taps are a
    rectangle of it, so every inside position is at or after the first one."""
    firsts = []
    for k, s, p, d, o in zip(kernel, stride, padding, dilation, out_hw):
        start = np.arange(o) * s - p
        # the first tap i with start + i * d >= 0 (one exists: padding <= half the window)
        firsts.append(np.where(start >= 0, 0, (-start + d - 1) // d))
    if not (firsts[0].any() or firsts[1].any()):
        return None
    return (firsts[0][:, None] * kernel[1] + firsts[1][None, :]).astype(np.int64)


def _constant(n: Node, value) -> bool:
    if n.op != "constant":
        return False
    v = np.asarray(n.attrs["value"])
    want = np.asarray(value)
    return v.shape == tuple(n.shape) and v.size == want.size and \
        np.array_equal(v.reshape(want.shape), want)


def _is_argmax(a: Node, r: Node) -> bool:
    return a.op == "argmax" and a.inputs[0] is r and tuple(a.attrs["dims"]) == (2,) and \
        bool(a.attrs["keepdim"])


def _is_window_argmax(arg: Node, r: Node, first: np.ndarray | None) -> bool:
    """Whether `arg` is the index graph above over the windows r [N, C, K, OH, OW]."""
    floating = r.dtype.is_floating_point
    if not floating and first is None:
        return _is_argmax(arg, r)
    if arg.op != "maximum" or not _is_argmax(arg.inputs[0], r):
        return False
    raised = arg.inputs[1]
    if not floating:
        return _constant(raised, first[None, None, None])
    if raised.op != "max" or tuple(raised.attrs["dims"]) != (2,) or not raised.attrs["keepdim"]:
        return False
    where = raised.inputs[0]
    if where.op != "where":
        return False
    nan, iota, floor = where.inputs
    k = r.shape[2]
    return nan.op == "ne" and nan.inputs[0] is r and nan.inputs[1] is r and \
        _constant(iota, np.arange(k).reshape(1, 1, k, 1, 1)) and \
        (_constant(floor, 0) if first is None else _constant(floor, first[None, None, None]))


def match_max_pool(values: Node) -> tuple | None:
    """(unfold2d node, index node) when `values` is floating max pooling's values as composed
    above (unfold2d with -inf padding, PyTorch's index, the gather); else None."""
    if values.op != "reshape" or values.inputs[0].op != "gather":
        return None
    gather = values.inputs[0]
    r, arg = gather.inputs
    if gather.attrs["dim"] != 2 or r.op != "reshape" or r.inputs[0].op != "unfold2d":
        return None
    unfold = r.inputs[0]
    nb, c, kh, kw, oh, ow = unfold.shape
    if not r.dtype.is_floating_point or unfold.attrs["pad_value"] != -float("inf"):
        return None
    if r.shape != (nb, c, kh * kw, oh, ow) or values.shape != (nb, c, oh, ow):
        return None
    a = unfold.attrs
    first = first_inside(a["kernel"], a["stride"], a["padding"], a["dilation"], (oh, ow))
    if not _is_window_argmax(arg, r, first):
        return None
    return unfold, arg
