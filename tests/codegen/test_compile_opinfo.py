"""Every op and layer in the OpInfo registry (tests/opinfo.py), compiled against eager: values
(dtype, shape, numbers) and gradients of a scalar reduction w.r.t. every floating input and
every parameter.

Each entry's variants and samples run in ONE traced function (outputs returned as a tuple), so
an entry costs one build of its forward program, plus one joint forward and one backward program
for gradients: kernels cost ~0.1 s to build and there are ~230 entries. The compiled function
is called twice, so the second call runs the compiled program (the first runs eagerly while
kernels build).

Known compiler bugs are `xfail(strict=True)` cases in BUGS, each a (variant, sample) pair run on
its own; calls that fall back to eager for an op that is not data-dependent are there too (the
test asserts a compiled program ran). Strict: a fixed bug shows up as an unexpected pass, and
its key has to leave the table.
"""
from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import opinfo
from opinfo import F64_ATOL, F64_RTOL, ModuleInfo

ENTRIES = {e.name: e for e in opinfo.OPS + opinfo.MODULES}
assert len(ENTRIES) == len(opinfo.OPS) + len(opinfo.MODULES), "entry names must be unique"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


# Known failures, each run on its own as a strict xfail: (entry, mode 'values' | 'grad',
# variant or '*', sample or '*') -> reason. Reasons start with what is wrong: "compile:" a
# compiler bug (wrong or crashing compiled call), "fallback:" compile runs the call eagerly
# though it need not, "eager:" a bug in eager fusetorch that breaks the reference itself.
_STRIDES = ("compile: crash on the second call: a kernel input of shape [..., 1] (keepdim "
            "reduction of a permuted input) is recorded with one stride for its size-1 dim on the "
            "first run and another later; the layout guard compares strides of size-1 dims "
            "(RuntimeError 'kernel ... was generated for input strides ...')")
_NO_GRAD = ("compile: values computed under torch.no_grad() inside the compiled function get "
            "gradients in the compiled backward (embedding's padding_idx trick "
            "`const + (out - const) * scale` then passes the full gradient to the padding row)")
_INPLACE_ACT = ("eager: an in-place activation on a non-leaf that requires grad fails in "
                "backward ('modified by an inplace operation'); PyTorch differentiates it")
BUGS: dict = {
    **{(e, md, "*", "dim_last_keep"): _STRIDES for e, md in [
        ("sum", "grad"), ("mean", "values"), ("mean", "grad"), ("amax", "grad"),
        ("amin", "grad")]},
    **{(f"F.cross_entropy({r})", md, "*", "idx_f64"): _STRIDES
       for r in ("mean", "sum", "none") for md in ("values", "grad")},
    **{(f"F.pointwise_losses({r})", md, "F.kl_div", "perm_f64"): _STRIDES
       for r in ("mean", "sum", "none") for md in ("values", "grad")},
    **{(e, md, "*", "perm"): _STRIDES for e in ("LayerNorm", "Softmax", "LogSoftmax")
       for md in ("values", "grad")},
    **{("CrossEntropyLoss", md, "*", "idx_f64"): _STRIDES for md in ("values", "grad")},
    ("F.embedding", "grad", "F.embedding(padding_idx)", "*"): _NO_GRAD,
    ("Embedding", "grad", "*", "*"): _NO_GRAD,
    **{(e, "grad", v, "*"): _INPLACE_ACT for e, v in [
        ("F.celu", "F.celu(inplace)"), ("F.celu(alpha)", "F.celu(inplace)"),
        ("F.elu", "F.elu_"), ("F.elu", "F.elu(inplace)"), ("F.selu", "F.selu(inplace)"),
        ("F.hardswish", "F.hardswish(inplace)")]},
    **{("clamp", "grad", v, "tensor_bounds"): "eager: clamp_ with tensor min/max on a non-leaf "
       "that requires grad fails in backward ('modified by an inplace operation')"
       for v in ("Tensor.clamp_", "Tensor.clip_")},
    **{("mask_getitem", md, "*", "0d"): "fallback: x[x > 0] with a 0-d x graph-breaks on bool() "
       "(n-d masks compile through nonzero)" for md in ("values", "grad")},
}

# ----------------------------------------------------------------------------- plumbing


def _tensors(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for k in sorted(x) for t in _tensors(x[k])]
    return []


def _rebuild(x, it):
    if isinstance(x, torch.Tensor):
        return next(it)
    if isinstance(x, (list, tuple)):
        return type(x)(_rebuild(v, it) for v in x)
    if isinstance(x, dict):
        return {k: _rebuild(x[k], it) for k in sorted(x)}
    return x


