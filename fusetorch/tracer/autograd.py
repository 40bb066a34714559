"""Autograd: recording the graph during eager execution, and backward by symbolic differentiation.

Recording (`record`, called by dispatch when grad mode is on and an input requires grad) adds one
`ir.Node` per primitive and keeps only the values its VJP rule reads (`OpDef.saves`), each with
the version of its tensor at that moment. `backward` then:
  1. collects the recorded nodes between the roots and the leaves (topological order),
  2. gets the backward graph from `ir.grad.backward_graph` (cached by the structure of the forward
     graph, so a training loop differentiates once and then only re-binds values),
  3. binds the cotangents and the saved values (checking versions) and runs it: with the
     reference interpreter on arrays, or, for `create_graph=True`, through dispatch so that the
     gradient computation is itself recorded,
  4. accumulates into leaf `.grad` (last-used leaves first, each through its `register_hook`
     hooks, then its post-accumulate hooks), runs the callbacks queued meanwhile
     (`queue_callback`: DistributedDataParallel waits for its all-reduces there) and frees the
     saved values unless `retain_graph`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import warnings
import threading
import weakref
from collections import OrderedDict
from typing import NamedTuple, Sequence

from ..ir.grad import BackwardGraph, backward_graph
from ..ir.graph import Graph, Node, toposort
from ..ir.identity import Unkeyable, graph_key
from ..ir.ops import OPS
from .backward_programs import BackwardRunner
from . import dispatch as D
from . import memory_formats as mf
from .tensor import Tensor
from .trace import recording_phase
from .views import refresh as refresh_view
from ..ir.roles import Role

_DISPATCH = D._LOCAL  # (bound once: a per-thread module's attributes read slowly)

FREED = object()  # a node's `saved` after backward without retain_graph
# set by autograd_modes while saved-tensor hooks or anomaly mode are on: called with each
# recorded node (None otherwise, so recording pays one test); ANOMALY: backward checks NaNs
ON_RECORD = None
ANOMALY = False
DUAL_LEVEL = False  # a forward-AD level is open (tracer/forward_ad.py)

_SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


# ---------------------------------------------------------------- grad mode

class _GradMode:
    """Base of no_grad / enable_grad / set_grad_enabled: context manager and decorator."""

    _value = True

    def __enter__(self):
        st = _DISPATCH.state  # (the calling thread's grad mode)
        self._prev, st.GRAD_ENABLED = st.GRAD_ENABLED, self._value
        if DUAL_LEVEL and not self._value:
            _untracked_tangents()
        return self

    def __exit__(self, *exc):
        _DISPATCH.state.GRAD_ENABLED = self._prev
        return False

    def __call__(self, fn):
        mode = type(self)

        def wrapper(*args, **kwargs):
            with mode() if mode is not set_grad_enabled else set_grad_enabled(self._value):
                return fn(*args, **kwargs)
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        wrapper.__wrapped__ = fn
        return wrapper


class _NoParamGradMode(_GradMode):
    """Also usable as a bare decorator (`@no_grad`, without parentheses), as in PyTorch 2."""

    def __new__(cls, orig_func=None, *args, **kwargs):
        if callable(orig_func) and not isinstance(orig_func, bool):
            return cls()(orig_func)
        return super().__new__(cls)


class no_grad(_NoParamGradMode):
    """Ops inside run without recording: `with no_grad(): w -= lr * w.grad`."""

    _value = False


class enable_grad(_NoParamGradMode):
    _value = True


class set_grad_enabled(_GradMode):
    """`set_grad_enabled(False)` as a call, a context manager or a decorator."""

    def __init__(self, mode: bool):
        self._value = bool(mode)
        self._prev = D.GRAD_ENABLED
        D.GRAD_ENABLED = self._value  # as a plain call it takes effect at once
        if DUAL_LEVEL and not self._value:
            _untracked_tangents()

    def __enter__(self):
        return self

    def __call__(self, fn):
        D.GRAD_ENABLED = self._prev  # as a decorator it only applies inside `fn` (PyTorch)
        return super().__call__(fn)


class inference_mode(no_grad):
    """no_grad that `torch.is_inference_mode_enabled()` reports (fusetorch has no inference
    tensors: `Tensor.is_inference()` is False)."""

    def __init__(self, mode: bool = True):
        self._value = not mode
        self._mode = bool(mode)

    def __enter__(self):
        self._prev_inference = _INFERENCE.__dict__.get("on", False)
        _INFERENCE.on = self._mode
        return super().__enter__()

    def __exit__(self, *exc):
        _INFERENCE.on = self._prev_inference
        return super().__exit__(*exc)


_INFERENCE = threading.local()  # (the calling thread's inference mode, as its grad mode)


def is_inference_mode_enabled() -> bool:
    return _INFERENCE.__dict__.get("on", False)


_PACKAGE = __file__.rsplit("/tracer/", 1)[0]


def _untracked_tangents() -> None:
    import sys
    if sys._getframe(2).f_code.co_filename.startswith(_PACKAGE):
        return  # fusetorch's own no_grad blocks (a backward, a Function's forward) are silent
    warnings.warn("fusetorch: ops run with gradients disabled are not recorded, so inside a "
                  "forward-AD dual level their results carry no tangent (PyTorch propagates "
                  "tangents under no_grad)", UserWarning, stacklevel=3)


def is_grad_enabled() -> bool:
    return D.GRAD_ENABLED


# ---------------------------------------------------------------- recording

def _saved_entry(t: Tensor):
    """The saved entry of `t`: a tuple `(data, vc, version, tensor)`: its array, its storage's
    version counter (None: never checked), that counter's value now, and the tensor (a weak
    reference to a node's own output, None for a Function's context). A plain tuple, read by
    unpacking into those names, not a NamedTuple: every recorded op makes one per saved value,
    and a NamedTuple's constructor costs 0.3-0.4 us, some 5% of a recorded op."""
    t._saved = True  # (an in-place write to t then looks for the nodes that saved it)
    root = t._base if t._base is not None else t  # (t._root(), inlined: runs per saved value)
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    return (t._data, vc, vc[0], t)


