"""Every row of issue 13's table: fusetorch next to numpy in one process, and PyTorch beside
them where it is installed.

    python benchmarks/bench_table.py [--quick] [--stat median|best] [--threads N] [--clock cpu]
    python benchmarks/bench_table.py --torch /path/to/python-with-torch

Rows: the two-layer training step (nn.Sequential, MSELoss(sum), SGD) at 64x1000x100x10 and
512x4096x1024x10 (numpy by hand, eager, the whole step compiled), the LeNet-5 step at batch
64 (numpy by hand, eager, whole step compiled), the 6-op elementwise chain over 2^24 floats,
`((a - b) ** 2).sum()` over 2^24, `x + y` on 10x10 with requires_grad=True (per op), a
character-level LSTM training step (eager, whole step compiled; no numpy column), `a.sum()`
over 2^24 (the machine's read bandwidth, what the squared sum's 128 MiB are bound by), and the
first calls of the chain and of the two-layer whole step, eager and compiled, each in a new
process with an empty kernel cache (cold), with the median of the later calls in those
processes (the compiled ones after their background build is handed over), and the
nanoGPT-shaped training step of issue 24 (6 layers, 384 wide, 6 heads, block 256, batch 8,
vocab 4096, AdamW; eager and compiled), each variant in a
process of its own so that its cell can also give the process's peak resident set size (the
first steps included: they are part of what a training run needs).

The workloads are written once against a module `T` with PyTorch's API, so `--torch PYTHON`
runs the same code with `import torch` in that interpreter (a subprocess; never needed) and
adds its columns: eager and torch.compile (its first call cold: a fresh inductor cache).
Within a row the variants take turns in short blocks, so a change of the machine's load
hits them alike, each block after a pause in which the BLAS workers the block before left
spinning go to sleep (`PAUSE`); a cell is the median (or best) time per call over the blocks,
wall clock.
On a machine other processes load, read the ratios within a row, not the absolute times, and
use `--threads 1` (numpy's threaded BLAS otherwise leaves workers spinning into the next
variant's block) and `--clock cpu` (the CPU time of the process: what it would take alone, as
far as caches allow).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_dispatch import GRAD_OPS, grad_ops  # (beside this script: on sys.path when it runs)
from models import lenet_model

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
N = 1 << 24


# ------------------------------------------------------------------ timing

CLOCK = time.perf_counter  # or time.process_time (--clock cpu)


# The environment as the user started this script: importing fusetorch sets
# OMP_WAIT_POLICY=PASSIVE for its own kernels (runtime/cbuild.py), which made PyTorch's eager
# two-layer step 2x slower in a child that inherited it (0.98 vs 0.49 ms here): subprocesses
# get the user's environment, plus what the flags ask.
USER_ENV = dict(os.environ)


# Before each block: OpenBLAS's workers spin for ~0.1 s after a threaded product, so the
# block after numpy's hand-written LeNet (threaded products) ran 5-25% slower on a second core
# they kept busy; every variant, in every process, waits alike.
PAUSE = 0.15


def _calibrate(fn, target: float) -> int:
    """Calls per block so that a block takes about `target` seconds (at least one)."""
    t0 = CLOCK()
    fn()
    one = max(CLOCK() - t0, 1e-7)
    return max(1, int(target / one))


def _settle() -> None:
    """Let fusetorch's background builds land: a cell measures the steady state, the built
    programs, not the interpreted calls that run while gcc works (the cold rows time those)."""
    program = sys.modules.get("fusetorch.runtime.program")
    if program is not None and hasattr(program, "wait_for_builds"):
        program.wait_for_builds()


def measure(cells: dict, rounds: int, target: float, stat: str) -> dict:
    """Seconds per call of each callable in `cells`, its blocks taking turns with the others'."""
    for fn in cells.values():  # warm up: builds, caches, the compiled eager backward
        for _ in range(3):
            fn()
        _settle()
        for _ in range(2):  # (builds a later call starts, e.g. a backward at its second use)
            fn()
        _settle()
    number = {k: _calibrate(fn, target) for k, fn in cells.items()}
    per_call = {k: [] for k in cells}
    for _ in range(rounds):
        for k, fn in cells.items():
            time.sleep(PAUSE)
            t0 = CLOCK()
            for _ in range(number[k]):
                fn()
            per_call[k].append((CLOCK() - t0) / number[k])
    pick = statistics.median if stat == "median" else min
    return {k: pick(v) for k, v in per_call.items()}


