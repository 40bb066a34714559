"""The kernel cache fails soft (issue 25, items 4 and 5): a read-only or full cache directory,
too few file descriptors, a directory where a cache file belongs, or a build lock held by a
stopped process never raise to the user. The build moves to a private temporary directory
with one warning, or, where that fails too, the caller runs eagerly after one warning; nothing
half-written is left for a later run to trust.

Faults are made deterministically: a read-only filesystem by refusing writes inside the cache
(the tests may run as root, whom permissions do not stop), a full disk by a compiler that fails
as gcc does on one, a stopped builder by a SIGSTOPped subprocess holding the lock.
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.runtime import build as _build
from fusetorch.runtime import cbuild

from test_cbuild import check, compiles, fresh_name, kernel, needs_cc, wrapper


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache dir, and this process's memory of earlier builds and faults forgotten
    (so every build below really goes to the disk)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(path))
    monkeypatch.delenv("FUSETORCH_PRINT_KERNELS", raising=False)
    monkeypatch.setattr(cbuild, "_loaded", {})
    monkeypatch.setattr(cbuild, "_faulty", {})
    monkeypatch.setattr(cbuild, "_warned", set())
    monkeypatch.setattr(_build, "_warned", set())
    return path


def _under(path: Path, name, dir_fd) -> bool:
    if dir_fd is not None:
        try:
            name = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fspath(name))
        except OSError:
            return False
    return os.path.abspath(os.fspath(name)).startswith(str(path))


def _read_only(monkeypatch, path: Path) -> None:
    """Every write inside `path` fails as on a read-only filesystem."""
    real_open, real_mkdir, real_replace = os.open, os.mkdir, os.replace
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def refuse(what):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), what)

    def open_(name, flags, mode=0o777, *, dir_fd=None):
        if flags & writes and _under(path, name, dir_fd):
            refuse(name)
        return real_open(name, flags, mode, dir_fd=dir_fd)

    def mkdir(name, mode=0o777, *, dir_fd=None):
        if _under(path, name, dir_fd):
            refuse(name)
        return real_mkdir(name, mode, dir_fd=dir_fd)

    def replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        if _under(path, dst, dst_dir_fd):
            refuse(dst)
        return real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "replace", replace)


def _entries(path: Path) -> list:
    return sorted(p.name for p in path.rglob("*") if p.suffix in (".so", ".json"))


@needs_cc
def test_a_read_only_cache_builds_privately_with_one_warning(cache, monkeypatch):
    cache.mkdir(mode=0o700)
    _read_only(monkeypatch, cache)
    name = fresh_name()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = cbuild.build(*kernel(name))
        check(lib, name)
        monkeypatch.setattr(cbuild, "_loaded", {})
        check(cbuild.build(*kernel(name)), name)  # the next build goes there directly
    assert not str(lib.path).startswith(str(cache))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "failed (Read-only file system" in messages[0], messages
    assert _entries(cache) == []


def _full_disk_cc(tmp_path) -> str:
    cc, _ = wrapper(tmp_path, 'case "$*" in *" -o "*) echo "cc1: fatal error: cannot write '
                              'output: No space left on device" >&2; exit 1;; esac')
    return cc


@needs_cc
def test_a_full_disk_runs_eager_training_and_compiled_calls_eagerly(cache, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("CC", _full_disk_cc(tmp_path))
    monkeypatch.setattr(cbuild, "_compilers", {})
    monkeypatch.setattr(cbuild, "_compiler_ids", {})
    from fusetorch.optim import _fused
    monkeypatch.setattr(_fused, "_FUNCS", {})
    # (the failed build turns fused steps off for the process: back on for the next tests)
    monkeypatch.setattr(_fused, "_compiler", True)
    w0 = np.linspace(-1, 1, 64 * 70).reshape(64, 70)
    w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    f = torch.compile(lambda t: (t * 2.0).exp().sum())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # the optimizer's fused step is a kernel built through the cache
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        x = torch.tensor(w0 * 0.1, requires_grad=True)
        ys = [f(x) for _ in range(3)]
        ys[-1].backward()  # the compiled backward, built at its first run, runs eagerly too
    # SGD with momentum 0.9 on d(w^2)/dw = 2w, two steps: v1 = 2w, w1 = w - 0.1 v1;
    # v2 = 0.9 v1 + 2 w1, w2 = w1 - 0.1 v2
    v1 = 2 * w0
    w1 = w0 - 0.1 * v1
    w2 = w1 - 0.1 * (0.9 * v1 + 2 * w1)
    np.testing.assert_allclose(w.detach().numpy(), w2, rtol=1e-12)
    want = np.exp(w0 * 0.2).sum()
    for y in ys:
        np.testing.assert_allclose(y.item(), want, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(w0 * 0.2), rtol=1e-12)
    messages = [str(m.message) for m in caught if "fusetorch" in str(m.message)]
    assert len(messages) == 1 and "cannot build kernels" in messages[0] and \
        "No space left on device" in messages[0], messages
    assert _entries(cache) == []  # nothing half-written for a later run to trust


@needs_cc
@pytest.mark.parametrize("where", [".json", ".so", ".lock"])
def test_a_directory_where_a_cache_file_belongs_is_moved_aside_once(cache, tmp_path,
                                                                    monkeypatch, where):
    cc, log = wrapper(tmp_path)
    monkeypatch.setenv("CC", cc)
    name = fresh_name()
    source, cdef = kernel(name)
    key = cbuild.entry_key(source, cdef)
    entry = cache / key[:2] / key
    check(cbuild.build(source, cdef), name)
    if where == ".lock":
        os.unlink(f"{entry}.json")  # (rebuilt, so under its lock)
        os.unlink(f"{entry}.lock")
    else:
        os.unlink(f"{entry}{where}")
    os.mkdir(f"{entry}{where}")
    (Path(f"{entry}{where}") / "inside").write_text("x")
    for run in range(2):  # the first run repairs the entry (one warning), the second loads it
        monkeypatch.setattr(cbuild, "_loaded", {})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib = cbuild.build(source, cdef)
        check(lib, name)
        assert str(lib.path).startswith(str(cache))
        messages = [str(w.message) for w in caught]
        assert len(messages) == (1 - run) and all("moved aside" in m for m in messages), \
            messages
    assert compiles(log) == 2
    assert Path(f"{entry}.lock").is_file() and Path(f"{entry}.so").is_file()


CHILD_NOFILE = textwrap.dedent(r"""
    # a fresh fork per number of free descriptors (none of fusetorch's libraries loaded yet):
    # eager SGD with momentum, an eager backward that compiles, a compiled call
    import os, resource, sys, warnings
    import numpy as np
    import fusetorch as torch
    warnings.simplefilter("ignore")

    def work():
        torch.manual_seed(0)
        w = torch.randn(256, 64, requires_grad=True)
        w0 = w.detach().numpy().astype(np.float64)
        opt = torch.optim.SGD([w], lr=0.01, momentum=0.9)
        x = torch.randn(32, 256)
        xd = x.numpy().astype(np.float64)
        for _ in range(3):  # from step 2 the backward graph is a compiled program
            opt.zero_grad()
            (x @ w).tanh().pow(2).sum().backward()
            opt.step()
        v = None
        for _ in range(3):  # d/dW sum(tanh(xW)^2) = x^T (2 tanh (1 - tanh^2))
            t = np.tanh(xd @ w0)
            g = xd.T @ (2 * t * (1 - t * t))
            v = g if v is None else 0.9 * v + g
            w0 = w0 - 0.01 * v
        assert np.allclose(w.detach().numpy(), w0, rtol=1e-3, atol=1e-4)
        f = torch.compile(lambda t: (t * 2.0 + 1.0).exp().sum(0))
        a = torch.full((300, 70), 0.1)
        ys = [f(a).numpy() for _ in range(3)]
        assert all(np.allclose(y, np.exp(1.2) * 300, rtol=1e-5) for y in ys)

    failed = []
    for free in (9,):  # (the probes found crashes at 9 and 10 free before)
        cache = os.path.join(sys.argv[1], str(free))  # cold: every kernel built in the fork
        pid = os.fork()
        if pid == 0:
            os.environ["FUSETORCH_CACHE_DIR"] = cache
            used = len(os.listdir("/proc/self/fd"))
            resource.setrlimit(resource.RLIMIT_NOFILE, (used + free,) * 2)
            try:
                work()
            except BaseException as e:
                print(free, type(e).__name__, str(e)[:200], file=sys.stderr, flush=True)
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status:
            failed.append(free)
    print("ok" if not failed else f"failed with {failed} free descriptors")