def _saved_output(t: Tensor):
    """The entry of a node's own output: its tensor by a weak reference, since the tensor holds
    the node (`_node`) and a strong one would make a reference cycle, whose memory (the node,
    the array) only the cyclic collector frees: ~0.7 us of each recorded tanh went to it.
    `saved_tensor` makes a reference strong again where readers need the tensor. Not under a
    trace (`record` says why)."""
    t._saved = True
    root = t._base if t._base is not None else t
    vc = root._vc
    if vc is None:
        vc = root._vc = [0]
    return (t._data, vc, vc[0], _weak(t))


_weak = weakref.ref


def saved_tensor(entry):
    """The tensor of a saved entry (`_saved_entry`): None for a custom Function's context,
    or for an output that has been freed since (`_saved_output`)."""
    t = entry[3]  # (data, vc, version, tensor)
    return t() if t.__class__ is _weak else t


def leaf_node(t: Tensor) -> Node:
    """The `input` node standing for leaf `t` in recorded graphs (made once per tensor)."""
    n = t._node
    if n is None:
        n = Node("input", (), {"shape": tuple(t._data.shape), "dtype": t._dtype},
                 tuple(t._data.shape), t._dtype, {"leaf": weakref.ref(t)})
        t._node = n
    return n


def _node_of(x, dtype) -> Node:
    if isinstance(x, Tensor):
        b = x._base
        if b is not None:  # a view whose storage was written since its node was made
            vc = b._vc
            if (vc[0] if vc is not None else 0) != x._vver:
                refresh_view(x)
        if x._node is not None:
            return x._node
        if x._requires_grad:
            return leaf_node(x)
        shape, d = tuple(x._data.shape), x._dtype  # (a target or an index: every call)
        return Node("input", (), {"shape": shape, "dtype": d}, shape, d)
    return Node("constant", (), {"shape": (), "dtype": dtype, "value": x}, (), dtype)


# op -> per number of inputs, what its VJP reads (OPS[op].saves) as (the output?, input
# positions), slices resolved, or None where that is nothing (index of one input, reshape,
# cat): parsed once per op and arity instead of per record
_SAVES: dict = {}


def _saves(op: str, n: int) -> tuple | None:
    by_arity = _SAVES.setdefault(op, [])
    while len(by_arity) <= n:
        save_out, positions = _save_spec(OPS[op].saves, len(by_arity))
        by_arity.append((save_out, positions) if save_out or positions else None)
    return by_arity[n]


def _save_spec(saves: tuple, n: int) -> tuple:
    positions = []
    for s in saves:
        if s.__class__ is int:
            positions.append(s)
        elif s.__class__ is slice:
            positions.extend(range(n)[s])
    return "out" in saves, tuple(positions)


# the ops whose inputs' cotangents read different saved values (OpDef.saves_for)
_SAVES_FOR = {name for name, d in OPS.items() if d.saves_for is not None}


# (op, which inputs require grad) -> _saves_needed's answer: `x @ w` with data x asks per call
_NEEDED: dict = {}


def _saves_needed(op: str, ins: Sequence, spec: tuple) -> tuple:
    """(the output?, input positions) that the cotangents of the inputs needing grad read;
    `spec`, the op's whole `saves`, where every input needs grad."""
    wants = []
    for x in ins:  # (a loop: a comprehension is a call of its own, per recorded Linear)
        wants.append(isinstance(x, Tensor) and x._requires_grad)
    if all(wants):
        return spec
    key = (op, tuple(wants))
    hit = _NEEDED.get(key)
    if hit is None:
        spec = ()
        for i, w in enumerate(wants):
            if w:
                spec += OPS[op].saves_for[i]
        hit = _NEEDED[key] = _save_spec(spec, len(ins))
    return hit


def record(op: str, ins: Sequence, attrs: dict, result: Tensor, scalar_dtype=None) -> None:
    """Add the node computing `result`; called by dispatch when an input requires grad."""
    dtype = result._dtype
    if dtype.category != 2:  # (dtype.is_floating_point without the property call)
        return  # integer and bool results carry no gradient
    # The common cases inlined, since this runs for every recorded op: a tensor that is not a
    # view and has a node already; two inputs or one unpacked without a comprehension (in
    # Python 3.11 a comprehension is a function call of its own)
    n = len(ins)
    if n == 2:
        a, b = ins
        na = a._node if isinstance(a, Tensor) and a._base is None else None
        nb = b._node if isinstance(b, Tensor) and b._base is None else None
        nodes = (na if na is not None else _node_of(a, scalar_dtype),
                 nb if nb is not None else _node_of(b, scalar_dtype))
    elif n == 1:
        a = ins[0]
        na = a._node if isinstance(a, Tensor) and a._base is None else None
        nodes = (na if na is not None else _node_of(a, scalar_dtype),)
    else:
        nodes = []
        for x in ins:
            nx = x._node if isinstance(x, Tensor) and x._base is None else None
            nodes.append(nx if nx is not None else _node_of(x, scalar_dtype))
        nodes = tuple(nodes)
    node = Node(op, nodes, attrs, result._data.shape, dtype)
    try:
        spec = _SAVES[op][n]
    except (KeyError, IndexError):
        spec = _saves(op, n)
    if spec is not None:
        save_out, positions = spec
        if positions and op in _SAVES_FOR:
            save_out, positions = _saves_needed(op, ins, spec)
        if save_out or positions:
            saved = {}
            if save_out:
                # (a trace maps tensors to its nodes weakly: while one records, the output
                # stays alive for the backward it may trace, which reads the tensor itself)
                saved[id(node)] = _saved_output(result) if _DISPATCH.state.RECORDER is None \
                    else _saved_entry(result)
            for i in positions:
                x = ins[i]
                if isinstance(x, Tensor):
                    saved[id(nodes[i])] = _saved_entry(x)
            node.saved = saved
    result._node = node
    result._requires_grad = True
    if ON_RECORD is not None:
        ON_RECORD(node)


