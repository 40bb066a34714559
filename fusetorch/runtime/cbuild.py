"""Build C source into a shared library, cache it on disk, and load it with cffi.

ABI mode (gcc to a .so, then `dlopen`) because it builds 3-5x faster than cffi's API mode and
compile latency is a target. "Out-of-line": the declarations are parsed once, when the library
is built, into cffi's type tables, stored as JSON data in the entry's sidecar. Loading a cached
library hands those tables to `_cffi_backend.FFI` and never imports pycparser, which costs
~26-45 ms per process here (plus ~0.25 ms per declared function): most of a warm start. The
declarations fusetorch writes are encoded without it when building too (`_encoded`). Nothing
read from the cache is executed as Python or unpickled.

Contracts for callers:
- `build(source, cdef)` returns a `Library`. `cdef` declares the functions the caller will call,
  in cffi's C subset; each library has its own `ffi` (`Library.ffi`), so declarations of
  different libraries never clash. Pointers made by any FFI object may be passed.
- Raises `CompilerUnavailable` when there is no working C compiler (the caller falls back to
  eager), `RuntimeError` when the source does not compile (with the compiler's stderr and the
  path of the saved source).
- The disk is untrusted to work: any fault of the cache directory (read-only, full, out of
  file descriptors, a directory where a file should be, a build lock held longer than
  `FUSETORCH_LOCK_TIMEOUT` seconds, e.g. by a stopped process) makes the build go to a private
  temporary directory of this process instead, with one warning naming the fault; if that
  fails too, `CacheUnavailable` (a CompilerUnavailable: the caller runs eagerly, one warning).
  Nothing half-written is ever trusted: entries are moved into place whole, sidecar last.
- Cache entries are `<cache>/<key[:2]>/<key>.so` and a `<key>.json` sidecar with the library's
  size and sha256 and the declarations; an entry whose sidecar does not match, or whose library
  lacks a declared symbol, is rebuilt, never loaded. Files are only ever replaced
  (`os.replace`), never written in place, because a process that has a library mapped would
  crash (SIGBUS) if its file were truncated under it.
- What the cache directory is trusted for: it holds code we run, so only this user may have
  written anything we read from it. `CacheDir` opens it once, checks the open directory, and
  reaches everything inside relative to that descriptor without following symlinks, checking
  each directory and file it reads (ours, not writable by group or others). Unsafe parts are
  refused: the root with a warning and a private temp dir, a subdirectory or file by moving it
  aside or rebuilding over it.
- Environment: `CC` (compiler command, may contain arguments), `FUSETORCH_CACHE_DIR`,
  `FUSETORCH_PRINT_KERNELS=1` (print each kernel's source to stderr when it is compiled),
  `FUSETORCH_LOCK_TIMEOUT` (seconds to wait for another process's build lock, default 60).
"""
from __future__ import annotations

import ast
import atexit
import errno
import fcntl
import hashlib
import io
import json
import os
import platform
import re
import secrets
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

import _cffi_backend
import cffi
import numpy as np

# Bump when the layout of the cache or the way sources are turned into libraries changes.
FORMAT_VERSION = 3
# -fno-math-errno: libm calls may then be vectorised even next to a select (with errno they
# "clobber memory" and gcc gives up on the loop); results are unchanged, only errno is not set.
# -fno-trapping-math: floating-point exceptions never trap here (nothing enables them), and
# with trapping assumed gcc keeps a NaN-aware select (relu, max, where) as a branch, which
# stops vectorisation. Values are unchanged; it is not part of what -ffast-math relaxes about
# results (no reassociation, no finite-math, signed zeros kept).
FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp", "-shared",
         "-fPIC", "-std=c11"]

# OpenMP's worker threads spin for a while after each parallel region; next to numpy's BLAS
# threads on few cores that spinning steals the CPU (a LeNet step ran 2.5x slower). Sleeping
# waiters cost a little wake-up latency instead. Read by libgomp when the first kernel library
# loads; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
LINK_FLAGS = ["-lm"]  # libmvec's vector expf & co. live in libm; without it dlopen fails
# What replaces -fopenmp when a compiler rejects it, best first: -fopenmp-simd keeps the `simd`
# pragmas (vectorised transcendentals) without needing an OpenMP runtime.
_OPENMP_FALLBACKS = (["-fopenmp"], ["-fopenmp-simd"], [])


class CompilerUnavailable(RuntimeError):
    """No working C compiler: compiled execution is impossible, the caller should run eagerly."""


class CacheUnavailable(CompilerUnavailable):
    """Neither the kernel cache nor a private temporary directory could hold a build (a full
    disk, no file descriptors left): the caller runs eagerly."""


class LockTimeout(OSError):
    """A build lock another process held past `lock_timeout()` (a stopped or hung builder)."""


def lock_timeout() -> float:
    """Seconds to wait for another process's build lock (`FUSETORCH_LOCK_TIMEOUT`, default
    60: a large module compiles in a few seconds)."""
    raw = os.environ.get("FUSETORCH_LOCK_TIMEOUT")
    if not raw:
        return 60.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"FUSETORCH_LOCK_TIMEOUT must be a number of seconds, not {raw!r}") \
            from None
    return max(value, 0.0)


# what a compiler's stderr says when the disk, not the source, made it fail
_DISK_FAULTS = ("No space left on device", "Read-only file system", "Too many open files",
                "Disk quota exceeded", "File too large")


