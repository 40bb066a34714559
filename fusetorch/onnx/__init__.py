"""torch.onnx for fusetorch: export a model to ONNX from its traced IR.

    fusetorch.onnx.export(model, (x,), "model.onnx", input_names=["x"],
                          output_names=["logits"], dynamic_axes={"x": {0: "batch"}})

The model's forward is traced on the example arguments (capture.py); parameters and buffers
become initializers named by their state_dict names; each IR primitive becomes ONNX operators
(ops.py); layers that are primitives (linear, conv2d, lstm_scan, max and average pooling,
softmax, layer_norm) become their one operator (Gemm, Conv, LSTM, MaxPool, AveragePool, ...)
where it computes them (ops.WHOLE), else their compositions. `dynamic_axes` makes the named
input sizes symbolic (dim_param) and every size in the graph that follows from them a
computed shape (dims.py). A primitive ONNX cannot express is an `UnsupportedOperatorError`
naming it and the line that recorded it.

The `onnx` package (and `onnxruntime`, to run or verify an export) is the optional `onnx`
extra: `pip install fusetorch[onnx]`. Nothing here imports it until `export` runs.
"""
from __future__ import annotations

import enum
import inspect
import io
import os
import warnings
from contextlib import contextmanager

from .errors import OnnxExporterError, OnnxExporterWarning, UnsupportedOperatorError
from . import errors  # noqa: F401

__all__ = ["export", "is_in_onnx_export", "ONNXProgram", "TrainingMode", "OnnxExporterError",
           "UnsupportedOperatorError", "errors"]

DEFAULT_OPSET = 20  # torch.onnx's default
MIN_OPSET = 13  # Squeeze, Unsqueeze, Slice, ReduceSum with axes as inputs
MAX_OPSET = 23

_IN_EXPORT = False


def is_in_onnx_export() -> bool:
    """True while `export` traces a model (a forward may take an export-friendly path)."""
    return _IN_EXPORT


