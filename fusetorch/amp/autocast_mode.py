"""`torch.autocast`: a context manager (and decorator) that runs PyTorch's autocast-listed ops
in lower precision: on the CPU in bfloat16 (or float16), on CUDA in float16 (or bfloat16).

What is cast, and where, is `tracer/autocast.py`. This module holds the user-facing API with
PyTorch's checks and warnings: an unknown device type is PyTorch's RuntimeError, a CPU dtype
other than bfloat16/float16 warns and disables, and asking for CUDA without a GPU warns
"CUDA is not available ... Disabling autocast." and runs everything in full precision.

    with torch.autocast("cpu"):          # bfloat16
        loss = loss_fn(model(x), y)       # linear/conv/matmul in bfloat16, the loss in float32
"""
from __future__ import annotations

import functools
import warnings
from typing import Callable

from ..ir import dtypes as dt
from ..tracer import autocast as _ac

_SUPPORTED = ("cpu", "cuda")
# PyTorch's device types (its device-string parser's list): autocast on any of these but cpu
# and cuda is "unsupported" here; any other string is not a device type at all
_DEVICE_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, "
                 "lazy, vulkan, mps, meta, hpu, mtia, privateuseone")


def _device_type(device_type: str) -> str:
    """The device type of a device string ("cuda:0" -> "cuda"), with PyTorch's error for one
    that is not a device at all."""
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES.split(", "):
        raise RuntimeError(f"Expected one of {_DEVICE_TYPES} device type at start of device "
                           f"string: {device_type}")
    return kind


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used on `device_type` ("cpu" or "cuda" here)."""
    return _device_type(device_type) in _SUPPORTED


def _amp_definitely_not_available() -> bool:
    from .. import cuda
    return not cuda.is_available()


def get_autocast_dtype(device_type: str) -> dt.DType:
    """The dtype autocast casts to on `device_type` (bfloat16 on cpu, float16 on cuda, unless
    an enclosing autocast chose another)."""
    kind = _device_type(device_type)
    if kind not in _SUPPORTED:
        raise RuntimeError("unsupported scalarType")
    return _ac.DTYPES[kind]


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for `device_type` (PyTorch's default: "cuda")."""
    kind = _device_type("cuda" if device_type is None else device_type)
    return _ac.ENABLED.get(kind, False)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    kind = _device_type(device_type)
    if kind in _SUPPORTED:
        _ac.set_state(kind, enabled=enabled)


def set_autocast_dtype(device_type: str, dtype: dt.DType) -> None:
    kind = _device_type(device_type)
    if kind in _SUPPORTED:
        _ac.set_state(kind, dtype=dtype)


def is_autocast_cache_enabled() -> bool:
    return _ac.CACHE_ENABLED


def set_autocast_cache_enabled(enabled: bool) -> None:
    _ac.CACHE_ENABLED = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing to clear: casts are not cached (see tracer/autocast.py)."""


def autocast_increment_nesting() -> int:
    _ac.NESTING += 1
    return _ac.NESTING


def autocast_decrement_nesting() -> int:
    _ac.NESTING -= 1
    return _ac.NESTING


class autocast:  # noqa: N801  (PyTorch's name)
    """Run the ops PyTorch lists for autocast in `dtype` inside the block (or the decorated
    function); the rest keep their dtypes. `torch.autocast(device_type, dtype=None,
    enabled=True, cache_enabled=None)`.

        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            out = model(x)
    """

    def __init__(self, device_type: str, dtype: dt.DType | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None \
            else dt.to_dtype(dtype, "autocast")
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        if enabled:
            kind = _device_type(device_type)
            if kind == "cuda":
                if _amp_definitely_not_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
                elif self.fast_dtype is dt.bfloat16:
                    from .. import cuda
                    if not cuda.is_bf16_supported():
                        raise RuntimeError("Current CUDA Device does not support bfloat16. "
                                           "Please switch dtype to float16.")
            elif self.fast_dtype not in (dt.bfloat16, dt.float16):
                name = kind.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> "autocast":
        kind = _device_type(self.device)
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(kind)
        self.prev_fastdtype = get_autocast_dtype(kind)
        _ac.set_state(kind, self._enabled, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        kind = _device_type(self.device)
        autocast_decrement_nesting()
        _ac.set_state(kind, self.prev, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got "
                            f"{type(func).__name__}. Did you mean to use autocast as a context "
                            "manager? For example:\n    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorated


def _cast(value, device_type: str, dtype: dt.DType):
    from ..tracer.tensor import Tensor
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type \
            and value.dtype is not dt.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: dt.DType | None = None) -> Callable:
    """Decorator for a custom autograd.Function's `forward`: with `cast_inputs`, inside an
    autocast region its floating tensors are cast to that dtype and it runs with autocast off;
    `custom_bwd` then runs `backward` under the autocast state `forward` saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorator for a custom autograd.Function's `backward` (see `custom_fwd`)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd

