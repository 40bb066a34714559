"""The kernel cache against another user (issue 12): nothing another user can write is ever
loaded or executed, and the cache cleans up after killed builds and damaged files.

The tests run as root and play the attacker as `nobody`: files are handed to nobody with
`chown`, or written by a forked child that has `setuid` to nobody. The victim's builds run in
fresh processes (CHILD), so nothing planted is ever mapped into the test process, and each
test's planted files carry a side effect (a marker file) that must never appear. The planted
files are made to pass every content check an attacker could satisfy (sidecars with matching
sizes and digests), so only ownership, mode and the way files are opened can refuse them.
"""
import fcntl
import hashlib
import json
import marshal
import os
import pickle
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import cffi
import jinja2
import pytest
from cffi.recompiler import make_py_source

from fusetorch import codegen
from fusetorch.runtime import cbuild

REAL_CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(REAL_CC is None, reason="no C compiler on this machine")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to play a second user")
try:
    NOBODY = pwd.getpwnam("nobody")
except KeyError:
    NOBODY = None
needs_nobody = pytest.mark.skipif(NOBODY is None, reason="no user 'nobody'")


def fresh_name() -> str:
    return "k_" + uuid.uuid4().hex[:12]


def kernel(name: str) -> tuple[str, str]:
    source = f"void {name}(float* x, long n) {{ for (long i = 0; i < n; i++) x[i] += 1; }}\n"
    return source, f"void {name}(float* x, long n);"


# A fresh process that builds kernel argv[2] and calls it; cbuild is loaded by path. With
# argv[3] ("flip:<link>:<good>:<evil>") every stat of anything sees <link> -> <good> and every
# other access sees <link> -> <evil>: the attacker who owns the link's directory wins every race
# between a check and the use that follows it.
CHILD = r"""
import importlib.util, os, sys
import numpy as np
spec = importlib.util.spec_from_file_location("cbuild", sys.argv[1])
cbuild = importlib.util.module_from_spec(spec); spec.loader.exec_module(cbuild)
name = sys.argv[2]
source = f"void {name}(float* x, long n) {{ for (long i = 0; i < n; i++) x[i] += 1; }}\n"
if len(sys.argv) > 3:
    _, link, good, evil = sys.argv[3].split(":")
    def point(target):
        tmp = link + ".new"
        os.symlink(target, tmp)
        os.replace(tmp, link)
    def racing(real):
        def stat(*args, **kwargs):
            point(good)
            try:
                return real(*args, **kwargs)
            finally:
                point(evil)
        return stat
    point(evil)
    os.stat, os.lstat, os.fstat = racing(os.stat), racing(os.lstat), racing(os.fstat)
lib = cbuild.build(source, f"void {name}(float* x, long n);")
x = np.zeros(5, np.float32)
lib.function(name)(lib.ffi.from_buffer("float[]", x), 5)
assert (x == 1).all(), x
print("ok", lib.path, lib.key)
"""


