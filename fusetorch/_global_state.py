"""torch-level predicates, process-wide settings and small functions scripts call as PyTorch
spells them: `torch.is_nonzero`, `torch.get_rng_state`, `torch.use_deterministic_algorithms`,
`torch.set_float32_matmul_precision`, `torch.range`, `torch.typename`, the deprecated autocast
accessors, and the functions PyTorch removed (`torch.solve`, ...), which raise its error.

Settings fusetorch has no use for (matmul precision, deterministic algorithms, warn-always,
anomaly detection's flags) are kept and reported as PyTorch reports them: fusetorch's CPU
kernels are deterministic already and compute float32 products in float32.
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from .amp import autocast_mode as _amp
from .ir import dtypes as dt
from .tracer import autograd_modes as _anomaly
from .tracer import creation as C
from .tracer import dispatch as D
from .tracer import functional as F
from .tracer.tensor import Tensor
from .tracer.typename import typename

# ------------------------------------------------------------------ predicates


def is_nonzero(input: Tensor) -> builtins.bool:
    """The truth of a one-element tensor (PyTorch's errors for none or several)."""
    D.check_tensor(input, "is_nonzero", "input", 1)
    return input.is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> builtins.bool:
    D.check_tensor(input, "is_same_size", "input", 1)
    return input.is_same_size(other)


def is_signed(input: Tensor) -> builtins.bool:
    D.check_tensor(input, "is_signed", "input", 1)
    return input.is_signed()


def is_conj(input: Tensor) -> builtins.bool:
    D.check_tensor(input, "is_conj", "input", 1)
    return input.is_conj()


def is_neg(input: Tensor) -> builtins.bool:
    D.check_tensor(input, "is_neg", "input", 1)
    return input.is_neg()


def is_distributed(input: Tensor) -> builtins.bool:
    D.check_tensor(input, "is_distributed", "input", 1)
    return False


def is_inference(input: Tensor) -> builtins.bool:
    D.check_tensor(input, "is_inference", "input", 1)
    return input.is_inference()


def is_inference_mode_enabled() -> builtins.bool:
    from .tracer import autograd as A
    return A.is_inference_mode_enabled()


def get_device(input: Tensor) -> builtins.int:
    D.check_tensor(input, "get_device", "input", 1)
    return input.get_device()


def is_storage(obj) -> builtins.bool:
    from .storage import TypedStorage, UntypedStorage
    return isinstance(obj, (TypedStorage, UntypedStorage))


# ------------------------------------------------------------------ random state


def get_rng_state() -> Tensor:
    """The default CPU generator's state as a uint8 tensor (for `set_rng_state`)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


default_generator = C.default_generator()

# ------------------------------------------------------------------ settings

_STATE = {"matmul_precision": "highest", "deterministic": False, "warn_only": False,
          "warn_always": False}
_PRECISIONS = ("highest", "high", "medium")


def get_float32_matmul_precision() -> str:
    return _STATE["matmul_precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded only: fusetorch's float32 products are float32 at every setting."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _STATE["matmul_precision"] = precision


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
    """Recorded only: every fusetorch kernel is deterministic (fixed reduction orders)."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    _STATE["deterministic"], _STATE["warn_only"] = mode, builtins.bool(warn_only)


def are_deterministic_algorithms_enabled() -> builtins.bool:
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    return _STATE["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, builtins.int) or isinstance(debug_mode, builtins.bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> builtins.int:
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["warn_only"] else 2


def set_warn_always(b: builtins.bool) -> None:
    _STATE["warn_always"] = builtins.bool(b)


def is_warn_always_enabled() -> builtins.bool:
    return _STATE["warn_always"]


def set_anomaly_enabled(enabled: builtins.bool, check_nan: builtins.bool = True) -> None:
    """Anomaly mode (torch.autograd.detect_anomaly's switch)."""
    _anomaly.set_anomaly(enabled, check_nan)


def is_anomaly_enabled() -> builtins.bool:
    return _anomaly.ENABLED


def is_anomaly_check_nan_enabled() -> builtins.bool:
    return _anomaly.CHECK_NAN


def set_flush_denormal(mode: builtins.bool) -> builtins.bool:
    """False: fusetorch does not change the FPU's denormal mode (PyTorch answers whether it
    could)."""
    return False


has_lapack = True   # numpy's LAPACK
has_mkl = False
has_openmp = True   # the C kernels' `omp parallel for`
has_spectral = False  # FFTs are out of scope


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch 2.1: `torch.DoubleTensor` (or its name) sets the default float
    dtype."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = t.rsplit(".", 1)[-1]
        found = [c for c in C.LEGACY.values() if c.__name__ == name]
        if not found or not t.startswith("torch."):
            raise TypeError(f"invalid type: '{t}'")
        t = found[0]
    d = getattr(t, "dtype", None)
    if not isinstance(d, dt.DType):
        raise TypeError(f"invalid type: '{t}'")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(d)


# the deprecated per-device autocast accessors, over torch.get_autocast_dtype(device) & co
def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def _autocast_accessors(tag: str, device: str) -> dict:
    def get_dtype() -> dt.DType:
        _deprecated(f"get_autocast_{tag}_dtype()", f"get_autocast_dtype('{device}')")
        return _amp.get_autocast_dtype(device)

    def set_dtype(dtype: dt.DType) -> None:
        _deprecated(f"set_autocast_{tag}_dtype(dtype)", f"set_autocast_dtype('{device}', dtype)")
        _amp.set_autocast_dtype(device, dtype)

    def is_enabled() -> builtins.bool:
        _deprecated(f"is_autocast_{tag}_enabled()", f"is_autocast_enabled('{device}')")
        return _amp.is_autocast_enabled(device)

    def set_enabled(enabled: builtins.bool) -> None:
        _deprecated(f"set_autocast_{tag}_enabled(enabled)",
                    f"set_autocast_enabled('{device}', enabled)")
        _amp.set_autocast_enabled(device, enabled)
    out = {f"get_autocast_{tag}_dtype": get_dtype, f"set_autocast_{tag}_dtype": set_dtype,
           f"is_autocast_{tag}_enabled": is_enabled, f"set_autocast_{tag}_enabled": set_enabled}
    for name, fn in out.items():
        fn.__name__ = fn.__qualname__ = name
    return out


AUTOCAST = {k: v for k, v in {**_autocast_accessors("cpu", "cpu"),
                               **_autocast_accessors("gpu", "cuda")}.items()
            if k not in ("is_autocast_gpu_enabled", "set_autocast_gpu_enabled")}  # (PyTorch's)
# devices fusetorch never runs on: their autocast settings are kept and reported, and nothing
# runs under them
_OTHER_AUTOCAST = {"ipu": [dt.float16, False], "xla": [dt.bfloat16, False]}


def _other_accessors(tag: str) -> dict:
    state = _OTHER_AUTOCAST[tag]

    def get_dtype() -> dt.DType:
        _deprecated(f"get_autocast_{tag}_dtype()", f"get_autocast_dtype('{tag}')")
        return state[0]

    def set_dtype(dtype: dt.DType) -> None:
        _deprecated(f"set_autocast_{tag}_dtype(dtype)", f"set_autocast_dtype('{tag}', dtype)")
        if not isinstance(dtype, dt.DType):
            raise TypeError(f"set_autocast_{tag}_dtype(): argument 'dtype' must be torch.dtype, "
                            f"not {type(dtype).__name__}")
        state[0] = dtype

    def is_enabled() -> builtins.bool:
        _deprecated(f"is_autocast_{tag}_enabled()", f"is_autocast_enabled('{tag}')")
        return state[1]

    def set_enabled(enabled: builtins.bool) -> None:
        _deprecated(f"set_autocast_{tag}_enabled(enabled)",
                    f"set_autocast_enabled('{tag}', enabled)")
        state[1] = builtins.bool(enabled)
    out = {f"get_autocast_{tag}_dtype": get_dtype, f"set_autocast_{tag}_dtype": set_dtype,
           f"is_autocast_{tag}_enabled": is_enabled, f"set_autocast_{tag}_enabled": set_enabled}
    for name, fn in out.items():
        fn.__name__ = fn.__qualname__ = name
    return out


AUTOCAST.update(_other_accessors("ipu"))
AUTOCAST.update(_other_accessors("xla"))

# ------------------------------------------------------------------ small functions


def asarray(obj, *, dtype=None, device=None, copy: builtins.bool | None = None,
            requires_grad: builtins.bool = False) -> Tensor:
    """A tensor sharing `obj`'s memory where it can (a tensor, a numpy array) unless copy=True
    or a dtype/device change needs a copy; copy=False refuses one that does."""
    dtype = dt.to_dtype(dtype, "asarray")
    if isinstance(obj, (Tensor, np.ndarray)):
        src = obj if isinstance(obj, Tensor) else C.as_tensor(obj)
        out = src if device is None else src.to(device)
        if dtype is not None and out._dtype is not dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{D._torch_name(out._dtype)}' "
                                 f"into dtype '{D._torch_name(dtype)}'.")
            out = out.to(dtype)
        if copy and out is src:
            out = F.clone(src.detach())
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = C.tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def range(start=0, end=None, step=1, *, dtype=None, device=None,  # noqa: A001
          requires_grad: builtins.bool = False) -> Tensor:
    """Deprecated: the values start, start + step, ... up to and including `end`, in the
    default float dtype unless `dtype` says otherwise."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    dtype = dt.to_dtype(dtype, "range") or dt.default_float()
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = builtins.int(np.floor((end - start) / step)) + 1
    if dtype.is_floating_point:
        values = np.float64(start) + np.arange(n, dtype=np.float64) * np.float64(step)
    else:
        values = builtins.int(start) + np.arange(n, dtype=np.int64) * builtins.int(step)
    return C.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def detach(input: Tensor) -> Tensor:
    D.check_tensor(input, "detach", "input", 1)
    return input.detach()


def frobenius_norm(input: Tensor, dim, keepdim: builtins.bool = False) -> Tensor:
    """Deprecated ATen op: the 2-norm over `dim`."""
    from . import linalg
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=2)
    return linalg.vector_norm(input, 2.0, dim, keepdim)


def nuclear_norm(input: Tensor, dim=None, keepdim: builtins.bool = False) -> Tensor:
    """Deprecated ATen op: the sum of singular values over two dims (the last two by default,
    which must be all of a matrix's)."""
    from . import linalg
    if isinstance(dim, builtins.bool):
        dim, keepdim = None, dim
    if dim is None:
        if input.ndim != 2:
            raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with "
                               f"{input.ndim} dimensions instead.")
        warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT "
                      "compatibility. It will be removed in a future PyTorch release. Please "
                      "use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                      stacklevel=2)
        dim = (0, 1)
    return linalg.matrix_norm(input, "nuc", tuple(dim), keepdim)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """Deprecated: the product of the matrices (linalg.multi_dot's order of products)."""
    from . import linalg
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for k, m in enumerate(matrices):
        D.check_tensor(m, "chain_matmul", "matrices", 1)
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return F.clone(matrices[0])
    return linalg.multi_dot(list(matrices))


def real(input: Tensor) -> Tensor:
    """A real tensor's real part is itself."""
    D.check_tensor(input, "real", "input", 1)
    return input


def imag(input: Tensor) -> Tensor:
    D.check_tensor(input, "imag", "input", 1)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


# ------------------------------------------------------------------ removed in PyTorch 1.9+

_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
             "has its arguments reversed and does not return the LU factorization.\n\nTo get "
             "the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
             "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = "
             "torch.linalg.solve(A, B)",
    "symeig": "The default behavior has changed from using the upper triangular portion of the "
              "matrix by default to using the lower triangular portion.\n\nL, _ = "
              "torch.symeig(A, upper=upper) should be replaced with:\nL = "
              "torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
              "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
              "torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
           "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
           "eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
           "torch.linalg.eig(A)",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg."
             "lstsq` has reversed arguments and does not return the QR decomposition in the "
             "returned tuple (although it returns other information about the problem).\n\nTo "
             "get the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned "
             "solution in `torch.lstsq` stored the residuals of the solution in the last m - n "
             "columns of the returned value whenever m > n. In torch.linalg.lstsq, the "
             "residuals are in the field 'residuals' of the returned named tuple.\n\nThe "
             "unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]"
             "\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
}


