"""runtime/build.py: loop kernels -> a built module per device, and the one "cannot build
kernels" warning."""
import importlib.util
import warnings

import numpy as np
import pytest

from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import build, cbuild, kernel_plan
from fusetorch.runtime.layouts import contiguous


def _input(shape, dtype=dt.float64):
    return Node("input", (), {"shape": shape, "dtype": dtype}, tuple(shape), dtype)


def _kernels():
    x, y = _input((3, 5)), _input((5,))
    out = make_node("exp", [make_node("add", [x, y])])
    graph = Graph([x, y], [out])
    return kernel_plan.make(graph, {id(x): contiguous((3, 5)), id(y): contiguous((5,))}).kernels


def test_nothing_to_build():
    built = build.build([])
    assert built.source is None and built.functions == [None]


def test_a_c_module_runs_its_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    kernels = _kernels()
    built = build.build(kernels, "cpu")
    assert f"void {kernels[0].name}(" in built.source
    x, y = np.random.rand(3, 5), np.random.rand(5)
    out = np.empty((3, 5))
    ptr = built.ffi.from_buffer
    built.functions[0](ptr("double[]", x), ptr("double[]", y), ptr("double[]", out))
    np.testing.assert_allclose(out, np.exp(x + y), rtol=1e-15)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="cupy is installed")
def test_cuda_without_cupy_cannot_build():
    with pytest.raises(cbuild.CompilerUnavailable, match="cupy"):
        build.build(_kernels(), "cuda")


def test_cannot_build_warns_once_per_kind_of_reason_at_the_callers_line(monkeypatch):
    from fusetorch.runtime.cudabuild import KernelRefused
    monkeypatch.setattr(build, "_warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            build.cannot_build(cbuild.CompilerUnavailable("no C compiler found"))
        build.cannot_build(cbuild.CompilerUnavailable("C compiler 'cc' cannot run"))
        build.cannot_build(KernelRefused("the CUDA renderer cannot render kernel ft_x"))
        build.cannot_build(KernelRefused("the CUDA renderer cannot render kernel ft_y"))
    messages = [str(m.message) for m in w]
    assert len(messages) == 2 and all("cannot build kernels" in m for m in messages)
    assert "no C compiler found" in messages[0] and "ft_x" in messages[1]
    assert all(m.filename == __file__ for m in w)
