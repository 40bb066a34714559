"""A world of one process: 'gloo' started without an MPI launcher and world_size 1 (a DDP
script run as one process, `torchrun --nproc_per_node=1`). Every collective is its value for a
single rank (a reduction over one rank, a gather of one), so no MPI is needed."""
from __future__ import annotations

import numpy as np

from .c10d import Work


class LocalBackend:
    name = "gloo"
    rank, size = 0, 1

    def close(self) -> None:
        pass

    def barrier(self, async_op: bool = False):
        return Work([]) if async_op else None

    def all_reduce(self, a: np.ndarray, op, async_op: bool) -> Work:
        return Work([])  # (SUM, AVG, MIN, ... over one rank: the value itself)

    def broadcast(self, a: np.ndarray, src: int, async_op: bool) -> Work:
        return Work([])

    def all_gather(self, outs: list, a: np.ndarray, async_op: bool) -> Work:
        return Work([], lambda: np.copyto(outs[0], a, casting="unsafe"))

    def reduce_scatter(self, out: np.ndarray, ins: list, op, async_op: bool) -> Work:
        return Work([], lambda: np.copyto(out, ins[0], casting="unsafe"))
