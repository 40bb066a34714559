"""Capturing eager execution into an `ir.Graph`.

    with fusetorch.tracer.trace(x) as rec:
        y = (x * 2).exp().sum(1)
    g = rec.graph(y)          # inputs: x, then any other outside tensor in order of first use
    print(g)                  # %0 = input() : f32[3,4] ...
    (y2,) = run(g, x2)        # the same program on new values

Every op still runs eagerly while recording; the recorder only adds one node per primitive. A
tensor from outside the trace becomes an `input` node the first time an op reads it.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import weakref
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from .._per_thread import per_thread
from ..ir.graph import Graph, Node, make_node
from ..ir.ops import OPS
from ..runtime import eager_kernels
from . import dispatch as D
from . import views as _views
from .tensor import Tensor
from ..ir.roles import Role

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# what the recorded ops are part of, kept in each node's `meta['phase']` so that a compiled
# training step (one program) can say which of its kernels are the backward and the update:
# None (the forward, the default), "backward" (autograd's backward run through dispatch) or
# "update" (an optimizer's step and zero_grad). Per thread, as the recorder is.
_LOCAL = per_thread(__name__, PHASE=None)


class recording_phase:
    """`with recording_phase("update"): ...`: ops recorded inside are tagged with that phase
    (None: the forward). Cheap enough to enter on every optimizer step."""

    __slots__ = ("name", "prev")

    def __init__(self, name: str | None):
        self.name = name

    def __enter__(self) -> None:
        st = _LOCAL.state
        self.prev, st.PHASE = st.PHASE, self.name

    def __exit__(self, *exc) -> None:
        _LOCAL.state.PHASE = self.prev


def user_source() -> str | None:
    """`file:line` of the innermost frame outside fusetorch: the user's line behind an op."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR) and not fn.startswith("<frozen"):
            return f"{os.path.basename(fn)}:{f.f_lineno}"
        f = f.f_back
    return None


class GraphBreak(Exception):
    """A traced call did something a graph cannot hold (read data into Python, a custom
    Function); `compile` runs that call eagerly instead."""


