"""`fusetorch.compile(fn_or_module)`: trace, optimise, fuse, generate C, build, guard, run.

    cmodel = fusetorch.compile(model)
    out = cmodel(x)            # first call with these guards: traced, kernels built
    print(cmodel.graph())      # the IR that runs
    print(cmodel.kernels())    # what each kernel fuses, its iteration space, bytes moved
    print(cmodel.source())     # the generated C

Each call is looked up by its guards: every tensor argument's shape, dtype, strides, device and
requires_grad; the parameters' identities, shapes and dtypes; training mode; grad mode; other
arguments by value. A new key is traced afresh (a bounded number of variants, with a warning
when the bound is hit). A call that reads data (`.item()`, `bool(t)`, `.numpy()`, `.tolist()`),
calls a custom autograd Function, or mutates an input ends its trace: that key runs eagerly,
with one warning naming the user's line (`fullgraph=True` makes that an error). Without a C
compiler every call runs eagerly after one warning.

When gradients are needed the forward program also returns the values the symbolic backward
reads, and the output's grad_fn (`CompiledFunctionBackward`) runs the compiled backward program.
State of this slice (see ARCHITECTURE.md): one differentiable output per call; fused kernels
cover elementwise chains and sums over trailing dims; matmul and movement ops are library calls
on numpy views.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Callable

from .ir import passes
from .ir.grad import backward_graph
from .ir.graph import Graph
from .runtime.device import dtype_from_numpy
from .runtime.program import Program
from .tracer import autograd as A
from .tracer import dispatch as D
from .tracer.function import FunctionCtx
from .tracer.tensor import Tensor
from .tracer.trace import GraphBreak, trace

MAX_VARIANTS = 8
_EAGER = object()  # a cached decision: this key runs eagerly
_warned_no_compiler = False


class CompiledFunction:
    """What `compile` returns: called like the original, with compiled variants per guard key."""

    def __init__(self, fn: Callable, fullgraph: bool = False):
        self._fn = fn
        self._fullgraph = fullgraph
        self._variants: OrderedDict = OrderedDict()
        self._last: Program | None = None
        self._warned_overflow = False

    @property
    def _orig_mod(self):
        return self._fn

    def __getattr__(self, name: str) -> Any:
        # a compiled module still answers for its parameters, train(), state_dict(), ...
        return getattr(self.__dict__["_fn"], name)

    def __call__(self, *args, **kwargs):
        key = self._key(args, kwargs)
        if key is None:
            return self._fn(*args, **kwargs)
        v = self._variants.get(key)
        if v is None:
            return self._compile(key, args, kwargs)
        if v is _EAGER:
            return self._fn(*args, **kwargs)
        program, spec, captured, captured_key, backward = v
        if _guard(captured) != captured_key:  # a tensor the function closes over changed
            return self._compile(key, args, kwargs)
        self._variants.move_to_end(key)
        self._last = program
        tensors = _tensors(args) + _module_tensors(self._fn) + captured
        arrays = program.run([t._data for t in tensors])
        if backward is None:
            return _wrap(spec, arrays, tensors[0]._be)
        return _with_backward(arrays, tensors, *backward)

    # ------------------------------------------------------------ guards

    def _key(self, args, kwargs):
        parts = []
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                parts.append((tuple(a._data.shape), a._dtype, a._data.strides, str(a.device),
                              a._requires_grad))
            elif isinstance(a, (int, float, bool, str, type(None))):
                parts.append(("py", a))
            else:
                return None  # an argument we cannot guard on: run eagerly
        mod = self._fn
        params = tuple((id(t), tuple(t._data.shape), t._dtype, t._data.strides, t._requires_grad)
                       for t in _module_tensors(mod))
        modes = tuple(m.training for m in mod.modules()) if hasattr(mod, "modules") else ()
        return (tuple(parts), tuple(sorted(kwargs)), params, modes, D.GRAD_ENABLED)

    # ------------------------------------------------------------ tracing and building

    def _compile(self, key, args, kwargs):
        global _warned_no_compiler
        tensors = _tensors(args) + _module_tensors(self._fn)
        if kwargs or not tensors or any(t._be.device.type != "cpu" for t in tensors):
            # (CUDA tensors: the CUDA backend renders the same kernels in the CUDA issue)
            self._remember(key, _EAGER)
            return self._fn(*args, **kwargs)
        try:
            with trace(*tensors) as rec:
                rec.strict = True
                out = self._fn(*args)
        except GraphBreak as e:
            if self._fullgraph:
                raise RuntimeError(f"fusetorch.compile(fullgraph=True): {e}") from None
            warnings.warn(f"fusetorch.compile: graph break ({e}); this call runs eagerly",
                          stacklevel=3)
            self._remember(key, _EAGER)
            return self._fn(*args)
        outs, spec = _flatten(out)
        # tensors the function reads without taking them as arguments (closures, globals)
        # became extra graph inputs: they are read afresh on every call, and guarded
        captured = rec.input_tensors[len(tensors):]
        mutated = [t for k, t in enumerate(rec.input_tensors) if rec.node(t) is not rec.inputs[k]]
        tensors = tensors + captured
        wrt = [k for k, t in enumerate(tensors) if t._requires_grad] if D.GRAD_ENABLED else []
        if outs and not outs[0]._dtype.is_floating_point:
            wrt = []  # an integer result (argmax, a comparison) carries no gradient
        if mutated or not outs or (wrt and len(outs) != 1):
            # several differentiable outputs: the joint program returns one for now
            self._remember(key, _EAGER)
            return out
        graph, backward = rec.graph(*outs), None
        if wrt:
            # the joint program: the forward also returns every value the backward reads
            bw = backward_graph(graph.outputs, [rec.inputs[k] for k in wrt])
            saved = [f for f, _part in bw.values]
            graph = Graph(graph.inputs, graph.outputs + saved)
            bprog = Program(passes.optimize(bw.graph), tensors[0]._be)
            backward = (bprog, tuple(wrt))
        graph = passes.optimize(graph)
        program = Program(graph, tensors[0]._be)
        program.user_outputs = len(outs)
        try:
            program.run([t._data for t in tensors])  # builds the kernels
        except Exception as e:  # no compiler, or a build failure: eager, said once
            from .runtime.cbuild import CompilerUnavailable
            if isinstance(e, CompilerUnavailable):
                if not _warned_no_compiler:
                    warnings.warn(f"fusetorch.compile: no C compiler ({e}); compiled functions "
                                  "run eagerly", stacklevel=3)
                    _warned_no_compiler = True
                self._remember(key, _EAGER)
                return out
            raise
        self._last = program
        self._backward = backward[0] if backward else None
        self._remember(key, (program, spec, captured, _guard(captured), backward))
        return out

    def _remember(self, key, value) -> None:
        self._variants[key] = value
        if len(self._variants) > MAX_VARIANTS:
            self._variants.popitem(last=False)
            if not self._warned_overflow:
                warnings.warn(f"fusetorch.compile: more than {MAX_VARIANTS} variants (shapes, "
                              "dtypes, modes) of one function; the oldest are evicted",
                              stacklevel=4)
                self._warned_overflow = True

    # ------------------------------------------------------------ inspection

    def graph(self) -> str:
        """The optimised IR of the most recently used compiled variant."""
        return self._last.graph.text() if self._last is not None else ""

    def backward_graph(self) -> str:
        """The optimised IR of its backward program ('' when it needs no gradients)."""
        b = self.__dict__.get("_backward")
        return b.graph.text() if b is not None else ""

    def kernels(self) -> list:
        return self._last.describe() if self._last is not None else []

    def source(self) -> str:
        return (self._last.source or "") if self._last is not None else ""


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic=None,
            backend=None, mode=None, options=None, disable: bool = False):
    """Compile a function or Module into fused kernels; usable as a decorator too."""
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                  mode=mode, options=options, disable=disable)
    if disable:
        return model
    return CompiledFunction(model, fullgraph=fullgraph)


class _CompiledCall:
    """The custom-Function side of a compiled call's output: one node whose backward runs the
    compiled backward program on the saved forward values. Its grad_fn prints as PyTorch's
    does for compiled code, `CompiledFunctionBackward`."""

    @staticmethod
    def backward(ctx, grad_output):
        if D.GRAD_ENABLED:
            raise NotImplementedError("double backward through a compiled function is not "
                                      "supported yet: differentiate the eager function")
        arrays = ctx.program.run([grad_output._data] + ctx.saved_arrays)
        return tuple(Tensor._make(a, t._dtype, t._be) for a, t in zip(arrays, ctx.inputs))


_CompiledCall.__name__ = "CompiledFunction"  # grad_fn: CompiledFunctionBackward


def _with_backward(arrays: list, tensors: list, program: Program, wrt: tuple) -> Tensor:
    """The output of a compiled call, recorded as one autograd node over the inputs that
    require grad."""
    be = tensors[0]._be
    out = Tensor._make(arrays[0], _dtype_of(arrays[0]), be)
    inputs = [tensors[k] for k in wrt]
    ctx = FunctionCtx(_CompiledCall, tuple(inputs))
    ctx.program, ctx.saved_arrays, ctx.inputs = program, list(arrays[1:]), inputs
    ctx._out_dtype, ctx._out_be = out._dtype, be
    ctx._in_shapes = tuple(tuple(t.shape) for t in inputs)
    A.record("custom", inputs, {"fn": _CompiledCall,
                                "positions": tuple(range(len(inputs))), "dtype": out._dtype}, out)
    out._node.saved = {("context", id(out._node)): (ctx, None, 0, None)}
    return out


def _guard(tensors: list) -> tuple:
    return tuple((id(t), tuple(t._data.shape), t._dtype, t._data.strides, t._requires_grad)
                 for t in tensors)


def _tensors(args) -> list:
    return [a for a in args if isinstance(a, Tensor)]


def _module_tensors(fn) -> list:
    if not hasattr(fn, "parameters"):
        return []
    return list(fn.parameters()) + [b for b in fn.buffers()]


def _flatten(out):
    if isinstance(out, Tensor):
        return [out], None
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return list(out), type(out)
    return [], None


def _wrap(spec, arrays, be):
    ts = [Tensor._make(a, _dtype_of(a), be) for a in arrays]
    return ts[0] if spec is None else spec(ts)


def _dtype_of(a):
    return dtype_from_numpy(a.dtype)
