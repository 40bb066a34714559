"""A kernel's name is the digest of all its data (ir/identity.py `digest`): what it computes
and the loop structure its backend runs it by (`LoopKernel.strategy`), and kernels named
alike are defined once per module. A hand-kept list of the fields that count once forgot one,
and softmax beside log_softmax then ran one kernel for both. These tests change every field,
found through `dataclasses.fields`, so a field added later is covered without editing them."""
import copy
import dataclasses

import numpy as np

import fusetorch as torch
from fusetorch.codegen import lower, render
from fusetorch.codegen.lower import LoopKernel, Param, Stmt
from fusetorch.codegen.printer import Index
from fusetorch.codegen.strategy import CStrategy, schedule
from fusetorch.codegen.template_nests import Pool
from fusetorch.ir import dtypes as dt
from fusetorch.ir import passes
from fusetorch.ir.graph import make_node
from fusetorch.ir.identity import IDENTITY, digest
from fusetorch.runtime.device import cpu_backend
from fusetorch.runtime.program import Program
from fusetorch.tracer.trace import trace


def _node(shape, dtype=dt.float32):
    return make_node("input", [], {"shape": shape, "dtype": dtype})


def _kernel() -> LoopKernel:
    """A reduce kernel with a value in every field, none at its default."""
    x = _node((4, 8))
    inp = Param("in0", "float", x, (8, 1), False)
    out = Param("out0", "float", _node((4,)), (1, 0), True)  # 0 along the reduced dim
    row = Param("out1", "float", _node((4, 8)), (8, 1), True)
    strategy = CStrategy(
        loops=(4, 8), strides=((8, 1), (1,), (8, 1)), parallel=True, simd=True, flat=True,
        reduced=(False, True), reduce_inner=1, outer_axis=True, prefix=1, acc_strides=(0, 1),
        row=8, blocked=True, block=128, chunk=3, row_block=2, inner_blocked=True,
        inner_blocks=True, offsets=(Index((("i0", 8), ("i1", 1))), Index((("i0", 1),))),
        acc_offset=Index((("i1", 1),)), out_offset=Index((("i0", 1),)), geometry=Pool(
            shape=(1, 2, 4, 8), strides=(64, 32, 8, 1), out_hw=(2, 4), kernel=(2, 2),
            stride=(2, 2), padding=(0, 0), dilation=(1, 1), extra=(0, 0), parallel=True,
            values=False, indices=False, grad_strides=(8, 8, 4, 1)))
    return LoopKernel(
        name="ft_reduce_0", kind="reduce", shape=(4, 8), params=[inp, out, row],
        loads=[Stmt("x0", "float", "", "input 0: %0 f32[4,8]")],
        body=[Stmt("t0", "float", "expf(x0)", "%1 = exp")], stores=[(row, "t0")],
        numel=32, reduced=(False, True), reduce_var="t0", reduce_out=out, acc_ctype="float",
        reduce_op="max", acc_init="-INFINITY", comments=["out0: max"], template="fold2d",
        attrs={"kernel": (2, 2), "pad_value": 0.0}, batched=True, strategy=strategy)


