"""DistributedSampler: each rank's share of a dataset's indices (torch.utils.data.distributed).

PyTorch's algorithm step for step: one permutation seeded with `seed + epoch` (the same on every
rank), padded by repeating its head up to a multiple of the number of replicas (or cut, with
`drop_last`), then rank r takes every num_replicas-th index from r. The permutation is fusetorch's
`randperm`, whose generator differs from PyTorch's, so the shuffled order (not the sharding)
differs from PyTorch's for the same seed.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

from ...tracer.creation import Generator, randperm
from .sampler import Sampler


class DistributedSampler(Sampler):
    """>>> sampler = DistributedSampler(dataset)          # rank and replicas from the group
    >>> loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    >>> for epoch in range(n): sampler.set_epoch(epoch); ...
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        indices = indices[self.rank:self.total_size:self.num_replicas]
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """A different (but on every rank the same) shuffle for each epoch."""
        self.epoch = epoch
