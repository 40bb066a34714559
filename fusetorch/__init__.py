"""fusetorch: PyTorch's classic API on numpy, with a compiler to fused C/CUDA kernels.

    import fusetorch as torch

Names are defined in the subpackages and re-exported here.
"""
import os as _os
import sys as _sys

if "numpy" not in _sys.modules:
    # OpenBLAS's idle workers spin 2^28 cycles (~0.1 s) after each threaded product, on the
    # cores where fusetorch's OpenMP kernels (convolutions, LSTM layers) would run; 2^20
    # (~0.4 ms) still keeps them awake between one training step's products (2^18 let them
    # fall asleep inside an eager two-layer step: 0.47 -> 0.65 ms). The BLAS reads it once,
    # when numpy loads it: only where fusetorch is imported first, and never over the user's
    # own setting (README, Threads; _threads.BLAS_SPIN follows it)
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")
from . import _malloc

_malloc.keep_heap()  # a step's large arrays reuse the heap instead of faulting in fresh pages
from . import autograd, backends, cuda, ir, tracer  # noqa: F401
from . import nn, optim, utils  # noqa: F401  (after the tensor API they are built on)
from . import distributions  # noqa: F401  (torch.distributions)
from . import distributed  # noqa: F401  (torch.distributed; mpi4py is imported only on init)
from . import multiprocessing  # noqa: F401  (registers tensor sharing for inter-process sends)
from . import accelerator  # noqa: F401  (torch.accelerator: device-generic selection)
from . import amp, cpu, jit, onnx, testing  # noqa: F401  (modules scripts import at the top)
from .amp.autocast_mode import (autocast_decrement_nesting, autocast_increment_nesting,
                                clear_autocast_cache, get_autocast_dtype,
                                is_autocast_cache_enabled, is_autocast_enabled,
                                set_autocast_cache_enabled, set_autocast_dtype,
                                set_autocast_enabled)
autocast = amp.autocast
from .compile import compile  # noqa: A001
from . import profiler  # noqa: F401,E402  (torch.profiler)
from .autograd import profiler as _autograd_profiler  # noqa: F401  (torch.autograd.profiler)
from .ir.dtypes import (ALIASES as _ALIASES, DType as dtype, bool_ as bool,  # noqa: A001
                        bfloat16, can_cast, float16, float32, float64, int8, int16, int32,
                        int64, promote_types, uint8)
from .runtime.device import device
from .tracer.autograd import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                              set_grad_enabled)
from .tracer import Size, Tensor
from .tracer.creation import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,
                              FloatTensor, Generator, HalfTensor, IntTensor, LongTensor,
                              ShortTensor, arange, as_tensor, empty, empty_like, eye, from_numpy,
                              full, full_like, initial_seed, linspace, logspace, manual_seed, ones,
                              ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
                              randperm, seed, tensor, zeros, zeros_like)
from .tracer.functional import (absolute, add, all, allclose, amax, amin, any, argmax,
                                argmin, bmm, cat, chunk, clamp, clip, clone, concat, concatenate,
                                div, dot, eq, equal, flatten, flip, gather, ge, gt, index_select,
                                le, logical_and, logical_or, lt, masked_fill, matmul, max,
                                maximum, mean, min, minimum, mm, mul, mv, narrow, ne, negative,
                                nonzero, permute, pow, prod, reciprocal, repeat as _repeat,
                                reshape, rsqrt, rsub, scatter_add, split, square, squeeze, stack,
                                std, sub, sum, swapaxes, swapdims, t, transpose, unbind,
                                unflatten, unsqueeze, var, where)
from .tracer.functional import addcdiv, addcmul, lerp  # noqa: F401  (optimizer updates)
from .tracer.creation import get_default_device, set_default_device
from .tracer.sampling import bernoulli, binomial, multinomial, normal, poisson
from .tracer.memory_formats import (channels_last, channels_last_3d, contiguous_format,
                                    memory_format, preserve_format)
from .nn._functional.padding import constant_pad_nd  # noqa: E402,F401
from . import linalg  # noqa: E402  (torch.linalg)
from . import sparse  # noqa: E402  (torch.sparse: the COO subset)
from .sparse import layout, sparse_coo, sparse_coo_tensor, strided  # noqa: E402
from .sparse import mm as spmm  # noqa: E402
from .tracer.printing import set_printoptions
from .tracer.type_info import finfo, iinfo
from .tracer.strided import as_strided, as_strided_scatter, frombuffer
from .tracer.dlpack import from_dlpack
from .serialization import load, save
from ._threads import (get_num_interop_threads, get_num_threads, set_num_interop_threads,
                       set_num_threads)

