"""Regressions from PyTorch 2.13's OpInfo samples in float16/bfloat16 and their neighbours
(tools/torch_opinfo_check.py, issue 26): half-precision rounding rules, linalg's `out=` pairs,
polynomial ops of huge degree.

Expected values are numpy float64 references with PyTorch's rounding steps applied (checked
by hand in a PyTorch 2.13 CPU venv), never read from fusetorch.
"""
import math

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


# ---------------------------------------------------------------- floor_divide in half precision

# (a, b, PyTorch 2.13's CPU result, checked by hand): the floor of the exact quotient is
# the last column of each pair's comment; PyTorch's steps in the half type land elsewhere
_FLOOR_DIVIDE = {
    "float16": [(8.5, 0.006320953369140625, 1343.0),  # exact 1344.73...
                (-8.578125, 0.0045013427734375, -1907.0),  # -1906
                (-0.5888671875, -0.00024890899658203125, 2366.0),  # 2364 (spacing 2)
                (4.26953125, -0.00313568115234375, -1363.0)],  # -1362
    "bfloat16": [(-2.90625, -0.0059814453125, 486.0),  # 484
                 (4.0625, 0.0206298828125, 195.0),  # 196
                 (-9.0, -0.033935546875, 266.0),  # 264
                 (5.46875, 0.05419921875, 99.0)],  # 100
}


def _half_floor_divide(a: float, b: float, rnd) -> float:
    """c10::div_floor_floating with every step rounded to the half type by `rnd` (PyTorch's
    CPU kernel on Half/BFloat16), evaluated on Python floats."""
    if b == 0:
        return math.copysign(math.inf, a) * math.copysign(1.0, b) if a != 0 else math.nan
    mod = math.fmod(a, b)
    div = rnd(rnd(a - mod) / b)
    if mod != 0 and (b < 0) != (mod < 0):
        div = rnd(div - 1)
    if div == 0:
        return math.copysign(0.0, a / b)
    if not math.isfinite(div):  # the quotient overflowed the half type
        return div
    f = math.floor(div)
    return f + 1.0 if rnd(div - f) > 0.5 else float(f)


def _rounder(name):
    import ml_dtypes
    t = np.float16 if name == "float16" else ml_dtypes.bfloat16

    def rnd(x: float) -> float:
        with np.errstate(over="ignore"):
            return float(np.asarray(x).astype(t).astype(np.float64))
    return rnd


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_floor_divide_in_half_precision_rounds_each_step_as_pytorch(name, compiled):
    dtype = getattr(torch, name)
    cases = _FLOOR_DIVIDE[name]
    rnd = _rounder(name)
    rng = np.random.default_rng(1)
    a_r = [rnd(v) for v in rng.uniform(-9, 9, 200)]
    b_r = [rnd(v) for v in rng.uniform(-9, 9, 200) * 10.0 ** rng.integers(-4, 1, 200)]
    a = [c[0] for c in cases] + a_r + [0.0, -3.0, 5.0]
    b = [c[1] for c in cases] + b_r + [0.0, 0.0, -2.0]
    ta, tb = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
    fn = torch.compile(lambda x, y: torch.floor_divide(x, y)) if compiled else torch.floor_divide
    got = fn(ta, tb).double().numpy()
    expected = [rnd(_half_floor_divide(x, y, rnd)) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got[:len(cases)], [c[2] for c in cases])
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal((ta // tb).double().numpy(), expected)


# ---------------------------------------------------------------- round(decimals)

def _round_decimals(x: np.ndarray, decimals: int, work) -> np.ndarray:
    """PyTorch's round_decimals_kernel on float64 values in `work` (float32 for float16 and
    bfloat16: its opmath): nearbyint(x * 10**d) / 10**d, or for d < 0
    nearbyint(x / 10**-d) * 10**-d, the power exact in `work`."""
    s = work(10.0 ** abs(decimals))
    xw = x.astype(work)
    return np.rint(xw * s) / s if decimals > 0 else np.rint(xw / s) * s


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name,decimals", [("bfloat16", 3), ("float16", 3), ("bfloat16", -2),
                                           ("float32", -3), ("float64", -3), ("float32", 2)])
def test_round_decimals_scales_in_opmath_by_the_exact_power(name, decimals, compiled):
    import ml_dtypes
    dtype = getattr(torch, name)
    np_t = {"bfloat16": ml_dtypes.bfloat16}.get(name, getattr(np, name, None))
    work = np.float64 if name == "float64" else np.float32
    rng = np.random.default_rng(2)
    scale = 10.0 if decimals > 0 else 1e4
    x = np.concatenate([rng.uniform(-scale, scale, 300),
                        # hand-checked in PyTorch 2.13: round(x, decimals=-3) of these float32
                        # values is -7000, -4000, 8000 (x * 0.001 / 0.001 is 1 ulp short)
                        [-6595.5556640625, -4226.34619140625, 8391.119140625, 2500.0, -1500.0,
                         0.0, -0.0]]).astype(np_t)
    t = torch.tensor(x.astype(np.float64), dtype=dtype)
    fn = torch.compile(lambda v: torch.round(v, decimals=decimals)) if compiled else \
        (lambda v: torch.round(v, decimals=decimals))
    got = fn(t)
    assert got.dtype == dtype
    expected = _round_decimals(x.astype(np.float64), decimals, work).astype(np_t)
    np.testing.assert_array_equal(got.double().numpy(), expected.astype(np.float64))
    np.testing.assert_array_equal(np.signbit(got.double().numpy()), np.signbit(expected))
    if name == "bfloat16" and decimals == 3:  # hand-checked in PyTorch 2.13
        pinned = torch.tensor([0.291015625, 0.58203125, 0.11669921875, -0.91796875], dtype=dtype)
        np.testing.assert_array_equal(fn(pinned).double().numpy(),
                                      [0.291015625, 0.58203125, 0.1171875, -0.91796875])
    if name == "float32" and decimals == -3:
        np.testing.assert_array_equal(got.numpy()[300:303], [-7000.0, -4000.0, 8000.0])


def test_round_of_integers_and_bools_raises_as_pytorch():
    with pytest.raises(NotImplementedError, match="\"round_cpu\" not implemented for 'Long'"):
        torch.round(torch.tensor([1, 2]), decimals=2)
    for fn in ("floor", "ceil", "trunc", "round"):
        with pytest.raises(NotImplementedError, match=f"\"{fn}_vml_cpu\" not implemented for"):
            getattr(torch, fn)(torch.tensor([True, False]))
    assert torch.round(torch.tensor([3, -2]), decimals=0).tolist() == [3, -2]  # ints as they are
