"""`fusetorch.compile(fn_or_module)`: trace, optimise, fuse, generate C, build, guard, run.

    cmodel = fusetorch.compile(model)
    out = cmodel(x)            # first call with these guards: traced, kernels built in the
                               # background; calls until then interpret the traced graph
    cmodel.wait_for_build()    # (optional) the handover: later calls run the kernels
    print(cmodel.graph())      # the IR that runs
    print(cmodel.kernels())    # what each kernel fuses, its iteration space, bytes moved
    print(cmodel.source())     # the generated C

Each call is looked up by its guards: every tensor argument's shape, dtype, strides, device and
requires_grad; the parameters' identities, shapes and dtypes; training mode; grad mode; other
arguments by value (the key); then, per variant of that key, the globals and closure cells its
code loads (`_guards.py`), the attributes of objects its trace read (`_reads.py`: a module's
`training`, `p`, `eps`, parameters and submodules, however the module was reached), the tensors
it closes over and the optimizers' Python state. A call no variant's guards hold for is traced
afresh (a bounded number of variants, with a warning when the bound is hit); a retrace has a
reason (`last_retrace_reason`), is logged with `FUSETORCH_LOGS=recompiles` (see `_logging.py`),
and after `RECOMPILE_LIMIT` of them one warning names the function, its line and the reason.
A call that reads data (`.item()`, `bool(t)`, `.numpy()`, `.tolist()`), calls a custom
autograd Function, or mutates an input ends its trace: that key runs eagerly, with one warning
naming the user's line (`fullgraph=True` makes that an error). Without a C compiler every call
runs eagerly after one warning.

When gradients are needed the forward program also returns the values the symbolic backward
reads, and the output's grad_fn (`CompiledFunctionBackward`) runs the compiled backward program.
A whole training step (forward, `backward()`, `opt.step()`) compiles too: its effects on
parameters, gradients and optimizer state are outputs of the program, written back on every
call (see `_Effects`). Fused kernels cover elementwise chains and reductions over any dims;
matmul and movement ops are library calls on numpy views (see ARCHITECTURE.md).
"""
from __future__ import annotations

import struct
import types
import warnings
import weakref
from collections import OrderedDict
from typing import Any, Callable

from .ir.grad import backward_graph, needs_grad
from .codegen.fuse import fusible
from . import _logging
from ._policy import note
from ._guards import Bindings, unread_parameters
from ._reads import Reads, recording
from ._tensor_names import tensor_names
from .ir.graph import Graph, toposort
from .nn.module import Module
from .ir.identity import value_key
from .ir.recompute import recompute
from .runtime.device import dtype_from_numpy
from .runtime import build as _kernel_build
from .runtime import inspection
from .runtime.program import Program, kernel_safe, obtain, overlapping
from .tracer import autocast as _ac
from .tracer import autograd as A
from .tracer import dispatch as D
from .tracer import forward_ad as _forward_ad
from .tracer.function import FunctionCtx, record_outputs
from .tracer.tensor import Tensor
from .tracer.trace import trace

MAX_VARIANTS = 8
RECOMPILE_LIMIT = 8  # retraces of one function before the one warning (PyTorch's default)
_SETTLE_TRIES = 3  # traces of one key that may change optimizer state before it runs eagerly
_EAGER = object()  # a cached decision: this key runs eagerly


LIVE: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()  # (torch.compiler.reset)


