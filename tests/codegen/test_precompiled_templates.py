"""codegen/precompile.py: the templates compiled ahead of time into modules of the package.
Each module must match its template (else regenerate: `python -m fusetorch.codegen.precompile`);
a module that does not match, or was compiled by another Jinja, is never used; what a
precompiled template renders is what the template compiled from its source renders."""
import jinja2
import pytest

from fusetorch import codegen
from fusetorch.codegen import precompile, render, render_cuda
from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import kernel_plan
from fusetorch.runtime.layouts import contiguous

CASES = [(b, n) for b in precompile.BACKENDS for n in precompile.template_names(b)]
REGENERATE = "stale: run `python -m fusetorch.codegen.precompile`"


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(codegen, "_envs", {})


def _module_text(backend: str, name: str) -> str:
    path = precompile.DIRECTORY / f"{precompile.module_name(backend, name)}.py"
    assert path.exists(), f"no precompiled module for {backend}/{name}: {REGENERATE}"
    return path.read_text()


@pytest.mark.parametrize("backend, name", CASES)
def test_every_template_has_a_matching_module(backend, name):
    text = _module_text(backend, name)
    env = codegen.environment(backend)
    source = env.loader.get_source(env, name)[0]
    assert f"SOURCE_SHA256 = {precompile.digest(source)!r}" in text, REGENERATE
    recorded = text.split("JINJA_VERSION = ", 1)[1].split("\n", 1)[0]
    if recorded == repr(jinja2.__version__):  # (another Jinja writes other code)
        assert text == precompile.generate(env, backend, name), REGENERATE


def test_no_module_is_left_without_a_template():
    made = {f"{precompile.module_name(b, n)}.py" for b, n in CASES}
    assert {p.name for p in precompile.DIRECTORY.glob("*__*.py")} == made


def _from_module(template: jinja2.Template) -> bool:
    return template.root_render_func.__globals__.get("__name__", "").startswith(precompile.PACKAGE)


@pytest.mark.parametrize("backend", precompile.BACKENDS)
def test_templates_are_loaded_from_their_modules(backend, fresh):
    env = codegen.environment(backend)
    for name in precompile.template_names(backend):
        template = env.get_template(name)
        assert _from_module(template), name
        # each environment runs the module's code in its own namespace
        assert template.root_render_func.__globals__["environment"] is env
        assert template.filename.endswith(name)  # errors point at the template


def test_a_template_edited_since_is_compiled_from_its_source(fresh, monkeypatch):
    real = codegen._Loader.get_source

    def edited(self, environment, name):
        source, filename, uptodate = real(self, environment, name)
        return source.replace("fusetorch kernels,", "EDITED fusetorch kernels,"), filename, \
            uptodate
    monkeypatch.setattr(codegen._Loader, "get_source", edited)
    template = codegen.environment("c").get_template("module.c.j2")
    assert not _from_module(template)
    assert "EDITED" in render.module([])


def test_a_module_compiled_by_another_jinja_is_not_used(fresh, monkeypatch):
    monkeypatch.setattr(jinja2, "__version__", "0.0.other")
    assert not _from_module(codegen.environment("c").get_template("reduce.c.j2"))


def _kernels(cpu: bool = True) -> list:
    """A pointwise kernel, a reduction over the inner axis and one over the outer axis."""
    x, y = (Node("input", (), {"shape": (6, 5), "dtype": dt.float32}, (6, 5), dt.float32)
            for _ in range(2))
    outs = [make_node("tanh", [make_node("mul", [x, y])]),
            make_node("sum", [make_node("exp", [x])], {"dims": (1,), "keepdim": False}),
            make_node("sum", [make_node("mul", [y, y])], {"dims": (0,), "keepdim": False})]
    graph = Graph([x, y], outs)
    return kernel_plan.make(graph, {id(x): contiguous((6, 5)), id(y): contiguous((6, 5))},
                            cpu=cpu).kernels


@pytest.mark.parametrize("renderer", [render, render_cuda])
def test_precompiled_and_source_compiled_templates_render_alike(renderer, fresh, monkeypatch):
    kernels = _kernels(cpu=renderer is render)
    precompiled = renderer.render_module(kernels)
    monkeypatch.setattr(codegen, "_envs", {})
    monkeypatch.setattr(precompile, "load", lambda *a: None)
    backend = "c" if renderer is render else "cuda"
    assert not _from_module(codegen.environment(backend).get_template("helpers.j2"))
    assert renderer.render_module(kernels) == precompiled
