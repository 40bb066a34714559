"""Every op and layer of the OpInfo registry (tests/opinfo.py, tests/opinfo_nn.py) exported to
ONNX and run by onnxruntime against fusetorch's eager values.

Cases (an entry's first variant on each of its samples) are batched: one traced function
returns every output of a chunk of entries, so each chunk is one export, one onnx.checker run
and one onnxruntime session. A failing chunk is re-run entry by entry so the message names the
entry. Single operators (layers that are primitives, ops.WHOLE) are on in one run and off in
another, so both the single-operator forms (Gemm, Conv, LSTM, MaxPool, Softmax, ...)
and the primitive-by-primitive forms (the layers' compositions) are checked.

KNOWN lists the cases that cannot run, each with its reason: primitives ONNX cannot express (the
export must raise UnsupportedOperatorError naming them) and float64 operators onnxruntime has
no kernel for (the export must still pass onnx.checker).
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fusetorch as torch  # noqa: E402
import fusetorch.nn as nn  # noqa: E402
import opinfo  # noqa: E402
import opinfo_nn  # noqa: E402
from fusetorch.onnx import TrainingMode, UnsupportedOperatorError  # noqa: E402
from fusetorch.onnx import ops as onnx_ops  # noqa: E402
from opinfo import ModuleInfo, rebuild, tensors_in  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_ALL = opinfo.OPS + opinfo_nn.OPS + opinfo_nn.MODULES
_NO_F64 = "onnxruntime has no float64 kernel for this operator (the export passes onnx.checker)"
# (entry, sample) -> 'unsupported:<primitive>' | _NO_F64
KNOWN = {
    ("linalg_square", "*"): "unsupported:linalg_inv",
    ("linalg_spd", "*"): "unsupported:linalg_cholesky",
    # issue 27's factorizations (tests/opinfo_linalg_factor.py)
    **{(e, "*"): f"unsupported:{p}" for e, p in (
        ("linalg_lu", "linalg_lu_factor"), ("linalg_lu(rectangular)", "linalg_lu_factor"),
        ("linalg_lu(integers)", "linalg_lu_pivots"),
        ("triangular_solve", "linalg_solve_triangular"),
        ("cholesky_solve", "linalg_solve_triangular"), ("matrix_exp", "linalg_matrix_exp"),
        ("linalg.lstsq", "linalg_lstsq_solution"),
        ("linalg.lstsq(wide)", "linalg_lstsq_solution"),
        ("linalg.lstsq(integers)", "linalg_lstsq_rank"), ("linalg_ldl_geqrf", "linalg_ldl_factor_ld"),
        ("lowrank", "linalg_qr_q"), ("lobpcg", "linalg_eigh_values"))},
    **{(e, s): _NO_F64 for e in ("erf", "erfinv", "tan", "asin", "acos", "atan", "sinh", "cosh",
                                 "asinh", "acosh", "atanh", "atan2", "F.gelu")
       for s in ("f64", "f64_perm", "f64_1d", "promote")},
    ("F.conv_transpose2d", "groups_dil_f64"): _NO_F64,  # Col2Im
    ("F.conv_transpose1d", "stride_f64"): _NO_F64,
    ("F.conv_transpose3d", "stride_pad_outpad_groups_f64"): _NO_F64,
    ("F.fold", "tiling_f64"): _NO_F64,
    ("lgamma", "*"): "unsupported:lgamma",
    ("digamma", "*"): "unsupported:digamma",
    ("polygamma", "*"): "unsupported:polygamma",
    ("mvlgamma", "*"): "unsupported:lgamma",
    # issue 27's primitives without an ONNX form (fusetorch/onnx/ops.py UNSUPPORTED)
    **{(e, "*"): f"unsupported:{p}" for e, p in (
        ("erfc", "erfc"), ("float_of_int", "erfc"), ("i0", "i0"), ("copysign", "copysign"),
        ("nextafter", "nextafter"), ("gcd", "gcd"), ("lcm", "lcm"), ("special_i", "i0e"),
        ("special_no_grad", "airy_ai"), ("special_binary", "zeta"), ("igamma_grad", "igamma"),
        ("frexp", "frexp_mantissa"), ("special_polynomials", "chebyshev_polynomial_t"))},
}
KNOWN.update({k: _NO_F64 if v == "no_f64" else v  # the names work's entries (issue 27)
              for k, v in __import__("opinfo_names").ONNX_KNOWN.items()})
CHUNK = 40


def _known(entry, sample):
    return KNOWN.get((entry.name, sample.name), KNOWN.get((entry.name, "*")))


class _Batch(nn.Module):
    """Every case in one call: returns the flat list of every case's outputs."""

    def __init__(self, cases):
        super().__init__()
        self.cases = cases
        self.layers = nn.ModuleDict()
        for entry, _, _ in cases:
            key = entry.name.replace(".", "_").replace("/", "_")
            if isinstance(entry, ModuleInfo) and key not in self.layers:
                torch.manual_seed(0)
                self.layers[key] = entry.make().train(entry.train)

    def run(self, *flat, owners=None):
        it, outs = iter(flat), []
        for entry, fn, s in self.cases:
            args, kwargs = rebuild(s.args, it), rebuild(s.kwargs, it)
            if fn is None:
                fn = self.layers[entry.name.replace(".", "_").replace("/", "_")]
            r = tensors_in(fn(*args, **kwargs))
            outs += r
            if owners is not None:
                owners += [(entry, s)] * len(r)
        return outs

    def forward(self, *flat):
        return tuple(self.run(*flat))