class CompiledFunction:
    """What `compile` returns: called like the original, with compiled variants per guard key."""

    def __init__(self, fn: Callable, fullgraph: bool = False):
        LIVE.add(self)
        self._fn = fn
        self._fullgraph = fullgraph
        self._variants: OrderedDict = OrderedDict()
        # the compiled variant the last compiled call ran (calls that ran eagerly leave it):
        # what graph(), backward_graph(), kernels() and source() describe, all the same one
        self._last: _Variant | None = None
        self._warned_overflow = False
        # key -> (traces, the last one's effect) of calls that ran Python a replay would not
        self._unsettled: dict = {}
        # the objects with Python-side state (optimizers) that this function's traces used,
        # as the recorder reported them (`Recorder.uses_python_state`), by id
        self._stateful: dict = {}
        self._traces = 0  # calls that traced (the first, then every retrace)
        self._last_key = None  # the key of the latest call that found or made a variant
        self._warned_retraces = False
        self.last_retrace_reason: str | None = None  # why the latest retrace happened
        self._name = _where(fn)  # (how `fusetorch.compiler.explain` names it)

    @property
    def retrace_count(self) -> int:
        """How many calls traced again after the first trace (PyTorch: recompiles)."""
        return max(self._traces - 1, 0)

    @property
    def _orig_mod(self):
        return self._fn

    def __getattr__(self, name: str) -> Any:
        # a compiled module still answers for its parameters, train(), state_dict(), ...
        return getattr(self.__dict__["_fn"], name)

    def __call__(self, *args, **kwargs):
        if _forward_ad.LEVEL is not None:  # tangents are carried op by op: run it eagerly
            self._note(args, "eager_call", "forward AD is active (tangents go op by op)")
            return self._fn(*args, **kwargs)
        key = self._key(args, kwargs)
        if key is None:
            self._note(args, "eager_call", "an argument it cannot guard on")
            return self._fn(*args, **kwargs)
        variants = self._variants.get(key)
        if variants is None:
            return self._compile(key, args, kwargs, lambda: self._why_new(key))
        if variants is _EAGER:
            return self._fn(*args, **kwargs)
        given = _unique(_tensors(args) + _module_tensors(self._fn))
        for v in variants:  # the latest first
            tensors = given + v.resolve()
            if v.guard(tensors) and v.bindings.hold() and v.reads.hold():
                break
        else:  # a tensor the function closes over changed, a global or closure name it read
            # was rebound, an attribute it read changed (`model.eval()`, a new parameter), or
            # the state of an optimizer it steps changed
            return self._compile(key, args, kwargs, variants[0].failure(given))
        if v is not variants[0]:  # (the latest first; another thread may have moved it)
            try:
                variants.remove(v)
                variants.insert(0, v)
            except ValueError:
                pass
        self._last_key = key
        arrays = [t._data for t in tensors]
        if not kernel_safe(arrays):
            self._note(args, "unaligned")
            return self._fn(*args, **kwargs)
        if v.effects.mutated and overlapping(arrays, v.effects.mutated):
            # an argument shares memory with a tensor the call writes (a view of a parameter):
            # eager order decides what it reads, which the graph of separate values cannot say
            self._note(args, "eager_call", "an argument shares memory with a tensor it writes")
            return self._fn(*args, **kwargs)
        try:  # (atomic; threads may call one compiled function at once, each tracing alone)
            self._variants.move_to_end(key)
        except KeyError:  # another thread evicted it meanwhile
            pass
        self._last = v
        arrays = v.program.run(arrays)
        v.apply_effects(tensors, arrays)
        if v.backward is None:
            outs = [Tensor._make(a, _dtype_of(a), tensors[0]._be) for a in arrays[:v.n_user]]
        else:
            outs = _with_backward(arrays, v.n_user, v.n_outputs, tensors, *v.backward)
        for i, k in v.returned_inputs:  # `lambda t: t` returns `t` itself, as eager does
            outs[i] = tensors[k]
        return _unflatten(v.spec, outs)

    # ------------------------------------------------------------ guards

    def _key(self, args, kwargs):
        parts = []
        unread = None
        for i, (name, a) in enumerate(_named_arguments(args, kwargs)):
            if isinstance(a, Tensor):
                parts.append((tuple(a._data.shape), a._dtype, a._data.strides, str(a.device),
                              a._requires_grad))
            elif isinstance(a, (int, float, bool, str, type(None))):
                if unread is None:
                    unread = _unread_arguments(self._fn)
                if (i if name is None else name) in unread:
                    parts.append(_UNREAD)  # (a loop counter the function never reads)
                    continue
                # by structural identity: 2, 2.0 and True trace to different dtypes, 0.0 and
                # -0.0 to different values (x / -0.0 is -inf), though Python finds them equal
                parts.append(("py", value_key(a)))
            elif isinstance(a, Module):
                # by identity; what the trace reads of it is guarded like any module's (its
                # parameters are closed-over tensors). A variant holds the module, so its id is
                # not reused while the variant lives
                parts.append(("module", id(a)))
            else:
                return None  # an argument we cannot guard on: run eagerly
        mod = self._fn
        params = tuple((id(t), tuple(t._data.shape), t._dtype, t._data.strides, t._requires_grad)
                       for t in _module_tensors(mod))
        modes = tuple(m.training for m in mod.modules()) if hasattr(mod, "modules") else ()
        # one tensor passed twice is one graph input: the key says which arguments alias
        ids = [id(a) for a in args if isinstance(a, Tensor)] + [p[0] for p in params]
        aliasing = tuple(ids.index(i) for i in ids) if len(set(ids)) < len(ids) else None
        # autocast changes which dtypes ops compute in: a traced program holds one state's casts
        autocast = tuple(_ac.ACTIVE.items())
        return (tuple(parts), tuple(sorted(kwargs)), params, modes, D.GRAD_ENABLED, aliasing,
                autocast)

    # ------------------------------------------------------------ tracing and building

    def _compile(self, key, args, kwargs, reason=None):
        self._traces += 1
        if self._traces > 1:
            self._retraced(reason() if callable(reason) else reason)
        tensors = _unique(_tensors(args) + _module_tensors(self._fn))
        if kwargs or len({id(t._be) for t in tensors}) > 1:
            # one program runs on one device (C kernels on the CPU, CUDA kernels on a GPU)
            self._note(args, "eager_call", "keyword arguments" if kwargs else
                       "tensors on several devices")
            self._remember(key, _EAGER)
            return self._fn(*args, **kwargs)
        known = list(self._stateful.values())
        state_before = _python_state(known)
        # what its names hold now, as the trace reads them (a Module argument's code too)
        bindings = Bindings.of(self._fn, [a for a in args if isinstance(a, Module)])
        names = tensor_names(self._fn, args)  # (for pictures of the graph: `graph("dot")`)
        held = bindings.contents()
        with recording(bindings.classes) as read, trace(*tensors) as rec:
            rec.strict = True
            out = self._fn(*args)
        if rec.broken:
            # the call itself finished eagerly (see Recorder.graph_break)
            if self._fullgraph:
                raise RuntimeError(f"fusetorch.compile(fullgraph=True): graph break "
                                   f"({rec.broken})")
            warnings.warn(f"fusetorch.compile: graph break ({rec.broken}); this function "
                          "runs eagerly for these inputs", stacklevel=3)
            self._note(args, "graph_break", rec.broken)
            self._remember(key, _EAGER)
            return out
        outs, spec = _flatten(out)
        self._last_key = key
        stateful = list(rec.stateful.values())
        new = [o for o in stateful if id(o) not in self._stateful]
        self._stateful.update(rec.stateful)
        effect = None
        if new or _python_state(known) != state_before:
            # the call changed what an optimizer keeps in Python (its first step creates state;
            # a scheduler set a new lr): a replay could not redo that. An optimizer this
            # function had not used before counts as changed: its state before the call is
            # unknown (the call may have set its lr before stepping it)
            effect = "it changes an optimizer's Python state (e.g. a step counter or a new lr)"
        elif read.printed is not None:
            effect = f"it prints (at {read.printed})"
        else:  # `calls.append(1)`, `counts[k] += 1` on a global or closed-over container
            effect = Bindings.changed_container(held)
        if effect is not None:
            # This call ran eagerly while tracing; the next one traces again, until the
            # effect settles (a first step's state, a cache filled once) or, after
            # _SETTLE_TRIES, the key runs eagerly
            tries = self._unsettled.get(key, (0, None))[0] + 1
            self._unsettled[key] = (tries, effect)
            if tries >= _SETTLE_TRIES:
                warnings.warn(f"fusetorch.compile: {effect} on every call, which a replay of "
                              "the compiled program would not do; this function runs eagerly "
                              "for these inputs", stacklevel=3)
                self._note(args, "eager_call", f"{effect} on every call")
                self._remember(key, _EAGER)
            else:
                self._note(args, "eager_call", f"{effect}, which a replay would not (traced "
                           "again at the next call)")
            return out
        effects = _Effects.of(rec, len(tensors))
        if effects is None or not outs:
            # an input that is a view of memory the call writes, or nothing to return: run
            # eagerly
            self._note(args, "eager_call", "it returns no tensor" if effects is not None else
                       "an input is a view of memory the call writes")
            self._remember(key, _EAGER)
            return out
        tensors = tensors + rec.input_tensors[len(tensors):]
        if not tensors or len({id(t._be) for t in tensors}) > 1:
            # a step that reads only globals (`train_step()`) compiles over the tensors it read;
            # one that reads none, or reads tensors on several devices, runs eagerly
            self._note(args, "eager_call", "tensors on several devices" if tensors else
                       "it reads no tensor")
            self._remember(key, _EAGER)
            return out
        if not kernel_safe([t._data for t in tensors]):
            self._note(args, "unaligned")
            return out  # (ran eagerly while tracing; a later call with safe layouts compiles)
        wrt = [k for k, t in enumerate(tensors) if t._requires_grad] if D.GRAD_ENABLED else []
        # integer results carry no gradient; a training step's loss was differentiated inside
        # the call already (its result is returned without a grad_fn)
        given = {id(t): k for k, t in enumerate(tensors)}
        returned_inputs = [(i, given[id(o)]) for i, o in enumerate(outs) if id(o) in given]
        # an input returned as it is stays itself (no grad_fn of its own), as in eager
        diff = [i for i, o in enumerate(outs) if o._dtype.is_floating_point and
                id(o) not in given]
        if not diff or rec.backward_ran:
            wrt = []
        if wrt and len({outs[i]._dtype for i in diff}) > 1:
            # differentiable outputs travel packed in one buffer (one autograd node), which
            # needs one dtype
            self._note(args, "eager_call", "differentiable outputs of several dtypes")
            self._remember(key, _EAGER)
            return out
        results = outs + effects.results(rec)
        graph, backward = rec.graph(*results), None
        if wrt:  # an input no differentiable output depends on keeps grad None, as in eager
            wrt = _reaching([graph.outputs[i] for i in diff], rec.inputs, wrt)
        if wrt:
            # the joint program: the forward also returns every value the backward reads
            bw = backward_graph([graph.outputs[i] for i in diff],
                                [rec.inputs[k] for k in wrt])
            # cheap elementwise values are recomputed inside the backward's kernels
            values, bgraph = recompute(bw.graph, bw.n_cotangents, bw.values, fusible)
            saved = [f for f, _part in values]
            graph = Graph(graph.inputs, graph.outputs + saved)
            # planned and built on its first run, for the layouts its cotangents arrive with
            bprog = obtain(bgraph, tensors[0]._be, role="backward", tiered=True)
            backward = (bprog, tuple(wrt), tuple(diff))
        # planned for these layouts now and built in the background (tiered: calls before
        # the build is done interpret the graph); runs nothing: the trace's eager run gave
        # this call's results (and a training step's updates already happened). None: no
        # compiler here (said once), so this key runs eagerly
        program = obtain(graph, tensors[0]._be, [t._data for t in tensors],
                         user_outputs=len(results),
                         updates={len(outs) + j: pos for j, pos in enumerate(effects.mutated)},
                         tiered=True)
        if program is None:
            self._note(args, "no_compiler", _kernel_build.last_unavailable)
            self._remember(key, _EAGER)
            return out
        self._note(args, "program", weakref.ref(program))
        if backward is not None:
            note("compile", (self._name, "backward", _shapes(args)), "program",
                 weakref.ref(backward[0]))
        variant = _Variant(program, spec, len(outs), len(results), effects, tensors, backward,
                           bindings, Reads(read.entries), stateful)
        variant.returned_inputs = returned_inputs
        variant.input_names = _input_names(tensors, effects, names)
        self._last = variant
        self._remember(key, variant)
        return out

    def _note(self, args: tuple, code: str, *values) -> None:
        note("compile", (self._name, _shapes(args)), code, *values)

    def _remember(self, key, value) -> None:
        if value is not _EAGER:
            # the other variants of this key stay: their guards may hold again (`model.train()`
            # after `model.eval()`)
            variants = self._variants.get(key)
            variants = [] if variants is None or variants is _EAGER else variants
            value = [value] + variants[:MAX_VARIANTS - 1]
        else:
            self._variants.pop(key, None)
        self._variants[key] = value
        if len(self._variants) > MAX_VARIANTS:
            try:
                self._variants.popitem(last=False)
            except KeyError:  # (another thread emptied it meanwhile)
                pass
            if not self._warned_overflow:
                warnings.warn(f"fusetorch.compile: more than {MAX_VARIANTS} variants (shapes, "
                              "dtypes, modes) of one function; the oldest are evicted",
                              stacklevel=4)
                self._warned_overflow = True

    def _why_new(self, key) -> str:
        if key in self._unsettled:
            return f"the previous trace of these inputs ran Python a replay would not " \
                f"({self._unsettled[key][1]})"
        return _key_change(self._last_key, key)

    def _retraced(self, reason: str | None) -> None:
        """Say why this call traces again: kept, logged when asked for, and after
        `RECOMPILE_LIMIT` retraces one warning (PyTorch: "hit config.recompile_limit")."""
        reason = reason or "unknown"
        self.last_retrace_reason = reason
        where = _where(self._fn)
        _logging.recompiles.debug("Recompiling function %s\n    triggered by: %s", where, reason)
        if self.retrace_count >= RECOMPILE_LIMIT and not self._warned_retraces:
            self._warned_retraces = True
            warnings.warn(f"fusetorch.compile: function {where} was traced again "
                          f"{self.retrace_count} times (the recompile limit is "
                          f"{RECOMPILE_LIMIT}); last reason: {reason}. To log every retrace "
                          "with its reason, set FUSETORCH_LOGS=recompiles (or TORCH_LOGS) or "
                          "call fusetorch._logging.set_logs(recompiles=True)", stacklevel=4)

    def wait_for_build(self, timeout: float | None = None) -> bool:
        """Wait until the background builds of every variant traced so far are done (each
        program up to `timeout` seconds), so the next call runs the built kernels; False
        while one is still building or where one failed (that variant interprets its
        graph). Without it, calls run at once anyway: they interpret the traced graph until
        the build is done (`FUSETORCH_COMPILE_BACKGROUND=0`: the first call waits for the
        build). A backward program is built when its first backward runs."""
        programs = [p for vs in list(self._variants.values()) if vs is not _EAGER
                    for v in vs for p in [v.program] + ([v.backward[0]] if v.backward else [])]
        return all([p.wait(timeout) for p in programs])

    # ------------------------------------------------------------ inspection
    # All of these describe one variant: the one the most recent compiled call ran.

    def programs(self) -> list:
        """`(role, Program)` of that variant: ("forward", its program), then ("backward", the
        compiled backward program) when the call needs gradients. A compiled training step is
        one forward program holding its backward and update too (see `Program.labels`)."""
        v = self._last
        if v is None:
            return []
        programs = [("forward", v.program)] + ([("backward", v.backward[0])] if v.backward else [])
        return [(role, p.laid_out()) for role, p in programs]  # (a build under way: waited for)

    def graph(self, format: str = "text") -> str:
        """The optimised IR of that variant's forward program: its text, or with
        `format="dot"` Graphviz source with each kernel's nodes as a cluster (see
        `fusetorch.utils.viz.render`)."""
        v = self._last
        return _show(v.program.laid_out() if v is not None else None, format,
                     v.input_names if v is not None else None)

    def backward_graph(self, format: str = "text") -> str:
        """The optimised IR of that variant's backward program ('' when it needs no
        gradients), as text or Graphviz source (`format="dot"`)."""
        v = self._last
        return _show(v.backward[0].laid_out() if v is not None and v.backward else None, format)

    def kernels(self) -> list:
        """One line per kernel of every program of that variant, forward program first: name,
        label (forward, backward, update, or several joined by '+' when a kernel fuses across
        them), what it fuses, iteration space, bytes read and written. A backward program's
        kernels are built when its first backward runs, and listed from then on (a build
        still running in the background is waited for)."""
        return inspection.kernel_lines(self.programs())

    def source(self) -> str:
        """The C of every program of that variant, each module under a banner naming its
        program, each kernel's header comment labelled as in `kernels()`."""
        return inspection.labelled_source(self.programs())


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic=None,
            backend=None, mode=None, options=None, disable: bool = False):
    """Compile a function or Module into fused kernels; usable as a decorator too.

    `mode` and `options` are checked as PyTorch checks them (a known mode; option names of
    `fusetorch._inductor.config`; not both) and otherwise ignored: fusetorch's kernels do not
    depend on inductor's tuning flags."""
    _check_mode_and_options(mode, options)
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                  mode=mode, options=options, disable=disable)
    if disable:
        return model
    return CompiledFunction(model, fullgraph=fullgraph)


