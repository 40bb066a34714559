"""Module attributes whose value belongs to the calling thread.

PyTorch keeps grad mode, inference mode, autocast and the profiler's recording per thread; here
they were module globals, so `no_grad()` in one thread turned autograd off in all. A module
calls `per_thread(__name__, NAME=default, ...)`: its class becomes a ModuleType subclass with a
property per name, backed by one state object per thread, so `D.GRAD_ENABLED` reads and
`D.GRAD_ENABLED = False` writes keep their spelling everywhere and act on the calling thread
only; a new thread starts from the defaults, as in PyTorch. The module's own hot paths read
`LOCAL.state.NAME` (the returned `threading.local`): one thread-local lookup, then plain slots.

Why `threading.local` and not `contextvars`: a ContextVar is also per asyncio task, and Jupyter
kernels run cells as tasks: `torch.set_grad_enabled(False)` in one cell was gone in the next
under some ipykernel versions (ipykernel issues 749, 1457). PyTorch's state is per thread.

Values are treated as immutable: a dict-valued state is replaced, never mutated in place, since
a default value is shared by every thread.
"""
from __future__ import annotations

import sys
import threading
import types


def per_thread(module_name: str, **defaults) -> threading.local:
    """Makes each `name=default` a per-thread attribute of module `module_name`; returns the
    thread-local whose `.state` holds the calling thread's values as attributes."""
    module = sys.modules[module_name]
    names = tuple(defaults)

    class State:
        __slots__ = names

        def __init__(self):
            for name, value in defaults.items():
                setattr(self, name, value)

    class Local(threading.local):
        def __init__(self):  # (run once in each thread, at its first access)
            self.state = State()

    local = Local()
    namespace = {}
    for name in names:
        namespace[name] = property(
            lambda _m, name=name: getattr(local.state, name),
            lambda _m, value, name=name: setattr(local.state, name, value))
        module.__dict__.pop(name, None)  # (a stale global would mislead readers)
    module.__class__ = type(f"PerThread<{module_name}>", (type(module),), namespace)
    return local
