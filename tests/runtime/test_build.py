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


def _kernels(cpu: bool = True):
    x, y = _input((3, 5)), _input((5,))
    out = make_node("exp", [make_node("add", [x, y])])
    graph = Graph([x, y], [out])
    return kernel_plan.make(graph, {id(x): contiguous((3, 5)), id(y): contiguous((5,))},
                            cpu=cpu).kernels


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
        build.build(_kernels(cpu=False), "cuda")


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


def test_split_balances_parts_in_order():
    assert build.split([80, 20, 60, 40], 1) == [[0, 1, 2, 3]]  # one core: one module
    assert build.split([80, 20, 60, 40], 2) == [[0, 1], [2, 3]]  # 100 and 100 lines
    assert build.split([10] * 5, 8) == [[0, 1, 2, 3, 4]]  # too little for two processes
    parts = build.split([25] * 40, 64)
    assert len(parts) == build.MAX_PARTS and sorted(sum(parts, [])) == list(range(40))
    assert all(part == sorted(part) and len(part) == 5 for part in parts)
    assert build.split([300], 4) == [[0]]  # one kernel is never split


def _unary_kernels(ops: tuple) -> list:
    """One kernel per op: op(x + y)."""
    out = []
    for op in ops:
        x, y = _input((3, 5)), _input((5,))
        graph = Graph([x, y], [make_node(op, [make_node("add", [x, y])])])
        out += kernel_plan.make(graph, {id(x): contiguous((3, 5)),
                                        id(y): contiguous((5,))}).kernels
    return out


def test_a_module_in_parts_runs_every_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_cores", lambda: 2)
    monkeypatch.setattr(build, "PART_LINES", 1)
    modules = []
    build_all = cbuild.build_all
    monkeypatch.setattr(cbuild, "build_all", lambda m: modules.append(m) or build_all(m))
    ops = ("exp", "tanh", "sin", "cos")
    kernels = _unary_kernels(ops)
    built = build.build(kernels + kernels[:1], "cpu")  # a kernel twice: defined once
    assert [len(m) for m in modules] == [2]
    assert "Part 1 of 2" in built.source and "Part 2 of 2" in built.source
    assert built.source.count(f"void {kernels[0].name}(") == 1
    x, y = np.random.rand(3, 5), np.random.rand(5)
    ptr = built.ffi.from_buffer
    for f, op in zip(built.functions, ops + ops[:1]):
        out = np.empty((3, 5))
        f(ptr("double[]", x), ptr("double[]", y), ptr("double[]", out))
        np.testing.assert_allclose(out, getattr(np, op)(x + y), rtol=1e-15)
    one = build.build(kernels[:1], "cpu")  # a single kernel: one module, not a part
    assert "Part 1" not in one.source and [len(m) for m in modules] == [2, 1]
