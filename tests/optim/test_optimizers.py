"""Optimizers: each one's first steps against its update rule written out in numpy float64
(from the algorithm boxes of PyTorch's documentation), plus the Optimizer API (groups,
zero_grad, state_dict, closure, hooks, errors, repr) and LBFGS on Rosenbrock.

Reprs and error messages were printed by PyTorch 2.13 for the same calls.
"""
import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch
from fusetorch import nn, optim
from fusetorch.autograd import gradcheck

RTOL, ATOL = 1e-12, 1e-14


class Affine(nn.Module):
    """x @ weight.T + bias, built here so these tests do not depend on nn.Linear."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in, dtype=torch.float64) * 0.3)
        self.bias = nn.Parameter(torch.zeros(n_out, dtype=torch.float64))

    def forward(self, x):
        return x @ self.weight.t() + self.bias


def grads_seq(shape, n, seed=0):
    """n gradients, large first and then small (so AMSGrad's max matters)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) * (3.0 if i < 2 else 0.2) for i in range(n)]


def run_given_grads(cls, p0, grads, dtype=torch.float64, **kw):
    """Run `cls` on one parameter, setting its gradient by hand before each step."""
    p = nn.Parameter(torch.tensor(p0, dtype=dtype))
    opt = cls([p], **kw)
    out = []
    for g in grads:
        p.grad = torch.tensor(g, dtype=dtype)
        opt.step()
        out.append(p.detach().numpy().astype(np.float64).copy())
    return out, opt, p


# ---------------------------------------------------------------- numpy references

def ref_sgd(p, grads, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
            maximize=False):
    out, b = [], None
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum != 0:
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
        out.append(p)
    return out


def ref_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    out = []
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled:
            p = p - lr * weight_decay * p
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            v_hat = vmax / (1 - b2 ** t)
        else:
            v_hat = v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                centered=False, maximize=False):
    v = np.zeros_like(p)
    g_avg = np.zeros_like(p)
    b = np.zeros_like(p)
    out = []
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        v_tilde = v
        if centered:
            g_avg = alpha * g_avg + (1 - alpha) * g
            v_tilde = v - g_avg * g_avg
        if momentum > 0:
            b = momentum * b + g / (np.sqrt(v_tilde) + eps)
            p = p - lr * b
        else:
            p = p - lr * g / (np.sqrt(v_tilde) + eps)
        out.append(p)
    return out


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                eps=1e-10, maximize=False):
    s = np.full_like(p, initial_accumulator_value)
    out = []
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        clr = lr / (1 + (t - 1) * lr_decay)
        g = g + weight_decay * p
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
        out.append(p)
    return out


P0 = np.array([[0.5, -1.25, 2.0], [-0.75, 0.1, 1.5]])


def check_steps(cls, ref, kw, n=5, ref_kw=None):
    grads = grads_seq(P0.shape, n)
    got, opt, _ = run_given_grads(cls, P0, grads, **kw)
    want = ref(P0.copy(), grads, **(kw if ref_kw is None else ref_kw))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    return opt


# ---------------------------------------------------------------- update rules

SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, dampening=0.3),
             dict(lr=0.05, momentum=0.8, nesterov=True), dict(lr=0.1, weight_decay=0.1),
             dict(lr=0.1, momentum=0.9, weight_decay=0.2, nesterov=True, maximize=True),
             dict(lr=0.1, maximize=True), dict()]


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_steps(kw):
    opt = check_steps(optim.SGD, ref_sgd, kw)
    p = opt.param_groups[0]["params"][0]
    assert ("momentum_buffer" in opt.state[p]) == (kw.get("momentum", 0) != 0)


ADAM_CASES = [dict(), dict(lr=0.1), dict(lr=0.1, betas=(0.8, 0.9), eps=1e-6),
              dict(lr=0.1, weight_decay=0.1), dict(lr=0.1, amsgrad=True),
              dict(lr=0.05, amsgrad=True, weight_decay=0.05, maximize=True),
              dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)]


@pytest.mark.parametrize("kw", ADAM_CASES)
def test_adam_steps(kw):
    ref_kw = dict(kw)
    ref_kw["decoupled"] = ref_kw.pop("decoupled_weight_decay", False)
    opt = check_steps(optim.Adam, ref_adam, kw, ref_kw=ref_kw)
    p = opt.param_groups[0]["params"][0]
    st_ = opt.state[p]
    assert sorted(st_) == sorted(["step", "exp_avg", "exp_avg_sq"]
                                 + (["max_exp_avg_sq"] if kw.get("amsgrad") else []))
    assert isinstance(st_["step"], torch.Tensor) and st_["step"].item() == 5.0
    assert st_["step"].dtype == torch.float32 and st_["step"].shape == ()


