"""torch.nn._functions' CrossMapLRN2d: the legacy (Lua torch) cross-channel LRN, an
autograd.Function as in PyTorch, with its forward and backward computed step for step as
PyTorch's Python does, so the values match bit for bit (in the same order of float operations;
`pow` with a non-integral exponent is numpy's, which may round an ulp apart from ATen's).

Its window is quirky and reproduced: the forward's running sum over channels starts with the
first `pre_pad = int((size - 1) / 2 + 1)` squares and, from channel `pre_pad + 1` on, removes
square `c - pre_pad`, so the square of channel 0 is never removed (every channel's scale
includes it); the backward sums `grad * output / scale` over channels [c - inversePrePad,
c + size - 1 - inversePrePad] with `inversePrePad = int(size - (size - 1) / 2)`, a window one
channel left of the forward's. It is PyTorch's backward, not the forward's derivative."""
from __future__ import annotations

from ...tracer import functional as F
from ...tracer.function import Function
from ...tracer.tensor import Tensor


class CrossMapLRN2d(Function):
    @staticmethod
    def forward(ctx, input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                k: float = 1) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        channels = input.size(1)
        square = input * input  # (ATen's pow(x, 2) is x * x)
        pre_pad = int((size - 1) / 2 + 1)
        scale = F.mul(square[:, 0], 0.0) if channels else square[:, :0]
        for c in range(min(pre_pad, channels)):
            scale = scale + square[:, c]
        scales = [scale]
        for c in range(1, channels):
            if c < channels - pre_pad + 1:
                scale = scale + square[:, c + pre_pad - 1]
            if c > pre_pad:
                scale = scale - square[:, c - pre_pad]
            scales.append(scale)
        scale = F.stack(scales, 1) if channels else F.mul(input, 0.0)
        scale = scale * (alpha / size) + k
        output = scale ** (-beta) * input
        ctx.scale = scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        input, output = ctx.saved_tensors
        size, scale = ctx.size, ctx.scale
        channels = input.size(1)
        if size - 1 < int(size - (size - 1) / 2):  # PyTorch's narrow of its padded buffer
            raise RuntimeError(f"start ({int(size - (size - 1) / 2)}) + length ({channels}) "
                               f"exceeds dimension size ({channels + size - 1}).")
        cache_ratio_value = 2 * ctx.alpha * ctx.beta / size
        inverse_pre_pad = int(size - (size - 1) / 2)
        grad_input = scale ** (-ctx.beta) * grad_output
        ratio = grad_output * output / scale
        zero = F.mul(input[:, :1], 0.0)
        padded = F.cat([zero] * inverse_pre_pad + [ratio] +
                       [zero] * (size - 1 - inverse_pre_pad), 1)
        accum = F.mul(input[:, 0], 0.0)
        for c in range(size - 1):
            accum = accum + padded[:, c]
        rows = []
        for c in range(channels):
            accum = accum + padded[:, c + size - 1]
            rows.append(grad_input[:, c] + (-cache_ratio_value) * input[:, c] * accum)
            accum = accum - padded[:, c]
        grad = F.stack(rows, 1) if channels else grad_input
        return grad, None, None, None, None
