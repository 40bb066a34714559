"""codegen/strategy.py: a kernel's loop structure per backend is data that the renderers print.

`lower` says what a kernel computes over its space in the dims' own order; `c_strategy` and
`cuda_strategy` choose the loops. These tests check the choices against what the layouts
imply (worked out by hand here, not by the code under test), that a strategy is plain data,
and that the renderers print the strategy they are given rather than choosing their own. The
byte-for-byte check of the generated sources over a large corpus is
`tools/kernel_sources.py` (run it before and after a change and `diff -r`)."""
import dataclasses
import re
from pathlib import Path

import numpy as np

import pytest

from fusetorch.codegen import render, render_cuda
from fusetorch.codegen.printer import Index, Split, index
from fusetorch.codegen.strategy import (Block, CStrategy, CudaStrategy, Loop, c_nest, cuda_nest,
                                        schedule)
from fusetorch.codegen.template_nests import Pool
from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, make_node
from fusetorch.runtime import kernel_plan
from fusetorch.runtime.layouts import contiguous


def _input(shape):
    return make_node("input", [], {"shape": shape, "dtype": dt.float32})


def _plan(outs, inputs, layouts=None, cpu=True):
    layouts = layouts or {id(n): contiguous(n.shape) for n in inputs}
    return kernel_plan.make(Graph(inputs, outs), layouts, cpu=cpu).kernels


def _column_sum(cpu=True):
    """sum over dim 0 of a [40, 300] float32 (a bias gradient's shape)."""
    x = _input((40, 300))
    s = make_node("sum", [make_node("mul", [x, x])], {"dims": (0,), "keepdim": False})
    (k,) = _plan([s], [x], cpu=cpu)
    return k


def test_the_kernel_is_the_computation_in_the_dims_own_order():
    k = _column_sum()
    assert k.shape == (40, 300) and k.reduced == (True, False)
    assert [p.strides for p in k.params] == [(300, 1), (0, 1)]  # the output: 0 along dim 0


def test_c_sums_leading_dims_into_a_row_in_memory_order():
    s = _column_sum().strategy
    assert isinstance(s, CStrategy)
    # loops as memory lies, the reduced one first; a float row of 64 iterations at a time
    assert s.outer_axis and s.variant == "reduce_outer"
    assert s.loops == (40, 300) and s.reduced == (True, False)
    assert s.prefix == 0 and s.row == 300 and s.row_block == 64
    assert s.acc_strides == (0, 1) and not s.parallel


def test_cuda_puts_the_reduced_loop_inside_and_a_thread_per_column():
    s = _column_sum(cpu=False).strategy
    assert isinstance(s, CudaStrategy)
    # 300 rows side by side in memory: one thread each reads coalesced
    assert s.loops == (300, 40) and s.reduce_inner == 1 and s.variant == "rows_thread"
    assert s.strides == ((1, 300), (1,))


def test_a_transposed_read_is_a_nested_loop_in_c():
    x = _input((64, 32))
    y = make_node("exp", [make_node("permute", [x], {"perm": (1, 0)})])
    (k,) = _plan([make_node("copy", [y])], [x])
    s = k.strategy
    assert not s.flat and s.loops == (32, 64) and s.pragmas == ("", "simd")
    (outer,) = s.nest
    assert (outer.var, outer.stop, outer.pragma) == ("i0", "32L", "")
    (inner,) = outer.body
    assert (inner.var, inner.stop, inner.pragma, inner.body) == ("i1", "64L", "simd", ("element",))


def test_strategies_are_plain_data():
    def plain(v):
        if isinstance(v, tuple):
            return all(plain(x) for x in v)
        if isinstance(v, (Loop, Block, Pool, Index, Split)):  # a record of the nest, a
            # template's geometry, an offset, a split of a linear index
            return all(plain(getattr(v, f.name)) for f in dataclasses.fields(v))
        return v is None or isinstance(v, (bool, int, str))
    for k in (_column_sum(), _column_sum(cpu=False)):
        for f in dataclasses.fields(k.strategy):
            assert plain(getattr(k.strategy, f.name)), f.name


