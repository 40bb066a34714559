"""torch.set_num_threads reaches numpy's BLAS and the kernels' OpenMP runtime (in a fresh
process, so the suite's own thread settings are untouched)."""
import subprocess
import sys
import textwrap

import pytest

import fusetorch as torch


def test_set_num_threads_limits_blas_and_openmp_in_a_fresh_process():
    code = textwrap.dedent("""
        import fusetorch as torch
        from threadpoolctl import threadpool_info
        torch.set_num_threads(1)
        f = torch.compile(lambda t: (t * 2).exp().sum())
        x = torch.randn(1 << 22)          # big enough for a parallel kernel, which links OpenMP
        f(x); f(x)
        torch.mm(torch.randn(8, 8), torch.randn(8, 8))
        print(torch.get_num_threads(),
              sorted({p["num_threads"] for p in threadpool_info()}),
              sorted({p["user_api"] for p in threadpool_info()}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split(maxsplit=1)
    assert out[0] == "1"
    assert out[1].startswith("[1]"), out  # every pool threadpoolctl sees runs one thread
    assert "'openmp'" in out[1] and "'blas'" in out[1], out


@pytest.mark.parametrize("fn", [torch.set_num_threads, torch.set_num_interop_threads])
def test_bad_thread_counts_raise_pytorchs_errors(fn):
    name = fn.__name__
    for bad in (0, -2):
        with pytest.raises(RuntimeError, match=f"{name} expects a positive integer"):
            fn(bad)
    for bad, kind in ((2.0, "float"), ("a", "str"), (True, "bool")):
        with pytest.raises(RuntimeError, match=f"{name} expects an int, but got {kind}"):
            fn(bad)


def test_defaults_are_positive():
    assert torch.get_num_threads() >= 1 and torch.get_num_interop_threads() >= 1
