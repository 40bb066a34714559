"""Compiled eager composites (issue 13, item 2): a composite function (a convolution, a pooling,
softmax, a loss, a norm) that a loop calls again and again with the same layouts runs, from the
call after its capture (at its `POLICY.composite_capture_at`-th call, the second), as one
recorded graph: fused C kernels where the arrays are large, the interpreter where they are
small, and no Python of the composite itself nor of dispatch per primitive.

    @composite
    def log_softmax(input, dim=None, ...): ...   # composed of primitives as before

A call is keyed by its tensors' shapes, strides, dtypes and requires_grad, the grad mode, and
its other arguments (which must be hashable: numbers, strings, tuples, None). Per key, with
`POLICY.composite_capture_at` = N (2):
1. calls before the Nth: plain eager;
2. the Nth call: plain eager while capturing it: a trace recording (the primitives' graph, for
   the program) and the autograd records it makes (op, inputs, attrs, result: the template);
3. later calls: the graph runs on the inputs' arrays (a compile `Program` after
   `passes.optimize` when the inputs hold at least `POLICY.min_elements` elements; else the reference
   interpreter on the graph as recorded, whose values are eager's bit for bit) and yields the
   outputs and every value a VJP saves; then the template's records are replayed through
   `autograd.record`, so the autograd graph has the same primitives, attrs, saved values and
   grad_fn labels as a plain call would have made, and backward (and its compiled programs)
   cannot tell. Values no VJP reads are never computed into memory: their tensors in the
   replayed records hold a read-only zero placeholder of the right shape.

Arguments are checked by the plain calls; a key repeats only arguments that passed (checks of
shapes, dtypes and static arguments give the same answer again), and checks of values are
`check` primitives inside the graph, which raise in a replay as in eager. Not captured (the key
stays plain): calls that read tensor data into Python, write in place (batch norm's running
statistics), draw random numbers, read tensors they were not passed, return an input or a view
of one, or hold custom Functions, device copies or data-dependent shapes. Replays happen only
outside traces (`compile` records the primitives itself), outside the profiler (which times
each primitive) and autocast (whose casts depend on a state the key does not hold), on the CPU,
when autograd's recording is the plain one (`torch.utils.checkpoint` wraps it), and not under
FUSETORCH_EAGER_COMPILE=0 (the program path also needs a C compiler; without one, the
interpreter).
"""
from __future__ import annotations

import functools
import operator
import threading
import weakref
from collections import OrderedDict

import numpy as np

from .._policy import POLICY, note
from ..ir.identity import BARE, Unkeyable, value_key
from ..ir.ops import OPS
from ..runtime import build as _build
from ..runtime.runner import Runner
from ..runtime.program import kernel_safe, obtain, why_interpreted
from . import autocast as _ac
from . import autograd as A
from . import dispatch as D
from . import views as _views
from .tensor import Tensor
from .trace import Recorder

# (bound once: per-thread modules' attributes are looked up unspecialized)
_DISPATCH, _AUTOCAST = D._LOCAL, _ac._LOCAL

_PLAIN = "plain"  # a key's state instead of a template (before one: its calls so far, an int)

_lock = threading.RLock()
_CACHE: OrderedDict = OrderedDict()  # key -> calls so far | _PLAIN | _Template


def composite(fn=None, *, small: bool = True):
    """Run `fn` (a composite of primitives, pure in its tensor arguments) through a captured
    graph once a call with the same key has been seen twice. See the module docstring.
    `small=False` (`@composite(small=False)`, for a composite of one primitive: softmax): a call
    whose first argument, a tensor, has fewer than `POLICY.min_elements` elements runs plainly,
    keyed by nothing, since its replay would be that primitive interpreted, the same dispatch
    plus the key's cost (~3 us of a loop row's ~9)."""
    if fn is None:
        return functools.partial(composite, small=small)
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not small and args and args[0].__class__ is Tensor and \
                args[0]._data.size < POLICY.min_elements:
            return fn(*args, **kwargs)
        st = _DISPATCH.state  # this thread's recorder and profiler
        if st.RECORDER is not None or st.PROFILE is not None or _AUTOCAST.state.ACTIVE or \
                not POLICY.eager_kernels:
            # (a trace records the primitives itself; the profiler times each of them; under
            # autocast the casts depend on a state the key does not hold)
            if not POLICY.eager_kernels:  # (the one of these a user asks about)
                note("composite", (name,), "off", "eager_kernels")
            return fn(*args, **kwargs)
        key, tensors = _key(name, args, kwargs)
        if key is None:
            return fn(*args, **kwargs)
        with _lock:
            try:
                state = _CACHE.get(key)
            except TypeError:  # an unhashable argument (hashed here once, not twice)
                return fn(*args, **kwargs)
            if state is None:
                state = _CACHE[key] = 1
                if len(_CACHE) > POLICY.composite_keys:
                    _CACHE.popitem(last=False)
            else:
                _CACHE.move_to_end(key)
                if state.__class__ is int:
                    state = _CACHE[key] = state + 1
        if state is _PLAIN:
            return fn(*args, **kwargs)
        if state.__class__ is int:  # calls so far: plain before POLICY.composite_capture_at
            at = POLICY.composite_capture_at
            if state < at:
                note("composite", _label(name, tensors), "first_call", state, at)
                return fn(*args, **kwargs)
            out, template = _capture(fn, args, kwargs, tensors, _label(name, tensors))
            with _lock:
                _CACHE[key] = template if template is not None else _PLAIN
            return out
        return state.replay(tensors)

    call.__wrapped__ = fn
    return call