def _run_c(lines: list, env: dict) -> dict:
    """C integer statements (declarations, `%`, `/=` on non-negative values) run in Python."""
    for line in lines:
        for stmt in filter(None, (x.strip() for x in line.split(";"))):
            stmt = re.sub(r"^(const )?(int|long long|long) ", "", stmt).replace("/=", "//=")
            exec(stmt, {}, env)
    return env


@pytest.mark.parametrize("extents", [(7,), (3, 1, 5), (2, 3, 4, 5), (1, 6)])
def test_a_split_gives_each_loop_its_row_major_index(extents):
    names = tuple(f"i{d}" for d in range(len(extents)))
    split = Split("ft_i", names, extents, "int")
    for linear in range(int(np.prod(extents))):
        env = _run_c(split.lines(), {"ft_i": linear})
        assert tuple(env[n] for n in names) == np.unravel_index(linear, extents)


def test_an_index_prints_the_offset_of_its_strides():
    strides, names = (20, 0, 1, 5), ("i0", "i1", "i2", "i3")
    offset = index(strides, names)
    assert str(offset) == "i0 * 20 + i2 + i3 * 5" and str(index((0, 0), names)) == "0"
    for at in [(0, 0, 0, 0), (1, 2, 3, 4), (2, 0, 4, 1)]:
        env = dict(zip(names, at))
        assert eval(str(offset), {}, env) == int(np.dot(at, strides))


def test_the_renderers_print_the_strategys_offsets():
    """The C renderer takes each array's offset from the strategy: a changed Index is what
    the kernel reads at, whatever the strides say."""
    k = _column_sum()
    s = k.strategy
    moved = tuple(Index(x.terms + (("i0", 7),)) if p.name.startswith("in") else x
                  for p, x in zip(k.params, s.offsets))
    src = render.render_kernel(dataclasses.replace(k, strategy=dataclasses.replace(
        s, offsets=moved)))
    assert "in0[i0 * 300 + i1 + i0 * 7]" in src and "in0[i0 * 300 + i1]" not in src


def _loops(items) -> list:
    """(var, start, stop, pragma) of every Loop of a nest, outside in, in order."""
    out = []
    for it in items:
        if isinstance(it, Loop):
            out.append((it.var, it.start, it.stop, it.pragma))
        if not isinstance(it, str):
            out += _loops(it.body)
    return out


_POOL = {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1), "dilation": (1, 1),
         "ceil_mode": True}


def test_a_max_pool_group_has_its_geometry_and_nest_as_data():
    """[2, 3, 9, 8] pooled 3x3, stride 2, padding 1, ceil_mode: out (5, 5) (ceil((9+2-3)/2)+1,
    ceil((8+2-3)/2)+1), the last window column (8..10) reaching one past the padded width 10
    (extra (0, 1)), so the scan reads a padded copy [11, 11] of each plane; all 5 output rows
    go in one block (9 * 5 elements a row, far below 4096)."""
    x = _input((2, 3, 9, 8))
    v = make_node("max_pool2d", [x], _POOL)
    i = make_node("max_pool2d_index", [x], _POOL)
    (k,) = _plan([v, i], [x])
    g = k.strategy.geometry
    assert isinstance(g, Pool) and g.out_hw == (5, 5) and g.extra == (0, 1)
    assert g.padded and g.padded_hw == (11, 11) and g.src_strides == (11, 1) and g.rows == 5
    assert g.values and g.indices and g.grad_strides is None and not g.parallel
    loops = _loops(k.strategy.nest)
    assert loops[0] == ("p", "0", "6L", "")  # the planes, serial (small)
    assert ("y0", "0", "5L", "") in loops and ("k", "0", "9", "") in loops
    assert ("x", "0", "m", "simd") in loops  # the scan over a block's rows
    src = render.render_kernel(k)
    assert src.count("for (") == len(loops) and "padded == NULL" in src