def test_amsgrad_changes_the_result():
    grads = grads_seq(P0.shape, 5)
    plain = ref_adam(P0.copy(), grads, lr=0.1)
    ams = ref_adam(P0.copy(), grads, lr=0.1, amsgrad=True)
    assert not np.allclose(plain[-1], ams[-1])  # the grads were chosen so that it matters


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.1, weight_decay=0.1),
                                dict(lr=0.1, amsgrad=True, weight_decay=0.3, maximize=True)])
def test_adamw_steps(kw):
    ref_kw = dict(kw, decoupled=True)
    ref_kw.setdefault("weight_decay", 1e-2)
    opt = check_steps(optim.AdamW, ref_adam, kw, ref_kw=ref_kw)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True


RMSPROP_CASES = [dict(), dict(lr=0.01, alpha=0.9), dict(lr=0.01, centered=True),
                 dict(lr=0.01, momentum=0.9), dict(lr=0.01, weight_decay=0.1, eps=1e-4),
                 dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)]


@pytest.mark.parametrize("kw", RMSPROP_CASES)
def test_rmsprop_steps(kw):
    opt = check_steps(optim.RMSprop, ref_rmsprop, kw)
    p = opt.param_groups[0]["params"][0]
    keys = {"step", "square_avg"} | ({"momentum_buffer"} if kw.get("momentum") else set()) \
        | ({"grad_avg"} if kw.get("centered") else set())
    assert set(opt.state[p]) == keys


ADAGRAD_CASES = [dict(), dict(lr=0.1, lr_decay=0.5), dict(lr=0.1, weight_decay=0.2),
                 dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-3),
                 dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, maximize=True)]


@pytest.mark.parametrize("kw", ADAGRAD_CASES)
def test_adagrad_steps(kw):
    check_steps(optim.Adagrad, ref_adagrad, kw)


def test_adagrad_state_exists_before_the_first_step():
    p = nn.Parameter(torch.ones(2))
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    assert opt.state[p]["step"].item() == 0.0
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), [0.25, 0.25])


@pytest.mark.parametrize("cls,ref,kw", [
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (optim.Adam, ref_adam, dict(lr=0.1, amsgrad=True)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, centered=True, momentum=0.9)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.1))])
def test_float32_params_stay_float32(cls, ref, kw):
    grads = grads_seq(P0.shape, 4)
    got, opt, p = run_given_grads(cls, P0, grads, dtype=torch.float32, **kw)
    want = ref(P0.copy(), grads, **kw)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-4, atol=1e-5)
    assert p.dtype == torch.float32
    for v in opt.state[p].values():
        if isinstance(v, torch.Tensor) and v.ndim:
            assert v.dtype == torch.float32


@settings(max_examples=25, deadline=None)
@given(lr=st.floats(1e-4, 0.5), b1=st.floats(0.0, 0.99), b2=st.floats(0.5, 0.9999),
       wd=st.sampled_from([0.0, 0.01, 0.5]), amsgrad=st.booleans(), seed=st.integers(0, 99))
def test_adam_random_hyperparameters(lr, b1, b2, wd, amsgrad, seed):
    grads = grads_seq((3,), 4, seed)
    kw = dict(lr=lr, betas=(b1, b2), weight_decay=wd, amsgrad=amsgrad)
    got, _, _ = run_given_grads(optim.Adam, np.array([1.0, -2.0, 0.5]), grads, **kw)
    want = ref_adam(np.array([1.0, -2.0, 0.5]), grads, **kw)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(lr=st.floats(1e-4, 1.0), momentum=st.floats(0.0, 0.99), dampening=st.floats(0.0, 0.9),
       wd=st.floats(0.0, 0.5), seed=st.integers(0, 99))
def test_sgd_random_hyperparameters(lr, momentum, dampening, wd, seed):
    grads = grads_seq((3,), 4, seed)
    kw = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=wd)
    got, _, _ = run_given_grads(optim.SGD, np.array([1.0, -2.0, 0.5]), grads, **kw)
    want = ref_sgd(np.array([1.0, -2.0, 0.5]), grads, **kw)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- a quadratic loss

X = np.random.default_rng(1).standard_normal((6, 3))
Y = np.random.default_rng(2).standard_normal((6, 2))
W0 = np.random.default_rng(3).standard_normal((3, 2))
B0 = np.array([0.1, -0.2])


