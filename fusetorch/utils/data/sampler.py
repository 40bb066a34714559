"""Samplers: the order in which a DataLoader visits a map-style dataset's indices.

Semantics, error types and messages follow `torch.utils.data.sampler` (PyTorch 2.13). Random
draws come from a `fusetorch.Generator` when one is given, else from the global generator, so
`fusetorch.manual_seed` makes every epoch's order reproducible.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import numpy as np

from ...ir import dtypes as dt
from ...runtime import eager
from ...tracer.creation import Generator, as_tensor, randint, randperm

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]

T_co = TypeVar("T_co", covariant=True)


def _numpy_rng(generator) -> np.random.Generator:
    """The numpy stream behind a fusetorch Generator (None: the global one, read at call time
    because `manual_seed` replaces it)."""
    return eager.GENERATOR.np if generator is None else generator._g.np


def draw_seed(generator=None) -> int:
    """A fresh 63-bit seed from `generator` (PyTorch: `torch.empty((), dtype=torch.int64)
    .random_(generator=generator).item()`)."""
    return int(_numpy_rng(generator).integers(0, 2**63 - 1, dtype=np.int64))


class Sampler(Generic[T_co]):
    """Base class: subclasses define `__iter__` (indices, or lists of indices for a batch
    sampler) and usually `__len__`."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """`0, 1, ..., len(data_source) - 1`."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation of the indices each epoch (repeated and truncated to `num_samples`
    when that is given), or `num_samples` indices drawn with replacement."""

    data_source: Sized
    replacement: bool

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # the dataset's size may change between epochs: read it each time
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.generator is None:
            # one seed from the global stream per epoch, as PyTorch does
            generator = Generator().manual_seed(draw_seed())
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(n, (32,), generator=generator).tolist()
            yield from randint(n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order, without replacement."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """`num_samples` indices in `[0, len(weights))` drawn with probabilities proportional to
    `weights` (with or without replacement, like `torch.multinomial`)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) \
                or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=dt.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from _multinomial(self.weights.tolist(), self.num_samples, self.replacement,
                                self.generator)

    def __len__(self) -> int:
        return self.num_samples


def _multinomial(weights: list, n: int, replacement: bool, generator) -> list:
    """`torch.multinomial(weights, n, replacement)` for one row, with its error messages. There
    is no multinomial primitive: this draws from the generator's numpy stream directly."""
    w = np.asarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if w.sum() <= 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and n > w.size:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = _numpy_rng(generator)
    if replacement:
        return rng.choice(w.size, size=n, replace=True, p=w / w.sum()).tolist()
    # without replacement, PyTorch's way: the n largest of w / Exp(1) keys (zero weights last)
    with np.errstate(divide="ignore"):
        keys = w / rng.standard_exponential(w.size)
    return np.argsort(-keys, kind="stable")[:n].tolist()


class BatchSampler(Sampler[list]):
    """Groups another sampler's indices into lists of `batch_size` (the last one shorter
    unless `drop_last`)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[sampler_iter] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
