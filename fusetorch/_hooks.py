"""`RemovableHandle`, the handle every `register_*_hook` returns (tensors, modules, optimizers).

A leaf module that imports nothing of fusetorch, so the tracer, nn and optim all use it without
importing one another; PyTorch's spelling is `torch.utils.hooks.RemovableHandle`.
"""
from __future__ import annotations


class RemovableHandle:
    """Returned by `register_*_hook`; `handle.remove()` unregisters the hook.

    >>> h = module.register_forward_hook(hook); h.remove()
    """

    _next_id = 0

    def __init__(self, hooks: dict, *, extra_dict=None):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        # tables that mark the hook's id (a module's with_kwargs/always_call flags)
        self.extra_dicts = [] if extra_dict is None else \
            list(extra_dict) if isinstance(extra_dict, (list, tuple)) else [extra_dict]

    def remove(self) -> None:
        self._hooks.pop(self.id, None)
        for table in self.extra_dicts:
            table.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
