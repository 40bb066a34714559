"""Every op and layer in the OpInfo registry (tests/opinfo.py), compiled against eager: values
(dtype, shape, numbers) and gradients of a scalar reduction w.r.t. every floating input and
every parameter, plus the buffers a forward updates.

Cases (an entry's variant on one sample) are batched: consecutive entries' cases run in ONE
traced function that returns every output (or, for gradients, sum_i <out_i, cot_i> with fixed
random cotangents), because each compiled program is one C module whose build (~0.1-0.4 s) is
what these tests cost. Failure messages name the case (`variant[sample]`). The compiled function
is called twice: the first call traces and builds, the second runs the compiled program on
other data of the same layouts, which is compared with eager on that data.

Known failures are strict xfails in BUGS, each (variant, sample) pattern run on its own and left
out of the batches; calls that fall back to eager for an op that is not data-dependent are
there too (the tests assert a compiled program ran). Strict: a fixed bug shows up as an
unexpected pass, and its key has to leave the table.
"""
from __future__ import annotations

import copy
import inspect
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import opinfo
import opinfo_nn
from fusetorch.tracer.trace import trace
from opinfo import F64_ATOL, F64_RTOL, ModuleInfo, rebuild, tensors_in

# kl_div(reduction='mean') warns as PyTorch does; BUGS cases that graph-break warn
pytestmark = [pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning"),
              pytest.mark.filterwarnings("ignore:fusetorch.compile. graph break:UserWarning")]

_ALL = opinfo.OPS + opinfo_nn.OPS + opinfo_nn.MODULES
ENTRIES = {e.name: e for e in _ALL}
assert len(ENTRIES) == len(_ALL), "entry names must be unique"


# The kernels load from the user's kernel cache, as compiled code does (these tests check
# values and traces, never builds): a private cache per session compiled every batch's C
# again on every run (the grad batch of ParameterDict..SoftMarginLoss: 18.5 s of CPU cold,
# 11.4 s warm).


# Known failures, each run on its own as a strict xfail: (entry, mode 'values' | 'grad',
# variant or '*', sample or '*') -> reason. Reasons start with what is wrong: "compile:" a
# compiler bug (wrong or crashing compiled call), "fallback:" compile runs the call eagerly
# though it need not, "eager:" a bug in eager fusetorch that breaks the reference itself.
BUGS: dict = {}  # all found so far are fixed (see git log of this file)

# ----------------------------------------------------------------------------- plumbing


@dataclass
class Case:
    entry: Any            # OpInfo or ModuleInfo
    variant: str
    fn: Any               # the op (None for a layer: the batch calls its layer)
    sample: opinfo.Sample

    @property
    def label(self) -> str:
        return f"{self.variant}[{self.sample.name}]"


def _cases(entry, mode: str, only=None) -> list:
    """The entry's (variant, sample) cases; `only` = a (variant, sample) pattern to keep, else
    every pair not claimed by a BUGS key for this entry and mode."""
    bugs = [(v, s) for (e, md, v, s) in BUGS if e == entry.name and md == mode]
    match = lambda pat, v, s: pat[0] in ("*", v) and pat[1] in ("*", s)  # noqa: E731
    out = []
    for vname, fn in entry.variants.items():
        # fresh samples per variant (the same data): one tensor passed as two arguments is a
        # case of its own (test_same_tensor_as_two_arguments)
        for s in entry.make_samples(widen=False):
            if not s.inplace and opinfo.is_inplace(vname):
                continue
            if mode == "grad" and not isinstance(entry, ModuleInfo) and not any(
                    t.dtype.is_floating_point for t in tensors_in([s.args, s.kwargs])):
                continue
            if (match(only, vname, s.name) if only is not None
                    else not any(match(b, vname, s.name) for b in bugs)):
                out.append(Case(entry, vname, fn, s))
    if only is not None:
        return out
    key = (entry.name, mode)
    if key not in _KEPT:
        _KEPT[key] = {c.variant for c in _distinct(out)}
    return [c for c in out if c.variant in _KEPT[key]]


_KEPT: dict = {}  # (entry, mode) -> the variants _distinct keeps


def _distinct(cases) -> list:
    """Cases of the variants whose traced graphs differ: spellings that trace to the same graph
    on every sample (torch.abs, Tensor.abs, __abs__) compile to the same program, so one of
    them is compiled for all (builds are the cost of these tests)."""
    seen, keep, by_variant = set(), [], {}
    for c in cases:
        by_variant.setdefault(c.variant, []).append(c)
    for variant, cs in by_variant.items():
        if cs[0].fn is None:  # a layer
            keep += cs
            continue
        sig = tuple(_graph_hash(c) for c in cs)
        if sig not in seen:
            seen.add(sig)
            keep += cs
    return keep