def label(result: Tensor, name: str, *inputs) -> Tensor:
    """Name the recorded node of a composite the way PyTorch names its grad_fn (`MeanBackward0`),
    with the composite's inputs as its `next_functions`."""
    n = result._node
    if n is not None and n.op != "input":
        ins = ()
        for x in inputs:  # (a loop: in Python 3.11 a comprehension is a call of its own)
            ins += (x._node if isinstance(x, Tensor) else None,)
        n.meta = {"grad_fn": name, "inputs": ins}
    return result


def label_recorded(result: Tensor, name: str, *inputs) -> Tensor:
    """`label` where the result has a gradient history (grad mode on and the fresh result
    requiring grad, so one of the inputs does): what a composite's last line calls."""
    if result._requires_grad and _DISPATCH.state.GRAD_ENABLED:
        label(result, name, *inputs)
    return result


# ---------------------------------------------------------------- backward

class Planned(NamedTuple):
    """A cached backward of one forward structure: the backward graph (without the forward
    nodes it was derived from), the saved values it reads as (forward position, part), and
    the runner that runs it (interpreted, then compiled)."""
    backward: BackwardGraph  # its `values` emptied
    values: list
    runner: BackwardRunner


_CACHE: OrderedDict = OrderedDict()  # structure key -> Planned
_CACHE_SIZE = 256


_MEMO = threading.local()  # `same_graph()`'s table on this thread, while it runs


@contextlib.contextmanager
def same_graph():
    """Within it, `grad` calls over the same roots (a Jacobian's rows, one cotangent each)
    toposort and key their forward graph once: a recorded graph never changes its edges, and
    the table, holding the graphs, lives only as long as the block."""
    prev = getattr(_MEMO, "table", None)
    _MEMO.table = {}
    try:
        yield
    finally:
        _MEMO.table = prev


def _order_of(root_nodes: list) -> list:
    table = getattr(_MEMO, "table", None)
    if table is None:
        return toposort(root_nodes)
    key = tuple(root_nodes)  # (nodes hash by identity)
    order = table.get(key)
    if order is None:
        order = table[key] = toposort(root_nodes)
    return order


def _graph_key_of(order: list):
    """graph_key(order), or None for a graph with an unkeyable node; once per `same_graph`."""
    table = getattr(_MEMO, "table", None)
    entry = table.get(id(order)) if table is not None else None
    if entry is not None and entry[0] is order:
        return entry[1]
    try:
        hit = graph_key(order)
    except Unkeyable:
        hit = (None, {n: i for i, n in enumerate(order)})
    if table is not None:
        # (the order is kept with its key: a list made afresh, a hooked graph's segment,
        # could otherwise take the id of one since freed)
        table[id(order)] = (order, hit)
    return hit


def _structure_key(order: list, wrt: list, also: list, stop: list = ()):
    """(key, pos): the forward's structural identity (ir/identity.py) and the positions of the
    nodes differentiated for; key None when a node has no identity (differentiate afresh)."""
    gkey, pos = _graph_key_of(order)
    if gkey is None:
        return None, pos
    key = (gkey, tuple([pos.get(w, -1) for w in wrt]),  # -1: not reached
           tuple([pos[a] for a in also]), tuple([pos.get(s, -1) for s in stop]))
    return key, pos


def _plan(roots: list, wrt: list, also: list, stop: list = (), order: list | None = None):
    """(backward graph, forward order) for these roots, from the cache when the structure is
    one seen before."""
    if order is None:
        order = toposort(roots)
    key, pos = _structure_key(order, wrt, also, stop)
    hit = _CACHE.get(key) if key is not None else None
    if hit is None:  # (two threads may both derive it: the same graph; the last one is kept)
        if D.PROFILE is not None:  # differentiating costs once per structure: show it
            bw = D.PROFILE.call(backward_graph, (roots, wrt, also, stop),
                                "autograd::derive_backward_graph")
        else:
            bw = backward_graph(roots, wrt, also, stop)
        # (kept without `values`, the forward nodes it was derived from: the cache would
        # otherwise hold up to _CACHE_SIZE dead forward graphs and their saved arrays)
        kept = dataclasses.replace(bw, values=[])
        hit = Planned(kept, [(pos[f], part) for f, part in bw.values], BackwardRunner(bw.graph))
        if key is not None:
            _CACHE[key] = hit
            if len(_CACHE) > _CACHE_SIZE:
                try:
                    _CACHE.popitem(last=False)
                except KeyError:  # (another thread's backward emptied it meanwhile)
                    pass
    else:
        try:  # (an OrderedDict's operations are atomic: threads may run backward at once)
            _CACHE.move_to_end(key)
        except KeyError:  # another thread evicted it meanwhile
            pass
    return hit.backward, [(order[p], part) for p, part in hit.values], order, hit.runner


