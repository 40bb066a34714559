"""`autograd.Function`: custom ops whose backward is the user's Python code.

    class MyReLU(Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

`apply` runs `forward` without recording and records one `custom` node. Its VJP rule emits one
`custom_vjp` node per input; the first of them to run calls the user's `backward` once for that
cotangent and the others read the cached result. Several differentiable outputs are one packed
1-d output of the node and the returned tensors are recorded views of it (`record_outputs`), so
their cotangents arrive together and `backward` runs once with all of them.
"""
from __future__ import annotations

from . import dispatch as D
from .autograd import (FREED, _SECOND_BACKWARD, _saved_entry, enable_grad, label, no_grad,
                       record)
from .tensor import Tensor
from . import autograd_modes as _modes
from . import forward_ad as _fwd


class _Packed:
    """save_for_backward's tensors as saved-tensor hooks packed them."""

    __slots__ = ("unpack", "items")

    def __init__(self, unpack, items: list):
        self.unpack, self.items = unpack, items


class FunctionCtx:
    """The `ctx` of a custom Function: saved tensors and flags shared by forward and backward."""

    def __init__(self, fn: type, args: tuple):
        self._fn = fn
        self.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        self._saved = ()
        self._grads_for = None
        self._grads = None
        self._materialize = True
        self._slots = None  # several outputs: how each one's cotangent is cut from the packed one
        self._received = None  # set_materialize_grads(False): the outputs that got a gradient
        self.non_differentiable = ()

    def save_for_backward(self, *tensors) -> None:
        hooks = _modes.current_hooks()
        if hooks is not None:  # saved-tensor hooks: only what `pack` returns is kept
            pack, unpack = hooks
            self._saved = _Packed(unpack, [(_modes.pack_one(pack, t), tuple(t.shape), t._dtype)
                                           if isinstance(t, Tensor) else (t, None, None)
                                           for t in tensors])
            return
        self._saved = tuple(_saved_entry(t) if isinstance(t, Tensor) else (t, None, 0, t)
                            for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is FREED:
            raise RuntimeError(_SECOND_BACKWARD)
        if type(self._saved) is _Packed:
            unpack = self._saved.unpack
            with no_grad():
                return tuple(p if shape is None else _modes.unpack_one(unpack, p, shape, dtype)
                             for p, shape, dtype in self._saved.items)
        out = []
        for _data, vc, version, t in self._saved:
            if vc is not None and vc[0] != version:
                from .autograd import modified_message
                raise RuntimeError(modified_message(t, _data.shape, vc[0], version, t._node))
            out.append(t)
        return tuple(out)

    def mark_non_differentiable(self, *outputs) -> None:
        self.non_differentiable = outputs

    def mark_dirty(self, *tensors) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value

    def _free(self) -> None:
        self._saved = FREED

    def _cotangents(self, g: Tensor) -> tuple:
        """One cotangent per output of forward, cut from the node's (packed) cotangent `g`:
        zeros for an output without a gradient (None under set_materialize_grads(False)),
        None for a non-tensor output."""
        if self._slots is None:
            return (g,)
        out = []
        for slot in self._slots:
            if slot is None:
                out.append(None)
            elif slot[0] == "whole":
                out.append(g)
            elif slot[0] == "zeros":  # not differentiable
                from .creation import zeros
                out.append(zeros(slot[1], dtype=slot[2]) if self._materialize else None)
            elif self._received is not None and len(out) not in self._received:
                out.append(None)
            else:
                _, start, size, shape, dtype = slot
                piece = g[start:start + size].reshape(shape)
                out.append(piece if piece._dtype == dtype else piece.to(dtype))
        return tuple(out)

    def _input_grads(self, g: Tensor) -> list:
        """The user's backward for cotangent `g`, called once per backward run."""
        grads = self._cotangents(g)
        if self._received is not None:
            self._received.clear()
        res = self._fn.backward(self, *grads)
        res = res if isinstance(res, tuple) else (res,)
        n = len(self.needs_input_grad)
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]  # (PyTorch drops trailing Nones beyond the inputs)
        if len(res) != n:
            raise RuntimeError(
                f"function {self._fn.__name__}Backward returned an incorrect number of "
                f"gradients (expected {len(self.needs_input_grad)}, got {len(res)})")
        return [self._fitted(i, r) for i, r in enumerate(res)]

    def _fitted(self, i: int, r):
        """PyTorch's check of a returned gradient (engine's validate_outputs): one broadcast
        over an input's shape is summed back to it, other shapes are an error."""
        if not isinstance(r, Tensor) or not self.needs_input_grad[i]:
            return r
        want = self._in_shapes[i]
        if tuple(r.shape) == want:
            return r
        got = tuple(r.shape)
        pad = len(got) - len(want)
        if pad < 0 or any(w != 1 and w != s for w, s in zip(want, got[pad:])):
            raise RuntimeError(f"Function {self._fn.__name__}Backward returned an invalid "
                               f"gradient at index {i} - got {list(got)} but expected shape "
                               f"compatible with {list(want)}")
        return r.sum_to_size(want) if want else r.sum()

    def input_grad(self, g_array, index: int, shape: tuple, dtype):
        """Gradient array for input `index` (eager backward: runs without recording)."""
        if self._grads_for is not g_array:
            g = Tensor._make(g_array, self._out_dtype, self._out_be)
            with no_grad():
                self._grads = [r._data if isinstance(r, Tensor) else r
                               for r in self._input_grads(g)]
            self._grads_for = g_array
        r = self._grads[index]
        if r is None:
            return self._out_be.xp.zeros(shape, dtype=g_array.dtype)
        return r

    def input_grad_recorded(self, g: Tensor, index: int) -> Tensor:
        """Gradient tensor for input `index`, recorded (create_graph=True)."""
        if self._grads_for is not g:
            with enable_grad():
                self._grads = self._input_grads(g)
            self._grads_for = g
        r = self._grads[index]
        if r is None:
            from .creation import zeros
            return zeros(self._in_shapes[index], dtype=g.dtype)
        return r


