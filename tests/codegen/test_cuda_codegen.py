"""CUDA kernels rendered from the compiler's loop kernels, checked without a GPU.

The loop kernels come from the compiler's own pipeline (trace, joint backward graph, passes,
fusion, lowering: as `fusetorch.compile` runs them) over functions that cover every fusible
elementwise op in float32, float64 and bool, contiguous, broadcast, permuted and scalar inputs,
full and trailing-dim sums, maxes and mins, and backward programs. Then:
  - all of them, rendered to one CUDA module, compile to PTX with nvcc (skipped without nvcc);
  - the kernels that use no shared memory (pointwise, one-thread-per-row reductions) are built
    with g++ and the CUDA-on-CPU header (templates/cuda/cuda_on_cpu.h) and run on inputs laid
    out with each kernel's own strides; results are compared with the numpy evaluation of the
    kernel's IR nodes (the eager table in float64 where the kernel computes in float64).
Kernels with block reductions are compile-checked only; a GPU run must check them (see the
bottom of this file).
"""
import ctypes
import dataclasses
import math
import shutil
import subprocess

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.codegen import TEMPLATES, fuse, lower, render_cuda
from fusetorch.codegen.strategy import schedule
from fusetorch.ir import passes
from fusetorch.ir.grad import backward_graph
from fusetorch.ir.graph import Graph
from fusetorch.ir.ops import OPS
from fusetorch.runtime.device import NP_DTYPES, cpu_backend
from fusetorch.runtime.interpret import eval_node
from fusetorch.runtime.runner import run_graph
from fusetorch.runtime import kernel_plan
from fusetorch.runtime.layouts import layouts_of
from fusetorch.tracer.trace import trace

NVCC = shutil.which("nvcc") or next(
    (p for p in ("/usr/local/cuda/bin/nvcc",) if shutil.os.path.exists(p)), None)
GXX = shutil.which("g++")
HEADER = TEMPLATES / "cuda" / "cuda_on_cpu.h"


def _programs(fn, *tensors, grad=False) -> list:
    """The kernel plans (forward, and with grad backward) `compile` would make for fn(*tensors)
    on a CUDA device: pure data from the graphs and the inputs' layouts, nothing built."""
    with trace(*tensors) as rec:
        out = fn(*tensors)
    outs = list(out) if isinstance(out, tuple) else [out]
    graph = rec.graph(*outs)
    if grad:
        wrt = [k for k, t in enumerate(tensors) if t.requires_grad]
        bw = backward_graph(graph.outputs[:1], [rec.inputs[k] for k in wrt])
        graph = Graph(graph.inputs, graph.outputs + [f for f, _ in bw.values])
    graph = passes.optimize(graph)
    arrays = [t._data for t in rec.input_tensors]
    fwd = kernel_plan.make(graph, layouts_of(graph.inputs, arrays), cpu=False)
    progs = [fwd]
    if grad:
        # the saved values as a compiled run makes them: what a kernel writes is C-contiguous
        be = cpu_backend()
        written = {id(n) for g in fwd.partition.groups() for n in g.outputs}
        results = [np.ascontiguousarray(a) if id(o) in written else a for o, a in
                   zip(graph.outputs, run_graph(graph, arrays, be.impl, be.xp))]
        bgraph = passes.optimize(bw.graph)
        barrays = [np.ones(outs[0].shape, NP_DTYPES[outs[0].dtype])] + results[len(outs):]
        progs.append(kernel_plan.make(bgraph, layouts_of(bgraph.inputs, barrays), cpu=False))
    return progs


def _unary_all(x):
    return tuple(f(x) * 1.5 for f in (
        torch.neg, torch.exp, torch.log, torch.log1p, torch.expm1, torch.sqrt, torch.sin,
        torch.cos, torch.tanh, torch.sigmoid, torch.erf, torch.abs, torch.sign, torch.relu,
        torch.log2, torch.erfinv, torch.tan, torch.asin, torch.acos, torch.atan, torch.sinh,
        torch.cosh, torch.asinh, torch.acosh, torch.atanh, torch.log10, torch.exp2, torch.floor,
        torch.ceil, torch.trunc, torch.round, torch.lgamma, torch.digamma,
        lambda v: torch.polygamma(1, v), lambda v: torch.polygamma(3, v),
        # issue 27
        torch.erfc, torch.i0, torch.special.i1, torch.special.i0e, torch.special.i1e,
        torch.special.erfcx, torch.special.log_ndtr, lambda v: torch.special.bessel_j0(v) * v,
        lambda v: torch.special.bessel_j1(v) * v, lambda v: torch.special.bessel_y0(v) * v,
        lambda v: torch.special.bessel_y1(v) * v,
        lambda v: torch.frexp(v).mantissa + torch.frexp(v * 3).exponent,
        torch.nn.functional.gelu, torch.special.entr))


