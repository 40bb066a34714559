"""The recording half of the profiler: the hook that the dispatch path, autograd, optimizers
and compiled programs call while a profile records, and the raw events it keeps.

Nothing here runs unless a profile is recording: each caller reads one per-thread module
attribute (`dispatch.PROFILE`, `program.PROFILE`) that is None otherwise; a profile records the
thread that started it, as PyTorch's does.

The dispatch entry points time themselves by re-entering: `binary(...)` sees the hook, and
`hook.op(binary, args, ...)` opens an event, sets the thread's `skip` flag and calls `binary`
again, whose `hook.enter()` consumes the flag and runs the body. Ops the body dispatches
(casts, the ops of a composite) nest inside as child events, so self and total times come out
as in PyTorch's profiler.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from ..tracer.grad_fn import grad_fn_name
from ..ir.roles import Role

_now = time.perf_counter_ns
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STACK_DEPTH = 16  # user frames kept per event with `with_stack`
_LABELS: dict[str, str] = {}  # primitive -> "aten::<primitive>"
GRAD_FN_SPAN = "autograd::engine::evaluate_function: "


class RawEvent:
    """One timed interval (ns from perf_counter). `child_ns` sums the direct children's
    durations; `kernel` is a KernelInfo for a compiled kernel's call, else None."""

    __slots__ = ("name", "cat", "start", "end", "parent", "child_ns", "shapes", "stack", "tid",
                 "mem", "kernel")

    def __init__(self, name: str, cat: str, parent, tid: int):
        self.name, self.cat, self.parent, self.tid = name, cat, parent, tid
        self.start = self.end = 0
        self.child_ns = 0
        self.shapes = self.stack = self.kernel = None
        self.mem = 0


class KernelInfo:
    """What one compiled kernel step is: its C function, what it fuses, the user's lines, its
    iteration space and the bytes one call moves (memory actually spanned: a broadcast input
    counts once, not once per element it is read for)."""

    __slots__ = ("function", "kind", "ops", "sources", "shape", "bytes_read", "bytes_written")

    def __init__(self, function, kind, ops, sources, shape, bytes_read, bytes_written):
        self.function, self.kind, self.ops, self.sources = function, kind, ops, sources
        self.shape, self.bytes_read, self.bytes_written = shape, bytes_read, bytes_written

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written

    def label(self) -> str:
        """The event name: `kernel[mul+add+tanh] model.py:12` (at most four distinct ops, the
        first user line)."""
        ops = list(dict.fromkeys(self.ops))
        text = "+".join(ops[:4]) + (f"+{len(ops) - 4}" if len(ops) > 4 else "")
        where = f" {self.sources[0]}" if self.sources else ""
        return f"kernel[{text}]{where}"


class _Thread(threading.local):
    def __init__(self):
        self.skip = False  # the next entry point called is the hook's own re-entry
        self.stack: list = []  # open events, innermost last
        self.tid = threading.get_native_id()


class Hook:
    """Installed in `dispatch.PROFILE` and `program.PROFILE` while a profile records."""

    def __init__(self, record_shapes: bool, with_stack: bool, profile_memory: bool):
        self.record_shapes, self.with_stack = record_shapes, with_stack
        self.profile_memory = profile_memory
        self.events: list[RawEvent] = []  # in the order they started
        self._tls = _Thread()
        self.closed = False

    # ------------------------------------------------------------ events

    def open(self, name: str, cat: str, inputs=()) -> RawEvent:
        t = self._tls
        stack = t.stack
        ev = RawEvent(name, cat, stack[-1] if stack else None, t.tid)
        if self.record_shapes:
            ev.shapes = [_shape(x) for x in inputs]
        if self.with_stack:
            ev.stack = _user_stack()
        stack.append(ev)
        self.events.append(ev)
        ev.start = _now()  # last: the bookkeeping above is not the event's time
        return ev

    def close(self, ev: RawEvent) -> None:
        end = _now()
        stack = self._tls.stack
        if stack and stack[-1] is ev:  # the usual case
            stack.pop()
            _finish(ev, end)
        elif ev in stack:  # events left open inside it (an exception, a misnested exit) end too
            while stack:
                top = stack.pop()
                _finish(top, end)
                if top is ev:
                    break
        elif not ev.end:
            _finish(ev, end)

    def close_all(self) -> None:
        """End every event still open on this thread (the profile stops)."""
        stack = self._tls.stack
        if stack:
            self.close(stack[0])

    # ------------------------------------------------------------ entry points

    def enter(self) -> bool:
        """Called first by every hooked function: False for the hook's own re-entry."""
        t = self._tls
        if t.skip:
            t.skip = False
            return False
        return not self.closed

    def op(self, fn, args: tuple, name: str, inputs):
        """Time one dispatch entry point as `aten::<name>`; `fn(*args)` re-enters it."""
        t = self._tls
        label = _LABELS.get(name)
        if label is None:
            label = _LABELS[name] = "aten::" + name
        stack = t.stack
        parent = stack[-1] if stack else None
        if parent is not None and parent.name == label:  # binary -> elementwise: one event
            t.skip = True
            return fn(*args)
        # open() and close() inlined: this runs once per op
        ev = RawEvent(label, "cpu_op", parent, t.tid)
        if self.record_shapes:
            ev.shapes = [_shape(x) for x in inputs]
        if self.with_stack:
            ev.stack = _user_stack()
        stack.append(ev)
        self.events.append(ev)
        t.skip = True
        ev.start = _now()
        try:
            out = fn(*args)
        finally:
            end = _now()
            if stack and stack[-1] is ev:
                stack.pop()
                ev.end = end
                if parent is not None:
                    parent.child_ns += end - ev.start
            else:
                self.close(ev)
        if self.profile_memory:
            data = getattr(out, "_data", None)
            if data is not None and data.base is None and name not in ("copy_", "index_put_"):
                ev.mem = data.nbytes  # a fresh array: what this op allocated
        return out

    def call(self, fn, args: tuple, label: str, inputs=(), kwargs=None, cat: str = "cpu_op",
             reentrant: bool = False):
        """Time `fn(*args)` as one event; `reentrant` when `fn` starts with `enter()`."""
        ev = self.open(label, cat, inputs)
        if reentrant:
            self._tls.skip = True
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            self.close(ev)

    # ------------------------------------------------------------ autograd

    def backward_graph(self, runner, order: list, arrays: list, be) -> list:
        """Run a backward graph (a `BackwardRunner`): interpreted, each node is timed
        (`aten::<op>`) under the grad_fn of the forward node whose VJP rule made it; compiled
        (a graph seen before), its program's kernels are timed as any program's."""
        spans = _GradFnSpans(self, order, ops=True)
        try:
            return runner.run(arrays, be, hook=spans)
        finally:
            spans.finish()

    def grad_fn_spans(self, order: list) -> "_GradFnSpans":
        """Spans only: the backward graph runs through dispatch, which times its ops."""
        return _GradFnSpans(self, order, ops=False)

    # ------------------------------------------------------------ compiled programs

    def program_step(self, program, step, t0: int, t1: int, env: list) -> None:
        """A compiled program ran `step` (a kernel or an extern op) from t0 to t1."""
        steps = program.__dict__.get("_profile_steps")
        if steps is None:
            steps = program._profile_steps = {}
        info = steps.get(id(step))
        if info is None:
            info = steps[id(step)] = _describe_step(program, step, env)
        name, cat, shapes, kernel = info
        t = self._tls
        parent = t.stack[-1] if t.stack else None
        ev = RawEvent(name, cat, parent, t.tid)
        ev.start, ev.end, ev.kernel = t0, t1, kernel
        if self.record_shapes:
            ev.shapes = shapes
        if parent is not None:
            parent.child_ns += t1 - t0
        self.events.append(ev)