_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def _check_mode_and_options(mode, options) -> None:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified "
                           "at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options:
        from ._inductor import config
        known = config.get_config_copy()
        for key in options:
            if key.replace("-", "_") not in known:
                raise RuntimeError(f"Unexpected optimization option {key}, known options are "
                                   f"{list(known)}")


class _CompiledCall:
    """The custom-Function side of a compiled call's outputs: one node whose backward runs the
    compiled backward program on the saved forward values. Its grad_fn prints as PyTorch's
    does for compiled code, `CompiledFunctionBackward`. Several differentiable outputs are
    one packed 1-d output of the node, and the user's tensors are views of it (recorded), so
    their cotangents arrive together as one."""

    @staticmethod
    def backward(ctx, *grad_outputs):
        if D.GRAD_ENABLED:
            raise NotImplementedError("double backward through a compiled function is not "
                                      "supported yet: differentiate the eager function")
        arrays = ctx.program.run([g._data for g in grad_outputs] + ctx.saved_arrays)
        return tuple(Tensor._make(a, t._dtype, t._be) for a, t in zip(arrays, ctx.inputs))


_CompiledCall.__name__ = "CompiledFunction"  # grad_fn: CompiledFunctionBackward


_UNREAD = ("unread",)  # a key's part for an argument the function never reads
_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")