def _cases(entry, mode: str, only=None) -> list:
    """(variant name, fn, sample) for the entry; `only` = (variant, sample) patterns to keep,
    else every pair not claimed by a BUGS key for this entry and mode."""
    bugs = [(v, s) for (e, md, v, s) in BUGS if e == entry.name and md == mode]
    match = lambda pat, v, s: pat[0] in ("*", v) and pat[1] in ("*", s)  # noqa: E731
    out = []
    for vname, fn in entry.variants.items():
        # fresh samples per variant (the same data): one tensor passed as two arguments is a
        # case of its own (test_same_tensor_as_two_arguments)
        for s in entry.make_samples():
            if not s.inplace and opinfo.is_inplace(vname):
                continue
            if mode == "grad" and not isinstance(entry, ModuleInfo) and not any(t.dtype.is_floating_point for t in
                                          _tensors([s.args, s.kwargs])):
                continue
            if only is not None:
                if match(only, vname, s.name):
                    out.append((vname, fn, s))
            elif not any(match(b, vname, s.name) for b in bugs):
                out.append((vname, fn, s))
    return out


def _flat_inputs(cases) -> list:
    return [t for _, _, s in cases for t in _tensors([s.args, s.kwargs])]


def _outputs(r) -> list:
    return [r] if isinstance(r, torch.Tensor) else [t for v in r for t in _outputs(v)]


def _op_batch(cases):
    """One function of every case's tensors that returns every case's outputs."""
    def run(*flat):
        it, outs = iter(flat), []
        for _, fn, s in cases:
            args, kwargs = _rebuild(s.args, it), _rebuild(s.kwargs, it)
            outs.extend(_outputs(fn(*args, **kwargs)))
        return tuple(outs)
    return run


class _ModuleBatch(nn.Module):
    """The layer over every sample, as one module (so compile sees its parameters)."""

    def __init__(self, layer, cases, cotangents=None):
        super().__init__()
        self.layer, self._cases, self._cot = layer, cases, cotangents

    def forward(self, *flat):
        it, outs = iter(flat), []
        for _, _, s in self._cases:
            outs.extend(_outputs(self.layer(*_rebuild(s.args, it), **s.kwargs)))
        return tuple(outs) if self._cot is None else _reduce(outs, self._cot)


def _reduce(outs, cots):
    """sum_i <out_i, cot_i> over the floating outputs: the scalar whose gradient we compare."""
    total = None
    for o, c in zip([o for o in outs if o.dtype.is_floating_point], cots):
        term = (o * c).sum()
        total = term if total is None else total + term.to(total.dtype)
    return total


def _labels(cases, outputs_per_case) -> list:
    return [f"{v}[{s.name}]#{k}" for (v, _, s), n in zip(cases, outputs_per_case)
            for k in range(n)]


def _tol(entry, dtype, grad=False):
    if dtype == torch.float64:
        return F64_RTOL, F64_ATOL
    return (entry.grad_rtol, entry.grad_atol) if grad else (entry.rtol, entry.atol)


def _compare(entry, got, want, label, grad=False):
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != eager {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{label}: shape {got.shape} != {want.shape}"
    g, w = got.detach().numpy(), want.detach().numpy()
    if got.dtype.is_floating_point:
        rtol, atol = _tol(entry, got.dtype, grad)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=label)
    else:
        np.testing.assert_array_equal(g, w, err_msg=label)


def _make_layer(entry: ModuleInfo):
    torch.manual_seed(0)
    layer = entry.make()
    layer.train(entry.train)
    return layer


def _assert_compiled(cf, entry, mode):
    ran = cf.graph() != ""  # '' when no compiled variant ran
    assert ran, f"{entry.name}: compile fell back to eager ({mode})"


def _counts(cases, flat):
    """How many outputs each case gives (from one eager run)."""
    it, counts = iter(flat), []
    for _, fn, s in cases:
        counts.append(len(_outputs(fn(*_rebuild(s.args, it), **_rebuild(s.kwargs, it)))))
    return counts

# ----------------------------------------------------------------------------- the checks


def check_values(entry, cases):
    flat = _flat_inputs(cases)
    with torch.no_grad():
        if isinstance(entry, ModuleInfo):
            layer = _make_layer(entry)
            twin = copy.deepcopy(layer)
            fn, eager_fn = _ModuleBatch(layer, cases), _ModuleBatch(twin, cases)
            labels = [f"{entry.name}[{s.name}]#{k}" for _, _, s in cases
                      for k in range(len(_outputs(copy.deepcopy(layer)(*s.args, **s.kwargs))))]
        else:
            fn = eager_fn = _op_batch(cases)
            labels = _labels(cases, _counts(cases, flat))
        cf = torch.compile(fn)
        cf(*flat)
        got = cf(*flat)
        eager_fn(*flat)
        want = eager_fn(*flat)
    assert len(got) == len(want) == len(labels)
    for g, w, label in zip(got, want, labels):
        _compare(entry, g, w, label)
    if isinstance(entry, ModuleInfo):  # state a forward updates (running stats) updated alike
        for (name, b), (_, b2) in zip(layer.named_buffers(), twin.named_buffers()):
            _compare(entry, b, b2, f"{entry.name}: buffer {name}")
    _assert_compiled(cf, entry, "values")


