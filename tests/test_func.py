"""torch.func over pytrees of tensors: gradients, Jacobians and vmap of dict and tuple
arguments and results (values against closed forms in float64), stack_module_state, and
PyTorch 2.13's errors (checked by hand)."""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch.func import grad, grad_and_value, hessian, jacrev, stack_module_state, vjp, vmap


def _x():
    return torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)


def test_grad_of_a_dict_argument_is_a_dict_of_the_same_keys():
    x = _x()
    params = {'w': x, 'pair': (x * 2, torch.tensor(3.0, dtype=torch.float64))}

    def f(p, scale):
        return (p['w'] ** 2).sum() * scale + (p['pair'][0] * p['pair'][1]).sum()
    g, value = grad_and_value(f)(params, 2.0)
    assert list(g) == ['w', 'pair'] and isinstance(g['pair'], tuple)
    xn = x.numpy()
    np.testing.assert_allclose(g['w'].numpy(), 4 * xn)
    np.testing.assert_allclose(g['pair'][0].numpy(), np.full(3, 3.0))
    np.testing.assert_allclose(g['pair'][1].item(), (2 * xn).sum())
    np.testing.assert_allclose(value.item(), 2 * (xn ** 2).sum() + 3 * (2 * xn).sum())
    assert not g['w'].requires_grad and not x.requires_grad


def test_grad_refuses_non_tensor_leaves_and_bad_argnums():
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got "
                                         "<class 'int'>"):
        grad(lambda p: p['w'].sum())({'w': _x(), 'n': 3})
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        grad(lambda a, b: a.sum(), argnums=2)(_x(), _x())
    g = grad(lambda a, b: (a * b).sum(), argnums=-1)(_x(), _x() * 0 + 5)
    np.testing.assert_allclose(g.numpy(), _x().numpy())


def test_vmap_maps_dict_leaves_by_a_prefix_of_in_dims():
    a = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    b = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)
    out = vmap(lambda d: {'s': d['a'] + d['b'], 't': (d['a'].sum(),)},
               in_dims=({'a': 0, 'b': None},))({'a': a, 'b': b})
    np.testing.assert_allclose(out['s'].numpy(), a.numpy() + b.numpy())
    np.testing.assert_allclose(out['t'][0].numpy(), a.numpy().sum(1))
    t = vmap(lambda r: r * 2, out_dims=1)(a)
    np.testing.assert_allclose(t.numpy(), (a.numpy() * 2).T)
    kept = vmap(lambda r: (r.sum(), b), out_dims=(0, None))(a)
    assert kept[1] is b


def test_vmap_errors_are_pytorchs():
    x = torch.ones(3)
    with pytest.raises(ValueError, match="Got in_dim=0 for an input but the input is of type "
                                         "<class 'float'>"):
        vmap(lambda a, s: a * s)(x, 2.0)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a \\(potentially "
                                         "nested\\) tuple"):
        vmap(lambda a: a, in_dims=[0])(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of "
                                         "`inputs`. in_dims has structure"):
        vmap(lambda d: d['a'], in_dims=({'a': 0},))({'a': torch.ones(2, 3), 'b': x})
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'float'>"):
        vmap(lambda a: (a, 3.0))(torch.ones(2, 3))


def test_vmap_of_grad_over_dicts_is_per_sample_gradients():
    w = {'w': torch.tensor([1.0, -2.0], dtype=torch.float64)}
    xs = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]], dtype=torch.float64)

    def loss(p, x):
        return (p['w'] * x).sum() ** 2
    g = vmap(grad(loss), in_dims=(None, 0))(w, xs)['w']
    xn, wn = xs.numpy(), w['w'].numpy()
    np.testing.assert_allclose(g.numpy(), 2 * (xn @ wn)[:, None] * xn)
    empty = vmap(grad(loss), in_dims=(None, 0))(w, xs[:0])['w']
    assert tuple(empty.shape) == (0, 2)


def test_jacrev_and_hessian_over_tuples_of_arguments():
    x, y = _x(), _x() * 3

    def f(a, b):
        return a.sin() * b
    ja, jb = jacrev(f, argnums=(0, 1))(x, y)
    xn, yn = x.numpy(), y.numpy()
    np.testing.assert_allclose(ja.numpy(), np.diag(np.cos(xn) * yn))
    np.testing.assert_allclose(jb.numpy(), np.diag(np.sin(xn)))
    h = hessian(lambda a: (a.sin() * a).sum())(x)
    np.testing.assert_allclose(h.numpy(), np.diag(2 * np.cos(xn) - xn * np.sin(xn)))
    jd = jacrev(lambda p: {'s': p['v'].exp()})({'v': x})
    np.testing.assert_allclose(jd['s']['v'].numpy(), np.diag(np.exp(xn)))
    jac, aux = jacrev(lambda a: (a * 2, a.sum()), has_aux=True)(x)
    np.testing.assert_allclose(jac.numpy(), 2 * np.eye(3))
    assert aux.item() == pytest.approx(xn.sum())