def _bind_values(order: list, fwd_nodes: list) -> list:
    """The saved value of each forward node the backward graph reads, version-checked."""
    table: dict[int, tuple] = {}
    freed = False
    for n in order:
        s = n.saved
        if s is FREED:
            freed = True
        elif s is not None:
            if type(s) is not dict:  # deferred by torch.utils.checkpoint (recomputed now) or
                s = s.materialize(n)  # packed by saved-tensor hooks (unpacked now)
            table.update(s)
    out = []
    for f, part in fwd_nodes:
        entry = table.get(id(f) if part == "value" else (part, id(f)))
        if entry is None:
            if freed:
                raise RuntimeError(_SECOND_BACKWARD)
            raise AssertionError(f"backward needs the value of a {f.op} node that was not "
                                 "saved: its consumer's `saves` is incomplete")
        data, vc, version, tensor = entry
        if tensor.__class__ is _weak:
            tensor = tensor()
            entry = (data, vc, version, tensor)
        if vc is not None and vc[0] != version:
            # PyTorch names the op that made the value: for a value saved as its op's own
            # output that op, else the tensor's current grad_fn (after the in-place op)
            own = isinstance(f.saved, dict) and id(f) in f.saved
            if tensor is None:  # (a freed output, written through a view of its base)
                tensor = Tensor._make(data, f.dtype, None)
            raise RuntimeError(modified_message(tensor, data.shape, vc[0], version,
                                                f if own else getattr(tensor, "_node", None)))
        out.append(entry)
    return out


def modified_message(tensor, shape, now: int, expected: int, made_by) -> str:
    """PyTorch's error for a saved value modified in place before backward."""
    name = ""
    if tensor is not None and tensor._base is not None and made_by is tensor._node:
        try:  # a view's grad_fn as PyTorch regenerates it after its storage was written
            refresh_view(tensor)
            made_by = tensor._node
        except RuntimeError:
            pass
    if made_by is not None and made_by.op != "input":
        import re
        from .grad_fn import grad_fn_name
        op = re.sub(r"Backward\d*$", "", grad_fn_name(made_by))
        if op == "CopySlices":
            op = "torch::autograd::CopySlices"
        name = f", which is output 0 of {op},"
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [torch.{_type_name(tensor)} {list(shape)}]{name} is at version "
            f"{now}; expected version {expected} instead. Hint: enable anomaly detection to find "
            "the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")


def _type_name(t: Tensor) -> str:
    from .creation import LEGACY
    return LEGACY[t._dtype].__name__


def _free(order: list) -> None:
    for n in order:
        if n.op != "input":
            n.saved = FREED


def _leaf_of(n: Node):
    ref = (n.meta or {}).get("leaf") if n.op == "input" else None
    return ref() if ref is not None else None


def run_backward(roots: Sequence[Tensor], grads: Sequence, wrt_nodes: list, also: list,
                 retain_graph: bool, create_graph: bool, order: list | None = None) -> list:
    """Cotangents for `wrt_nodes` (then `also`), as Tensors; tensor hooks on the nodes between
    (`register_hook` on non-leaf tensors) see and may replace theirs on the way. `order`: the
    roots' toposort, where the caller has it."""
    root_nodes = [r._node for r in roots]
    if order is None:
        order = toposort(root_nodes)
    hooked = [n for n in order if n.meta and (n.meta.get("hooks") or
                                                n.meta.get(NODE_PRE_HOOKS) or
                                                n.meta.get(NODE_POST_HOOKS))]
    if hooked:
        return _run_hooked(root_nodes, grads, wrt_nodes, also, hooked, roots[0]._be,
                           retain_graph, create_graph)
    return _run_backward(root_nodes, grads, wrt_nodes, also, roots[0]._be, retain_graph,
                         create_graph, order=order)


def _run_hooked(root_nodes: list, grads: list, wrt: list, also: list, hooked: list, be,
                retain_graph: bool, create_graph: bool) -> list:
    """Backward in segments cut at the hooked nodes: first from the roots with every hooked
    node a stop (its cotangent collected, not passed on), then from each hooked node, nearest
    the roots first (all of its cotangent has arrived by then), with what its hooks return.
    The targets' cotangents are the sums over the segments (the backward is linear)."""
    targets = list(wrt) + list(also)
    n_t = len(targets)
    acc: list = [None] * (n_t + len(hooked))
    where = {id(h): n_t + k for k, h in enumerate(hooked)}

    def add(k, g):
        acc[k] = g if acc[k] is None else D.binary("add", acc[k], g)

    outs = _run_backward(root_nodes, grads, targets + hooked, [], be, True, create_graph,
                         stop=hooked)
    for k, g in enumerate(outs):
        add(k, g)
    for h in reversed(hooked):  # toposort order: the last is nearest the roots
        g = acc[where[id(h)]]
        meta = h.meta
        if meta.get("hooks"):  # the tensor's hooks, then the node's pre-hooks (PyTorch)
            g = _call_hooks(meta["hooks"], g)
        if meta.get(NODE_PRE_HOOKS):
            g = _call_node_hooks(meta[NODE_PRE_HOOKS], (g,), None)[0]
        for k, t in enumerate(targets):
            if t is h:  # `inputs=` / retain_grad on the hooked tensor: the hooked gradient
                acc[k] = g
        rest = [s for s in hooked if s is not h]
        roots, root_grads = [h], [g]
        if meta.get(NODE_POST_HOOKS):  # the node alone first: its hooks see its gradients
            roots, root_grads = _after_post_hooks(h, g, be, create_graph, targets, acc, add,
                                                  where)
            if not roots:
                continue
        outs = _run_backward(roots, root_grads, targets + rest, [], be, True, create_graph,
                             stop=rest)
        for k, (t, o) in enumerate(zip(targets, outs)):
            if not any(t is r for r in roots):
                add(k, o)
        for s, o in zip(rest, outs[n_t:]):
            add(where[id(s)], o)
    if not retain_graph:
        _free(toposort(root_nodes))
    return acc[:n_t]


