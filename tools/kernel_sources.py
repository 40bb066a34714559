"""The C and CUDA sources of a corpus of kernels, written to a directory, for checking that a
change to lowering, strategy or rendering leaves the generated code as it was (a developer
tool: `diff -r` two runs).

    PYTHONPATH=$PWD python tools/kernel_sources.py OUT_DIR [--quick]

The corpus: every compiled program the LeNet, two-layer and small GPT training steps build
(`fusetorch.compile` over forward, backward and the optimizer step), the compiled-opinfo
samples (each entry's variants on its samples, traced with their joint backward as
`tests/codegen/test_cuda_codegen.py` plans them), that test file's cases (every reduction
skeleton, argmax, outer-axis rows, tiles, fold2d, in-place updates), and the fused optimizer
kernels, and the hand-written template kernels (max pooling, convolution, LSTM) over a set of
geometries (`hand/`, their sources as rendered, without building them). Each program's kernels are rendered for C (the plan `compile` makes) and for CUDA
(the same graph planned for CUDA), one file per program and backend. Kernel names are digests
of the kernels' data, so they change whenever that data's form does: they are written as
`ft_<kind>_K<n>` (numbered in order of appearance in the file), so only the code is compared.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks"),
                str(ROOT / "tests" / "codegen")]
os.environ.setdefault("FUSETORCH_COMPILE_BACKGROUND", "0")

import numpy as np  # noqa: E402

import fusetorch as torch  # noqa: E402
from fusetorch.codegen import render, render_cuda  # noqa: E402
from fusetorch.runtime import kernel_plan  # noqa: E402

try:  # a kernel's loop structure per backend (codegen/strategy.py)
    from fusetorch.codegen.strategy import schedule
except ImportError:  # before it: a renderer took any kernel
    schedule = None

_NAME = re.compile(r"\bft_([a-z0-9_]+?)_([0-9a-f]{12})(?![0-9a-f])")


def normalise(text: str) -> str:
    seen: dict = {}

    def sub(m):
        key = m.group(0)
        if key not in seen:
            seen[key] = f"ft_{m.group(1)}_K{len(seen)}"
        return seen[key]
    # (and the lines of this file and of the test file whose cases it traces: they move as
    # those files are edited)
    return re.sub(r"(kernel_sources|test_cuda_codegen)\.py:\d+", r"\1.py", _NAME.sub(sub, text))


class Corpus:
    def __init__(self, out: Path):
        self.out = out
        self.n = 0
        (out / "c").mkdir(parents=True, exist_ok=True)
        (out / "cuda").mkdir(parents=True, exist_ok=True)
        (out / "cuda_of_c").mkdir(parents=True, exist_ok=True)

    def write(self, label: str, c_kernels: list | None, cuda_kernels: list | None) -> None:
        self.n += 1
        stem = f"{self.n:04d}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', label)[:60]}"
        for backend, ks, r, ext in (("c", c_kernels, render, "c"),
                                    ("cuda", cuda_kernels, render_cuda, "cu"),
                                    ("cuda_of_c", c_kernels, render_cuda, "cu")):
            if ks is None:
                continue
            if backend == "cuda_of_c" and schedule is not None:  # C's kernels, for CUDA
                ks = [schedule(k, "cuda") for k in ks]
            try:
                text = "\n\n".join(r.render_kernel(k) for k in ks)
            except Exception as e:  # a refusal is part of what is compared
                text = f"REFUSED {type(e).__name__}: {normalise(str(e))}"
            (self.out / backend / f"{stem}.{ext}").write_text(normalise(text) + "\n")


def plans_of(corpus: Corpus, label: str, graph, layouts, **kw) -> None:
    """The C plan (as compile makes it) and the CUDA plan of the same graph."""
    c = kernel_plan.make(graph, layouts, cpu=True, **kw)
    try:
        cu = kernel_plan.make(graph, layouts, cpu=False,
                              **{k: v for k, v in kw.items() if k == "updates"}).kernels
    except Exception:
        cu = None
    corpus.write(label, c.kernels, cu)


def capture_compiles(corpus: Corpus, label: str, run) -> None:
    """Every plan `run()` makes through `kernel_plan.make`, written as it is made."""
    real = kernel_plan.make

    def make(graph, layouts, *, cpu=True, **kw):
        plan = real(graph, layouts, cpu=cpu, **kw)
        if cpu:
            try:
                cu = real(graph, plan.layouts, cpu=False,
                          **{k: v for k, v in kw.items() if k == "updates"}).kernels
            except Exception:
                cu = None
            corpus.write(label, plan.kernels, cu)
        return plan
    kernel_plan.make = make
    try:
        run()
        from fusetorch.runtime import program
        program.wait_for_builds() if hasattr(program, "wait_for_builds") else None
    finally:
        kernel_plan.make = real


def training_steps(corpus: Corpus) -> None:
    import models
    nn, F = torch.nn, torch.nn.functional

    def lenet():
        torch.manual_seed(0)
        m = models.lenet_model(torch)
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        x, y = torch.randn(8, 1, 32, 32), torch.randint(0, 10, (8,))

        @torch.compile
        def step(a, b):
            opt.zero_grad()
            loss = F.cross_entropy(m(a), b)
            loss.backward()
            opt.step()
            return loss
        for _ in range(2):
            step(x, y)

    def two_layer():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(64, 100), nn.ReLU(), nn.Linear(100, 10))
        opt = torch.optim.SGD(m.parameters(), lr=1e-4)
        x, y = torch.randn(256, 64), torch.randn(256, 10)

        @torch.compile
        def step(a, b):
            opt.zero_grad()
            loss = nn.MSELoss(reduction="sum")(m(a), b)
            loss.backward()
            opt.step()
            return loss
        for _ in range(2):
            step(x, y)

    def gpt():
        step, x, y = models.gpt_step(torch, batch=2, vocab=64, block=16, n_layer=1, n_head=2,
                                     n_embd=32)
        s = torch.compile(step)
        for _ in range(2):
            s(x, y)

    for label, fn in (("lenet", lenet), ("two_layer", two_layer), ("gpt", gpt)):
        try:
            capture_compiles(corpus, label, fn)
        except Exception:
            traceback.print_exc()


def codegen_cases(corpus: Corpus) -> None:
    """tests/codegen/test_cuda_codegen.py's cases and kinds, and the C strategies they miss."""
    import test_cuda_codegen as T
    from fusetorch.ir import passes
    from fusetorch.runtime.layouts import layouts_of
    from fusetorch.tracer.trace import trace
    cases, grads = T._cases()
    for i, (fn, args) in enumerate(cases + grads):
        traced(corpus, f"cuda_case{i}", fn, args)
    r = np.random.default_rng(5)
    t = lambda *shape: torch.tensor(r.standard_normal(shape).astype(np.float32))  # noqa: E731
    extra = [  # the C strategies the cases above do not reach
        (lambda x: (x * x).sum(), (t(1 << 21),)),  # a blocked sum, parallel
        (lambda x: (x * 2).sum(-1), (t(4, 10000),)),  # float partial sums of blocks
        (lambda x: (x * 2).sum(-1), (t(300, 5000),)),  # ... in parallel rows
        (lambda x: (x + 1).sum(dim=(0, 2)), (t(8, 30, 50),)),  # outer axis, innermost reduced
        (lambda x: (x + 1).amax(dim=(0, 2)), (t(8, 30, 50),)),
        (lambda x: (x + 1).argmax(0), (t(30, 50),)),
        (lambda x: torch.exp(x).sum(0), (t(2048, 300),)),  # outer axis, no prefix, large
        (lambda x: torch.exp(x) * 2, (t(1 << 20),)),  # a parallel flat loop
        (lambda x: torch.exp(x.t()) * 2, (t(1024, 1030),)),  # parallel nested loops
        (lambda x: x.t().sum(0), (t(64, 3000),)),
    ]
    for i, (fn, args) in enumerate(extra):
        traced(corpus, f"extra{i}", fn, args, grad=False)
    F = torch.nn.functional
    pools = [  # max pooling's groups (values, indices) and its gradient's
        (lambda x: F.max_pool2d(x, 2), (t(2, 3, 8, 8),)),
        (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
         (t(2, 3, 9, 7),)),
        (lambda x: F.max_pool2d(x, (3, 2), (1, 2), (1, 0), dilation=(2, 1)), (t(1, 2, 12, 11),)),
        (lambda x: F.max_pool2d(x.transpose(2, 3), 2), (t(2, 3, 8, 6),)),
        (lambda x: F.max_pool2d(x, 3, 2, 1), (t(16, 64, 64, 64),)),
    ]
    for i, (fn, (x,)) in enumerate(pools):
        def step(fn=fn, x=x):
            x = x.detach().requires_grad_(True)
            cf = torch.compile(lambda a: (fn(a) if not isinstance(fn(a), tuple) else fn(a)[0])
                               .square().sum())
            for _ in range(2):
                cf(x).backward()
        try:
            capture_compiles(corpus, f"pool{i}", step)
        except Exception:
            traceback.print_exc()
    for i, (fn, arrays, in_place) in enumerate(T._kind_cases()):
        tensors = [torch.from_numpy(x) for x in arrays]
        with trace(*tensors) as rec:
            res = fn(*tensors)
        graph = passes.optimize(rec.graph(res))
        lay = layouts_of(graph.inputs, [t._data for t in rec.input_tensors])
        updates = {0: 0} if in_place else None
        plans_of(corpus, f"kind{i}", graph, lay, updates=updates)


