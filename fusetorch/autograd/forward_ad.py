"""`torch.autograd.forward_ad`: dual tensors carrying tangents through eager ops.

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        primal_out, tangent_out = fwAD.unpack_dual(f(x))

Each op's tangent is computed as it runs, from the op's VJP rule (tracer/forward_ad.py).
"""
from __future__ import annotations

from typing import NamedTuple

from ..tracer import forward_ad as _fwd
from ..tracer.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


def enter_dual_level() -> int:
    """Open the (one) dual level; returns its index."""
    return _fwd.enter()


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: the tangents of its dual tensors are gone."""
    _fwd.exit_level(level)


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A tensor equal to `tensor` whose forward derivative is `tangent` (of its shape)."""
    return _fwd.make_dual(tensor, tangent, level)


class UnpackedDualTensor(NamedTuple):
    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent): tangent None for a tensor that depends on no dual tensor."""
    if not isinstance(tensor, Tensor):
        raise TypeError("unpack_dual(): expected a Tensor")
    return UnpackedDualTensor(*_fwd.tangent_of(tensor))


class dual_level:
    """Context manager of one forward-AD level (levels do not nest)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *args: object) -> None:
        exit_dual_level()