def _graph_hash(c: Case):
    ts = tensors_in([c.sample.args, c.sample.kwargs])
    try:
        with torch.no_grad(), trace(*ts) as rec, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = c.fn(*rebuild(c.sample.args, iter(ts)), **rebuild(c.sample.kwargs, iter(ts)))
        return rec.graph(*_outputs(out)).structural_hash()
    except Exception:
        return id(c)


def _flat_inputs(cases) -> list:
    return [t for c in cases for t in tensors_in([c.sample.args, c.sample.kwargs])]


def _outputs(r) -> list:
    return [r] if isinstance(r, torch.Tensor) else [t for v in r for t in _outputs(v)]


class _Batch(nn.Module):
    """Every case in one call: ops are called, layers (one per ModuleInfo, made once) run on
    their samples; returns every output, or with `cots` the scalar sum_i <out_i, cot_i>."""

    def __init__(self, cases, cots=None):
        super().__init__()
        self._cases, self._cots = cases, cots
        self.layers = nn.ModuleDict()
        for c in cases:
            if isinstance(c.entry, ModuleInfo) and c.entry.name not in self.layers:
                torch.manual_seed(0)
                layer = c.entry.make()
                self.layers[c.entry.name.replace(".", "_")] = layer.train(c.entry.train)

    def forward(self, *flat):
        it, outs = iter(flat), []
        for c in self._cases:
            args, kwargs = rebuild(c.sample.args, it), rebuild(c.sample.kwargs, it)
            fn = self.layers[c.entry.name.replace(".", "_")] if c.fn is None else c.fn
            outs.extend(_outputs(fn(*args, **kwargs)))
        return tuple(outs) if self._cots is None else _reduce(outs, self._cots)


def _callable(batch: _Batch):
    """What gets compiled: the batch module when it holds layers, else a plain function."""
    return batch if len(batch.layers) else (lambda *flat: batch(*flat))


def _reduce(outs, cots):
    """sum_i <out_i, cot_i> over the floating outputs: the scalar whose gradient we compare."""
    total = None
    for o, c in zip([o for o in outs if o.dtype.is_floating_point], cots):
        term = (o * c).sum()
        total = term if total is None else total + term.to(total.dtype)
    return total


def _output_cases(cases, flat) -> list:
    """The case each output comes from (from one eager run on copies)."""
    it, owners = iter(flat), []
    probe = copy.deepcopy(_Batch(cases))
    for c in cases:
        fn = probe.layers[c.entry.name.replace(".", "_")] if c.fn is None else c.fn
        n = len(_outputs(fn(*rebuild(c.sample.args, it), **rebuild(c.sample.kwargs, it))))
        owners += [c] * n
    return owners


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


def _compile(fn):
    """torch.compile(fn), counting its traces: the second call must run the compiled program,
    not trace again (a retrace returns eager's values and would make these tests vacuous)."""
    cf = torch.compile(fn)
    trace_and_build = cf._compile
    cf.traces = 0

    def counted(*a, **k):
        cf.traces += 1
        return trace_and_build(*a, **k)
    cf._compile = counted
    return cf


def _assert_compiled(cf, mode):
    assert cf.traces == 1, f"the second call traced again instead of running compiled ({mode})"
    assert cf.graph() != "", f"compile fell back to eager ({mode})"  # '' when none ran


def _refill(tensors, new) -> None:
    """Other values into the same tensors (same objects, same layouts)."""
    with torch.no_grad():
        for a, b in zip(tensors, new):
            a.copy_(b)


_BUFFERS = opinfo.OpInfo("buffers", {}, None)  # default tolerances


def _compare_state(batch, twin):
    """State a forward updates (running stats) must be updated alike."""
    for (name, b), (_, b2) in zip(batch.named_buffers(), twin.named_buffers()):
        _compare(_BUFFERS, b, b2, f"buffer {name}")

# ----------------------------------------------------------------------------- the checks


def _other_data(cases) -> list:
    """The cases' input tensors again, same layouts, other values: the compiled call must
    compute from its inputs, not repeat what it saw when tracing."""
    out = []
    for c in cases:
        (s,) = [s for s in c.entry.make_samples(seed=1, widen=c.sample.widened)
                if s.name == c.sample.name]
        out += tensors_in([s.args, s.kwargs])
    for a, b in zip(_flat_inputs(cases), out):
        assert a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype
    return out