def _needs_grad(n: Node) -> bool:
    if n.op == "constant":
        return False
    if n.op == "input":
        leaf = _leaf_of(n)
        return leaf is not None and leaf._requires_grad
    return True


def _after_post_hooks(h: Node, g: Tensor, be, create_graph: bool, targets: list, acc: list,
                      add, where: dict) -> tuple:
    """Node `h`'s gradients for its inputs, through its post-hooks (`Node.register_hook`):
    those reaching a target or a hooked node are added there; returned are the other inputs,
    from which the backward goes on, and their gradients. An input given twice (`x * x`)
    shows its summed gradient at its first position, None at the repeats."""
    ins = list(h.inputs)
    need = [n for k, n in enumerate(ins) if _needs_grad(n)
            and not any(n is m for m in ins[:k])]
    got = _run_backward([h], [g], need, [], be, True, create_graph, stop=need) if need else []
    by = {id(n): v for n, v in zip(need, got)}
    grad_inputs = tuple([by.pop(id(n), None) for n in ins])
    grad_inputs = _call_node_hooks(h.meta[NODE_POST_HOOKS], grad_inputs, (g,))
    roots, grads = [], []
    for n, v in zip(ins, grad_inputs):
        if v is None:
            continue
        if id(n) in where:  # a hooked node: its segment comes later
            add(where[id(n)], v)
            continue
        for k, t in enumerate(targets):
            if t is n:
                add(k, v)
        if n.op != "input":
            for k, r in enumerate(roots):
                if r is n:
                    grads[k] = D.binary("add", grads[k], v)
                    break
            else:
                roots.append(n)
                grads.append(v)
    return roots, grads


def _call_node_hooks(hooks: dict, grads: tuple, grad_outputs: tuple | None) -> tuple:
    """A node's pre-hooks (`grad_outputs` None: `hook(grads)`) or post-hooks (`hook(grads,
    grad_outputs)`), in registration order; a returned tuple replaces `grads`."""
    for hook in list(hooks.values()):
        r = hook(grads) if grad_outputs is None else hook(grads, grad_outputs)
        if r is None:
            continue
        name = getattr(hook, "__name__", type(hook).__name__)
        if not isinstance(r, (tuple, list)):
            raise TypeError(f"hook '{name}' returned an object of type "
                            f"'{type(r).__name__}'; expected a tuple or None")
        if len(r) != len(grads):
            raise RuntimeError(f"hook '{name}' has returned an incorrect number of values "
                               f"(got {len(r)}, but expected {len(grads)})")
        for v, old in zip(r, grads):
            if v is not None and not isinstance(v, Tensor):
                raise TypeError(f"expected Variable, but hook returned "
                                f"'{type(v).__name__}'")
            if v is not None and old is not None and tuple(v._data.shape) != \
                    tuple(old._data.shape):
                raise RuntimeError(f"hook '{name}' has changed the size of value")
        grads = tuple(r)
    return grads