def run_child(name: str, cache: Path, *extra: str, cc: str | None = None) -> tuple[str, str]:
    """Build kernel `name` in a fresh process with cache `cache`; returns (key, stderr)."""
    env = dict(os.environ, FUSETORCH_CACHE_DIR=str(cache))
    env.pop("FUSETORCH_PRINT_KERNELS", None)
    if cc:
        env["CC"] = cc
    res = subprocess.run([sys.executable, "-c", CHILD, cbuild.__file__, name, *extra],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout.split()
    assert out[0] == "ok", res.stdout
    return out[2], res.stderr


def as_nobody(action) -> None:
    """Run `action()` in a forked child that is user nobody (the attacker)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY.pw_gid)
            os.setuid(NOBODY.pw_uid)
            action()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the attacker's action failed"


@pytest.fixture
def shared(tmp_path):
    """A directory every user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="fusetorch-sec-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def evil_files(where: Path, marker: Path, name: str) -> dict[str, bytes]:
    """What an attacker plants: a library whose constructor (run by dlopen) writes `marker`,
    and a Python module (the old layout's declarations) that writes it too."""
    src = where / "evil.c"
    src.write_text(f'#include <stdio.h>\n'
                   f'__attribute__((constructor)) static void evil(void) {{\n'
                   f'  FILE* f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'
                   f'void {name}(float* x, long n) {{ for (long i = 0; i < n; i++) x[i] += 1; }}\n')
    subprocess.run([REAL_CC, "-shared", "-fPIC", "-o", str(where / "evil.so"), str(src)],
                   check=True)
    return {".so": (where / "evil.so").read_bytes(), ".py": evil_module(marker, name)}


def evil_module(marker: Path, name: str) -> bytes:
    """A working declarations module of the old layout, that also writes `marker`."""
    ffi = cffi.FFI()
    ffi.cdef(kernel(name)[1])
    with tempfile.TemporaryDirectory() as d:
        make_py_source(ffi, "evil", f"{d}/evil.py")
        return f"open({str(marker)!r}, 'w').close()\n".encode() + Path(f"{d}/evil.py").read_bytes()


def forged_sidecar(genuine: bytes, files: dict[str, bytes]) -> bytes:
    """The genuine sidecar with sizes and digests changed to match the planted files: all the
    content checks an attacker can pass."""
    info = json.loads(genuine)
    for suffix, data in files.items():
        info[f"{suffix[1:]}_size"] = len(data)
        info[f"{suffix[1:]}_sha256"] = hashlib.sha256(data).hexdigest()
    return json.dumps(info).encode()


def plant(directory: Path, key: str, files: dict[str, bytes], sidecar: bytes) -> None:
    for suffix, data in [*files.items(), (".json", sidecar)]:
        tmp = directory / f".plant{suffix}"
        tmp.write_bytes(data)
        os.replace(tmp, directory / f"{key}{suffix}")


def private(path: Path) -> bool:
    st = path.lstat()
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


@needs_cc
@needs_root
@needs_nobody
def test_planted_files_in_a_world_writable_subdirectory_are_not_used(shared):
    cache, marker, name = shared / "cache", shared / "marker", fresh_name()
    key, _ = run_child(name, cache)
    cache.chmod(0o755)  # a safe root (nobody can write it) that others may read
    sub = cache / key[:2]
    sub.chmod(0o777)  # ...but one subdirectory is writable by everybody
    files = evil_files(shared, marker, name)
    sidecar = forged_sidecar((sub / f"{key}.json").read_bytes(), files)
    as_nobody(lambda: plant(sub, key, files, sidecar))
    assert (sub / f"{key}.so").stat().st_uid == NOBODY.pw_uid  # the attacker's now
    key2, err = run_child(name, cache)
    assert key2 == key
    assert not marker.exists(), "the cache ran the attacker's file"
    assert "not safe" in err  # the user is told
    assert private(cache / key[:2]) and private(cache / key[:2] / f"{key}.so")


@needs_cc
@needs_root
@needs_nobody
def test_a_symlinked_cache_path_swapped_after_the_check_is_not_followed(shared):
    # the cache path runs through a directory that nobody owns; nobody can point the link at
    # a directory of theirs whenever they like, so every check sees the real cache and every
    # other access sees theirs
    real, alice, marker, name = shared / "real", shared / "alice", shared / "marker", fresh_name()
    real.mkdir(mode=0o700)
    alice.mkdir()
    (alice / "cache").symlink_to(real)
    os.chown(alice, NOBODY.pw_uid, NOBODY.pw_gid)
    os.chown(alice / "cache", NOBODY.pw_uid, NOBODY.pw_gid, follow_symlinks=False)
    key, _ = run_child(name, alice / "cache")  # populates the real, root-owned cache
    assert (real / key[:2] / f"{key}.so").exists()
    files = evil_files(shared, marker, name)
    sidecar = forged_sidecar((real / key[:2] / f"{key}.json").read_bytes(), files)

    def prepare() -> None:
        (alice / "evil" / key[:2]).mkdir(parents=True)
        plant(alice / "evil" / key[:2], key, files, sidecar)

    as_nobody(prepare)
    flip = f"flip:{alice / 'cache'}:{real}:{alice / 'evil'}"
    run_child(name, alice / "cache", flip)
    assert not marker.exists(), "the cache followed the swapped link to the attacker's files"


@needs_cc
def test_no_python_from_the_cache_is_executed(tmp_path):
    # the old layout imported <key>.py beside each library; a module planted there (with a
    # sidecar that matches it) must never run
    cache, marker, name = tmp_path / "cache", tmp_path / "marker", fresh_name()
    key, _ = run_child(name, cache)
    sub = cache / key[:2]
    py = evil_module(marker, name)
    sidecar = forged_sidecar((sub / f"{key}.json").read_bytes(), {".py": py})
    plant(sub, key, {".py": py}, sidecar)
    run_child(name, cache)
    assert not marker.exists(), "a Python file from the cache was executed"


def wrapper_cc(tmp_path: Path) -> tuple[str, Path]:
    """A CC that logs its compilations, then runs the real one."""
    log = tmp_path / "cc.log"
    script = tmp_path / "cc-log"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{REAL_CC}" "$@"\n')
    script.chmod(0o755)
    return str(script), log


def compiles(log: Path) -> int:
    return sum(" -o " in f" {line} " for line in log.read_text().splitlines()) \
        if log.exists() else 0


@needs_cc
@pytest.mark.parametrize("what", ["so", "json", "subdirectory"])
@pytest.mark.parametrize("how", ["other_owner", "group_writable"])
def test_entries_with_wrong_owner_or_mode_are_refused(what, how, tmp_path):
    if how == "other_owner" and (os.geteuid() != 0 or NOBODY is None):
        pytest.skip("needs root and user nobody to give a file to another user")
    cache, name = tmp_path / "cache", fresh_name()
    cc, log = wrapper_cc(tmp_path)
    key, _ = run_child(name, cache, cc=cc)
    sub = cache / key[:2]
    target = sub if what == "subdirectory" else sub / f"{key}.{what}"
    if how == "other_owner":
        os.chown(target, NOBODY.pw_uid, NOBODY.pw_gid)
    else:
        target.chmod(target.stat().st_mode | 0o020)
    run_child(name, cache, cc=cc)
    assert compiles(log) == 2, "an entry with the wrong owner or mode was used"
    for path in (sub, sub / f"{key}.so", sub / f"{key}.json"):
        assert private(path), path  # the rebuilt entry is ours alone again


# ---------------------------------------------------------------- housekeeping


def backdate(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


@needs_cc
def test_stale_build_directories_are_swept(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(cache))
    cbuild.build(*kernel(fresh_name()))  # makes the cache
    day = 24 * 3600
    dead = cache / "build-killed"  # its builder is gone (nobody holds its lock), long ago
    live = cache / "build-running"  # a builder that still holds its lock
    young = cache / "build-young"  # unlocked but just made: maybe not locked yet
    for d in (dead, live, young):
        d.mkdir()
        (d / "x.c").write_text("int x;\n")
    backdate(dead, 2 * day)
    backdate(live, 2 * day)
    held = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        cbuild.build(*kernel(fresh_name()))  # a build sweeps stale build directories
        assert not dead.exists()
        assert live.exists() and young.exists()
    finally:
        os.close(held)


def wait_unlocked(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                assert time.monotonic() < deadline, "the killed builder's lock was never freed"
                time.sleep(0.01)
    finally:
        os.close(fd)


@needs_cc
def test_a_build_killed_with_sigkill_leaves_nothing_for_long(tmp_path, monkeypatch):
    cache, started = tmp_path / "cache", tmp_path / "started"
    script = tmp_path / "cc-slow"
    script.write_text(f'#!/bin/sh\ncase "$*" in *" -o "*) touch "{started}"; sleep 60;; esac\n'
                      f'exec "{REAL_CC}" "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ, FUSETORCH_CACHE_DIR=str(cache), CC=str(script))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, cbuild.__file__, fresh_name()],
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert started.exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the builder and its compiler, mid-build
        proc.wait()
    left = [p for p in cache.iterdir() if p.name.startswith("build-")]
    assert len(left) == 1
    wait_unlocked(left[0])  # the compiler it ran shares its lock; it dies a moment later
    backdate(left[0], 2 * 3600)
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(cache))
    cbuild.build(*kernel(fresh_name()))
    assert not [p for p in cache.iterdir() if p.name.startswith("build-")]


def template_names() -> list[str]:
    return sorted(p.name for p in (codegen.TEMPLATES / "c").glob("*.j2"))


def load_templates() -> None:
    env = codegen.environment("c")
    for name in template_names():
        env.get_template(name)


@pytest.fixture
def fresh_environments(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(cache))
    monkeypatch.setattr(codegen, "_envs", {})
    return cache


def test_no_python_code_of_templates_is_kept_in_the_cache(fresh_environments, tmp_path,
                                                          monkeypatch):
    # compiled templates would be code run from the cache (issue 12: no Python from it): they
    # are compiled in memory, nothing is written, and code planted where a cache might look is
    # never run
    load_templates()
    assert not [p for p in fresh_environments.rglob("*") if p.is_file()]
    marker = tmp_path / "marker"
    planted = compile(f"open({str(marker)!r}, 'w')", "planted", "exec")
    templates = fresh_environments / "templates"
    templates.mkdir(parents=True, mode=0o700)
    for name in template_names():
        (templates / f"{name}.bc").write_bytes(marshal.dumps(planted))
    monkeypatch.setattr(codegen, "_envs", {})
    load_templates()
    assert not marker.exists()


class _Planted:
    def __reduce__(self):
        return (open, (os.environ["FUSETORCH_TEST_MARKER"], "w"))


def test_no_pickle_from_the_cache_is_loaded(fresh_environments, tmp_path, monkeypatch):
    # jinja's own FileSystemBytecodeCache unpickles a checksum from each file; a pickle planted
    # at the names it would read must never be loaded
    marker = tmp_path / "marker"
    monkeypatch.setenv("FUSETORCH_TEST_MARKER", str(marker))
    payload = jinja2.bccache.bc_magic + pickle.dumps(_Planted(), 2)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(codegen.TEMPLATES / "c")))
    jinja = jinja2.FileSystemBytecodeCache()
    templates = fresh_environments / "templates"
    templates.mkdir(parents=True, mode=0o700)
    fresh_environments.chmod(0o700)
    for name in template_names():
        filename = env.loader.get_source(env, name)[1]
        (templates / f"__jinja2_{jinja.get_cache_key(name, filename)}.cache").write_bytes(payload)
    load_templates()
    assert not marker.exists(), "a pickle from the cache was loaded"


@needs_cc
@needs_root
@needs_nobody
def test_the_user_is_part_of_the_key(shared, tmp_path, monkeypatch):
    # the same source built by root and by nobody lands under different keys (so different
    # paths): no user ever looks up an entry made for another, even in a shared location
    name = fresh_name()
    theirs = shared / "nobody"
    theirs.mkdir()
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)

    def build_as_nobody() -> None:
        os.environ["FUSETORCH_CACHE_DIR"] = str(theirs / "cache")
        lib = cbuild.build(*kernel(name))
        (theirs / "key").write_text(lib.key)

    as_nobody(build_as_nobody)
    their_key = (theirs / "key").read_text()
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path / "cache"))
    lib = cbuild.build(*kernel(name))
    assert lib.key != their_key
    info = json.loads(lib.path.with_suffix(".json").read_text())
    assert info["uid"] == os.geteuid() == 0
    their_info = json.loads((theirs / "cache" / their_key[:2] / f"{their_key}.json").read_text())
    assert their_info["uid"] == NOBODY.pw_uid