def quad_grads(w, b):
    r = X @ w + b - Y
    return X.T @ r, r.sum(0)


class RefState:
    """Stateful per-parameter versions of the references above (one step per call)."""

    def __init__(self, ref, **kw):
        self.ref, self.kw, self.hist = ref, kw, {}

    def __call__(self, i, p, g):
        # replay the whole gradient history from the start (references are from-scratch)
        p0, gs = self.hist.setdefault(i, (p.copy(), []))
        gs.append(g)
        return self.ref(p0.copy(), gs, **self.kw)[-1]


@pytest.mark.parametrize("cls,ref,kw", [
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.9)),
    (optim.Adam, ref_adam, dict(lr=0.05)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, momentum=0.5)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.2))])
def test_quadratic_loss_with_closure(cls, ref, kw):
    """Gradients from autograd on 0.5 * ||X W + b - Y||^2, through the closure API."""
    w = nn.Parameter(torch.tensor(W0))
    b = nn.Parameter(torch.tensor(B0))
    x, y = torch.tensor(X), torch.tensor(Y)
    opt = cls([w, b], **kw)
    losses = []

    def closure():
        opt.zero_grad()
        loss = 0.5 * ((x @ w + b - y) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(5):
        losses.append(opt.step(closure).item())
    # the reference replays gradients that depend on the params, so step the loop in numpy
    ref_state = RefState(ref, **kw)
    wr, br = W0.copy(), B0.copy()
    ref_losses = []
    for _ in range(5):
        ref_losses.append(0.5 * ((X @ wr + br - Y) ** 2).sum())
        gw, gb = quad_grads(wr, br)
        wr, br = ref_state(0, wr, gw), ref_state(1, br, gb)
    np.testing.assert_allclose(w.detach().numpy(), wr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), br, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10)
    assert losses[-1] < losses[0]


def test_step_is_in_place_and_not_recorded():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    alias = p.detach()  # shares p's buffer
    opt = optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    np.testing.assert_array_equal(alias.numpy(), p.detach().numpy())
    assert not np.allclose(alias.numpy(), [1.0, 2.0])


def test_closure_runs_with_grad_enabled_and_step_without():
    p = nn.Parameter(torch.tensor([1.0, -1.0]))
    opt = optim.SGD([p], lr=0.5)
    seen = []

    def closure():
        seen.append(torch.is_grad_enabled())
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 2.0
    np.testing.assert_allclose(p.detach().numpy(), [0.0, 0.0])
    assert opt.step() is None


def test_params_without_grad_are_skipped():
    a, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    for cls in (optim.SGD, optim.Adam, optim.RMSprop):
        opt = cls([a, b], lr=0.1, momentum=0.9) if cls is optim.SGD else cls([a, b], lr=0.1)
        a.grad = torch.ones(2)
        b.grad = None
        opt.step()
        assert b not in opt.state and a in opt.state
        np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])


# ---------------------------------------------------------------- parameter groups

def test_param_groups_with_their_own_options():
    w = nn.Parameter(torch.tensor(P0[0]))
    b = nn.Parameter(torch.tensor(P0[1]))
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 0.5, "momentum": 0.5}],
                    lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert len(opt.param_groups[1]["params"]) == 1 and opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["nesterov"] is False  # filled from the defaults
    grads = grads_seq((2, 3), 3)
    for g in grads:
        w.grad, b.grad = torch.tensor(g[0]), torch.tensor(g[1])
        opt.step()
    want_w = ref_sgd(P0[0].copy(), [g[0] for g in grads], lr=0.1, momentum=0.9)[-1]
    want_b = ref_sgd(P0[1].copy(), [g[1] for g in grads], lr=0.5, momentum=0.5)[-1]
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=RTOL)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=RTOL)


def test_adam_groups_and_add_param_group():
    w = nn.Parameter(torch.tensor(P0[0]))
    b = nn.Parameter(torch.tensor(P0[1]))
    opt = optim.Adam([w], lr=0.01)
    opt.add_param_group({"params": [b], "lr": 0.2, "amsgrad": True})
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    grads = grads_seq((2, 3), 4)
    for g in grads:
        w.grad, b.grad = torch.tensor(g[0]), torch.tensor(g[1])
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(),
                               ref_adam(P0[0].copy(), [g[0] for g in grads], lr=0.01)[-1],
                               rtol=RTOL)
    np.testing.assert_allclose(
        b.detach().numpy(),
        ref_adam(P0[1].copy(), [g[1] for g in grads], lr=0.2, amsgrad=True)[-1], rtol=RTOL)