_lock = threading.Lock()  # guards the module-level caches below
_ffi: cffi.FFI | None = None
_compilers: dict[tuple[str, str], list[str]] = {}
_compiler_ids: dict[tuple[str, ...], str] = {}
_openmp_flags: dict[tuple[str, ...], list[str]] = {}  # per compiler, once probed
_loaded: dict[tuple[str, str], "Library"] = {}  # (cache dir, key) -> Library, in-process hits
_fallback_dirs: dict[str, Path] = {}  # refused cache dir -> the temp dir used instead
_faulty: dict[str, str] = {}  # cache dir -> the fault that sent this process's builds elsewhere
_warned: set[str] = set()
_cpu: str | None = None


def ffi() -> cffi.FFI:
    """A process-wide FFI for making pointers (`as_pointer`); libraries have their own
    (`Library.ffi`), which do not import pycparser: prefer those on hot paths."""
    global _ffi
    if _ffi is None:
        with _lock:
            if _ffi is None:
                _ffi = cffi.FFI()
    return _ffi


# numpy dtypes each C element type may point at. C has no portable half type: float16 data is
# passed as its bits (uint16_t) and converted in the kernel.
_CTYPES: dict[str, tuple[np.dtype, ...]] = {
    "float": (np.dtype(np.float32),), "double": (np.dtype(np.float64),),
    "int8_t": (np.dtype(np.int8),), "int16_t": (np.dtype(np.int16),),
    "int32_t": (np.dtype(np.int32),), "int": (np.dtype(np.intc),),
    "int64_t": (np.dtype(np.int64),), "long": (np.dtype(np.int_),),
    "uint8_t": (np.dtype(np.uint8), np.dtype(np.bool_)), "bool": (np.dtype(np.bool_),),
    "_Bool": (np.dtype(np.bool_),), "uint16_t": (np.dtype(np.uint16), np.dtype(np.float16)),
}


def as_pointer(array: np.ndarray, ctype: str, writable: bool = False) -> Any:
    """A `ctype *` to the data of a C-contiguous numpy array, without copying.

    `from_buffer` is the cheap way; this sits on every kernel call, so the common
    case is two identity tests. It checks what cffi does not, the element type (a mismatch would
    make the kernel read garbage); cffi itself raises ValueError for a non-C-contiguous array.
    `writable=True` refuses read-only arrays (for outputs).
    """
    dtypes = _CTYPES.get(ctype)
    if dtypes is None:
        raise TypeError(f"as_pointer: unsupported C type {ctype!r}")
    if type(array) is not np.ndarray or array.dtype is not dtypes[0]:
        if not isinstance(array, np.ndarray) or array.dtype not in dtypes:
            raise TypeError(f"as_pointer: a {ctype}* needs a numpy array of dtype {dtypes[0]}, "
                            f"got {type(array).__name__} of {getattr(array, 'dtype', None)}")
    return (_ffi or ffi()).from_buffer(ctype + "[]", array, require_writable=writable)


class Library:
    """A loaded shared library: `function(name)` returns a callable cffi function; `ffi` is
    the FFI its functions were declared in."""

    __slots__ = ("lib", "path", "source", "cdef", "key", "ffi", "_fd")

    def __init__(self, lib: Any, path: Path, source: str, cdef: str, key: str, ffi: Any,
                 fd: int | None = None):
        self.lib, self.path, self.source, self.cdef, self.key = lib, path, source, cdef, key
        self.ffi = ffi
        self._fd = fd  # the descriptor it was dlopened through; never closed (see _dlopen)

    def function(self, name: str) -> Any:
        return getattr(self.lib, name)

    __getitem__ = function

    def __repr__(self) -> str:
        return f"<fusetorch.Library {self.path}>"


def compiler() -> list[str]:
    """The compiler command: `$CC` (split like a shell would) if set, else `cc` or `gcc` from
    PATH. Resolved once per (CC, PATH): searching PATH costs ~70 us."""
    env = (os.environ.get("CC", "").strip(), os.environ.get("PATH", ""))
    cmd = _compilers.get(env)
    if cmd is None:
        if env[0]:
            cmd = shlex.split(env[0])
        else:
            found = shutil.which("cc") or shutil.which("gcc")
            if not found:
                raise CompilerUnavailable("no C compiler found (set CC, or install cc or gcc)")
            cmd = [found]
        _compilers[env] = cmd
    return list(cmd)


def compiler_id(cmd: list[str] | None = None) -> str:
    """First line of `<cc> --version`, cached per process (it is part of every cache key)."""
    cmd = compiler() if cmd is None else cmd
    key = tuple(cmd)
    if key not in _compiler_ids:
        try:
            res = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise CompilerUnavailable(f"C compiler {shlex.join(cmd)!r} cannot run: {e}") from None
        lines = res.stdout.strip().splitlines()
        if res.returncode != 0 or not lines:
            raise CompilerUnavailable(
                f"C compiler {shlex.join(cmd)!r} failed on --version: {res.stderr.strip()}")
        _compiler_ids[key] = lines[0]
    return _compiler_ids[key]


