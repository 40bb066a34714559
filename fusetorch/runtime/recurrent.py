"""The CPU eager implementations of `lstm_scan` and `lstm_scan_grad` (ir/recurrent_ops.py): the
reference's loop over time steps as one C call each way (templates/c/lstm_scan.c.j2): per step
a register-blocked product with w_hh, packed once per call, and one pointwise pass, where the
reference makes a BLAS call (which packs w_hh again every step) and ~15 numpy temporaries.

One kernel per (dtype, hidden size), built the first time a layer of that size runs (the
batch and sequence length are arguments), kept with eager_kernels' others and cached on disk
like every kernel. Without a C
compiler, under FUSETORCH_EAGER_COMPILE=0, or inside a compile trace (which builds nothing:
runtime/eager_kernels.py), the reference runs instead: the values agree to float32 rounding
(libm's vector exp and tanh against numpy's)."""
from __future__ import annotations

import hashlib

import numpy as np

from .. import _threads
from . import eager_kernels

# the kernels' products pad their columns to whole blocks of at most 64 (FT_NP)
_PAD = 64


def scan(reference):
    """`lstm_scan` for numpy arrays, by the kernel where there is one."""
    def lstm_scan(gi, h0, c0, w_hh, *, reverse):
        t_len, batch, hid = gi.shape[0], gi.shape[1], gi.shape[2] // 4
        k = _kernels(gi.dtype, hid)
        if k is None:
            return reference(gi, h0, c0, w_hh, reverse=reverse)
        forward, _, ffi = k
        ws = np.empty((6, t_len, batch, hid), gi.dtype)
        scratch = np.empty((hid + batch) * (4 * hid + _PAD), gi.dtype)
        arrays = _dense(gi, h0, c0, w_hh)  # (held until the call returns)
        forward(*eager_kernels.pointers(ffi, arrays + [ws, scratch]), t_len, batch, int(reverse),
                _threads_for(t_len, batch, hid))
        return ws
    lstm_scan.__wrapped__ = reference
    return lstm_scan


def scan_grad(reference):
    """`lstm_scan_grad` for numpy arrays, by the kernel where there is one."""
    def lstm_scan_grad(gws, ws, h0, c0, w_hh, *, reverse):
        _, t_len, batch, hid = ws.shape
        k = _kernels(ws.dtype, hid)
        if k is None:
            return reference(gws, ws, h0, c0, w_hh, reverse=reverse)
        _, backward, ffi = k
        out = np.empty((t_len + 1, batch, 4 * hid), ws.dtype)
        scratch = np.empty((4 * hid + batch) * (hid + _PAD) + batch * hid, ws.dtype)
        arrays = _dense(gws, ws, c0, w_hh)
        backward(*eager_kernels.pointers(ffi, arrays + [out, scratch]), t_len, batch,
                 int(reverse), _threads_for(t_len, batch, hid))
        return out
    lstm_scan_grad.__wrapped__ = reference
    return lstm_scan_grad


def _threads_for(t_len: int, batch: int, hid: int) -> int:
    """Threads to share the batch's rows (in blocks of 4: `ft_rows`); the recurrence's
    products are batch x hid x 4 hid multiply-adds a step."""
    return 1 if batch < 8 else _threads.kernel_threads(t_len * batch * 4 * hid * hid)


def _dense(*arrays) -> list:
    """The arrays C-contiguous (copied where they are not: a cotangent may be a broadcast)."""
    return [np.ascontiguousarray(a) for a in arrays]


def _kernels(dtype, hid: int):
    """(forward, backward, ffi) for this dtype and hidden size, or None (the reference runs)."""
    if dtype not in (np.float32, np.float64):
        return None
    dtype = np.dtype(dtype)
    return eager_kernels.cached_kernel(("lstm_scan", dtype, hid), lambda: _build(dtype, hid))


def _build(dtype: np.dtype, hid: int):
    t = eager_kernels.c_type(dtype)
    ctx = dict(t=t, hid=hid, exp="expf" if t == "float" else "exp",
               tanh="tanhf" if t == "float" else "tanh")
    name = ctx["name"] = "ft_lstm_" + hashlib.sha256(
        repr(sorted(ctx.items())).encode()).hexdigest()[:12]
    from ..codegen import render, template_nests
    ctx.update(loops=template_nests.lstm_c(), pragmas=render.PRAGMAS)
    cdef = (f"void {name}_forward({t}*, {t}*, {t}*, {t}*, {t}*, {t}*, long, long, long, long);\n"
            f"void {name}_backward({t}*, {t}*, {t}*, {t}*, {t}*, {t}*, long, long, long, long);")
    built = eager_kernels.template_functions("lstm_scan.c.j2", ctx, cdef,
                                             (name + "_forward", name + "_backward"))
    if built is None:
        return False
    (forward, backward), ffi = built
    return forward, backward, ffi

