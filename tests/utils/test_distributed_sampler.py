"""DistributedSampler: PyTorch's sharding (expected shards worked out by hand from its
algorithm, and checked by hand against torch 2.13), shuffling per epoch."""
import pytest

import fusetorch as torch
from fusetorch.utils.data import DataLoader, DistributedSampler, TensorDataset


@pytest.mark.parametrize("n, world, drop_last, shards", [
    (10, 3, False, [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]),   # padded with the head
    (10, 3, True, [[0, 3, 6], [1, 4, 7], [2, 5, 8]]),
    (2, 5, False, [[0], [1], [0], [1], [0]]),                       # padding repeats the list
    (7, 2, True, [[0, 2, 4], [1, 3, 5]]),
])
def test_shards_without_shuffle(n, world, drop_last, shards):
    got = [list(DistributedSampler(range(n), world, r, shuffle=False, drop_last=drop_last))
           for r in range(world)]
    assert got == shards
    assert len(DistributedSampler(range(n), world, 0, drop_last=drop_last)) == len(shards[0])


def test_shuffled_shards_partition_one_permutation_per_epoch():
    n, world = 12, 4
    samplers = [DistributedSampler(range(n), world, r, seed=3) for r in range(world)]
    orders = []
    for epoch in range(3):
        for s in samplers:
            s.set_epoch(epoch)
        shards = [list(s) for s in samplers]
        assert sorted(i for sh in shards for i in sh) == list(range(n))
        interleaved = [shards[k % world][k // world] for k in range(n)]
        orders.append(interleaved)
    assert orders[0] != orders[1]                       # a new shuffle each epoch
    for s in samplers:
        s.set_epoch(0)
    assert [list(s) for s in samplers][0] == orders[0][0::world]  # reproducible
    other_seed = DistributedSampler(range(n), world, 0, seed=4)
    assert list(other_seed) != orders[0][0::world]


def test_with_dataloader():
    data = TensorDataset(torch.arange(8.0))
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 2, 1,
                                                                       shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1.0, 3.0], [5.0, 7.0]]


def test_errors_as_pytorch():
    with pytest.raises(ValueError,
                       match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(3), 2, 2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(3))