""")


@needs_cc
def test_few_free_file_descriptors_never_raise(cache):
    env = dict(os.environ, PYTHONPATH=str(Path(torch.__file__).parent.parent))
    p = subprocess.run([sys.executable, "-c", CHILD_NOFILE, str(cache)], capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


HOLDER = textwrap.dedent(r"""
    import fcntl, os, signal, sys
    os.makedirs(os.path.dirname(sys.argv[1]), mode=0o700, exist_ok=True)
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
""")


@needs_cc
def test_a_stopped_process_holding_the_build_lock_delays_a_build_boundedly(cache,
                                                                           monkeypatch):
    monkeypatch.setenv("FUSETORCH_LOCK_TIMEOUT", "0.5")
    name = fresh_name()
    source, cdef = kernel(name)
    key = cbuild.entry_key(source, cdef)
    cache.mkdir(mode=0o700)
    lock = cache / key[:2] / f"{key}.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib = cbuild.build(source, cdef)
        check(lib, name)
        messages = [str(w.message) for w in caught]
        assert len(messages) == 1 and str(lock) in messages[0] and "0.5 s" in messages[0], \
            messages
        assert _entries(cache) == []
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the holder gone, the next build takes the lock and fills the shared cache
    monkeypatch.setattr(cbuild, "_loaded", {})
    lib = cbuild.build(source, cdef)
    assert str(lib.path).startswith(str(cache))


def test_the_lock_timeout_setting_is_checked(monkeypatch):
    monkeypatch.setenv("FUSETORCH_LOCK_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="FUSETORCH_LOCK_TIMEOUT"):
        cbuild.lock_timeout()
    monkeypatch.setenv("FUSETORCH_LOCK_TIMEOUT", "2.5")
    assert cbuild.lock_timeout() == 2.5
    monkeypatch.delenv("FUSETORCH_LOCK_TIMEOUT")
    assert cbuild.lock_timeout() == 60.0


def test_no_leftover_build_directories(cache):
    assert not cache.exists() or not [p for p in cache.iterdir()
                                      if p.name.startswith("build-")]
    shutil.rmtree(cache, ignore_errors=True)
