"""fusetorch._malloc: glibc's heap thresholds fixed at import, unless the user tuned malloc."""
import ctypes
import os
import subprocess
import sys

import pytest

import fusetorch  # noqa: F401  (its import runs keep_heap)
from fusetorch import _malloc


def test_user_settings_are_left_alone():
    assert not _malloc.user_configured({})
    assert not _malloc.user_configured({"GLIBC_TUNABLES": "glibc.pthread.rseq=0"})
    assert _malloc.user_configured({"MALLOC_TRIM_THRESHOLD_": "1000"})
    assert _malloc.user_configured({"MALLOC_MMAP_THRESHOLD_": "65536"})
    assert _malloc.user_configured({"MALLOC_ARENA_MAX": "4"})
    assert _malloc.user_configured({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"})
    assert not _malloc.user_configured({"MALLOC_TRIM_THRESHOLD_": ""})


def _glibc() -> bool:
    try:
        ctypes.CDLL("libc.so.6").gnu_get_libc_version
    except (OSError, AttributeError):
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc only")
def test_thresholds_are_set_at_import():
    if _malloc.user_configured():
        pytest.skip("this environment tunes malloc itself")
    assert _malloc.applied
    assert _malloc.keep_heap()  # a second call changes nothing and says so
    assert _malloc.MMAP_THRESHOLD == 32 << 20 and _malloc.TRIM_THRESHOLD == 256 << 20
    assert _malloc.ARENA_MAX == 1


_ARENAS = r"""
import ctypes, sys, threading
{imp}
def work():
    global keep
    keep = [bytearray(1 << 16) for _ in range(64)]  # (malloc'd by this thread)
t = threading.Thread(target=work)
t.start(); t.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
fp = libc.fopen(sys.argv[1].encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
print(open(sys.argv[1]).read().count("<heap nr="))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc only")
def test_threads_share_one_arena(tmp_path):
    """A thread's allocations (a background build's) land in the heap the others free into."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}

    def arenas(imp: str) -> int:
        out = subprocess.run([sys.executable, "-c", _ARENAS.format(imp=imp),
                              str(tmp_path / "info.xml")], env=env, check=True,
                             capture_output=True, text=True)
        return int(out.stdout.split()[-1])

    assert arenas("import fusetorch") == 1
    assert arenas("") > 1  # (glibc's own rule: the check above can tell them apart)
