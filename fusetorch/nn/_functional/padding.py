"""nn.functional: pad (constant, reflect, replicate, circular).

`pad` lists (left, right) pairs starting from the last dimension, as in PyTorch. Constant
padding writes the input into a filled tensor (one `index_put`, whose gradient is a slice);
the other modes gather with an index computed from the shapes (`index_select`), so their
gradients add back into the positions that were copied.
"""
from __future__ import annotations

import numpy as np

from ...tracer import autograd as A
from ...tracer import creation as C
from ...tracer import autocast as _ac
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor

_AUTOCAST = _ac._LOCAL  # (bound once: a per-thread module's attributes read slowly)

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad `input`: `pad` = (left_last, right_last, left_second_last, right_second_last, ...)."""
    D.check_tensor(input, "pad", "input", 1)
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        return _constant(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if _AUTOCAST.state.ACTIVE and mode != "circular":  # torch.autocast: tracer/autocast.py
        name = "reflection_pad" if mode == "reflect" else "replication_pad"
        return _ac.call(name, _indexed, (input, pad, mode), {})
    return _indexed(input, pad, mode)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """torch.constant_pad_nd: `pad`'s constant padding (negative entries crop)."""
    D.check_tensor(input, "constant_pad_nd", "input", 1)
    return _constant(input, [int(p) for p in pad], value)


def _pairs(pad: list, ndim: int) -> list:
    """[(dim, left, right)] for each padded dim, last dim first."""
    return [(ndim - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]


def _constant(input: Tensor, pad: list, value) -> Tensor:
    if len(pad) > 2 * input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    pairs = _pairs(pad, input.ndim)
    x = input
    # negative padding crops
    crop = [("slice", 0, s, 1) for s in input.shape]
    cropped = False
    for d, left, right in pairs:
        n = input.shape[d]
        start, stop = max(-left, 0), n - max(-right, 0)
        if stop < start:
            raise RuntimeError("narrow(): length must be non-negative.")
        if start or stop != n:
            crop[d] = ("slice", start, stop, 1)
            cropped = True
    if cropped:
        x = D.apply("index", [x], {"spec": tuple(crop)})
    shape = list(x.shape)
    region = [("slice", 0, s, 1) for s in x.shape]
    for d, left, right in pairs:
        lo, hi = max(left, 0), max(right, 0)
        region[d] = ("slice", lo, lo + x.shape[d], 1)
        shape[d] += lo + hi
    out_dtype = input._dtype
    filled = D.source("full", {"shape": tuple(shape), "dtype": out_dtype,
                               "value": D._scalar_as(value, out_dtype, True)}, input._be)
    r = D.apply("index_put", [filled, x], {"spec": tuple(region), "accumulate": False})
    return A.label_recorded(r, "ConstantPadNdBackward0", input)


_SUPPORTED = ("Supported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _source_index(n: int, left: int, right: int, mode: str) -> np.ndarray:
    """For each output position along one dim, the input position it copies."""
    p = np.arange(-left, n + right)
    if mode == "reflect":
        p = np.abs(p)
        p = np.where(p >= n, 2 * (n - 1) - p, p)
    elif mode == "replicate":
        p = np.clip(p, 0, n - 1)
    else:  # circular: a negative pad crops first, and the other side wraps around what is left
        lo, hi = max(-left, 0), n - max(-right, 0)
        p = lo + np.arange(-max(left, 0), hi - lo + max(right, 0)) % max(hi - lo, 1)
    return p.astype(np.int64)


def _indexed(input: Tensor, pad: list, mode: str) -> Tensor:
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.ndim}D input tensor.\n{_SUPPORTED}")
    x = input
    for d, left, right in _pairs(pad, input.ndim):
        n = x.shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at "
                               f"dimension {d} of input {list(input.shape)}")
        # Wraps go around the part a negative pad leaves. PyTorch checks against the whole dim;
        # a left wrap longer than that part copies uninitialised memory there (refused here),
        # a right one repeats the part (its copy runs forward over its own output)
        kept = n - max(-left, 0) - max(-right, 0)
        if mode == "circular" and (left > n or right > n or left > kept or
                                   (kept == 0 and right > 0)):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (left or right):
            raise RuntimeError(f"Expected input's non-batch dimensions to have positive length,"
                               f" but input has a shape of {list(input.shape)} and non-batch "
                               f"dimension {d} has length zero!")
        idx = C.tensor(_source_index(n, left, right, mode), device=input.device)
        x = F.index_select(x, d, idx)
    name = {"reflect": "ReflectionPad", "replicate": "ReplicationPad"}.get(mode)
    if name is not None:
        return A.label_recorded(x, f"{name}{k}DBackward0", input)
    return x
