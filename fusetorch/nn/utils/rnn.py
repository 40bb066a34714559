"""`nn.utils.rnn`: padding and packing variable-length sequences, as in PyTorch.

A `PackedSequence` holds the time steps of a batch sorted by decreasing length, step after
step: `data` [sum(lengths), *], `batch_sizes[t]` = how many sequences are longer than t (an
int64 CPU tensor), and the sorting permutation and its inverse (None when the caller's batch
was already sorted). Packing and unpacking are one `index_select` each (their index tables are
built on the host from the lengths, which decide the output's shape), so gradients flow through
them; the RNN layers run a packed batch step by step on shrinking batches.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Iterable

import numpy as np

from ...ir import dtypes as dt
from ...tracer import creation as C
from ...tracer import functional as F
from ...tracer.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

PackedSequence_ = namedtuple("PackedSequence_",
                             ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
# PyTorch's defaults for the last two fields
PackedSequence_.__new__.__defaults__ = (None, None)


def _ints(t) -> list:
    return [int(v) for v in (t.tolist() if isinstance(t, Tensor) else t)]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse permutation: `out[permutation[i]] = i`, as the position of each i in
    `permutation` (a one-hot argmax: tensor ops only, no read of the values, so compiled
    graphs do not break; n is a batch size)."""
    if permutation is None:
        return None
    n = permutation.shape[0]
    hits = F.eq(permutation.unsqueeze(0), C.arange(n, device=permutation.device).unsqueeze(1))
    return F.argmax(hits.to(dt.int64), 1)


def _host_sizes(sequence: "PackedSequence") -> list:
    """batch_sizes as Python ints: the copy the packing functions keep, else read (the shapes
    that follow depend on them)."""
    sizes = sequence.__dict__.get("_sizes")
    return list(sizes) if sizes is not None else _ints(sequence.batch_sizes)


def _with_sizes(sequence: "PackedSequence", sizes: list) -> "PackedSequence":
    sequence.__dict__["_sizes"] = tuple(sizes)
    return sequence


class PackedSequence(PackedSequence_):
    """The packed form of a batch of variable-length sequences (see the module docstring).
    Build one with `pack_padded_sequence` or `pack_sequence`, not by hand."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of "
                                 "PackedSequence should never be created manually. They should "
                                 "be instantiated by functions like pack_sequence and "
                                 "pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html"
                                 "#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise AssertionError("expected (data, batch_sizes)")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def pin_memory(self) -> "PackedSequence":
        return self

    def is_pinned(self) -> bool:
        return False

    def to(self, *args, **kwargs) -> "PackedSequence":
        """`data.to(...)`; the index tensors follow data's device, batch_sizes stays on CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = None if self.sorted_indices is None else \
            self.sorted_indices.to(device=data.device)
        unsorted_indices = None if self.unsorted_indices is None else \
            self.unsorted_indices.to(device=data.device)
        out = type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)
        return _with_sizes(out, _host_sizes(self))

    def cuda(self, *args, **kwargs) -> "PackedSequence":
        return self.to(*args, device="cuda", **kwargs)

    def cpu(self, *args, **kwargs) -> "PackedSequence":
        return self.to(*args, device="cpu", **kwargs)

    def double(self) -> "PackedSequence":
        return self.to(dtype=dt.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=dt.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=dt.float16)

    def long(self) -> "PackedSequence":
        return self.to(dtype=dt.int64)

    def int(self) -> "PackedSequence":
        return self.to(dtype=dt.int32)

    def short(self) -> "PackedSequence":
        return self.to(dtype=dt.int16)

    def char(self) -> "PackedSequence":
        return self.to(dtype=dt.int8)

    def byte(self) -> "PackedSequence":
        return self.to(dtype=dt.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _step_offsets(batch_sizes: list) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(batch_sizes)]).astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch [T, B, *] (or [B, T, *]) whose sequence b has `lengths[b]` steps.
    With `enforce_sorted` the lengths must decrease; otherwise the batch is sorted here and the
    permutation kept in the result."""
    if isinstance(lengths, Tensor) and lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.dim()}D {lengths.device} "
                           f"{dt.SCALAR_TYPE_NAMES[lengths.dtype.name]} tensor")
    lens = np.asarray(_ints(lengths), dtype=np.int64)
    if enforce_sorted:
        sorted_indices = unsorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = C.tensor(order, device=input.device)
        unsorted_indices = C.tensor(np.argsort(order), device=input.device)
        input = F.index_select(input, 0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    if lens.size != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={B})")
    if B and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if np.any(lens[1:] > lens[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if B and lens[0] > T:
        # PyTorch reads past the input here; refuse instead
        raise RuntimeError(f"Expected every length to be at most the input's sequence length "
                           f"{T}, but got a length of {int(lens[0])}")
    max_len = int(lens[0]) if B else 0
    batch_sizes = np.array([(lens > t).sum() for t in range(max_len)], dtype=np.int64)
    # row t * B + b of the flattened input, for each b < batch_sizes[t], step after step
    rows = np.concatenate([t * B + np.arange(n) for t, n in enumerate(batch_sizes)]) \
        if max_len else np.zeros(0, np.int64)
    data = F.index_select(F.flatten(input, 0, 1), 0, C.tensor(rows, device=input.device))
    out = PackedSequence(data, C.tensor(batch_sizes), sorted_indices, unsorted_indices)
    return _with_sizes(out, batch_sizes.tolist())


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple:
    """The inverse of `pack_padded_sequence`: (padded [T, B, *] or [B, T, *], lengths), in the
    caller's original batch order; T is `total_length` when given."""
    batch_sizes = _host_sizes(sequence)
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
    T = max_len if total_length is None else total_length
    data = sequence.data
    B = batch_sizes[0] if batch_sizes else 0
    n = data.shape[0]
    # each (t, b) reads its row of data, or row n: one row of padding appended to data
    table = np.full((T, B), n, dtype=np.int64)
    offsets = _step_offsets(batch_sizes)
    for t, bs in enumerate(batch_sizes):
        table[t, :bs] = offsets[t] + np.arange(bs)
    pad_row = C.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                     device=data.device)
    source = F.cat([data, pad_row], 0)
    padded = F.index_select(source, 0, C.tensor(table.reshape(-1), device=data.device))
    padded = padded.reshape((T, B) + tuple(data.shape[1:]))
    lengths = C.tensor(np.array([sum(1 for bs in batch_sizes if bs > b) for b in range(B)],
                                dtype=np.int64))
    if sequence.unsorted_indices is not None:
        padded = F.index_select(padded, 1, sequence.unsorted_indices)
        lengths = F.index_select(lengths, 0, sequence.unsorted_indices.cpu())
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences [L_i, *] into [max L, B, *] (or [B, max L, *]), padding each at its end
    (or start with `padding_side='left'`) with `padding_value`."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        short = max_len - s.size(0)
        if short:
            fill = C.full((short,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                          device=s.device)
            s = F.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return F.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:length] for seq, length in zip(padded_sequences, _ints(lengths))]


def pack_sequence(sequences: Iterable[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences [L_i, *] (decreasing lengths unless `enforce_sorted=False`)."""
    sequences = list(sequences)
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