def test_fold2d_nest_walks_planes_taps_and_positions():
    cols = _input((2, 4, 3, 3, 5, 5))
    n = make_node("fold2d", [cols], {"size": (9, 9), "kernel": (3, 3), "stride": (2, 2),
                                      "padding": (1, 1), "dilation": (1, 1)})
    (k,) = _plan([n], [cols])
    assert _loops(k.strategy.nest) == [("p", "0", "8L", ""), ("q", "0", "81L", ""),
                                       ("i", "0", "3L", ""), ("j", "0", "3L", ""),
                                       ("y", "y_lo", "y_hi", ""), ("x", "x_lo", "x_hi", "")]
    cu = schedule(k, "cuda")  # (CUDA plans leave fold2d to the library: C kernels only)
    assert [v for v, *_ in _loops(cu.strategy.nest)] == ["ft_i", "i", "j"]


def test_a_loop_with_a_further_condition_prints_it_after_its_bound():
    from fusetorch.codegen.printer import nest
    loop = Loop("s", "0", ("step",), start="t_len - 1", cmp=">=", step="--", also="b0 < b1")
    got = nest((loop,), lambda part, pad: f"\n{pad}{part}();")
    assert got == "\n    for (long s = t_len - 1; s >= 0 && b0 < b1; s--) {\n        step();\n    }"


def test_the_lstm_kernels_recurrence_runs_over_time_on_each_threads_rows():
    from fusetorch.codegen.template_nests import lstm_c
    nests = lstm_c()
    (forward,) = [it for it in nests["forward"] if isinstance(it, Loop)]
    assert (forward.var, forward.pragma) == ("part", "parallel_parts")
    (time,) = [it for it in forward.body if isinstance(it, Loop)]
    assert (time.var, time.start, time.stop, time.also) == ("s", "0", "t_len", "b0 < b1")
    backward = [it for it in nests["backward"] if isinstance(it, Loop)]
    assert [lp.var for lp in backward] == ["part", "b"]  # the recurrence, then the carry out
    assert _loops(nests["forward_step"]) == [("b", "b0", "b1", ""), ("j", "0", "H", "simd")]


def test_a_bare_block_with_a_pragma_opens_a_braced_region():
    from fusetorch.codegen.printer import nest
    region = Block("", ("scratch", Loop("n", "N", ("work",), pragma="for")), pragma="region")
    got = nest((region,), lambda part, pad: f"\n{pad}{part}();",
               {"region": "omp parallel", "for": "omp for"})
    assert got == ("\n    #pragma omp parallel\n    {\n        scratch();"
                   "\n        #pragma omp for\n        for (long n = 0; n < N; n++) {"
                   "\n            work();\n        }\n    }")


def _conv_source(monkeypatch, geometry=None) -> tuple:
    """(the conv2d template's text, its source as runtime/conv.py renders it, its nests)."""
    import numpy as np
    from fusetorch.codegen import TEMPLATES, environment
    from fusetorch.runtime import conv, eager_kernels
    seen = {}

    def record(template, ctx, cdef, names):
        seen.update(ctx, source=environment("c").get_template(template).render(**ctx))
        return None
    monkeypatch.setattr(eager_kernels, "template_functions", record)
    conv._build(np.dtype(np.float32), geometry)
    return (Path(TEMPLATES) / "c" / "conv2d.c.j2").read_text(), seen["source"], seen["loops"]


@pytest.mark.parametrize("geometry", [None, (2, 3, 8, 8, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, 6, 6)])
def test_the_convolution_kernels_print_every_loop_from_their_nests(monkeypatch, geometry):
    template, src, nests = _conv_source(monkeypatch, geometry)
    assert "for (" not in template  # (the template prints what lies between the loops)
    loops = [lp for nest in nests.values() for lp in _loops(nest)]
    assert src.count("for (") == len(loops)
    # the register tile's loops unroll, all but the one over the product's terms
    assert {p for v, _, _, p in _loops(nests["tile"]) if v != "r"} == {"unroll_4", "unroll_16"}
    # each kernel's samples (or chunks of them) shared by a region's threads
    for name in ("forward", "grad_weight", "grad_input", "forward_rows", "grad_weight_rows"):
        assert [lp[0] for lp in _loops(nests[name]) if lp[3] == "for_dynamic"] in (["n"], ["ch"])
    assert src.count("#pragma omp parallel num_threads(NT) if(NT > 1)\n        {") == 5