def _cpu_id() -> str:
    """The CPU's model and feature flags: -march=native code must not be loaded on a CPU that
    lacks its instructions (SIGILL), e.g. from a home directory shared between machines."""
    global _cpu
    if _cpu is None:
        fields = {"machine": platform.machine()}
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if not line.strip():
                        break  # the first processor's block is enough
                    name, _, value = line.partition(":")
                    if name.strip() in ("model name", "flags", "Features", "CPU part"):
                        fields[name.strip()] = value.strip()
        except OSError:
            fields["processor"] = platform.processor()
        _cpu = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]
    return _cpu


# Every open inside the cache: no symlink is followed (a link there was not made by us), and
# O_NONBLOCK so that a FIFO planted under a cache name cannot hang us.
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# /proc/self/fd/N names the open file N itself: what dlopen and the compiler get, so that the
# file they open is the one we checked whatever happens to the path meanwhile.
_PROC_FD = os.path.isdir("/proc/self/fd")
# A build-* directory is stale once nobody holds its lock (the builder flocks it for the whole
# build; the kernel drops the lock when the builder dies, SIGKILL included) and it is an hour
# old: the age covers the instant between a builder's mkdir and its flock, and no build takes
# an hour. Where flock does not work at all, only age tells: a day.
STALE_BUILD_S = 3600
STALE_BUILD_NO_FLOCK_S = 24 * 3600


def _private(st: os.stat_result) -> bool:
    """Owned by this user and not writable by group or others: nobody else can have put or
    changed what is there (anyone who can could plant code that we would run)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _warn_once(message: str) -> None:
    with _lock:
        if message in _warned:
            return
        _warned.add(message)
    warnings.warn(message, UserWarning, stacklevel=3)


class CacheDir:
    """The kernel cache directory, opened once and checked on the open descriptor; every later
    operation is relative to a checked descriptor and follows no symlink, so whatever happens
    to the path (a parent renamed, a link flipped) after the check changes nothing we read.
    Use as a context manager (closes the descriptor)."""

    def __init__(self, path: Path, fd: int):
        self.path, self.fd = path, fd
        self._paths = {fd: path}  # descriptor -> its path, for messages and /proc-less systems

    def __enter__(self) -> "CacheDir":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._paths:
            os.close(fd)
        self._paths = {}

    def where(self, dir_fd: int, name: str = "") -> str:
        """A path for a program we run (compiler, dlopen) to open `name` in `dir_fd` by."""
        if _PROC_FD:
            return f"/proc/self/fd/{dir_fd}/{name}" if name else f"/proc/self/fd/{dir_fd}"
        return str(self._paths[dir_fd] / name)  # no /proc: the path, checked just before

    def path_of(self, dir_fd: int, name: str = "") -> Path:
        """The path, for people."""
        return self._paths[dir_fd] / name

    def subdir(self, name: str) -> int:
        """A checked descriptor of `<cache>/<name>`, made if missing; one that is not ours
        alone (or a symlink, or not a directory) is moved aside and made anew. Closed with
        the CacheDir."""
        for _ in range(4):
            fd = self._private_subdir(name)
            if fd is None:
                try:
                    os.mkdir(name, 0o700, dir_fd=self.fd)
                except FileExistsError:
                    pass  # a concurrent builder made it
            elif fd >= 0:
                self._paths[fd] = self.path / name
                return fd
            else:
                self._set_aside(name)
        raise OSError(f"fusetorch: cannot make a private directory {self.path / name}")

    def _private_subdir(self, name: str) -> int | None:
        """A descriptor of `name` if it is a directory of ours alone, None if it is missing,
        -1 if something else is there."""
        try:
            fd = os.open(name, _O_DIR, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                return -1  # a symlink or a file where the directory should be
            raise
        if _private(os.fstat(fd)):
            return fd
        os.close(fd)
        return -1

    def _set_aside(self, name: str) -> None:
        """Move an unsafe entry out of the way (we own the cache root, so we may rename
        anything in it), then delete it. Under the root's lock, after looking again: another
        process may have replaced it by a good one meanwhile."""
        with self.lock("sweep.lock"):
            fd = self._private_subdir(name)
            if fd is not None and fd >= 0:
                os.close(fd)
                return
            aside = f"unsafe-{secrets.token_hex(6)}"
            try:
                os.rename(name, aside, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            except FileNotFoundError:
                return
            _warn_once(f"fusetorch: kernel cache entry {self.path / name} was not safe (not "
                       "owned by this user, or writable by others); moved it aside, rebuilding")
            _remove(self.fd, aside)

    def open_file(self, dir_fd: int, name: str) -> int | None:
        """A descriptor of the regular file `name` in `dir_fd`, if it exists and is ours alone;
        None otherwise (an unsafe file is warned about: the caller rebuilds over it)."""
        try:
            fd = os.open(name, _O_READ, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            st = None  # a symlink
        else:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and _private(st):
                return fd
            os.close(fd)
            if stat.S_ISDIR(st.st_mode):
                return None  # rebuilt over; `clear` moves it aside with its one warning
        _warn_once(f"fusetorch: not using kernel cache file {self.path_of(dir_fd, name)} (a "
                   f"symlink, not a file, not owned by this user, or writable by others)")
        return None

    def read(self, dir_fd: int, name: str) -> bytes | None:
        """The contents of `name` in `dir_fd` if it is a file of ours alone, else None."""
        fd = self.open_file(dir_fd, name)
        if fd is None:
            return None
        try:
            return _read_all(fd)
        finally:
            os.close(fd)

    def write(self, dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
        """Replace `name` in `dir_fd` by `data`, atomically."""
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, _O_NEW, mode, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with _suppress_oserror():
                os.unlink(tmp, dir_fd=dir_fd)
            raise

    @contextmanager
    def scratch(self) -> Iterator[int]:
        """A private build-* directory, locked while it is in use and removed after; the
        build directories of killed builders are swept by `sweep`."""
        name = f"build-{secrets.token_hex(8)}"
        os.mkdir(name, 0o700, dir_fd=self.fd)
        fd = os.open(name, _O_DIR, dir_fd=self.fd)
        self._paths[fd] = self.path / name
        try:
            with _suppress_oserror():  # no flock here: sweeping falls back to age alone
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            _remove(self.fd, name)
            del self._paths[fd]
            os.close(fd)

    def sweep(self) -> None:
        """Remove the build-* directories of dead builders and anything set aside, unless
        another process is sweeping."""
        with self.lock("sweep.lock", wait=False) as held:
            if not held:
                return
            now = time.time()
            with os.scandir(self.fd) as entries:
                names = [e.name for e in entries if e.name.startswith(("build-", "unsafe-"))]
            for name in names:
                if name.startswith("unsafe-") or _stale_build(self.fd, name, now):
                    _remove(self.fd, name)

    @contextmanager
    def lock(self, name: str, dir_fd: int | None = None, wait: bool = True) -> Iterator[bool]:
        """An exclusive advisory lock on `name` (made if missing), so concurrent builders of
        one kernel compile it once; yields whether it is held (always when `wait`). Lock files
        are never deleted: deleting one lets a waiter lock an inode that nobody else sees."""
        dir_fd = self.fd if dir_fd is None else dir_fd
        fd = self._lock_file(dir_fd, name)
        try:
            try:
                held = _flock(fd, lock_timeout() if wait else 0.0)
            except OSError:
                held = wait  # no flock (some network filesystems): os.replace keeps us correct
            if wait and not held:
                raise LockTimeout(errno.ETIMEDOUT, f"waited {lock_timeout():g} s for the build "
                                  "lock another process holds (stopped or hung?)",
                                  str(self.path_of(dir_fd, name)))
            yield held
        finally:
            os.close(fd)  # releases the lock

    def _lock_file(self, dir_fd: int, name: str) -> int:
        """A descriptor of lock file `name`, made if missing; a directory or symlink in its
        place (nothing we made) is moved aside once, as unsafe entries are."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            return os.open(name, flags, 0o600, dir_fd=dir_fd)
        except OSError as e:
            if e.errno not in (errno.EISDIR, errno.ELOOP):
                raise
        self.clear(dir_fd, name)
        return os.open(name, flags, 0o600, dir_fd=dir_fd)

    def clear(self, dir_fd: int, name: str) -> None:
        """Make room for a file `name` in `dir_fd`: a directory (or anything but a regular
        file) there is moved aside into the root and removed."""
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISREG(st.st_mode):
            return
        aside = f"unsafe-{secrets.token_hex(6)}"
        try:
            os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=self.fd)
        except FileNotFoundError:
            return
        _warn_once(f"fusetorch: kernel cache {self.path}: moved aside entries that were not "
                   "files (a directory where a library, sidecar or lock belongs)")
        _remove(self.fd, aside)