def test_vjp_of_pytree_primals_and_outputs():
    x = _x()
    out, fn = vjp(lambda p: (p['a'] * 2, p['a'].exp()), {'a': x})
    (ct,) = fn((torch.ones(3, dtype=torch.float64), torch.full((3,), 2.0, dtype=torch.float64)))
    np.testing.assert_allclose(ct['a'].numpy(), 2 + 2 * np.exp(x.numpy()))
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        fn(torch.ones(3, dtype=torch.float64))


def test_stack_module_state():
    torch.manual_seed(0)
    models = [torch.nn.BatchNorm1d(2) for _ in range(3)]
    for k, m in enumerate(models):
        m.weight.data.fill_(k)
    params, buffers = stack_module_state(models)
    assert list(params) == ['weight', 'bias']
    assert list(buffers) == ['running_mean', 'running_var', 'num_batches_tracked']
    assert params['weight'].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert params['weight'].requires_grad and params['weight'].is_leaf
    assert not buffers['running_var'].requires_grad and buffers['running_var'].shape == (3, 2)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0."):
        stack_module_state([])
    models[0].eval()
    with pytest.raises(RuntimeError, match="Expected all models to have the same "
                                           "training/eval mode."):
        stack_module_state(models)
    with pytest.raises(RuntimeError, match="Expected all models to be of the same class."):
        stack_module_state([torch.nn.Linear(2, 2), torch.nn.Bilinear(2, 2, 2)])


def test_same_graph_reuses_the_order_and_lets_the_graph_go():
    """autograd.grad under `same_graph()` (jacrev's rows): each cotangent's own gradient, as
    without it; the table holding the graphs is dropped when the block ends."""
    from fusetorch.tracer import autograd as A

    w = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
    x = torch.tensor([0.3, -0.2, 0.7], dtype=torch.float64, requires_grad=True)
    y = torch.tanh(torch.tensor(w) @ x)
    slope = (1 - np.tanh(w @ x.detach().numpy()) ** 2)[:, None] * w
    with A.same_graph():
        rows = [torch.autograd.grad(y, x, torch.tensor(e), retain_graph=True)[0].numpy()
                for e in np.eye(2)]
        assert A._MEMO.table  # (the order and key of y's graph)
    np.testing.assert_allclose(np.stack(rows), slope, rtol=1e-12)
    assert A._MEMO.table is None


def test_jvp_of_pytree_primals_outputs_and_aux():
    # the forward-mode AD tutorial: jvp of functional_call over a dict of parameters
    from fusetorch.func import functional_call, jvp
    w = np.array([[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]])
    b = np.array([0.1, -0.2, 0.3])
    tw, tb = np.arange(6.0).reshape(3, 2) / 5, np.array([1.0, 0.0, -1.0])
    x = np.array([[1.0, 2.0], [-0.5, 0.0], [3.0, 1.0], [0.0, 0.0]])
    model = torch.nn.Linear(2, 3).double()
    params = {"weight": torch.tensor(w), "bias": torch.tensor(b)}
    tangents = {"weight": torch.tensor(tw), "bias": torch.tensor(tb)}
    out, t = jvp(lambda p: functional_call(model, p, (torch.tensor(x),)), (params,), (tangents,))
    np.testing.assert_allclose(out.numpy(), x @ w.T + b)
    np.testing.assert_allclose(t.numpy(), x @ tw.T + tb)
    # a pytree output keeps its structure; has_aux hands aux back as it is
    out, t, aux = jvp(lambda a: ((a * 3, {"sq": a * a}), "aux"), (torch.tensor([1.0, 2.0]),),
                      (torch.tensor([1.0, -1.0]),), has_aux=True)
    assert aux == "aux" and set(t[1]) == {"sq"}
    np.testing.assert_allclose(t[0].numpy(), [3.0, -3.0])
    np.testing.assert_allclose(t[1]["sq"].numpy(), [2.0, -4.0])
    with pytest.raises(RuntimeError, match=r"Expected primals to be a tuple. E.g. it should be "
                                           r"valid to call f\(\*primals\)."):
        jvp(lambda a: a, [torch.ones(2)], [torch.ones(2)])
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same "
                                           "python structure"):
        jvp(lambda a: a, ({"a": torch.ones(2)},), ([torch.ones(2)],))
    with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given forward "
                                           r"gradient is of size \[3\]"):
        jvp(lambda a: a, (torch.ones(2),), (torch.ones(3),))


def test_jacrev_through_a_hooked_intermediate():
    """A tensor hook inside jacrev's function: the hooked backward runs in segments, each
    toposorted afresh inside `same_graph()`; every row still gets its own graph's key (the
    hook's x3 in every row of d tanh(2x) / dx)."""
    from fusetorch.func import jacrev

    def f(x):
        y = x * 2
        y.register_hook(lambda g: g * 3)
        return y.tanh()

    xv = np.array([0.1, -0.4, 0.8])
    jac = jacrev(f)(torch.tensor(xv, dtype=torch.float64))
    np.testing.assert_allclose(jac.numpy(), np.diag(6 * (1 - np.tanh(2 * xv) ** 2)),
                               rtol=1e-12)
