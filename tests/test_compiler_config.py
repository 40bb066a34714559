"""`torch._inductor.config` and `torch._dynamo` as scripts that tune PyTorch's compiler use
them (llm.c sets `coordinate_descent_tuning`): PyTorch 2.13's flags are accepted and ignored,
unknown names raise as PyTorch's config raises, and `compile(mode=, options=)` is checked as
PyTorch checks it. Messages read by hand in PyTorch 2.13."""
import subprocess
import sys

import pytest

import fusetorch as torch
import fusetorch._inductor.config as config


def test_llm_c_lines_run_and_flags_keep_their_values():
    code = ("import fusetorch as torch\n"
            "import fusetorch._inductor.config as config\n"
            "config.coordinate_descent_tuning = True\n"
            "assert torch._inductor.config.coordinate_descent_tuning is True\n"
            "torch._dynamo.config.suppress_errors = True\n"
            "print(torch._dynamo.config.suppress_errors)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_defaults_are_pytorchs():
    assert config.max_autotune is False and config.triton.cudagraphs is False
    assert config.cpp.threads == -1
    assert torch._dynamo.config.recompile_limit == 8
    assert torch._dynamo.config.cache_size_limit == 8  # PyTorch's alias of recompile_limit


def test_unknown_names_raise_as_pytorch():
    for fn, name in [(lambda: config.foo_bar, "foo_bar"), (lambda: config.triton.foo, "triton.foo"),
                     (lambda: setattr(config, "foo_bar", 1), "foo_bar"),
                     (lambda: setattr(config.triton, "foo", 1), "triton.foo"),
                     (lambda: setattr(config, "triton", 3), "triton"),
                     (lambda: config.patch(foo=1), "foo")]:
        with pytest.raises(AttributeError) as e:
            fn()
        assert str(e.value) == f"fusetorch._inductor.config.{name} does not exist"
    with pytest.raises(AttributeError, match="fusetorch._dynamo.config.nonexistent does not exist"):
        torch._dynamo.config.nonexistent = 1


def test_patch_sets_for_a_block_and_a_function():
    with config.patch({"triton.cudagraphs": True}):
        assert config.triton.cudagraphs is True
    assert config.triton.cudagraphs is False

    @config.patch(max_autotune=True)
    def inside():
        return config.max_autotune
    assert inside() is True and config.max_autotune is False
    d = torch._dynamo.config
    with d.patch("cache_size_limit", 3):
        assert d.recompile_limit == 3
    assert d.recompile_limit == 8
    assert config.get_config_copy()["triton.cudagraphs"] is False


def test_compile_checks_mode_and_options_as_pytorch():
    f = lambda x: x + 1  # noqa: E731
    assert torch.compile(f, mode="max-autotune")(torch.ones(1)).tolist() == [2.0]
    assert torch.compile(f, options={"triton.cudagraphs": True})(torch.ones(1)).tolist() == [2.0]
    with pytest.raises(RuntimeError, match="Unexpected optimization option foo, known options"):
        torch.compile(f, options={"foo": 1})
    with pytest.raises(RuntimeError, match="Unrecognized mode=bogus, should be one of: default, "
                                           "lite, reduce-overhead, max-autotune-no-cudagraphs, "
                                           "max-autotune"):
        torch.compile(f, mode="bogus")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified, but both"):
        torch.compile(f, mode="max-autotune", options={"max_autotune": True})


def test_dynamo_names():
    dyn = torch._dynamo
    dyn.reset()
    g = lambda x: x  # noqa: E731
    assert dyn.disable(g) is g and dyn.disable()(g) is g and dyn.allow_in_graph(g) is g
    x = torch.ones(2, 3)
    dyn.mark_dynamic(x, 0)
    dyn.maybe_mark_dynamic(x, 1)
    dyn.mark_static(x)
    assert dyn.is_compiling() is False
    seen = []

    def fn(t):
        seen.append(dyn.is_compiling())
        return t * 2
    torch.compile(fn)(x)
    assert True in seen
    with pytest.raises(NotImplementedError, match="torch._dynamo.explain: PyTorch's other "
                                                  "compilers"):
        dyn.explain
    assert not hasattr(torch._inductor, "lowering")
