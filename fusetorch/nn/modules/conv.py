"""nn layers: Conv1d/2d/3d and ConvTranspose1d/2d, initialised as PyTorch's
_ConvNd.reset_parameters (a transposed weight is [in, out/groups, *k], so its fan_in is
out/groups * prod(k), as in PyTorch)."""
from __future__ import annotations


from ...tracer import creation as C
from ...tracer.tensor import Tensor
from .. import init
from .._functional.conv import conv1d, conv2d, conv3d
from .._functional.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from .._functional.padding import pad
from ..module import Module
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from ...tracer.autograd import no_grad

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(v, n: int) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """Shared by Conv1d/Conv2d: argument checks, parameters, initialisation and repr."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple,
                 padding, dilation: tuple, transposed: bool, output_padding: tuple, groups: int,
                 bias: bool, padding_mode: str, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                # PyTorch prints a set here; one fixed order keeps the message reproducible
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError("padding_mode must be one of {'circular', 'replicate', 'reflect', "
                             f"'zeros'}}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument for padding_mode != 'zeros': (left, right) pairs, last dim first
        if isinstance(padding, str):
            rev = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    rev[2 * i] = total // 2
                    rev[2 * i + 1] = total - total // 2
        else:
            rev = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + tuple(kernel_size)
        self.weight = Parameter(C.empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(C.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = {1: conv1d, 2: conv2d, 3: conv3d}[self._nd]
        if self.padding_mode != "zeros":
            x = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(x, weight, bias, self.stride, (0,) * self._nd, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-d convolution over [N, C_in, L] (or [C_in, L]); weight [C_out, C_in/groups, k]."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 1), _ntuple(stride, 1),
                         padding if isinstance(padding, str) else _ntuple(padding, 1),
                         _ntuple(dilation, 1), False, (0,), groups, bias, padding_mode,
                         device=device, dtype=dtype)


class Conv2d(_ConvNd):
    """2-d convolution over [N, C_in, H, W] (or [C_in, H, W]); weight
    [C_out, C_in/groups, kh, kw]."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 2), _ntuple(stride, 2),
                         padding if isinstance(padding, str) else _ntuple(padding, 2),
                         _ntuple(dilation, 2), False, (0, 0), groups, bias, padding_mode,
                         device=device, dtype=dtype)


class Conv3d(_ConvNd):
    """3-d convolution over [N, C_in, D, H, W] (or [C_in, D, H, W]); weight
    [C_out, C_in/groups, kd, kh, kw]."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 3), _ntuple(stride, 3),
                         padding if isinstance(padding, str) else _ntuple(padding, 3),
                         _ntuple(dilation, 3), False, (0, 0, 0), groups, bias, padding_mode,
                         device=device, dtype=dtype)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 output_padding, groups: int, bias: bool, dilation, padding_mode: str,
                 device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        n = self._nd
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n),
                         _ntuple(padding, n), _ntuple(dilation, n), True,
                         _ntuple(output_padding, n), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """output_padding for a requested output_size, as PyTorch's _ConvTransposeNd does."""
        if output_size is None:
            return self.output_padding
        n = self._nd
        lead = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {lead + n} elements (got {len(output_size)})")
        lo = [(input.shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d]
              + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(n)]
        for size, a, b in zip(output_size, lo, hi):
            if size < a or size > b:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {lo} to {hi} (for an input of "
                                 f"{input.shape[lead:]})")
        return tuple(int(s) - a for s, a in zip(output_size, lo))

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        fn = {1: conv_transpose1d, 2: conv_transpose2d, 3: conv_transpose3d}[self._nd]
        if self._nd == 1 and input.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to "
                               f"conv_transpose1d, but got input of size: {list(input.shape)}")
        output_padding = self._output_padding(input, output_size)
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over [N, C_in, L] (or [C_in, L]); weight
    [C_in, C_out/groups, k]."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device=device, dtype=dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over [N, C_in, H, W] (or [C_in, H, W]); weight
    [C_in, C_out/groups, kh, kw]; forward(input, output_size=None) picks output_padding for a
    requested size."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device=device, dtype=dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over [N, C_in, D, H, W] (or [C_in, D, H, W]); weight
    [C_in, C_out/groups, kd, kh, kw]."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode, device=device, dtype=dtype)


# ---------------------------------------------------------------- lazy convolutions

class _LazyConvMixin(LazyModuleMixin):
    """in_channels read from the first input (its dim 1, or dim 0 unbatched)."""

    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        n = self._nd
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        with no_grad():
            self.in_channels = input.shape[1] if input.dim() == n + 2 else input.shape[0]
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_class(base: type, __init__) -> type:
    return type(f"Lazy{base.__name__}", (_LazyConvMixin, base), {
        "__init__": __init__, "cls_to_become": base, "__module__": __name__,
        "__doc__": f"""A {base.__name__} whose in_channels is read from the first input; it
    becomes a {base.__name__} then."""})


def _lazy_conv(base: type) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        # the mixin's __init__ registers the hook, then runs base's with no channels
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups,
                                 False, padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)
    return _lazy_class(base, __init__)


def _lazy_conv_transpose(base: type) -> type:
    # PyTorch's transposed layers take output_padding before groups and dilation after bias
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding,
                                 groups, False, dilation, padding_mode, device=device,
                                 dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)
    return _lazy_class(base, __init__)


LazyConv1d, LazyConv2d, LazyConv3d = map(_lazy_conv, (Conv1d, Conv2d, Conv3d))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = map(
    _lazy_conv_transpose, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))
