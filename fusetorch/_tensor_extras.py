"""Tensor methods PyTorch scripts meet beside the math: `x.new(...)`, `x.get_device()`,
`x.apply_(fn)`, `x.map_(y, fn)`, `x.as_strided_(...)`, `x.dim_order()`, `x.is_set_to(y)`,
`x.real`, the deprecated non-in-place `resize`, and the answers a CPU tensor gives
(`is_inference`, `output_nr`).
"""
from __future__ import annotations

import warnings

from .tracer import creation as C
from .tracer import dispatch as D
from .tracer import functional as F
from .tracer import strided as _strided
from .tracer.methods import become_view, check_view_inplace
from .tracer.tensor import Size, Tensor


def get_device(self: Tensor) -> int:
    """-1 on the CPU, else the device's index."""
    dev = self._be.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


def is_inference(self: Tensor) -> bool:
    return False  # (fusetorch's inference_mode is no_grad: it makes no inference tensors)


def new(self: Tensor, *args, dtype=None, device=None) -> Tensor:
    """Legacy constructor in self's dtype and device: `x.new()` empty, `x.new(2, 3)` sizes
    (uninitialised), `x.new([1, 2])` data, `x.new(t)` an alias of t."""
    d = dtype or self._dtype
    dev = device or self._be.device
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].detach()
    if len(args) == 1 and isinstance(args[0], (list, tuple)) and not isinstance(args[0], Size):
        return C.tensor(args[0], dtype=d, device=dev)
    sizes = args[0] if len(args) == 1 and isinstance(args[0], Size) else args
    return C.empty(tuple(sizes) if sizes else (0,), dtype=d, device=dev)


def _real(self: Tensor) -> Tensor:
    return self


def _imag(self: Tensor) -> Tensor:
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: a contiguous copy of self with the same number of elements in `sizes`."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resized(self, sizes)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    D.check_tensor(tensor, "resize_as", "tensor", 1)
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resized(self, tuple(tensor.shape))


def _resized(self: Tensor, sizes: tuple) -> Tensor:
    shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) \
        else tuple(sizes)
    n = 1
    for s in shape:
        n *= int(s)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, "
                           "while preserving the number of elements. ")
    return F.reshape(self.contiguous(), shape)


def _host_map(self: Tensor, name: str, others: tuple, fn) -> Tensor:
    """`self[i] = fn(self[i], *(o[i] for o in others))` over every element, in place: Python
    calls on the host, as PyTorch's CPU-only apply_/map_/map2_."""
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    if self._be.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    for k, o in enumerate(others):
        D.check_tensor(o, name, "other" if k == 0 else f"tensor{k + 1}", k + 1)
    shape = tuple(self.shape)
    cols = [self.reshape(-1).tolist()] + [F.expand(o, shape).reshape(-1).tolist()
                                           for o in others]
    values = [fn(*vs) for vs in zip(*cols)]
    result = C.tensor(values, dtype=self._dtype).reshape(shape) if values else self
    if values:
        with warnings.catch_warnings():
            self.copy_(result)
    return self


def apply_(self: Tensor, callable) -> Tensor:
    return _host_map(self, "apply_", (), callable)


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    return _host_map(self, "map_", (tensor,), callable)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    return _host_map(self, "map2_", (x, y), callable)


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """self's data and autograd history as an instance of the Tensor subclass `cls`."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                        f"{getattr(cls, '__name__', type(cls).__name__)}")
    out = F.view(self, tuple(self.shape))
    out.__class__ = cls
    return out


def const_data_ptr(self: Tensor) -> int:
    return self.data_ptr()


def dim_order(self: Tensor) -> tuple:
    """The dims from outermost to innermost in memory (by stride, ties in dim order)."""
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both are the same memory with the same sizes and strides."""
    D.check_tensor(tensor, "is_set_to", "tensor", 1)
    return self._root() is tensor._root() and self.data_ptr() == tensor.data_ptr() and \
        tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride()


for _fn in (get_device, is_inference, new, resize, resize_as, apply_, map_, map2_,
            as_subclass, const_data_ptr, dim_order, is_set_to):
    setattr(Tensor, _fn.__name__, _fn)
Tensor.real = property(_real)
Tensor.imag = property(_imag)
Tensor.output_nr = property(lambda self: 0)  # (multi-output ops' outputs all report 0)


def as_strided_(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """as_strided_(size, stride, storage_offset=None) -> Tensor

    In-place version of `Tensor.as_strided`: self becomes the view of its storage with these
    sizes and strides (see `tracer/methods.py`, in-place views).
    """
    check_view_inplace(self)
    return become_view(self, _strided.as_strided(self, size, stride, storage_offset),
                       "AsStridedBackward0")


Tensor.as_strided_ = as_strided_


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def reinforce(self: Tensor, reward) -> None:
    raise RuntimeError(
        "reinforce() was removed.\nUse torch.distributions instead.\nSee "
        "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\nprobs = "
        "policy_network(state)\naction = probs.multinomial()\nnext_state, reward = "
        "env.step(action)\naction.reinforce(reward)\naction.backward()\n\nUse:\n\nprobs = "
        "policy_network(state)\n# NOTE: categorical is equivalent to what used to be called "
        "multinomial\nm = torch.distributions.Categorical(probs)\naction = m.sample()\n"
        "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\n"
        "loss.backward()\n")


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What `load_state_dict` puts in place of `self` for the state-dict entry `other`: other
    itself (a subclass overrides this to convert it)."""
    D.check_tensor(other, "module_load", "other", 1)
    return other.detach() if assign and other.requires_grad and not self.requires_grad \
        else other


def record_stream(self: Tensor, stream) -> None:
    """Nothing to record: fusetorch frees memory when the last tensor over it goes."""
    if self._be.device.type != "cuda":
        raise RuntimeError("unknown parameter type")


def _no_device(name: str):
    def method(self: Tensor, device=None, non_blocking: bool = False, memory_format=None):
        from ._out_of_scope import OutOfScopeError
        raise OutOfScopeError(f"fusetorch does not implement torch.Tensor.{name}: devices "
                              "other than CPU and CUDA are out of scope (see README)")
    method.__name__ = name
    return method


for _fn in (reinforce, module_load, record_stream):
    setattr(Tensor, _fn.__name__, _fn)
Tensor.volatile = property(_volatile)
for _name in ("xpu", "ipu", "mtia"):
    setattr(Tensor, _name, _no_device(_name))
# the dtype backward gives this tensor's gradient: its own (fusetorch accumulates in it)
Tensor.grad_dtype = property(lambda self: self._dtype)
