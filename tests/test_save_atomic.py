"""A kill at any moment of `save` leaves the old checkpoint loadable (issue 25, item 6).

Each probe forks a child that saves a new checkpoint over an old one and SIGKILLs itself at
the k-th write of the file (every write of the save is a kill point), or just before the rename
(safetensors, whose writes happen in Rust): the old file must load with its old values. The
kill point is chosen by count, not by time, so the test does not depend on scheduling.
"""
from __future__ import annotations

import builtins
import os
import signal
import stat

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.utils import safetensors as st


class _KillAt:
    """A file object that SIGKILLs the process at its k-th write."""

    def __init__(self, fh, k: int):
        self._fh, self._k = fh, k

    def write(self, b):
        self._k -= 1
        if self._k <= 0:
            half = bytes(memoryview(b).cast("B")[: max(1, len(memoryview(b).cast("B")) // 2)])
            self._fh.write(half)
            self._fh.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return self._fh.write(b)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()
        return False


def _killed_save(save, k: int) -> bool:
    """Runs `save()` in a forked child killed at its k-th write of a file opened "wb"; True if
    the child was killed (False: the save had fewer writes and finished)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        real_open = builtins.open

        def killing_open(file, mode="r", *args, **kwargs):
            fh = real_open(file, mode, *args, **kwargs)
            return _KillAt(fh, k) if "w" in mode and "b" in mode else fh
        builtins.open = killing_open
        try:
            save()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _old_and_new():
    old = {"w": torch.arange(3000, dtype=torch.float32), "b": torch.ones(7, dtype=torch.float64)}
    new = {"w": torch.zeros(3000), "b": torch.full((7,), 2.0, dtype=torch.float64)}
    return old, new


@pytest.mark.parametrize("fmt", ["fusetorch", "torch"])
def test_a_kill_at_every_write_of_save_keeps_the_old_checkpoint(tmp_path, fmt):
    old, new = _old_and_new()
    path = tmp_path / "ckpt.pt"
    torch.save(old, path, format=fmt)
    killed, lost = 0, []
    for k in range(1, 40, 1 if fmt == "fusetorch" else 4):  # (a zip writes ~40 times)
        if not _killed_save(lambda: torch.save(new, path, format=fmt), k):
            break
        killed += 1
        try:
            got = torch.load(path)
        except Exception as e:  # noqa: BLE001 (a destroyed checkpoint, the defect)
            lost.append((k, repr(e)[:80]))
            torch.save(old, path, format=fmt)
            continue
        np.testing.assert_array_equal(got["w"].numpy(), np.arange(3000, dtype=np.float32))
        np.testing.assert_array_equal(got["b"].numpy(), np.ones(7))
    assert killed >= 3, "the probe never reached a write inside save"
    assert lost == []
    torch.save(new, path, format=fmt)  # and a save that is not killed replaces it
    np.testing.assert_array_equal(torch.load(path)["w"].numpy(), np.zeros(3000))


def test_a_kill_before_safetensors_renames_keeps_the_old_file(tmp_path, monkeypatch):
    pytest.importorskip("safetensors")
    old, new = _old_and_new()
    path = tmp_path / "m.safetensors"
    st.save_file(old, path)
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        def kill(*a, **k):
            os.kill(os.getpid(), signal.SIGKILL)
        os.replace = kill
        try:
            st.save_file(new, path)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    np.testing.assert_array_equal(st.load_file(path)["w"].numpy(),
                                  np.arange(3000, dtype=np.float32))
    st.save_file(new, path)
    np.testing.assert_array_equal(st.load_file(path)["w"].numpy(), np.zeros(3000))


def test_save_keeps_the_mode_and_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.pt"
    torch.save(torch.ones(2), real)
    os.chmod(real, 0o640)
    link = tmp_path / "link.pt"
    link.symlink_to(real)
    torch.save(torch.zeros(2), link)
    assert link.is_symlink()  # the link was written through, not replaced by a file
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    np.testing.assert_array_equal(torch.load(real).numpy(), np.zeros(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.pt", "real.pt"]


def test_a_failing_save_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "c.pt"
    torch.save(torch.ones(2), path)
    with pytest.raises(Exception):
        torch.save({"x": object()}, path)
    np.testing.assert_array_equal(torch.load(path).numpy(), np.ones(2))
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_save_to_dev_null_still_works():
    torch.save(torch.ones(2), os.devnull)
