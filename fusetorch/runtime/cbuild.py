"""Build C source into a shared library, cache it on disk, and load it with cffi.

ABI mode (gcc to a .so, then `dlopen`) because it builds 3-5x faster than cffi's API mode
(../shared/PLATFORM.md) and compile latency is a target. "Out-of-line": the declarations are
parsed once, when the library is built, into a small generated Python module cached beside it
(`FFI.emit_python_code`). Loading a cached library imports that module and never imports
pycparser, which costs 0.1-0.3 s per process here: most of a warm start.

Contracts for callers:
- `build(source, cdef)` returns a `Library`. `cdef` declares the functions the caller will call,
  in cffi's C subset; each library has its own `ffi` (`Library.ffi`), so declarations of
  different libraries never clash. Pointers made by any FFI object may be passed.
- Raises `CompilerUnavailable` when there is no working C compiler (the caller falls back to
  eager), `RuntimeError` when the source does not compile (with the compiler's stderr and the
  path of the saved source).
- Cache entries are `<cache>/<key[:2]>/<key>.so`, its declarations `<key>.py`, and a `<key>.json`
  sidecar with both files' sizes and sha256; an entry whose sidecar does not match is rebuilt,
  never loaded. Files are only ever
  replaced (`os.replace`), never written in place, because a process that has a library mapped
  would crash (SIGBUS) if its file were truncated under it.
- Environment: `CC` (compiler command, may contain arguments), `FUSETORCH_CACHE_DIR`,
  `FUSETORCH_PRINT_KERNELS=1` (print each kernel's source to stderr when it is compiled).
"""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import importlib.util
import json
import os
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import cffi
import numpy as np

# Bump when the layout of the cache or the way sources are turned into libraries changes.
FORMAT_VERSION = 2
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


_lock = threading.Lock()  # guards the module-level caches below
_ffi: cffi.FFI | None = None
_compilers: dict[tuple[str, str], list[str]] = {}
_compiler_ids: dict[tuple[str, ...], str] = {}
_openmp_flags: dict[tuple[str, ...], list[str]] = {}  # per compiler, once probed
_loaded: dict[str, "Library"] = {}  # .so path -> Library, for in-process hits
_fallback_dirs: dict[str, Path] = {}  # refused cache dir -> the temp dir used instead
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

    `from_buffer` is the cheap way (PLATFORM.md); this sits on every kernel call, so the common
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

    __slots__ = ("lib", "path", "source", "cdef", "key", "ffi")

    def __init__(self, lib: Any, path: Path, source: str, cdef: str, key: str, ffi: Any):
        self.lib, self.path, self.source, self.cdef, self.key = lib, path, source, cdef, key
        self.ffi = ffi

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