def clear() -> None:
    """Forget every captured composite (tests; a changed setting)."""
    with _lock:
        _CACHE.clear()


# ---------------------------------------------------------------- keys

_NO_KEY = (None, None)


def _key(name: str, args: tuple, kwargs: dict) -> tuple:
    """(the call's key, its tensor arguments in order), or (None, None) when it must run
    plainly: a tensor off the CPU, a tensor passed twice, keyword tensors, autograd's
    recording wrapped. (An unhashable key runs plainly too: the cache lookup raises
    TypeError.)"""
    if D.GRAD_RECORD is not A.record:
        return _NO_KEY
    parts, be, tensors = [name, _DISPATCH.state.GRAD_ENABLED], None, []
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            if be is None:
                be = a._be
                if be.device.type != "cpu":
                    return _NO_KEY
            else:
                if a._be is not be:
                    return _NO_KEY
                for t in tensors:  # (a handful: no set of ids)
                    if t is a:
                        return _NO_KEY
            tensors.append(a)
            parts.append((d.shape, d.strides, a._dtype, a._requires_grad))
        elif a.__class__ in BARE:  # (a dim, a string: value_key's values that are their key)
            parts.append(a)
        else:
            a = _static(a)
            if a is _TENSOR:
                return _NO_KEY
            parts.append(a)
    if be is None:
        return _NO_KEY
    for k, v in kwargs.items():
        v = _static(v)
        if v is _TENSOR:
            return _NO_KEY
        parts.append((k, v))
    return tuple(parts), tensors  # (unhashable: the cache lookup says so)


_TENSOR = object()


def _static(v):
    """A non-tensor argument as part of a key, by the one structural identity of Python values
    (ir/identity.value_key: 1, 1.0 and True apart, floats by their bits); _TENSOR, the call
    runs plainly, if it holds tensors (they would be keyed by identity) or has no identity."""
    if isinstance(v, Tensor) or isinstance(v, (list, tuple)) and any(
            isinstance(x, (Tensor, list, tuple)) for x in v):
        return _TENSOR
    try:
        return value_key(v)
    except Unkeyable:
        return _TENSOR


# ---------------------------------------------------------------- capture

class _Capture(Recorder):
    """A strict trace (a data read stops it) that also notes in-place writes."""

    strict = True

    def alias(self, t: Tensor, value: Tensor) -> None:
        self.broken = self.broken or "an in-place write"
        super().alias(t, value)


def _label(name: str, tensors: list) -> tuple:
    """The composite and its tensors' shapes: what `fusetorch.compiler.explain` names it by."""
    return (name, tuple(t._data.shape for t in tensors))


def _capture(fn, args: tuple, kwargs: dict, tensors: list, holder: tuple):
    """Run `fn` plainly while recording its graph and its autograd records; returns (fn's
    result, a _Template or None when the call cannot be replayed)."""
    log, labels = [], []
    record, label = D.GRAD_RECORD, A.label
    me = threading.get_ident()  # (another thread's ops are not this call's)

    def logged_record(op, ins, attrs, result, scalar_dtype=None):
        record(op, ins, attrs, result, scalar_dtype)
        if threading.get_ident() == me:
            log.append((op, tuple(ins), attrs, result, scalar_dtype))

    def logged_label(result, name, *inputs):
        if threading.get_ident() == me:
            labels.append((result, name, inputs))
        return label(result, name, *inputs)

    rec = _Capture()
    for t in tensors:
        rec.input(t)
    D.GRAD_RECORD, A.label, D.RECORDER = logged_record, logged_label, rec
    try:
        out = fn(*args, **kwargs)
    finally:
        D.GRAD_RECORD, A.label, D.RECORDER = record, label, None
    try:
        template = _Template.make(rec, tensors, out, log, labels)
    except _NotReplayable as e:
        note("composite", holder, "not_replayable", e.args[0] if e.args else "")
        template = None
    else:
        template.label = holder
        note("composite", holder, "captured")
    return out, template