class TrainingMode(enum.IntEnum):
    """The mode a model is traced in: EVAL (the default: dropout off, batch-norm statistics
    fixed), PRESERVE (as it is), TRAINING."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class ONNXProgram:
    """What `export` returns, as torch.onnx's: the `model_proto`, `save(destination)`, and
    calling it runs the model with onnxruntime (fusetorch tensors in and out)."""

    def __init__(self, model_proto):
        self.model_proto = model_proto
        self._session = None

    def save(self, destination) -> None:
        _write(self.model_proto, destination)

    def __call__(self, *args):
        import numpy as np

        from ..tracer.creation import from_numpy
        from .capture import flatten
        if self._session is None:
            import onnxruntime
            self._session = onnxruntime.InferenceSession(
                self.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [i.name for i in self._session.get_inputs()]
        feeds = {n: t._host() for n, t in zip(names, flatten(args, []))}
        return [from_numpy(np.asarray(o)) for o in self._session.run(None, feeds)]

    def __repr__(self) -> str:
        g = self.model_proto.graph
        return (f"ONNXProgram(inputs={[i.name for i in g.input]}, "
                f"outputs={[o.name for o in g.output]}, nodes={len(g.node)}, "
                f"opset={self.model_proto.opset_import[0].version})")


def _write(model, f) -> None:
    data = model.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    elif isinstance(f, io.TextIOBase):
        raise TypeError("export needs a path or a binary file object, got a text file")
    else:
        f.write(data)


@contextmanager
def _exporting(model, training: TrainingMode):
    global _IN_EXPORT
    from ..nn.module import Module
    from ..tracer.autograd import no_grad
    modes = None
    if isinstance(model, Module) and training != TrainingMode.PRESERVE:
        modes = [(m, m.training) for m in model.modules()]
        model.train(training == TrainingMode.TRAINING)
    prev, _IN_EXPORT = _IN_EXPORT, True
    try:
        with no_grad():
            yield
    finally:
        _IN_EXPORT = prev
        if modes is not None:
            for m, mode in modes:
                m.training = mode


def _arg_names(model, args: tuple, kwargs: dict) -> list[str]:
    """Default input names: forward's parameter names (`hx_0`, `hx_1` for tensors nested in
    one argument), else input_<i>."""
    from .capture import flatten
    try:
        fn = model.forward if hasattr(model, "forward") else model
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i].name if i < len(params) else f"input_{i}"
        n = len(flatten(a, []))
        names += [base] if n == 1 and not isinstance(a, (tuple, list, dict)) else \
            [f"{base}_{j}" for j in range(n)]
    for k, v in kwargs.items():
        n = len(flatten(v, []))
        names += [k] if n == 1 and not isinstance(v, (tuple, list, dict)) else \
            [f"{k}_{j}" for j in range(n)]
    if len(set(names)) != len(names):
        names = [f"input_{i}" for i in range(len(names))]
    return names


def _param_names(model, tensors: list, taken: set) -> list[str]:
    """state_dict names (then non-persistent buffers) for the traced parameters; other
    captured tensors are constants named `constant_<i>`."""
    from ..nn.module import Module
    known: dict[int, str] = {}
    if isinstance(model, Module):
        for name, t in model.state_dict(keep_vars=True).items():
            known.setdefault(id(t), name)
        for name, t in model.named_buffers():
            known.setdefault(id(t), name)
    out, k = [], 0
    for t in tensors:
        name = known.get(id(t))
        if name is None or name in taken:
            while f"constant_{k}" in taken:
                k += 1
            name = f"constant_{k}"
        taken.add(name)
        out.append(name)
    return out


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, custom_translation_table=None, report=False, optimize=True,
           verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           fallback=False, export_params=True, keep_initializers_as_inputs=False,
           dynamic_axes=None, training=TrainingMode.EVAL, operator_export_type=None,
           do_constant_folding=True, custom_opsets=None, export_modules_as_functions=False,
           autograd_inlining=True) -> ONNXProgram:
    """Export `model` (a Module or a function of tensors) called on `args` to ONNX.

    args: a tensor or a tuple of arguments (tensors, possibly nested in tuples/lists, and other
        Python values, which are fixed at their example values); `kwargs` keyword arguments.
    f: a path or a binary file object to write the model to (or None: only return it).
    input_names / output_names: names of the flattened tensor inputs and outputs (defaults:
        forward's parameter names; `output`, or `output_<i>` for several).
    dynamic_axes: {input or output name: {axis: dim_param name} or [axes]}; see dims.py for
        which sizes can follow (a model whose Python code loops over a dynamic size cannot).
    opset_version: 13 to 23 (default 20). export_params=False makes parameters graph inputs;
    keep_initializers_as_inputs lists initializers among the inputs too; do_constant_folding
    computes what depends only on parameters and constants at export time.
    verify: run the export with onnxruntime and compare with fusetorch's outputs.
    Returns an ONNXProgram (`.model_proto`, `.save(f)`, callable through onnxruntime).
    PyTorch's dynamo-only options (dynamo, report, optimize, profile, artifacts_dir, ...) are
    accepted and have no effect."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ImportError("fusetorch.onnx.export needs the onnx package: pip install "
                          "'fusetorch[onnx]' (or pip install onnx onnxruntime)") from None
    from ..tracer.tensor import Tensor
    from .capture import capture, flatten
    from .exporter import build

    if dynamic_shapes is not None:
        raise NotImplementedError("dynamic_shapes (torch.export's Dim specs) is not supported; "
                                  "name dynamic sizes with dynamic_axes")
    if custom_translation_table or custom_opsets or export_modules_as_functions:
        raise NotImplementedError("custom translations, custom opsets and modules as ONNX "
                                  "functions are not supported")
    if operator_export_type not in (None, 0) and str(operator_export_type) not in (
            "OperatorExportTypes.ONNX",):
        raise NotImplementedError(f"operator_export_type={operator_export_type} is not "
                                  "supported (only plain ONNX)")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"opset_version {opset} is not supported: fusetorch exports opsets "
                         f"{MIN_OPSET} to {MAX_OPSET}")
    if isinstance(args, Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict) and not kwargs:  # torch's legacy (x, {kw: v})
        args, kwargs = args[:-1], dict(args[-1])

    n_in = len(flatten(args, [])) + len(flatten(kwargs, []))
    names = list(input_names or [])
    if len(names) > n_in:
        raise ValueError(f"{len(names)} input_names for {n_in} input tensors")
    defaults = _arg_names(model, args, kwargs)
    names += [d if d not in names else f"input_{i}" for i, d in enumerate(defaults)][len(names):]

    # dynamic axes: symbols from inputs, dim_param names for outputs
    symbols: dict[str, list] = {}
    out_axes_by_name: dict[str, dict] = {}
    for key, axes in (dynamic_axes or {}).items():
        if isinstance(axes, (list, tuple)):
            axes = {int(a): f"{key}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        if key in names:
            i = names.index(key)
            rank = flatten(args, [])[i].ndim if i < len(flatten(args, [])) else \
                flatten(kwargs, [])[i - len(flatten(args, []))].ndim
            for axis, sym in axes.items():
                a = int(axis)
                if not -rank <= a < rank:
                    raise ValueError(f"dynamic_axes: axis {axis} of input {key!r}, which has "
                                     f"{rank} dims")
                symbols.setdefault(str(sym), []).append((i, a % rank))
        else:
            out_axes_by_name[key] = {int(a): str(s) for a, s in axes.items()}

    global _IN_EXPORT
    with _exporting(model, training):
        cap = capture(model, args, kwargs, symbols, opset)
    n_out = len(cap.graph.outputs)
    onames = list(output_names or [])
    if len(onames) > n_out:
        raise ValueError(f"{len(onames)} output_names for {n_out} outputs")
    default_out = ["output"] if n_out == 1 else [f"output_{i}" for i in range(n_out)]
    onames += [d if d not in onames and d not in names else f"output_{i}"
               for i, d in enumerate(default_out)][len(onames):]
    output_axes = {}
    for key, axes in out_axes_by_name.items():
        if key not in onames:
            warnings.warn(f"dynamic_axes: {key!r} is not an input or output name",
                          OnnxExporterWarning, stacklevel=2)
            continue
        k = onames.index(key)
        rank = len(cap.graph.outputs[k].shape)
        for a, s in axes.items():
            output_axes[(k, a % rank if rank else a)] = s

    pnames = _param_names(model, cap.input_tensors[cap.n_args:], set(names) | set(onames))
    model_proto = build(cap, input_names=names, output_names=onames, param_names=pnames,
                        output_axes=output_axes, opset=opset, export_params=export_params,
                        keep_initializers_as_inputs=keep_initializers_as_inputs,
                        do_constant_folding=do_constant_folding)
    program = ONNXProgram(model_proto)
    if verbose:
        from onnx import helper
        print(helper.printable_graph(model_proto.graph))
    if verify:
        _verify(program, args, kwargs, cap, pnames)
    if f is not None:
        _write(model_proto, f)
    return program


def _verify(program, args, kwargs, cap, pnames: list) -> None:
    """Run the export with onnxruntime on the example inputs (and, for export_params=False,
    the parameters) and compare with fusetorch's outputs."""
    import numpy as np

    from .capture import flatten
    ins = flatten(args, []) + flatten(kwargs, [])
    params = dict(zip(pnames, cap.input_tensors[cap.n_args:]))
    extra = [params[i.name] for i in program.model_proto.graph.input[len(ins):]
             if i.name in params]
    got = program(*ins, *extra)
    for k, (want, have) in enumerate(zip(cap.output_tensors, got)):
        a, b = want._host(), have._host()
        same = a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        if not same:
            diff = "shapes differ" if a.shape != b.shape else \
                f"max abs difference {np.max(np.abs(a.astype(float) - b.astype(float)))}"
            raise OnnxExporterError(f"verify: output {k} differs between fusetorch and "
                                    f"onnxruntime ({diff})")
