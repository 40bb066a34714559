"""nn.functional: dropout, drawing its mask from the global generator (`fusetorch.rand`)."""
from __future__ import annotations

import warnings

from ...ir import dtypes as dt
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .activation import _maybe_inplace

# (bound once: a per-thread module's attributes are looked up unspecialized)
check_tensor, source, _DISPATCH = D.check_tensor, D.source, D._LOCAL

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_NATIVE = (dt.float32, dt.float64)  # dtypes whose numpy division is the eager op's


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(shape: tuple, input: Tensor, p: float) -> Tensor:
    """Bernoulli(1 - p) draws scaled by 1 / (1 - p) (all zeros for p = 1), as PyTorch builds
    its dropout noise; the product with it is the only op that carries a gradient."""
    if p == 1.0:
        return C.zeros(shape, dtype=input.dtype, device=input.device)
    d, be = input._dtype, input._be
    st = _DISPATCH.state
    if st.RECORDER is None and st.PROFILE is None and d in _NATIVE:
        # eager: the noise carries no gradient, so it is made on the array in one expression
        # (a dropout of small tensors in a loop was five ops, 22 us). The same values as the
        # ops below: rand's draw (its primitive, without the checks of rand's arguments), a
        # comparison, then a division correctly rounded in the input's type
        a = source("random", {"shape": shape, "dtype": d, "dist": "uniform", "low": 0.0,
                              "high": 1.0}, be)._data
        return Tensor._make((a >= p).astype(a.dtype) / (1.0 - p), d, be)
    draws = C.rand(shape, dtype=input.dtype, device=input.device)
    keep = draws >= p  # (a trace records these ops: its mask is drawn every call)
    return F.div(keep.to(input.dtype), 1.0 - p)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) while training;
    the input itself (the same object) when not training or p == 0."""
    check_tensor(input, "dropout", "input", 1)
    _check_p(p)
    if not training or p == 0.0 or input._data.size == 0:
        return input
    out = input * _noise(input._data.shape, input, p)
    return _maybe_inplace(input, out, inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool) -> Tensor:
    """One draw per channel map: the noise has the input's leading (batch,) channel dims and
    ones elsewhere, so whole feature maps are dropped."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input  # (before the rank check, as ATen's feature_dropout)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    out = input * _noise(shape, input, p)
    return _maybe_inplace(input, out, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Dropout of whole channels of [N, C, L] or [C, L] inputs."""
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Dropout of whole channels of [N, C, H, W] inputs (a 3-d input is read as [N, C, L],
    with PyTorch's warning)."""
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace, True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Dropout of whole channels of [N, C, D, H, W] or [C, D, H, W] inputs (other ranks with
    PyTorch's deprecation warning, read as unbatched)."""
    D.check_tensor(input, "dropout3d", "input", 1)
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, input.ndim == 5)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                   shape: tuple) -> Tensor:
    """Dropped values become SELU's negative saturation, then an affine map restores zero mean
    and unit variance; one draw per element of `shape` (broadcast over the input)."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, input * 0.0, inplace)
    alpha = 1.7580993408473766  # -SELU's scale * alpha
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    keep = (C.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    b = (keep - 1.0) * (alpha * a) + alpha * a * p
    out = input * (keep * a) + b
    return _maybe_inplace(input, out, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks, element by element."""
    D.check_tensor(input, "alpha_dropout", "input", 1)
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels: one draw per (sample, channel) of [N, C, *]."""
    D.check_tensor(input, "feature_alpha_dropout", "input", 1)
    _check_p(p)
    if training and p != 0.0 and input.numel() and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, shape)
