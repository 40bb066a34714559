"""Where a two-layer training step's time goes: zero_grad, forward, backward and the optimizer
step timed apart, and the time spent in matrix products, for fusetorch checkouts and PyTorch
in alternating worker processes (issue 24's per-phase table).

    python benchmarks/bench_phases.py --repos /work/main,. [--torch PYTHON] [--threads N]
        [--shape 512,4096,1024,10] [--blocks 8] [--clock cpu|wall]

The step is bench_table's: nn.Sequential(Linear, ReLU, Linear), MSELoss(reduction="sum"),
SGD. Each side is a worker process started once; the sides then run one block each in turn,
the order reversed every other block, so that the machine's load hits them alike (the
machine is shared: read ratios within one run). A cell is the best and the median over the
blocks of each block's best step. `compiled` is the whole step under `compile` (one phase).
`products` is fusetorch's time inside numpy's matmul (a share of forward and backward;
PyTorch's products are inside its C++ autograd, so its column shows none).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PHASES = ("zero_grad", "forward", "backward", "step", "total", "products", "compiled")

_WORKER = r"""
import json, sys, time
module, threads, clock = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n, d_in, h, d_out = (int(v) for v in sys.argv[4].split(","))
T = __import__(module)
T.set_num_threads(threads)
C = time.process_time if clock == "cpu" else time.perf_counter
spent = [0.0]
if module == "fusetorch":
    import numpy as np
    from fusetorch import _threads

    class Timed:  # numpy as _threads.matmul sees it, its matmul timed
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def matmul(a, b, **kw):
            t0 = C()
            try:
                return np.matmul(a, b, **kw)
            finally:
                spent[0] += C() - t0
    _threads.np = Timed()
nn = T.nn
T.manual_seed(0)
net = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, d_out))
mse = nn.MSELoss(reduction="sum")
opt = T.optim.SGD(net.parameters(), lr=1e-6)
x, y = T.randn(n, d_in), T.randn(n, d_out)


def step(a, b):
    opt.zero_grad()
    loss = mse(net(a), b)
    loss.backward()
    opt.step()
    return loss


whole = T.compile(step)
settle = getattr(sys.modules.get("fusetorch.runtime.program"), "wait_for_builds", lambda: None)
for _ in range(2):
    for _ in range(4):
        step(x, y)
        whole(x, y)
    settle()
print("ready", flush=True)
for _ in sys.stdin:
    out = {}
    for _ in range(4):
        spent[0] = 0.0
        t0 = C(); opt.zero_grad(); t1 = C()
        loss = mse(net(x), y); t2 = C()
        loss.backward(); t3 = C()
        opt.step(); t4 = C()
        got = {"zero_grad": t1 - t0, "forward": t2 - t1, "backward": t3 - t2, "step": t4 - t3,
               "total": t4 - t0}
        if module == "fusetorch":
            got["products"] = spent[0]
        t0 = C(); whole(x, y); got["compiled"] = C() - t0
        for k, v in got.items():
            out[k] = min(out.get(k, v), v)
    print(json.dumps(out), flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", default=".", help="fusetorch checkouts, comma-separated")
    ap.add_argument("--torch", metavar="PYTHON", default=None, help="also PyTorch, here")
    ap.add_argument("--threads", type=int, default=1, help="set_num_threads(N) on every side")
    ap.add_argument("--shape", default="512,4096,1024,10", help="batch,in,hidden,out")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    args = ap.parse_args()
    sides = [(Path(r).resolve().name or r, sys.executable, str(Path(r).resolve()), "fusetorch")
             for r in args.repos.split(",")]
    if args.torch:
        sides.append(("torch", args.torch, "", "torch"))
    procs = []
    for name, python, root, module in sides:
        env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS=str(args.threads))
        p = subprocess.Popen([python, "-c", _WORKER, module, str(args.threads), args.clock,
                              args.shape], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env, cwd=HERE)
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the worker for {name} did not start")
        procs.append(p)
    res = [[] for _ in sides]
    for b in range(args.blocks):
        for i in (range(len(sides)) if b % 2 == 0 else reversed(range(len(sides)))):
            procs[i].stdin.write("go\n")
            procs[i].stdin.flush()
            res[i].append(json.loads(procs[i].stdout.readline()))
    for p in procs:
        p.stdin.close()
        p.wait()
    names = [s[0] for s in sides]
    print(f"| phase ({args.shape}, {args.threads} thread(s), {args.clock} clock, ms best / "
          f"median) | " + " | ".join(names) + " |")
    print("|---" * (1 + len(names)) + "|")
    for k in PHASES:
        cells = []
        for r in res:
            v = [blk[k] for blk in r if k in blk]
            cells.append(f"{min(v) * 1e3:.2f} / {statistics.median(v) * 1e3:.2f}" if v else "-")
        print(f"| {k} | " + " | ".join(cells) + " |")
    print(f"({args.blocks} alternating blocks, each cell a block's best of 4 steps; load "
          f"average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
