"""The generated inner loops vectorise: gcc's own report (-fopt-info-vec) on the module source
of representative compiled functions. A kernel whose loop stays scalar still gives the right
values, so only this test notices it (a relu-and-mask kernel once ran 5x slower: `_Bool`
pointers and branches kept for trapping math stopped gcc).
"""
import re
import subprocess

import pytest

import fusetorch as torch
from fusetorch.runtime import cbuild


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def _gcc() -> list:
    try:
        cmd = cbuild.compiler()
        version = subprocess.run(cmd + ["--version"], capture_output=True, text=True).stdout
    except Exception:  # no compiler at all
        pytest.skip("no C compiler")
    if "gcc" not in version.lower() and "free software foundation" not in version.lower():
        pytest.skip("the vectoriser report read here is gcc's")
    return cmd


def _scalar_inner_loops(source: str, tmp_path) -> list:
    """Kernel names whose innermost loop gcc did not vectorise."""
    src = tmp_path / "module.c"
    src.write_text(source)
    flags = [f for f in cbuild.FLAGS if f not in ("-shared", "-fPIC")]
    res = subprocess.run(_gcc() + flags + ["-c", "-o", str(tmp_path / "m.o"),
                                           "-fopt-info-vec-optimized", str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    reported = [int(m) for m in re.findall(r"module\.c:(\d+):\d+: optimized: loop vectorized",
                                           res.stderr)]
    lines = source.splitlines()
    loops = [no for no, line in enumerate(lines, 1) if "for (" in line]
    # gcc names a line of the loop's body or header: the loop is the last one opened before it
    vectorised = {max(no for no in loops if no <= r) for r in reported}
    scalar, kernel = [], None
    for no, line in enumerate(lines, 1):
        m = re.match(r"void (ft_\w+)\(", line)
        if m:
            kernel = m.group(1)
        # the innermost loop of every kernel carries `simd` (pointwise and reduce templates)
        if "#pragma omp" in line and "simd" in line and "declare" not in line:
            loop = next(i for i in range(no, len(lines) + 1) if "for (" in lines[i - 1])
            if loop not in vectorised:
                scalar.append(kernel)
    return scalar


CASES = {
    "relu and its mask": (lambda x, b: (x + b).relu() * (x + b > 0), [(64, 100), (100,)]),
    "where and sum over the outer axis": (
        lambda x, y: torch.where(x > 0, y, 0.0).sum(0), [(64, 100), (64, 100)]),
    "max over the outer axis, inner loop kept": (
        lambda x: (x * 2).amax(0), [(64, 100)]),
    "argmax over a middle axis (max pooling's window)": (
        lambda x: x.relu().argmax(2), [(64, 6, 4, 196)]),
    "sum over outer and inner axes": (
        lambda x: (x * x).sum((0, 2)), [(16, 6, 196)]),
    "clamp and transcendentals": (
        lambda x: torch.tanh(torch.exp(x * 0.5 + 1).clamp(max=10) * x - 0.25), [(4096,)]),
    "max and min with NaN propagation": (
        lambda x, y: torch.maximum(x, y) - torch.minimum(x, y).sigmoid(), [(32, 128), (32, 128)]),
    "bool casts and logic": (
        lambda x, y: ((x > 0) & y.bool() | ~(x < y)).float() * x, [(64, 100), (64, 100)]),
    "squared difference sum": (lambda a, b: ((a - b) ** 2).sum(), [(1 << 16,), (1 << 16,)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_inner_loops_vectorise(name, tmp_path):
    fn, shapes = CASES[name]
    cf = torch.compile(fn)
    args = [torch.randn(*s) for s in shapes]
    cf(*args)
    cf(*args)
    assert cf.kernels(), "nothing was compiled"
    assert _scalar_inner_loops(cf.source(), tmp_path) == []