def _changed(v):
    """A value of the same kind as `v` that differs from it."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return -v if v == 0 else v * 2
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, tuple):
        return v[:-1] + (_changed(v[-1]),) if v else (1,)
    if isinstance(v, list):
        return v[:-1] + [_changed(v[-1])] if v else [1]
    if isinstance(v, dict):
        k = sorted(v)[0]
        return dict(v, **{k: _changed(v[k])})
    if dataclasses.is_dataclass(v):
        f = next(f for f in dataclasses.fields(v) if f.metadata.get(IDENTITY, True))
        return dataclasses.replace(v, **{f.name: _changed(getattr(v, f.name))})
    if hasattr(v, "op") and hasattr(v, "inputs"):  # a node: another array shape
        return _node(v.shape + (1,), v.dtype)
    raise AssertionError(f"no way to change a {type(v).__name__}: teach _changed")


def _variants(obj, path=""):
    """(path, field counts, copy of obj with that one field changed) for every field of obj
    and, recursively, of the dataclasses it holds (in fields, lists and tuples)."""
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        here = f"{path}.{f.name}"
        counts = f.metadata.get(IDENTITY, True)
        yield here, counts, dataclasses.replace(obj, **{f.name: _changed(v)})
        items = v if isinstance(v, list) else [v]
        for k, item in enumerate(items):
            if dataclasses.is_dataclass(item):
                for sub, c, new in _variants(item, f"{here}[{k}]"):
                    if isinstance(v, list):
                        new = v[:k] + [new] + v[k + 1:]
                    yield sub, counts and c, dataclasses.replace(obj, **{f.name: new})
            elif isinstance(item, tuple):  # stores: (Param, var); a strategy's offsets
                for j, part in enumerate(item):
                    if dataclasses.is_dataclass(part):
                        for sub, c, new in _variants(part, f"{here}[{k}][{j}]"):
                            t = item[:j] + (new,) + item[j + 1:]
                            yield sub, counts and c, dataclasses.replace(
                                obj, **{f.name: v[:k] + [t] + v[k + 1:]
                                        if isinstance(v, list) else t})


def test_every_field_but_the_display_only_ones_changes_the_name():
    base = _kernel()
    name = digest(base)
    display = set()
    for path, counts, other in _variants(base):
        if counts:
            assert digest(other) != name, f"changing {path} keeps the kernel's name"
        else:
            assert digest(other) == name, f"{path} is display-only yet changes the name"
            display.add(path)
    # every field of the three classes was reached, and only labels are display-only
    top = {f".{f.name}" for f in dataclasses.fields(LoopKernel)}
    assert top <= {p for p, _, _ in _variants(base)}
    assert {p.rsplit(".", 1)[1] for p in display} == {"name", "comments", "comment"}
    for cls in (Param, Stmt, CStrategy):
        for f in dataclasses.fields(cls):
            assert any(p.endswith(f".{f.name}") for p, _, _ in _variants(base)), f.name


def test_the_name_hashes_the_strategy_too():
    # one computation scheduled for two backends: two kernels, two names
    k = dataclasses.replace(_kernel(), template=None, batched=False, strategy=None)
    c, cuda = schedule(k, "c"), schedule(k, "cuda")
    assert c.name != cuda.name and c.name.startswith("ft_reduce_")
    assert schedule(copy.deepcopy(k), "c").name == c.name


def test_equal_data_equal_name_and_a_copy_is_equal():
    a, b = _kernel(), copy.deepcopy(_kernel())
    b.name, b.comments = "other", ["other words"]
    assert digest(a) == digest(b)


def test_a_node_counts_as_the_array_it_names():
    # the kernel reads an array: how its value was computed is not part of the kernel
    k = _kernel()
    x = k.params[0].node
    same = make_node("exp", [x])
    other = dataclasses.replace(k, params=[dataclasses.replace(k.params[0], node=same)]
                                + k.params[1:])
    assert digest(other) == digest(k)
    wider = dataclasses.replace(k, params=[dataclasses.replace(
        k.params[0], node=_node((4, 8), dt.float64))] + k.params[1:])
    assert digest(wider) != digest(k)


class _Lowered(Program):
    """A program that lowers its groups (exactly as `Program.build`) but builds nothing."""

    def build(self, inputs_per_group):
        self.kernels = [lower.lower(g, ins) for g, ins in zip(self.plan.groups(),
                                                                inputs_per_group)]
        self._funcs = [None]


def test_softmax_beside_log_softmax_lowers_to_two_kernels():
    # the historical bug: the two reductions have the same loops, sums and parameters and
    # differ in what they store (exp(x - max) or x - max); one name made them one kernel
    a, b = torch.randn(3, 5, 4).transpose(1, 2), torch.randn(3, 5, 4).transpose(1, 2)
    with trace(a, b) as rec:
        outs = (torch.softmax(a, 1), torch.log_softmax(b, 1))
    prog = _Lowered(passes.optimize(rec.graph(*outs)), cpu_backend())
    prog.prepare([a._data, b._data])
    sums = [k for k in prog.kernels if k.reduce_out is not None and k.reduce_op == "sum"]
    assert len(sums) == 2
    assert sums[0].name != sums[1].name
    assert len(render.unique(prog.kernels)) == len({digest(k) for k in prog.kernels})
    # and where they were computed: the values are right
    f = torch.compile(lambda s, t: (torch.softmax(s, 1), torch.log_softmax(t, 1)))
    got = f(a, b)
    x, y = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got[0].numpy(), e / e.sum(1, keepdims=True), rtol=1e-5,
                               atol=1e-6)
    ly = y - y.max(1, keepdims=True)
    np.testing.assert_allclose(got[1].numpy(), ly - np.log(np.exp(ly).sum(1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