def traced(corpus: Corpus, label: str, call, args, kwargs=None, params=(),
           grad: bool = True) -> None:
    """call(*args, **kwargs) traced with its joint backward (w.r.t. its floating inputs), as
    compile optimises it, planned for both backends."""
    import opinfo
    from fusetorch.ir import passes
    from fusetorch.ir.grad import backward_graph
    from fusetorch.ir.graph import Graph
    from fusetorch.runtime.layouts import layouts_of
    from fusetorch.tracer.trace import trace
    kwargs = kwargs or {}
    tensors = opinfo.tensors_in(args) + opinfo.tensors_in(kwargs)
    try:
        with trace(*tensors, *params) as rec:
            out = call(*args, **kwargs)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor)]
        if not outs:
            return
        graph = rec.graph(*outs)
        wrt = [rec.inputs[k] for k, t in enumerate(rec.input_tensors)
               if t.dtype.is_floating_point]
        if grad and wrt and outs[0].dtype.is_floating_point:
            bw = backward_graph(graph.outputs[:1], wrt)
            graph = Graph(graph.inputs, graph.outputs + [f for f, _ in bw.values])
        graph = passes.optimize(graph, passes.CPU)
        lay = layouts_of(graph.inputs, [t._data for t in rec.input_tensors])
        plans_of(corpus, label, graph, lay)
    except Exception:
        return