def _named_arguments(args: tuple, kwargs: dict):
    """(None, value) for each positional argument, then (name, value) for each keyword one."""
    for a in args:
        yield None, a
    yield from kwargs.items()


def _unread_arguments(fn: Callable) -> frozenset:
    """The positions and keyword names of the arguments a call of `fn` never reads
    (`_guards.unread_parameters`): none for what it cannot see into, or while a Module has
    hooks (a hook receives the arguments)."""
    skip = 0
    if isinstance(fn, Module):
        d = fn.__dict__
        if type(fn).__call__ is not Module.__call__ or "forward" in d or \
                any(d.get(h) for h in _HOOKS):
            return frozenset()
        fn, skip = type(fn).forward, 1
    elif isinstance(fn, types.MethodType):
        fn, skip = fn.__func__, 1
    if not isinstance(fn, types.FunctionType):
        return frozenset()
    code = fn.__code__
    names = unread_parameters(code)
    if not names:
        return names
    params = code.co_varnames[:code.co_argcount]
    # (a positional-only name passed as a keyword lands in **kwargs, which may read it)
    by_name = names - set(params[:code.co_posonlyargcount])
    return by_name | {i - skip for i, n in enumerate(params) if n in names and i >= skip}


def _with_backward(arrays: list, n_user: int, n_outputs: int, tensors: list, program: Program,
                   wrt: tuple, diff: tuple) -> list:
    """The outputs of a compiled call, the differentiable ones recorded as one autograd node
    over the inputs that require grad."""
    be = tensors[0]._be
    outs = [Tensor._make(a, _dtype_of(a), be) for a in arrays[:n_user]]
    inputs = [tensors[k] for k in wrt]
    ctx = FunctionCtx(_CompiledCall, tuple(inputs))
    ctx.program, ctx.saved_arrays, ctx.inputs = program, list(arrays[n_outputs:]), inputs
    return record_outputs(_CompiledCall, ctx, tuple(inputs), outs, diff)