# ------------------------------------------------------------------ workloads, for T = torch-like

def two_layer(T, n: int, d_in: int, h: int, d_out: int, device: str = "cpu") -> dict:
    nn = T.nn
    T.manual_seed(0)
    net = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, d_out)).to(device)
    mse = nn.MSELoss(reduction="sum")
    opt = T.optim.SGD(net.parameters(), lr=1e-6)
    x, y = T.randn(n, d_in, device=device), T.randn(n, d_out, device=device)

    def step(a, b):
        opt.zero_grad()
        loss = mse(net(a), b)
        loss.backward()
        opt.step()
        return loss

    whole = T.compile(step)
    return {"eager": lambda: step(x, y), "compiled": lambda: whole(x, y)}


def lenet(T, device: str = "cpu") -> dict:
    T.manual_seed(0)
    model = lenet_model(T).to(device)
    opt = T.optim.SGD(model.parameters(), lr=0.01)
    x, y = T.randn(64, 1, 32, 32, device=device), T.randint(0, 10, (64,), device=device)

    def step(a, b):
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(model(a), b)
        loss.backward()
        opt.step()
        return loss

    whole = T.compile(step)
    return {"eager": lambda: step(x, y), "compiled": lambda: whole(x, y)}


def chain_fn(T):
    return lambda t: T.tanh(T.exp(t * 0.5 + 1).clamp(max=10) * t - 0.25)


def chain(T) -> dict:
    T.manual_seed(0)
    x = T.randn(N)
    f, c = chain_fn(T), T.compile(chain_fn(T))
    return {"eager": lambda: f(x), "compiled": lambda: c(x)}


def squared_sum(T) -> dict:
    T.manual_seed(0)
    a, b = T.randn(N), T.randn(N)
    f = lambda u, v: ((u - v) ** 2).sum()  # noqa: E731
    c = T.compile(f)
    return {"eager": lambda: f(a, b), "compiled": lambda: c(a, b)}


def plain_sum(T) -> dict:
    """What reading memory costs here: the ceiling of the squared-sum row, which reads twice
    as much (issue 13 measured PyTorch's a.sum() of 64 MiB at 0.75 ms on its machine)."""
    T.manual_seed(0)
    a = T.randn(N)
    c = T.compile(lambda u: u.sum())
    return {"eager": lambda: a.sum(), "compiled": lambda: c(a)}


