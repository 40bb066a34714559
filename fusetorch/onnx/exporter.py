"""From a Capture to an ONNX ModelProto: graph inputs and initializers, constant folding,
one emitter per primitive (ops.py), outputs named and typed."""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt
from ..runtime.device import cpu_backend
from ..runtime.interpret import eval_node
from . import dims as dm
from .builder import Builder, onnx_dtype
from .errors import OnnxExporterError, UnsupportedOperatorError
from .ops import EMIT, STRUCTURAL, UNSUPPORTED

# sources that are constants when their shape is static (random is not)
_CONST_SOURCES = {"constant", "full", "iota"}
_NO_FOLD = {"random", "nonzero", "custom", "custom_vjp", "check"}
_RELAYOUT = {"permute", "reshape", "expand", "copy", "cast", "detach", "to_device"}


class Context:
    """What an emitter sees: the builder, the opset, sizes (Dims) and size attributes."""

    def __init__(self, b: Builder, cap, values: dict):
        self.b, self.cap, self.opset = b, cap, b.opset
        self._values = values  # id(node) -> its ONNX value's name, for nodes emitted so far
        self._readers: dict[int, list] | None = None

    def value(self, node) -> str | None:
        """The ONNX name of an earlier node's value (None where it has none: folded away)."""
        return self._values.get(id(node))

    def readers(self, node) -> list:
        """The graph's nodes that read `node`."""
        if self._readers is None:
            self._readers = {}
            for n in self.cap.graph.nodes:
                for i in n.inputs:
                    self._readers.setdefault(id(i), []).append(n)
        return self._readers.get(id(node), [])

    def shape(self, node) -> tuple:
        return self.cap.shape(node)

    def leaf(self, node, path):
        return self.cap.leaf(node, path)

    def need(self, node, version: int) -> None:
        """Refuse `node` below opset `version` (the first that expresses it)."""
        if self.opset < version:
            raise UnsupportedOperatorError(node.op, self.opset, version,
                                           where=(node.meta or {}).get("source"))


def _where(node) -> str:
    src = (node.meta or {}).get("source")
    return f" recorded at {src}" if src else ""


def _dim_param(d, named: str | None):
    if named is not None:
        return named
    if isinstance(d, dm.Bad):
        return None
    if d.static:
        return d.c0
    return str(d)