def _binary_all(x, y):  # y broadcasts along x's first dim: strided indexing
    p, q = x > 0, y < 0.5
    return (x + y, x - y, x * y, x / y, torch.pow(x, y), torch.maximum(x, y),
            torch.minimum(x, y), x == y, x != y, x < y, x <= y, x > y, x >= y,
            torch.where(p, x, y), x.clamp(-0.5, 0.5), x.clamp(min=0.1), torch.logical_not(p),
            p & q, p | q, p ^ q, p.to(x.dtype) * y, (x * 2).double() + 1,
            torch.atan2(x, y), torch.hypot(x, y), torch.logaddexp(x, y), x % y,
            torch.xlogy(x, y), torch.special.xlog1py(x, y),
            torch.fmod(x, y), x // y, torch.copysign(x, y), torch.nextafter(x, y),
            *(getattr(torch.special, f"{p}_polynomial_{k}")(x, y * 4 + 5) for p, k in (
                ("chebyshev", "t"), ("chebyshev", "u"), ("chebyshev", "v"), ("chebyshev", "w"),
                ("hermite", "h"), ("hermite", "he"), ("laguerre", "l"), ("legendre", "p"))))


def _cases():
    r = np.random.default_rng(0)

    def t(*shape, dtype=torch.float32, grad=False):
        return torch.tensor(r.standard_normal(shape), dtype=dtype, requires_grad=grad)

    cases = [
        (_unary_all, (t(33, 17),)),
        (_unary_all, (t(9, 7, dtype=torch.float64),)),
        (_binary_all, (t(6, 17), t(17))),
        (_binary_all, (t(5, 3, dtype=torch.float64), t(5, 1, dtype=torch.float64))),
        (lambda x, y: x * y + torch.exp(x), (t(1030), t(1030))),  # flat, float4 + tail
        (lambda x, y: torch.tanh(x) - y, (t(40, 26, dtype=torch.float64),
                                          t(40, 26, dtype=torch.float64))),  # double2
        (lambda x, y: x.t() * y + 1, (t(7, 5), t(5, 7))),  # a permuted input
        (lambda x, y: x[:, 1:] * y[::2], (t(6, 9), t(12, 8))),  # sliced inputs
        (lambda x, s: torch.relu(x * s) + 2.5, (t(600), t())),  # a 0-d input: scalar param
        (lambda x, y: (x > y).float(), (t(700), t(700))),  # bool compare, cast: no vector path
        (lambda x: x.expand(4, 5, 6) * 3, (t(5, 1),)),  # broadcast of a size-1 dim
        # int64 operands of a comparison (NVRTC has no int64_t: `long long`)
        (lambda x, i: torch.where(i == 2, x, -x),
         (t(9, 4), torch.tensor(r.integers(0, 4, (9, 4))))),
        # reductions: one thread per row (<= 32 per row), one block per row, everything
        (lambda x, y: (x * y).sum(-1), (t(50, 17), t(17))),
        (lambda x: torch.log(x).amax(-1), (t(40, 9),)),  # NaNs from log(< 0) must win
        (lambda x: torch.exp(x).amin(dim=(1, 2)), (t(4, 3, 5),)),
        (lambda x: (x - 1).sum(dim=(1, 2), keepdim=True), (t(3, 4, 5, dtype=torch.float64),)),
        (lambda x: x.t().sum(-1), (t(6, 20),)),  # a strided reduction input
        (lambda x, y: (x * y).sum(-1), (t(8, 300), t(300))),
        (lambda x: torch.log(x).amax(-1), (t(6, 100, dtype=torch.float64),)),
        (lambda x: torch.sigmoid(x).amin(-1), (t(5, 70),)),
        (lambda x: (x * x).sum(), (t(3000),)),
        (lambda x: (x * x).sum(), (t(20000),)),  # the C path sums this one block-wise
        (lambda x: x.sum(), (t(20, 30, dtype=torch.float64),)),
        (lambda x: torch.abs(x).max(), (t(900),)),
        (lambda x: torch.cos(x).min(), (t(13, 11, dtype=torch.float64),)),
        # reductions over leading or middle dims (kernels once the fuser takes them: the loop
        # kernel then lists the reduced dims last)
        (lambda x, y: (x * y).sum(0), (t(40, 6), t(6))),
        (lambda x: torch.exp(x).amax(dim=1), (t(3, 50, 4),)),
    ]
    grads = [
        (lambda x, w, b: torch.tanh(x * w + b).sum(), (t(8, 6), t(6, grad=True), t(6, grad=True))),
        (lambda x: (torch.sigmoid(x) * torch.relu(x)).sum(), (t(40, 30, grad=True),)),
        (lambda x: (torch.exp(x).sum(-1) ** 2).sum(), (t(5, 4, dtype=torch.float64, grad=True),)),
        (lambda x: torch.log1p(x.abs()).amax(-1).sum(), (t(6, 10, grad=True),)),
    ]
    return cases, grads