def test_named_parameters_give_param_names():
    lin = Affine(2, 3)
    opt = optim.SGD(lin.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"][0] is lin.weight
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without "
                       "names. cannot add param group without names to the optimizer"):
        opt.add_param_group({"params": [nn.Parameter(torch.ones(1))]})


def test_required_default():
    from fusetorch.optim.optimizer import required
    p = nn.Parameter(torch.ones(2))
    assert repr(required) == "<required parameter>"
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required "
                       "optimization parameter lr"):
        optim.Optimizer([p], {"lr": required})
    opt = optim.Optimizer([{"params": [p], "lr": 0.1}], {"lr": required})
    assert repr(opt) == "Optimizer (\nParameter Group 0\n    lr: 0.1\n)"
    with pytest.raises(NotImplementedError):
        opt.step()


# ---------------------------------------------------------------- zero_grad

def test_zero_grad_set_to_none_by_default():
    p = nn.Parameter(torch.ones(2))
    opt = optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    assert p.grad is not None
    opt.zero_grad()
    assert p.grad is None


def test_zero_grad_in_place():
    p = nn.Parameter(torch.ones(2))
    opt = optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    assert not g.requires_grad
    (p * 2).sum().backward()  # accumulates onto the zeros
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0])


# ---------------------------------------------------------------- state_dict

def _two_param_problem(cls, kw):
    w = nn.Parameter(torch.tensor(W0))
    b = nn.Parameter(torch.tensor(B0))
    return w, b, cls([{"params": [w]}, {"params": [b], "lr": 0.03}], **kw)


def _grad_step(opt, w, b, g):
    w.grad, b.grad = torch.tensor(g[0]), torch.tensor(g[1])
    opt.step()


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9)),
                                    (optim.Adam, dict(lr=0.1, amsgrad=True)),
                                    (optim.AdamW, dict(lr=0.1)),
                                    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.9)),
                                    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1))])
def test_state_dict_round_trip_continues_identically(cls, kw):
    rng = np.random.default_rng(5)
    grads = [(rng.standard_normal((3, 2)), rng.standard_normal(2)) for _ in range(6)]
    w, b, opt = _two_param_problem(cls, kw)
    for g in grads[:3]:
        _grad_step(opt, w, b, g)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.03
    sd = pickle.loads(pickle.dumps(sd))  # what torch.save would keep

    w2 = nn.Parameter(torch.tensor(w.detach().numpy().copy()))
    b2 = nn.Parameter(torch.tensor(b.detach().numpy().copy()))
    opt2 = cls([w2, b2], lr=123.0)  # one group where the state dict has two
    with pytest.raises(ValueError, match="loaded state dict has a different number of "
                       "parameter groups"):
        opt2.load_state_dict(sd)
    opt2 = cls([{"params": [w2]}, {"params": [b2]}], lr=123.0)
    opt2.load_state_dict(sd)
    assert [g["lr"] for g in opt2.param_groups] == [kw["lr"], 0.03]
    assert opt2.param_groups[0]["params"][0] is w2
    for g in grads[3:]:
        _grad_step(opt, w, b, g)
        _grad_step(opt2, w2, b2, g)
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy())
    np.testing.assert_array_equal(b2.detach().numpy(), b.detach().numpy())