def _raise_removed(name: str):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. " +
                       _REMOVED[name])


def solve(input: Tensor, A: Tensor, *, out=None):
    """Removed from PyTorch in 1.9: raises its RuntimeError, which names the replacement."""
    _raise_removed("solve")


def lstsq(input: Tensor, A: Tensor, *, out=None):
    """Removed from PyTorch in 1.9: raises its RuntimeError, which names the replacement."""
    _raise_removed("lstsq")


def symeig(input: Tensor, eigenvectors: builtins.bool = False, upper: builtins.bool = True, *,
           out=None):
    """Removed from PyTorch in 1.9: raises its RuntimeError, which names the replacement."""
    _raise_removed("symeig")


def eig(input: Tensor, eigenvectors: builtins.bool = False, *, e=None, v=None):
    """Removed from PyTorch in 1.9: raises its RuntimeError, which names the replacement."""
    _raise_removed("eig")


REMOVED = {fn.__name__: fn for fn in (solve, lstsq, symeig, eig)}
for _name, _fn in REMOVED.items():  # x.solve(b), x.eig(), ...: the same error
    setattr(Tensor, _name, _fn)

PUBLIC = {fn.__name__: fn for fn in (
    is_nonzero, is_same_size, is_signed, is_conj, is_neg, is_distributed, is_inference,
    is_inference_mode_enabled, get_device, typename, is_storage, get_rng_state, set_rng_state,
    get_float32_matmul_precision, set_float32_matmul_precision, use_deterministic_algorithms,
    are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode, get_deterministic_debug_mode, set_warn_always,
    is_warn_always_enabled, set_anomaly_enabled, is_anomaly_enabled,
    is_anomaly_check_nan_enabled, set_flush_denormal, set_default_tensor_type, asarray, range,
    detach, frobenius_norm, nuclear_norm, chain_matmul, real, imag)}