class Recorder:
    """Maps tensors to the nodes that compute them while a trace is active. `strict` makes data
    reads raise GraphBreak (set by `compile`; a plain `trace()` lets them through)."""

    strict = False
    broken: str | None = None  # why a strict trace stopped recording (see graph_break)

    def __init__(self):
        # id(tensor) -> its node. An entry goes when its tensor does (a weakref callback, run
        # before the id can be reused), so a temporary the traced code drops frees its memory
        # as in eager mode: a trace over 2**24 elements kept every intermediate alive, and the
        # fresh memory each one needed cost more than the ops themselves
        self._nodes: dict[int, Node] = {}
        self._refs: dict[int, weakref.ref] = {}
        self._keep: list[Tensor] = []  # tensors the recording must keep (leaves with grads)
        self.inputs: list[Node] = []
        self.input_tensors: list[Tensor] = []
        self.parent: Recorder | None = None  # an enclosing trace, which records the same ops
        # leaves whose `.grad` the traced code touched: id -> [leaf, first access ('read' or
        # 'set'), the grad at that moment]. What a replay of the trace must check and redo.
        self.grad_events: dict[int, list] = {}
        self.backward_ran = False  # autograd.backward ran inside the trace (recorded)
        # objects whose Python-side state the traced code used or changed (an optimizer's
        # step, a scheduler setting its lr), by id: a replay runs no Python, so `compile`
        # guards on each one's `_python_state()` (see `uses_python_state`)
        self.stateful: dict[int, object] = {}
        # in-place writes follow memory: per storage root, how many times it was written
        # (`_gen`), and per view, the count its node was made at (`_vgen`); a view read after
        # its root was written again replays its steps on the root's new node
        self._gen: dict[int, int] = {}
        self._vgen: dict[int, int] = {}

    def _set(self, t: Tensor, n: Node) -> None:
        key = id(t)
        if key not in self._refs:
            self._refs[key] = weakref.ref(t, functools.partial(self._forget, key))
        self._nodes[key] = n

    def _forget(self, key: int, _ref) -> None:
        self._nodes.pop(key, None)
        self._refs.pop(key, None)

    def data_read(self, what: str) -> None:
        """Called when Python reads a traced tensor's data (`item`, `bool`, `numpy`, ...)."""
        if self.strict or (self.parent is not None and self.parent.strict):
            self.graph_break(f"{what} reads tensor data at {user_source()}")

    def view_write(self) -> None:
        """An in-place write into a view whose steps from its storage cannot be replayed (an
        as_strided view): the recording could not follow it to the base. A graph break."""
        if self.strict or (self.parent is not None and self.parent.strict):
            self.graph_break(f"an in-place write into a view at {user_source()}")

    def shape_change(self, t: Tensor) -> None:
        """`t.unsqueeze_(0)`, `t.t_()`: `t` takes a new shape in place. A tensor made inside
        the trace just becomes the view's value; a graph input cannot (a compiled program writes
        updated inputs back into their buffers as they were laid out): a graph break."""
        if (self.strict or (self.parent is not None and self.parent.strict)) and \
                any(x is t for x in self.input_tensors):
            self.graph_break(f"an in-place shape change of an input at {user_source()}")

    def written(self, t: Tensor) -> None:
        """`t` was just overwritten in place, and its node is its new value. A write into a view
        is a write into its storage root: the root's new value is its old one with the view's
        region replaced (views.put_back), and the view is its steps on that. Views of a written
        root replay their steps when next read (`node`)."""
        root = t._base
        if root is None:
            self._gen[id(t)] = self._gen.get(id(t), 0) + 1
        else:
            chain = _views.data_chain(t)
            if chain is None or not _views.invertible(chain[1]):
                self.view_write()
            else:
                build = self._builder()
                steps = _views.resolve(tuple(root._data.shape), chain[1])
                new = _views.put_back(self.node(root), steps, self._nodes[id(t)], build)
                self._set(root, new)
                g = self._gen[id(root)] = self._gen.get(id(root), 0) + 1
                self._set(t, _views.replay(new, steps, build))
                self._vgen[id(t)] = g
        if self.parent is not None:
            self.parent.written(t)

    def _builder(self):
        meta = {"source": user_source()}
        if not D.GRAD_ENABLED:
            meta["no_grad"] = True

        def build(op, inputs, attrs):
            return make_node(op, inputs, attrs, dict(meta))
        return build

    def _fresh_view(self, t: Tensor, g: int):
        """The node of view `t` replayed on its root's current node (None if it cannot be)."""
        chain = _views.data_chain(t)
        if chain is None:
            if self.strict or (self.parent is not None and self.parent.strict):
                self.graph_break(f"a view whose base was written in place, read at "
                                 f"{user_source()}")
            return None
        root, steps = chain
        n = _views.replay(self.node(root), _views.resolve(tuple(root._data.shape), steps),
                          self._builder())
        self._set(t, n)
        self._vgen[id(t)] = g
        return n

    def graph_break(self, reason: str) -> None:
        """The traced code did something a graph cannot hold. The call goes on eagerly from
        here, unrecorded (aborting and re-running it would repeat its side effects, such as an
        optimizer's step); `broken` tells `compile` to run this key eagerly from now on."""
        r = self
        while r is not None and r.strict:
            r.broken = r.broken or reason
            r = r.parent
        D.RECORDER = r

    def grad_access(self, leaf: Tensor, kind: str) -> None:
        """`leaf.grad` is about to be read or assigned (by user code or by backward)."""
        if id(leaf) not in self.grad_events:
            self.grad_events[id(leaf)] = [leaf, kind, leaf._grad]
            self._keep.append(leaf)
        if self.parent is not None:
            self.parent.grad_access(leaf, kind)

    def uses_python_state(self, obj) -> None:
        """`obj` (an optimizer about to step) keeps state in Python that the traced call reads
        or changes, which a replay cannot: it offers `_python_state()`, a comparable snapshot
        (hyperparameters, which state entries exist), for the caller to guard on."""
        self.stateful.setdefault(id(obj), obj)
        if self.parent is not None:
            self.parent.uses_python_state(obj)

    def input(self, t: Tensor) -> Node:
        """Declare `t` a graph input (done implicitly for any outside tensor an op reads)."""
        n = self._nodes.get(id(t))
        if n is None:
            n = make_node("input", [], {"shape": tuple(t._data.shape), "dtype": t._dtype})
            self.inputs.append(n)
            self.input_tensors.append(t)
            self._set(t, n)
            if t._base is not None:
                self._vgen[id(t)] = self._gen.get(id(t._base), 0)
        return n

    def node(self, t: Tensor) -> Node:
        n = self._nodes.get(id(t))
        if self._gen and t._base is not None:
            g = self._gen.get(id(t._base))
            if g is not None and self._vgen.get(id(t), 0) != g:
                n = self._fresh_view(t, g) or n
        return n if n is not None else self.input(t)

    def record(self, op: str, ins: Sequence, attrs: dict, result: Tensor,
               scalar_dtype=None) -> Node:
        if Role.DATA_SHAPE in OPS[op].roles and (self.strict or
                                   (self.parent is not None and self.parent.strict)):
            # its shape is the count of the values it found: a compiled program, specialised
            # on shapes, cannot hold it (x[mask] reads the mask)
            self.graph_break(f"nonzero (a shape that depends on the values) at {user_source()}")
            return None
        nodes = [self.node(x) if isinstance(x, Tensor) else self._scalar(x, scalar_dtype)
                 for x in ins]
        if op == "constant" and "digest" not in attrs:
            attrs = dict(attrs, digest=hashlib.sha256(result._host().tobytes()).hexdigest())
        meta = {"source": user_source()}
        phase = _LOCAL.state.PHASE
        if phase is None and self.backward_ran and not D.GRAD_ENABLED:
            phase = "update"  # after backward, under no_grad: a hand-written update
        if phase is not None:
            meta["phase"] = phase
        if not D.GRAD_ENABLED:
            meta["no_grad"] = True  # differentiation treats it as a constant (ir.grad)
        n = make_node(op, nodes, attrs, meta, shape=tuple(result.shape))
        if n.shape != tuple(result._data.shape) or n.dtype is not result._dtype:
            raise AssertionError(f"recorded {n} but eager gave {result._dtype} "
                                 f"{tuple(result._data.shape)}")
        self._set(result, n)
        if result._base is not None:
            self._vgen[id(result)] = self._gen.get(id(result._base), 0)
        if self.parent is not None:
            self.parent.record(op, ins, attrs, result, scalar_dtype)
        return n

    def _scalar(self, value, dtype) -> Node:
        return make_node("constant", [], {"shape": (), "dtype": dtype, "value": value})

    def alias(self, t: Tensor, value: Tensor) -> None:
        """`t` was overwritten in place with `value`."""
        self._set(t, self.node(value))
        if self.parent is not None:
            self.parent.alias(t, value)

    def graph(self, *outputs: Tensor) -> Graph:
        """The graph computing `outputs` from the recorded inputs."""
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        return Graph(self.inputs, [self.node(o) for o in outputs])


