"""Regressions from PyTorch 2.13's OpInfo samples in float16/bfloat16 and their neighbours
(tools/torch_opinfo_check.py, issue 26): half-precision rounding rules, linalg's `out=` pairs,
polynomial ops of huge degree.

Expected values are numpy float64 references with PyTorch's rounding steps applied (checked
by hand in a PyTorch 2.13 CPU venv), never read from fusetorch.
"""
import numpy as np
import pytest

import fusetorch as torch

F64 = torch.float64


def _mats():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    return a, a + a.T, a @ a.T + 3 * np.eye(3)


# (call, arguments from (a, h, p), numpy reference of every result, PyTorch's out type name)
_PAIRS = [
    ("linalg.eigh", lambda a, h, p: (h,), lambda a, h, p: np.linalg.eigh(h), "linalg_eigh_out"),
    ("linalg.slogdet", lambda a, h, p: (a,), lambda a, h, p: np.linalg.slogdet(a),
     "linalg_slogdet_out"),
    ("linalg.qr", lambda a, h, p: (a,), lambda a, h, p: None, "linalg_qr_out"),
    ("linalg.svd", lambda a, h, p: (a,), lambda a, h, p: None, "linalg_svd_out"),
    ("linalg.inv_ex", lambda a, h, p: (a,), lambda a, h, p: (np.linalg.inv(a), 0),
     "linalg_inv_ex_out"),
    ("linalg.cholesky_ex", lambda a, h, p: (p,), lambda a, h, p: (np.linalg.cholesky(p), 0),
     "linalg_cholesky_ex_out"),
    ("linalg.solve_ex", lambda a, h, p: (a, p), lambda a, h, p: (np.linalg.solve(a, p), 0),
     "linalg_solve_ex_out"),
    ("svd", lambda a, h, p: (a,), lambda a, h, p: None, "svd_out"),
    ("qr", lambda a, h, p: (a,), lambda a, h, p: None, "qr_out"),
]


def _fn(path):
    obj = torch
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("path,args,ref,type_name", _PAIRS, ids=[p[0] for p in _PAIRS])
def test_linalg_out_pairs_write_every_out_and_return_the_out_type(path, args, ref, type_name):
    mats = _mats()
    fn, xs = _fn(path), [torch.tensor(m) for m in args(*mats)]
    plain = fn(*xs)
    outs = tuple(torch.empty(0, dtype=r.dtype) for r in plain)
    got = fn(*xs, out=outs)
    assert type(got).__name__ == type_name
    assert repr(got).startswith(f"torch.return_types.{type_name}(")
    assert all(g is o for g, o in zip(got, outs))
    expected = ref(*mats)
    if expected is None:  # factorizations unique up to signs: the product is the reference
        u = [o.numpy() for o in outs]
        rebuilt = u[0] @ u[1] if len(u) == 2 else (u[0] * u[1]) @ (u[2] if path != "svd"
                                                                     else u[2].T)
        np.testing.assert_allclose(rebuilt, args(*mats)[0], atol=1e-12)
    else:
        for o, e in zip(outs, expected):
            np.testing.assert_allclose(o.numpy(), e, atol=1e-12)


@pytest.mark.parametrize("path,args", [(p[0], p[1]) for p in _PAIRS], ids=[p[0] for p in _PAIRS])
def test_linalg_out_pairs_refuse_what_pytorch_refuses(path, args):
    fn, xs = _fn(path), [torch.tensor(m) for m in args(*_mats())]
    n = len(fn(*xs))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        fn(*xs, out=tuple(torch.empty(0) for _ in range(n)))  # float32: linalg does not cast
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        fn(*xs, out=torch.empty(0, dtype=F64))
