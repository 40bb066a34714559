"""Trace a model for export: its forward on the user's arguments into one IR graph, which graph
input is which (user tensors, then parameters and buffers by their state_dict names, then other
captured tensors), and for `dynamic_axes` the symbolic form of every size-like number in the
graph (dims.py).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..ir.graph import Graph
from ..ir.passes import decompose
from ..tracer import dispatch as D
from ..tracer.tensor import Tensor
from ..tracer.trace import Recorder, user_source
from . import dims as dm
from . import ops as _ops
from .errors import OnnxExporterError, OnnxExporterWarning

# The attributes that may hold a dynamic size, per primitive; emitters read them through
# `Capture.leaf`. A number that varies anywhere else makes the node Bad.
SIZE_ATTRS = {"input": ("shape",), "constant": ("shape", "value"), "full": ("shape",),
              "iota": ("shape",), "random": ("shape",), "reshape": ("shape",),
              "expand": ("shape",), "index": ("spec",), "index_put": ("spec",),
              "fold2d": ("size",)}
DELTAS = (3, 7)  # times the size's power-of-two factor (at most 8): see _deltas


def _deltas(size: int) -> tuple:
    """How much to grow a dynamic size by in the extra traces. Multiples of its power-of-two
    factor (up to 8) keep sizes a model needs divisible (patches of 4, strides of 2) divisible;
    3 and 7 are far enough apart that a stride's floor division does not look affine."""
    g = 1
    while size and size % (2 * g) == 0 and g < 8:
        g *= 2
    return tuple(d * g for d in DELTAS)


class _ExportRecorder(Recorder):
    """A trace whose data reads warn (the value seen is baked into the graph, as PyTorch's
    tracer warns) and whose in-place writes into views, which a graph would lose, are errors."""

    def data_read(self, what: str) -> None:
        warnings.warn(f"{what} reads tensor data at {user_source()}: the exported graph holds "
                      "the value this trace saw as a constant", OnnxExporterWarning, stacklevel=3)

    def view_write(self) -> None:
        raise OnnxExporterError(f"an in-place write into a view at {user_source()} cannot be "
                                "exported: the traced graph would not see its base change")