def _is_safe(path: Path) -> bool:
    """Ours alone: a directory owned by this user that nobody else can write into (anyone who
    can write there can plant a library that we would load and run)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def cache_dir() -> Path:
    """`$FUSETORCH_CACHE_DIR`, else `$XDG_CACHE_HOME/fusetorch` or `~/.cache/fusetorch`,
    created 0o700. An unsafe directory is refused with a warning (once) and a private temp
    directory, removed at exit, is used for this process instead."""
    env = os.environ.get("FUSETORCH_CACHE_DIR")
    if env:
        path = Path(env).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        path = Path(base) / "fusetorch"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        pass  # _is_safe says no and we fall back
    if _is_safe(path):
        return path
    with _lock:
        if str(path) not in _fallback_dirs:
            tmp = Path(tempfile.mkdtemp(prefix="fusetorch-"))  # mkdtemp makes it 0o700
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            _fallback_dirs[str(path)] = tmp
            warnings.warn(f"fusetorch: not using kernel cache {path} (missing, not owned by this "
                          f"user, or writable by others); using {tmp} for this process",
                          UserWarning, stacklevel=2)
        return _fallback_dirs[str(path)]


def _sha256_file(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def _load(so: Path, meta: Path, key: str, source: str, cdef: str,
          fresh: bool = False) -> Library | None:
    """The library of a valid cache entry, or None if the entry is missing or damaged.
    `fresh`: we just built it, so a failing load is an error to report, not damage."""
    decl = so.with_suffix(".py")
    try:
        info = json.loads(meta.read_text())
        if info.get("key") != key or \
                (info.get("so_size"), info.get("so_sha256")) != _sha256_file(so) or \
                (info.get("py_size"), info.get("py_sha256")) != _sha256_file(decl):
            return None
    except (OSError, ValueError, AttributeError):
        return None
    try:
        # the generated declarations: `ffi = _cffi_backend.FFI(<pre-parsed types>)`
        spec = importlib.util.spec_from_file_location(f"_fusetorch_{key[:24]}", decl)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        lib = module.ffi.dlopen(str(so))
    except Exception as e:  # a damaged module or library: rebuild it
        if fresh:
            raise RuntimeError(f"fusetorch: built {so} but could not load it: {e}") from None
        return None
    return Library(lib, so, source, cdef, key, module.ffi)


def _declarations(cdef: str, module: str, path: Path) -> None:
    """Parse `cdef` (pycparser, only when building) into an importable Python module."""
    f = cffi.FFI()
    try:
        f.cdef(cdef)
    except (cffi.FFIError, cffi.CDefError) as e:
        raise RuntimeError(f"fusetorch: cannot declare {cdef!r}: {e}") from None
    from cffi.recompiler import make_py_source  # emit_python_code, without its print
    make_py_source(f, module, str(path))


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock, so concurrent builders of one kernel compile it once. Lock files
    are never deleted: deleting one lets a waiter lock an inode that nobody else sees."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # no flock here (some network filesystems): os.replace still keeps us correct
        yield
    finally:
        os.close(fd)  # releases the lock


def _flags(omp: list[str]) -> list[str]:
    """FLAGS with -fopenmp replaced by `omp` (a fallback for compilers without OpenMP)."""
    return [g for f in FLAGS for g in (omp if f == "-fopenmp" else [f])]


def _run_cc(cmd: list[str], omp: list[str], src: Path, out: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd + _flags(omp) + ["-o", str(out), str(src)] + LINK_FLAGS,
                              capture_output=True, text=True)
    except OSError as e:
        raise CompilerUnavailable(f"C compiler {shlex.join(cmd)!r} cannot run: {e}") from None


def _probe_openmp(cmd: list[str], tmp: Path) -> list[str]:
    """The best OpenMP flag this compiler accepts, found by building an empty library.
    Only called after a failed build, so working setups never pay for it."""
    key = tuple(cmd)
    if key not in _openmp_flags:
        src = tmp / "probe.c"
        src.write_text("int fusetorch_probe;\n")
        for omp in _OPENMP_FALLBACKS:
            if _run_cc(cmd, omp, src, tmp / "probe.so").returncode == 0:
                _openmp_flags[key] = omp
                if omp != ["-fopenmp"]:
                    warnings.warn(f"fusetorch: {shlex.join(cmd)} does not support -fopenmp; "
                                  "compiled kernels will run on one thread", UserWarning)
                break
        else:
            _openmp_flags[key] = ["-fopenmp"]  # nothing builds: the real error is elsewhere
    return _openmp_flags[key]


def _compile(cmd: list[str], root: Path, key: str, source: str, cdef: str,
             so: Path) -> list[str]:
    """Compile into a private temp dir, then move the .so and its declarations into place
    atomically. Returns the flags actually used."""
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=root))
    try:
        src, out = tmp / f"{key}.c", tmp / f"{key}.so"
        _declarations(cdef, f"_fusetorch_{key[:24]}", tmp / f"{key}.py")
        src.write_text(source)
        omp = _openmp_flags.get(tuple(cmd), ["-fopenmp"])
        res = _run_cc(cmd, omp, src, out)
        if res.returncode != 0 and tuple(cmd) not in _openmp_flags:
            # maybe the compiler lacks OpenMP, not a problem in the source: find out and retry
            better = _probe_openmp(cmd, tmp)
            if better != omp:
                omp, res = better, _run_cc(cmd, better, src, out)
        if res.returncode != 0:
            failed = root / "failed"
            failed.mkdir(mode=0o700, exist_ok=True)
            kept = failed / f"{key}.c"
            os.replace(src, kept)  # kept for people to debug; the rest of tmp goes
            message = res.stderr.replace(str(src), str(kept)).strip()
            raise RuntimeError(f"fusetorch: C compilation failed (source kept at {kept}):\n"
                               f"{message}")
        os.replace(tmp / f"{key}.py", so.with_suffix(".py"))
        os.replace(out, so)
        return _flags(omp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build(source: str, cdef: str) -> Library:
    """Compile `source` (or load it from the cache) and declare `cdef` for it; see the module
    docstring for the contract."""
    cmd = compiler()
    ident = compiler_id(cmd)
    key = hashlib.sha256("\0".join(
        [f"fusetorch-cbuild-{FORMAT_VERSION}", shlex.join(cmd), ident, _cpu_id(),
         shlex.join(FLAGS + LINK_FLAGS), cdef, source]).encode()).hexdigest()
    root = cache_dir()
    sub = root / key[:2]
    so, meta = sub / f"{key}.so", sub / f"{key}.json"
    hit = _loaded.get(str(so))
    if hit is not None:
        return hit
    lib = _load(so, meta, key, source, cdef)
    if lib is None:
        sub.mkdir(mode=0o700, exist_ok=True)
        with _flock(sub / f"{key}.lock"):
            # another process may have built it while we waited for the lock
            lib = _load(so, meta, key, source, cdef)
            if lib is None:
                if os.environ.get("FUSETORCH_PRINT_KERNELS") == "1":
                    print(f"// fusetorch kernel {key[:16]} ({so})\n{source}", file=sys.stderr)
                flags = _compile(cmd, root, key, source, cdef, so)
                size, digest = _sha256_file(so)
                py_size, py_digest = _sha256_file(so.with_suffix(".py"))
                info = {"key": key, "format": FORMAT_VERSION, "so_size": size,
                        "so_sha256": digest, "py_size": py_size, "py_sha256": py_digest,
                        "source_size": len(source.encode()),
                        "compiler": cmd, "compiler_id": ident, "flags": flags + LINK_FLAGS}
                fd, tmp_meta = tempfile.mkstemp(suffix=".json", dir=sub)
                with os.fdopen(fd, "w") as f:
                    json.dump(info, f, indent=1)
                os.replace(tmp_meta, meta)
                lib = _load(so, meta, key, source, cdef, fresh=True)
                if lib is None:  # only if someone replaced the entry meanwhile
                    raise RuntimeError(f"fusetorch: built {so} but it changed before loading")
    _loaded[str(so)] = lib
    return lib
