"""`torch.utils.checkpoint`: activation checkpointing, trading compute for memory.

`checkpoint(function, *args)` runs `function` recording its autograd graph as usual, then
drops the values that graph saved for backward (activations) and keeps only the inputs. When
a backward reaches the region, the saved values are recomputed: `function` runs again on the
same inputs with the same random state (`preserve_rng_state`), and each recomputed node's
saved values are handed to the original node in the same position (the op sequence must
repeat: op, shape and dtype are checked, as PyTorch's default determinism check does). So
gradients equal the un-checkpointed ones, also through `autograd.grad` and to parameters the
function uses by closure, and only the region's inputs and outputs stay alive between forward
and backward. The hook is `tracer.autograd._bind_values`: a node's `saved` that is not a
dict is a deferred value with a `materialize(node)` method.

`use_reentrant` chooses PyTorch's variant only where the two differ visibly: with
`use_reentrant=True` (the default, with PyTorch 2.13's warning when it is not passed) keyword
arguments are refused and, when no input requires grad, PyTorch's warning is given and the
outputs do not require grad; the recomputation is the same mechanism for both (PyTorch's
reentrant variant, which runs a nested backward, is also incompatible with `autograd.grad`;
here it is not). Like PyTorch's, recomputing runs the function's side effects again (a
BatchNorm's running statistics update twice).
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Sequence

from ..runtime import eager as _eager
from ..tracer import dispatch as _D
from ..tracer.autograd import _saved_entry, enable_grad, modified_message, no_grad
from ..tracer.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "detach_variable", "noop_context_fn",
           "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not repeat the forward (a different op, shape or dtype)."""


def noop_context_fn() -> tuple[contextlib.AbstractContextManager,
                               contextlib.AbstractContextManager]:
    """The default `context_fn`: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies of the tensors in `inputs` keeping their `requires_grad` (other items
    unchanged), as PyTorch's helper of the same name."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad_(x.requires_grad)
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def _rng_state() -> list:
    return [g.np.bit_generator.state for g in (_eager.GENERATOR, _eager.CUDA_GENERATOR)]


def _set_rng_state(state: list) -> None:
    for g, s in zip((_eager.GENERATOR, _eager.CUDA_GENERATOR), state):
        g.np.bit_generator.state = s


@contextlib.contextmanager
def _collecting(nodes: list):
    """Collect, in order, the autograd nodes recorded inside the block."""
    inner = _D.GRAD_RECORD

    def record(*args, **kwargs):
        inner(*args, **kwargs)
        node = args[3]._node
        if node is not None and node.op != "input":
            nodes.append(node)
    _D.GRAD_RECORD = record
    try:
        yield
    finally:
        _D.GRAD_RECORD = inner


class _Deferred:
    """A checkpointed node's `saved`: recomputed on first use."""

    __slots__ = ("frame", "index")

    def __init__(self, frame: "_Frame", index: int):
        self.frame, self.index = frame, index

    def materialize(self, node) -> dict:
        saved = node.saved = self.frame.recompute()[self.index]
        return saved