def test_state_dict_refers_to_state_and_load_copies():
    p = nn.Parameter(torch.ones(3))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = torch.ones(3)
    opt.step()
    sd = opt.state_dict()
    assert sd["state"][0]["momentum_buffer"] is opt.state[p]["momentum_buffer"]  # as PyTorch
    assert sd["param_groups"] == [{"lr": 0.1, "momentum": 0.9, "dampening": 0,
                                   "weight_decay": 0, "nesterov": False, "maximize": False,
                                   "foreach": None, "differentiable": False, "fused": None,
                                   "params": [0]}]
    q = nn.Parameter(torch.ones(3))
    opt2 = optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    # fusetorch copies on load (PyTorch would alias): stepping one does not move the other
    assert opt2.state[q]["momentum_buffer"] is not sd["state"][0]["momentum_buffer"]
    q.grad = torch.ones(3)
    opt2.step()
    np.testing.assert_array_equal(opt.state[p]["momentum_buffer"].numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(opt2.state[q]["momentum_buffer"].numpy(), [1.9, 1.9, 1.9])


def test_load_state_dict_casts_state_to_param_dtype():
    p = nn.Parameter(torch.ones(2, dtype=torch.float64))
    opt = optim.Adam([p])
    p.grad = torch.ones(2, dtype=torch.float64)
    opt.step()
    sd = opt.state_dict()
    q = nn.Parameter(torch.ones(2))
    opt2 = optim.Adam([q])
    opt2.load_state_dict(sd)
    assert opt2.state[q]["exp_avg"].dtype == torch.float32
    assert opt2.state[q]["step"].dtype == torch.float32  # step is never cast


def test_load_state_dict_group_size_mismatch():
    opt = optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that "
                       "doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0, 1]}]})


def test_deepcopy_and_pickle_of_an_optimizer():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    opt = optim.Adam([p], lr=0.1)
    p.grad = torch.tensor([0.5, -0.5])
    opt.step()
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        q = clone.param_groups[0]["params"][0]
        assert q is not p and clone.state[q]["step"].item() == 1.0
        q.grad = torch.tensor([0.5, -0.5])
        clone.step()
        assert clone.state[q]["step"].item() == 2.0
    assert opt.state[p]["step"].item() == 1.0


# ---------------------------------------------------------------- hooks

def test_step_hooks():
    p = nn.Parameter(torch.ones(1))
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    p.grad = torch.ones(1)
    opt.step()
    assert calls == [("pre", True), ("post", True)]
    h1.remove()
    h2.remove()
    opt.step()
    assert len(calls) == 2
    # a pre-hook may replace the arguments: here it supplies a closure
    opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: 7.0}))
    assert opt.step() == 7.0


def test_global_step_hook():
    from fusetorch.optim.optimizer import register_optimizer_step_post_hook
    seen = []
    h = register_optimizer_step_post_hook(lambda o, a, k: seen.append(type(o).__name__))
    try:
        p = nn.Parameter(torch.ones(1))
        p.grad = torch.ones(1)
        optim.RMSprop([p]).step()
        optim.Adagrad([p]).step()
    finally:
        h.remove()
    assert seen == ["RMSprop", "Adagrad"]


# ---------------------------------------------------------------- errors and repr

def _p():
    return nn.Parameter(torch.ones(2))


