"""runtime/program.py: `obtain`, the one way the compiled paths get a program, and `Program`,
which carries a graph down the pipeline (plan, build, run)."""
import warnings

import numpy as np
import pytest

from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import build, cbuild, layouts, program
from fusetorch.runtime.device import cpu_backend


def _input(shape, dtype=dt.float64):
    return Node("input", (), {"shape": shape, "dtype": dtype}, tuple(shape), dtype)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))


def _graph():
    a, b = _input((4, 8)), _input((8,))
    return Graph([a, b], [make_node("sigmoid", [make_node("mul", [a, b])])])


def _arrays():
    return [np.random.rand(4, 8), np.random.rand(8)]


def _want(a, b):
    return 1 / (1 + np.exp(-(a * b)))


def test_obtained_with_arrays_is_built_and_runs():
    arrays = _arrays()
    p = program.obtain(_graph(), cpu_backend(), arrays)
    assert p.prepared and p.source and len(p.kernels) == 1
    np.testing.assert_allclose(p.run(arrays)[0], _want(*arrays), rtol=1e-14)


def test_obtained_without_arrays_is_built_on_its_first_run():
    p = program.obtain(_graph(), cpu_backend())
    assert not p.prepared and p.source is None
    arrays = _arrays()
    np.testing.assert_allclose(p.run(arrays)[0], _want(*arrays), rtol=1e-14)
    assert p.prepared


def test_a_partition_the_caller_does_not_accept_builds_nothing():
    assert program.obtain(_graph(), cpu_backend(), _arrays(),
                          accept=lambda plan: len(plan.groups()) > 1) is None


def test_no_compiler_is_none_and_one_warning(monkeypatch):
    def no_cc(*a, **k):
        raise cbuild.CompilerUnavailable("no C compiler found")
    monkeypatch.setattr(cbuild, "build_all", no_cc)
    monkeypatch.setattr(build, "_warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert program.obtain(_graph(), cpu_backend(), _arrays()) is None
        assert program.obtain(_graph(), cpu_backend(), _arrays()) is None
    assert [str(m.message) for m in w if "cannot build kernels" in str(m.message)] == [
        "fusetorch: cannot build kernels (no C compiler found); compiled functions, compiled "
        "eager operations and fused optimizer steps run eagerly instead"]


def test_layouts_that_cannot_be_derived_are_observed(monkeypatch):
    def unknown(*a, **k):
        raise layouts.LayoutUnknown("as if a step needed real values")
    monkeypatch.setattr(layouts, "derive", unknown)
    a = _input((6, 4))
    t = make_node("permute", [a], {"perm": (1, 0)})
    graph = Graph([a], [make_node("exp", [make_node("add", [t, t])])])
    x = np.random.rand(6, 4)
    p = program.obtain(graph, cpu_backend(), [x])
    np.testing.assert_allclose(p.run([x])[0], np.exp(2 * x.T), rtol=1e-14)
