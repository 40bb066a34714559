"""nn.functional: linear and bilinear maps."""
from __future__ import annotations

from ...ir import dtypes as _dt
from ...tracer import autograd as A
from ...tracer import autocast as _ac
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.opmath import half_dtype, in_float32
from ...tracer.tensor import Tensor
from .activation import _owned

# (bound once: per-thread modules' attributes are looked up unspecialized)
apply, check_tensor, _AUTOCAST = D.apply, D.check_tensor, _ac._LOCAL

__all__ = ["linear", "bilinear"]


def _whole(input: Tensor, weight: Tensor, bias: Tensor | None) -> bool:
    """Whether the linear primitive (ir/linear_ops.py) computes this call: real float operands
    of one dtype and device and the shapes it takes. Other calls (a 1-d input, a broadcast
    bias, half precision, mismatched shapes, which raise PyTorch's errors) are the composed
    form, the same primitives the composition has."""
    d, be = input._dtype, input._be
    # (the arrays' shapes: a Size per `.shape` look was ~1 us of a loop's Linear of a row)
    xs, ws = input._data.shape, weight._data.shape
    if d is not _dt.float32 and d is not _dt.float64 or weight._dtype is not d or \
            weight._be is not be or len(xs) < 2 or len(ws) != 2 or xs[-1] != ws[1]:
        return False
    return bias is None or bias._dtype is d and bias._be is be and \
        bias._data.shape == (ws[0],)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, for input [..., in] and weight [out, in]."""
    check_tensor(input, "linear", "input", 1)
    check_tensor(weight, "linear", "weight", 2)
    if bias is not None:
        check_tensor(bias, "linear", "bias", 3)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("linear", linear, (input, weight, bias), {})
    if _whole(input, weight, bias):
        out = apply("linear", [input, weight] if bias is None else [input, weight, bias], {})
    elif half_dtype(input) and input._dtype is weight._dtype and (
            bias is None or bias._dtype is input._dtype):
        # ATen's half gemm: float32 products and sums, the bias added there, one rounding
        out = in_float32(linear, input, weight, bias)
    else:
        out = _owned(F.matmul(input, F.t(weight)), input, weight)
        if bias is not None:
            out = out + bias
    if input._data.ndim == 2 and weight._data.ndim == 2:
        # PyTorch's grad_fn: addmm(bias, input, weight.t()) or mm(input, weight.t())
        if bias is None:
            return A.label_recorded(out, "MmBackward0", input, weight)
        return A.label_recorded(out, "AddmmBackward0", bias, input, weight)
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]."""
    D.check_tensor(input1, "bilinear", "input1", 1)
    D.check_tensor(input2, "bilinear", "input2", 2)
    D.check_tensor(weight, "bilinear", "weight", 3)
    if input1.ndim == 0 or input2.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    o, i, j = weight.shape
    if input1.shape[-1] != i:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {i}")
    if input2.shape[-1] != j:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {j}")
    # ATen's _trilinear rounds its half products once (float32 sums), then adds the bias
    out = in_float32(_bilinear_form, input1, input2, weight)
    if bias is not None:
        out = out + bias
    return out


def _bilinear_form(input1: Tensor, input2: Tensor, weight: Tensor) -> Tensor:
    o, i, j = weight.shape
    # x1 @ W as one matmul: W rearranged to [i, o * j]
    w = F.reshape(F.permute(weight, 1, 0, 2), (i, o * j))
    t = F.reshape(F.matmul(input1, w), tuple(input1.shape[:-1]) + (o, j))
    terms = t * F.unsqueeze(input2, -2)
    return F.sum(terms, -1, dtype=terms.dtype)  # int32 stays int32, as in PyTorch