@pytest.mark.parametrize("make,exc,msg", [
    (lambda: optim.SGD(_p()), TypeError, "params argument given to the optimizer should be an "
     "iterable of Tensors or dicts, but got torch.FloatTensor"),
    (lambda: optim.SGD([]), ValueError, "optimizer got an empty parameter list"),
    (lambda: optim.SGD([1.0]), TypeError, "optimizer can only optimize Tensors, but one of the "
     "params is float"),
    (lambda: optim.SGD([_p() * 2]), ValueError, "can't optimize a non-leaf Tensor"),
    (lambda: (lambda p: optim.SGD([{"params": [p]}, {"params": [p]}]))(_p()), ValueError,
     "some parameters appear in more than one parameter group"),
    (lambda: optim.SGD([_p()], lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda: optim.SGD([_p()], momentum=-1), ValueError, "Invalid momentum value: -1"),
    (lambda: optim.SGD([_p()], weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    (lambda: optim.SGD([_p()], nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda: optim.Adam([_p()], betas=(1.0, 0.9)), ValueError,
     "Invalid beta parameter at index 0: 1.0"),
    (lambda: optim.Adam([_p()], betas=(0.9, 1.5)), ValueError,
     "Invalid beta parameter at index 1: 1.5"),
    (lambda: optim.Adam([_p()], betas=(0, 0.9)), ValueError,
     "betas must be either both floats or both Tensors"),
    (lambda: optim.Adam([_p()], eps=-1), ValueError, "Invalid epsilon value: -1"),
    (lambda: optim.RMSprop([_p()], alpha=-1), ValueError, "Invalid alpha value: -1"),
    (lambda: optim.Adagrad([_p()], lr_decay=-1), ValueError, "Invalid lr_decay value: -1"),
    (lambda: optim.Adagrad([_p()], initial_accumulator_value=-1), ValueError,
     "Invalid initial_accumulator_value value: -1"),
    (lambda: optim.LBFGS([{"params": [_p()]}, {"params": [_p()]}]), ValueError,
     "LBFGS doesn't support per-parameter options (parameter groups)"),
    (lambda: optim.SGD([_p()]).add_param_group([_p()]), TypeError,
     "param_group must be a dict, but got <class 'list'>"),
    (lambda: optim.SGD([_p()]).add_param_group({"params": {_p()}}), TypeError,
     "optimizer parameters need to be organized in ordered collections, but the ordering of "
     "tensors in sets will change between runs. Please use a list instead."),
])
def test_errors(make, exc, msg):
    with pytest.raises(exc) as info:
        make()
    assert str(info.value) == msg


def test_duplicate_params_warn():
    p = _p()
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate "
                      "parameters; in future, this will cause an error; see "
                      "github.com/pytorch/pytorch/issues/40967 for more information"):
        optim.SGD([p, p])


REPRS = {
    optim.SGD: "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
               "    foreach: None\n    fused: None\n    lr: 0.001\n    maximize: False\n"
               "    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)",
    optim.AdamW: "AdamW (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n"
                 "    capturable: False\n    decoupled_weight_decay: True\n"
                 "    differentiable: False\n    eps: 1e-08\n    foreach: None\n"
                 "    fused: None\n    lr: 0.001\n    maximize: False\n"
                 "    weight_decay: 0.01\n)",
    optim.Adam: "Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n"
                "    capturable: False\n    decoupled_weight_decay: False\n"
                "    differentiable: False\n    eps: 1e-08\n    foreach: None\n"
                "    fused: None\n    lr: 0.001\n    maximize: False\n    weight_decay: 0\n)",
    optim.RMSprop: "RMSprop (\nParameter Group 0\n    alpha: 0.99\n    capturable: False\n"
                   "    centered: False\n    differentiable: False\n    eps: 1e-08\n"
                   "    foreach: None\n    lr: 0.01\n    maximize: False\n    momentum: 0\n"
                   "    weight_decay: 0\n)",
    optim.Adagrad: "Adagrad (\nParameter Group 0\n    differentiable: False\n    eps: 1e-10\n"
                   "    foreach: None\n    fused: None\n    initial_accumulator_value: 0\n"
                   "    lr: 0.01\n    lr_decay: 0\n    maximize: False\n    weight_decay: 0\n)",
    optim.LBFGS: "LBFGS (\nParameter Group 0\n    history_size: 100\n    line_search_fn: None\n"
                 "    lr: 1\n    max_eval: 25\n    max_iter: 20\n    tolerance_change: 1e-09\n"
                 "    tolerance_grad: 1e-07\n)",
}


@pytest.mark.parametrize("cls", list(REPRS), ids=lambda c: c.__name__)
def test_repr_and_defaults(cls):
    assert repr(cls([_p()])) == REPRS[cls]


def test_repr_of_two_groups():
    opt = optim.SGD([{"params": [_p()]}, {"params": [_p()], "lr": 0.5}], lr=0.1, momentum=0.9)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n")
    assert "\nParameter Group 1\n" in text and "    lr: 0.5\n" in text
    assert text.endswith("    weight_decay: 0\n)")


def test_tensor_lr():
    p = nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64))
    opt = optim.SGD([p], lr=torch.tensor(0.5, dtype=torch.float64))
    p.grad = torch.tensor([1.0, 1.0], dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.5, 1.5])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.SGD([_p()], lr=torch.ones(2))


# ---------------------------------------------------------------- LBFGS

def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


@pytest.mark.parametrize("line_search_fn,kw,steps", [
    ("strong_wolfe", dict(lr=1, max_iter=100), 2),
    (None, dict(lr=0.1, max_iter=200, history_size=10), 3)])
def test_lbfgs_minimises_rosenbrock(line_search_fn, kw, steps):
    x = nn.Parameter(torch.tensor([-1.5, 2.0], dtype=torch.float64))
    opt = optim.LBFGS([x], line_search_fn=line_search_fn, tolerance_grad=1e-10,
                      tolerance_change=1e-14, **kw)
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    first = opt.step(closure)
    assert first.item() == 12.5  # the loss at the starting point
    for _ in range(steps - 1):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-3)
    assert rosenbrock(x.detach()).item() < 1e-6
    state = opt.state[x]
    assert state["func_evals"] == len(calls)
    assert set(state) >= {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro",
                          "H_diag", "prev_flat_grad", "prev_loss"}
    if line_search_fn == "strong_wolfe":
        # PyTorch 2.13 on this problem: 53 evaluations and 42 iterations in the first step,
        # 54 and 43 after the second, ending at [1.0000000016007227, 1.0000000032236909]
        assert (state["func_evals"], state["n_iter"]) == (54, 43)
        np.testing.assert_allclose(x.detach().numpy(), [1.0000000016007227, 1.0000000032236909],
                                   rtol=1e-12)


SW_FUNS = {
    "exp": lambda x: (x.exp() - 2 * x).sum(),
    "quartic": lambda x: (x ** 4 - 3 * x ** 2 + x).sum(),
    "wavy": lambda x: (x ** 2 + 3 * (3 * x).sin()).sum(),
    "rosen": rosenbrock,
}