def build(cap, *, input_names: list, output_names: list, param_names: list,
          output_axes: dict, opset: int, export_params: bool,
          keep_initializers_as_inputs: bool, do_constant_folding: bool, doc: str = ""):
    """The ModelProto for `cap`. `input_names` name the argument tensors, `param_names` the
    other graph inputs (parameters, buffers, captured tensors); `output_axes` maps (output
    position, axis) to a dim_param the user named."""
    import onnx
    from onnx import helper

    from ..version import fusetorch as _version

    graph = cap.graph
    b = Builder(opset)
    for name in list(input_names) + list(param_names) + list(output_names):
        b.reserve(name)
    pos = {id(n): i for i, n in enumerate(graph.inputs)}
    values: dict[int, str] = {}
    graph_inputs, init_inputs = [], []
    n_args = cap.n_args

    for name, places in cap.symbols.items():
        p, axis = places[0]
        b.sym_source[name] = (input_names[p], axis)

    def deps(n, folded=frozenset()):
        return () if id(n) in folded else n.inputs

    def live_set(folded=frozenset()):
        seen, stack = set(), list(graph.outputs)
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            stack.extend(deps(n, folded))
        return seen

    live = live_set()

    # ---- constant folding: values computable now (parameters, constants) become initializers
    folded: dict[int, np.ndarray] = {}
    if do_constant_folding:
        be = cpu_backend()
        const: dict[int, bool] = {}
        arrays: dict[int, object] = {}

        def value(n):
            if id(n) not in arrays:
                if n.op == "input":
                    arrays[id(n)] = cap.input_tensors[pos[id(n)]]._host()
                else:
                    arrays[id(n)] = eval_node(n, [value(i) for i in n.inputs], be.impl, be.xp)
            return arrays[id(n)]

        for n in graph.nodes:
            if n.op == "input":
                const[id(n)] = pos[id(n)] >= n_args and export_params
            elif n.op in _CONST_SOURCES:
                const[id(n)] = cap.is_static(n)
            else:
                const[id(n)] = (n.op not in _NO_FOLD and n.op in EMIT and cap.is_static(n) and
                                all(const[id(i)] for i in n.inputs))
                # a parameter only laid out anew (W.T, a reshaped bias) keeps its name: the
                # runtime does that at load time anyway
                relayout = n.op in _RELAYOUT and n.inputs[0].op == "input"
                if const[id(n)] and id(n) in live and not relayout:
                    size = int(np.prod(n.shape))
                    biggest = max(int(np.prod(i.shape)) for i in n.inputs)
                    if size <= max(biggest, 1):  # never grow the file (expand, full)
                        folded[id(n)] = None
        if folded:
            live = live_set(frozenset(folded))
            for n in graph.nodes:
                if id(n) in folded and id(n) in live:
                    folded[id(n)] = np.asarray(value(n))

    ctx = Context(b, cap, values)
    # ---- graph inputs and initializers
    for n in graph.inputs:
        i = pos[id(n)]
        if i < n_args:
            name = input_names[i]
            shape = []
            for axis, d in enumerate(n.shape):
                sym = next((s for s, places in cap.symbols.items() if (i, axis) in places), None)
                shape.append(sym if sym is not None else int(d))
            graph_inputs.append(helper.make_tensor_value_info(name, onnx_dtype(n.dtype), shape))
        else:
            name = param_names[i - n_args]
            if id(n) not in live:
                continue
            if export_params:
                b.initializer(cap.input_tensors[i]._host(), name)
                if keep_initializers_as_inputs:
                    init_inputs.append(helper.make_tensor_value_info(
                        name, onnx_dtype(n.dtype), list(n.shape)))
            else:
                graph_inputs.append(helper.make_tensor_value_info(
                    name, onnx_dtype(n.dtype), list(n.shape)))
        values[id(n)] = name

    # ---- the nodes
    for n in graph.nodes:
        if id(n) not in live or n.op in STRUCTURAL:
            continue
        if id(n) in folded:
            name = b.initializer(folded[id(n)], b.fresh(f"folded_{n.op}"))
            if keep_initializers_as_inputs:
                init_inputs.append(helper.make_tensor_value_info(
                    name, onnx_dtype(n.dtype), list(n.shape)))
            values[id(n)] = name
            continue
        try:
            if id(n) in cap.bad:
                raise OnnxExporterError(f"dynamic_axes: {n.op}{_where(n)} cannot follow the "
                                        f"dynamic sizes: {cap.bad[id(n)]}")
            if n.op in UNSUPPORTED:
                reason = UNSUPPORTED[n.op]
                if n.op == "custom":
                    reason += f" ({getattr(n.attrs['fn'], '__name__', n.attrs['fn'])})"
                raise UnsupportedOperatorError(n.op, opset, None, reason,
                                               (n.meta or {}).get("source"))
            if n.op not in EMIT:
                raise UnsupportedOperatorError(n.op, opset, None, "no ONNX translation",
                                               (n.meta or {}).get("source"))
            values[id(n)] = EMIT[n.op](ctx, n, [values[id(i)] for i in n.inputs])
        except OnnxExporterError as e:
            if type(e) is OnnxExporterError and " recorded at " not in str(e):
                raise OnnxExporterError(f"{e} (exporting {n.op}{_where(n)})") from None
            raise

    # ---- outputs: the last node's value takes the output's name (an Identity where the
    # value is a graph input, an initializer, or another output)
    # outputs computed from a nonzero (x[mask]) have sizes that depend on the values: their
    # dims are left unnamed rather than declared as the sizes this trace saw
    data_dependent: set[int] = set()
    for n in graph.nodes:
        if n.op == "nonzero" or any(id(i) in data_dependent for i in n.inputs):
            data_dependent.add(id(n))
    produced = {o for node in b.nodes for o in node.output}
    rename: dict[str, str] = {}
    outputs = []
    for k, (n, name) in enumerate(zip(graph.outputs, output_names)):
        v = values[id(n)]
        if v in produced and v not in rename:
            rename[v] = name
        else:
            b.nodes.append(helper.make_node("Identity", [rename.get(v, v)], [name],
                                            name=f"/Identity_{name}"))
        dims = cap.shape(n)
        if id(n) in data_dependent:
            dims = [dm.Bad("depends on the values")] * len(dims)
        shape = [_dim_param(d, output_axes.get((k, axis))) for axis, d in enumerate(dims)]
        outputs.append(helper.make_tensor_value_info(name, onnx_dtype(n.dtype), shape))
    if rename:
        for node in b.nodes:
            node.input[:] = [rename.get(i, i) for i in node.input]
            node.output[:] = [rename.get(o, o) for o in node.output]

    # drop what no output reads (a size computed for a check, a shared constant unused)
    needed = {o.name for o in outputs}
    kept = []
    for node in reversed(b.nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(node.input)
    b.nodes = kept[::-1]
    b.initializers = [t for t in b.initializers if t.name in needed]
    init_inputs = [i for i in init_inputs if i.name in needed]
    g = helper.make_graph(b.nodes, "main_graph", graph_inputs + init_inputs, outputs,
                          b.initializers, doc_string=doc)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(g, opset_imports=opsets, producer_name="fusetorch",
                              producer_version=_version)
    model.ir_version = helper.find_min_ir_version_for(opsets)
    if any(n.dtype is dt.bfloat16 for n in graph.nodes):
        model.ir_version = max(model.ir_version, 4)
    onnx.checker.check_model(model)
    return model
