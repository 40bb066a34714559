"""fusetorch.compile of functions that write in place through views: the recording follows the
write to the view's base (and views of a written base see it), so the call compiles without a
graph break and its values, gradients and effects on its inputs agree with eager."""
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn

F64 = torch.float64


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def _compile(fn):
    """torch.compile(fn), counting its traces (a retrace would return eager's values)."""
    cf = torch.compile(fn)
    trace_and_build = cf._compile
    cf.traces = 0

    def counted(*a, **k):
        cf.traces += 1
        return trace_and_build(*a, **k)
    cf._compile = counted
    return cf


def _no_break(cf, calls):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = [call() for call in calls]
    assert not [m for m in w if "graph break" in str(m.message)], [str(m.message) for m in w]
    return outs


def f_writes(x, w):
    y = x * 2
    r = y[0]                       # read after its base is written
    y[:, :2].zero_()
    y[1:][:, 2].mul_(w[:2])        # a chain of views
    y.t()[3].add_(w.sum())         # a transpose
    y.view(-1)[::5].sub_(0.5)      # a view, a stepped slice
    y[2] = w.exp().sum()           # setitem of a basic index
    return (y * y).sum() + (r * 3).sum()


def test_forward_and_backward_match_eager():
    rng = np.random.default_rng(0)
    cf = _compile(f_writes)
    for i in range(3):
        x = torch.tensor(rng.standard_normal((3, 4)), dtype=F64, requires_grad=True)
        w = torch.tensor(rng.standard_normal(3), dtype=F64, requires_grad=True)
        (out,) = _no_break(cf, [lambda: cf(x, w)])
        out.backward()
        got = out.item(), x.grad.numpy().copy(), w.grad.numpy().copy()
        x.grad = w.grad = None
        ref = f_writes(x, w)
        ref.backward()
        np.testing.assert_allclose(got[0], ref.item(), rtol=1e-12)
        np.testing.assert_allclose(got[1], x.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(got[2], w.grad.numpy(), rtol=1e-12)
        if i:
            assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    assert cf.traces == 1


def test_inference_values_and_the_inputs_written_through_views():
    def f(x, b):
        x[1:].mul_(2)              # the input, through a view
        b.t()[0].copy_(x[0])       # another input, through a transpose
        v = x.view(-1)
        x.add_(1)                  # the base: v sees it
        return v[:5] * 1
    rng = np.random.default_rng(1)
    cf = _compile(f)
    for _ in range(3):
        xa = rng.standard_normal((3, 4)).astype(np.float32)
        ba = rng.standard_normal((4, 2)).astype(np.float32)
        x, b = torch.tensor(xa), torch.tensor(ba)
        x2, b2 = torch.tensor(xa), torch.tensor(ba)
        (got,) = _no_break(cf, [lambda: cf(x, b)])
        want = f(x2, b2)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        np.testing.assert_allclose(x.numpy(), x2.numpy(), rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), b2.numpy(), rtol=1e-6)
    assert cf.traces == 1 and cf.graph() != ""


class Pieces(nn.Module):
    """A layer that assembles its output in place: a buffer written slice by slice."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3)
        self.b = nn.Linear(6, 3)

    def forward(self, x):
        out = x.new_zeros(x.shape[0], 8)
        out[:, :3] = self.a(x)
        out[:, 3:6].copy_(self.b(x).tanh())
        out.narrow(1, 6, 2).add_(x[:, :2])
        out[:, 1:5].mul_(1.5)
        return out


def test_training_step_with_in_place_view_writes_matches_eager():
    torch.manual_seed(0)
    net, twin = Pieces(), Pieces()
    twin.load_state_dict(net.state_dict())
    x, y = torch.randn(5, 6), torch.randn(5, 8)
    loss_fn = nn.MSELoss()
    step = torch.compile(lambda a, b: loss_fn(net(a), b))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (net, twin)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(4):
            for opt, fn in ((opts[0], step), (opts[1], lambda a, b: loss_fn(twin(a), b))):
                opt.zero_grad()
                fn(x, y).backward()
                opt.step()
    assert not [m for m in w if "graph break" in str(m.message)]
    for p, q in zip(net.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_register_hook_on_a_non_leaf_inside_a_compiled_function_breaks_the_graph():
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g * 10)  # a compiled backward would not call it
        return (y * y).sum()
    cf = torch.compile(f)
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            x.grad = None
            cf(x).backward()
            np.testing.assert_array_equal(x.grad.numpy(), [80.0, 160.0, 240.0])
    assert [m for m in w if "register_hook on a non-leaf tensor" in str(m.message)]
