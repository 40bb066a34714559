"""How tensors cross processes: reductions registered with `multiprocessing`'s ForkingPickler.

Only inter-process sends use ForkingPickler (queues, pipes, a spawned Process's arguments, Pool
tasks), so `pickle.dumps` and `save` keep copying. A CPU tensor is first moved into shared
memory in place (as PyTorch's sender does), then sent as a file descriptor to its segment
(`multiprocessing.reduction.DupFd`: inherited by a process being spawned, else handed over
by the sender's resource-sharer thread on request) plus offset, shape, strides and dtype; the
receiver maps the same pages. Views travel as their own window into the segment.
"""
from __future__ import annotations

import gc
import pickle
import sys
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from ..ir import dtypes as dt
from ..runtime.device import NP_DTYPES, cpu_backend
from ..tracer import tensor as _tensor
from ..tracer.tensor import Tensor
from . import storage


def share_memory_(t: Tensor) -> Tensor:
    """Move `t`'s data into shared memory in place: the same Tensor object, autograd state and
    version counter. Its base and the base's other views (tensors) move with it; numpy arrays
    taken from them before (`.numpy()`) keep the old memory. CUDA tensors and tensors already
    shared are left alone."""
    if t._be.device.type != "cpu" or storage.segment_of(t._data) is not None:
        return t
    root = t._root()
    if root is not t and (storage.segment_of(root._data) is not None
                          or not _within(t._data, root._data)):
        root = t  # a view left behind by an earlier move, or not inside its base: alone
    tensors = [root] if root is t else [root, t]
    tensors += _aliases(root, tensors)
    moved = storage.move_to_shared([x._data for x in tensors])
    for x, a in zip(tensors, moved):
        x._data = a
    return t


def _aliases(root: Tensor, known: list) -> list:
    """Other tensors looking into `root`'s memory: its views (they hold `root` as `_base`) and
    tensors holding its very array (`.data`, `detach()`). Found by asking the garbage collector
    who refers to them, which walks the whole heap, so only when something else refers to the
    array owning the memory (numpy's views all refer to it): a fresh tensor is not scanned."""
    owner = root._data
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if sys.getrefcount(owner) <= 3:  # root's array (or its .base), `owner`, the argument
        return []
    seen = {id(x) for x in known}
    found = []
    for o in gc.get_referrers(root, root._data, owner):
        if isinstance(o, Tensor) and id(o) not in seen and o._be.device.type == "cpu" \
                and storage.segment_of(o._data) is None and _within(o._data, root._data):
            seen.add(id(o))
            found.append(o)
    return found


def empty_shared(shape: tuple, like: Tensor) -> Tensor:
    """An uninitialised CPU tensor in shared memory, of `like`'s dtype."""
    a = like._data
    n = int(np.prod(shape, dtype=np.int64)) * a.itemsize
    return Tensor._make(storage.view(storage.new_segment(n), 0, shape, None, a.dtype),
                        like._dtype, cpu_backend())


def is_shared(t: Tensor) -> bool:
    if t._be.device.type != "cpu":
        return True  # CUDA memory is shareable by IPC handles (PyTorch says True)
    return storage.segment_of(t._data) is not None


def _within(a: np.ndarray, b: np.ndarray) -> bool:
    alo, ahi = np.lib.array_utils.byte_bounds(a)
    blo, bhi = np.lib.array_utils.byte_bounds(b)
    return blo <= alo and ahi <= bhi



_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
             "autograd does not support crossing process boundaries.  If you just want to "
             "transfer the data, call detach() on the tensor before serializing (e.g., putting "
             "it on the queue).")


def reduce_tensor(t: Tensor):
    """ForkingPickler's reduction for tensors: a shared-memory handle, never a copy (CPU)."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(_NON_LEAF)
    if t._be.device.type != "cpu":  # no CUDA IPC yet: the data is copied
        return t.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    share_memory_(t)
    a = t._data
    seg = storage.segment_of(a)
    # the segment is an object of its own so that pickle's memo sends it once per message
    # (spawn refuses a descriptor listed twice)
    return (rebuild_tensor,
            (type(t), seg, storage.data_ptr(a) - seg.addr, a.shape, a.strides, a.dtype.str,
             t._dtype.name, t.requires_grad))


def reduce_segment(seg: storage.Segment):
    return (rebuild_segment, (DupFd(seg.fd), seg.nbytes))


def rebuild_segment(fd, nbytes: int) -> storage.Segment:
    return storage.attach_segment(fd.detach(), nbytes)


def rebuild_tensor(cls, seg: storage.Segment, offset: int, shape, strides, np_dtype: str,
                   dtype_name: str, requires_grad: bool) -> Tensor:
    d = dt.by_name(dtype_name)
    if d is dt.bfloat16:  # its numpy string, "<V2", names plain bytes
        np_dtype = NP_DTYPES[d]
    t = Tensor._make(storage.view(seg, offset, shape, strides, np_dtype), d, cpu_backend())
    from ..nn.parameter import Parameter
    if cls is Parameter:
        return Parameter(t, requires_grad)
    t.requires_grad = requires_grad  # the gradient stays behind, as in PyTorch
    return t


def init_reductions() -> None:
    """Register the tensor reductions with ForkingPickler (exact types, as it looks them up)."""
    from ..nn.parameter import Buffer, Parameter
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
    ForkingPickler.register(storage.Segment, reduce_segment)


# Tensor.share_memory_ and Tensor.is_shared call these (the tracer imports nothing from here)
_tensor.SHARING.update(share_memory_=share_memory_, is_shared=is_shared)
