"""softmax, log_softmax and layer_norm as primitives (ir/norm_ops.py): their backward keeps
what PyTorch's keeps (the output; the input and weight), their gradients agree with float64
central differences on 0-d, zero-size, non-contiguous inputs and every dim, compiled graphs
compute their compositions, and layer_norm refuses what PyTorch refuses."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F


def _saved_ids(t):
    return {id(e[0]) for e in t._node.saved.values()}


def _central(f, x, g, h=1e-6):
    """d(sum(f(x) * g))/dx by central differences, in float64."""
    x, out = x.copy(), np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        up = (f(x) * g).sum()
        x[i] = old - h
        down = (f(x) * g).sum()
        x[i] = old
        out[i] = (up - down) / (2 * h)
    return out


def _grad(fn, x, g):
    t = torch.tensor(x, requires_grad=True)
    fn(t).backward(torch.tensor(g))
    return t.grad.numpy()


def test_softmax_and_log_softmax_keep_only_their_output():
    x = torch.randn(4, 7, requires_grad=True)
    for fn in (F.softmax, F.log_softmax):
        y = fn(x * 1, -1)
        assert _saved_ids(y) == {id(y._data)}


def test_layer_norm_keeps_its_input_and_weight():
    x = torch.randn(4, 6, requires_grad=True) * 1
    w, b = torch.randn(6, requires_grad=True), torch.randn(6, requires_grad=True)
    y = F.layer_norm(x, (6,), w, b)
    assert _saved_ids(y) <= {id(x._data), id(w._data), id(b._data)}
    assert id(x._data) in _saved_ids(y)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), -1),
                                       ((), 0), ((5,), 0)])
def test_softmax_gradients_agree_with_central_differences(name, shape, dim):
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    fn = getattr(F, name)
    ref = np.exp(x - x.max(axis=dim, keepdims=True)) if shape else np.ones(())
    want = ref / ref.sum(axis=dim, keepdims=True) if shape else ref
    got = fn(torch.tensor(x), dim).numpy()
    np.testing.assert_allclose(np.exp(got) if name == "log_softmax" else got, want,
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_grad(lambda t: fn(t, dim), x, g),
                               _central(lambda a: fn(torch.tensor(a), dim).numpy(), x, g),
                               atol=1e-8)


def test_softmax_of_a_non_contiguous_and_an_empty_input():
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((5, 4)).T, rng.standard_normal((4, 5))
    fn = lambda t: F.softmax(t.transpose(0, 1).contiguous().transpose(0, 1), 1)  # noqa: E731
    np.testing.assert_allclose(_grad(fn, x, g), _central(
        lambda a: F.softmax(torch.tensor(a), 1).numpy(), x, g), atol=1e-8)
    e = torch.zeros(0, 3, requires_grad=True)
    y = F.log_softmax(e, 0)
    assert y.shape == (0, 3)
    y.sum().backward()
    assert e.grad.shape == (0, 3)


@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_gradients_agree_with_central_differences(affine):
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 4))
    w, b = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    wt = torch.tensor(w) if affine in ("both", "weight") else None
    bt = torch.tensor(b) if affine in ("both", "bias") else None

    def ln(a, w_=wt, b_=bt):
        return F.layer_norm(a, (2, 4), w_, b_, eps=1e-5)
    mean = x.mean(axis=(1, 2), keepdims=True)
    xhat = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=(1, 2), keepdims=True) + 1e-5)
    want = xhat * (w if wt is not None else 1) + (b if bt is not None else 0)
    np.testing.assert_allclose(ln(torch.tensor(x)).numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_grad(ln, x, g),
                               _central(lambda a: ln(torch.tensor(a)).numpy(), x, g), atol=1e-7)
    if wt is not None:
        np.testing.assert_allclose(
            _grad(lambda t: ln(torch.tensor(x), t), w, g),
            _central(lambda a: ln(torch.tensor(x), torch.tensor(a)).numpy(), w, g), atol=1e-7)
    if bt is not None:
        np.testing.assert_allclose(
            _grad(lambda t: ln(torch.tensor(x), wt, t), b, g),
            _central(lambda a: ln(torch.tensor(x), wt, torch.tensor(a)).numpy(), b, g),
            atol=1e-7)


def test_layer_norm_double_backward():
    rng = np.random.default_rng(4)
    x, g = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))

    def grad_x(a):
        t = torch.tensor(a, requires_grad=True)
        (q,) = torch.autograd.grad((F.layer_norm(t, (5,)) * torch.tensor(g)).sum(), t,
                                   create_graph=True)
        return q
    t = torch.tensor(x, requires_grad=True)
    (q,) = torch.autograd.grad((F.layer_norm(t, (5,)) * torch.tensor(g)).sum(), t,
                               create_graph=True)
    q.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), _central(
        lambda a: grad_x(a).detach().numpy(), x, np.ones_like(x)), atol=1e-6)


def test_layer_norm_refuses_as_pytorch():
    x = torch.randn(3, 5, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.layer_norm(x, (5,), torch.randn(5))
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.layer_norm(x, (5,), None, torch.randn(5))
    with pytest.raises(NotImplementedError, match="LayerNormKernelImpl.*Long"):
        F.layer_norm(torch.arange(10).view(2, 5), (5,))


def test_compiled_graphs_compute_the_compositions():
    from fusetorch.ir import dtypes as dt
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.ir.passes import count_ops, decompose
    x = make_node("input", [], {"shape": (4, 6), "dtype": dt.float32})
    h = make_node("input", [], {"shape": (4, 6), "dtype": dt.float16})
    ops = [make_node("softmax", [x], {"dim": 1}), make_node("log_softmax", [x], {"dim": 0}),
           make_node("layer_norm", [x], {"count": 1, "eps": 1e-5, "weight": False,
                                         "bias": False}),
           make_node("softmax", [h], {"dim": 1})]
    counts = count_ops(decompose(Graph([x, h], ops)))
    assert counts.get("softmax") == 1  # (the float16 one: no kernels, eager's one rounding)
    assert "log_softmax" not in counts and "layer_norm" not in counts
    assert counts["exp"] == 2 and counts["sqrt"] == 1
    assert count_ops(decompose(Graph([h], [ops[3]]), every_dtype=True)).get("softmax") is None


@pytest.mark.parametrize("shape", [(3, 5), ()])
def test_softmax_grad_fn_names_and_next_functions_as_pytorch(shape):
    # (PyTorch 2.13, by hand: SoftmaxBackward0 / LogSoftmaxBackward0 whose next function is
    # the input's AccumulateGrad, or ToCopyBackward0 with dtype=)
    x = torch.randn(shape, requires_grad=True)
    for fn, name in ((F.softmax, "SoftmaxBackward0"), (F.log_softmax, "LogSoftmaxBackward0")):
        for _ in range(3):  # (plain calls, the capture, replays)
            y = fn(x, 0 if not shape else 1)
            assert y.grad_fn.name() == name
            (nxt, _), = y.grad_fn.next_functions
            assert nxt.name() == "torch::autograd::AccumulateGrad"
            y = fn(x, 0 if not shape else 1, dtype=torch.float64)
            assert y.dtype == torch.float64 and y.grad_fn.name() == name
            (nxt, _), = y.grad_fn.next_functions
            assert nxt.name() == "ToCopyBackward0"


def test_log_softmax_of_a_loop_row_against_float64():
    a = np.random.default_rng(3).standard_normal((1, 57)).astype(np.float32)
    x = torch.tensor(a)
    for _ in range(3):
        want = a.astype(np.float64) - np.log(np.exp(a.astype(np.float64)).sum(1, keepdims=True))
        np.testing.assert_allclose(F.log_softmax(x, 1).numpy(), want, rtol=1e-5, atol=1e-6)
        w = np.exp(a.astype(np.float64))
        np.testing.assert_allclose(F.softmax(x, 1).numpy(), w / w.sum(1, keepdims=True),
                                   rtol=1e-5)