@contextmanager
def trace(*inputs: Tensor) -> Iterator[Recorder]:
    """Record every op run inside the block; `inputs` become the first graph inputs."""
    rec = Recorder()
    for t in inputs:
        rec.input(t)
    rec.parent = D.RECORDER
    prev, D.RECORDER = D.RECORDER, rec
    try:
        with eager_kernels.no_builds():
            yield rec
    finally:
        D.RECORDER = prev


def capture(fn: Callable, *args: Tensor) -> tuple[Graph, object]:
    """Trace one call `fn(*args)`; returns (graph, fn's result). Graph inputs: args, in order."""
    with trace(*args) as rec:
        out = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return rec.graph(*outs), out


def run(graph: Graph, *inputs: Tensor) -> list[Tensor]:
    """Run `graph` on new input tensors with the eager implementations."""
    from ..runtime.runner import run_graph
    if len(inputs) != len(graph.inputs):
        raise TypeError(f"graph takes {len(graph.inputs)} inputs, got {len(inputs)}")
    be = inputs[0]._be if inputs else None
    from ..runtime.device import cpu_backend
    be = be or cpu_backend()
    for n, t in zip(graph.inputs, inputs):
        if tuple(t._data.shape) != n.shape or t._dtype is not n.dtype:
            raise RuntimeError(f"graph input expects {n.type_str()}, got "
                               f"{t._dtype.short}{list(t._data.shape)}")
    arrays = run_graph(graph, [t._data for t in inputs], be.impl, be.xp)
    return [Tensor._make(a, n.dtype, be) for a, n in zip(arrays, graph.outputs)]