class _NotReplayable(Exception):
    pass


class _Template:
    """What a replay needs: the graph (and its program), the slots of the tensors the recorded
    calls use (the call's tensors first), and the records and labels to make again."""

    __slots__ = ("graph", "program", "interpreter", "interpret", "label", "n_args", "slot_dtypes",
                 "value_slots", "views", "shared", "placeholders", "records", "labels", "out_slots", "out_tuple",
                 "lock")

    @classmethod
    def make(cls, rec: _Capture, tensors: list, out, log: list, labels: list) -> "_Template":
        if rec.broken is not None:
            raise _NotReplayable(rec.broken)  # a data read, an in-place write
        if len(rec.inputs) != len(tensors):
            raise _NotReplayable("it reads a tensor it was not passed")
        outs = out if type(out) is tuple else (out,)  # (a namedtuple would come back plain)
        if not outs or not all(o is None or isinstance(o, Tensor) for o in outs):
            raise _NotReplayable("it returns something other than tensors")
        self = cls()
        self.n_args = len(tensors)
        slot = {id(t): k for k, t in enumerate(tensors)}
        by_slot = list(tensors)

        def slot_of(t: Tensor) -> int:
            s = slot.get(id(t))
            if s is None:
                s = slot[id(t)] = len(by_slot)
                by_slot.append(t)
            return s

        needed = set()  # slots past the call's tensors whose values some VJP reads
        self.records = []
        for op, ins, attrs, result, scalar_dtype in log:
            if id(result) in slot:
                raise _NotReplayable("it writes a tensor in place")
            refs = tuple(slot_of(x) if isinstance(x, Tensor) else _Scalar(x) for x in ins)
            res = slot_of(result)
            for s in OPS[op].saves:
                if s == "out":
                    needed.add(res)
                else:
                    for i in (range(len(ins))[s] if isinstance(s, slice) else (s,)):
                        if isinstance(ins[i], Tensor):
                            needed.add(refs[i])
            self.records.append((op, _getter(refs), attrs, res, scalar_dtype))
        self.labels = [(slot_of(r), name, _getter(tuple(slot_of(x) if isinstance(x, Tensor)
                                                        else _Scalar(None) for x in ins)))
                       for r, name, ins in labels]
        self.out_tuple = type(out) is tuple
        self.out_slots = tuple(None if o is None else slot_of(o) for o in outs)
        roots = {id(t._root()) for t in tensors}
        for o in outs:
            if o is not None and (id(o) in roots or slot[id(o)] < self.n_args or
                                  (o._base is not None and id(o._root()) in roots)):
                raise _NotReplayable("it returns an input or a view of one")
        # the graph computes the outputs, then the saved values, then the bases of those that
        # are views (a replayed view has its real base: tracer/views.py rebases an in-place
        # write through it onto the base's node)
        value_slots = [s for s in self.out_slots if s is not None]
        value_slots += sorted(s for s in needed if s >= self.n_args and s not in value_slots)
        for s in list(value_slots):
            base = by_slot[s]._base
            if base is not None:
                b = slot_of(base)
                if b >= self.n_args and b not in value_slots:
                    value_slots.append(b)
        graph = rec.graph(*[by_slot[s] for s in value_slots])
        if len(graph.inputs) != len(tensors):
            raise _NotReplayable("its graph does not read every tensor passed")
        op = next((n.op for n in graph.nodes if not n.opdef.compilable), None)
        if op is not None:
            raise _NotReplayable(f"op {op} cannot be replayed (OpDef.compilable is False)")
        self.value_slots = tuple(value_slots)
        # values that were views stay views of the same base (an input or another value) in
        # a replay, with the same steps from it (tracer/views.py): they share its version
        # counter, so writing an input in place before backward is the same error
        views = []
        for s in value_slots:
            t = by_slot[s]
            if t._base is not None:
                info = _views.info(t)
                if info is not None and info.base is not t._base:
                    raise _NotReplayable("it returns a view of an alias made inside (detach)")
                views.append((s, slot[id(t._base)], info))
        self.views = tuple(views)
        self.shared = frozenset(value_slots.index(b) for _, b, _ in views if b >= self.n_args)
        self.slot_dtypes = [t._dtype for t in by_slot]
        have = set(range(self.n_args)) | set(value_slots)
        self.placeholders = tuple((s, _placeholder(by_slot[s]._data))
                                  for s in range(len(by_slot)) if s not in have)
        self.graph, self.program, self.interpreter = graph, None, None
        self.lock = threading.Lock()
        # (None: a program may run it; else why not, noted at the first replay)
        self.interpret = why_interpreted([t._data for t in tensors])
        return self

    def replay(self, tensors: list):
        be = tensors[0]._be
        arrays = self._run([t._data for t in tensors], be)
        env = list(tensors) + [None] * (len(self.slot_dtypes) - self.n_args)
        make, dtypes = Tensor._make, self.slot_dtypes
        for s, a in zip(self.value_slots, arrays):
            env[s] = make(a, dtypes[s], be)
        for s, b, info in self.views:
            t, base = env[s], env[b]
            t._base = base
            if info is not None:  # the captured view's steps and kind, from the new base
                _views.mark(t, base, info.steps, info.kind)
            t._vver = _views.version(t)
        for s, a in self.placeholders:
            env[s] = make(a, dtypes[s], be)
        record = A.record
        for op, ins, attrs, res, scalar_dtype in self.records:
            record(op, ins(env), attrs, env[res], scalar_dtype)
        for res, name, ins in self.labels:
            A.label(env[res], name, *ins(env))
        if not self.out_tuple:  # (one output: no tuple built)
            s = self.out_slots[0]
            return None if s is None else env[s]
        return tuple([None if s is None else env[s] for s in self.out_slots])

    def _run(self, arrays: list, be) -> list:
        if self.interpret is None:
            if kernel_safe(arrays):
                with self.lock:  # a program's run is not reentrant
                    if self.program is None:
                        self.program = _program(self.graph, be, arrays, self.out_slots,
                                                self.label)
                    if self.program is not False:
                        return _apart(self.program.run(arrays), self.program.user_outputs,
                                      self.shared)
                    self.interpret = ("program",)  # (refused: `_program` noted why)
            else:
                note("composite", self.label, "unaligned")
        if self.interpreter is None:
            self.interpreter = Runner(self.graph, be.impl, be.xp)  # (interpreted)
            if self.interpret and self.program is None:  # (decided at the capture)
                note("composite", self.label, *self.interpret)
        return self.interpreter.run(arrays)