PUBLIC.update(AUTOCAST)
PUBLIC.update(REMOVED)
PUBLIC.update(default_generator=default_generator, has_lapack=has_lapack, has_mkl=has_mkl,
              has_openmp=has_openmp, has_spectral=has_spectral)


# ------------------------------------------------------------------ constants and small helpers
e = float(np.e)
pi = float(np.pi)
inf = float("inf")
nan = float("nan")
newaxis = None


from .cuda import AcceleratorError, OutOfMemoryError  # noqa: E402  (torch.* has them too)


# symbolic-shape helpers: fusetorch's sizes are plain Python numbers, so these are the numbers'
def sym_int(a) -> builtins.int:
    return builtins.int(a)


def sym_float(a) -> builtins.float:
    return builtins.float(a)


def sym_max(a, b):
    return builtins.max(a, b) if not isinstance(a, builtins.float) and not isinstance(
        b, builtins.float) else builtins.float(builtins.max(a, b))


def sym_min(a, b):
    return builtins.min(a, b) if not isinstance(a, builtins.float) and not isinstance(
        b, builtins.float) else builtins.float(builtins.min(a, b))


def sym_not(a) -> builtins.bool:
    return not a


def sym_sqrt(a) -> builtins.float:
    import math
    return math.sqrt(a)


