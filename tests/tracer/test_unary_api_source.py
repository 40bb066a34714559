"""tracer/unary_api.py: torch.<name>, Tensor.<name> and Tensor.<name>_ of the op table's
`unary_api` primitives, checked-in source generated from the table. The module must match what
the generator writes now (else: `python -m fusetorch._api.generate`), and each name must
land on its own `def` there, with PyTorch's signature and a docstring."""
import inspect
import math

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.ir.ops import OPS
from fusetorch.tracer import generate_unary, unary_api
from fusetorch.ir.roles import Role

REGENERATE = "stale: run `python -m fusetorch._api.generate`"
NAMES = [n for n, d in OPS.items() if Role.UNARY_API in d.roles]


def test_checked_in_module_is_what_the_generator_writes():
    assert generate_unary.TARGET.read_text() == generate_unary.source(), REGENERATE
    assert list(unary_api.__all__) == NAMES, REGENERATE


@pytest.mark.parametrize("name", NAMES)
def test_each_name_is_a_def_with_pytorchs_signature(name):
    fn, method = getattr(torch, name), getattr(torch.Tensor, name + "_")
    assert fn is getattr(torch.Tensor, name)  # (the function binds as the method itself)
    for f, header in ((fn, f"def {name}(input: Tensor, *, out: Tensor | None = None)"),
                      (method, f"def {name}_(self: Tensor)")):
        assert inspect.getsourcefile(f) == str(generate_unary.TARGET)
        assert inspect.getsource(f).startswith(header)
    assert fn.__doc__.startswith(f"{name}(input, *, out=None) -> Tensor\n")
    assert method.__doc__.startswith(f"{name}_() -> Tensor\n")


def test_a_new_op_without_a_summary_is_refused(monkeypatch):
    monkeypatch.delitem(generate_unary.SUMMARIES, "exp")
    with pytest.raises(KeyError, match="SUMMARIES"):
        generate_unary.source()


def test_inplace_method_writes_into_self_with_pytorchs_checks():
    x = torch.tensor([[0.5, -1.0, 2.0], [0.0, 3.0, -0.25]])
    view = x.t()[1:]  # non-contiguous: a view of x, written through
    expected = np.exp(np.array([-1.0, 2.0, 3.0, -0.25]).reshape(2, 2).T)
    version = x._version
    assert view.exp_() is view
    assert np.allclose(view.numpy().astype(np.float64), expected, rtol=1e-6)
    assert x[0, 1].item() == pytest.approx(math.exp(-1.0), rel=1e-6) and x._version > version
    with pytest.raises(TypeError):
        x.exp_(1)  # PyTorch: exp_() takes no arguments
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        torch.tensor([1, 2]).exp_()
    with pytest.raises(RuntimeError, match="exp\\(\\): functions with out=... arguments"):
        torch.exp(torch.ones(2, requires_grad=True), out=torch.empty(2))
