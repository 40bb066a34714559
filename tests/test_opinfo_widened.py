"""The samples the OpInfo registry derives from each entry's first sample (tests/opinfo.py,
"widened samples": zero-size, 0-d, non-contiguous, repeated indices), checked eagerly:

- a non-contiguous copy gives the values of the contiguous sample it was copied from;
- gradients on the zero-size, 0-d and repeated-index samples match central finite
  differences in float64 (gradcheck), where the inputs are small;
- a derived sample eager refuses is refused with a proper error, not a crash from inside
  (an AssertionError, ZeroDivisionError, or Python's "tuple index out of range").

Known failures are strict xfails (KNOWN), so a fix shows up as an unexpected pass."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import fusetorch as torch
import opinfo
import opinfo_nn
from opinfo import ModuleInfo, rebuild, tensors_in

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

_ALL = opinfo.OPS + opinfo_nn.OPS + opinfo_nn.MODULES
ENTRIES = {e.name: e for e in _ALL}
SAMPLES = {e.name: e.make_samples() for e in _ALL}
GRAD_KINDS = ("wide_zero_size", "wide_zero_size_last", "wide_0d_all", "wide_repeated_index")
MAX_GRAD_ELEMENTS = 64  # finite differences cost two calls per element: small inputs only

# (check, entry or case) -> what is wrong; strict xfails
KNOWN: dict = {}
# entries gradcheck cannot judge, with the reason
GRADCHECK_SKIP = {"detach": "x.detach() stops the gradient on purpose; finite differences see "
                            "through it",
                  **dict.fromkeys(("CTCLoss", "F.ctc_loss(mean)", "F.ctc_loss(sum)",
                                   "F.ctc_loss(none)", "torch.ctc_loss"),
                                  "PyTorch's CTC gradient adds exp(log_probs) to the derivative "
                                  "(tests/nn/test_losses_more.py checks it against finite "
                                  "differences plus that term)")}
_NO_DIMS = ("wrong message: Python's 'tuple index out of range' where PyTorch says "
            "'Dimension specified as ... but tensor has no dimensions' (or 'Dimension out of "
            "range')")
# derived samples eager refuses with a crash from inside rather than PyTorch's error:
# (entry, sample) -> what is wrong (found by these samples; not fixed yet)
KNOWN_BAD_REFUSALS: dict = {("Unflatten", "wide_0d_all"): _NO_DIMS}
# Python's own IndexError where PyTorch raises it too (its Python code reads input.size(1))
AS_PYTORCH = {("F.batch_norm", "wide_0d_all")}
# AssertionErrors PyTorch itself raises (multi_head_attention_forward's shape checks)
PYTORCH_ASSERTS = ("was expecting embedding dimension of", "query should be unbatched 2D or "
                   "batched 3D tensor", "Expected key_padded_mask.shape[0]",
                   "A must be square, got shape")  # (torch.lobpcg's check)


def _first(entry):
    return next(s for s in SAMPLES[entry.name] if not s.widened and
                tensors_in([s.args, s.kwargs]))


def _fn(entry):
    if isinstance(entry, ModuleInfo):
        torch.manual_seed(0)
        return entry.make().train(entry.train)
    return next(iter(entry.variants.values()))


def _outputs(r) -> list:
    if isinstance(r, torch.Tensor):
        return [r]
    if isinstance(r, (list, tuple)):
        return [t for v in r for t in _outputs(v)]
    return []


def _run(fn, sample):
    args, kwargs = copy.deepcopy(sample.args), copy.deepcopy(sample.kwargs)
    torch.manual_seed(0)  # random ops draw the same numbers for both samples
    with torch.no_grad():
        return _outputs(fn(*args, **kwargs))


def _param(check, name):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[(check, name)])] \
        if (check, name) in KNOWN else []
    return pytest.param(name, id=name, marks=marks)


NONCONTIG = [n for n, ss in SAMPLES.items() if any(s.name == "wide_noncontig" for s in ss)]


@pytest.mark.parametrize("name", [_param("noncontig", n) for n in NONCONTIG])
def test_noncontiguous_input_gives_the_contiguous_values(name):
    entry = ENTRIES[name]
    (nc,) = [s for s in SAMPLES[name] if s.name == "wide_noncontig"]
    assert not all(t.is_contiguous() for t in tensors_in([nc.args, nc.kwargs]) if t.numel() > 1)
    fn = _fn(entry)
    want = _run(fn, _first(entry))
    got = _run(_fn(entry) if isinstance(entry, ModuleInfo) else fn, nc)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.dtype, tuple(g.shape)) == (w.dtype, tuple(w.shape))
        if g.dtype.is_floating_point:
            tol = (1e-9, 1e-12) if g.dtype == torch.float64 else (entry.rtol, entry.atol)
            np.testing.assert_allclose(g.float().numpy() if g.dtype != torch.float64 else
                                       g.numpy(), w.float().numpy() if w.dtype != torch.float64
                                       else w.numpy(), rtol=tol[0], atol=tol[1])
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def _grad_cases():
    out = []
    for name, ss in SAMPLES.items():
        entry = ENTRIES[name]
        if not entry.grad or name in GRADCHECK_SKIP:
            continue
        for s in ss:
            if s.name not in GRAD_KINDS:
                continue
            floats = [t for t in tensors_in([s.args, s.kwargs]) if t.dtype.is_floating_point]
            if floats and sum(t.numel() for t in floats) <= MAX_GRAD_ELEMENTS:
                out.append(f"{name}[{s.name}]")
    return out


@pytest.mark.parametrize("case", [_param("grad", c) for c in _grad_cases()])
def test_gradients_of_derived_samples_match_finite_differences(case):
    name, sname = case[:-1].split("[")
    entry = ENTRIES[name]
    (s,) = [x for x in SAMPLES[name] if x.name == sname]
    ts = tensors_in([s.args, s.kwargs])
    fn = _fn(entry)
    if isinstance(entry, ModuleInfo):
        fn = fn.double()
    cast = [t.detach().double().requires_grad_() if t.dtype.is_floating_point else t
            for t in ts]
    diff = [t for t in cast if t.dtype == torch.float64]

    def f(*floats):
        it = iter(floats)
        full = [next(it) if t.dtype == torch.float64 else t for t in cast]
        it2 = iter(full)
        torch.manual_seed(0)
        outs = _outputs(fn(*rebuild(s.args, it2), **rebuild(s.kwargs, it2)))
        return tuple(o for o in outs if o.dtype.is_floating_point)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = f(*diff)
        if not any(o.requires_grad for o in outs):
            pytest.skip("no differentiable output")
        assert torch.autograd.gradcheck(f, tuple(diff), atol=1e-6, rtol=1e-4)


_CRASHES = ("AssertionError", "ZeroDivisionError", "AttributeError", "KeyError", "UnboundLocal")


def _bad(err: str) -> bool:
    if err.startswith("AssertionError") and any(a in err for a in PYTORCH_ASSERTS):
        return False
    return err.startswith(_CRASHES) or "tuple index out of range" in err or \
        "list index out of range" in err


def test_refused_derived_samples_are_refused_with_proper_errors():
    bad = {k: v for k, v in opinfo.REFUSED.items() if _bad(v) and k not in AS_PYTORCH}
    assert set(bad) == set(KNOWN_BAD_REFUSALS), {k: v for k, v in bad.items()
                                                 if k not in KNOWN_BAD_REFUSALS}


def test_every_entry_has_derived_samples_or_says_why():
    kinds = {n: {s.name for s in ss if s.widened} for n, ss in SAMPLES.items()}
    none = sorted(n for n, k in kinds.items() if not k and n not in
                  {e for e, _ in opinfo.WIDEN_SKIP})
    assert none == [], none