class _GradOf:
    """A traced call read `leaf.grad`: a replay reads the leaf's current gradient, whichever
    tensor object holds it now."""

    __slots__ = ("leaf",)

    def __init__(self, leaf: Tensor):
        self.leaf = leaf


class _Effects:
    """What a traced call did besides returning values, which every replay must redo:
    in-place writes to tensors it read (an optimizer's update of parameters and momentum
    buffers, BatchNorm's running statistics) and new `.grad` values of leaves (backward,
    zero_grad). Python-level state is covered by the guards, optimizers' by their
    `_python_state()`."""

    def __init__(self, sources: list, mutated: list, grad_sets: list, grad_guards: list):
        self.sources = sources          # per captured tensor: the tensor, or _GradOf(leaf)
        self.mutated = mutated          # positions (in the call's tensor list) written in place
        self.grad_sets = grad_sets      # (leaf, final .grad tensor of the trace, or None)
        self.grad_guards = grad_guards  # (leaf, whether its .grad was None when first read)

    @staticmethod
    def of(rec, n_given: int) -> "_Effects | None":
        """The effects of the trace in `rec`, or None when a replay could not redo them."""
        events = list(rec.grad_events.values())
        read_grads = {id(start): leaf for leaf, kind, start in events
                      if kind == "read" and start is not None}
        captured = rec.input_tensors[n_given:]
        sources = [_GradOf(read_grads[id(t)]) if id(t) in read_grads else t for t in captured]
        mutated = [k for k, t in enumerate(rec.input_tensors) if rec.node(t) is not rec.inputs[k]]
        if any(rec.input_tensors[k]._base is not None for k in mutated):
            return None  # a view passed in: its root is not what the program writes back
        grad_sets, grad_guards = [], []
        for leaf, kind, start in events:
            if kind == "read":
                grad_guards.append((leaf, start is None))
            if leaf._grad is not start:
                grad_sets.append((leaf, leaf._grad))
        return _Effects(sources, mutated, grad_sets, grad_guards)

    def results(self, rec) -> list:
        """The tensors whose final values the program must also return."""
        return ([rec.input_tensors[k] for k in self.mutated] +
                [g for _, g in self.grad_sets if g is not None])