class _Frame:
    """One checkpointed call: what recomputing it needs, and the nodes it recorded."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict, rng: list | None,
                 context_fn: Callable, check: bool):
        self.function, self.args, self.kwargs, self.rng = function, args, kwargs, rng
        self.context_fn, self.check = context_fn, check
        # inputs are kept (and version-checked), as PyTorch saves them
        self.entries = [_saved_entry(a) if isinstance(a, Tensor) else None for a in args]
        self.nodes: list = []
        self.deferred: dict[int, int] = {}  # position in `nodes` -> index in `results`
        self.results: list[dict] | None = None

    def defer(self) -> None:
        """Drop the values the region's nodes saved; they come back through `recompute`."""
        for pos, n in enumerate(self.nodes):
            if type(n.saved) is dict:  # (nested checkpoints keep their own deferral)
                n.saved = _Deferred(self, len(self.deferred))
                self.deferred[pos] = len(self.deferred)

    def recompute(self) -> list[dict]:
        if self.results is not None:
            return self.results
        for a, e in zip(self.args, self.entries):
            if e is not None and e[1] is not None and e[1][0] != e[2]:
                raise RuntimeError(modified_message(a, e[0].shape, e[1][0], e[2], a._node))
        args = detach_variable(tuple(self.args))
        fresh: list = []
        outer = _rng_state() if self.rng is not None else None
        try:
            if self.rng is not None:
                _set_rng_state(self.rng)
            with enable_grad(), self.context_fn()[1], _collecting(fresh), _no_recorder():
                self.function(*args, **self.kwargs)
        finally:
            if outer is not None:
                _set_rng_state(outer)
        if len(fresh) != len(self.nodes) or any(a.op != b.op for a, b in zip(fresh, self.nodes)):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\nNumber of operations recorded during "
                f"forward: {len(self.nodes)}\nNumber of operations recorded during "
                f"recomputation: {len(fresh)} (or the same number of different operations). The "
                "checkpointed function must run the same operations when it is run again.")
        if self.check:
            bad = [f"recomputed operation {i} ({b.op}): {a.shape} {a.dtype} during forward, "
                   f"{b.shape} {b.dtype} during recomputation"
                   for i, (a, b) in enumerate(zip(self.nodes, fresh))
                   if (a.shape, a.dtype) != (b.shape, b.dtype)]
            if bad:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    "different metadata than during the forward pass.\n" + "\n".join(bad))
        results: list[dict] = [{} for _ in self.deferred]
        for pos, k in self.deferred.items():
            orig, new = self.nodes[pos], fresh[pos]
            saved = new.saved
            if type(saved) is not dict:
                saved = saved.materialize(new)
            # the keys name nodes (the node's inputs, or itself for its output): translate
            # the recomputation's nodes to the original ones, position by position
            ids = {id(new): id(orig)}
            for a, b in zip(new.inputs, orig.inputs):
                ids[id(a)] = id(b)
            results[k] = {ids.get(key, key): v for key, v in saved.items()}
        self.results = results
        # nothing more to recompute: let the inputs and the original nodes go
        self.function = self.args = self.kwargs = self.nodes = None
        return results


@contextlib.contextmanager
def _no_recorder():
    rec = _D.RECORDER
    _D.RECORDER = None
    try:
        yield
    finally:
        _D.RECORDER = rec


_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
_SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, **kwargs: Any) -> Any:
    """Run `function(*args, **kwargs)` without keeping its activations for backward: they
    are recomputed (by running `function` again, with the random state it first saw when
    `preserve_rng_state=True`, the default) when a backward needs them, so gradients are
    those of the plain call. `use_reentrant` should be passed (PyTorch 2.13 warns otherwise
    and takes True); with True, keyword arguments for `function` are refused and inputs
    that do not require grad give PyTorch's warning and outputs without gradient.
    `context_fn` (use_reentrant=False only) returns two context managers, entered around the
    forward and around the recomputation. `determinism_check` is "default" (op, shape and
    dtype of each recomputed node are checked) or "none"; `debug` and `early_stop` are
    accepted and change nothing (the whole function is recomputed)."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if not use_reentrant and determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if not any(a.requires_grad for a in args if isinstance(a, Tensor)):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
            with no_grad():  # PyTorch's reentrant Function: outputs without a graph
                return function(*args)
    if not _D.GRAD_ENABLED or _D.RECORDER is not None:
        # nothing recorded for backward (or a compile trace, which keeps its own values)
        forward_ctx = context_fn()[0] if not use_reentrant else contextlib.nullcontext()
        with forward_ctx:
            return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, _rng_state() if preserve else None,
                   context_fn if not use_reentrant else noop_context_fn,
                   determinism_check == "default")
    with frame.context_fn()[0], _collecting(frame.nodes):
        out = function(*args, **kwargs)
    frame.defer()
    return out


def checkpoint_sequential(functions: Sequence[Callable] | Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run `functions` (a list of callables or an `nn.Sequential`) in order on `input`, split
    into `segments` chunks of `len(functions) // segments`; every chunk but the last is
    `checkpoint`ed. `preserve_rng_state` may be passed as a keyword; PyTorch 2.13 warns when
    `use_reentrant` is not passed (and takes True)."""
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start: int, end: int, functions: Sequence[Callable]) -> Callable:
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    from ..nn.containers import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
