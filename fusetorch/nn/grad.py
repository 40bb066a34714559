"""`torch.nn.grad`: the gradients of a convolution with respect to its input or its weight,
given the output's gradient. A convolution is linear in each, so each is the backward of the
convolution of zeros of the asked-for size (exact, and differentiable again)."""
from __future__ import annotations

from ..tracer import autograd as A
from ..tracer import creation as C
from ..tracer.tensor import Tensor
from ._functional import conv as _conv

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(conv, input_size, weight: Tensor, grad_output: Tensor, stride, padding,
                dilation, groups) -> Tensor:
    x = C.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                requires_grad=True)
    with A.enable_grad():
        y = conv(x, weight, None, stride, padding, dilation, groups)
        if tuple(y.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the "
                               f"convolution's output has shape {list(y.shape)}")
        (g,) = A.grad([y], [x], [grad_output], create_graph=grad_output.requires_grad or
                      weight.requires_grad)
    return g


def _weight_grad(conv, input: Tensor, weight_size, grad_output: Tensor, stride, padding,
                 dilation, groups) -> Tensor:
    w = C.zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                requires_grad=True)
    with A.enable_grad():
        y = conv(input, w, None, stride, padding, dilation, groups)
        if tuple(y.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"grad_output has shape {list(grad_output.shape)}, but the "
                               f"convolution's output has shape {list(y.shape)}")
        (g,) = A.grad([y], [w], [grad_output], create_graph=grad_output.requires_grad or
                      input.requires_grad)
    return g


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(_conv.conv1d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(_conv.conv1d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(_conv.conv2d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(_conv.conv2d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(_conv.conv3d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(_conv.conv3d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)