def sym_ite(b, t, f):
    return t if b else f


def sym_sum(args):
    return builtins.sum(args)


def sym_constrain_range(size, *, min=None, max=None) -> None:  # noqa: A002
    """A concrete size's check that it lies in [min, max]."""
    if min is not None and size < min or max is not None and size > max:
        raise RuntimeError(f"Invalid value {size} for range [{min}:{max}]")


def sym_constrain_range_for_size(size, *, min=None, max=None) -> None:  # noqa: A002
    if size < 0:
        raise RuntimeError(f"Invalid value {size} for range [0:{max}]")
    sym_constrain_range(size, min=min, max=max)


def vander(x: Tensor, N: builtins.int | None = None, increasing: builtins.bool = False) -> Tensor:
    """Powers of the 1-d x as columns: x^(N-1) ... x^0 (x^0 ... with increasing)."""
    from . import linalg
    D.check_tensor(x, "vander", "x", 1)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is not None and N < 0:
        raise RuntimeError("N must be non-negative.")
    out = linalg.vander(x, N=N)
    return out if increasing else F.flip(out, [-1])


def is_vulkan_available() -> builtins.bool:
    return False


def init_num_threads() -> None:
    """Nothing to initialise: fusetorch's thread pools are set up at import (_threads.py)."""


def compiled_with_cxx11_abi() -> builtins.bool:
    return True  # (fusetorch's kernels are C, built by the system's gcc)


