"""In the style of the "Datasets & DataLoaders" tutorial and the torch.utils.data documentation:
a map-style Dataset with __len__/__getitem__ returning dicts, a custom Sampler yielding indices
grouped by length (a bucketing sampler), BatchSampler, a collate_fn padding variable-length
sequences with pad_sequence and returning lengths, default_collate of dicts and tuples,
random_split with fractions and a seeded generator, Subset, ConcatDataset, TensorDataset,
WeightedRandomSampler for class balance, an IterableDataset split over workers with
get_worker_info, DataLoader(drop_last=True) lengths, and a small model trained over the padded
batches. The checks are counts and orders the documentation defines."""
import math

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.nn.utils.rnn import pad_sequence
from fusetorch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                  IterableDataset, RandomSampler, Sampler, SequentialSampler,
                                  Subset, TensorDataset, WeightedRandomSampler, default_collate,
                                  get_worker_info, random_split)


class SequenceDataset(Dataset):
    """Sequences of random lengths, label: whether the sum is positive."""

    def __init__(self, n, generator):
        self.lengths = torch.randint(2, 7, (n,), generator=generator).tolist()
        self.seqs = [torch.randn(L, 3, generator=generator) for L in self.lengths]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()
        seq = self.seqs[idx]
        return {"seq": seq, "label": int(seq.sum() > 0)}


class BucketSampler(Sampler):
    """Indices sorted by length, cut into batches, batches shuffled."""

    def __init__(self, lengths, batch_size, generator=None):
        self.lengths, self.batch_size, self.generator = lengths, batch_size, generator

    def __iter__(self):
        order = sorted(range(len(self.lengths)), key=lambda i: self.lengths[i])
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for j in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[j]

    def __len__(self):
        return math.ceil(len(self.lengths) / self.batch_size)


def pad_collate(batch):
    seqs = [item["seq"] for item in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    labels = torch.tensor([item["label"] for item in batch])
    return pad_sequence(seqs, batch_first=True), lengths, labels


class RangeStream(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        assert end > start
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:  # single-process data loading, return the full iterator
            iter_start, iter_end = self.start, self.end
        else:  # in a worker process: split workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            iter_start = self.start + worker_info.id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


class MeanPoolClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, padded, lengths):
        mask = torch.arange(padded.size(1))[None, :] < lengths[:, None]
        h = torch.tanh(self.proj(padded)) * mask.unsqueeze(-1)
        return self.out(h.sum(1) / lengths.unsqueeze(1))


def main():
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    ds = SequenceDataset(24, g)
    assert len(ds) == 24 and set(ds[torch.tensor(3)]) == {"seq", "label"}

    train_set, val_set = random_split(ds, [0.75, 0.25], generator=torch.Generator().manual_seed(42))
    assert (len(train_set), len(val_set)) == (18, 6)
    assert sorted(train_set.indices + val_set.indices) == list(range(24))
    assert isinstance(train_set, Subset) and train_set[0]["seq"] is ds[train_set.indices[0]]["seq"]

    sampler = BucketSampler([ds.lengths[i] for i in train_set.indices], 4,
                            generator=torch.Generator().manual_seed(1))
    loader = DataLoader(train_set, batch_sampler=sampler, collate_fn=pad_collate)
    assert len(loader) == 5
    seen = []
    for padded, lengths, labels in loader:
        assert padded.shape == (len(lengths), int(lengths.max()), 3)
        assert int(lengths.max()) - int(lengths.min()) <= 4
        for row, L in zip(padded, lengths.tolist()):
            assert torch.count_nonzero(row[L:]).item() == 0
        seen.append(len(labels))
    assert sorted(seen) == [2, 4, 4, 4, 4]

    model = MeanPoolClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    first = last = None
    for epoch in range(6):
        total = 0.0
        for padded, lengths, labels in loader:
            opt.zero_grad()
            loss = criterion(model(padded, lengths), labels)
            loss.backward()
            opt.step()
            total += loss.item() * len(labels)
        total /= len(train_set)
        first = total if first is None else first
        last = total
    print(f"epoch loss {first:.4f} -> {last:.4f}")
    assert last < first

    # default_collate: dicts of tensors and ints become dicts of stacked tensors
    batch = default_collate([{"x": torch.ones(2), "y": 1}, {"x": torch.zeros(2), "y": 0}])
    assert batch["x"].shape == (2, 2) and batch["y"].tolist() == [1, 0]
    pairs = default_collate([(1.5, torch.tensor(2)), (2.5, torch.tensor(3))])
    assert pairs[0].dtype == torch.float64 and pairs[1].tolist() == [2, 3]

    x = torch.arange(10.0).unsqueeze(1)
    y = (torch.arange(10) % 3 == 0).long()
    tds = TensorDataset(x, y)
    both = ConcatDataset([tds, Subset(tds, [0, 1])])
    assert len(both) == 12 and both[10][0].item() == 0.0 and both.cumulative_sizes == [10, 12]
    assert list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)) == \
        [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(tds, batch_size=4, drop_last=True)) == 2
    assert len(DataLoader(tds, batch_size=4)) == 3
    assert sorted(RandomSampler(tds, generator=torch.Generator().manual_seed(3))) == list(range(10))

    # class balancing: weight each sample by the inverse frequency of its class
    class_counts = torch.bincount(y)
    weights = 1.0 / class_counts[y].double()
    wsampler = WeightedRandomSampler(weights, num_samples=4000, replacement=True,
                                     generator=torch.Generator().manual_seed(5))
    drawn = torch.tensor(list(wsampler))
    frac_pos = (y[drawn] == 1).float().mean().item()
    print(f"positive fraction after balancing {frac_pos:.3f} (before {y.float().mean():.3f})")
    assert abs(frac_pos - 0.5) < 0.05

    stream = RangeStream(3, 10)
    unbatched = list(DataLoader(stream, batch_size=None))
    assert unbatched == list(range(3, 10)) and type(unbatched[0]) is int
    assert [b.tolist() for b in DataLoader(stream, batch_size=3)] == [[3, 4, 5], [6, 7, 8], [9]]
    return last


if __name__ == "__main__":
    main()