class _Variant:
    """One compiled specialisation of a function: its program, guards and effects."""

    def __init__(self, program: Program, spec, n_user: int, n_outputs: int, effects: _Effects,
                 tensors: list, backward, bindings: Bindings, reads: Reads, stateful: list):
        self.program, self.spec, self.backward = program, spec, backward
        self.bindings, self.reads = bindings, reads
        self.returned_inputs: list = []  # (output position, input position): the same tensor
        self.n_user, self.n_outputs, self.effects = n_user, n_outputs, effects
        self.n_given = len(tensors) - len(effects.sources)
        self.key = self._guard_key(tensors)
        # the optimizers its trace stepped, and their Python state then (see guard)
        self.stateful = stateful
        self.python_state = _python_state(stateful)
        self.input_names: list | None = None  # per program input, for graph("dot")

    def resolve(self) -> list:
        return [s.leaf._grad if type(s) is _GradOf else s for s in self.effects.sources]

    def _guard_key(self, tensors: list) -> tuple:
        # the call's own tensors are guarded by the key (shapes, strides: new tensors of the
        # same layout run the same program); tensors it closes over by identity as well, except
        # a gradient read through `leaf.grad`, which may be a new tensor object on every call
        fixed = [type(s) is not _GradOf for s in self.effects.sources]
        return tuple((id(t) if f else 0, tuple(t._data.shape), t._dtype, t._data.strides,
                      t._requires_grad) if t is not None else None
                     for t, f in zip(tensors[self.n_given:], fixed))

    def guard(self, tensors: list) -> bool:
        if self._guard_key(tensors) != self.key:
            return False
        if any((leaf._grad is None) != was_none for leaf, was_none in self.effects.grad_guards):
            return False
        return _python_state(self.stateful) == self.python_state

    def failure(self, given: list) -> str:
        """Why this variant's guards do not hold for a call with tensors `given`, in words."""
        tensors = given + self.resolve()
        now = self._guard_key(tensors)
        names = self.input_names or []
        for k, (a, b) in enumerate(zip(self.key, now)):
            if a != b:
                pos = self.n_given + k
                what = f"'{names[pos]}'" if pos < len(names) and names[pos] else f"number {k}"
                if a is None or b is None or a[0] != b[0]:
                    return f"closed-over tensor {what} is another tensor"
                return f"closed-over tensor {what} changed its shape, dtype or strides"
        if any((leaf._grad is None) != was_none for leaf, was_none in self.effects.grad_guards):
            return "a .grad the trace read became None or stopped being None"
        if _python_state(self.stateful) != self.python_state:
            return "an optimizer's Python state (step count, lr, ...) changed"
        return self.bindings.failure() or self.reads.failure() or "unknown"

    def apply_effects(self, tensors: list, arrays: list) -> None:
        k = self.n_user
        for pos in self.effects.mutated:
            t = tensors[pos]
            if arrays[k] is not t._data:  # else a kernel wrote the update in place
                t._be.xp.copyto(t._data, arrays[k])
            t._bump_version()
            k += 1
        for leaf, g in self.effects.grad_sets:
            if g is None:
                leaf._grad = None
            else:
                leaf._grad = Tensor._make(arrays[k], g._dtype, leaf._be)
                k += 1


