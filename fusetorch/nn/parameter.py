"""`nn.Parameter`: a leaf tensor that a Module registers as one of its parameters."""
from __future__ import annotations

from ..tracer.tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it to a Module attribute registers it.
    Shares memory with `data`; requires grad unless told otherwise.

    >>> w = Parameter(fusetorch.randn(3, 2))
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..tracer.creation import empty
            data = empty(0)
        p = Tensor.__new__(cls)
        p._data, p._dtype, p._be = data._data, data._dtype, data._be
        p._grad = None
        p._node = None
        p._vc = None
        p._base = None
        p._requires_grad = False
        p.requires_grad = requires_grad
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # all done in __new__ (Tensor.__init__ is the legacy constructor)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from ..tracer.functional import clone
        from ..tracer.autograd import no_grad
        with no_grad():
            p = Parameter(clone(self), self.requires_grad)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (Tensor.detach(self), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """`nn.Buffer(t)`: marks a tensor to be registered as a buffer when assigned to a Module."""

    def __new__(cls, data: Tensor, *, persistent: bool = True):
        b = Tensor.__new__(cls)
        b._data, b._dtype, b._be = data._data, data._dtype, data._be
        b._grad = b._node = b._vc = b._base = None
        b._requires_grad = False
        b.persistent = persistent
        return b

    def __init__(self, data: Tensor, *, persistent: bool = True):
        pass
