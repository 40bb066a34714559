"""Adafactor and Muon against numpy float64 references written from their published update
rules (PyTorch's documentation of torch.optim.Adafactor / torch.optim.Muon), and PyTorch's
argument errors."""
import math

import ml_dtypes
import numpy as np
import pytest

import fusetorch as torch

W = {(5, 3): np.linspace(-1.5, 2.0, 15).reshape(5, 3), (4,): np.array([0.5, -2.0, 1.0, 3.0]),
     (2, 3, 4): np.linspace(0.2, 1.9, 24).reshape(2, 3, 4), (): np.array(0.7),
     (2, 4): np.linspace(-0.5, 0.9, 8).reshape(2, 4)}


def _loss_grad(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The gradient of sum((p * w) ** 2) + 0.3 * sum(p)."""
    return 2 * p * w * w + 0.3


def _run(make, shapes, steps, dtype=torch.float64):
    ps = [torch.nn.Parameter(torch.tensor(np.cos(np.arange(1, 1 + math.prod(s))).reshape(s),
                                          dtype=dtype)) for s in shapes]
    opt = make(ps)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((p * torch.tensor(W[tuple(p.shape)], dtype=dtype)) ** 2).sum() + p.sum() * 0.3
                   for p in ps)
        loss.backward()
        opt.step()
    return ps, opt


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def _adafactor_ref(p, steps, lr, beta2_decay=-0.8, eps1=None, eps2=1e-3, d=1.0, wd=0.0,
                   maximize=False):
    eps1 = np.finfo(np.float64).eps if eps1 is None else eps1
    w = W[p.shape]
    r = np.zeros(p.shape[:-1] + (1,)) if p.ndim > 1 else None
    c = np.zeros(p.shape[:-2] + (1, p.shape[-1])) if p.ndim > 1 else None
    v = np.zeros(p.shape)
    for t in range(1, steps + 1):
        g = _loss_grad(p, w) * (-1 if maximize else 1)
        b = t ** beta2_decay
        alpha = max(eps2, _rms(p)) * min(lr, 1 / math.sqrt(t))
        p = p * (1 - lr * wd)
        if p.ndim > 1:
            r = r + b * ((g * g).mean(-1, keepdims=True) - r)
            c = c + b * ((g * g).mean(-2, keepdims=True) - c)
            est = r @ c / np.maximum(r.mean(-2, keepdims=True), eps1)
        else:
            v = v + b * (g * g - v)
            est = v
        u = g / np.sqrt(np.maximum(est, eps1 * eps1))
        p = p - alpha / max(1.0, _rms(u) / d) * u
    return p


@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.1, "maximize": True, "d": 1.5,
                                     "eps": (1e-20, 1e-3)}, {"beta2_decay": -0.5}])
def test_adafactor_follows_its_update_rule(kw):
    shapes = [(5, 3), (4,), (2, 3, 4), ()]
    ps, opt = _run(lambda ps: torch.optim.Adafactor(ps, lr=0.05, **kw), shapes, steps=6)
    ref_kw = {"wd": kw.get("weight_decay", 0.0), "maximize": kw.get("maximize", False),
              "d": kw.get("d", 1.0), "beta2_decay": kw.get("beta2_decay", -0.8)}
    if "eps" in kw:
        ref_kw["eps1"], ref_kw["eps2"] = kw["eps"]
    for p, s in zip(ps, shapes):
        p0 = np.cos(np.arange(1, 1 + math.prod(s))).reshape(s)
        np.testing.assert_allclose(p.detach().numpy(), _adafactor_ref(p0, 6, 0.05, **ref_kw),
                                   rtol=1e-12, atol=1e-14)
    state = opt.state_dict()["state"]
    assert sorted(state[0]) == ["col_var", "row_var", "step"] and sorted(state[1]) == \
        ["step", "variance"]
    assert tuple(state[0]["row_var"].shape) == (5, 1) and tuple(state[0]["col_var"].shape) == \
        (1, 3)
    assert tuple(state[2]["row_var"].shape) == (2, 3, 1) and state[0]["step"].item() == 6.0


def test_adafactor_state_dict_round_trip_continues_the_same_steps():
    shapes = [(5, 3), (4,)]
    a, opt_a = _run(lambda ps: torch.optim.Adafactor(ps, lr=0.05), shapes, steps=3)
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    opt_b = torch.optim.Adafactor(b, lr=0.05)
    opt_b.load_state_dict(opt_a.state_dict())
    for ps, opt in ((a, opt_a), (b, opt_b)):
        opt.zero_grad()
        sum(((p * torch.tensor(W[tuple(p.shape)], dtype=p.dtype)) ** 2).sum() for p in ps).backward()
        opt.step()
    for p, q in zip(a, b):
        assert torch.equal(p, q)


def _muon_ref(p, steps, lr, wd=0.1, momentum=0.95, nesterov=True, adjust=None, ns_steps=5,
              coefficients=(3.4445, -4.7750, 2.0315), eps=1e-7):
    """Newton-Schulz in float64 with each matmul's result rounded to bfloat16, as the rule
    computes in bfloat16."""
    def bf(x):
        return x.astype(ml_dtypes.bfloat16).astype(np.float64)
    a, b, c = coefficients
    m = np.zeros(p.shape)
    for _ in range(steps):
        g = _loss_grad(p, W[p.shape])
        m = m + (1 - momentum) * (g - m)
        u = g + momentum * (m - g) if nesterov else m
        tall = u.shape[0] > u.shape[1]
        x = bf(u.T if tall else u)
        x = bf(x / max(np.linalg.norm(x), eps))
        for _ in range(ns_steps):
            gram = bf(x @ x.T)
            x = bf(a * x + bf(b * gram + c * bf(gram @ gram)) @ x)
        o = x.T if tall else x
        rows, cols = p.shape
        ratio = math.sqrt(max(1, rows / cols)) if adjust is None else 0.2 * math.sqrt(max(rows, cols))
        p = p * (1 - lr * wd) - lr * ratio * o
    return p


@pytest.mark.parametrize("kw", [{}, {"nesterov": False, "adjust_lr_fn": "match_rms_adamw"}])
def test_muon_follows_its_update_rule(kw):
    shapes = [(5, 3), (2, 4)]
    ps, opt = _run(lambda ps: torch.optim.Muon(ps, lr=0.02, **kw), shapes, steps=4)
    for p, s in zip(ps, shapes):
        p0 = np.cos(np.arange(1, 1 + math.prod(s))).reshape(s)
        ref = _muon_ref(p0, 4, 0.02, nesterov=kw.get("nesterov", True),
                        adjust=kw.get("adjust_lr_fn"))
        # bfloat16 orthogonalisation: the rounding points of the products may differ
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=0, atol=2e-3)
        # ... and the update is orthogonal-ish: singular values of O near 1
    o = torch.optim.muon.newton_schulz(torch.randn(6, 4, dtype=torch.float64), (3.4445, -4.775,
                                                                                2.0315), 5, 1e-7)
    sv = np.linalg.svd(o.float().numpy().astype(np.float64), compute_uv=False)
    assert o.dtype == torch.bfloat16 and tuple(o.shape) == (6, 4)
    assert np.all((sv > 0.5) & (sv < 1.5)), sv
    assert sorted(opt.state_dict()["state"][0]) == ["momentum_buffer"]


def test_errors_are_pytorchs():
    p = [torch.nn.Parameter(torch.ones(2, 2))]
    for make, msg in [
            (lambda: torch.optim.Adafactor(p, lr=-1), "Learning rate should be >= 0 but is: -1"),
            (lambda: torch.optim.Adafactor(p, beta2_decay=0.5), "beta2_decay should be <= 0"),
            (lambda: torch.optim.Adafactor(p, eps=(-1, 1e-3)), "epsilon1 should be >= 0"),
            (lambda: torch.optim.Adafactor(p, d=0.5), "Clipping threshold d should be >= 1"),
            (lambda: torch.optim.Adafactor(p, weight_decay=-1), "weight_decay should be >= 0"),
            (lambda: torch.optim.Muon(p, momentum=-1), "momentum should be >= 0"),
            (lambda: torch.optim.Muon(p, adjust_lr_fn="x"), "function x is not supported"),
            (lambda: torch.optim.Muon([torch.nn.Parameter(torch.ones(3))]),
             r"only supports 2D parameters whereas we found a parameter with size: "
             r"torch.Size\(\[3\]\)")]:
        with pytest.raises(ValueError, match=msg):
            make()
    opt = torch.optim.Muon(p)
    p[0].grad = torch.ones(2, 2)
    opt.param_groups[0]["ns_steps"] = 100
    with pytest.raises(ValueError, match="less than 100"):
        opt.step()