@pytest.fixture(scope="module")
def collected():
    """[(group, loop kernel)] of every case, each kernel once."""
    cases, grads = _cases()
    out, seen = [], set()
    for fn, args in cases + grads:
        for prog in _programs(fn, *args, grad=any(a.requires_grad for a in args)):
            for g, k in zip(prog.partition.groups(), prog.kernels):
                if k.name not in seen:
                    seen.add(k.name)
                    out.append((g, k))
    return out


def test_the_cases_cover_every_op_and_skeleton(collected):
    ops = {n.op for g, _ in collected for n in g.nodes}
    fusible = {n for n, d in OPS.items() if d.kind == "elementwise" and d.fusible}
    assert fusible - ops == set()
    kinds = {(render_cuda.variant(k), k.reduce_op if k.reduce_out else None,
              k.strategy.flat and k.reduce_out is None) for _, k in collected}
    for want in [("pointwise", None, True), ("pointwise", None, False)] + [
            (v, op, False) for v in ("rows_thread", "rows_block", "full")
            for op in ("sum", "max", "min")]:
        assert want in kinds, want
    src = render_cuda.render_module([k for _, k in collected])
    assert "float4" in src and "double2" in src and "for (long long" not in src


def _wide(k):
    """The same kernel over 2^31 x more rows: offsets need 64-bit indices."""
    shape = (k.shape[0] << 31,) + tuple(k.shape[1:])
    return schedule(dataclasses.replace(k, shape=shape, numel=k.numel << 31), "cuda")


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_every_kernel_compiles_to_ptx(collected, tmp_path):
    src = tmp_path / "kernels.cu"
    wide = [_wide(k) for _, k in collected if len(k.shape) > 1][:6]
    text = render_cuda.render_module([k for _, k in collected] + wide)
    assert all("for (long long ft_" in render_cuda.render_kernel(k) for k in wide)
    src.write_text(text)
    r = subprocess.run([NVCC, "--ptx", "-arch=compute_90", "-Werror", "all-warnings",
                        str(src), "-o", str(tmp_path / "kernels.ptx")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ptx = (tmp_path / "kernels.ptx").read_text()
    for _, k in collected:
        assert f".entry {k.name}(" in ptx
    ptxas = shutil.os.path.join(shutil.os.path.dirname(NVCC), "ptxas")
    if shutil.os.path.exists(ptxas):  # to machine code: registers fit the launch bounds
        r = subprocess.run([ptxas, "-arch=sm_90", str(tmp_path / "kernels.ptx"), "-o",
                            str(tmp_path / "kernels.cubin")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def _nvrtc():
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()  # needs the NVRTC library (nvidia-cuda-nvrtc==13.0.*), not a GPU
        return nvrtc
    except Exception:
        return None


@pytest.mark.skipif(_nvrtc() is None, reason="cupy with NVRTC not installed")
def test_every_kernel_compiles_with_nvrtc(collected):
    """What cupy.RawModule does on a GPU machine: NVRTC, no host headers."""
    nvrtc = _nvrtc()
    prog = nvrtc.createProgram(render_cuda.render_module([k for _, k in collected]),
                               "kernels.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["--std=c++17", "--gpu-architecture=compute_90"])
    except Exception as e:
        pytest.fail(f"{e}\n{nvrtc.getProgramLog(prog)}")
    ptx = nvrtc.getPTX(prog)
    assert all(f".entry {k.name}(".encode() in (ptx if isinstance(ptx, bytes) else
                                                ptx.encode()) for _, k in collected)


# ---------------------------------------------------------------- running on the CPU

_CAST = {"float": "float", "double": "double", "bool": "bool", "int64_t": "long long"}


def _wrapper(k) -> str:
    args = ", ".join(f"({'const ' if not (p.output or p.inout) else ''}{_CAST[p.ctype]}*)a[{j}]"
                     for j, p in enumerate(k.params))
    return (f'extern "C" void run_{k.name}(void** a, unsigned g, unsigned b)\n'
            f"{{ FT_LAUNCH({k.name}, g, b, {args}); }}\n")


@pytest.fixture(scope="module")
def cpu_library(collected, tmp_path_factory):
    if GXX is None:
        pytest.skip("g++ not installed")
    runnable = [(g, k) for g, k in collected if not render_cuda.uses_shared_memory(k)]
    d = tmp_path_factory.mktemp("cuda_on_cpu")
    src = d / "kernels.cpp"
    src.write_text(render_cuda.render_module([k for _, k in runnable]) + "\n"
                   + "".join(_wrapper(k) for _, k in runnable))
    so = d / "kernels.so"
    r = subprocess.run([GXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-fno-strict-aliasing",
                        "-include", str(HEADER), str(src), "-o", str(so)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return ctypes.CDLL(str(so)), runnable


def _strided_input(p, shape, rng, misalign: int):
    """An array read through `p`'s element strides over `shape`, in fresh memory, starting
    `misalign` elements into an allocation (16-byte aligned at 0)."""
    npdt = NP_DTYPES[p.node.dtype]
    span = 1 + sum((n - 1) * s for n, s in zip(shape, p.strides)) if all(shape) else 1
    raw = np.empty(span + misalign + 8, npdt)
    assert raw.ctypes.data % 16 == 0 or npdt.itemsize == 1
    raw[:] = rng.random(raw.size) < 0.5 if npdt == np.bool_ else \
        rng.standard_normal(raw.size) * 2
    base = raw[misalign:]
    view = np.lib.stride_tricks.as_strided(base, shape, [s * npdt.itemsize for s in p.strides])
    return base, view


def _reference(group, views: dict) -> list:
    """The group's outputs from the eager numpy table, node by node."""
    impl = cpu_backend().impl
    env = dict(views)
    for n in group.nodes:
        args = [env[id(i)] if id(i) in env else eval_node(i, [], impl, np) for i in n.inputs]
        env[id(n)] = eval_node(n, args, impl, np)
    return [env[id(o)] for o in group.outputs]


def _inputs(g, k, rng, misalign: int):
    """(allocations the kernel reads from, {id(input node): the same values over the group's
    space}): a parameter's strides are over the kernel's space, in the dims' own order."""
    bases, views = [], {}
    for p, n in zip((p for p in k.params if not p.output), g.inputs):
        base, view = _strided_input(p, k.shape, rng, misalign)
        bases.append(base)
        views[id(n)] = view
    return bases, views


def _outputs(g, k, full):
    kept = tuple(n for n, r in zip(k.shape, k.reduced) if not r)
    return [full(kept if p is k.reduce_out else k.shape, 7, NP_DTYPES[p.node.dtype])
            for p in k.params if p.output]  # 7: catches items the kernel does not write


def _run_on_cpu(lib, g, k, misalign: int, grid: int, block: int):
    bases, views = _inputs(g, k, np.random.default_rng(1), misalign)
    outs = _outputs(g, k, np.full)
    ptrs = (ctypes.c_void_p * len(k.params))(*[a.ctypes.data for a in bases + outs])
    getattr(lib, f"run_{k.name}")(ptrs, grid, block)
    return outs, _reference(g, views)


def test_kernels_run_on_the_cpu_header_match_numpy(cpu_library):
    lib, runnable = cpu_library
    assert len(runnable) >= 15
    for g, k in runnable:
        # a small grid (the grid-stride loop wraps) and a grid larger than the work
        for misalign, grid, block in ((0, 3, 64), (1, 1000, 32)):
            got, want = _run_on_cpu(lib, g, k, misalign, grid, block)
            for a, b, n in zip(got, want, g.outputs):
                b = np.broadcast_to(b, n.shape).reshape(a.shape)
                tol = 2e-6 if a.dtype == np.float32 else 1e-12
                if a.dtype == np.bool_:
                    np.testing.assert_array_equal(a, b, err_msg=k.name)
                else:
                    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True,
                                               err_msg=f"{k.name} {n.op}")


def test_vector_path_and_scalar_tail_agree(cpu_library):
    """A float4 kernel over 1030 elements: 257 vectors then 2 scalars when aligned, all
    scalar when not; both give numpy's result (checked above), and every element is written."""
    lib, runnable = cpu_library
    vec = [(g, k) for g, k in runnable if "float4" in render_cuda.render_kernel(k)
           and k.numel % 4]
    assert vec
    for g, k in vec:
        for misalign in (0, 1):
            got, _ = _run_on_cpu(lib, g, k, misalign, 2, 64)
            assert not (got[0] == 7).any()


# ---------------------------------------------------------------- what the renderer refuses

def test_kernels_it_cannot_render_fail_clearly(collected):
    _, k = next((g, k) for g, k in collected if k.reduce_out is None)
    p = dataclasses.replace(k.params[0], ctype="_Float16")
    with pytest.raises(NotImplementedError, match="C type _Float16"):
        render_cuda.render_kernel(dataclasses.replace(k, params=[p] + k.params[1:]))
    _, r = next((g, k) for g, k in collected if k.reduce_out is not None)
    with pytest.raises(NotImplementedError, match="reduction 'prod'"):
        render_cuda.render_kernel(dataclasses.replace(r, reduce_op="prod"))
    # a kernel scheduled for another backend: its strategy is not one this renderer prints
    c = schedule(k, "c")
    with pytest.raises(NotImplementedError, match=f"kernel {c.name}: it is scheduled as "
                                                  "CStrategy"):
        render_cuda.render_kernel(c)
    with pytest.raises(NotImplementedError, match="batch of operand sets"):
        render_cuda.render_kernel(dataclasses.replace(k, batched=True))


def test_launch_configuration(collected):
    for _, k in collected:
        grid, block, partials = render_cuda.launch_config(k, max_blocks=100)
        assert 0 < grid <= 100 and block % 32 == 0 and 32 <= block <= render_cuda.BLOCK
        assert partials == (grid if render_cuda.variant(k) == "full" else 0)


def test_cuda_kernels_are_inspectable_without_cupy(collected):
    from fusetorch.runtime import cudabuild
    ks = cudabuild.CudaKernels([k for _, k in collected[:3]])
    assert all('extern "C" __global__' in ks.source and k.name in ks.source
               for _, k in collected[:3])
    try:
        import cupy  # noqa: F401
    except ImportError:  # without cupy a launch says so, as a missing C compiler does
        from fusetorch.runtime.cbuild import CompilerUnavailable
        with pytest.raises(CompilerUnavailable, match="cupy"):
            ks.launch(0, [])


# ---------------------------------------------------------------- on a GPU

def _gpu() -> bool:
    from fusetorch.runtime.device import _cupy
    return _cupy() is not None


@pytest.mark.skipif(not _gpu(), reason="needs cupy and an NVIDIA GPU")
def test_every_kernel_on_the_gpu_matches_numpy(collected):
    """Every kernel (block reductions too) launched through cudabuild on the device."""
    import cupy as cp
    from fusetorch.runtime import cudabuild
    ks = cudabuild.CudaKernels([k for _, k in collected])
    for i, (g, k) in enumerate(collected):
        for misalign in (0, 1):
            bases, views = _inputs(g, k, np.random.default_rng(2), misalign)
            dev_in = [cp.asarray(b) for b in bases]  # the kernel applies the strides itself
            outs = _outputs(g, k, cp.full)
            ks.launch(i, dev_in + outs)
            for a, b, n in zip(outs, _reference(g, views), g.outputs):
                a = cp.asnumpy(a)
                b = np.broadcast_to(b, n.shape).reshape(a.shape)
                tol = 2e-5 if a.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=k.name)


# ---------------------------------------------------------------- the C path's other kinds
# argmax/argmin, reductions over leading or middle dims (C's outer-axis layout, with its float
# partial rows and its tiles), fold2d and updates written in place: each function's kernels
# read graph inputs only; each is one computation (the C path's partition) that the C
# strategy and the CUDA strategy schedule each their way.

def _fold2d(cols, size, kernel, stride, padding, dilation):
    from fusetorch.tracer import dispatch as D
    return D.apply("fold2d", [cols], dict(size=size, kernel=kernel, stride=stride,
                                          padding=padding, dilation=dilation))


def _kind_cases():
    r = np.random.default_rng(3)

    def a(*shape, dtype=np.float32, nan=0):
        x = r.standard_normal(shape).astype(dtype)
        x.flat[r.choice(x.size, nan, replace=False)] = np.nan  # NaN wins max, min, argmax
        return x

    windows = a(2, 4, 3, 3, 5, 5)
    strided = a(1, 2, 4, 4, 2, 2).transpose(0, 1, 4, 5, 2, 3)  # windows [1, 2, 2, 2, 4, 4]
    return [  # (function, input arrays, write the first output over the first input)
        (lambda x: x.argmax(1), [a(8, 20, 6, nan=3)], False),
        (lambda x: (x * 2).argmin(-1), [a(8, 20, dtype=np.float64, nan=2)], False),
        (lambda x: torch.exp(x).argmax(0), [a(50)], False),  # one row
        (lambda x: (x > 0).float().argmax(1), [a(7, 33)], False),  # ties: the first
        (lambda x: torch.exp(x).amax(dim=1), [a(5, 20, 6, nan=2)], False),
        (lambda x: torch.exp(x).amax(dim=1), [a(3, 50, 4)], False),  # a block per row
        (lambda x: (x * 2).sum(0), [a(40, 300)], False),  # float partial rows in C
        (lambda x: torch.cos(x).amin(0), [a(30, 260, dtype=np.float64, nan=4)], False),
        (lambda x: (x + 1).sum(dim=(0, 2)), [a(10, 33, 3)], False),
        (lambda x: (x * 3).sum(0), [a(256, 4096)], False),  # C's tiled rows
        (lambda c: _fold2d(c, (9, 9), (3, 3), (2, 2), (1, 1), (1, 1)), [windows], False),
        (lambda c: _fold2d(c, (6, 6), (2, 2), (1, 1), (0, 0), (2, 2)),
         [strided], False),  # strided windows, dilation
        (lambda w, g: w * 0.9 + g, [a(40, 30, dtype=np.float64), a(40, 30, dtype=np.float64)],
         True),  # in place, the double2 path
        (lambda w, g: torch.where(w > 0, w * g, -w), [a(9, 7), a(9, 1)], True),  # not flat
    ]


def _kinds_lowered():
    out = []
    for fn, arrays, in_place in _kind_cases():
        tensors = [torch.from_numpy(x) for x in arrays]
        with trace(*tensors) as rec:
            res = fn(*tensors)
        graph = passes.optimize(rec.graph(res))
        env = {id(n): t._data for n, t in zip(graph.inputs, rec.input_tensors)}
        (g,) = fuse.partition(graph, cpu=True).groups()  # the C path's partition
        assert all(id(n) in env for n in g.inputs)
        places = {id(g.outputs[0]): graph.inputs[0]} if in_place else None
        ins = {id(n): env[id(n)] for n in g.inputs}
        out.append((g, lower.lower(g, layouts_of(g.inputs, [ins[id(n)] for n in g.inputs]),
                                   None, places, "cuda"), ins))
    return out


@pytest.fixture(scope="module")
def kinds():
    return _kinds_lowered()


def test_the_kind_cases_cover_the_c_kinds(kinds):
    ks = [k for _, k, _ in kinds]
    cs = [schedule(k, "c").strategy for k in ks]
    assert {k.reduce_op for k in ks if k.reduce_out} >= {"argmax", "argmin", "sum", "max", "min"}
    assert any(s.outer_axis and s.row_block for s in cs)
    assert any(s.outer_axis and s.loops == (4, 256, 1024) for s in cs)  # C's tiles
    assert any(k.template == "fold2d" for k in ks)
    assert any(p.inout for k in ks for p in k.params)
    variants = {render_cuda.variant(k) for k in ks}
    assert variants == {"pointwise", "rows_thread", "rows_block", "fold2d"}
    src = render_cuda.render_module(ks)
    assert "double2" in src and "ft_idx" in src


def test_cuda_schedules_a_computation_whatever_it_was_scheduled_for_before(kinds):
    # the strategy is a function of what the kernel computes: C's accumulator rows and tiles
    # leave nothing behind, and CUDA's reduced loops are innermost
    for _, k, _ in kinds:
        again = schedule(schedule(k, "c"), "cuda")
        assert again.name == k.name
        assert render_cuda.render_kernel(again) == render_cuda.render_kernel(k)
        s = k.strategy
        if k.reduce_out is not None:
            assert math.prod(s.loops) == k.numel and 0 < s.reduce_inner <= len(s.loops)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_the_c_kinds_compile_to_ptx(kinds, tmp_path):
    src = tmp_path / "kinds.cu"
    src.write_text(render_cuda.render_module([k for _, k, _ in kinds]))
    r = subprocess.run([NVCC, "--ptx", "-arch=compute_90", "-Werror", "all-warnings",
                        str(src), "-o", str(tmp_path / "kinds.ptx")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ptx = (tmp_path / "kinds.ptx").read_text()
    assert all(f".entry {k.name}(" in ptx for _, k, _ in kinds)


def test_the_c_kinds_run_on_the_cpu_header_match_numpy(kinds, tmp_path):
    if GXX is None:
        pytest.skip("g++ not installed")
    runnable = [(g, k, ins) for g, k, ins in kinds if not render_cuda.uses_shared_memory(k)]
    assert len(runnable) >= 12  # (one kernel per case: its CUDA schedule)
    src = tmp_path / "kinds.cpp"
    src.write_text(render_cuda.render_module([k for _, k, _ in runnable]) + "\n" +
                   "".join(_wrapper(k) for k in render_cuda.CUDA.unique(
                       [k for _, k, _ in runnable])))
    so = tmp_path / "kinds.so"
    r = subprocess.run([GXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-fno-strict-aliasing",
                        "-include", str(HEADER), str(src), "-o", str(so)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(so))
    for g, k, ins in runnable:
        want = _reference(g, ins)
        atol = 2e-6
        if g.reduce is not None and g.reduce.op == "sum" and g.reduce.dtype == torch.float32:
            # numpy adds float32 rows one by one in float32, the kernel in double: allow
            # numpy's rounding, a few ulp of the largest value per element added
            n = math.prod(g.reduce.inputs[0].shape) // max(1, math.prod(g.reduce.shape))
            atol = 1e-7 * n * max(float(np.abs(w).max()) for w in want)
        grid, block, _ = render_cuda.launch_config(k, max_blocks=1000)
        for grid, block in ((grid, block), (3, 64)):  # as launched; a grid-stride wrap
            # an input written in place gets a fresh copy (same layout: C-contiguous)
            args = [ins[id(n)].copy() if p.inout else ins[id(n)]
                    for p, n in zip(k.params, g.inputs)]
            outs = [np.full(p.node.shape, 7, NP_DTYPES[p.node.dtype])
                    for p in k.params if p.output]
            ptrs = (ctypes.c_void_p * len(k.params))(*[a.ctypes.data for a in args + outs])
            getattr(lib, f"run_{k.name}")(ptrs, grid, block)
            got = {id(p.node): a for p, a in zip(k.params, args + outs) if p.output}
            got.update({id(n): a for p, a in zip(k.params, args) for n in g.outputs
                        if p.inout and any(q is p for q, _ in k.stores)})
            for n, w in zip(g.outputs, want):
                a = got[id(n)]
                rtol, tol = (2e-6, atol) if a.dtype == np.float32 else (1e-12, 1e-12)
                np.testing.assert_allclose(a, np.broadcast_to(w, a.shape), rtol=rtol, atol=tol,
                                           equal_nan=True, err_msg=f"{k.name} {n.op}")
                if n.op in ("argmax", "argmin") or k.template:  # exactly numpy's
                    np.testing.assert_array_equal(a, w, err_msg=k.name)


def test_refused_kernels_name_themselves(kinds):
    from fusetorch.codegen.render_base import Refused
    from fusetorch.runtime import cudabuild
    from fusetorch.runtime.cbuild import CompilerUnavailable
    _, k, _ = next(x for x in kinds if x[1].template == "fold2d")
    odd = dataclasses.replace(k, template="unfold3d")
    with pytest.raises(Refused, match=f"kernel {k.name}: it has no template 'unfold3d'"):
        render_cuda.render_kernel(odd)
    with pytest.raises(CompilerUnavailable, match="no template 'unfold3d'") as e:
        cudabuild.CudaKernels([odd])  # the error compile falls back from
    assert isinstance(e.value, cudabuild.KernelRefused)