def _shapes(args: tuple) -> tuple:
    """The tensor arguments' shapes: which call of a compiled function an explanation is of."""
    return tuple(tuple(a._data.shape) for a in args if isinstance(a, Tensor))


def _where(fn) -> str:
    """The compiled function as a retrace's message names it: its name and its first line."""
    f = fn
    if isinstance(f, types.MethodType):
        f = f.__func__
    if not isinstance(f, types.FunctionType):  # a Module: its forward; else its __call__
        f = getattr(type(fn), "forward", None) or getattr(type(fn), "__call__", None)
    code = getattr(f, "__code__", None)
    name = getattr(f, "__qualname__", None) or type(fn).__name__
    if code is None:
        return f"'{name}'"
    return f"'{name}' ({code.co_filename}:{code.co_firstlineno})"


_KEY_PARTS = ("arguments", "keyword arguments", "parameters", "training modes", "grad mode",
              "aliasing of arguments", "autocast")


def _key_change(old, new) -> str:
    """What differs between two calls' keys (see `CompiledFunction._key`), in words."""
    if old is None:
        return "new inputs (the previous variant was evicted or ran eagerly)"
    for part, a, b in zip(_KEY_PARTS, old, new):
        if a == b:
            continue
        if part == "arguments":
            if len(a) != len(b):
                return f"number of arguments changed ({len(a)} -> {len(b)})"
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    return f"argument {i}: {_arg_change(x, y)}"
        if part == "grad mode":
            return f"grad mode changed ({a} -> {b})"
        if part == "training modes":
            return "a module's training mode changed (train()/eval())"
        if part == "parameters":
            return "the module's parameters changed (another tensor, shape, dtype or " \
                   "requires_grad)"
        return f"{part} changed"
    return "no variant of these inputs"