def _program(graph, be, arrays, out_slots, label):
    """The graph's compile Program built for `arrays`, or False when it would fuse nothing
    (kernels of one primitive each, a convolution's bias add, are no faster than numpy's, and
    the externs' hot spots, im2col copies and a pool's argmax, are kernels through the eager
    table already: `runtime/eager_kernels.py`, so only fusion is worth a build; max pooling's
    values and indices, one kernel for both, are one: max_pool2d with return_indices) or
    when no compiler works (`program.obtain` says so once)."""
    fused = []

    def accept(plan) -> bool:
        fused.append(any(len(g.nodes) > 1 for g in plan.groups()))
        return fused[-1]

    program = obtain(graph, be, arrays, accept=accept,
                     user_outputs=sum(1 for s in out_slots if s is not None), tiered=True)
    if program is None:
        note("composite", label, *(("fuses_nothing",) if fused == [False] else
                                   ("no_compiler", _build.last_unavailable)))
        return False
    note("composite", label, "program", weakref.ref(program))
    return program


def _apart(values: list, n_user: int, shared: frozenset) -> list:
    """An optimised graph may compute a saved value and an output as one array (CSE, a
    simplified identity) where eager had two tensors: the saved one gets its own copy, so that
    an in-place write to the output cannot change what backward reads unnoticed. (Bases of
    views, positions in `shared`, share memory with their views as in eager.)"""
    outs = values[:n_user]
    for k in range(n_user, len(values)):
        if k not in shared and any(np.may_share_memory(values[k], o) for o in outs):
            values[k] = values[k].copy()
    return values


class _Scalar:
    """A Python number among a record's inputs (a tensor's slot is a plain int)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _getter(refs: tuple):
    """A function of the replay's slots giving a record's inputs in order: slots and
    `_Scalar`s (whose values they are). Without scalars an `itemgetter` (C: a replayed record
    took ~1 us to gather its inputs with a list comprehension)."""
    if any(r.__class__ is _Scalar for r in refs):
        return lambda env: [r.value if r.__class__ is _Scalar else env[r] for r in refs]
    if len(refs) == 1:
        r0 = refs[0]
        return lambda env: (env[r0],)
    if not refs:
        return lambda env: ()
    return operator.itemgetter(*refs)


def _placeholder(a: np.ndarray) -> np.ndarray:
    """A read-only array of `a`'s shape and dtype over one zero: the value of a recorded
    intermediate that no VJP reads."""
    return np.broadcast_to(np.zeros((), a.dtype), a.shape)