from .nn import functional as _nn_functional  # noqa: E402
from .tracer.numpy_names import numpy_names as _numpy_names  # noqa: E402
# torch.softmax and torch.log_softmax are native functions, so they also take NumPy's `axis=`
# (F.softmax, a Python function in PyTorch, does not)
softmax = _numpy_names(_nn_functional.softmax)
log_softmax = _numpy_names(_nn_functional.log_softmax)
from . import special  # noqa: E402,F401  (torch.special: aliases, gammaln, psi, polygamma, ...)
from . import masked  # noqa: E402,F401  (torch.masked: reductions with a boolean mask=)
from . import signal  # noqa: E402  (torch.signal.windows)

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
true_divide = divide = div
multiply = mul
subtract = sub


def is_tensor(obj) -> "builtins.bool":
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> "builtins.int":
    from .tracer.dispatch import check_tensor
    check_tensor(input, "numel", "input", 1)
    return input.numel()


def is_floating_point(input: Tensor) -> "builtins.bool":
    return input.is_floating_point()


def is_complex(input: Tensor) -> "builtins.bool":
    """False: fusetorch has no complex dtypes (out of scope, see README)."""
    return False


def get_default_dtype() -> dtype:
    return ir.dtypes.default_float()


def set_default_dtype(d: dtype) -> None:
    ir.dtypes.set_default_dtype(d)


def result_type(tensor1, tensor2) -> dtype:
    from .tracer.dispatch import promote_args
    return promote_args("add", [tensor1, tensor2])[0]


__version__ = "2.13.0+fusetorch.0.1.0"  # (a TorchVersion from version.py at the end)

from .tracer.functional_histogram import histogram, histogramdd  # noqa: E402
from .tracer.functional_segment import segment_reduce  # noqa: E402


def __getattr__(name: str):
    # only reached for names this module lacks: PyTorch names left out on purpose say so
    # (`_out_of_scope.py`); any other is Python's own AttributeError
    import sys
    if name in ("_dynamo", "_inductor"):  # imported when first named, as PyTorch does
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    from ._out_of_scope import TORCH, missing
    raise missing("module 'fusetorch'", "torch", name, TORCH, obj=sys.modules[__name__])

from . import _inplace_functions  # noqa: E402  (torch.abs_, torch.dropout_, torch.greater, ...)
from . import _aten_nn  # noqa: E402  (torch.conv2d, torch.batch_norm, torch.lstm: ATen's forms)
from . import _global_state, _tensor_extras, storage  # noqa: E402,F401  (torch.get_rng_state, ...)
from .storage import StorageBase, TypedStorage, UntypedStorage  # noqa: E402,F401
Storage = storage.LEGACY["FloatStorage"]  # (PyTorch's default legacy storage class)
# the op table's unary functions and the modules' PUBLIC tables (torch.exp, torch.remainder,
# torch.tril, torch.det, torch.abs_, torch.conv2d, torch.complex64, ...), as explicit imports
# generated by `python -m fusetorch._api.generate`
from ._api.torch_names import *  # noqa: E402,F401,F403
from ._aten_bags import embedding_bag  # noqa: E402  (torch.embedding_bag: ATen's four results)
from . import (compiler, func, functional, futures, hub, library, mps, mtia,  # noqa: E402,F401
               ops, overrides, quasirandom, random, return_types, torch_version, types,
               version, xpu)
vmap = func.vmap
fork, wait, Future = futures.fork, futures.wait, futures.Future
GradScaler = amp.GradScaler
to_dlpack = utils.dlpack.to_dlpack
unsafe_split_with_sizes = split_with_sizes  # noqa: F821  (functional_pieces: PyTorch's alias)
Tensor.unsafe_split_with_sizes = Tensor.split_with_sizes
torch = _sys.modules[__name__]  # (PyTorch's `torch.torch`)
__version__ = version.__version__
cudnn_is_acceptable = _global_state.cudnn_is_acceptable
# names PyTorch's namespace holds from its own imports and build flags
import builtins, ctypes, functools, glob, importlib, inspect, math, os, platform  # noqa: E402,E401,F401
import sys, textwrap, threading, warnings  # noqa: E402,E401,F401
from typing import TYPE_CHECKING  # noqa: E402,F401
USE_GLOBAL_DEPS, USE_RTLD_GLOBAL_WITH_LIBTORCH = True, False
windows = signal.windows  # (torch.windows: PyTorch's namespace holds torch.signal.windows)
bit = ir.dtypes.OUT_OF_SCOPE["uint1"]
legacy_contiguous_format = contiguous_format  # (PyTorch's prints as torch.contiguous_format)
# What import made lives as long as the process: kept out of the cyclic collector's full passes,
# which otherwise traverse it all (~50k objects, ~40 ms) each time a loop's allocations trigger
# one (a recorded op allocates several objects: in actor_critic one main() in five paid it)
import gc as _gc  # noqa: E402
_gc.freeze()
del _gc