def char_lstm(T) -> dict:
    """A character-level model's training step (the programs issue 13 names as 2-3x slower):
    Embedding(60, 32), LSTM 32 -> 128 over 50 steps (batch_first), Linear(128, 60),
    cross-entropy, Adam; batch 16."""
    nn = T.nn
    T.manual_seed(0)
    emb, lstm, out = nn.Embedding(60, 32), nn.LSTM(32, 128, batch_first=True), nn.Linear(128, 60)
    params = list(emb.parameters()) + list(lstm.parameters()) + list(out.parameters())
    opt = T.optim.Adam(params, lr=1e-3)
    x, y = T.randint(0, 60, (16, 50)), T.randint(0, 60, (16, 50))

    def step(a, b):
        opt.zero_grad()
        h, _ = lstm(emb(a))
        loss = nn.functional.cross_entropy(out(h).reshape(-1, 60), b.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    whole = T.compile(step)
    return {"eager": lambda: step(x, y), "compiled": lambda: whole(x, y)}


def add_small(T) -> dict:
    x, y = T.randn(10, 10, requires_grad=True), T.randn(10, 10, requires_grad=True)
    return {"eager": lambda: x + y}


ROWS = [  # (label, workload: T -> {variant: callable}, unit of its cells)
    ("two-layer step 64x1000x100x10", lambda T: two_layer(T, 64, 1000, 100, 10), "ms"),
    ("same, 512x4096x1024x10", lambda T: two_layer(T, 512, 4096, 1024, 10), "ms"),
    ("LeNet step, batch 64", lenet, "ms"),
    ("6-op elementwise chain, 2^24", chain, "ms"),
    ("((a-b)**2).sum(), 2^24", squared_sum, "ms"),
    ("a.sum(), 2^24 (read bandwidth)", plain_sum, "ms"),
    ("x + y 10x10, requires_grad=True", add_small, "us"),
    ("char-LSTM step, 16x50, 32->128", char_lstm, "ms"),
]
# Issue 29's small ops of RNN loops, requires_grad=True (bench_dispatch.grad_ops): one row
# each; `--ops` runs only these
OP_ROWS = [(f"{label}, requires_grad", lambda T, label=label: {"eager": grad_ops(T)[label]},
            "us") for label in GRAD_OPS]
BASE_ROWS = list(ROWS)  # (numpy_cells names these by position)
ROWS += OP_ROWS
# First calls, each in a new process whose kernel cache is empty (cold): the chain, and the
# two-layer whole step, whose first call runs eagerly (the optimizer's first step makes its
# state) and whose second traces (and, with FUSETORCH_COMPILE_BACKGROUND=0, builds): both
# calls count. `COMPILE` is torch.compile, or nothing for the eager column; each row's
# "later calls" row is the median call after them (the compiled one's build handed over).
COLD = {
    "first call of the chain, 2^24": """
x = torch.randn(1 << 24)
f = COMPILE(lambda t: torch.tanh(torch.exp(t * 0.5 + 1).clamp(max=10) * t - 0.25))
def call():
    f(x)
""",
    "first calls of the two-layer step": """
net = torch.nn.Sequential(torch.nn.Linear(1000, 100), torch.nn.ReLU(), torch.nn.Linear(100, 10))
mse = torch.nn.MSELoss(reduction="sum")
opt = torch.optim.SGD(net.parameters(), lr=1e-4)
X, Y = torch.randn(64, 1000), torch.randn(64, 10)
def step(x, y):
    opt.zero_grad()
    loss = mse(net(x), y)
    loss.backward()
    opt.step()
    return loss
f = COMPILE(step)
def call():
    f(X, Y)
    f(X, Y)
""",
}
LATER = ": later calls"  # (the label suffix of a COLD row's later-call row)

# The GPT step: each (framework, variant) in a new process, so that the peak RSS is its own.
# Two steps warm up (the first backward is interpreted, the second builds its program; the
# compiled step traces and builds), then `steps` are timed.
GPT_LABEL = "GPT step 6x384, block 256, batch 8"
_GPT_STEP = """
import json, os, resource, sys, time
sys.path.insert(0, {here!r})
import {module} as T
if {threads}:
    T.set_num_threads({threads})
from models import gpt_step
step, x, y = gpt_step(T)
f = T.compile(step) if {compiled} else step
clock = time.process_time if {cpu} else time.perf_counter
for _ in range(2):
    float(f(x, y).detach())
times = []
for _ in range({steps}):
    t0 = clock()
    float(f(x, y).detach())
    times.append(clock() - t0)
times.sort()
print(json.dumps([times[len(times) // 2] if {median} else times[0],
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024]))
"""


def gpt_cell(python: str, module: str, variant: str, steps: int, stat: str,
             threads: int | None) -> tuple[float, int]:
    """(seconds per step, peak RSS in bytes) of the GPT step in a new process."""
    env = dict(USER_ENV)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    code = _GPT_STEP.format(here=str(HERE), module=module, threads=threads or 0,
                            compiled=variant == "compiled", cpu=CLOCK is time.process_time,
                            steps=steps, median=stat == "median")
    out = subprocess.run([python, "-c", code], env=env, check=True, capture_output=True,
                         text=True, timeout=1800)
    seconds, peak = json.loads(out.stdout.strip().splitlines()[-1])
    return seconds, peak


def gpt_cells(python: str, module: str, prefix: str, args) -> dict:
    out = {}
    for variant in ("eager", "compiled"):
        try:
            out[f"{GPT_LABEL}|{prefix} {variant}"] = gpt_cell(
                python, module, variant, args.gpt_steps, args.stat, args.threads)
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            print(f"{prefix} GPT {variant} failed: {e}", file=sys.stderr)
    return out


_FIRST_CALL = """
import os, statistics, sys, time
import {module} as torch
torch.manual_seed(0)
COMPILE = torch.compile if {compiled} else (lambda f: f)
{workload}
def cpu():  # this process and the compilers it ran
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
t0, c0 = time.perf_counter(), cpu()
call()   # trace, build (an empty cache) or start the build, run
first, first_cpu = time.perf_counter() - t0, cpu() - c0
getattr(f, "wait_for_build", lambda: None)()  # (fusetorch's handover: no sleeps)
later = []
for _ in range({later}):
    t0 = time.perf_counter()
    call()
    later.append(time.perf_counter() - t0)
print(f"{{first:.4f}} {{first_cpu:.4f}} {{statistics.median(later[1:]):.6f}}")
"""


def cold_first_call(python: str, module: str, label: str, compiled: bool = True,
                    later: int = 0) -> float | tuple:
    """The first call of `COLD[label]` (compiled, or eager) in a new process whose kernel
    cache is empty (wall clock, or with --clock cpu the CPU time of the process and of the
    compilers it ran); with `later`, also the median of that many calls after it, once a
    background build is handed over (seconds, as a pair)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(USER_ENV, FUSETORCH_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        code = _FIRST_CALL.format(module=module, workload=COLD[label], compiled=compiled,
                                  later=max(later, 2))
        out = subprocess.run([python, "-c", code], env=env, check=True, capture_output=True,
                             text=True, timeout=600)
        wall, cpu, after = out.stdout.split()[-3:]
        first = float(cpu if CLOCK is time.process_time else wall)
        return (first, float(after)) if later else first


def cold_cells(python: str, module: str, prefix: str, later: int = 20) -> dict:
    """COLD's rows for `module`: first calls eager and compiled, each in a new process, and
    the later calls of those processes (eager and compiled alternate, each twice: medians)."""
    out: dict = {}
    for label in COLD:
        runs: dict = {}
        for _ in range(2):
            for variant in ("eager", "compiled"):
                runs.setdefault(variant, []).append(
                    cold_first_call(python, module, label, variant == "compiled", later))
        for variant, pairs in runs.items():
            out[f"{label}|{prefix} {variant}"] = statistics.median(p[0] for p in pairs)
            out[f"{label}{LATER}|{prefix} {variant}"] = statistics.median(p[1] for p in pairs)
    return out


def run_module(T, rounds: int, target: float, stat: str) -> dict:
    """{(row, variant): seconds} for module T (fusetorch or torch), rows one after another."""
    out = {}
    for label, make, _ in ROWS:
        cells = make(T)
        for k, v in measure(cells, rounds, target, stat).items():
            out[f"{label}|{k}"] = v
    return out


# ------------------------------------------------------------------ numpy references

def numpy_cells() -> dict:
    """{row: callable}: the hand-written numpy of bench_training / bench_compile."""
    import numpy as np
    from bench_training import numpy_lenet_step, two_layer_numpy

    rng = np.random.default_rng(0)

    def two(n, d, h, o):
        ws = [rng.standard_normal(s, dtype=np.float32) * 0.03 for s in ((h, d), (h,), (o, h),
                                                                         (o,))]
        x, y = rng.standard_normal((n, d), dtype=np.float32), rng.standard_normal(
            (n, o), dtype=np.float32)
        return lambda: two_layer_numpy(*ws, x, y, lr=1e-6)

    shapes = [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400), (120,), (84, 120), (84,),
              (10, 84), (10,)]
    params = [rng.standard_normal(s, dtype=np.float32) * 0.1 for s in shapes]
    img, lab = rng.standard_normal((64, 1, 32, 32), dtype=np.float32), rng.integers(0, 10, 64)
    xa, aa, ba = (rng.standard_normal(N, dtype=np.float32) for _ in range(3))
    sa, sb = rng.standard_normal((10, 10), dtype=np.float32), rng.standard_normal(
        (10, 10), dtype=np.float32)
    return {
        BASE_ROWS[0][0]: two(64, 1000, 100, 10),
        BASE_ROWS[1][0]: two(512, 4096, 1024, 10),
        BASE_ROWS[2][0]: lambda: numpy_lenet_step(params, img, lab),
        BASE_ROWS[3][0]: lambda: np.tanh(np.minimum(np.exp(xa * 0.5 + 1), 10) * xa - 0.25),
        BASE_ROWS[4][0]: lambda: ((aa - ba) ** 2).sum(),
        BASE_ROWS[5][0]: lambda: aa.sum(),
        BASE_ROWS[6][0]: lambda: sa + sb,
    }


def fusetorch_rows(rounds: int, target: float, stat: str) -> dict:
    """numpy and fusetorch, row by row, every variant of a row taking turns."""
    import fusetorch as T
    refs = numpy_cells()
    out = {}
    for label, make, _ in ROWS:
        cells = {f"fusetorch {k}": fn for k, fn in make(T).items()}
        if label in refs:  # (no hand-written numpy LSTM)
            cells["numpy"] = refs[label]
        for k, v in measure(cells, rounds, target, stat).items():
            out[f"{label}|{k}"] = v
    return out


# ------------------------------------------------------------------ printing

COLUMNS = ["numpy", "fusetorch eager", "fusetorch compiled", "torch eager", "torch compiled"]


def _cell(v, unit: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, (tuple, list)):  # (seconds, peak RSS bytes)
        return f"{_cell(v[0], unit)}, {v[1] / 2**30:.2f} GB"
    if unit == "s":
        return f"{v:.3f} s"
    x = v * (1e6 if unit == "us" else 1e3)
    return f"{x:.0f} {unit}" if x >= 100 else f"{x:.3g} {unit}"


def print_table(results: dict, with_torch: bool) -> None:
    cols = COLUMNS if with_torch else COLUMNS[:3]
    print("| workload | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    cold = [(row, unit) for c in COLD for row, unit in ((c, "s"), (c + LATER, "ms"))]
    for label, unit in [(label, unit) for label, _, unit in ROWS] + cold:
        if any(f"{label}|{c}" in results for c in cols):  # (--gpt-only: no other rows)
            cells = [_cell(results.get(f"{label}|{c}"), unit) for c in cols]
            print(f"| {label} | " + " | ".join(cells) + " |")
    if any(k.startswith(GPT_LABEL) for k in results):
        cells = [_cell(results.get(f"{GPT_LABEL}|{c}"), "s") for c in cols]
        print(f"| {GPT_LABEL} (time, peak RSS) | " + " | ".join(cells) + " |")


def torch_child(args) -> None:
    """In the interpreter that has PyTorch: its eager and compiled cells, as JSON."""
    import torch as T
    if args.threads:
        T.set_num_threads(args.threads)
    out = {}
    if not args.gpt_only:
        for k, v in run_module(T, args.rounds, args.target, args.stat).items():
            label, variant = k.split("|")
            out[f"{label}|torch {variant}"] = v
        out.update(cold_cells(sys.executable, "torch", "torch"))
    if not args.no_gpt:
        out.update(gpt_cells(sys.executable, "torch", "torch", args))
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter blocks (~30 s)")
    ap.add_argument("--stat", choices=("median", "best"), default="median")
    ap.add_argument("--torch", metavar="PYTHON", nargs="?", const=sys.executable, default=None,
                    help="also run the workloads with PyTorch in this interpreter (default: "
                         "this one)")
    ap.add_argument("--threads", type=int, default=None,
                    help="set_num_threads(N) first, in every process (numpy's BLAS too): on a "
                         "machine other work loads, 1 keeps spinning BLAS workers out of the "
                         "rows")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: the process's CPU time (all its threads), for a loaded machine "
                         "with --threads 1")
    ap.add_argument("--no-gpt", action="store_true", help="leave out the GPT step's row")
    ap.add_argument("--ops", action="store_true",
                    help="only the rows of small ops with requires_grad (issue 29; ~1 min)")
    ap.add_argument("--gpt-only", action="store_true", help="only the GPT step's row")
    ap.add_argument("--rows", metavar="TEXT", default=None,
                    help="only the rows whose label contains one of these comma-separated "
                         "texts (no cold first calls, no GPT row), e.g. --rows two-layer,same,")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.rounds, args.target = (3, 0.03) if args.quick else (7, 0.06)
    args.gpt_steps = 3 if args.quick else 5
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.threads:  # (also for the subprocesses: the cold first calls, PyTorch's run)
        os.environ["OMP_NUM_THREADS"] = USER_ENV["OMP_NUM_THREADS"] = str(args.threads)
    if args.ops:
        ROWS[:] = OP_ROWS
        COLD.clear()
        args.no_gpt = True
    if args.rows:
        wanted = [w for w in args.rows.split(",") if w]
        ROWS[:] = [r for r in ROWS if any(w in r[0] for w in wanted)]
        COLD.clear()
        args.no_gpt = True
    if args.child:
        return torch_child(args)

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    import numpy as np

    import fusetorch
    if args.threads:
        fusetorch.set_num_threads(args.threads)
    print(f"numpy {np.__version__}, {fusetorch.get_num_threads()} threads, load average "
          f"{os.getloadavg()[0]:.2f}; {args.clock} clock, {args.stat} per call")
    t0 = time.perf_counter()
    results = {}
    if not args.gpt_only:
        results = fusetorch_rows(args.rounds, args.target, args.stat)
        results.update(cold_cells(sys.executable, "fusetorch", "fusetorch"))
    if not args.no_gpt:
        results.update(gpt_cells(sys.executable, "fusetorch", "fusetorch", args))
    if args.torch:
        cmd = [args.torch, __file__, "--child", "--stat", args.stat, "--clock", args.clock] + \
            (["--quick"] if args.quick else []) + \
            (["--threads", str(args.threads)] if args.threads else []) + \
            (["--no-gpt"] if args.no_gpt else []) + (["--gpt-only"] if args.gpt_only else []) + \
            (["--ops"] if args.ops else []) + (["--rows", args.rows] if args.rows else [])
        try:
            child = subprocess.run(cmd, capture_output=True, text=True, timeout=1200,
                                   env=USER_ENV)
            if child.returncode == 0:
                results.update(json.loads(child.stdout.strip().splitlines()[-1]))
            else:
                print(f"PyTorch run failed:\n{child.stderr[-2000:]}")
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"PyTorch run failed: {e}")
    print_table(results, bool(args.torch))
    print(f"compiled: the whole training step under torch.compile (forward, backward, SGD) for "
          f"the steps; numpy by hand runs its products on its BLAS's {_blas_threads()} "
          f"thread(s), fusetorch its small ones on one (README, Threads). "
          f"({time.perf_counter() - t0:.0f} s)")


def _blas_threads() -> str:
    from threadpoolctl import threadpool_info
    return "/".join(str(p["num_threads"]) for p in threadpool_info() if p["user_api"] == "blas")


if __name__ == "__main__":
    main()
