"""torch.jit: scripting and tracing return their argument unchanged after one UserWarning;
the decorators and predicates behave as eager PyTorch's."""
import warnings

import pytest

import fusetorch as torch
from fusetorch import jit, nn


@pytest.fixture
def fresh_warning(monkeypatch):
    monkeypatch.setattr(jit, "_warned", False)


class Doubler(nn.Module):
    def forward(self, x):
        return x * 2

    @torch.jit.export
    def half(self, x):
        return x / 2

    @torch.jit.ignore
    def debug(self):
        return "debug"

    @torch.jit.ignore(drop=True)
    def dropped(self):
        return "dropped"

    @torch.jit.unused
    def unused(self):
        return "unused"


def test_script_and_trace_return_their_argument_and_warn_once(fresh_warning):
    m = Doubler()
    with pytest.warns(UserWarning, match="fusetorch does not compile TorchScript: "
                                         "torch.jit.script returns its argument unchanged"):
        assert torch.jit.script(m) is m
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second call and the other entry points are silent
        f = torch.jit.trace(lambda x: x + 1, torch.ones(2))
        assert f(torch.ones(2)).tolist() == [2.0, 2.0]
        assert torch.jit.trace_module(m, {"forward": torch.ones(1)}) is m
        assert torch.jit.freeze(m) is m and torch.jit.optimize_for_inference(m) is m
        assert torch.jit.script(Doubler) is Doubler
    assert m(torch.ones(2)).tolist() == [2.0, 2.0]
    assert m.half(torch.ones(2)).tolist() == [0.5, 0.5]
    assert (m.debug(), m.dropped(), m.unused()) == ("debug", "dropped", "unused")


def test_trace_warns_when_it_comes_first(fresh_warning):
    with pytest.warns(UserWarning, match="torch.jit.trace returns its argument unchanged"):
        torch.jit.trace(Doubler(), torch.ones(2))


def test_predicates_and_helpers():
    assert torch.jit.is_scripting() is False and torch.jit.is_tracing() is False
    assert torch.jit.annotate(list, [1]) == [1]
    fut = torch.jit.fork(lambda a, b: a + b, 1, b=2)
    assert torch.jit.wait(fut) == 3 and fut.done()
    from typing import Final
    assert torch.jit.Final is Final
    assert issubclass(torch.jit.ScriptModule, nn.Module)
    assert not isinstance(Doubler(), torch.jit.ScriptModule)


def test_torchscript_archives_are_refused():
    with pytest.raises(NotImplementedError, match="does not write TorchScript archives"):
        torch.jit.save(Doubler(), "m.pt")
    with pytest.raises(NotImplementedError, match="does not read TorchScript archives"):
        torch.jit.load("m.pt")