def flatten(obj, out: list) -> list:
    """Tensors in nested tuples, lists and dict values, in order."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            flatten(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            flatten(o, out)
    return out


def _replace(obj, new: dict):
    """`obj` with every tensor t replaced by new[id(t)] (where present)."""
    if isinstance(obj, Tensor):
        return new.get(id(obj), obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_replace(o, new) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_replace(o, new) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _replace(v, new)) for k, v in obj.items())
    return obj


def _distinct(obj, seen: set):
    """`obj` with each repeated tensor after its first occurrence replaced by an alias (a new
    Tensor on the same array): every argument position is its own graph input, as PyTorch's
    export makes it (self-attention passes one tensor as query, key and value)."""
    if isinstance(obj, Tensor):
        if id(obj) in seen:
            return Tensor._make(obj._data, obj._dtype, obj._be)
        seen.add(id(obj))
        return obj
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_distinct(o, seen) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_distinct(o, seen) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _distinct(v, seen)) for k, v in obj.items())
    return obj


def trace_call(fn, args: tuple, kwargs: dict, opset: int) -> tuple[Graph, list, list]:
    """(graph, input tensors in graph order, output tensors) of one call. Graph inputs: the
    argument tensors first, then every other tensor the call read, in order of first use.
    Layers (linear, conv2d, lstm, pooling, softmax, layer_norm) stay one node where one
    operator of `opset` computes them (ops.WHOLE), else become their compositions."""
    seen: set = set()
    args, kwargs = _distinct(args, seen), _distinct(kwargs, seen)
    flat_in = flatten(args, []) + flatten(kwargs, [])
    rec = _ExportRecorder()
    for t in flat_in:
        rec.input(t)
    rec.parent, prev = D.RECORDER, D.RECORDER
    D.RECORDER = rec
    try:
        out = fn(*args, **kwargs)
    finally:
        D.RECORDER = prev
    flat_out = flatten(out, [])
    if not flat_out:
        raise OnnxExporterError(f"the model returned no tensor (got {type(out).__name__})")
    # (before dims.py compares the traces, node by node)
    graph = decompose(rec.graph(*flat_out), every_dtype=True,
                      keep=lambda n: n.op in _ops.WHOLE and _ops.WHOLE[n.op](n, opset))
    return graph, list(rec.input_tensors), flat_out


class Capture:
    """The traced graph, its input tensors, and the symbolic size of every node's dims and
    size attributes (all static without dynamic_axes)."""

    def __init__(self, graph: Graph, inputs: list, outputs: list, n_args: int):
        self.graph, self.input_tensors, self.output_tensors = graph, inputs, outputs
        self.n_args = n_args
        self.symbols: dict[str, list] = {}  # name -> [(arg position, axis)]
        self.shapes: dict[int, tuple] = {}  # id(node) -> Dims (only where some dim varies)
        self.leaves: dict[tuple, object] = {}  # (id(node), path) -> Dim | Bad, where it varies
        self.bad: dict[int, str] = {}  # id(node) -> why no ONNX graph can follow it

    def shape(self, node) -> tuple:
        s = self.shapes.get(id(node))
        return s if s is not None else tuple(dm.Dim(int(d)) for d in node.shape)

    def leaf(self, node, path: tuple):
        """The Dim (or Bad) at `path` in node.attrs: ('spec', 2, 1), ('value',)."""
        v = self.leaves.get((id(node), path))
        if v is not None:
            return v
        x = node.attrs
        for p in path:
            x = x[p]
        return dm.Dim(int(x)) if float(x).is_integer() else x

    def is_static(self, node) -> bool:
        return id(node) not in self.shapes and id(node) not in self.bad and \
            not any(k[0] == id(node) for k in self.leaves)


def _tiled(t: Tensor, axes: list, size: int) -> Tensor:
    """`t` with each axis in `axes` resized to `size` by repeating its values cyclically (so
    that index inputs stay in range)."""
    a = t._host()
    for ax in axes:
        n = a.shape[ax]
        if n == 0:
            raise OnnxExporterError("dynamic_axes: an axis of size 0 cannot be traced again at "
                                    "another size")
        a = np.take(a, np.arange(size) % n, axis=ax)
    return Tensor._make(t._be.xp.asarray(np.ascontiguousarray(a)), t._dtype, t._be)


def _items(x, path=()):
    """(path, value) of every leaf of nested tuples/lists/dicts."""
    if isinstance(x, dict):
        for k in x:
            yield from _items(x[k], path + (k,))
    elif isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            yield from _items(v, path + (i,))
    else:
        yield path, x


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_))


def _compare(cap: Capture, graphs: list[Graph], envs: list[dict], what: list[str]) -> None:
    """Fill cap.shapes/leaves/bad from the base graph and its retraced variants."""
    base = graphs[0]
    for k, g in enumerate(graphs[1:], 1):
        if len(g.nodes) != len(base.nodes):
            raise OnnxExporterError(
                f"dynamic_axes: {what[k]} changes the number of traced operations "
                f"({len(base.nodes)} -> {len(g.nodes)}): the model's Python code depends on "
                "that size (a loop over it, or a value read from it), so that axis cannot be "
                "dynamic in the exported graph")
    pos = [{id(n): i for i, n in enumerate(g.nodes)} for g in graphs]
    for i, n in enumerate(base.nodes):
        others = [g.nodes[i] for g in graphs[1:]]
        for k, o in enumerate(others, 1):
            same = (o.op == n.op and o.dtype is n.dtype and len(o.inputs) == len(n.inputs)
                    and all(pos[k][id(a)] == pos[0][id(b)] for a, b in zip(o.inputs, n.inputs))
                    and len(o.shape) == len(n.shape) and o.attrs.keys() == n.attrs.keys())
            if not same:
                where = (n.meta or {}).get("source")
                raise OnnxExporterError(
                    f"dynamic_axes: {what[k]} changes the traced program at operation {i} "
                    f"({n.op}{' at ' + where if where else ''}): the model's Python code "
                    "depends on that size, so that axis cannot be dynamic in the exported graph")
        if any(o.shape != n.shape for o in others):
            cap.shapes[id(n)] = tuple(
                dm.fit([n.shape[d]] + [o.shape[d] for o in others], envs)
                for d in range(len(n.shape)))
        sized = SIZE_ATTRS.get(n.op, ())
        for key in n.attrs:
            base_items = list(_items(n.attrs[key], (key,)))
            other_items = [list(_items(o.attrs[key], (key,))) for o in others]
            for j, (path, v) in enumerate(base_items):
                vals = [v]
                for items in other_items:
                    if j >= len(items) or items[j][0] != path:
                        vals = None
                        break
                    vals.append(items[j][1])
                if vals is None:
                    cap.bad[id(n)] = f"its attribute {key} changes structure with the size"
                    break
                if isinstance(v, np.ndarray):
                    if any(not isinstance(w, np.ndarray) or w.shape != v.shape or
                           not np.array_equal(w, v, equal_nan=True) for w in vals[1:]):
                        cap.bad[id(n)] = "it holds an array constant that depends on the size"
                    continue
                if _is_number(v) and all(_is_number(w) for w in vals):
                    if any(w != v for w in vals[1:]):
                        if key in sized:
                            cap.leaves[(id(n), path)] = dm.fit(vals, envs)
                        else:
                            cap.bad[id(n)] = f"its attribute {key} depends on the size"
                elif any(not (w is v or w == v) for w in vals[1:]):
                    cap.bad[id(n)] = f"its attribute {key} depends on the size"


def capture(model, args: tuple, kwargs: dict, symbols: dict[str, list], opset: int) -> Capture:
    """Trace `model(*args, **kwargs)` for `opset`; `symbols` maps each dynamic size's name to
    the (argument tensor position, axis) pairs it names."""
    flat = flatten(args, []) + flatten(kwargs, [])
    graph, inputs, outputs = trace_call(model, args, kwargs, opset)
    cap = Capture(graph, inputs, outputs, len(flat))
    cap.symbols = symbols
    if not symbols:
        return cap
    env0 = {}
    for name, places in symbols.items():
        sizes = {flat[p].shape[ax] for p, ax in places}
        if len(sizes) != 1:
            raise OnnxExporterError(f"dynamic_axes: the axes named {name!r} have different "
                                    f"sizes {sorted(sizes)} in the example inputs")
        env0[name] = sizes.pop()
    graphs, envs, what = [graph], [env0], ["the example inputs"]
    from ..runtime.eager import GENERATOR
    state = GENERATOR.np.bit_generator.state
    try:
        for name, places in symbols.items():
            for delta in _deltas(env0[name]):
                size = env0[name] + delta
                axes: dict[int, list] = {}
                for p, ax in places:
                    axes.setdefault(p, []).append(ax)
                new = {id(flat[p]): _tiled(flat[p], a, size) for p, a in axes.items()}
                desc = f"changing {name!r} from {env0[name]} to {size}"
                try:
                    with warnings.catch_warnings():  # the base trace warned already
                        warnings.simplefilter("ignore", OnnxExporterWarning)
                        g, _, _ = trace_call(model, _replace(args, new), _replace(kwargs, new),
                                         opset)
                except OnnxExporterError:
                    raise
                except Exception as e:
                    raise OnnxExporterError(
                        f"dynamic_axes: {desc} to find which sizes in the graph depend on it, "
                        f"the model failed: {type(e).__name__}: {e}") from e
                graphs.append(g)
                envs.append(dict(env0, **{name: size}))
                what.append(desc)
    finally:
        GENERATOR.np.bit_generator.state = state
    _compare(cap, graphs, envs, what)
    return cap
