"""nn layers: Identity, Linear, Bilinear, with PyTorch's default initialisation."""
from __future__ import annotations

import math

from ...tracer import creation as C
from ...tracer.tensor import Tensor
from .. import init
from .._functional.linear import bilinear, linear
from ..module import Module
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from ...tracer.autograd import no_grad

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x @ weight.T + bias, weight [out_features, in_features].

    Initialised as PyTorch does: weight ~ kaiming_uniform_(a=sqrt(5)), i.e.
    U(-1/sqrt(in), 1/sqrt(in)), and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(C.empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(C.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is read from the first input it sees; it becomes a Linear
    then.

    >>> m = LazyLinear(3); m(fusetorch.ones(2, 5)).shape
    torch.Size([2, 3])
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class Bilinear(Module):
    """y = x1^T A x2 + b with weight A [out_features, in1_features, in2_features]; weight and
    bias ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(C.empty((out_features, in1_features, in2_features), dtype=dtype,
                                        device=device))
        if bias:
            self.bias = Parameter(C.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's `out_proj`: a Linear under its own name, as PyTorch prints it (in
    PyTorch the class only keeps quantization tools from swapping it); not exported by nn."""