def _leaves(flat):
    """Fresh leaves with the samples' strides; floating ones require grad."""
    out = []
    for t in flat:
        leaf = t.detach()
        if t.dtype.is_floating_point:
            leaf.requires_grad_(True)
        out.append(leaf)
    return out


def check_gradients(entry, cases):
    rng = np.random.default_rng(1)
    flat = _flat_inputs(cases)
    is_module = isinstance(entry, ModuleInfo)
    with torch.no_grad():  # output shapes, for the cotangents
        if is_module:
            outs = _ModuleBatch(_make_layer(entry), cases)(*flat)
        else:
            outs = _op_batch(cases)(*flat)
    cots = [torch.from_numpy(rng.uniform(0.5, 1.5, tuple(o.shape)).astype(
        o.detach().numpy().dtype)) for o in outs if o.dtype.is_floating_point]
    if not cots:
        pytest.skip("no floating outputs")
    if is_module:
        layer = _make_layer(entry)
        twin = copy.deepcopy(layer)
        fn, eager_fn = _ModuleBatch(layer, cases, cots), _ModuleBatch(twin, cases, cots)
        params = [(n, p, q) for (n, p), (_, q) in zip(layer.named_parameters(),
                                                       twin.named_parameters())]
    else:
        batch = _op_batch(cases)
        fn = eager_fn = lambda *xs: _reduce(batch(*xs), cots)  # noqa: E731
        params = []
    eager_in, comp_in = _leaves(flat), _leaves(flat)
    want = eager_fn(*eager_in)
    want.backward()
    cf = torch.compile(fn)
    cf(*comp_in)
    for t in comp_in + [p for _, p, _ in params]:
        t.grad = None
    got = cf(*comp_in)
    got.backward()
    scale = float(sum((o.detach().abs() * c).sum().item() for o, c in
                      zip([o for o in outs if o.dtype.is_floating_point], cots)))
    floats = {o.dtype for o in outs if o.dtype.is_floating_point}
    rtol, _ = _tol(entry, torch.float64 if floats == {torch.float64} else torch.float32)
    np.testing.assert_allclose(got.item(), want.item(), rtol=rtol, atol=rtol * scale,
                               err_msg=f"{entry.name}: value of the reduced output")
    labels = [f"{v}[{s.name}]" for v, _, s in cases for _ in _tensors([s.args, s.kwargs])]
    for a, b, label in zip(comp_in, eager_in, labels):
        if not b.requires_grad:
            continue
        if b.grad is None:  # (zeros instead of None: test_unused_input_gets_no_gradient)
            assert a.grad is None or not a.grad.numpy().any(), \
                f"{label}: compiled gives a gradient, eager none"
            continue
        assert a.grad is not None, f"{label}: no gradient from the compiled backward"
        _compare(entry, a.grad, b.grad, f"grad of input of {label}", grad=True)
    for name, p, q in params:
        if q.grad is None:
            assert p.grad is None or not p.grad.numpy().any(), \
                f"{entry.name}.{name}: compiled gives a gradient, eager none"
            continue
        assert p.grad is not None, f"{entry.name}.{name}: no gradient from the compiled backward"
        _compare(entry, p.grad, q.grad, f"grad of {entry.name}.{name}", grad=True)
    _assert_compiled(cf, entry, "grad")


CHECKS = {"values": check_values, "grad": check_gradients}


def _params():
    out = []
    for name, entry in ENTRIES.items():
        for mode in ("values", "grad"):
            if mode == "grad" and not entry.grad:
                continue
            out.append(pytest.param(name, mode, None, id=f"{name}-{mode}"))
    for (name, mode, v, s), reason in BUGS.items():
        out.append(pytest.param(name, mode, (v, s), id=f"BUG-{name}-{mode}-{v}-{s}",
                                marks=pytest.mark.xfail(strict=True, reason=reason)))
    return out


@pytest.mark.parametrize("name,mode,only", _params())
def test_compiled_matches_eager(name, mode, only):
    entry = ENTRIES[name]
    cases = _cases(entry, mode, only)
    assert cases, f"{name}: no cases (a BUGS key that matches nothing?)"
    CHECKS[mode](entry, cases)

# ----------------------------------------------------------------------------- coverage


