"""Writing a file so that a kill at any moment leaves either the old file or the new one.

`save` used to open its path with "wb", which empties the old checkpoint first: a kill while it
wrote lost both. Here the bytes go to a temporary file in the same directory (so the rename
stays on one filesystem), are flushed and fsynced, and `os.replace` puts them in place in one
step; the directory is fsynced so the rename itself survives a crash. A path that exists and is
not a regular file (/dev/null, a FIFO) is written in place: there is nothing to replace.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import BinaryIO, Iterator


def _umask() -> int:
    try:  # reading it with os.umask would change it for every thread for a moment
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _target(path) -> tuple[str, int | None]:
    """The path to replace (a symlink's target, as open() would write through it) and the mode
    the new file gets (the old file's; else what open() would give it)."""
    target = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target, 0o666 & ~_umask()
    if not stat.S_ISREG(st.st_mode):
        return target, None
    return target, stat.S_IMODE(st.st_mode)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on a directory; the rename still happened
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def replaced_path(path) -> Iterator[str]:
    """Yields a temporary path beside `path` to write; on success it replaces `path` (after an
    fsync), on any exception it is removed and `path` is untouched."""
    target, mode = _target(path)
    if mode is None:
        yield target
        return
    directory = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(target) + ".",
                               suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, mode)
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


@contextlib.contextmanager
def replacing(path) -> Iterator[BinaryIO]:
    """A binary file open for writing whose contents replace `path` only once complete."""
    with replaced_path(path) as tmp:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()  # (replaced_path fsyncs it)