def get_device_module(device=None):
    """The module of a device type: `torch.cuda` for "cuda", `torch.cpu` for "cpu"."""
    import importlib
    from .runtime.device import device as _device
    kind = "cpu" if device is None else device.type if isinstance(device, _device) else \
        _device(device).type if not isinstance(device, str) or ":" in device or device in (
            "cpu", "cuda") else device
    if kind not in ("cpu", "cuda", "mps", "xpu", "mtia"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'torch.{kind}'.")
    return importlib.import_module(f"fusetorch.{kind}")


def from_file(filename, shared: builtins.bool | None = None, size: builtins.int = 0, *,
              dtype=None, device=None, requires_grad: builtins.bool = False,
              pin_memory: builtins.bool = False) -> Tensor:
    """`size` elements of `dtype` read from the start of `filename`; with shared=True the
    tensor is the file's memory (writes reach the file)."""
    import os
    from .tracer.dispatch import NP_DTYPES
    d = dt.to_dtype(dtype, "from_file") or dt.default_float()
    npd = np.dtype(NP_DTYPES[d])
    need = builtins.int(size) * npd.itemsize
    have = os.path.getsize(filename)
    if have < need:
        raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required "
                           f"mapping size <{need}>")
    if shared:
        arr = np.memmap(filename, dtype=npd, mode="r+", shape=(builtins.int(size),)) \
            if size else np.zeros(0, npd)
        out = C.from_numpy(np.asarray(arr)) if d is not dt.bfloat16 else C.tensor(arr, dtype=d)
    else:
        out = C.tensor(np.fromfile(filename, dtype=npd, count=builtins.int(size)), dtype=d)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands): pred a bool or a one-element
    tensor (a tensor's value is read: compiling, that is a graph break)."""
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                           f"{pred}.")
    return (true_fn if builtins.bool(pred) else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run body_fn over the carried values while cond_fn says so; the final values."""
    carried = tuple(carried_inputs)
    while builtins.bool(cond_fn(*carried)):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return carried


PUBLIC.update({fn.__name__: fn for fn in (
    sym_int, sym_float, sym_max, sym_min, sym_not, sym_sqrt, sym_ite, sym_sum,
    sym_constrain_range, sym_constrain_range_for_size, vander,
    is_vulkan_available, init_num_threads, compiled_with_cxx11_abi, get_device_module,
    from_file, cond, while_loop)})
PUBLIC.update(e=e, pi=pi, inf=inf, nan=nan, newaxis=newaxis, AcceleratorError=AcceleratorError,
              OutOfMemoryError=OutOfMemoryError)


def cudnn_is_acceptable(tensor: Tensor) -> builtins.bool:
    """False: fusetorch never calls cuDNN."""
    D.check_tensor(tensor, "cudnn_is_acceptable", "self", 1)
    return False


# ------------------------------------------------------------------ device-generic streams
class Stream:
    """`torch.Stream(device)`: fusetorch's work on a device runs in issue order, so a stream is
    always idle (`query()` True) and synchronising returns at once."""

    def __init__(self, device=None, *, priority: builtins.int = 0) -> None:
        from .runtime.device import device as _device
        self.device = _device(device or "cpu")
        self.device_type = self.device.type
        self.device_index = -1 if self.device.type == "cpu" else (self.device.index or 0)
        self.stream_id = 0

    def query(self) -> builtins.bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: "Event") -> None:
        return None

    def wait_stream(self, stream: "Stream") -> None:
        return None

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else Event(self.device)
        event.record(self)
        return event

    def __repr__(self) -> str:
        return (f"torch.Stream device_type={self.device_type}, device_index={self.device_index}"
                f", stream_id={self.stream_id}")


class Event:
    """`torch.Event`: a point in a stream's work; with enable_timing, the time it was recorded
    (fusetorch's work has finished when the call returns)."""

    def __init__(self, device=None, *, enable_timing: builtins.bool = False,
                 blocking: builtins.bool = False, interprocess: builtins.bool = False) -> None:
        from .runtime.device import device as _device
        self.device = _device(device or "cpu")
        self._timing, self._time = builtins.bool(enable_timing), None
        self.event_id = 0

    def record(self, stream: Stream | None = None) -> None:
        import time
        self._time = time.perf_counter()

    def query(self) -> builtins.bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def elapsed_time(self, end_event: "Event") -> builtins.float:
        """Milliseconds from this event to `end_event`."""
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


class SymInt:
    """A symbolic integer size (PyTorch's shape tracing). fusetorch's sizes are plain ints, so
    it never makes one: `isinstance(n, torch.SymInt)` is False for every size."""


class SymFloat:
    """A symbolic float; never made by fusetorch (see SymInt)."""


class SymBool:
    """A symbolic bool; never made by fusetorch (see SymInt)."""


class _ClassProperty:
    def __init__(self, fget) -> None:
        self.fget = fget

    def __get__(self, instance, owner=None):
        return self.fget.__get__(instance, owner if owner is not None else type(instance))()


def classproperty(func):
    """A read-only property of the class (`@classproperty def name(cls)`)."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassProperty(func)


PUBLIC.update(Stream=Stream, Event=Event, SymInt=SymInt, SymFloat=SymFloat, SymBool=SymBool,
              classproperty=classproperty, cudnn_is_acceptable=cudnn_is_acceptable)


def get_file_path(*path_components: str) -> str:
    """A path under the directory holding the fusetorch package (PyTorch's `torch_parent`)."""
    import os
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        *path_components)


def thread_safe_generator():
    """None: fusetorch's DataLoader workers are processes, which draw from the default global
    generator (PyTorch returns a thread-local Generator only in thread workers)."""
    return None


PUBLIC.update(get_file_path=get_file_path, thread_safe_generator=thread_safe_generator)
