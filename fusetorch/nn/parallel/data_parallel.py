"""`nn.DataParallel`: PyTorch's single-process multi-GPU wrapper.

With no GPU PyTorch's DataParallel keeps no devices and calls the wrapped module directly;
fusetorch does the same everywhere: it never splits a batch across devices (one device runs
the whole batch, the same values). Data-parallel training across processes is
`DistributedDataParallel`.
"""
from __future__ import annotations

from ..module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps `module` (reached as `.module`, as scripts and state_dict keys expect:
    `module.<name>`); `forward` calls it on the whole batch."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """The functional form: `module(*inputs, **module_kwargs)` on one device."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))
