"""Module backward hooks (`register_full_backward_hook`, `register_full_backward_pre_hook`), as
PyTorch's `torch.utils.hooks.BackwardHook` does them: the module's output and its tensor inputs
pass through identity custom Functions whose backward sees the gradients. The output's identity
receives grad_output first (the pre-hooks may replace it); the inputs' identities receive
grad_input (the full hooks see it with grad_output and may replace it).

fusetorch's custom Functions have one output, so each input gets its own identity node and the
hooks run once the last input's gradient has arrived. An input whose gradient never arrives
(unused by forward) counts as zeros, as PyTorch's materialized gradients: the hooks then run at
the end of the backward pass, when its gradient can no longer be replaced."""
from __future__ import annotations

import warnings

from ..tracer import dispatch as D
from ..tracer.autograd import queue_callback
from ..tracer.creation import zeros_like
from ..tracer.function import Function
from ..tracer.tensor import Tensor


class _Identity(Function):
    @staticmethod
    def forward(ctx, on_grad, index, t):
        ctx.on_grad, ctx.index = on_grad, index
        return t.view_as(t)

    @staticmethod
    def backward(ctx, grad):
        return None, None, ctx.on_grad(ctx.index, grad)


class _Call:
    """One forward call's hooks: grad_output from the output's identity, grad_input from the
    inputs' identities, the full hooks once grad_input is complete."""

    def __init__(self, module, args: tuple):
        self.module = module
        self.n_args = len(args)
        self.waiting = {i for i, a in enumerate(args)
                        if isinstance(a, Tensor) and a.requires_grad}
        self.zeros = {i: a for i, a in enumerate(args) if i in self.waiting}
        self.grad_input: list = [None] * self.n_args
        self.grad_output = None
        self.last = None  # the input whose gradient arrived last
        self.done = False

    def inputs(self, args: tuple) -> tuple:
        return tuple(_Identity.apply(self._on_input, i, a) if i in self.waiting else a
                     for i, a in enumerate(args))

    def output(self, out):
        if not isinstance(out, Tensor):
            raise NotImplementedError(
                f"backward hooks on {type(self.module).__name__}: fusetorch supports them on "
                "modules whose forward returns one Tensor")
        if not out.requires_grad:
            return out
        return _Identity.apply(self._on_output, 0, out)

    def _on_output(self, _index: int, grad: Tensor) -> Tensor:
        grads = (grad,)
        for hook in list(self.module._backward_pre_hooks.values()):
            r = hook(self.module, grads)
            if r is not None:
                grads = _checked(r, 1, "backward pre hook")
        self.grad_output = grads
        if not self.waiting:
            if self.module._backward_hooks:
                warnings.warn(
                    "Full backward hook is firing when gradients are computed with respect to "
                    "module outputs since no inputs require gradients. See "
                    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn."
                    "Module.register_full_backward_hook for more details.", stacklevel=2)
            self._run_full_hooks()
        else:
            queue_callback(self._at_end)
        return grads[0]

    def _on_input(self, index: int, grad: Tensor) -> Tensor:
        self.grad_input[index] = grad
        self.last = index
        self.waiting.discard(index)
        if not self.waiting and not self.done:
            self._run_full_hooks()
        return self.grad_input[index]

    def _at_end(self) -> None:
        if self.done:
            return
        for i in self.waiting:
            self.grad_input[i] = zeros_like(self.zeros[i])
        self.last = None  # every gradient has flowed on: none can be replaced now
        self._run_full_hooks()

    def _run_full_hooks(self) -> None:
        self.done = True
        given = tuple(self.grad_input)
        grads = given
        for hook in list(self.module._backward_hooks.values()):
            r = hook(self.module, grads, self.grad_output)
            if r is not None:
                grads = _checked(r, self.n_args, "backward hook")
        passed = [i for i in range(self.n_args) if i != self.last and given[i] is not None]
        if any(grads[i] is not given[i] for i in passed):
            # those inputs' identities have returned already: their gradients have flowed on
            raise NotImplementedError(
                f"a backward hook of {type(self.module).__name__} replaced the gradient of an "
                "input other than the last one to receive its gradient: fusetorch replaces "
                "grad_input only for modules with one tensor input requiring grad")
        self.grad_input = list(grads)


def _checked(r, n: int, what: str) -> tuple:
    r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
    if len(r) != n:
        raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                           f"{len(r)}, but expected {n}" if what == "backward hook" else
                           f"Backward pre hook returned an invalid number of grad_output, got "
                           f"{len(r)}, but expected {n}")
    return r


def start(module, args: tuple) -> _Call | None:
    """The hooks' state for one call of `module`, which has backward hooks (Module.__call__
    asks), or None when gradients are off (nothing to wire)."""
    if not D.GRAD_ENABLED:
        return None
    return _Call(module, args)