def check_values(cases):
    flat, flat2 = _flat_inputs(cases), _other_data(cases)
    with torch.no_grad():
        owners = _output_cases(cases, flat2)
        batch = _Batch(cases)
        twin = copy.deepcopy(batch)
        cf = _compile(_callable(batch))
        cf(*flat)
        twin(*flat)
        _refill(flat, flat2)
        got = cf(*flat)
        want = twin(*flat2)
    assert len(got) == len(want) == len(owners)
    for k, (g, w, c) in enumerate(zip(got, want, owners)):
        _compare(c.entry, g, w, f"{c.label} output {owners[:k].count(c)}")
    _compare_state(batch, twin)
    _assert_compiled(cf, "values")


def _leaves(flat, wants):
    """Fresh leaves with the samples' strides; those `wants` marks require grad."""
    out = []
    for t, w in zip(flat, wants):
        leaf = t.detach()
        if w:
            leaf.requires_grad_(True)
        out.append(leaf)
    return out


def _wants(cases, first_only: bool) -> list:
    """Which inputs require grad: every floating one, or each case's first floating one."""
    out = []
    for c in cases:
        floats = [t.dtype.is_floating_point for t in tensors_in([c.sample.args, c.sample.kwargs])]
        if first_only:
            floats = [f and not any(floats[:k]) for k, f in enumerate(floats)]
        out += floats
    return out


def _compare_grads(pairs):
    for a, b, entry, label in pairs:
        if b is None:
            assert a is None, f"{label}: compiled gives a gradient, eager none"
            continue
        assert a is not None, f"{label}: no gradient from the compiled backward"
        _compare(entry, a, b, label, grad=True)


def check_gradients(cases, first_only=False):
    rng = np.random.default_rng(1)
    flat, flat2 = _flat_inputs(cases), _other_data(cases)
    with torch.no_grad():  # output shapes, for the cotangents
        outs = [o for o in copy.deepcopy(_Batch(cases))(*flat2) if o.dtype.is_floating_point]
        outs1 = [o for o in copy.deepcopy(_Batch(cases))(*flat) if o.dtype.is_floating_point]
    if not outs:
        pytest.skip("no floating outputs")
    if [o.shape for o in outs] != [o.shape for o in outs1]:
        flat = [t.clone() for t in flat2]  # shapes that depend on the data (x[x > 0])
    cots = [torch.from_numpy(rng.uniform(0.5, 1.5, tuple(o.shape)).astype(
        o.numpy().dtype)) for o in outs]
    batch = _Batch(cases, cots)
    twin = copy.deepcopy(batch)
    wants = _wants(cases, first_only)
    eager_in, comp_in = _leaves(flat2, wants), _leaves(flat, wants)
    want = twin(*eager_in)
    want.backward()
    cf = _compile(_callable(batch))
    cf(*comp_in)
    _refill(comp_in, flat2)
    for p in batch.parameters():
        p.grad = None
    got = cf(*comp_in)
    got.backward()
    scale = float(sum((o.abs() * c).sum().item() for o, c in zip(outs, cots)))
    f32 = any(o.dtype != torch.float64 for o in outs)
    rtol = max(c.entry.rtol for c in cases) if f32 else F64_RTOL
    np.testing.assert_allclose(got.item(), want.item(), rtol=rtol, atol=rtol * scale,
                               err_msg="value of the reduced output")
    owners = [c for c in cases for _ in tensors_in([c.sample.args, c.sample.kwargs])]
    _compare_grads((a.grad, b.grad, c.entry, f"grad of an input of {c.label}")
                   for a, b, c in zip(comp_in, eager_in, owners) if b.requires_grad)
    entry_of = {c.entry.name.replace(".", "_"): c.entry for c in cases}
    _compare_grads((p.grad, q.grad, entry_of[n.split(".")[1]], f"grad of {n}")
                   for (n, p), (_, q) in zip(batch.named_parameters(), twin.named_parameters()))
    _assert_compiled(cf, "grad")


CHECKS = {"values": check_values, "grad": check_gradients}
MAX_CASES = 150  # cases per compiled batch: one C module per batch, its build is the cost


def _groups(mode):
    """Consecutive entries (ops apart from layers) batched up to MAX_CASES cases."""
    entries = [e for e in ENTRIES.values() if mode != "grad" or e.grad]
    return opinfo.batches(entries, lambda e: len(_cases(e, mode)), MAX_CASES)


def _params():
    out = []
    for mode in CHECKS:
        for g in _groups(mode):
            names = tuple(e.name for e in g)
            ident = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
            out.append(pytest.param(mode, names, None, id=f"{mode}-{ident}"))
    for (name, mode, v, s), reason in BUGS.items():
        out.append(pytest.param(mode, (name,), (v, s), id=f"BUG-{mode}-{name}-{v}-{s}",
                                marks=pytest.mark.xfail(strict=True, reason=reason)))
    return out


