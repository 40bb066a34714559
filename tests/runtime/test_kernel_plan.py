"""runtime/kernel_plan.py: graph + input layouts -> kernels as data, with no arrays, no eager
run and nothing built."""
import numpy as np

import fusetorch as torch
from fusetorch.codegen import lower
from fusetorch.ir import dtypes as dt
from fusetorch.ir import passes
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import interpret, kernel_plan, layouts
from fusetorch.runtime.layouts import Layout, contiguous
from fusetorch.tracer.trace import trace


def _input(shape, dtype=dt.float32):
    return Node("input", (), {"shape": shape, "dtype": dtype}, tuple(shape), dtype)


def _const(v):
    return make_node("constant", [], {"shape": (), "dtype": dt.float32, "value": v})


def test_kernels_come_from_layouts_alone(monkeypatch):
    # a transposed input, a matmul (an extern), a permuted view of its result read by a kernel
    a, b = _input((6, 4)), _input((6, 4))
    m = make_node("matmul", [make_node("permute", [a], {"perm": (1, 0)}), b])   # [4, 4]
    out = make_node("tanh", [make_node("add", [make_node("permute", [m], {"perm": (1, 0)}),
                                                make_node("mul", [m, _const(2.0)])])])
    graph = Graph([a, b], [out])
    evaluated = []
    orig = interpret.eval_node
    monkeypatch.setattr(layouts, "eval_node",
                        lambda n, *x, **k: evaluated.append(n.op) or orig(n, *x, **k))
    plan = kernel_plan.make(graph, {id(a): Layout((6, 4), (1, 6)), id(b): contiguous((6, 4))})
    assert set(evaluated) <= {"permute"}  # only views, on stand-ins: no matmul, no math
    (k,) = plan.kernels
    assert isinstance(k, lower.LoopKernel) and k.name.startswith("ft_pointwise_")
    # the kernel reads the matmul's result twice: transposed and as it is
    assert sorted(p.strides for p in k.params if not p.output) == [(1, 4), (4, 1)]
    (g,) = plan.partition.groups()
    assert plan.input_layouts(0) == [plan.layouts[id(n)] for n in g.inputs]


def test_the_same_kernels_as_for_arrays_of_those_layouts():
    x = torch.randn(5, 7)
    with trace(x) as rec:
        y = (x.t() * 3).exp().sum(0)
    graph = passes.optimize(rec.graph(y))
    arr = np.asfortranarray(np.random.rand(5, 7).astype(np.float32))
    from_arrays = kernel_plan.make(graph, layouts.layouts_of(graph.inputs, [arr]))
    from_data = kernel_plan.make(graph, {id(graph.inputs[0]): Layout((5, 7), (1, 5))})
    assert [k.name for k in from_data.kernels] == [k.name for k in from_arrays.kernels]
    contiguous_plan = kernel_plan.make(graph, {id(graph.inputs[0]): contiguous((5, 7))})
    assert [k.name for k in contiguous_plan.kernels] != [k.name for k in from_data.kernels]


def test_cuda_plans_have_no_c_only_layouts_and_write_updates_in_place_too():
    w, g, h = _input((64, 32)), _input((64, 32)), _input((32, 64))
    new = make_node("sub", [w, make_node("mul", [g, _const(0.1)])])
    col = make_node("sum", [make_node("exp", [h])], {"dims": (0,), "keepdim": False})
    graph = Graph([w, g, h], [new, col])
    ins = {id(n): contiguous(n.shape) for n in graph.inputs}
    cpu = kernel_plan.make(graph, ins, updates={0: 0})
    cuda = kernel_plan.make(graph, ins, cpu=False, updates={0: 0})
    assert cpu.in_place == {id(new): w} and cuda.in_place == {id(new): w}
    assert any(k.strategy.outer_axis for k in cpu.kernels)  # C's accumulator row
    assert {type(k.strategy).__name__ for k in cuda.kernels} == {"CudaStrategy"}