def test_the_name_differs_per_backend_and_each_renderer_takes_only_its_own():
    c, cuda = _column_sum(), _column_sum(cpu=False)
    assert c.name != cuda.name
    assert schedule(c, "cuda").name == cuda.name  # the same computation
    with pytest.raises(NotImplementedError, match="scheduled as CudaStrategy"):
        render.render_kernel(cuda)
    with pytest.raises(NotImplementedError, match="scheduled as CStrategy"):
        render_cuda.render_kernel(c)


def test_the_c_renderer_prints_the_strategy_it_is_given():
    k = _column_sum()
    src = render.render_kernel(k)
    assert "float part[300]" in src and "#pragma omp parallel" not in src
    s = dataclasses.replace(k.strategy, row_block=0, pragmas=("parallel", "simd"), prefix=1,
                            acc_strides=(0, 1))
    s = dataclasses.replace(s, nest=c_nest(k, s))
    other = render.render_kernel(dataclasses.replace(k, strategy=s))
    assert "float part[" not in other
    assert "#pragma omp parallel for schedule(static)\n    for (long i0" in other


def test_the_cuda_renderer_prints_the_skeleton_it_is_given():
    k = _column_sum(cpu=False)
    assert "ft_block_reduce" not in render_cuda.render_kernel(k)
    s = dataclasses.replace(k.strategy, variant="rows_block")
    forced = dataclasses.replace(k, strategy=dataclasses.replace(s, nest=cuda_nest(k, s)))
    assert "ft_block_reduce" in render_cuda.render_kernel(forced)


def test_the_cuda_skeleton_is_a_nest_of_the_same_records():
    """A thread per column: a grid-stride loop over the 300 rows, each summing its 40 in order."""
    (step, rows) = _column_sum(cpu=False).strategy.nest
    assert step == "step"
    assert (rows.var, rows.stop, rows.step, rows.ctype) == ("ft_row", "300", " += ft_step", "int")
    inner = rows.body[2]
    assert (inner.var, inner.stop, inner.body) == ("ft_j", "40", ("inner_index", "element",
                                                                  "fold"))
    s = dataclasses.replace(_column_sum(cpu=False).strategy, variant="full")
    k = _column_sum(cpu=False)
    nest = cuda_nest(k, s)
    assert [type(x).__name__ for x in nest] == ["str", "str", "str", "Loop", "str", "Block",
                                                "str", "Block"]
    assert isinstance(nest[-1].body[-1], Block) and nest[-1].body[-1].body == ("store",
                                                                              "count_reset")


def test_the_c_nest_is_printed_as_given_at_any_depth():
    """One printer prints any nest: here a handmade one, three loops deep, a clipped bound,
    a step and a pragma, around the template's parts."""
    k = _column_sum()
    inner = Loop("i1", "b + 8L", ("element", "fold_row"), start="b", clip="300L",
                 pragma="simd")
    nest = ("row", Loop("j", "300L", ("row_init",)),
            Loop("i0", "40L", (Loop("b", "300L", (inner,), step=" += 8L"),)),
            Loop("j", "300L", ("row_store",)))
    s = dataclasses.replace(k.strategy, row_block=0, nest=nest)
    src = render.render_kernel(dataclasses.replace(k, strategy=s))
    body = src[src.index("{\n") + 2:]
    assert body.startswith(
        "    double acc[300];\n"
        "    for (long j = 0; j < 300L; j++) {\n"
        "        acc[j] = 0.0;\n"
        "    }\n"
        "    for (long i0 = 0; i0 < 40L; i0++) {\n"
        "        for (long b = 0; b < 300L; b += 8L) {\n"
        "            const long i1_end = b + 8L < 300L ? b + 8L : 300L;\n"
        "            #pragma omp simd\n"
        "            for (long i1 = b; i1 < i1_end; i1++) {\n"
        "                const float x0 = in0[i0 * 300 + i1];\n"), body
    assert body.endswith("            }\n        }\n    }\n"
                         "    for (long j = 0; j < 300L; j++) {\n"
                         "        out0[0 + j] = (float)acc[j];\n    }\n}\n"), body
