"""`torch.compiler`: the switches scripts set around compilation, over fusetorch.compile
(`compile` is fusetorch's; `disable` marks a function to run eagerly; `is_compiling` says
whether a fusetorch.compile trace is recording; `reset` drops every compiled variant).
`explain` is fusetorch's own: why each graph recently ran compiled or interpreted."""
from __future__ import annotations

import functools
from typing import Callable

from .compile import compile  # noqa: A004  (torch.compiler.compile is torch.compile)

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends",
           "reset", "set_stance"]


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """`fn` run eagerly, never compiled: called inside a fusetorch.compile trace it is a graph
    break (the compiled function then runs eagerly, with one warning), as in PyTorch."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        from .tracer import dispatch as D
        rec = D.RECORDER
        if rec is not None and (rec.strict or (rec.parent is not None and rec.parent.strict)):
            rec.graph_break(f"torch.compiler.disable({getattr(fn, '__name__', 'fn')})"
                            + (f": {reason}" if reason else ""))
        return fn(*args, **kwargs)
    return eager


def is_compiling() -> bool:
    """Whether the calling thread is inside a fusetorch.compile trace."""
    from .tracer import dispatch as D
    return D.RECORDER is not None


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    from .tracer import dispatch as D
    return D.RECORDER is not None and bool(getattr(D.RECORDER, "exporting", False))


def reset() -> None:
    """Forget compiled variants: the next call of every compiled function traces again."""
    from .compile import LIVE
    for fn in list(LIVE):
        fn._variants.clear()
        fn._last = None


def explain(kind: str | None = None) -> str:
    """Why each graph recently ran as it did, one line per holder, the most recent last:

        compile 'step' (train.py:12) ((64, 784),): compiled: 3 kernels and 2 extern steps
        backward #4 (31 nodes): interpreted: inputs 96 elements < POLICY.min_elements 4096
        composite fusetorch.nn.functional.linear ((1, 32), (16, 32), (16,)): interpreted: ...
        eager_kernel erf ((256, 256), (1024, 4), dtype('float32')): compiled: a kernel ...
        fused_optimizer Adam param group 0: compiled: one fused kernel call per dtype

    The holders: `compile` (fusetorch.compile, per function and argument shapes; its joint
    backward program too), `composite` (eager composites, `@composite`, per function and
    shapes), `backward` (eager autograd's cached backward graphs), `eager_kernel` (eager
    primitives' kernels, per layout), `fused_optimizer` (an optimizer's fused step, per
    parameter group). `kind` keeps one of them. Each says its latest decision (compiled
    kernels, or the reference: interpreted, numpy, plain eager, Python's loop) and why: a use
    before the holder's Nth-use rule (`POLICY.backward_compile_at`, `composite_capture_at`,
    `eager_kernel_at`, `fused_step_at`), a `fusetorch._policy.POLICY` threshold or switch, a
    limit reached, a build in progress or failed, no C compiler. Made from codes the holders noted (the last
    `_policy.DECISIONS_KEPT`); a program's state is asked now. (PyTorch's
    `torch._dynamo.explain` reports one function's graph breaks; here graph breaks are one of
    the reasons.)"""
    from ._policy import explain as _explain
    return _explain(kind)


def allow_in_graph(fn: Callable) -> Callable:
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    return fn


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: fusetorch does not capture CUDA graphs."""


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    return ["fusetorch"]


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend=None):
    """Accepted for scripts that set it; fusetorch's guards and retracing do not change."""
    if stance not in ("default", "force_eager", "eager_on_recompile", "fail_on_recompile"):
        raise RuntimeError(f"invalid torch.compiler.set_stance stance: {stance}")
    return _Stance()


class _Stance:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __call__(self, fn: Callable) -> Callable:
        return fn
