"""The compile OpInfo suite on the GPU: every batch of tests/codegen/test_compile_opinfo.py,
compiled with its tensors (and layers) on cuda:0, so its kernels are CUDA rendered from the same
loop kernels as the C ones, against eager on the CPU: values, and gradients of the same scalar
sum_i <out_i, cot_i>. The second call must run the compiled program (no retrace, no fallback).

Skipped without cupy and an NVIDIA GPU (CI has neither; there test_cuda_codegen.py compiles
every kernel's CUDA source to PTX and runs it through the CUDA-on-CPU header instead).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

import fusetorch as torch
import opinfo
from fusetorch.runtime import device as D
from test_compile_opinfo import (_Batch, _assert_compiled, _callable, _cases, _compare,
                                 _compare_grads, _compile, _flat_inputs, _groups, _leaves,
                                 _output_cases, _outputs, _refill, _wants, ENTRIES)

pytestmark = [pytest.mark.skipif(D._cupy() is None, reason="needs cupy and an NVIDIA GPU"),
              pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")]

# calls that make CPU tensors themselves, or move to the CPU, mix devices on cuda (as in PyTorch)
_CPU_BOUND = opinfo.MAKES_CPU_TENSORS + ("Tensor.cpu",)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def _on_device(cases):
    return [c for c in cases if not c.variant.startswith(_CPU_BOUND)]


def _host(t):
    return None if t is None else t.detach().cpu()


def check_values(cases):
    flat = _flat_inputs(cases)
    with torch.no_grad():
        batch = _Batch(cases)
        twin = copy.deepcopy(batch)
        batch.cuda()
        owners = _output_cases(cases, [t.clone() for t in flat])
        dev = [t.cuda() for t in flat]
        pristine = [t.clone() for t in dev]
        cf = _compile(_callable(batch))
        cf(*dev)
        _refill(dev, pristine)  # (in-place variants wrote into them)
        got = _outputs(cf(*dev))
        twin(*[t.clone() for t in flat])  # twice, as the compiled one (running statistics)
        want = _outputs(twin(*flat))
    assert len(got) == len(want) == len(owners)
    for k, (g, w, c) in enumerate(zip(got, want, owners)):
        assert g.is_cuda, f"{c.label}: output on {g.device}"
        _compare(c.entry, _host(g), w, f"{c.label} output {owners[:k].count(c)}")
    for (name, b), (_, b2) in zip(batch.named_buffers(), twin.named_buffers()):
        _compare(opinfo.OpInfo("buffers", {}, None), _host(b), b2, f"buffer {name}")
    _assert_compiled(cf, "values on cuda")


def check_gradients(cases):
    rng = np.random.default_rng(1)
    flat = _flat_inputs(cases)
    with torch.no_grad():
        outs = [o for o in copy.deepcopy(_Batch(cases))(*flat) if o.dtype.is_floating_point]
    if not outs:
        pytest.skip("no floating outputs")
    cots = [torch.from_numpy(rng.uniform(0.5, 1.5, tuple(o.shape)).astype(
        o.numpy().dtype)) for o in outs]
    twin = _Batch(cases, cots)
    batch = copy.deepcopy(twin)
    batch._cots = [c.cuda() for c in cots]
    batch.cuda()
    wants = _wants(cases, False)
    eager_in = _leaves(flat, wants)
    pristine = [t.cuda() for t in flat]
    comp_in = _leaves([t.clone() for t in pristine], wants)
    want = twin(*eager_in)
    want.backward()
    cf = _compile(_callable(batch))
    cf(*comp_in)
    _refill(comp_in, pristine)
    for t in comp_in:
        t.grad = None
    for p in batch.parameters():
        p.grad = None
    got = cf(*comp_in)
    got.backward()
    scale = float(sum((o.abs() * c).sum().item() for o, c in zip(outs, cots)))
    rtol = max(c.entry.rtol for c in cases)
    np.testing.assert_allclose(got.item(), want.item(), rtol=rtol, atol=rtol * scale,
                               err_msg="value of the reduced output")
    owners = [c for c in cases for _ in opinfo.tensors_in([c.sample.args, c.sample.kwargs])]
    _compare_grads((_host(a.grad), b.grad, c.entry, f"grad of an input of {c.label}")
                   for a, b, c in zip(comp_in, eager_in, owners) if b.requires_grad)
    entry_of = {c.entry.name.replace(".", "_"): c.entry for c in cases}
    _compare_grads((_host(p.grad), q.grad, entry_of[n.split(".")[1]], f"grad of {n}")
                   for (n, p), (_, q) in zip(batch.named_parameters(), twin.named_parameters()))
    _assert_compiled(cf, "grad on cuda")


CHECKS = {"values": check_values, "grad": check_gradients}


def _params():
    return [pytest.param(mode, tuple(e.name for e in g),
                         id=f"{mode}-{g[0].name}" + (f"..{g[-1].name}" if len(g) > 1 else ""))
            for mode in CHECKS for g in _groups(mode)]


@pytest.mark.parametrize("mode,names", _params())
def test_compiled_on_cuda_matches_cpu_eager(mode, names):
    cases = _on_device([c for n in names for c in _cases(ENTRIES[n], mode)])
    if not cases:
        pytest.skip("every case makes or moves tensors on the CPU")
    CHECKS[mode](cases)
