"""`torch.nn.utils.convert_conv2d_weight_memory_format` and its 3-d form: conv weights laid out
in a memory format (channels_last), for models run in that format."""
from __future__ import annotations

from ..module import Module
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Module, memory_format, kinds: tuple) -> Module:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format) -> Module:
    """Every Conv2d/ConvTranspose2d weight of `module` in `memory_format`; returns `module`."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Module, memory_format) -> Module:
    """Every Conv3d/ConvTranspose3d weight of `module` in `memory_format`; returns `module`."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
