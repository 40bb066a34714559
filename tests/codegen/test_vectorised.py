"""The generated inner loops vectorise: gcc's own report (-fopt-info-vec) on the module source
of representative compiled functions. A kernel whose loop stays scalar still gives the right
values, so only this test notices it (a relu-and-mask kernel once ran 5x slower: `_Bool`
pointers and branches kept for trapping math stopped gcc).
"""
import math
import re
import subprocess

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.codegen import render
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


# ---------------------------------------------------------------- libmvec's erf

def _erf_inputs(dtype) -> np.ndarray:
    """A wide range: the saturation near +-3.65 (float32) and +-5.9 (float64), the series'
    small arguments down to subnormals, 0, -0, +-inf, NaN; an odd length, so the vector loop
    has a scalar tail."""
    tiny = -40 if dtype == np.float32 else -300
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-7, 7, 40001), rng.uniform(-4, 4, 30000),
                        np.logspace(tiny, 1.5, 3000), -np.logspace(tiny, 1.5, 3000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0]])
    return x.astype(dtype)


def _ulps(got: np.ndarray, x: np.ndarray, dtype) -> float:
    """The largest distance of `got` from erf in float64 (math.erf), in ulps of the dtype at
    the exact value."""
    want = np.array([math.erf(float(v)) for v in x])
    finite = np.isfinite(want)
    spacing = np.spacing(np.abs(want[finite]).astype(dtype)).astype(np.float64)
    return float((np.abs(got[finite].astype(np.float64) - want[finite]) / spacing).max())


@pytest.mark.parametrize("dtype,max_ulps", [(np.float32, 4), (np.float64, 3)])
def test_erf_kernels_within_a_few_ulp(dtype, max_ulps):
    """erf's compiled kernels (libmvec's vector erf where glibc has it) and its eager kernel
    (the same C expression, run from the second sighting of a large input) stay within a few
    ulp of the float64 reference, with erf's exact edges."""
    x = _erf_inputs(dtype)
    cf = torch.compile(lambda t: torch.erf(t))
    for f in (torch.erf, cf):
        f(torch.from_numpy(x))
        got = f(torch.from_numpy(x)).numpy()
        assert got.dtype == dtype
        assert _ulps(got, x, dtype) <= max_ulps
        edges = got[-7:]
        assert edges[0] == 0 and not np.signbit(edges[0]) and np.signbit(edges[1])
        assert edges[2] == 1 and edges[3] == -1 and np.isnan(edges[4])
        assert edges[5] == 1 and edges[6] == -1


def test_erf_and_gelu_loops_vectorise(tmp_path):
    """With libmvec's erf declared, GELU's forward and its backward's erf leave no scalar
    loop (a scalar erff took 57 ms over 8.4M floats where the vector one takes 5)."""
    if not render.has_vector_variant("erff", 1, "f"):
        pytest.skip("this C library has no vector erff (glibc < 2.35)")
    x = torch.randn(64, 384, requires_grad=True)
    cf = torch.compile(lambda t: torch.nn.functional.gelu(t * 2).sum())
    cf(x).backward()
    cf(x).backward()
    source = cf.source()
    assert "erff" in source
    assert _scalar_inner_loops(source, tmp_path) == []


def test_without_libmvec_the_kernels_call_scalar_libm(monkeypatch):
    """A C library without the vector variants gets no `declare simd` prototypes (the module
    would fail to load on a missing symbol): kernels fall back to scalar libm, same values."""
    monkeypatch.setattr(render, "_libmvec", lambda: None)
    render.has_vector_variant.cache_clear()
    try:
        assert render.simd_declarations() == []
        x = _erf_inputs(np.float32)
        cf = torch.compile(lambda t: torch.erf(t).exp())
        got = cf(torch.from_numpy(x)).numpy()
        assert "declare simd" not in cf.source()
        want = np.exp(np.array([math.erf(float(v)) for v in x]))
        np.testing.assert_allclose(got, want, rtol=1e-6)
    finally:
        render.has_vector_variant.cache_clear()