@pytest.mark.parametrize("mode,names,only", _params())
def test_compiled_matches_eager(mode, names, only):
    cases = [c for n in names for c in _cases(ENTRIES[n], mode, only)]
    assert cases, f"{names}: no cases (a BUGS key that matches nothing?)"
    CHECKS[mode](cases)

# ----------------------------------------------------------------------------- widened samples
# The registry's derived samples (tests/opinfo.py, "widened samples") of the kinds whose
# programs are small (0-d, zero-size), compiled against eager for each entry's first variant:
# one batch per kind, values only (tests/test_opinfo_widened.py checks their gradients
# against finite differences). Known failures: WIDE_BUGS, (entry, sample) -> reason, each run
# on its own as a strict xfail.

WIDE_COMPILED = ("wide_0d_all", "wide_zero_size", "wide_zero_size_last")
WIDE_BUGS: dict = {}


def _wide_cases(kinds, only=None) -> list:
    out = []
    for entry in ENTRIES.values():
        vname, fn = next(iter(entry.variants.items()))
        for s in entry.make_samples():
            if s.name not in kinds or (only is None and (entry.name, s.name) in WIDE_BUGS):
                continue
            if only is not None and (entry.name, s.name) != only:
                continue
            out.append(Case(entry, vname, fn, s))
    return out


def _wide_params():
    out = [pytest.param(("wide_0d_all",), None, id="0d"),
           pytest.param(("wide_zero_size", "wide_zero_size_last"), None, id="zero_size")]
    for (name, sample), reason in WIDE_BUGS.items():
        out.append(pytest.param((sample,), (name, sample), id=f"BUG-{name}-{sample}",
                                marks=pytest.mark.xfail(strict=True, reason=reason)))
    return out


@pytest.mark.parametrize("kinds,only", _wide_params())
def test_compiled_matches_eager_on_widened_samples(kinds, only):
    cases = _wide_cases(kinds, only)
    assert cases
    check_values(cases)

# ----------------------------------------------------------------------------- single cases


SOME_GRAD = ["add", "mul", "div", "pow", "where", "clamp", "lerp", "addcdiv", "matmul",
             "gather", "scatter_add", "cat", "F.linear", "F.conv2d", "F.layer_norm",
             "F.cross_entropy(mean)", "F.pointwise_losses(mean)"]


def test_gradients_when_only_some_inputs_require_grad():
    # each case's first floating input alone requires grad: backward programs for a subset of
    # the inputs (the batches above differentiate w.r.t. all of them)
    check_gradients([c for n in SOME_GRAD for c in _cases(ENTRIES[n], "grad")],
                    first_only=True)


MUTATIONS = {
    "add_": lambda x: x.add_(1) * 2,
    "setitem": lambda x: x.__setitem__((0, 1), 5.0) or x * 1,
    "clamp_": lambda x: x.clamp_(-0.5, 0.5) + 0,
    "view_mul_": lambda x: x[1:].mul_(2).sum(),
    "transpose_add_": lambda x: x.t().add_(1) * 1,
    "view_of_view_then_base": lambda x: x[1:][:, 0].add_(x[0, :2]) * x.sum(),
    "view_read_after_base_write": lambda x: (lambda r: (x.mul_(3), r * 1)[1])(x[0]),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_inputs_mutated_in_place_end_up_as_in_eager(name):
    fn = MUTATIONS[name]
    a = torch.randn(3, 3)
    b = a.clone()
    cf = _compile(fn)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):  # the input's new value feeds the next call
            got, want = cf(a), fn(b)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    # writes through views are followed to their base (and views of a written base see it):
    # no graph break
    assert not [m for m in w if "graph break" in str(m.message)]
    _assert_compiled(cf, name)


def test_same_tensor_as_two_arguments():
    x, y = torch.randn(4), torch.randn(3)
    fn = lambda a, b, c: (a + b) * c.sum()  # noqa: E731
    cf = torch.compile(fn)
    cf(x, x, y)
    np.testing.assert_allclose(cf(x, x, y).numpy(), fn(x, x, y).numpy(), rtol=1e-6)


def test_no_grad_region_inside_a_compiled_function():
    def fn(t):
        with torch.no_grad():
            c = t * 1
        return (t * c).sum()

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    cf = torch.compile(fn)
    cf(x)
    cf(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])  # eager's (and PyTorch's)