_ARG_FIELDS = ("shape", "dtype", "strides", "device", "requires_grad")


def _arg_change(x: tuple, y: tuple) -> str:
    if x[0] == "module" or y[0] == "module":
        return "another module" if x[0] == y[0] else "a module and another value swapped"
    if x[0] == "py" or y[0] == "py":
        if x[0] == y[0] == "py":
            return f"value changed ({_py_value(x[1])!r} -> {_py_value(y[1])!r})"
        return "a tensor and a Python value swapped"
    for field, a, b in zip(_ARG_FIELDS, x, y):
        if a != b:
            return f"tensor {field} changed ({a} -> {b})"
    return "changed"


def _py_value(k):
    """The Python value a `value_key` stands for (floats and bools are keyed with their type)."""
    if type(k) is tuple and len(k) == 2 and k[0] is float:
        return struct.unpack("<d", k[1])[0]
    if type(k) is tuple and len(k) == 2 and k[0] is bool:
        return k[1]
    return k


def _python_state(objs: list) -> tuple:
    return tuple(o._python_state() for o in objs)


def _show(program: Program | None, format: str, input_names: list | None = None) -> str:
    if format not in ("text", "dot"):
        raise ValueError(f"format must be 'text' or 'dot', got {format!r}")
    if program is None:
        return ""
    if format == "text":
        return program.graph.text()
    return inspection.program_dot(program, input_names=input_names)


def _input_names(tensors: list, effects: "_Effects", names: dict) -> list:
    """A readable name per graph input (see `_tensor_names`), None where none is known; a
    gradient read through `leaf.grad` is named after its leaf."""
    out = [names.get(id(t)) for t in tensors]
    n_given = len(tensors) - len(effects.sources)
    for k, s in enumerate(effects.sources):
        if type(s) is _GradOf and out[n_given + k] is None and id(s.leaf) in names:
            out[n_given + k] = names[id(s.leaf)] + ".grad"
    return out


def _unique(tensors: list) -> list:
    """`tensors` without repeats (a tensor passed twice is one graph input)."""
    seen: set = set()
    return [t for t in tensors if not (id(t) in seen or seen.add(id(t)))]


def _reaching(outputs: list, inputs: list, wrt: list) -> list:
    """The positions in `wrt` whose input node some output depends on differentiably."""
    order = toposort(outputs)
    need = needs_grad(order, [inputs[k] for k in wrt])
    reached: set = set()
    stack = [o for o in outputs if id(o) in need]
    while stack:
        n = stack.pop()
        if id(n) in reached:
            continue
        reached.add(id(n))
        stack.extend(i for i in n.inputs if id(i) in need)
    return [k for k in wrt if id(inputs[k]) in reached]


def _tensors(args) -> list:
    return [a for a in args if isinstance(a, Tensor)]


def _module_tensors(fn) -> list:
    """The parameters and buffers of a Module `fn`, or of the Module a bound method is of
    (`Module.compile` compiles its forward)."""
    owner = fn if hasattr(fn, "parameters") else getattr(fn, "__self__", None)
    if not isinstance(owner, Module):
        return []
    return list(owner.parameters()) + [b for b in owner.buffers()]


class _NotTensors(Exception):
    pass


def _flatten(out):
    """The tensors in `out` (a tensor, or tuples/lists of them, nested) and the structure to
    rebuild it from them; ([], None) for anything else."""
    leaves: list = []
    try:
        spec = _walk(out, leaves)
    except _NotTensors:
        return [], None
    return leaves, spec


def _walk(o, leaves: list):
    if isinstance(o, Tensor):
        leaves.append(o)
        return None
    if isinstance(o, (tuple, list)):
        return (type(o), [_walk(x, leaves) for x in o])
    raise _NotTensors


def _unflatten(spec, tensors: list):
    return _build(spec, iter(tensors))


def _build(spec, it):
    # (not a closure: a recursive closure is a reference cycle, which would keep the outputs,
    # and so their buffers, alive until the garbage collector runs)
    if spec is None:
        return next(it)
    kind, children = spec
    items = [_build(c, it) for c in children]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)  # namedtuples


def _dtype_of(a):
    return dtype_from_numpy(a.dtype)


def _compile_module(module: Module, *args, **kwargs) -> None:
    """`Module.compile(...)`: the module's forward, compiled as `compile(...)` would; its hooks
    still run around it, eagerly."""
    compiled = compile(types.MethodType(type(module).forward, module), *args, **kwargs)
    module.forward = module._compiled_call_impl = compiled


Module._compile_in_place = staticmethod(_compile_module)
