"""What the distributions added for issue 27 share: `expand` over named parameters, and the
batch shape of parameters given as numbers or tensors."""
from __future__ import annotations

import numbers

from ..tracer.tensor import Size


def batch_shape_of(first, *rest) -> Size:
    """PyTorch's rule: all numbers give an empty batch shape, else the broadcast tensor's."""
    return Size() if all(isinstance(v, numbers.Number) for v in rest) else Size(first.size())


def expand_params(self, cls, names: tuple, batch_shape, _instance=None, event_shape=Size()):
    """A new instance of `cls` whose parameters `names` are `self`'s expanded to batch_shape
    (+ event_shape)."""
    from .distribution import Distribution
    new = self._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    full = tuple(batch_shape) + tuple(event_shape)
    for n in names:
        if n in self.__dict__:
            setattr(new, n, self.__dict__[n].expand(full))
    Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new
