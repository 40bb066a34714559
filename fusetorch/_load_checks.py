"""What `fusetorch.load` checks in a file beyond its syntax: the header's numbers before any
storage is allocated (as Python ints, so no product or sum can overflow while checking), and
the keys of each dict and set before it is built.

A checkpoint is untrusted input and its sha256 proves nothing (anyone who edits a file
recomputes it), so every layout is checked here the way the compiled kernels will use it: in
whole elements. Kernels take strides in elements (byte strides floor-divided by the item
size), so a byte layout that is inside its storage can still make a kernel read outside it; a
float32 tensor with byte stride -1 walks back four bytes per element from a pointer that only
covers one.
"""
from __future__ import annotations

import math
import os

MAX_ELEMENTS_ENV = "FUSETORCH_LOAD_MAX_ELEMENTS"
# A tensor may describe more elements than its storage holds (zero strides from `expand`,
# overlapping views), so a 400-byte file can describe 10**12 elements that every reduction
# would then walk for hours. Such tensors load up to this many elements (about a second per
# pass over float32); more only when the environment variable asks for it. A tensor whose
# element count fits in its storage is never refused: the file paid for its elements.
DEFAULT_MAX_ELEMENTS = 1 << 28
_INT64 = 1 << 63  # kernels index with int64: every size, stride and offset must fit one


def show(n: int) -> str:
    """An integer for an error message, short even when a hostile header makes it huge."""
    return str(n) if abs(n) < 1 << 64 else f"{'-' if n < 0 else ''}~2**{abs(n).bit_length() - 1}"


def max_elements() -> int:
    """The limit on elements a tensor may describe beyond its storage (see above)."""
    raw = os.environ.get(MAX_ELEMENTS_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_ELEMENTS
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{MAX_ELEMENTS_ENV}={raw!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"{MAX_ELEMENTS_ENV}={raw!r} must not be negative")
    return value


def storage_error(table: list, data_len: int) -> str | None:
    """Why the storage table is unsound, or None. Each entry must lie inside the data and no
    two may share a byte: `save` never writes overlapping entries, and loading each one as its
    own copy would let a 1 MiB file with thousands of entries over the same bytes allocate
    gigabytes. Refusing keeps the buffers load allocates within the data's size; sharing one
    buffer between overlapping entries instead would alias storages the writer kept apart."""
    spans = []
    for i, s in enumerate(table):
        if not (type(s) is dict and type(s.get("offset")) is int
                and type(s.get("nbytes")) is int):
            return f"storage {i}: bad entry"
        lo, n = s["offset"], s["nbytes"]
        if lo < 0 or n < 0 or lo + n > data_len:
            return (f"storage {i}: bytes [{show(lo)}, {show(lo + n)}) outside the data "
                    f"({data_len} bytes)")
        if n:
            spans.append((lo, lo + n, i))
    spans.sort()
    for (_, end, i), (lo, _, j) in zip(spans, spans[1:]):
        if lo < end:
            return f"storages {i} and {j} overlap"
    return None


def fits_int64(shape: list, strides: list, offset: int) -> bool:
    """Whether every size, stride and offset fits the int64 arithmetic kernels index with."""
    return all(0 <= n < _INT64 for n in shape) and all(-_INT64 < s < _INT64 for s in strides) \
        and 0 <= offset < _INT64


def layout_error(shape: list, strides: list, offset: int, itemsize: int, nbytes: int,
                 negative_strides: bool) -> str | None:
    """Why a non-empty array with this layout (byte strides and offset, as the header holds
    them) is unsafe in a storage of `nbytes` bytes, or None. Exact, in elements: the strides
    and the offset are whole elements, and the first and last element reached (negative
    strides included) lie inside the storage's whole elements. Only numpy arrays may have
    negative strides: tensors never do (`from_numpy` refuses them, as PyTorch does)."""
    if any(s % itemsize for s in strides):
        return f"byte strides {strides} are not whole elements of {itemsize} bytes"
    if offset % itemsize:
        return f"byte offset {offset} is not a whole number of {itemsize}-byte elements"
    if not negative_strides and any(s < 0 for s in strides):
        return f"negative strides {strides} (a tensor cannot have them)"
    first = offset // itemsize
    last = first
    for n, s in zip(shape, strides):
        reach = (n - 1) * (s // itemsize)
        if reach < 0:
            first += reach
        else:
            last += reach
    have = nbytes // itemsize
    if first < 0 or last >= have:
        return (f"reaches elements {first} to {last} of a storage holding {have} elements "
                f"of {itemsize} bytes")
    return None


def too_many_elements(shape: list, itemsize: int, nbytes: int, limit: int) -> int | None:
    """The element count a layout describes when it is above both its storage's element count
    and `limit`, else None. An empty tensor counts its largest slice (the product of its
    nonzero sizes): what a reduction over its empty dimension would fill."""
    count = math.prod(max(n, 1) for n in shape)
    return count if count > max(limit, nbytes // itemsize) else None


MAX_SAME_HASH = 16  # distinct keys of one dict or set with one hash


def most_sharing_one_hash(keys: list) -> int:
    """How many of `keys` share the most common hash (TypeError for an unhashable key).
    Counting cannot be flooded in turn: a hash is a 64-bit int and an int hashes to itself
    modulo 2**61 - 1, so at most 8 different hashes share a hash of their own."""
    counts: dict[int, int] = {}
    for k in keys:
        h = hash(k)
        counts[h] = counts.get(h, 0) + 1
    return max(counts.values(), default=0)


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of [lo, hi) byte spans as sorted disjoint spans."""
    out: list[list[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]