# Tensor dunders that are protocol, not tensor operations (or data-dependent conversions)
_PROTOCOL = {"__array__", "__array_priority__", "__bool__", "__class__", "__complex__",
             "__deepcopy__", "__delattr__", "__dict__", "__dir__", "__doc__", "__float__",
             "__format__", "__getattribute__", "__getstate__", "__hash__", "__index__",
             "__init__", "__init_subclass__", "__int__", "__iter__", "__len__", "__module__",
             "__new__", "__reduce__", "__reduce_ex__", "__repr__", "__setattr__", "__sizeof__",
             "__slots__", "__str__", "__subclasshook__", "__weakref__", "__eq__", "__ne__",
             "__lt__", "__le__", "__gt__", "__ge__"} - {"__eq__", "__ne__", "__lt__", "__le__",
                                                       "__gt__", "__ge__"}


def _exported() -> set:
    names = {f"torch.{n}" for n in dir(torch) if not n.startswith("_")}
    names |= {f"Tensor.{n}" for n in dir(torch.Tensor) if not n.startswith("_")}
    names |= {f"Tensor.{n}" for n in dir(torch.Tensor) if n.startswith("__") and n not in
              _PROTOCOL}
    names |= {f"F.{n}" for n in dir(F) if not n.startswith("_") and callable(getattr(F, n))}
    names |= {f"nn.{n}" for n in dir(nn) if inspect.isclass(getattr(nn, n))}
    return names


def _covered() -> set:
    out = set()
    for e in ENTRIES.values():
        out |= {v.split("(")[0] for v in e.variants}
    return out


def test_every_export_is_covered_or_skipped():
    missing = sorted(_exported() - _covered() - set(opinfo.SKIPPED))
    assert not missing, f"exported but neither in tests/opinfo.py nor in its SKIPPED: {missing}"
    stale = sorted(set(opinfo.SKIPPED) - _exported())
    assert not stale, f"SKIPPED names that fusetorch no longer exports: {stale}"


def test_bug_tables_name_real_entries():
    for key in BUGS:
        assert key[0] in ENTRIES and key[1] in CHECKS, key
        assert _cases(ENTRIES[key[0]], key[1], key[2:]), f"{key} matches no case"

# ----------------------------------------------------------------------------- graph breaks


class _Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


GRAPH_BREAKS = {
    "item": lambda x: x * x.sum().item(),
    "tolist": lambda x: torch.tensor(x.tolist()) + x,
    "numpy": lambda x: torch.from_numpy(x.numpy() * 2) + x,
    "equal": lambda x: x * 2 if torch.equal(x, x) else x,
    "bool()": lambda x: x * 2 if x.sum() > 0 else x * 3,
    "float()": lambda x: x * float(x.amax()),
    "custom_function": lambda x: _Double.apply(x) + 1,
}


@pytest.mark.parametrize("name", sorted(GRAPH_BREAKS))
def test_graph_breaking_ops_warn_once_and_match_eager(name):
    fn = GRAPH_BREAKS[name]
    x = torch.tensor([[0.5, -1.0, 2.0], [-0.25, 1.5, -3.0]])
    cf = torch.compile(fn)
    with pytest.warns(UserWarning, match="graph break"):
        got = cf(x)
    np.testing.assert_array_equal(got.numpy(), fn(x).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the eager decision is remembered: no second warning
        np.testing.assert_array_equal(cf(x).numpy(), fn(x).numpy())


# Data-dependent results that may compile (nonzero's shape is read at run time) or break: either
# way a call with other data of the same shape must give eager's answer, not the traced one.
DATA_DEPENDENT = {
    "nonzero": lambda x, y: torch.nonzero(x > y).float().sum(0) + x.sum(),
    "Tensor.nonzero": lambda x, y: (x > y).nonzero() * 2,
    "bool_mask_getitem": lambda x, y: x[x > y] * 2,
    "bool_mask_setitem": lambda x, y: _masked_set(x, x > y),
    "allclose": lambda x, y: x + 1 if torch.allclose(x, y) else x - 1,
    "equal": lambda x, y: x + 1 if torch.equal(x, y) else x - 1,
    "item": lambda x, y: x * (x - y).abs().sum().item(),
    "bool()": lambda x, y: x * 2 if (x > y).any() else x * 3,
}


def _masked_set(x, mask):
    y = x.clone()
    y[mask] = 0.0
    return y


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_ops_follow_the_data(name):
    fn = DATA_DEPENDENT[name]
    x = torch.tensor([[0.5, -1.0, 2.0], [-0.25, 1.5, -3.0]])
    cf = torch.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for y in (x.clone(), torch.zeros(2, 3), torch.full((2, 3), 5.0), x.clone()):
            got, want = cf(x, y), fn(x, y)
            assert got.shape == want.shape and got.dtype == want.dtype, name
            np.testing.assert_array_equal(got.numpy(), want.numpy())