def _cases(entries) -> list:
    out = []
    for e in entries:
        vname, fn = next(iter(e.variants.items()))
        for s in e.make_samples(widen=False):
            if _known(e, s) is None:
                out.append((e, fn, s))
    return out


def _export_and_run(cases):
    batch = _Batch(cases)
    flat = [t for _, _, s in cases for t in tensors_in([s.args, s.kwargs])]
    owners: list = []
    with torch.no_grad():
        want = batch.run(*flat, owners=owners)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(batch, tuple(flat), buf, training=TrainingMode.PRESERVE)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model, full_check=True)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(sess.get_inputs(), flat)}
    return sess.run(None, feeds), want, owners


def _check(cases) -> list[str]:
    """Failures, as 'entry[sample]: what'."""
    try:
        got, want, owners = _export_and_run(cases)
    except Exception as e:
        if len({id(c[0]) for c in cases}) > 1:  # find the entries that fail on their own
            fails = []
            for e_ in {id(c[0]): c[0] for c in cases}.values():
                fails += _check([c for c in cases if c[0] is e_])
            return fails or [f"batch: {type(e).__name__}: {e}"]
        return [f"{cases[0][0].name}: {type(e).__name__}: {str(e)[:400]}"]
    fails = []
    for g, w, (entry, s) in zip(got, want, owners):
        label = f"{entry.name}[{s.name}]"
        w = w.numpy()
        if g.dtype != w.dtype or g.shape != w.shape:
            fails.append(f"{label}: {g.dtype}{list(g.shape)} != eager {w.dtype}{list(w.shape)}")
            continue
        if w.dtype.kind == "f":
            rtol, atol = ((opinfo.F64_RTOL, opinfo.F64_ATOL) if w.dtype == np.float64
                          else (entry.rtol, entry.atol))
            # onnxruntime's kernels (vectorised exp, erf, tanh, matmul) round differently
            rtol, atol = rtol * 20, atol * 20
            if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
                err = np.nanmax(np.abs(g.astype(np.float64) - w))
                fails.append(f"{label}: max abs difference {err}")
        elif not np.array_equal(g, w):
            fails.append(f"{label}: {g.ravel()[:8]} != eager {w.ravel()[:8]}")
    return fails


_CHUNKS = [_ALL[i:i + CHUNK] for i in range(0, len(_ALL), CHUNK)]


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "primitives"])
@pytest.mark.parametrize("chunk", range(len(_CHUNKS)))
def test_registry_exports_and_runs(chunk, whole, monkeypatch):
    if not whole:
        monkeypatch.setattr(onnx_ops, "WHOLE", {})
    fails = _check(_cases(_CHUNKS[chunk]))
    assert not fails, "\n".join(fails)


_KNOWN_CASES = [(e, s) for e in _ALL for s in e.make_samples(widen=False) if _known(e, s) is not None]


@pytest.mark.parametrize("entry,sample", _KNOWN_CASES,
                         ids=[f"{e.name}[{s.name}]" for e, s in _KNOWN_CASES])
def test_known_limits(entry, sample):
    """Each KNOWN case fails the way KNOWN says, and no other: a lifted limit shows up here."""
    why = _known(entry, sample)
    cases = [(entry, next(iter(entry.variants.values())), sample)]
    if why.startswith("unsupported:"):
        with pytest.raises(UnsupportedOperatorError, match=f"'{why.split(':')[1]}'"):
            _export_and_run(cases)
        return
    with pytest.raises(Exception, match="NOT_IMPLEMENTED|Could not find an implementation"):
        _export_and_run(cases)
