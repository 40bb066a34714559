"""Shared-memory storage for CPU tensors: anonymous files mapped into memory.

A `Segment` is an anonymous file (`memfd_create`; elsewhere an unlinked temporary file) mapped
with `mmap(MAP_SHARED)`. It has no name in the file system, so nothing can be left behind in
/dev/shm: the kernel frees it when the last file descriptor is closed and the last mapping is
gone, also when a process holding one is killed. Other processes get it as a file descriptor
(see `reductions.py`).

A tensor is shared when the numpy array under it (`Tensor._data`) looks into a segment: its
`.base` chain ends at the `Segment` (numpy arrays keep their base alive, so a segment lives
as long as any array over it). Each live segment keeps one file descriptor open, so that it can
be sent again; live segments are also indexed by their file's identity, so that a storage sent
back and forth maps once per process.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import tempfile
import threading
import weakref

import numpy as np

_libc = None
_MAP_FAILED = ctypes.c_void_p(-1).value
# (device, inode) of the file -> the live segment over it in this process
_LIVE: "weakref.WeakValueDictionary[tuple, Segment]" = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a fork while a feeder thread held the lock
    os.register_at_fork(after_in_child=lambda: globals().update(_LOCK=threading.Lock()))


def _c():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                             ctypes.c_int, ctypes.c_long]
        lib.munmap.restype = ctypes.c_int
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = lib
    return _libc


def _anonymous_file(nbytes: int) -> int:
    """A new file descriptor to a nameless file of `nbytes` bytes in memory."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("fusetorch", os.MFD_CLOEXEC)
    else:  # no memfd (macOS): a temporary file unlinked at once has no name either
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="fusetorch-", dir=shm)
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Segment:
    """One mapping of a shared anonymous file; unmapped and closed when garbage collected.
    numpy sees its bytes through `__array_interface__`."""

    __slots__ = ("fd", "addr", "nbytes", "key", "__weakref__")

    def __init__(self, fd: int, nbytes: int, key: tuple):
        self.fd = -1
        self.addr = None
        addr = _c().mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == _MAP_FAILED:
            err = ctypes.get_errno()
            raise RuntimeError(f"unable to mmap {nbytes} bytes of shared memory: "
                               f"{os.strerror(err)} ({err})")
        self.fd, self.addr, self.nbytes, self.key = fd, addr, nbytes, key

    @property
    def __array_interface__(self) -> dict:
        return {"data": (self.addr, False), "shape": (self.nbytes,), "typestr": "|u1",
                "version": 3}

    def __del__(self, _close=os.close):  # bound now: at interpreter exit `os` may be gone
        if self.addr is not None and _libc is not None:
            _libc.munmap(self.addr, self.nbytes)
            self.addr = None
        if self.fd >= 0:
            _close(self.fd)
            self.fd = -1


def new_segment(nbytes: int) -> Segment:
    """A fresh zero-filled segment of at least one byte (mmap refuses length 0)."""
    nbytes = max(int(nbytes), 1)
    fd = _anonymous_file(nbytes)
    try:
        st = os.fstat(fd)
        seg = Segment(fd, nbytes, (st.st_dev, st.st_ino))
    except BaseException:
        os.close(fd)
        raise
    with _LOCK:
        _LIVE[seg.key] = seg
    return seg


def attach_segment(fd: int, nbytes: int) -> Segment:
    """The segment over the file `fd` (received from another process; this takes ownership of
    `fd`). A file this process already maps is mapped once: the existing segment is returned
    and the extra descriptor closed."""
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        with _LOCK:
            seg = _LIVE.get(key)
            if seg is None:
                seg = Segment(fd, max(int(nbytes), 1), key)
                _LIVE[key] = seg
                return seg
    except BaseException:
        os.close(fd)
        raise
    if seg.fd != fd:  # a start method passing the same descriptor twice hands us seg.fd again
        os.close(fd)
    return seg


def segment_of(a) -> Segment | None:
    """The segment under numpy array `a`, or None when `a` is ordinary memory."""
    while isinstance(a, np.ndarray):
        a = a.base
    return a if type(a) is Segment else None


def data_ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def view(seg: Segment, offset: int, shape, strides, dtype) -> np.ndarray:
    """The array of `dtype`, `shape` and byte `strides` (None: C order) starting `offset`
    bytes into `seg`."""
    return np.ndarray(tuple(shape), np.dtype(dtype), buffer=np.asarray(seg), offset=offset,
                      strides=None if strides is None else tuple(strides))


def move_to_shared(arrays: list) -> list:
    """New arrays over one new segment holding the bytes `arrays` span, each with its old
    layout. `arrays[0]` spans the others (a tensor's root and its views)."""
    lo, hi = np.lib.array_utils.byte_bounds(arrays[0])
    seg = new_segment(hi - lo)
    if hi > lo:
        np.asarray(seg)[: hi - lo] = np.asarray(_Window(lo, hi - lo))
    return [view(seg, data_ptr(a) - lo, a.shape, a.strides, a.dtype) for a in arrays]


class _Window:
    """Read-only bytes at an address, to copy memory that may have gaps (a strided array's
    span) with one memcpy."""

    __slots__ = ("__array_interface__",)

    def __init__(self, addr: int, nbytes: int):
        self.__array_interface__ = {"data": (addr, True), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}