@pytest.mark.parametrize("name,x0,t,d,want", [
    # (f, t, evaluations) printed by PyTorch 2.13's torch.optim.lbfgs._strong_wolfe
    ("exp", [0.0], 10.0, [1.0], (0.7336866195445984, 1.0206354099274448, 4)),
    ("exp", [0.0], 0.01, [1.0], (0.9051709180756478, 0.1, 2)),
    ("quartic", [0.0], 5.0, [1.0], (-1.0702301817761548, 1.130901123722661, 10)),
    ("quartic", [-0.2], 0.05, [-1.0], (-3.5135237981615797, 1.093519580994172, 4)),
    ("wavy", [2.0], 4.0, [-1.0], (1.7784553155483764, 1.0520138238522763, 2)),
    ("wavy", [1.0], 0.3, [-1.0], (1.4233600241796016, 0.0, 12)),
    ("rosen", [-1.5, 2.0], 1.0, [-1.0, 0.5], (12.5, 0.0, 12)),
    ("rosen", [-1.5, 2.0], 0.001, [1.0, 0.0], (11.044500999999999, 0.01, 2))])
def test_strong_wolfe_line_search(name, x0, t, d, want):
    """Bracketing, extrapolation and the zoom phase (with its insufficient-progress guard)."""
    from fusetorch.optim.lbfgs import _strong_wolfe
    x0, d = torch.tensor(x0, dtype=torch.float64), torch.tensor(d, dtype=torch.float64)

    def evaluate(step):
        x = (x0 + step * d).detach().requires_grad_()
        f = SW_FUNS[name](x)
        f.backward()
        return f.item(), x.grad

    f, g = evaluate(0.0)
    f_new, g_new, t_new, evals = _strong_wolfe(evaluate, t, d, f, g, g.dot(d).item())
    assert evals == want[2]
    assert f_new == pytest.approx(want[0], rel=1e-12)
    assert t_new == pytest.approx(want[1], rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(g_new.numpy(), evaluate(t_new)[1].numpy(), rtol=1e-12)


def ref_lbfgs(x, grad_fn, steps, lr, history_size):
    """L-BFGS with a fixed step, one iteration per call, as minFunc's two-loop recursion."""
    s_hist, y_hist = [], []
    g_prev = d_prev = t_prev = None
    out = []
    for k in range(steps):
        g = grad_fn(x)
        if k == 0:
            d, h = -g, 1.0
        else:
            y, s = g - g_prev, d_prev * t_prev
            if y @ s > 1e-10:
                if len(s_hist) == history_size:
                    s_hist.pop(0)
                    y_hist.pop(0)
                s_hist.append(s)
                y_hist.append(y)
            h = (s_hist[-1] @ y_hist[-1]) / (y_hist[-1] @ y_hist[-1])
            q = -g
            alphas = []
            for s_i, y_i in zip(reversed(s_hist), reversed(y_hist)):
                a = (s_i @ q) / (y_i @ s_i)
                alphas.append(a)
                q = q - a * y_i
            r = h * q
            for (s_i, y_i), a in zip(zip(s_hist, y_hist), reversed(alphas)):
                bta = (y_i @ r) / (y_i @ s_i)
                r = r + s_i * (a - bta)
            d = r
        t = min(1.0, 1.0 / np.abs(g).sum()) * lr if k == 0 else lr
        x = x + t * d
        g_prev, d_prev, t_prev = g, d, t
        out.append(x)
    return out


def test_lbfgs_iterations_against_the_two_loop_recursion():
    a = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
    c = np.array([1.0, -2.0, 0.5])
    x0 = np.array([2.0, 1.0, -1.0])
    want = ref_lbfgs(x0, lambda x: a @ x - c, 6, lr=0.5, history_size=2)
    x = nn.Parameter(torch.tensor(x0))
    at, ct = torch.tensor(a), torch.tensor(c)
    opt = optim.LBFGS([x], lr=0.5, max_iter=1, history_size=2)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (at @ x)) - ct @ x
        loss.backward()
        return loss

    for k in range(6):
        opt.step(closure)
        np.testing.assert_allclose(x.detach().numpy(), want[k], rtol=1e-12, atol=1e-14)
    assert len(opt.state[x]["old_dirs"]) == 2  # history capped