def _flock(fd: int, timeout: float) -> bool:
    """Lock `fd` exclusively, waiting at most `timeout` seconds; whether it is held. Polled: a
    blocking flock cannot be bounded without a signal, which a library must not take."""
    deadline, pause = time.monotonic() + timeout, 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)


@contextmanager
def _suppress_oserror() -> Iterator[None]:
    try:
        yield
    except OSError:
        pass


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _remove(dir_fd: int, name: str) -> None:
    """Delete `name` in `dir_fd` and everything under it, following no symlink (a link is
    removed, never what it points to); best effort."""
    try:
        fd = os.open(name, _O_DIR, dir_fd=dir_fd)
    except OSError:  # not a directory (or a symlink to one): just the name
        with _suppress_oserror():
            os.unlink(name, dir_fd=dir_fd)
        return
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in entries]
        for child in names:
            _remove(fd, child)
    finally:
        os.close(fd)
    with _suppress_oserror():
        os.rmdir(name, dir_fd=dir_fd)


def _stale_build(root_fd: int, name: str, now: float) -> bool:
    """Whether build directory `name` belongs to no live builder (STALE_BUILD_S above)."""
    try:
        age = now - os.stat(name, dir_fd=root_fd, follow_symlinks=False).st_mtime
        if age < STALE_BUILD_S:
            return False
        fd = os.open(name, _O_DIR, dir_fd=root_fd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True  # its builder is gone: the lock died with it
    except BlockingIOError:
        return False  # a live builder holds it
    except OSError:
        return age > STALE_BUILD_NO_FLOCK_S
    finally:
        os.close(fd)


def _configured_dir() -> Path:
    env = os.environ.get("FUSETORCH_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fusetorch"


def _open_private_dir(path: Path) -> int | None:
    """A descriptor of directory `path` if, once open, it is ours alone; None otherwise.
    Symlinks on the configured path are followed here, once: what matters is the directory
    we end up holding, checked on the descriptor itself."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    if _private(os.fstat(fd)):
        return fd
    os.close(fd)
    return None


def open_cache(path: Path | None = None) -> CacheDir:
    """The cache directory (`path`, else `$FUSETORCH_CACHE_DIR`, else `$XDG_CACHE_HOME/fusetorch`
    or `~/.cache/fusetorch`), created 0o700 and opened. An unsafe directory (not ours, or
    writable by others) is refused with a warning (once) and a private temp directory, removed
    at exit, is used for this process instead."""
    path = _configured_dir() if path is None else path
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        pass  # the check below says no and we fall back
    fd = _open_private_dir(path)
    if fd is not None:
        return CacheDir(path, fd)
    with _lock:
        if str(path) not in _fallback_dirs:
            tmp = Path(tempfile.mkdtemp(prefix="fusetorch-"))  # mkdtemp makes it 0o700
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            _fallback_dirs[str(path)] = tmp
            warnings.warn(f"fusetorch: not using kernel cache {path} (missing, not owned by this "
                          f"user, or writable by others); using {tmp} for this process",
                          UserWarning, stacklevel=2)
        tmp = _fallback_dirs[str(path)]
    fd = _open_private_dir(tmp)
    if fd is None:
        raise OSError(f"fusetorch: the private temp directory {tmp} is not private")
    return CacheDir(tmp, fd)


def cache_dir() -> Path:
    """The path of the cache directory this process uses (see `open_cache`). For people and
    tests: code that reads the cache must go through `open_cache`, never this path."""
    with open_cache() as cache:
        return cache.path


def _tables_to_json(x: Any) -> Any:
    """cffi's type tables (bytes, ints, nested tuples) as JSON data."""
    if isinstance(x, bytes):
        return {"hex": x.hex()}
    if isinstance(x, tuple):
        return [_tables_to_json(v) for v in x]
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    raise TypeError(f"unexpected {type(x).__name__} in cffi's tables")


def _tables_from_json(x: Any) -> Any:
    if isinstance(x, dict):
        return bytes.fromhex(x["hex"])
    if isinstance(x, list):
        return tuple(_tables_from_json(v) for v in x)
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    raise TypeError(f"unexpected {type(x).__name__} in stored declarations")


# The declarations fusetorch makes: functions returning void, int or long whose parameters are
# primitive types (any of cffi's, spelt as they name them) or pointers to them, `const`
# anywhere (cffi's ABI tables drop it). Such a cdef is encoded here, without pycparser.
_FUNCTION = re.compile(r"\s*(void|int|long)\s+([A-Za-z_]\w*)\s*\(([^()]*)\)\s*;\s*")
_WORD = re.compile(r"[A-Za-z_]\w*|\*|\S")
# the version of the type tables' format, which generated modules record and _cffi_backend
# keeps accepting (cffi's `_version` since 1.x's out-of-line mode)
_TABLES_VERSION = 0x2601


def _encoded(cdef: str) -> dict[str, Any] | None:
    """cffi's type tables for `cdef`, as `make_py_source` would state them (up to the order
    of the types), or None where `cdef` is not of the form above. cffi's recompiler takes
    pycparser to parse, and importing it cost each process that built anything ~45 ms (its
    lexer's regular expressions), on the core beside a compiler. The format
    (`cffi.cffi_opcode`): a function is OP_FUNCTION(result type), one slot per parameter
    (OP_NOOP(its type)), OP_FUNCTION_END(0: no `...`); a type is OP_PRIMITIVE(cffi's number
    for it) or OP_POINTER(the type pointed to); `_globals` names each function, sorted, as
    OP_DLOPEN_FUNC(its OP_FUNCTION slot)."""
    from cffi import cffi_opcode as op
    functions, at = [], 0
    for line in filter(str.strip, cdef.split("\n")):
        m = _FUNCTION.fullmatch(line)
        if m is None:
            return None
        params = []
        for param in filter(str.strip, m.group(3).split(",")):
            words = [w for w in _WORD.findall(param) if w != "const"]
            stars = words.count("*")
            base = [w for w in words if w != "*"]
            if base and base[-1] not in op.PRIMITIVE_TO_INDEX and \
                    " ".join(base) not in op.PRIMITIVE_TO_INDEX:
                base = base[:-1]  # (the parameter's name)
            name = " ".join(base)
            if name not in op.PRIMITIVE_TO_INDEX or words[:len(base)] != base or \
                    any(w != "*" for w in words[len(base):len(base) + stars]) or stars > 2:
                return None
            params.append((name, stars))
        functions.append((m.group(2), m.group(1), params, at))
        at += len(params) + 2
    if not functions or len({f[0] for f in functions}) < len(functions):
        return None
    pool: dict[tuple[str, int], int] = {}  # (primitive, pointer depth) -> its slot
    tail: list = []

    def four(code: int, arg: int) -> bytes:
        return (arg << 8 | code).to_bytes(4, "big")

    def slot(name: str, stars: int) -> int:
        if (name, stars) not in pool:
            inner = slot(name, stars - 1) if stars else 0
            pool[(name, stars)] = at + len(tail)
            tail.append(four(op.OP_POINTER, inner) if stars else four(
                op.OP_PRIMITIVE, 0 if name == "void" else op.PRIMITIVE_TO_INDEX[name]))
        return pool[(name, stars)]

    slots = []
    for _, result, params, _ in functions:
        slots.append(four(op.OP_FUNCTION, slot(result, 0)))
        slots += [four(op.OP_NOOP, slot(*p)) for p in params]
        slots.append(four(op.OP_FUNCTION_END, 0))
    return {"_version": _TABLES_VERSION, "_types": b"".join(slots + tail),
            "_globals": tuple(x for name, _, _, start in sorted(functions) for x in (
                four(op.OP_DLOPEN_FUNC, start) + name.encode(), 0))}


def _declarations(cdef: str) -> dict[str, Any]:
    """Parse `cdef` (pycparser, only when building) into cffi's type tables, as JSON data.
    cffi emits them as the literal arguments of one call in a Python module; we read the
    literals (`ast.literal_eval`, never exec) here, at build time, from text we just made.
    The forms fusetorch makes are encoded directly (`_encoded`)."""
    tables = _encoded(cdef)
    if tables is not None:
        return {k: _tables_to_json(v) for k, v in tables.items()}
    f = cffi.FFI()
    try:
        f.cdef(cdef)
    except (cffi.FFIError, cffi.CDefError) as e:
        raise RuntimeError(f"fusetorch: cannot declare {cdef!r}: {e}") from None
    from cffi.recompiler import make_py_source  # emit_python_code, without its print
    text = io.StringIO()
    make_py_source(f, "_fusetorch", text)
    call = ast.parse(text.getvalue()).body[-1].value  # ffi = _cffi_backend.FFI('name', k=v...)
    tables = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    if "_includes" in tables:
        raise RuntimeError("fusetorch: declarations that include another FFI are not supported")
    return {k: _tables_to_json(v) for k, v in tables.items()}


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _load(cache: CacheDir, sub: int, key: str, source: str, cdef: str,
          fresh: bool = False) -> Library | None:
    """The library of a valid cache entry, or None if the entry is missing, damaged or unsafe.
    `fresh`: we just built it, so a failing load is an error to report, not damage."""
    raw = cache.read(sub, f"{key}.json")
    if raw is None:
        return None
    try:
        info = json.loads(raw)
        decl = info["declarations"]
        if info["key"] != key or info["format"] != FORMAT_VERSION or \
                info["declarations_sha256"] != _digest(decl):
            return None
        tables = {str(k): _tables_from_json(v) for k, v in decl.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    name = f"{key}.so"
    fd = cache.open_file(sub, name)
    if fd is None:
        return None
    opened = False
    try:
        data = _read_all(fd)  # the very file we will map: digest what we load
        if (info["so_size"], info["so_sha256"]) != (len(data), hashlib.sha256(data).hexdigest()):
            return None
        ffi = _cffi_backend.FFI(f"_fusetorch_{key[:24]}", **tables)
        opened = True
        lib = _dlopen(ffi, cache, sub, name, fd)
        for symbol in dir(lib):  # resolve every declared symbol now, not at the first call
            getattr(lib, symbol)
    except Exception as e:  # a damaged library or declarations: rebuild it
        if fresh and isinstance(e, OSError):
            raise  # (dlopen out of descriptors, ...): a fault of this machine, not of the build
        if fresh:
            raise RuntimeError(f"fusetorch: built {cache.path_of(sub, name)} but could not "
                               f"load it: {e}") from None
        return None
    finally:
        if not opened:
            os.close(fd)
    return Library(lib, cache.path_of(sub, name), source, cdef, key, ffi, fd)


def _dlopen(ffi: Any, cache: CacheDir, dir_fd: int, name: str, fd: int) -> Any:
    """dlopen the checked file open as `fd`. Through /proc/self/fd/N the dynamic loader maps
    that very inode, not whatever the path names by now. glibc also remembers each library by
    the name it was opened as and hands the old handle back for the same name, so N must never
    be reused: the descriptor stays open for the life of the process (one per library loaded),
    also when loading fails after this point. Libraries are never unloaded either
    (RTLD_NODELETE): cffi dlcloses a library when its object is freed, as at interpreter exit,
    and the last kernel library to go took libgomp with it while OpenMP workers still ran in
    it (with OMP_WAIT_POLICY=ACTIVE they spin there: every such process crashed at exit)."""
    flags = ffi.RTLD_NOW | getattr(ffi, "RTLD_NODELETE", 0)
    if _PROC_FD:
        return ffi.dlopen(f"/proc/self/fd/{fd}", flags)
    # without /proc: the path, in a directory only we can write, checked just before
    return ffi.dlopen(cache.where(dir_fd, name), flags)


def _flags(omp: list[str]) -> list[str]:
    """FLAGS with -fopenmp replaced by `omp` (a fallback for compilers without OpenMP)."""
    return [g for f in FLAGS for g in (omp if f == "-fopenmp" else [f])]


def _start_cc(cmd: list[str], omp: list[str], src: str, out: str,
              fds: tuple[int, ...]) -> subprocess.Popen:
    try:
        return subprocess.Popen(cmd + _flags(omp) + ["-o", out, src] + LINK_FLAGS,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                pass_fds=fds)
    except OSError as e:
        raise CompilerUnavailable(f"C compiler {shlex.join(cmd)!r} cannot run: {e}") from None


def _wait_cc(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _run_cc(cmd: list[str], omp: list[str], src: str, out: str,
            fds: tuple[int, ...]) -> subprocess.CompletedProcess:
    return _wait_cc(_start_cc(cmd, omp, src, out, fds))


def _write_new(dir_fd: int, name: str, text: str) -> None:
    with os.fdopen(os.open(name, _O_NEW, 0o600, dir_fd=dir_fd), "w") as f:
        f.write(text)


def _probe_openmp(cmd: list[str], cache: CacheDir, tmp: int) -> list[str]:
    """The best OpenMP flag this compiler accepts, found by building an empty library.
    Only called after a failed build, so working setups never pay for it."""
    key = tuple(cmd)
    if key not in _openmp_flags:
        _write_new(tmp, "probe.c", "int fusetorch_probe;\n")
        for omp in _OPENMP_FALLBACKS:
            if _run_cc(cmd, omp, cache.where(tmp, "probe.c"), cache.where(tmp, "probe.so"),
                       (tmp,)).returncode == 0:
                _openmp_flags[key] = omp
                if omp != ["-fopenmp"]:
                    warnings.warn(f"fusetorch: {shlex.join(cmd)} does not support -fopenmp; "
                                  "compiled kernels will run on one thread", UserWarning)
                break
        else:
            _openmp_flags[key] = ["-fopenmp"]  # nothing builds: the real error is elsewhere
    return _openmp_flags[key]


def _compile(cmd: list[str], ident: str, cache: CacheDir, entries: list) -> None:
    """Compile each (sub, key, source, cdef) entry in one private build directory, one
    compiler process per entry, all running at once; then move each library and its sidecar
    into place atomically (the sidecar last: until it matches, the entry is not used). The
    compiler reaches the build directory through /proc/self/fd, never through the cache's
    path."""
    with cache.scratch() as tmp:
        omp = _openmp_flags.get(tuple(cmd), ["-fopenmp"])
        procs, decls = [], []
        try:
            for _, key, source, _ in entries:
                _write_new(tmp, f"{key}.c", source)
                procs.append(_start_cc(cmd, omp, cache.where(tmp, f"{key}.c"),
                                       cache.where(tmp, f"{key}.so"), (tmp,)))
            # made while the compilers run (where pycparser parses them, its import and the
            # parse cost ~30-45 ms, a fifth of a small module's cold build)
            decls = [_declarations(cdef) for *_, cdef in entries]
        finally:
            results = [_wait_cc(proc) for proc in procs]
        failed = None
        for (sub, key, source, _), decl, res in zip(entries, decls, results):
            try:
                _finish(cmd, ident, cache, tmp, omp, sub, key, source, decl, res)
            except RuntimeError as e:  # the others are kept: report it once they are in place
                failed = failed or e
        if failed is not None:
            raise failed


def _finish(cmd: list[str], ident: str, cache: CacheDir, tmp: int, omp: list[str], sub: int,
            key: str, source: str, decl: dict, res: subprocess.CompletedProcess) -> None:
    """Entry `key` of `_compile` from its compiler's result: moved into place, or retried
    without OpenMP where the compiler lacks it, or its failure reported."""
    src, out = f"{key}.c", f"{key}.so"
    where_src, where_out = cache.where(tmp, src), cache.where(tmp, out)
    if res.returncode != 0 and tuple(cmd) not in _openmp_flags:
        # maybe the compiler lacks OpenMP, not a problem in the source: find out and retry
        better = _probe_openmp(cmd, cache, tmp)
        if better != omp:
            omp, res = better, _run_cc(cmd, better, where_src, where_out, (tmp,))
    elif res.returncode != 0 and _openmp_flags.get(tuple(cmd), omp) != omp:
        # an entry before this one found the flag this compiler takes
        omp = _openmp_flags[tuple(cmd)]
        res = _run_cc(cmd, omp, where_src, where_out, (tmp,))
    if res.returncode != 0:
        fault = next((f for f in _DISK_FAULTS if f in res.stderr), None)
        if fault is not None or res.returncode < 0:  # (SIGXFSZ: over the file size limit)
            why = fault or f"killed by signal {-res.returncode}"
            raise OSError(errno.EIO, f"the compiler failed writing its output ({why})",
                          str(cache.path_of(tmp)))
        failed = cache.subdir("failed")
        kept = cache.path_of(failed, src)
        os.replace(src, src, src_dir_fd=tmp, dst_dir_fd=failed)  # kept for people to debug
        message = res.stderr.replace(where_src, str(kept)).strip()
        raise RuntimeError(f"fusetorch: C compilation failed (source kept at {kept}):\n"
                           f"{message}")
    fd = os.open(out, _O_READ, dir_fd=tmp)
    try:
        # the compiler honours the umask (0o002 makes it group-writable): ours alone
        os.fchmod(fd, 0o700)
        data = _read_all(fd)
    finally:
        os.close(fd)
    info = {"key": key, "format": FORMAT_VERSION, "so_size": len(data),
            "so_sha256": hashlib.sha256(data).hexdigest(),
            "declarations": decl, "declarations_sha256": _digest(decl),
            "source_size": len(source.encode()), "uid": os.geteuid(),
            "compiler": cmd, "compiler_id": ident, "flags": _flags(omp) + LINK_FLAGS}
    _write_new(tmp, f"{key}.json", json.dumps(info, indent=1))
    cache.clear(sub, out)
    cache.clear(sub, f"{key}.json")
    os.replace(out, out, src_dir_fd=tmp, dst_dir_fd=sub)
    os.replace(f"{key}.json", f"{key}.json", src_dir_fd=tmp, dst_dir_fd=sub)


def build(source: str, cdef: str) -> Library:
    """Compile `source` (or load it from the cache) and declare `cdef` for it; see the module
    docstring for the contract."""
    return build_all([(source, cdef)])[0]


def entry_key(source: str, cdef: str, cmd: list[str] | None = None,
              ident: str | None = None) -> str:
    """The cache key of a module: `<cache>/<key[:2]>/<key>.so`, `.json`, `.lock`."""
    cmd = compiler() if cmd is None else cmd
    ident = compiler_id(cmd) if ident is None else ident
    return hashlib.sha256("\0".join(
        [f"fusetorch-cbuild-{FORMAT_VERSION}", f"uid={os.geteuid()}", shlex.join(cmd), ident,
         _cpu_id(), shlex.join(FLAGS + LINK_FLAGS), cdef, source]).encode()).hexdigest()


def build_all(modules: list) -> list:
    """`build` for each (source, cdef) of `modules`, its Library in the same place; those not
    in the cache compile at the same time, a compiler process each (a module split in parts
    builds in the time of its largest part where cores are free)."""
    cmd = compiler()
    ident = compiler_id(cmd)
    keys = [entry_key(source, cdef, cmd, ident) for source, cdef in modules]
    where = str(_configured_dir())
    wanted = {key: m for key, m in zip(keys, modules) if (where, key) not in _loaded}
    if wanted:
        found = _build_or_fall_back(cmd, ident, where, wanted)
        for key, lib in found.items():
            _loaded[(where, key)] = lib
    return [_loaded[(where, key)] for key in keys]


def _build_or_fall_back(cmd: list[str], ident: str, where: str, wanted: dict) -> dict:
    """key -> Library for `wanted`, from the cache at `where`; on any fault of that directory,
    from a private temporary directory of this process (one warning), and where that fails
    too, CacheUnavailable. A lock timeout sends only this build elsewhere (the stopped holder
    may go on later); other faults send every later build of the process there."""
    if where not in _faulty:
        try:
            with open_cache(Path(where)) as cache:
                return _build_in(cmd, ident, cache, wanted)
        except OSError as e:
            fault = _describe(e)
            if not isinstance(e, LockTimeout):
                _faulty[where] = fault
    else:
        fault = _faulty[where]
    try:
        with open_cache(_private_dir()) as cache:
            found = _build_in(cmd, ident, cache, wanted)
    except OSError as e:
        raise CacheUnavailable(f"kernel cache {where}: {fault}; private build directory: "
                               f"{_describe(e)}") from None
    _warn_once(f"fusetorch: kernel cache {where} failed ({fault}); this process builds its "
               f"kernels in {_private_dir()} instead")
    return found


def _describe(e: OSError) -> str:
    text = e.strerror or str(e) or type(e).__name__
    return f"{text}: {e.filename}" if e.filename else text


def _private_dir() -> Path:
    """This process's own build directory (removed at exit), for builds the cache failed."""
    with _lock:
        tmp = _fallback_dirs.get("")
        if tmp is None:
            tmp = Path(tempfile.mkdtemp(prefix="fusetorch-"))
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            _fallback_dirs[""] = tmp
        return tmp


def _build_in(cmd: list[str], ident: str, cache: CacheDir, wanted: dict) -> dict:
    subs = {key: cache.subdir(key[:2]) for key in wanted}
    found = {key: _load(cache, subs[key], key, *wanted[key]) for key in wanted}
    missing = {key: wanted[key] for key in sorted(wanted) if found[key] is None}
    if missing:
        found.update(_build_missing(cmd, ident, cache, subs, missing))
    return found


def _build_missing(cmd: list[str], ident: str, cache: CacheDir, subs: dict,
                   missing: dict) -> dict:
    """key -> Library for the `missing` entries (key -> (source, cdef)), compiled each under
    its lock, the locks taken in the order of their keys (as `missing` is), so builders of
    overlapping sets never wait on each other in a cycle."""
    with ExitStack() as locks:
        for key in missing:
            locks.enter_context(cache.lock(f"{key}.lock", subs[key]))
        # another process may have built some while we waited for the locks
        libs = {key: _load(cache, subs[key], key, *missing[key]) for key in missing}
        entries = [(subs[key], key, *missing[key]) for key in missing if libs[key] is None]
        if not entries:
            return libs
        if os.environ.get("FUSETORCH_PRINT_KERNELS") == "1":
            for sub, key, source, _ in entries:
                print(f"// fusetorch kernel {key[:16]} ({cache.path_of(sub, key)}.so)\n"
                      f"{source}", file=sys.stderr)
        cache.sweep()  # a cold build anyway: the few ms to tidy up go unnoticed
        _compile(cmd, ident, cache, entries)
        for sub, key, source, cdef in entries:
            libs[key] = _load(cache, sub, key, source, cdef, fresh=True)
            if libs[key] is None:  # only if someone replaced the entry meanwhile
                raise RuntimeError(f"fusetorch: built {cache.path_of(sub, key)}.so but it "
                                   "changed before loading")
    return libs
