"""nll_loss as one primitive (ir/loss_ops.py): values against a float64 reference written
here, gradients against central differences, the all-ignored mean (PyTorch: nan, and a zero
gradient), and compiled graphs (its composition) against eager."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F

RNG = np.random.default_rng(7)
CASES = [((5, 7), (5,)), ((7,), ()), ((3, 4, 2, 2), (3, 2, 2)), ((4, 3, 5), (4, 5)),
         ((0, 4), (0,))]


def _reference(x, t, w, reduction, ignore):
    cdim = 0 if x.ndim == 1 else 1
    c = x.shape[cdim]
    w = np.ones(c) if w is None else w
    xm = np.moveaxis(x, cdim, -1)  # [..., C]
    keep = t != ignore
    ts = np.where(keep, t, 0)
    picked = np.take_along_axis(xm, ts[..., None], -1)[..., 0]
    loss = np.where(keep, -w[ts] * picked, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore"):
        return loss.sum() / np.where(keep, w[ts], 0.0).sum()


@pytest.mark.parametrize("xs, ts", CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [-100, 1])
def test_values_and_gradients(xs, ts, reduction, weighted, ignore):
    c = xs[1] if len(xs) > 1 else xs[0]
    x = RNG.standard_normal(xs)
    t = RNG.integers(0, c, ts)
    w = RNG.random(c) + 0.5 if weighted else None
    want = _reference(x, t, w, reduction, ignore)
    tx = torch.tensor(x, requires_grad=True)
    got = F.nll_loss(tx, torch.tensor(t), weight=None if w is None else torch.tensor(w),
                     reduction=reduction, ignore_index=ignore)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    if not x.size or not np.isfinite(want).all():
        return
    g = RNG.standard_normal(np.shape(want))
    got.backward(torch.tensor(g))
    fd = np.zeros_like(x)
    for i in np.ndindex(*x.shape):  # central differences of <g, loss>
        e = np.zeros_like(x)
        e[i] = 1e-6
        fd[i] = ((g * _reference(x + e, t, w, reduction, ignore)).sum()
                 - (g * _reference(x - e, t, w, reduction, ignore)).sum()) / 2e-6
    np.testing.assert_allclose(tx.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_mean_over_no_counted_target_is_nan_with_a_zero_gradient(weighted):
    # (checked by hand against PyTorch 2.13: cross_entropy(x, [1, 1, 1], ignore_index=1) is
    # nan and x.grad is all zeros)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.rand(4) + 0.5 if weighted else None
    y = F.cross_entropy(x, torch.tensor([1, 1, 1]), weight=w, ignore_index=1)
    assert np.isnan(y.item())
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4), np.float32))


def test_compiled_matches_eager():
    x = torch.randn(6, 5, 3, requires_grad=True)
    t = torch.randint(0, 5, (6, 3))
    w = torch.rand(5) + 0.5

    def loss(a):
        return F.nll_loss(F.log_softmax(a, 1), t, weight=w, ignore_index=2)
    want = loss(x)
    (gw,) = torch.autograd.grad(want, [x])
    f = torch.compile(loss)
    for _ in range(2):
        got = f(x)
        (gg,) = torch.autograd.grad(got, [x])
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        np.testing.assert_allclose(gg.numpy(), gw.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("xs,ts", [((1, 57), (1,)), ((3, 4, 2, 2), (3, 2, 2)), ((57,), ())])
def test_a_loops_repeated_mean_where_every_target_counts(dtype, xs, ts):
    # a loop's loss: the same shapes every call (grids made once per shape, shared), every
    # target counted (the mean's count is their number); each call against float64 numpy
    c = xs[0] if len(xs) == 1 else xs[1]
    rng = np.random.default_rng(90)  # (its own draws: the same whichever tests ran before)
    for k in range(3):
        x = rng.standard_normal(xs)
        t = rng.integers(0, c, ts)
        xt = torch.tensor(x, dtype=dtype, requires_grad=True)
        loss = F.nll_loss(xt, torch.tensor(t))
        assert loss.dtype == dtype and loss.shape == ()
        want = _reference(x.astype(np.float64), t, None, "mean", -100)
        np.testing.assert_allclose(loss.item(), want, rtol=1e-6 if dtype == torch.float32
                                   else 1e-12)
        loss.backward()
        g = np.zeros(xs)
        cdim = 0 if len(xs) == 1 else 1
        np.put_along_axis(g, np.expand_dims(t, cdim), -1.0 / max(t.size, 1), cdim)
        np.testing.assert_allclose(xt.grad.numpy(), g, rtol=1e-6)


def test_few_integer_targets_are_checked_as_pytorch_checks_them():
    # (messages and types checked against PyTorch 2.13 by hand)
    x = torch.randn(3, 5, requires_grad=True)
    for t, bad in (([1, 200, 2], 200), ([-2, 1, 1], -2), ([5, 1, -100], 5)):
        dtype = torch.uint8 if bad == 200 else torch.int64
        with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
            F.nll_loss(x, torch.tensor(t, dtype=dtype))
    a = x.detach().numpy().astype(np.float64)
    for t in ([4, -100, 0], [-100, -100, -100]):
        got = F.nll_loss(x, torch.tensor(t), reduction="sum")
        want = _reference(a, np.array(t), None, "sum", -100)
        np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    with pytest.raises(IndexError, match="^Target 3 is out of bounds.$"):
        F.nll_loss(torch.randn(3, 3), torch.tensor([3, 0, 1]), ignore_index=0)


@pytest.mark.parametrize("xs, ts", CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_vjp_primitive_equals_its_composition_bit_for_bit(xs, ts, reduction, weighted,
                                                              dtype):
    # nll_loss_grad runs as one eager call; compiled graphs run its composition (the VJP
    # graph it replaced): the same sums in the same order, an ignored target hit
    from fusetorch.ir import dtypes as dt
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.ir.passes import decompose
    from fusetorch.runtime.runner import run_graph
    c = xs[1] if len(xs) > 1 else xs[0]
    t = RNG.integers(0, c, ts)
    if t.size:
        t.reshape(-1)[0] = 1
    g = RNG.standard_normal(ts if reduction == "none" else ()).astype(dtype)
    w = (RNG.random(c) + 0.5).astype(dtype)
    d = dt.float32 if dtype == np.float32 else dt.float64
    ins = [make_node("input", [], {"shape": g.shape, "dtype": d}),
           make_node("input", [], {"shape": t.shape, "dtype": dt.int64})]
    arrays = [g, t]
    if weighted:
        ins.append(make_node("input", [], {"shape": w.shape, "dtype": d}))
        arrays.append(w)
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    node = make_node("nll_loss_grad", ins, {"cdim": 0 if len(xs) == 1 else 1,
                                            "ignore_index": 1, "reduction": red,
                                            "weight": weighted, "shape": xs})
    be = torch.randn(1)._be
    got = be.impl["nll_loss_grad"](*arrays, **node.attrs)
    (want,) = run_graph(decompose(Graph(ins, [node])), arrays, be.impl, np)
    assert got.dtype == dtype and got.shape == xs
    assert got.tobytes() == np.asarray(want).tobytes()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_double_backward_through_the_vjp_primitive(reduction, weighted):
    # d<grad_x nll_loss(log_softmax(x)), v>/dx: through log_softmax_grad and nll_loss_grad
    # (whose transpose is nll_loss itself); PyTorch 2.13's grad_fn name, by hand
    rng = np.random.default_rng(11)
    x, v = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    t = torch.tensor([1, 0, 4, 1])
    w = torch.tensor(rng.random(5) + 0.5) if weighted else None
    g = rng.standard_normal(4) if reduction == "none" else np.array(1.0)

    def grad_x(a, create=False):
        xt = torch.tensor(a, requires_grad=True)
        loss = F.nll_loss(xt.log_softmax(1), t, weight=w, reduction=reduction, ignore_index=1)
        (q,) = torch.autograd.grad(loss, xt, torch.tensor(g), create_graph=create)
        return xt, q
    xt, q = grad_x(x, True)
    assert q.grad_fn.name() == "LogSoftmaxBackwardDataBackward0"
    (q * torch.tensor(v)).sum().backward()
    fd = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = 1e-6
        fd[i] = ((grad_x(x + e)[1].numpy() - grad_x(x - e)[1].numpy()) * v).sum() / 2e-6
    np.testing.assert_allclose(xt.grad.numpy(), fd, atol=1e-6)
    xt = torch.tensor(x, requires_grad=True)
    gt = torch.tensor(g, requires_grad=True)  # (its gradient: nll_loss of v, the transpose)
    (q,) = torch.autograd.grad(F.nll_loss(xt, t, weight=w, reduction=reduction), xt, gt,
                               create_graph=True)
    assert q.grad_fn.name() == "NllLossBackwardBackward0"
    (q * torch.tensor(v)).sum().backward()
    want = _reference(v, t.numpy(), None if w is None else w.numpy(), reduction, -100)
    np.testing.assert_allclose(gt.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("xs, ts", [((1, 57), (1,)), ((57,), ())])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_counted_target_as_the_composition_bit_for_bit(xs, ts, reduction, weighted, dtype):
    # a loop's row takes nll_loss's and nll_loss_grad's one-target path (numpy scalars): the
    # composition's values exactly, with a negative zero, a NaN and a zero weight among them
    from fusetorch.ir import dtypes as dt
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.ir.passes import decompose
    from fusetorch.runtime.runner import run_graph
    d = dt.float32 if dtype == np.float32 else dt.float64
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    be = torch.randn(1)._be
    rng = np.random.default_rng(12)
    for target, xv, wv, gv in ((3, 0.0, 0.7, 0.3), (5, -1.25, 0.0, -0.0), (0, np.nan, 1.5, 2.0),
                               (56, 3.5, -0.0, 1.0)):
        x = rng.standard_normal(xs).astype(dtype)
        x.reshape(-1)[target] = xv
        t = np.full(ts, target, np.int64)
        w = (rng.random(57) + 0.5).astype(dtype)
        w[target] = wv
        g = np.full(ts if reduction == "none" else (), gv, dtype)
        attrs = {"cdim": 0 if len(xs) == 1 else 1, "ignore_index": -100, "reduction": red,
                 "weight": weighted}
        for op, arrays, extra in (("nll_loss", [x, t], {}),
                                  ("nll_loss_grad", [g, t], {"shape": xs})):
            arrays = arrays + ([w] if weighted else [])
            ins = [make_node("input", [], {"shape": a.shape,
                                           "dtype": dt.int64 if a.dtype == np.int64 else d})
                   for a in arrays]
            node = make_node(op, ins, {**attrs, **extra})
            got = np.asarray(be.impl[op](*arrays, **node.attrs))
            (want,) = run_graph(decompose(Graph(ins, [node])), arrays, be.impl, np)
            assert got.dtype == dtype and got.shape == node.shape
            assert got.tobytes() == np.asarray(want).tobytes(), (op, target)
