"""Recognising PyTorch's legacy checkpoint format, which fusetorch does not read: what
`torch.save` wrote before PyTorch 1.6 (and still writes with
`_use_new_zipfile_serialization=False`), a bare pickle stream whose first object is the
number 0x1950a86a20f9469cfc6c, then a protocol version, the pickled object and the storages'
raw bytes. Reading it means running its pickles outside a zip's record structure; PyTorch
itself can convert it (`torch.save(torch.load(path), path)` writes the zip format)."""
from __future__ import annotations

# the magic number as pickle's LONG1 opcode writes it (little-endian, 10 bytes)
LEGACY_MAGIC = (0x1950a86a20f9469cfc6c).to_bytes(10, "little")
HEAD_BYTES = 32  # enough for the magic after a protocol 4/5 frame header


def looks_like(head: bytes) -> bool:
    """Whether a file's first bytes are a pickle whose first object is the legacy magic."""
    return head[:1] == b"\x80" and LEGACY_MAGIC in head[:HEAD_BYTES]


def looks_like_pickle(head: bytes) -> bool:
    """A pickle stream of protocol 2 or later (what `pickle.dump` writes by default)."""
    return len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5


def message(name: str, head: bytes) -> str | None:
    """What to tell a user whose file is one of these, or None."""
    if looks_like(head):
        return (f"fusetorch.load: {name} is a PyTorch checkpoint in the legacy format (what "
                "torch.save wrote before PyTorch 1.6, or with "
                "_use_new_zipfile_serialization=False), which fusetorch does not read; in "
                "PyTorch, `torch.save(torch.load(path), path)` rewrites it in the zip format "
                "fusetorch reads")
    if looks_like_pickle(head):
        return (f"fusetorch.load: {name} is a Python pickle, not a checkpoint fusetorch reads "
                "(fusetorch never unpickles a bare pickle: loading one can run code)")
    return None