def test_lbfgs_stops_at_an_optimum_and_rejects_other_line_searches():
    x = nn.Parameter(torch.tensor([1.0, 1.0], dtype=torch.float64))
    opt = optim.LBFGS([x])

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert opt.state[x]["func_evals"] == 1 and opt.state[x]["n_iter"] == 0
    y = nn.Parameter(torch.tensor([0.0, 0.0], dtype=torch.float64))
    opt = optim.LBFGS([y], line_search_fn="armijo")

    def closure2():
        opt.zero_grad()
        loss = rosenbrock(y)
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure2)


def test_lbfgs_on_a_module_with_several_params():
    torch.manual_seed(0)
    lin = Affine(3, 1)
    xs = torch.tensor(X)
    ys = torch.tensor(X @ np.array([[1.0], [-2.0], [0.5]]) + 0.25)
    opt = optim.LBFGS(lin.parameters(), line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((lin(xs) - ys) ** 2).mean()
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(lin.weight.detach().numpy(), [[1.0, -2.0, 0.5]], atol=1e-4)
    np.testing.assert_allclose(lin.bias.detach().numpy(), [0.25], atol=1e-4)


# ---------------------------------------------------------------- the ops the updates use

def test_addcmul_addcdiv_lerp_values():
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal((2, 3)) for _ in range(3))
    c = np.abs(c) + 0.5
    ta, tb, tc = torch.tensor(a), torch.tensor(b), torch.tensor(c)
    np.testing.assert_allclose(torch.addcmul(ta, tb, tc, value=-0.5).numpy(), a - 0.5 * b * c)
    np.testing.assert_allclose(ta.addcdiv(tb, tc, value=2).numpy(), a + 2 * b / c)
    np.testing.assert_allclose(torch.lerp(ta, tb, 0.3).numpy(), a + 0.3 * (b - a))
    np.testing.assert_allclose(ta.lerp(tb, 0.8).numpy(), a + 0.8 * (b - a))
    w = np.array([[0.1, 0.6, 1.0], [-0.2, 0.5, 2.0]])
    np.testing.assert_allclose(torch.lerp(ta, tb, torch.tensor(w)).numpy(), a + w * (b - a))
    # weight 1 gives `end` exactly (the high branch), as in PyTorch
    big = torch.tensor([1e20, 1.0])
    assert torch.lerp(big, torch.tensor([3.0, 5.0]), 1.0).tolist() == [3.0, 5.0]
    t = ta.clone()
    assert t.addcmul_(tb, tc) is t
    np.testing.assert_allclose(t.numpy(), a + b * c)
    t.lerp_(tb, 0.25)
    np.testing.assert_allclose(t.numpy(), (a + b * c) + 0.25 * (b - (a + b * c)))
    t.addcdiv_(tb, tc)
    assert t.dtype == torch.float64


def test_addcmul_addcdiv_lerp_errors():
    a = torch.ones(2)
    i = torch.ones(2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer "
                       "supported"):
        torch.addcdiv(i, i, i)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        torch.lerp(a, torch.ones(2, dtype=torch.float64), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype "
                       "double"):
        torch.lerp(a, a, torch.ones(2, dtype=torch.float64))
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented for "
                       "'Long'"):
        torch.lerp(i, i, 0.5)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                       r"broadcast shape \[3, 2\]"):
        a.addcmul_(torch.ones(3, 2), a)


def test_addcmul_addcdiv_lerp_gradients():
    rng = np.random.default_rng(8)
    a, b = (torch.tensor(rng.standard_normal(3), requires_grad=True) for _ in range(2))
    c = torch.tensor(np.abs(rng.standard_normal(3)) + 0.5, requires_grad=True)
    w = torch.tensor([0.2, 0.7, -0.1], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x, y, z: torch.addcmul(x, y, z, value=0.7), (a, b, c))
    assert gradcheck(lambda x, y, z: torch.addcdiv(x, y, z, value=-1.5), (a, b, c))
    assert gradcheck(lambda x, y: torch.lerp(x, y, 0.3), (a, b))
    assert gradcheck(lambda x, y: torch.lerp(x, y, 0.9), (a, b))
    assert gradcheck(lambda x, y, z: torch.lerp(x, y, z), (a, b, w))
    assert type(torch.addcmul(a, b, c).grad_fn).__name__ == "AddcmulBackward0"
    assert type(torch.addcdiv(a, b, c).grad_fn).__name__ == "AddcdivBackward0"
    assert type(torch.lerp(a, b, 0.5).grad_fn).__name__ == "LerpBackward0"
    assert type(torch.lerp(a, b, w).grad_fn).__name__ == "LerpBackward1"
    assert math.isfinite(torch.lerp(a, b, w).sum().item())