def _call_hooks(hooks: dict, g: Tensor) -> Tensor:
    """A tensor's hooks on its gradient, in registration order; a returned tensor replaces it
    (PyTorch's checks on what a hook returns)."""
    for hook in list(hooks.values()):
        r = hook(g)
        if r is None:
            continue
        if not isinstance(r, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        name = getattr(hook, "__name__", type(hook).__name__)
        if r._dtype is not g._dtype:
            raise RuntimeError(f"hook '{name}' has changed the type of value (was "
                               f"torch.{_type_name(g)} got torch.{_type_name(r)})")
        if tuple(r._data.shape) != tuple(g._data.shape):
            raise RuntimeError(f"hook '{name}' has changed the size of value")
        g = r
    return g


def _run_backward(root_nodes: list, grads: Sequence, wrt_nodes: list, also: list, be,
                  retain_graph: bool, create_graph: bool, stop: list = (),
                  order: list | None = None) -> list:
    bw, fwd_values, order, runner = _plan(root_nodes, wrt_nodes, also, stop, order)
    values = _bind_values(order, fwd_values)
    freed = False  # (a walk over every node: done once)
    if create_graph or D.RECORDER is not None:
        # a trace (compile of a whole training step) must see the backward's ops too
        if D.RECORDER is not None:
            D.RECORDER.backward_ran = True
        if not retain_graph:
            # as the plain run below: the saved values are the run's (its env drops each
            # after its last reader), not the nodes' until the end (a traced nanoGPT step
            # held all its activations through its backward: 0.16 GB more at its peak)
            _free(order)
        outs = _run_recorded(bw, runner, grads, fwd_values, values, be, create_graph,
                             order)
    else:
        arrays = [g._data for g in grads] + [data for data, _, _, _ in values]
        # a gradient may be (a view of) a cotangent or a saved value, or the same buffer as
        # another gradient: those are copied, so .grad never aliases anything else
        taken = _roots(arrays)
        if ANOMALY:  # interpreted node by node, each rule's cotangents checked
            from .autograd_modes import run_checked
            out_arrays = run_checked(runner, arrays, be, bw, order)
        elif D.PROFILE is not None:  # interpreted: each node timed, grouped by grad_fn
            out_arrays = D.PROFILE.backward_graph(runner, order, arrays, be)
        elif not retain_graph:
            # the saved values are handed to the run, which lets each go after its last
            # reader (PyTorch frees a node's saved tensors as its backward runs): a
            # transformer's activations then do not all outlive the backward's peak
            del values
            _free(order)
            freed = True
            out_arrays = runner.run(arrays, be, consume=True)
        else:
            out_arrays = runner.run(arrays, be)  # interpreted, or compiled once seen twice
        outs = []
        for a, n in zip(out_arrays, bw.graph.outputs):
            root = _root_array(a)
            if taken.get(id(root), _DEAD)() is root or not D.writeable(a):
                a = be.xp.array(a, copy=True)
                root = a
            taken[id(root)] = _strong(root)
            outs.append(Tensor._make(a, n.dtype, be))
        if runner.crosses_device:
            _place(outs, list(wrt_nodes) + list(also), be)
    if not retain_graph and not freed:
        _free(order)
    return outs


def _DEAD():
    return None


class _strong:
    """A reference with weakref.ref's call, for arrays that take no weak references."""
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __call__(self):
        return self.a


def _roots(arrays: list) -> dict:
    """id -> (weak) reference of each array's root: identity that survives the arrays being let
    go (a freed array's id may be a new array's)."""
    out = {}
    for a in arrays:
        r = _root_array(a)
        try:
            out[id(r)] = weakref.ref(r)
        except TypeError:
            out[id(r)] = _strong(r)
    return out


def _place(outs: list, targets: list, be) -> None:
    """In a graph that crosses devices each gradient lives where its forward value did: a
    leaf's device, else the device of the array's module."""
    from ..runtime.device import backend_of_array
    for k, (g, f) in enumerate(zip(outs, targets)):
        want = _forward_backend(f) or backend_of_array(g._data, be)
        if want is not g._be:
            data = g._data
            if backend_of_array(data, want) is not want:
                from ..runtime.eager import _to_device
                data = _to_device(data, str(want.device))
            outs[k] = Tensor._make(data, g._dtype, want)


def _forward_backend(f: Node):
    """The device a recorded forward value lives on: found at the nearest `to_device` or leaf
    above it (ops keep their inputs' device). None if the graph above says nothing."""
    from ..runtime.device import backend
    stack, seen = [f], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if Role.CROSSES_DEVICE in n.opdef.roles:
            return backend(n.attrs["device"])
        leaf = _leaf_of(n)
        if leaf is not None:
            return leaf._be
        stack.extend(reversed(n.inputs))
    return None


def _run_recorded(bw, runner, grads, fwd_values, values, be, create_graph: bool,
                  order=()) -> list:
    """The backward graph's schedule (`runner.schedule()`, the interpreter's) run in tensor
    mode: its nodes through dispatch on Tensors, so its ops are recorded: by autograd
    (create_graph) and/or by an active trace."""
    hook = D.PROFILE.grad_fn_spans(order) if D.PROFILE is not None else None
    if ANOMALY:
        from .autograd_modes import Checker
        hook = Checker(bw, order)
    ins = bw.graph.inputs
    env = list(grads)
    for node, (f, part), (data, _, _, tensor) in zip(ins[bw.n_cotangents:], fwd_values,
                                                     values):
        if part == "context":
            env.append(data)
            continue
        leaf = _leaf_of(f)
        if leaf is not None:
            env.append(leaf)
        elif tensor is not None and tensor._data is data and (tensor._node is f or
                                                              f.op == "input"):
            env.append(tensor)  # the forward tensor itself: a trace knows it
        else:
            t = Tensor._make(data, f.dtype, be)
            if f.op != "input":
                t._node, t._requires_grad = f, True
            env.append(t)
    values.clear()  # (env holds them now, each until its last reader)
    given = {id(t) for t in env}

    if hook is None:
        def call(node, args):
            return _dispatch_node(node, args, be)
    else:
        def call(node, args):
            hook.begin(node)  # the ops themselves are timed by dispatch
            try:
                out = _dispatch_node(node, args, be)
            except Exception:
                if ANOMALY:
                    hook.failed()
                raise
            if ANOMALY:
                hook.end(node, out._data)
            return out
    # each value is dropped after its last reader, as in the interpreter: a whole training
    # step's trace otherwise held every gradient temporary to the end (a nanoGPT step: 3 GB)
    with enable_grad() if create_graph else no_grad():
        # (env holds the saved values: handed over)
        outs = runner.schedule().run_with(env, call, consume=True)
        if hook is not None:
            hook.finish()
        # a gradient that is a cotangent or a saved value itself gets its own buffer, so .grad
        # never aliases anything else
        return [o.clone() if id(o) in given or any(o is p for p in outs[:k]) else o
                for k, o in enumerate(outs)]


def _dispatch_node(node: Node, args: list, be) -> Tensor:
    if Role.USER_BACKWARD in node.opdef.roles:  # the user's backward, recorded: args are
        # (cotangent, ctx)
        a = node.attrs
        return args[1].input_grad_recorded(args[0], a["positions"][a["index"]])
    d = OPS[node.op]
    if d.kind == "source":
        return D.source(node.op, dict(node.attrs), be)
    if d.kind == "elementwise" and not node.attrs:
        return D.elementwise(node.op, *args)
    return D.apply(node.op, args, dict(node.attrs))


def _root_array(a):
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


GRAD_HOOKS = "_grad_hooks"  # tensor __dict__ keys: {handle id: hook}
POST_ACCUMULATE_HOOKS = "_post_accumulate_grad_hooks"
_FINAL_CALLBACKS: list = []


def add_hook(t: Tensor, kind: str, hook):
    """Register a tensor hook (`Tensor.register_hook` / `register_post_accumulate_grad_hook`).
    A leaf's hooks run as its gradient is accumulated, after the backward graph. A non-leaf's
    hooks belong to its current node (`meta['hooks']`: a later in-place write gives the tensor
    a new node, and hooks registered before it see the gradient of the old value, as in
    PyTorch); backward is cut there (`_run_hooked`)."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    from .._hooks import RemovableHandle  # the one handle type (modules and optimizers too)
    if not t.is_leaf:
        if kind == POST_ACCUMULATE_HOOKS:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        rec = D.RECORDER
        if rec is not None and (rec.strict or (rec.parent is not None and rec.parent.strict)):
            # a compiled backward program would not stop at this tensor to call the hook
            from .trace import user_source
            rec.graph_break(f"register_hook on a non-leaf tensor at {user_source()}")
        n = t._node
        n.meta = dict(n.meta or {})
        hooks = n.meta.setdefault("hooks", {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle
    hooks = t.__dict__.setdefault(kind, {})
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


NODE_PRE_HOOKS = "node_pre_hooks"  # node meta keys: {handle id: hook}
NODE_POST_HOOKS = "node_post_hooks"


def add_node_hook(n: Node, kind: str, hook):
    """`grad_fn.register_prehook` / `register_hook`: kept in the node's meta, where backward
    cuts its graph (`_run_hooked`) as for a non-leaf tensor's hooks."""
    from .._hooks import RemovableHandle
    if not callable(hook):
        raise TypeError(f"'{type(hook).__name__}' object is not callable")
    rec = D.RECORDER
    if rec is not None and (rec.strict or (rec.parent is not None and rec.parent.strict)):
        from .trace import user_source
        rec.graph_break(f"a grad_fn hook at {user_source()}")
    n.meta = dict(n.meta or {})
    hooks = n.meta.setdefault(kind, {})
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def queue_callback(fn) -> None:
    """Run `fn()` once the backward in progress has accumulated every gradient (PyTorch's
    `Variable._execution_engine.queue_callback`; meant to be called from a hook)."""
    _FINAL_CALLBACKS.append(fn)


def _hooked(t: Tensor, g: Tensor) -> Tensor:
    return _call_hooks(t.__dict__.get(GRAD_HOOKS, {}), g)


def _other_layout(a, b) -> bool:
    """Whether arrays a and b of one shape differ in strides over their dims of size > 1."""
    if a.strides == b.strides or a.shape != b.shape:
        return False
    return any(n > 1 and sa != sb for n, sa, sb in zip(a.shape, a.strides, b.strides))


def _first_grad_relaid(t: Tensor, g: Tensor) -> bool:
    """Whether g, arriving as leaf t's first .grad, must be laid out again (`_in_layout_of`)."""
    return t._grad is None and g._data.ndim > 1 and _other_layout(g._data, t._data)


def _in_layout_of(t: Tensor, g: Tensor) -> Tensor:
    """PyTorch's gradient layout contract (AccumulateGrad): a leaf's first .grad has the
    leaf's strides where the leaf is dense, else is contiguous, whatever layout the
    backward produced (a matmul's gradient comes back as a transposed view). Optimizer
    state made with *_like or clone from it then follows its parameter."""
    from . import memory_formats as mf
    a = t._data
    dims = mf.stride_order(a.shape, tuple(s // a.itemsize for s in a.strides)) \
        if D._dense(a) else tuple(range(a.ndim))
    if dims == tuple(range(a.ndim)):
        data = g._be.xp.ascontiguousarray(g._data)
    else:
        data = mf.empty_in_order(g._data, dims)
    return Tensor._make(data, g._dtype, g._be)


def _accumulate_leaf(t: Tensor, g: Tensor, create_graph: bool) -> None:
    st = _DISPATCH.state  # this thread's profiler, recorder and grad mode
    if st.PROFILE is not None and st.PROFILE.enter():
        return st.PROFILE.call(_accumulate_leaf, (t, g, create_graph), _ACCUMULATE, (g,),
                               reentrant=True)
    if t.__dict__.get(GRAD_HOOKS):
        g = _hooked(t, g)
    if st.RECORDER is not None:
        st.RECORDER.grad_access(t, "read")
        if not create_graph and (g._base is not None or _first_grad_relaid(t, g)):
            # a .grad owns its memory (eager makes the same copy on arrays); a row-major leaf
            # gets a row-major one (the layout contract `_in_layout_of` keeps in eager), also
            # where the backward handed over a transposed array of its own, so optimizer state
            # cloned from it matches its parameter
            g = g.clone(memory_format=mf.contiguous_format) if t._data.flags.c_contiguous \
                else g.clone()
    with _ACCUMULATE_LOCK:  # (backwards in several threads into one leaf: see the lock)
        if t._grad is None:
            if not create_graph and st.RECORDER is None and _first_grad_relaid(t, g):
                g = _in_layout_of(t, g)
            t._grad = g
        elif st.RECORDER is not None and not create_graph:
            t._grad.add_(g)  # recorded, so a replay of the trace accumulates too
        elif create_graph or st.GRAD_ENABLED and t._grad._requires_grad:
            t._grad = t._grad + g
        else:
            t._grad._data += g._data
    post = t.__dict__.get(POST_ACCUMULATE_HOOKS)
    if post:
        for hook in list(post.values()):
            hook(t)


_ACCUMULATE = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
# One accumulation into a leaf's .grad at a time, as PyTorch's AccumulateGrad holds a mutex:
# backwards running in several threads into shared parameters lost updates without it (the
# check for a first .grad raced, and numpy's `+=` releases the GIL between its elements). Hooks
# run outside it.
_ACCUMULATE_LOCK = threading.Lock()


def _roots_and_grads(tensors, grad_tensors, create_graph: bool):
    roots, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if t._base is not None:
            refresh_view(t)  # a view whose storage was written since its node was made
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = D.source("full", {"shape": tuple(t._data.shape), "dtype": t._dtype,
                                  "value": 1.0}, t._be)
        elif not isinstance(g, Tensor):
            from .creation import tensor
            g = tensor(g, dtype=t._dtype)
        if tuple(g._data.shape) != tuple(t._data.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {t.shape}.")
        if g._dtype is not t._dtype:
            g = D.cast(g, t._dtype)
        if t._node is None:  # a leaf as its own root
            leaf_node(t)
        roots.append(t)
        grads.append(g)
    return roots, grads


def _target_node(t: Tensor) -> Node:
    if t._base is not None:
        refresh_view(t)
    return t._node if t._node is not None else leaf_node(t)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate d(tensors)/d(leaf) into each leaf's `.grad` (torch.autograd.backward; its
    deprecated `grad_variables` is `grad_tensors`, with PyTorch's warning)."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    if D.PROFILE is not None and D.PROFILE.enter():
        return D.PROFILE.call(backward, (tensors, grad_tensors, retain_graph, create_graph,
                                         None, inputs), "autograd::backward", reentrant=True)
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    retain_graph = create_graph if retain_graph is None else retain_graph
    roots, grads = _roots_and_grads(tensors, list(grad_tensors), create_graph)
    order = toposort([r._node for r in roots])
    if inputs is not None:
        targets = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        wrt = [_target_node(t) for t in targets]
    else:
        wrt, targets = [], []
        for n in order:
            if n.op == "input":  # (_leaf_of inlined: a backward walks every node here)
                leaf = _leaf_of(n)
                if leaf is not None and leaf._requires_grad:
                    wrt.append(n)
                    targets.append(leaf)
    retained = [(n, n.meta["retain"]()) for n in order
                if n.meta and "retain" in n.meta and n.meta["retain"]() is not None]
    also = [n for n, _ in retained]
    with no_grad() if not create_graph else enable_grad(), recording_phase("backward"):
        outs = run_backward(roots, grads, wrt, also, retain_graph, create_graph, order)
        try:
            # last-used first, the order in which PyTorch's engine finishes leaves (and so
            # the order DistributedDataParallel's buckets expect)
            for t, g in reversed(list(zip(targets, outs[:len(wrt)]))):
                if t._node is not None and t._node.op != "input":  # a non-leaf in `inputs=`
                    t._grad = g
                else:
                    _accumulate_leaf(t, g, create_graph)
            for (_, t), g in zip(retained, outs[len(wrt):]):
                _accumulate_leaf(t, g, create_graph)
        finally:
            callbacks = _take_callbacks()
        for fn in callbacks:
            fn()


def _take_callbacks() -> list:
    callbacks = _FINAL_CALLBACKS[:]
    _FINAL_CALLBACKS.clear()
    return callbacks


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False):
    """torch.autograd.grad: the gradients of `outputs` with respect to `inputs`, returned
    (not accumulated into `.grad`). PyTorch's deprecated `only_inputs` is accepted and ignored,
    with its warning when False."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if is_grads_batched:
        raise NotImplementedError("fusetorch does not implement autograd.grad("
                                  "is_grads_batched=True): it needs vmap, which fusetorch lacks")
    allow_unused = bool(allow_unused)
    if D.PROFILE is not None and D.PROFILE.enter():
        return D.PROFILE.call(grad, (outputs, inputs, grad_outputs, retain_graph, create_graph,
                                     True, allow_unused, False, materialize_grads),
                              "autograd::grad", reentrant=True)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    retain_graph = create_graph if retain_graph is None else retain_graph
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots, grads = _roots_and_grads(outputs, list(grad_outputs), create_graph)
    wrt = [_target_node(t) for t in inputs]
    order = _order_of([r._node for r in roots])
    reachable = {id(n) for n in order}
    used = [id(w) in reachable for w in wrt]
    if not all(used) and not (allow_unused or materialize_grads):
        raise RuntimeError(f"The differentiated Tensor at index {used.index(False)} appears to "
                           "not have been used in the graph. Set allow_unused=True if this is the "
                           "desired behavior.")
    with no_grad() if not create_graph else enable_grad(), recording_phase("backward"):
        try:
            outs = run_backward(roots, grads, wrt, [], retain_graph, create_graph, order)
            outs = [_hooked(t, g) if t.__dict__.get(GRAD_HOOKS) else g
                    for t, g in zip(inputs, outs)]
        finally:
            callbacks = _take_callbacks()  # (multi-grad hooks queue theirs from the hooks)
        for fn in callbacks:
            fn()
    result = tuple(g if u or materialize_grads else None for g, u in zip(outs, used))
    return result


def backward_graph_text(root: Tensor, inputs: Sequence[Tensor] | None = None,
                        format: str = "text") -> str:
    """The backward graph that `root.backward()` would run (for reading): its IR text, or
    with `format="dot"` Graphviz source (`fusetorch.utils.viz.render` draws it). Its inputs
    are the output's cotangent, then the forward values the rules read."""
    if format not in ("text", "dot"):
        raise ValueError(f"format must be 'text' or 'dot', got {format!r}")
    if root._node is None:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn")
    order = toposort([root._node])
    if inputs is None:
        wrt = [n for n in order if _leaf_of(n) is not None]
    else:
        wrt = [_target_node(t) for t in inputs]
    bw = backward_graph([root._node], wrt)
    if format == "text":
        return bw.graph.text()
    from ..ir.dot import to_dot
    names = ["grad_output"] * bw.n_cotangents + [_saved_name(f, part) for f, part in bw.values]
    return to_dot(bw.graph, title="backward graph", default_phase="backward",
                  input_names=names)


def _saved_name(f: Node, part: str) -> str:
    """`saved exp from train.py:7`: which forward value a backward graph's input is."""
    where = (f.meta or {}).get("source") if f.op != "input" else None
    what = "ctx of " + f.op if part == "context" else f.op
    return f"saved {what}" + (f" from {where}" if where else "")


def forward_graph(root: Tensor) -> Graph:
    """The recorded forward graph behind `root` (leaves and non-grad values as inputs)."""
    order = toposort([root._node])
    return Graph([n for n in order if n.op == "input"], [root._node])


D.GRAD_RECORD = record
D.GRAD_SAVED = saved_tensor