def opinfo_samples(corpus: Corpus, quick: bool) -> None:
    """Each opinfo entry's first variant on its first two samples (layers: their module)."""
    import opinfo
    import opinfo_nn
    entries = opinfo.OPS + opinfo_nn.OPS + opinfo_nn.MODULES
    if quick:
        entries = entries[::7]
    for e in entries:
        try:
            samples = e.make_samples(widen=False)
        except Exception:
            continue
        variants = list(e.variants.items())[:1]
        for vname, fn in variants:
            for s in samples[:2]:
                if fn is None:
                    try:
                        layer = e.make()
                        layer.train(e.train)
                    except Exception:
                        continue
                    traced(corpus, f"{e.name}_{s.name}", layer, s.args, s.kwargs,
                           list(layer.parameters()), e.grad)
                else:
                    traced(corpus, f"{e.name}_{vname}_{s.name}", fn, s.args, s.kwargs,
                           grad=e.grad)


def fused_optimizers(corpus: Corpus) -> None:
    """The fused eager step of every optimizer (from a group's second step), as built."""
    from fusetorch.optim import _fused
    real = _fused.kernel_for

    def kernel_for(rule, f, dtype):
        made = real(rule, f, dtype)
        if made is not None:
            corpus.write(f"optim_{rule.name}_{np.dtype(dtype).name}", [made[0]], None)
        return made
    _fused.kernel_for = kernel_for
    try:
        for name in ("SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax",
                     "NAdam", "RAdam", "ASGD", "Rprop"):
            for dtype in (torch.float32, torch.float64):
                try:
                    p = torch.nn.Parameter(torch.randn(5000, dtype=dtype))
                    kw = {"momentum": 0.9} if name == "SGD" else {}
                    opt = getattr(torch.optim, name)([p], lr=1e-3, **kw)
                    for _ in range(3):
                        p.grad = torch.randn(5000, dtype=dtype)
                        opt.step()
                except Exception:
                    traceback.print_exc()
    finally:
        _fused.kernel_for = real


