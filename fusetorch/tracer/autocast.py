"""Autocast state and the casts that autocast-listed ops make (`torch.autocast`).

While autocast is on for a device type, each op on PyTorch's lists for that device type casts
its floating-point tensor arguments of that device type on entry (float64 ones are left alone,
as PyTorch does): "lower" ops (matmul, linear, convolutions, attention: where lower precision
pays) to the autocast dtype, "fp32" ops (losses, linear algebra, 3-d pooling, ...) to float32.
Inside the op autocast is off, so the ops it is built of do not cast again: PyTorch's autocast
dispatch key is excluded below an op the same way. The lists are PyTorch's
(`aten/src/ATen/autocast_mode.cpp`), restricted to the ops fusetorch has; every hooked op
starts with

    if _ac.ACTIVE:
        return _ac.call("matmul", matmul, (input, other), {"out": out})

(one per-thread read when autocast is off), or carries the `op` decorator. Casts are
ordinary recorded `to(dtype)` calls, so gradients flow back to float32 parameters in float32.

The state belongs to the calling thread, as in PyTorch (`_per_thread`: autocast held in one
thread leaves another thread's matmul in float32); its dicts are replaced, never mutated
(`set_state`). The weight cast cache (`cache_enabled`) is accepted and not kept: each use
casts again.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .._per_thread import per_thread
from ..ir import dtypes as dt

LOWER, FP32 = "lower", "fp32"

# ENABLED, DTYPES: per device type; ACTIVE: device type -> autocast dtype, for the device
# types whose autocast is on now; empty while every autocast is off (the one thing a hooked op
# reads on its fast path). All per thread.
_LOCAL = per_thread(__name__, ENABLED={"cpu": False, "cuda": False},
                    DTYPES={"cpu": dt.bfloat16, "cuda": dt.float16}, CACHE_ENABLED=True,
                    NESTING=0, ACTIVE={})


def _policies(lower: str, fp32: str) -> dict[str, str]:
    return {**dict.fromkeys(lower.split(), LOWER), **dict.fromkeys(fp32.split(), FP32)}


_LOSSES = ("mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss poisson_nll_loss "
           "smooth_l1_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss "
           "triplet_margin_loss multi_margin_loss kl_div multilabel_margin_loss "
           "binary_cross_entropy_with_logits")
# op name -> policy, per device type; a hooked op missing from a device's table runs as one op
# without casts (PyTorch's fallthrough for an op with its own kernel)
POLICIES = {
    "cpu": _policies(
        "conv1d conv2d conv3d bmm mm baddbmm addmm addbmm linear matmul conv_transpose1d "
        "conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention einsum "
        "lstm_layer",
        _LOSSES + " cross_entropy binary_cross_entropy ctc_loss reflection_pad replication_pad "
        "grid_sample prod quantile nanquantile cdist trace pinverse linalg_solve linalg_cholesky "
        "linalg_svdvals linalg_eigvalsh linalg_inv linalg_qr linalg_svd linalg_eigh"),
    # CUDA's lists where fusetorch hooks the op (its float32 list also names elementwise ops
    # and reductions, exp, log, pow, sum, cumsum, ...: not hooked, they keep their dtype)
    "cuda": _policies(
        "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d prelu addmm "
        "addmv matmul mm mv linear addbmm baddbmm bmm scaled_dot_product_attention einsum "
        "einsum_elementwise",
        _LOSSES + " cdist prod softmax log_softmax layer_norm group_norm"),
}


def set_state(kind: str, enabled: bool | None = None, dtype: dt.DType | None = None) -> None:
    """Turn autocast for device type `kind` on or off and/or set its dtype, in this thread."""
    st = _LOCAL.state
    if enabled is not None:
        st.ENABLED = {**st.ENABLED, kind: bool(enabled)}
    if dtype is not None:
        st.DTYPES = {**st.DTYPES, kind: dtype}
    st.ACTIVE = {d: st.DTYPES[d] for d, on in st.ENABLED.items() if on}


def _device_type(args, kwargs) -> str | None:
    from .tensor import Tensor
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            return a._be.device.type
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor):
                    return b._be.device.type
    return None


def _cast(x, device_type: str, to: dt.DType, policy: str):
    from .tensor import Tensor
    if isinstance(x, Tensor):
        d = x._dtype
        if d is to or not d.is_floating_point or d is dt.float64 or \
                x._be.device.type != device_type:
            return x
        if policy == FP32 and d is not dt.float16 and d is not dt.bfloat16:
            return x
        return x.to(to)
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        return type(x)(_cast(v, device_type, to, policy) for v in x)
    return x


def call(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """`fn(*args, **kwargs)` for op `name` under the active autocast: its arguments cast by
    the op's policy for their device type, and autocast off while it runs."""
    st = _LOCAL.state
    active = st.ACTIVE
    device_type = _device_type(args, kwargs)
    policy = POLICIES.get(device_type, {}).get(name) if device_type in active else None
    if policy is not None:
        to = active[device_type] if policy == LOWER else dt.float32
        args = tuple(_cast(a, device_type, to, policy) for a in args)
        kwargs = {k: _cast(v, device_type, to, policy) for k, v in kwargs.items()}
    st.ACTIVE = {}
    try:
        return fn(*args, **kwargs)
    finally:
        st.ACTIVE = active


def listed(name: str, tensor) -> bool:
    """Whether op `name` is on the list of the active autocast for `tensor`'s device type (for
    ops hooked on one device type only, which elsewhere autocast op by op inside)."""
    return name in POLICIES.get(tensor._be.device.type, {}) and tensor._be.device.type in _LOCAL.state.ACTIVE


def op(name: str) -> Callable[[Callable], Callable]:
    """Decorator form of the hook, for ops off the hottest paths."""
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def hooked(*args, **kwargs):
            if _LOCAL.state.ACTIVE:
                return call(name, fn, args, kwargs)
            return fn(*args, **kwargs)
        return hooked
    return wrap
