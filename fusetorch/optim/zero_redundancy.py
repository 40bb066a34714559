"""`torch.distributed.optim.ZeroRedundancyOptimizer`: each rank keeps the optimizer state of
only its share of the parameters, as PyTorch's does (ZeRO stage 1).

The partition is PyTorch's: per parameter group, the parameters sorted by size (largest first)
go one by one to the rank with the fewest elements so far. Each rank steps a local instance of
the wrapped optimizer over its share (its gradients are whole: DistributedDataParallel, or the
script, has averaged them), then every parameter is broadcast from the rank that owns it, so
all ranks hold the same parameters after each step. Without a process group (or with one
rank) the local optimizer holds every parameter: the wrapped optimizer exactly.
`consolidate_state_dict(to)` collects every rank's state on rank `to` (broadcast_object_list),
whose `state_dict()` is then the wrapped optimizer's over all parameters; `load_state_dict`
keeps each rank's share."""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .. import distributed as dist
from ..tracer.autograd import no_grad
from ..tracer.tensor import Tensor
from .optimizer import Optimizer


class ZeroRedundancyOptimizer(Optimizer):
    """Shards `optimizer_class`'s state over the ranks of `process_group` (the default group;
    none: a single process). `parameters_as_bucket_view` is accepted (the parameters keep their
    own memory; the result is the same); `overlap_with_ddp=True` needs DDP communication hooks,
    which fusetorch lacks, and raises."""

    def __init__(self, params: Iterable, optimizer_class: type, process_group=None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults: Any) -> None:
        if overlap_with_ddp:
            raise NotImplementedError("fusetorch's ZeroRedundancyOptimizer does not support "
                                      "overlap_with_ddp=True (DDP communication hooks)")
        self._optimizer_class = optimizer_class
        self.process_group = process_group
        self.parameters_as_bucket_view = parameters_as_bucket_view
        if dist.is_initialized():
            self.world_size = dist.get_world_size(process_group)
            self.rank = dist.get_rank(process_group)
        else:
            self.world_size, self.rank = 1, 0
        super().__init__(params, defaults)
        self._consolidated: dict | None = None
        self._build()

    # the partition -------------------------------------------------------------------------

    def _build(self) -> None:
        per_rank: list[list[dict]] = [[] for _ in range(self.world_size)]
        sizes = [0] * self.world_size
        self._owner: dict[int, int] = {}
        for group in self.param_groups:
            shares: list[list[Tensor]] = [[] for _ in range(self.world_size)]
            for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                rank = sizes.index(min(sizes))
                shares[rank].append(p)
                sizes[rank] += p.numel()
                self._owner[id(p)] = rank
            for rank, share in enumerate(shares):
                per_rank[rank].append({**group, "params": share})
        self._partition = per_rank
        local = [g for g in per_rank[self.rank] if g["params"]]
        old = getattr(self, "optim", None)
        if local:
            self.optim = self._optimizer_class(local, **self.defaults)
        else:  # a rank with no parameters steps nothing
            self.optim = None
        if old is not None and self.optim is not None:
            for p, st in old.state.items():
                if id(p) in {id(q) for g in local for q in g["params"]}:
                    self.optim.state[p] = st
        # the local optimizer's groups stand for the exposed ones that have parameters here
        self._local_of = [i for i, g in enumerate(per_rank[self.rank]) if g["params"]]
        self._all_params = [p for g in self.param_groups for p in g["params"]]

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        if hasattr(self, "_optimizer_class") and hasattr(self, "_partition"):
            self._build()

    def _sync_options(self, src: list[dict], dst: list[dict]) -> None:
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k != "params":
                    d[k] = v

    # stepping -------------------------------------------------------------------------------

    def step(self, closure: Callable | None = None, **kwargs: Any):
        loss = None
        if self.optim is not None:
            self._sync_options([self.param_groups[i] for i in self._local_of],
                               self.optim.param_groups)
            loss = self.optim.step(closure=closure, **kwargs)
            self._sync_options(self.optim.param_groups,
                               [self.param_groups[i] for i in self._local_of])
        elif closure is not None:  # a rank with no parameters still evaluates the closure
            loss = closure()
        if self.world_size > 1:
            with no_grad():
                for p in self._all_params:
                    dist.broadcast(p.data, self._owner[id(p)], self.process_group)
        return loss

    # state ----------------------------------------------------------------------------------

    def _index(self) -> dict[int, int]:
        return {id(p): i for i, p in enumerate(self._all_params)}

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collect every rank's share of the state on rank `to` (every rank must call it)."""
        index = self._index()
        mine = {} if self.optim is None else {
            index[id(p)]: st for p, st in self.optim.state.items()}
        if self.world_size == 1:
            self._consolidated = mine
            return
        merged: dict = {}
        for rank in range(self.world_size):
            box = [mine if rank == self.rank else None]
            dist.broadcast_object_list(box, src=rank, group=self.process_group)
            if self.rank == to:
                merged.update(box[0])
        self._consolidated = merged if self.rank == to else None

    def state_dict(self) -> dict[str, Any]:
        if self._consolidated is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               "call `consolidate_state_dict(to=...)` on all ranks beforehand "
                               "if you meant to save the global state.")
        self.state.clear()
        for i, st in self._consolidated.items():
            self.state[self._all_params[i]] = st
        try:
            return super().state_dict()
        finally:
            self.state.clear()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        loaded = dict(self.state)
        self.state.clear()
        self._build()
        if self.optim is not None:
            self.optim.state.clear()
            for p, st in loaded.items():
                if self._owner[id(p)] == self.rank:
                    self.optim.state[p] = st
        self._consolidated = None
