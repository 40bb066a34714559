"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop: trajectories on a small problem against each
algorithm written out in numpy float64 (from the algorithm boxes of PyTorch's documentation),
argument checks, state_dict layout and round trip, the implementation-selecting keyword
arguments, and whole compiled training steps against eager ones.

Error messages were printed by PyTorch 2.13 for the same calls. The trajectories of
`CASES` were also run through PyTorch 2.13 by hand (float32, 12 steps): they agreed with
fusetorch's to within 1.2e-7.
"""
import copy
import inspect
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch import optim

# the problem: loss(p) = sum(0.5 c p^2 - b p + 0.1 p^3), gradient c p - b + 0.3 p^2
CURV = np.array([[1.5, 0.4, 2.0], [0.7, 3.0, 1.1]])
LIN = np.array([[0.5, -1.0, 0.2], [1.5, 0.3, -0.8]])
P0 = np.array([[0.3, -0.7, 1.1], [-0.4, 0.9, 0.05]])
STEPS = 8


def grad_np(p):
    return CURV * p - LIN + 0.3 * p * p


def run(cls, steps=STEPS, dtype=torch.float64, **kw):
    """The optimizer's trajectory on the problem, gradients by autograd."""
    p = nn.Parameter(torch.tensor(P0, dtype=dtype))
    c, b = torch.tensor(CURV, dtype=dtype), torch.tensor(LIN, dtype=dtype)
    opt = cls([p], **kw)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * c * p * p - b * p + 0.1 * p ** 3).sum().backward()
        opt.step()
        out.append(p.detach().numpy().astype(np.float64).copy())
    return out, opt, p


# ---------------------------------------------------------------- numpy references

def _grad(p, maximize, weight_decay):
    g = grad_np(p)
    g = -g if maximize else g
    return g + weight_decay * p


