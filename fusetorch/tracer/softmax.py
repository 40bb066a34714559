"""softmax and log_softmax, composed from tensor primitives (public as nn.functional.softmax
and nn.functional.log_softmax, and as Tensor.softmax / Tensor.log_softmax). They live in the
tracer, not nn, so that tensor methods need nothing from the layer above; `_owned` is shared
with nn.functional's other composites.
"""
from __future__ import annotations

import warnings

from ..ir import dtypes as dt
from ..ir.shapes import norm_dim
from . import autocast as _ac
from . import autograd as A
from . import dispatch as D
from . import functional as F
from .composite_programs import composite
from .tensor import Tensor

# (bound once: per-thread modules' attributes are looked up unspecialized)
apply, check_tensor, _AUTOCAST = D.apply, D.check_tensor, _ac._LOCAL


def _owned(result: Tensor, *inputs) -> Tensor:
    """A layer's output owns its storage in PyTorch; here it can be a reshape of a temporary
    made inside the layer (a matmul or gather result). Drop that view link, so that in-place
    ops may follow (ReLU(inplace=True) after a bias-free conv or a max pool), which views of
    tensors that require grad refuse. Safe where it is called: the temporary is unreachable
    and no backward rule saved it. Views of the caller's own inputs keep their link."""
    base = result._base
    if base is not None and all(base is not x and base is not x._base
                                for x in inputs if isinstance(x, Tensor)):
        result._base = None
    return result


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _prepare(input: Tensor, dim, dtype, name: str, stacklevel: int):
    nd = input._data.ndim
    if dim is None:
        dim = _softmax_dim(name, nd, stacklevel + 1)
    if dtype is not None:
        input = D.cast(input, dtype)
    if input._dtype.category != 2:  # (is_floating_point without the property call)
        raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for '
                                  f"'{D._torch_name(input._dtype)}'")
    x = input if nd else F.reshape(input, (1,))
    return input, x, norm_dim(dim, max(nd, 1))


@composite(small=False)  # (one primitive: a small input's replay would only add the key)
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: dt.DType | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along dim, computed as exp(x - max) for stability."""
    check_tensor(input, "softmax", "input", 1)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("softmax", softmax, (input, dim, _stacklevel + 2, dtype), {})
    orig, x, d = _prepare(input, dim, dtype, "softmax", _stacklevel)
    r = apply("softmax", [x], {"dim": d})  # (one primitive: ir/norm_ops.py says why)
    if x is orig:  # (its op names it SoftmaxBackward0, its input the (cast) input: PyTorch's)
        return r
    # a 0-d input, computed as one element
    return A.label_recorded(_owned(F.reshape(r, ()), input), "SoftmaxBackward0", orig)


@composite(small=False)
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: dt.DType | None = None) -> Tensor:
    """x - logsumexp(x) along dim, with the max subtracted first so exp never overflows."""
    check_tensor(input, "log_softmax", "input", 1)
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: tracer/autocast.py
        return _ac.call("log_softmax", log_softmax, (input, dim, _stacklevel + 2, dtype), {})
    orig, x, d = _prepare(input, dim, dtype, "log_softmax", _stacklevel)
    r = apply("log_softmax", [x], {"dim": d})
    if x is orig:  # (its op names it LogSoftmaxBackward0, its input the (cast) input: PyTorch's)
        return r
    # a 0-d input, computed as one element
    return A.label_recorded(_owned(F.reshape(r, ()), input), "LogSoftmaxBackward0", orig)