class _GradFnSpans:
    """Told as each node of a backward graph starts and ends; opens one span per run of
    consecutive nodes made by one forward node's rule, named as PyTorch's engine names the
    node it evaluates (`autograd::engine::evaluate_function: MulBackward0`)."""

    def __init__(self, hook: Hook, order: list, ops: bool):
        self.hook, self.order, self.ops = hook, order, ops
        self.names: dict = {}  # tag -> grad_fn name
        self.tag = None
        self.span = self.ev = None

    def begin(self, node) -> None:
        meta = node.meta
        tag = meta.get("vjp_of") if meta else None
        if tag is not None and tag != self.tag:
            if self.span is not None:
                self.hook.close(self.span)
            self.tag = tag
            self.span = self.hook.open(GRAD_FN_SPAN + self._name(tag), "cpu_op")
        if self.ops and node.op != "constant" and Role.USER_BACKWARD not in node.opdef.roles:
            self.ev = self.hook.open("aten::" + node.op, "cpu_op", node.inputs)

    def end(self, node, value=None) -> None:
        ev = self.ev
        if ev is not None:
            self.hook.close(ev)
            self.ev = None
            if self.hook.profile_memory and getattr(value, "base", 0) is None:
                ev.mem = value.nbytes  # a fresh array: what the node allocated

    def finish(self) -> None:
        if self.ev is not None:
            self.hook.close(self.ev)
        if self.span is not None:
            self.hook.close(self.span)
        self.span = self.ev = None

    def _name(self, tag: int) -> str:
        name = self.names.get(tag)
        if name is None:
            ok = 0 <= tag < len(self.order)
            name = self.names[tag] = grad_fn_name(self.order[tag]) if ok else "Backward"
        return name


def _finish(ev: RawEvent, end: int) -> None:
    ev.end = end
    if ev.parent is not None:
        ev.parent.child_ns += end - ev.start


def _shape(x) -> list:
    s = getattr(x, "shape", None)
    return list(s) if s is not None else []


def _user_stack() -> list:
    """PyTorch's `with_stack` entries, `file.py(12): fn`, innermost first, for the frames
    outside fusetorch."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < _STACK_DEPTH:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR) and not fn.startswith("<frozen"):
            out.append(f"{fn}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _describe_step(program, step, env: list) -> tuple:
    """(name, cat, input shapes, KernelInfo or None) of one step of a compiled program, made on
    its first profiled call (the layouts of a step's arrays are guarded: fixed per step)."""
    pos = next(i for i, s in enumerate(program._schedule) if s is step)
    plan_step = program.plan.steps[pos]
    if step[0] == "extern":
        node = plan_step.node
        return "aten::" + node.op, "cpu_op", [list(i.shape) for i in node.inputs], None
    _, k, _, ins, _, outs, aliased = step[:7]
    group, kernel = plan_step, program.kernels[k]
    inputs = [env[i] for i in ins]
    outputs = [env[i] for i, _, _ in outs] + [env[i] for i, _ in aliased]
    sources = []
    for n in group.nodes:
        src = (n.meta or {}).get("source")
        if src and src not in sources:
            sources.append(src)
    info = KernelInfo(kernel.name, group.kind, tuple(n.op for n in group.nodes), tuple(sources),
                      tuple(kernel.shape), sum(_spanned(a) for a in inputs),
                      sum(a.nbytes for a in outputs))
    return info.label(), "kernel", [list(a.shape) for a in inputs], info


def _spanned(a) -> int:
    """Bytes of memory an input view reads: broadcast (stride 0) dims count once."""
    n = a.itemsize
    for size, stride in zip(a.shape, a.strides):
        if stride:
            n *= size
    return n