def ref_adadelta(steps, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    p, v, u, out = P0.copy(), 0 * P0, 0 * P0, []
    for _ in range(steps):
        g = _grad(p, maximize, weight_decay)
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
        out.append(p)
    return out


def ref_adamax(steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    b1, b2 = betas
    p, m, u, out = P0.copy(), 0 * P0, 0 * P0, []
    for t in range(1, steps + 1):
        g = _grad(p, maximize, weight_decay)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
        out.append(p)
    return out


def ref_nadam(steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
              momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    mu = [None] + [b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay)) for t in range(1, steps + 2)]
    p, m, v, out = P0.copy(), 0 * P0, 0 * P0, []
    for t in range(1, steps + 1):
        if decoupled_weight_decay:
            g = _grad(p, maximize, 0)
            p = p * (1 - lr * weight_decay)
        else:
            g = _grad(p, maximize, weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = (mu[t + 1] * m / (1 - np.prod(mu[1:t + 2]))
                 + (1 - mu[t]) * g / (1 - np.prod(mu[1:t + 1])))
        v_hat = v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def ref_radam(steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
              decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1
    p, m, v, out = P0.copy(), 0 * P0, 0 * P0, []
    for t in range(1, steps + 1):
        if decoupled_weight_decay:
            g = _grad(p, maximize, 0)
            p = p * (1 - lr * weight_decay)
        else:
            g = _grad(p, maximize, weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            adaptive = np.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
            rect = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                           / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * rect * adaptive
        else:
            p = p - lr * m_hat
        out.append(p)
    return out


def ref_asgd(steps, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    p, ax, eta, mu, out, axs = P0.copy(), 0 * P0, lr, 1.0, [], []
    for t in range(1, steps + 1):
        g = _grad(p, maximize, weight_decay)
        p = p * (1 - lambd * eta) - eta * g
        ax = p if mu == 1 else ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)
        out.append(p)
        axs.append(ax)
    return out, axs


def ref_rprop(steps, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    etaminus, etaplus = etas
    p, prev, size, out = P0.copy(), 0 * P0, np.full_like(P0, lr), []
    for _ in range(steps):
        g = _grad(p, maximize, 0)
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etaplus, np.where(s < 0, etaminus, 1.0)),
                       *step_sizes)
        g = np.where(s < 0, 0.0, g)
        p = p - np.sign(g) * size
        prev = g
        out.append(p)
    return out


CASES = [
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.1)),
    ("Adamax", dict(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.1)),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.1)),  # rho_t passes 5 at step 7: both updates are used
    ("RAdam", dict(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
    ("ASGD", dict(lr=0.1)),
    ("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.1)),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.01, 0.2), maximize=True)),
]
REFS = {"Adadelta": ref_adadelta, "Adamax": ref_adamax, "NAdam": ref_nadam,
        "RAdam": ref_radam, "ASGD": lambda steps, **kw: ref_asgd(steps, **kw)[0],
        "Rprop": ref_rprop}
STATE_KEYS = {"Adadelta": ["acc_delta", "square_avg", "step"],
              "Adamax": ["exp_avg", "exp_inf", "step"],
              "NAdam": ["exp_avg", "exp_avg_sq", "mu_product", "step"],
              "RAdam": ["exp_avg", "exp_avg_sq", "step"],
              "ASGD": ["ax", "eta", "mu", "step"],
              "Rprop": ["prev", "step", "step_size"]}


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_numpy_reference(name, kw):
    got, opt, _ = run(getattr(optim, name), **kw)
    want = REFS[name](STEPS, **kw)
    # ASGD's eta and NAdam's mu_product are float32 0-d tensors, as in PyTorch
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6, atol=1e-9)
    state = opt.state_dict()["state"][0]
    assert sorted(state) == STATE_KEYS[name]
    assert isinstance(state["step"], torch.Tensor) and state["step"].dim() == 0
    assert float(state["step"]) == STEPS


def test_asgd_average_and_schedules():
    _, opt, p = run(optim.ASGD, lr=0.1, lambd=0.01, alpha=0.5, t0=3)
    _, axs = ref_asgd(STEPS, lr=0.1, lambd=0.01, alpha=0.5, t0=3)
    st = opt.state[p]
    np.testing.assert_allclose(st["ax"].numpy(), axs[-1], rtol=1e-6)
    np.testing.assert_allclose(float(st["eta"]), 0.1 / (1 + 0.01 * 0.1 * STEPS) ** 0.5,
                               rtol=1e-6)
    assert float(st["mu"]) == pytest.approx(1 / (STEPS - 3))
    assert st["eta"].dtype == torch.float32 and st["mu"].dim() == 0


def test_nadam_mu_product():
    _, opt, p = run(optim.NAdam, lr=0.1)
    mus = [0.9 * (1 - 0.5 * 0.96 ** (t * 4e-3)) for t in range(1, STEPS + 1)]
    assert float(opt.state[p]["mu_product"]) == pytest.approx(np.prod(mus), rel=1e-6)


def test_float32_trajectories_stay_close():
    for name, kw in CASES[::3]:
        got, _, _ = run(getattr(optim, name), dtype=torch.float32, **kw)
        np.testing.assert_allclose(np.array(got), np.array(REFS[name](STEPS, **kw)),
                                   rtol=2e-5, atol=2e-6, err_msg=name)


def test_parameters_without_grad_and_groups():
    a = nn.Parameter(torch.tensor(P0))
    b = nn.Parameter(torch.ones(2))
    opt = optim.RAdam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad = torch.tensor(grad_np(P0))
    opt.step()
    assert b not in opt.state and len(opt.state[a]) == 3
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["betas"] == (0.9, 0.999)


# ---------------------------------------------------------------- arguments

def _p():
    return [nn.Parameter(torch.zeros(2))]


@pytest.mark.parametrize("make,message", [
    (lambda: optim.Adadelta(_p(), lr=-1), "Invalid learning rate: -1"),
    (lambda: optim.Adadelta(_p(), rho=1.5), "Invalid rho value: 1.5"),
    (lambda: optim.Adadelta(_p(), eps=-1e-3), "Invalid epsilon value: -0.001"),
    (lambda: optim.Adadelta(_p(), weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda: optim.Adamax(_p(), lr=-0.5), "Invalid learning rate: -0.5"),
    (lambda: optim.Adamax(_p(), betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda: optim.Adamax(_p(), betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda: optim.NAdam(_p(), momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda: optim.NAdam(_p(), eps=-1), "Invalid epsilon value: -1"),
    (lambda: optim.RAdam(_p(), betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda: optim.RAdam(_p(), weight_decay=-2), "Invalid weight_decay value: -2"),
    (lambda: optim.ASGD(_p(), lr=-1), "Invalid learning rate: -1"),
    (lambda: optim.ASGD(_p(), weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda: optim.Rprop(_p(), lr=-1), "Invalid learning rate: -1"),
    (lambda: optim.Rprop(_p(), etas=(1.5, 2.0)), "Invalid eta values: 1.5, 2.0"),
    (lambda: optim.Rprop(_p(), etas=(0.5, 1.0)), "Invalid eta values: 0.5, 1.0"),
    (lambda: optim.NAdam(_p(), lr=torch.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
])
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError) as e:
        make()
    assert str(e.value) == message


# PyTorch 2.13's signatures (parameter names in order, defaults)
SIGNATURES = {
    "Adadelta": "(params, lr=1.0, rho=0.9, eps=1e-06, weight_decay=0, foreach=None, *, "
                "capturable=False, maximize=False, differentiable=False)",
    "Adamax": "(params, lr=0.002, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, foreach=None, "
              "*, maximize=False, differentiable=False, capturable=False)",
    "NAdam": "(params, lr=0.002, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, "
             "momentum_decay=0.004, decoupled_weight_decay=False, *, foreach=None, "
             "maximize=False, capturable=False, differentiable=False)",
    "RAdam": "(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, "
             "decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False, "
             "differentiable=False)",
    "ASGD": "(params, lr=0.01, lambd=0.0001, alpha=0.75, t0=1000000.0, weight_decay=0, "
            "foreach=None, maximize=False, differentiable=False, capturable=False)",
    "Rprop": "(params, lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-06, 50), *, capturable=False, "
             "foreach=None, maximize=False, differentiable=False)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_and_defaults_are_pytorchs(name):
    sig = inspect.signature(getattr(optim, name).__init__)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in
              list(sig.parameters.values())[1:]]
    assert str(inspect.Signature(params)) == SIGNATURES[name]
    opt = getattr(optim, name)(_p())
    kw = {k: v.default for k, v in sig.parameters.items()
          if v.default is not inspect.Parameter.empty}
    for k, v in kw.items():
        assert opt.defaults[k] == v, k


@pytest.mark.parametrize("name", sorted(SIGNATURES) + ["SGD", "Adam", "AdamW", "Adagrad",
                                                       "RMSprop"])
def test_implementation_keywords_are_accepted_and_change_nothing(name):
    cls = getattr(optim, name)
    names = inspect.signature(cls.__init__).parameters
    extra = {k: v for k, v in dict(foreach=False, capturable=True, fused=True).items()
             if k in names}
    assert "foreach" in names and "differentiable" in names
    plain, _, _ = run(cls, steps=3, **({"lr": 0.05} if name != "Adadelta" else {}))
    chosen, _, _ = run(cls, steps=3, differentiable=False, **extra,
                       **({"lr": 0.05} if name != "Adadelta" else {}))
    np.testing.assert_allclose(np.array(chosen), np.array(plain), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.Adagrad])
def test_fused_conflicts_raise_like_pytorch(cls):
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        cls(_p(), lr=0.1, fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        cls(_p(), lr=0.1, fused=True, differentiable=True)


def test_tensor_lr():
    got, _, _ = run(optim.Adamax, lr=torch.tensor(0.1))
    np.testing.assert_allclose(np.array(got), np.array(ref_adamax(STEPS, lr=0.1)), rtol=1e-6)


# ---------------------------------------------------------------- state_dict

@pytest.mark.parametrize("name,kw", CASES[1::2], ids=[n for n, _ in CASES[1::2]])
def test_state_dict_round_trip_continues_the_trajectory(name, kw):
    cls = getattr(optim, name)
    got, opt, p = run(cls, steps=3, **kw)
    sd = opt.state_dict()
    q = nn.Parameter(p.detach().clone())
    opt2 = cls([q], **kw)
    opt2.load_state_dict(copy.deepcopy(sd))
    assert sorted(opt2.state[q]) == STATE_KEYS[name]
    assert opt2.state[q]["step"].dtype == torch.float32
    assert all(v.dtype == torch.float64 for k, v in opt2.state[q].items() if k != "step")
    c, b = torch.tensor(CURV), torch.tensor(LIN)
    for _ in range(4):
        for param, o in ((p, opt), (q, opt2)):
            o.zero_grad()
            (0.5 * c * param * param - b * param + 0.1 * param ** 3).sum().backward()
            o.step()
        # loading casts floating state but `step` to the parameter's dtype (PyTorch's
        # policy), so NAdam's mu_product and ASGD's eta, mu continue in float64 here
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6,
                                   atol=1e-9)
    np.testing.assert_allclose(p.detach().numpy(), REFS[name](7, **kw)[-1], rtol=1e-6,
                               atol=1e-9)


def test_old_checkpoints_with_python_scalars_get_tensor_state():
    _, opt, p = run(optim.ASGD, steps=2, lr=0.1)
    sd = copy.deepcopy(opt.state_dict())
    sd["state"][0].update(step=2, eta=float(sd["state"][0]["eta"]), mu=1.0)
    del sd["param_groups"][0]["capturable"]
    opt2 = optim.ASGD([nn.Parameter(p.detach().clone())], lr=0.1)
    opt2.load_state_dict(sd)
    st = next(iter(opt2.state.values()))
    assert all(isinstance(st[k], torch.Tensor) for k in ("step", "eta", "mu"))
    assert float(st["step"]) == 2 and opt2.param_groups[0]["capturable"] is False
    _, opt, _ = run(optim.NAdam, steps=2)
    sd = copy.deepcopy(opt.state_dict())
    sd["state"][0].update(step=2.0, mu_product=float(sd["state"][0]["mu_product"]))
    opt2 = optim.NAdam([nn.Parameter(torch.tensor(P0))])
    opt2.load_state_dict(sd)
    assert isinstance(next(iter(opt2.state.values()))["mu_product"], torch.Tensor)


# ---------------------------------------------------------------- compiled training steps

@pytest.fixture
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


@pytest.mark.usefixtures("_private_cache")
@pytest.mark.parametrize("name,kw", [
    ("Adadelta", {}),
    ("Adamax", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),  # rho_t passes 5 at step 6 of 7
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.05, t0=3)),  # mu leaves 1 at step 5
    ("Rprop", dict(lr=0.01)),
])
def test_compiled_training_step_matches_eager_without_graph_breaks(name, kw):
    torch.manual_seed(0)
    m1 = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2))
    m2 = copy.deepcopy(m1)
    o1, o2 = getattr(optim, name)(m1.parameters(), **kw), getattr(optim, name)(
        m2.parameters(), **kw)
    x, y = torch.randn(4, 6), torch.randn(4, 2)

    def step_of(model, opt):
        def step(a, b):
            opt.zero_grad()
            loss = F.mse_loss(model(a), b)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = step_of(m1, o1), torch.compile(step_of(m2, o2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break warns
        for _ in range(7):
            l1, l2 = eager(x, y), compiled(x, y)
            np.testing.assert_allclose(l2.item(), l1.item(), rtol=1e-5)
            for p, q in zip(m1.parameters(), m2.parameters()):
                np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(),
                                           rtol=1e-5, atol=1e-6)
    assert compiled.kernels()
    for p, q in zip(m1.parameters(), m2.parameters()):
        for k, v in o1.state[p].items():
            np.testing.assert_allclose(o2.state[q][k].numpy(), v.numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=k)


def _sparse_adam_np(p, rows_per_step, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """PyTorch's sparse_adam on the rows each step's sparse gradient holds, in numpy."""
    p, m, v = p.copy(), np.zeros_like(p), np.zeros_like(p)
    for t, (rows, g) in enumerate(zip(rows_per_step, grads), 1):
        m[rows] += (g[rows] - m[rows]) * (1 - b1)
        v[rows] += (g[rows] ** 2 - v[rows]) * (1 - b2)
        p[rows] -= lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
    return p


def test_sparse_adam_updates_only_the_rows_an_embedding_looked_up():
    w0 = np.arange(15.0).reshape(5, 3) / 10 - 0.6
    emb = nn.Embedding(5, 3, sparse=True, _weight=torch.tensor(w0))
    opt = optim.SparseAdam(emb.parameters(), lr=0.01)
    lookups = [[[1, 2], [1, 4]], [[0, 0]], [[3, 1]]]
    rows, grads = [], []
    for idx in lookups:
        opt.zero_grad()
        w = emb.weight.detach().numpy().copy()
        (emb(torch.tensor(idx)) ** 2).sum().backward()
        g = np.zeros_like(w)
        for i in np.array(idx).reshape(-1):
            g[i] += 2 * w[i]
        rows.append(sorted(set(np.array(idx).reshape(-1))))
        grads.append(g)
        opt.step()
    np.testing.assert_allclose(emb.weight.detach().numpy(), _sparse_adam_np(w0, rows, grads),
                               rtol=1e-12)
    assert opt.state[emb.weight]["step"] == 3
    # rows 2 and 4 were looked up at step 1 only: their moments stay as step 1 left them
    np.testing.assert_allclose(opt.state[emb.weight]["exp_avg"].numpy()[[2, 4]],
                               0.1 * grads[0][[2, 4]], rtol=1e-12)
    assert set(inspect.signature(optim.SparseAdam).parameters) == {"params", "lr", "betas", "eps",
                                                                   "maximize"}
    with pytest.raises(ValueError, match="Invalid learning rate: 0.0"):
        optim.SparseAdam(emb.parameters(), lr=0.0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.SparseAdam(emb.parameters(), betas=(0.9, 1.0))