class Function:
    """Base class of custom autograd ops: define static `forward(ctx, ...)` and
    `backward(ctx, *grad_outputs)`, call `YourFunction.apply(...)`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if D.RECORDER is not None and D.RECORDER.strict:
            from .trace import user_source
            D.RECORDER.graph_break(f"custom Function {cls.__name__} at {user_source()}")
        if cls.setup_context is not Function.setup_context:
            # forward(*args) without ctx, then setup_context(ctx, inputs, output): the inputs
            # with forward's defaults bound, as PyTorch hands them (and backward answers them)
            import inspect
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
            ctx = FunctionCtx(cls, args)
            with no_grad():
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
        else:
            ctx = FunctionCtx(cls, args)
            with no_grad():
                out = cls.forward(ctx, *args, **kwargs)
        if not (D.GRAD_ENABLED and any(ctx.needs_input_grad)):
            return out
        if isinstance(out, Tensor):
            if any(out is t for t in ctx.non_differentiable):
                return out
            return record_outputs(cls, ctx, args, [out], (0,))[0]
        if not isinstance(out, tuple):
            return out  # (a list is one non-tensor output to PyTorch: not differentiated)
        marked = {id(t) for t in ctx.non_differentiable}
        diff = tuple(i for i, o in enumerate(out) if isinstance(o, Tensor) and id(o) not in marked
                     and (o._dtype.is_floating_point or o._dtype.is_complex))
        if not diff:
            return tuple(out)
        outs = record_outputs(cls, ctx, args, list(out), diff)
        cut = ctx._slots or (("whole",),)
        ctx._slots = tuple(cut[diff.index(i)] if i in diff else
                           ("zeros", tuple(o.shape), o._dtype) if isinstance(o, Tensor) else None
                           for i, o in enumerate(outs))
        return tuple(outs)


def record_outputs(fn: type, ctx: FunctionCtx, args: tuple, outs: list, diff: tuple) -> list:
    """`outs` with the differentiable ones (positions `diff`) recorded as the outputs of one
    `custom` node over the tensors in `args`, whose backward is `fn.backward(ctx, ...)`.
    Several are packed into one 1-d output (in their promoted dtype) and returned as views of
    it, recorded, so their cotangents arrive at the node as one; `ctx._slots` says how to cut
    them apart again. A saved tensor that forward returned is saved as the recorded output, as
    PyTorch unpacks it, so a backward that reads it differentiates through this node again
    (the double-backward tutorial's trick of returning intermediates as outputs)."""
    returned = list(outs)
    outs = list(outs)
    if len(diff) == 1:
        node_out = outs[diff[0]]
        if node_out._node is not None or any(node_out is a for a in args):
            from .tensor import _alias
            node_out = _alias(node_out)  # a new node even if forward returned x itself
        outs[diff[0]] = node_out
    else:
        from ..ir.dtypes import promote_types
        dtype = outs[diff[0]]._dtype
        for i in diff[1:]:
            dtype = promote_types(dtype, outs[i]._dtype)
        be = outs[diff[0]]._be
        ctx._slots, start = [], 0
        for i in diff:
            o = outs[i]
            ctx._slots.append(("cut", start, o.numel(), tuple(o.shape), o._dtype))
            start += o.numel()
        with no_grad():
            packed = be.xp.concatenate([outs[i].to(dtype)._data.reshape(-1) for i in diff])
        node_out = Tensor._make(packed, dtype, be)
    ctx._out_dtype, ctx._out_be = node_out._dtype, node_out._be
    ctx._in_shapes = tuple(tuple(a.shape) if isinstance(a, Tensor) else () for a in args)
    tensors = [a for a in args if isinstance(a, Tensor)]
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    record("custom", tensors, {"fn": fn, "positions": positions, "dtype": node_out._dtype},
           node_out)
    node = node_out._node
    node.saved = {("context", id(node)): (ctx, None, 0, None)}
    if _fwd.LEVEL is not None:
        _fwd.propagate_custom(node, ctx, args, outs, diff)
    if ctx._slots is not None:
        for i, (_, start, size, shape, dtype) in zip(diff, ctx._slots):
            view = node_out[start:start + size].reshape(shape)  # recorded
            view = view if view._dtype == dtype else view.to(dtype)
            if not ctx._materialize:
                ctx._received = ctx._received or set()
                view = _Seen.apply(view, ctx, i)
            outs[i] = label(view, fn.__name__ + "Backward", *tensors)
    swap = {id(returned[i]): outs[i] for i in diff if outs[i] is not returned[i]}
    if swap and type(ctx._saved) is tuple:
        ctx._saved = tuple(_saved_entry(swap[id(e[3])]) if id(e[3]) in swap else e
                           for e in ctx._saved)
    return outs


class _Seen(Function):
    """x itself; its backward notes that output `k` of a Function got a gradient, so that under
    set_materialize_grads(False) the others' cotangents are None."""

    @staticmethod
    def forward(ctx, x, owner, k):
        ctx.owner, ctx.k = owner, k
        return x

    @staticmethod
    def backward(ctx, g):
        ctx.owner._received.add(ctx.k)
        return g, None, None