def test_unused_input_gets_no_gradient():
    a, b = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    cf = torch.compile(lambda u, v: (u * 2).sum())
    cf(a, b)
    cf(a, b).backward()
    assert a.grad is not None and b.grad is None

def _lstm():
    torch.manual_seed(0)
    return nn.LSTM(3, 5, batch_first=True)


def test_new_input_tensors_of_the_same_layout_reuse_the_program():
    cf = _compile(lambda t: (t * 2).exp())
    for _ in range(4):
        x = torch.randn(8)
        np.testing.assert_allclose(cf(x).numpy(), (x * 2).exp().numpy(), rtol=1e-6)
    assert cf.traces == 1


def test_log_softmax_backward_over_a_strided_dim_is_as_accurate_as_eager():
    rng = np.random.default_rng(0)
    x = opinfo.make(rng, (257, 300), layout="t")
    cot = torch.from_numpy(rng.uniform(0.5, 1.5, (257, 300)).astype(np.float32))

    def grad(fn, t, c):
        t = t.detach().requires_grad_()
        fn(t, c).backward()
        return t.grad.numpy().astype(np.float64)

    fn = lambda t, c: (t.log_softmax(0) * c).sum()  # noqa: E731
    cf = torch.compile(fn)
    grad(cf, x, cot)
    exact = grad(fn, x.double(), cot.double())
    eager_err = np.abs(grad(fn, x, cot) - exact).max()
    compiled_err = np.abs(grad(cf, x, cot) - exact).max()
    assert compiled_err <= 4 * eager_err + 1e-6, (compiled_err, eager_err)


# calls returned whole (not through the batch's flat tuple): nested and several outputs
WHOLE_OUTPUTS = {
    "nested_outputs_no_grad": (_lstm, False),  # nn.LSTM's (out, (h, c))
    "nested_outputs_grad": (_lstm, True),
    "max_dim_grad": (lambda: lambda t: t.max(1), True),  # values and int indices
    "split_grad": (lambda: lambda t: t.split(2, 1), True),
}


@pytest.mark.parametrize("name", sorted(WHOLE_OUTPUTS))
def test_structured_outputs_compile(name):
    make_fn, grad = WHOLE_OUTPUTS[name]
    fn = make_fn()
    x = torch.randn(2, 4, 3, requires_grad=grad)
    cf = _compile(fn)
    with torch.set_grad_enabled(grad):
        cf(x)
        got, want = _outputs(cf(x)), _outputs(fn(x))
    for g, w in zip(got, want):
        _compare(_BUFFERS, g, w, name)
    _assert_compiled(cf, name)

# ----------------------------------------------------------------------------- coverage


# Tensor dunders that are protocol, not tensor operations (or data-dependent conversions)
_PROTOCOL = {"__array__", "__array_priority__", "__bool__", "__class__", "__complex__",
             "__deepcopy__", "__delattr__", "__dict__", "__dir__", "__doc__", "__float__",
             "__format__", "__getattr__", "__getattribute__", "__getstate__", "__hash__",
             "__index__",
             "__init__", "__init_subclass__", "__int__", "__iter__", "__len__", "__module__",
             "__contains__", "__reversed__",
             "__new__", "__reduce__", "__reduce_ex__", "__repr__", "__setattr__", "__sizeof__",
             "__slots__", "__str__", "__subclasshook__", "__weakref__", "__eq__", "__ne__",
             "__lt__", "__le__", "__gt__", "__ge__"} - {"__eq__", "__ne__", "__lt__", "__le__",
                                                       "__gt__", "__ge__"}


from fusetorch.tracer.tensor import _OutOfScope  # noqa: E402  (names that only say "out of scope")


def _exported() -> set:
    names = {f"torch.{n}" for n in dir(torch) if not n.startswith("_")}
    names |= {f"Tensor.{n}" for n in dir(torch.Tensor) if not n.startswith("_")
              and not isinstance(inspect.getattr_static(torch.Tensor, n), _OutOfScope)}
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
    "nonzero": lambda x: torch.nonzero(x > 0).float().sum(0) + x.sum(),
    "bool_mask_getitem": lambda x: x[x > 0] * 2,
    "allclose": lambda x: x + 1 if torch.allclose(x, x * 1.0) else x,
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
    y = torch.empty(2, 3)
    cf = torch.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the same tensor objects with new values (new objects may be traced afresh)
        for values in (x, torch.zeros(2, 3), torch.full((2, 3), 5.0), x):
            y.copy_(values)
            got, want = cf(x, y), fn(x, y)
            assert got.shape == want.shape and got.dtype == want.dtype, name
            np.testing.assert_array_equal(got.numpy(), want.numpy())
