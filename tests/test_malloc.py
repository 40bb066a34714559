"""fusetorch._malloc: glibc's heap thresholds fixed at import, unless the user tuned malloc."""
import ctypes
import sys

import pytest

import fusetorch  # noqa: F401  (its import runs keep_heap)
from fusetorch import _malloc


def test_user_settings_are_left_alone():
    assert not _malloc.user_configured({})
    assert not _malloc.user_configured({"GLIBC_TUNABLES": "glibc.pthread.rseq=0"})
    assert _malloc.user_configured({"MALLOC_TRIM_THRESHOLD_": "1000"})
    assert _malloc.user_configured({"MALLOC_MMAP_THRESHOLD_": "65536"})
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
