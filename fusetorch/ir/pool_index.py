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
replace this graph by one operation; `match_max_pool` says whether a node is its values, and
`match_pool_gather` whether it is the gather.
"""
from __future__ import annotations

from .graph import Node


def first_inside(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 out_hw: tuple) -> list | None:
    """[OH][OW] nested lists: each window's first position (i * kw + j) inside the input, or
    None when that is 0 for every window (no window starts in the padding). A window's inside
    taps are a rectangle of it, so every inside position is at or after the first one."""
    firsts = []
    for k, s, p, d, o in zip(kernel, stride, padding, dilation, out_hw):
        starts = [y * s - p for y in range(o)]
        # the first tap i with start + i * d >= 0 (one exists: padding <= half the window)
        firsts.append([0 if a >= 0 else (-a + d - 1) // d for a in starts])
    if not (any(firsts[0]) or any(firsts[1])):
        return None
    return [[r * kernel[1] + q for q in firsts[1]] for r in firsts[0]]


def _flat(value) -> list:
    """A constant's value (a number, nested lists or an array) as a flat list of numbers."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list):
        return [value]
    out = []
    for v in value:
        out.extend(_flat(v))
    return out


def _constant(n: Node, shape: tuple, flat: list) -> bool:
    """Whether n is a constant of this shape holding these values (in order)."""
    return n.op == "constant" and tuple(n.shape) == shape and \
        _flat(n.attrs["value"]) == flat


def _is_argmax(a: Node, r: Node) -> bool:
    return a.op == "argmax" and a.inputs[0] is r and tuple(a.attrs["dims"]) == (2,) and \
        bool(a.attrs["keepdim"])


def _is_window_argmax(arg: Node, r: Node, first: list | None) -> bool:
    """Whether `arg` is the index graph above over the windows r [N, C, K, OH, OW]."""
    floating = r.dtype.is_floating_point
    if not floating and first is None:
        return _is_argmax(arg, r)
    if arg.op != "maximum" or not _is_argmax(arg.inputs[0], r):
        return False
    raised = arg.inputs[1]
    _, _, k, oh, ow = r.shape
    table = None if first is None else ((1, 1, 1, oh, ow), _flat(first))
    if not floating:
        return _constant(raised, *table)
    if raised.op != "max" or tuple(raised.attrs["dims"]) != (2,) or not raised.attrs["keepdim"]:
        return False
    where = raised.inputs[0]
    if where.op != "where":
        return False
    nan, iota, floor = where.inputs
    return nan.op == "ne" and nan.inputs[0] is r and nan.inputs[1] is r and \
        _constant(iota, (1, 1, k, 1, 1), list(range(k))) and \
        (_constant(floor, (), [0]) if table is None else _constant(floor, *table))


def match_max_pool(values: Node) -> tuple | None:
    """(unfold2d node, index node) when `values` is floating max pooling's values as composed
    above (unfold2d with -inf padding, PyTorch's index, the gather, the reshape); else None."""
    if values.op != "reshape":
        return None
    match = match_pool_gather(values.inputs[0])
    if match is None:
        return None
    nb, c, _kh, _kw, oh, ow = match[0].shape
    return match if values.shape == (nb, c, oh, ow) else None


def match_pool_gather(gather: Node) -> tuple | None:
    """(unfold2d node, index node) when `gather` is floating max pooling's gather at PyTorch's
    index into the windows of unfold2d with -inf padding ([N, C, 1, OH, OW]); else None."""
    if gather.op != "gather":
        return None
    r, arg = gather.inputs
    if gather.attrs["dim"] != 2 or r.op != "reshape" or r.inputs[0].op != "unfold2d":
        return None
    unfold = r.inputs[0]
    nb, c, kh, kw, oh, ow = unfold.shape
    if not r.dtype.is_floating_point or unfold.attrs["pad_value"] != -float("inf"):
        return None
    if r.shape != (nb, c, kh * kw, oh, ow):
        return None
    a = unfold.attrs
    first = first_inside(a["kernel"], a["stride"], a["padding"], a["dilation"], (oh, ow))
    if not _is_window_argmax(arg, r, first):
        return None
    return unfold, arg


def pool_nodes(gather: Node) -> list:
    """The nodes from unfold2d to `gather` (a match of `match_pool_gather`) that compute
    something, constants left out: what one max pooling kernel replaces."""
    r, arg = gather.inputs
    nodes = [r.inputs[0], r]
    todo = [arg]
    while todo:
        n = todo.pop()
        if n is r or n.op == "constant" or n in nodes:
            continue
        nodes.append(n)
        todo.extend(n.inputs)
    return nodes + [gather]


def in_window(index: Node, dim: int, k: int) -> bool:
    """Whether `index` is this index graph over `dim` of windows of `k` elements, so that every
    value of it is a position in [0, k): the maximum of an argmax over `dim` and a constant or
    a max over `dim` of a where between constants in range."""
    def ranged(n: Node) -> bool:
        if n.op != "constant" or n.dtype.is_floating_point:
            return False
        v = _flat(n.attrs["value"])
        return bool(v) and all(isinstance(a, int) and 0 <= a < k for a in v)

    if index.op != "maximum":
        return False
    arg, raised = index.inputs
    if arg.op != "argmax" or tuple(arg.attrs["dims"]) != (dim,) or \
            arg.inputs[0].shape[dim] != k:
        return False
    if raised.op == "max" and tuple(raised.attrs["dims"]) == (dim,) and \
            raised.inputs[0].op == "where":
        return all(ranged(n) for n in raised.inputs[0].inputs[1:])
    return ranged(raised)


def ceil_mode_extra(image: Node, x: Node) -> tuple | None:
    """(extra rows, extra columns) when `image` is `x` written into the top-left of a larger
    -inf image (ceil_mode's: windows that run past the input's end read -inf), else None."""
    if image.op != "index_put" or image.inputs[1] is not x or image.attrs["accumulate"] or \
            image.inputs[0].op != "full" or image.inputs[0].attrs["value"] != -float("inf") or \
            image.attrs["spec"] != tuple(("slice", 0, n, 1) for n in x.shape) or \
            image.shape[:2] != x.shape[:2]:
        return None
    return image.shape[2] - x.shape[2], image.shape[3] - x.shape[3]
