"""DistributedDataParallel: every rank holds the whole model and a shard of each batch; gradients
are averaged over ranks during backward, so every rank takes the same optimizer step.

How gradients travel: parameters are grouped into buckets (reverse registration order, which is
about the order backward finishes them; one dtype and device each; by default a 1 MiB first
bucket, then 25 MiB ones; all `bucket_cap_mb` when it is given). A post-accumulate hook on each
parameter copies its fresh gradient into its bucket's flat buffer; a full bucket is all-reduced
without blocking (buckets are launched strictly in order, so every rank issues the same
collectives in the same sequence). A callback queued on the backward waits for all of them,
divides by the world size and writes the averages back into `.grad`. fusetorch's backward computes every gradient in one graph run and then
accumulates leaves, so the reductions overlap each other and the copies into later buckets, not
the backward arithmetic itself.
"""
from __future__ import annotations

import contextlib

from ... import distributed as dist
from ...ir.dtypes import int32
from ...ir.graph import toposort
from ...tracer import autograd as A
from ...tracer.autograd import no_grad
from ...tracer.creation import zeros
from ...tracer.tensor import Tensor
from ..module import Module

_FIRST_BUCKET_BYTES = 1 << 20  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
_UNFINISHED = ("Expected to have finished reduction in the prior iteration before starting a "
               "new one. This error indicates that your module has parameters that were not used "
               "in producing loss. You can enable unused parameter detection by passing the "
               "keyword argument `find_unused_parameters=True` to "
               "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
               "function outputs participate in calculating loss.")


class _Bucket:
    def __init__(self, params: list):
        self.params = params
        self.offsets, n = [], 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.flat = zeros(n, dtype=params[0].dtype, device=params[0].device)
        self.pending = len(params)
        self.work = None


class DistributedDataParallel(Module):
    """Wrap `module` for data-parallel training (after `dist.init_process_group`):

    >>> model = DistributedDataParallel(nn.Linear(10, 1))
    >>> loss_fn(model(x_shard), y_shard).backward()   # .grad: the average over all ranks
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False):
        super().__init__()
        self.world_size = dist.get_world_size(process_group)  # ValueError before init
        self.process_group = process_group
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        if device_ids is not None and all(d.type == "cpu" for d in devices):
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only "
                             "work with single-device/multiple-device GPU modules or CPU modules, "
                             f"but got device_ids {device_ids}, output_device {output_device}, "
                             f"and module parameters {devices}.")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2 ** 20)
        # PyTorch: a small first bucket (its reduction starts early) unless the cap was given
        self._first_bucket_cap = _FIRST_BUCKET_BYTES if bucket_cap_mb is None \
            else self.bucket_bytes_cap
        self.require_backward_grad_sync = True
        if init_sync:
            self._broadcast_coalesced(list(module.parameters()) + list(module.buffers()))
        self._buckets = self._assign_buckets(params)
        self._where = {id(p): (b, k) for b in self._buckets for k, p in enumerate(b.params)}
        self._next = 0           # the next bucket to launch
        self._active = False     # a backward has started reducing and not finished
        self._unused: list = []  # parameters the last forward did not use (find_unused_parameters)
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]

    def _assign_buckets(self, params: list) -> list:
        buckets, open_ = [], {}
        cap = self._first_bucket_cap
        for p in reversed(params):
            key = (p.dtype, str(p.device))
            group, size = open_.get(key, ([], 0))
            group.append(p)
            size += p.numel() * p.element_size()
            if size >= cap:
                buckets.append(group)
                open_.pop(key, None)
                cap = self.bucket_bytes_cap
            else:
                open_[key] = (group, size)
        buckets.extend(g for g, _ in open_.values())
        return [_Bucket(g) for g in buckets]

    def _broadcast_coalesced(self, tensors: list) -> None:
        """Rank 0's values into every rank's tensors: one broadcast per dtype and device."""
        if self.world_size == 1:
            return
        groups: dict = {}
        for t in tensors:
            groups.setdefault((t.dtype, str(t.device)), []).append(t)
        with no_grad():
            for ts in groups.values():
                xp = ts[0]._be.xp
                flat = Tensor._make(xp.concatenate([t._data.reshape(-1) for t in ts]),
                                    ts[0].dtype, ts[0]._be)
                dist.broadcast(flat, 0, self.process_group)
                n = 0
                for t in ts:
                    t._data[...] = flat._data[n:n + t.numel()].reshape(t._data.shape)
                    n += t.numel()

    # ------------------------------------------------------------ forward

    def forward(self, *inputs, **kwargs):
        if self._active:  # a backward stopped half-way (a hook raised): start clean, as PyTorch
            self._reset()
            raise RuntimeError(_UNFINISHED)
        if self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast_coalesced(buffers)
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and A.is_grad_enabled():
            self._unused = self._unused_params(out)
        return out

    def _unused_params(self, out) -> list:
        roots = [t._node for t in _tensors(out) if t._node is not None]
        used = set()
        for n in toposort(roots):
            leaf = A._leaf_of(n)
            if leaf is not None:
                used.add(id(leaf))
        return [p for b in self._buckets for p in b.params if id(p) not in used]

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside this block accumulates gradients locally, without communication;
        the first backward after it averages everything accumulated."""
        old, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ------------------------------------------------------------ backward

    def _grad_ready(self, p: Tensor) -> None:
        if not self.require_backward_grad_sync:
            return
        if not self._active:
            self._active = True
            A.queue_callback(self._finish)
            for q in self._unused:  # contribute zeros for what this rank did not use
                self._mark(q, None)
        self._mark(p, p._grad)

    def _mark(self, p: Tensor, grad) -> None:
        b, k = self._where[id(p)]
        n = p.numel()
        view = b.flat._data[b.offsets[k]:b.offsets[k] + n]
        if grad is None:
            view[...] = 0
        else:
            view[...] = grad._data.reshape(-1)
        b.pending -= 1
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            bucket = self._buckets[self._next]
            bucket.work = dist.all_reduce(bucket.flat, group=self.process_group, async_op=True)
            self._next += 1

    def _finish(self) -> None:
        if self._next < len(self._buckets):
            self._reset()
            raise RuntimeError(_UNFINISHED)
        used = None
        if self.find_unused_parameters:  # which parameters some rank used: only those get .grad
            flags = zeros(len(self._where), dtype=int32)
            ids = {id(p) for p in self._unused}
            flags._data[:] = [0 if id(p) in ids else 1 for b in self._buckets for p in b.params]
            dist.all_reduce(flags, group=self.process_group)
            used = iter(flags._data.tolist())
        for b in self._buckets:
            b.work.wait()
            flat, xp = b.flat._data, b.flat._be.xp
            for p, off in zip(b.params, b.offsets):
                if used is not None and not next(used):
                    continue
                total = flat[off:off + p.numel()].reshape(p._data.shape)
                if p._grad is None:
                    p._grad = Tensor._make(total / self.world_size, p.dtype, p._be)
                else:  # the average written straight into .grad: one pass over the bucket
                    xp.divide(total, self.world_size, out=p._grad._data)
        self._reset()

    def _reset(self) -> None:
        for b in self._buckets:
            b.pending, b.work = len(b.params), None
        self._next, self._active, self._unused = 0, False, []


def _tensors(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []
