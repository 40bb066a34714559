"""A/B of checkouts (and PyTorch) in alternating blocks, for a machine other work loads.

    python benchmarks/bench_ab.py --repos /tmp/base,. [--torch /path/to/python-with-torch]
        [--cells ops,composites,steps,prog:char_rnn_generation] [--blocks 12] [--clock cpu]

Each checkout (a git worktree of the commit to compare) and PyTorch get one worker process,
started once; the workers then run one block of every cell in turn, the order reversed every
other block, so that a change of the machine's load hits every side alike (bench_table.py and
bench_programs.py run their sides one after the other, minutes apart). A cell is the best and
the median time per call over the blocks; the ratios are of medians. `--clock cpu` times the
worker's CPU time (what the call costs, whatever share of the cores it got), and the workers
run one thread (OMP_NUM_THREADS=1, `set_num_threads(1)` for PyTorch) unless `--threads`.

Cells: `runner` (the executors' per-call overhead: a small compiled program, a compiled step,
a small interpreted backward and a create_graph one, bench_autograd's step), `ops` (bench_dispatch.grad_ops: issue 29's small ops with requires_grad), `composites`
(an RNN loop's library calls: Linear, LogSoftmax, NLLLoss of LogSoftmax, cat of three,
dropout, on one row), `steps` (bench_table's two-layer and LeNet training steps, eager, and
the LeNet step compiled),
`gemm` (the 512x4096x1024x10 two-layer step, eager and compiled: issue 24's GEMM-bound step),
`prog:NAME` (a program of tests/programs, its `main()`; PyTorch runs it with its imports of
fusetorch turned into torch's, as bench_programs.py does).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_WORKER = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import bench_ab
fns = bench_ab.cells({module!r}, {which!r}, {programs!r}, {threads!r})
for f, _ in fns.values():
    for _ in range(3):
        f()
settle = getattr(sys.modules.get("fusetorch.runtime.program"), "wait_for_builds", None)
if settle is not None:  # (compiled cells: blocks time the built programs)
    settle()
    for f, _ in fns.values():
        f()
    settle()
clock = time.process_time if {cpu!r} else time.perf_counter
print("ready", flush=True)
for _ in sys.stdin:
    out = {{}}
    for k, (f, n) in fns.items():
        t0 = clock()
        for _ in range(n):
            f()
        out[k] = (clock() - t0) / n
    print(json.dumps(out), flush=True)
"""


def cells(module: str, which: list, programs: str, threads: bool) -> dict:
    """{label: (callable, calls per block)} for module `module` (fusetorch or torch)."""
    T = importlib.import_module(module)
    if module == "torch" and not threads:
        T.set_num_threads(1)
    out = {}
    if "ops" in which:
        from bench_dispatch import grad_ops
        out.update({k: (f, 2000) for k, f in grad_ops(T).items()})
    if "composites" in which:
        T.manual_seed(0)
        lin, logsm, nll = T.nn.Linear(91, 32), T.nn.LogSoftmax(dim=1), T.nn.NLLLoss()
        x, h, target = T.randn(1, 91), T.randn(1, 32, requires_grad=True), T.tensor([3])
        out.update({
            "Linear(91, 32) of a row": (lambda: lin(x), 1000),
            "LogSoftmax of a row, requires_grad": (lambda: logsm(h), 1000),
            "NLLLoss(LogSoftmax)": (lambda: nll(logsm(h), target), 1000),
            "cat of three rows": (lambda: T.cat((x, h, h), 1), 1000),
            "dropout(0.1) of a row": (lambda: T.nn.functional.dropout(h, 0.1, True), 1000)})
    if "steps" in which:
        from bench_table import lenet, two_layer
        out["two-layer step 64x1000x100x10"] = (two_layer(T, 64, 1000, 100, 10)["eager"], 20)
        out["LeNet step, batch 64"] = (lenet(T)["eager"], 3)
        out["LeNet step, compiled"] = (lenet(T)["compiled"], 3)  # (issue 29: <= 0.7x eager's)
    if "runner" in which:  # the executors' per-call overhead (issue 28's one runner)
        out.update(runner_cells(T))
    if "gemm" in which:  # issue 24's GEMM-bound step: two 2-GFLOP products
        from bench_table import two_layer
        big = two_layer(T, 512, 4096, 1024, 10)
        out["two-layer step 512x4096x1024x10"] = (big["eager"], 2)
        out["same, compiled"] = (big["compiled"], 2)
    for w in which:
        if w.startswith("prog:"):
            name = w[len("prog:"):]
            spec = importlib.util.spec_from_file_location(f"bench_ab_{name}",
                                                          f"{programs}/{name}.py")
            m = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = m
            spec.loader.exec_module(m)

            def run(m=m):
                with contextlib.redirect_stdout(io.StringIO()):
                    m.main()
            out[name] = (run, 1)
    return out


def runner_cells(T) -> dict:
    """A small compiled program's call, a compiled training step, a small backward graph
    interpreted (too small for kernels), the same with create_graph (Tensors through
    dispatch), and bench_autograd's eager step (a larger backward, compiled once seen)."""
    from bench_autograd import fusetorch_step
    from bench_table import two_layer
    T.manual_seed(0)
    a, b = T.randn(10, 10), T.randn(10, 10)
    add = T.compile(lambda p, q: p + q)
    x, y = T.randn(10, 10, requires_grad=True), T.randn(10, 10)

    def backward():
        (x * y).tanh().sum().backward()

    def grad2():
        (g,) = T.autograd.grad((x * y).tanh().sum(), x, create_graph=True)
        g.sum().backward()

    xs, ys = T.randn(64, 1000), T.randn(64, 10)
    w1, w2 = T.randn(1000, 100, requires_grad=True), T.randn(100, 10, requires_grad=True)
    return {"x + y 10x10, compiled": (lambda: add(a, b), 2000),
            "two-layer step 64x1000x100x10, compiled": (
                two_layer(T, 64, 1000, 100, 10)["compiled"], 20),
            "tanh(x*y).sum() 10x10 backward, interpreted": (backward, 1000),
            "same, create_graph and its backward": (grad2, 300),
            "bench_autograd two-layer step": (lambda: fusetorch_step(xs, ys, w1, w2), 20)}


def _start(python: str, root: str, module: str, args, programs: str) -> subprocess.Popen:
    env = dict(os.environ)
    if not args.threads:
        env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = "1"
    # every side runs this file's workloads (the same code against each API); a checkout's
    # side imports its own fusetorch
    env["PYTHONPATH"] = root if module == "fusetorch" else ""
    code = _WORKER.format(here=str(HERE), module=module, which=args.cells, programs=programs,
                          threads=args.threads, cpu=args.clock == "cpu")
    p = subprocess.Popen([python, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, cwd=programs, env=env)
    line = p.stdout.readline().strip()
    if line != "ready":
        raise RuntimeError(f"the worker for {root or module} did not start: {line!r}")
    return p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", default=".", help="checkouts to compare, comma-separated")
    ap.add_argument("--torch", metavar="PYTHON", default=None, help="also PyTorch, here")
    ap.add_argument("--cells", default="ops", help="ops,composites,steps,gemm,prog:NAME,...")
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    ap.add_argument("--threads", action="store_true", help="keep the thread settings")
    args = ap.parse_args()
    args.cells = args.cells.split(",")
    roots = [str(Path(r).resolve()) for r in args.repos.split(",")]
    sides = [(Path(r).name or r, sys.executable, r, "fusetorch", f"{r}/tests/programs")
             for r in roots]
    with tempfile.TemporaryDirectory() as tmp:
        if args.torch:
            for f in Path(roots[0], "tests", "programs").glob("*.py"):
                (Path(tmp) / f.name).write_text(re.sub(r"\bfusetorch\b", "torch", f.read_text()))
            sides.append(("torch", args.torch, "", "torch", tmp))
        procs = [_start(py, root, mod, args, progs) for _, py, root, mod, progs in sides]
        res = [{} for _ in sides]
        order = list(range(len(sides)))
        for b in range(args.blocks):
            for i in (order if b % 2 == 0 else order[::-1]):
                procs[i].stdin.write("go\n")
                procs[i].stdin.flush()
                for k, v in json.loads(procs[i].stdout.readline()).items():
                    res[i].setdefault(k, []).append(v)
        for p in procs:
            p.stdin.close()
            p.wait()
    names = [s[0] for s in sides]
    ratios = [f"{n} / {names[0]}" for n in names[1:len(roots)]]
    if args.torch:
        ratios += [f"{n} / torch" for n in names[:len(roots)]]
    print("| cell | " + " | ".join(f"{n}: best / median" for n in names) + " | " +
          " | ".join(ratios) + " |")
    print("|---" * (1 + len(names) + len(ratios)) + "|")
    for k in res[0]:
        med = [statistics.median(r[k]) for r in res]
        unit, scale = ("us", 1e6) if med[0] < 1e-4 else ("ms", 1e3)
        row = [f"{min(r[k]) * scale:.3g} / {m * scale:.3g} {unit}" for r, m in zip(res, med)]
        row += [f"{m / med[0]:.2f}" for m in med[1:len(roots)]]
        if args.torch:
            row += [f"{m / med[-1]:.2f}" for m in med[:len(roots)]]
        print(f"| {k} | " + " | ".join(row) + " |")
    print(f"({args.blocks} alternating blocks, {args.clock} clock, "
          f"{'the threads as set' if args.threads else 'one thread'}; ratios of medians; "
          f"load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