def hand_written(out: Path) -> None:
    """The eager template kernels' sources as their builders render them (nothing is built:
    `template_functions` is replaced by one that writes the source and reports no compiler)."""
    from fusetorch.codegen import environment
    from fusetorch.runtime import conv, eager_kernels, recurrent, softmax_rows
    (out / "hand").mkdir(parents=True, exist_ok=True)
    real, label = eager_kernels.template_functions, [""]

    def record(template, ctx, cdef, names):
        text = environment("c").get_template(template).render(**ctx)
        (out / "hand" / f"{label[0]}.c").write_text(normalise(text) + "\n")
        return None
    eager_kernels.template_functions = record
    try:
        for dtype in (np.float32, np.float64):
            d = np.dtype(dtype).name
            for i, (shape, kernel, stride, padding, dilation, extra) in enumerate((
                    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), (0, 0)),
                    ((2, 3, 9, 7), (3, 3), (2, 1), (1, 1), (1, 1), (1, 0)),
                    ((1, 2, 12, 11), (3, 2), (1, 2), (1, 0), (2, 1), (0, 1)),
                    ((16, 64, 64, 64), (3, 3), (2, 2), (1, 1), (1, 1), (0, 0)))):
                x = np.zeros(shape, dtype)
                hp, wp = shape[2] + 2 * padding[0] + extra[0], shape[3] + 2 * padding[1] + extra[1]
                oh = (hp - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
                ow = (wp - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
                geo = (kernel, stride, padding, dilation, extra, (oh, ow))
                for part in (None, 0, 1):
                    label[0] = f"max_pool2d_{d}_{i}_part{part}"
                    eager_kernels._build_pool(x, *geo, part=part)
                g = np.zeros(shape[:2] + (oh, ow), dtype)[..., ::1]
                label[0] = f"max_pool2d_grad_{d}_{i}"
                eager_kernels._build_pool(x, *geo, g)
            for hid in (1, 3, 8, 20):
                label[0] = f"lstm_scan_{d}_{hid}"
                recurrent._build(np.dtype(dtype), hid)
            label[0] = f"conv2d_{d}_any"
            conv._build(np.dtype(dtype))
            label[0] = f"softmax_rows_{d}"
            softmax_rows._build(np.dtype(dtype))
            for i, geometry in enumerate((
                    (2, 3, 8, 8, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, 6, 6),
                    (4, 16, 14, 14, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 7, 7),
                    (2, 8, 9, 9, 8, 5, 5, 1, 1, 2, 2, 2, 2, 2, 5, 5))):
                label[0] = f"conv2d_{d}_{i}"
                conv._build(np.dtype(dtype), geometry)
    finally:
        eager_kernels.template_functions = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true", help="every 7th opinfo entry")
    ap.add_argument("--only", choices=("hand", "cases"),
                    help="only the hand-written kernels, or only those and the codegen cases")
    a = ap.parse_args()
    corpus = Corpus(Path(a.out))
    import warnings
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    hand_written(Path(a.out))
    if a.only == "hand":
        return
    codegen_cases(corpus)
    if a.only == "cases":
        return
    training_steps(corpus)
    fused_optimizers(corpus)
    opinfo_samples(corpus, a.quick)
    print(f"{corpus.n} programs written under {a.out}")


if __name__ == "__main__":
    main()
