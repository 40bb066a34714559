"""What a compiled call's guards cost, and how often the README's training loop traces.

    python benchmarks/bench_guards.py                  # this checkout's guards
    python benchmarks/bench_guards.py --against REV    # and side by side with REV's (a commit)

- guards: the two-layer whole training step (Linear-ReLU-Linear 64x1000x100x10, MSELoss(sum),
  SGD with momentum) compiled; per call, the checks a replay makes before running its program:
  the variant's tensor guards, the globals and cells (`Bindings.hold`) and the attributes the
  trace read (`Reads.hold`). With `--against`, REV's `fusetorch/_guards.py` (a leaf module) is
  loaded beside ours and its `Bindings` of the same step is timed in alternation with ours.
- whole calls: the same step's compiled call, this checkout against REV's in a second process
  (its files from `git worktree`), in alternating rounds; best of each, and their ratio.
- retraces: the README's loop (`for step in range(40): train_step(x, y)` beside `opt.step()`):
  how many of its 40 calls traced.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_STEP = """
import sys, timeit
import fusetorch as torch, fusetorch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
mse = nn.MSELoss(reduction="sum")
opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
X, Y = torch.randn(64, 1000), torch.randn(64, 10)

def step(x, y):
    opt.zero_grad()
    loss = mse(net(x), y)
    loss.backward()
    opt.step()
    return loss

whole = torch.compile(step)
for _ in range(3):
    whole(X, Y)
"""

_README_LOOP = """
import fusetorch as torch
model = torch.nn.Sequential(torch.nn.Linear(100, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
traced = []

@torch.compile
def train_step(x, y):
    traced.append(1)  # Python runs only when the call traces
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss

x, y = torch.randn(32, 100), torch.randint(0, 10, (32,))
for step in range(40):
    train_step(x, y)
print(len(traced))
"""

_TIMED = _STEP + """
rounds, number = int(sys.argv[1]), int(sys.argv[2])
for _ in range(rounds):
    line = sys.stdin.readline()  # the other process's turn is over
    t = timeit.timeit(lambda: whole(X, Y), number=number) / number
    print(t, flush=True)
"""


def _run(code: str, path: Path, *args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(path), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=str(path),
                            text=True, **kw)


def readme_traces(path: Path) -> int:
    p = _run(_README_LOOP, path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out, _ = p.communicate()
    return int(out.split()[-1])


def whole_calls(ours: Path, theirs: Path, rounds: int = 30, number: int = 20) -> tuple:
    """Best time per compiled call in each checkout, their processes taking turns."""
    procs = [_run(_TIMED, p, str(rounds), str(number), stdin=subprocess.PIPE,
                  stdout=subprocess.PIPE) for p in (ours, theirs)]
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, p in enumerate(procs):
            p.stdin.write("go\n")
            p.stdin.flush()
            best[i] = min(best[i], float(p.stdout.readline()))
    for p in procs:
        p.stdin.close()
        p.wait()
    return tuple(best)


def guard_costs(old_guards=None, number: int = 2000, repeat: int = 15) -> dict:
    """Seconds per call of each guard check of the step's variant (ours; REV's Bindings)."""
    ns: dict = {}
    exec(_STEP, ns)
    whole = ns["whole"]
    from fusetorch.compile import _module_tensors, _tensors, _unique
    v = next(iter(whole._variants.values()))[0]
    X, Y = ns["X"], ns["Y"]

    def tensors():
        return _unique(_tensors((X, Y)) + _module_tensors(whole._fn)) + v.resolve()

    checks = {"tensors": lambda: v.guard(tensors()), "bindings": v.bindings.hold,
              "reads": v.reads.hold}
    if old_guards is not None:
        old = old_guards.Bindings.of(ns["step"])
        checks["old bindings"] = old.hold
        assert old.hold()
    best = {k: float("inf") for k in checks}
    for _ in range(repeat):  # in alternation: the machine's load moves them alike
        for k, f in checks.items():
            best[k] = min(best[k], timeit.timeit(f, number=number) / number)
    # the whole call with its attribute guards and without them (an empty Reads), alternating
    from fusetorch._reads import Reads
    reads, none = v.reads, Reads([])
    best["call"] = best["call without reads"] = float("inf")
    for _ in range(repeat):
        for k, r in (("call", reads), ("call without reads", none)):
            v.reads = r
            best[k] = min(best[k], timeit.timeit(lambda: whole(X, Y), number=20) / 20)
    v.reads = reads
    best["counts"] = (len(v.bindings), len(v.reads),
                      len(old) if old_guards is not None else None)
    return best


def _load_guards(path: Path):
    spec = importlib.util.spec_from_file_location("old_guards", path / "fusetorch/_guards.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--against", help="a commit to compare with (checked out in a temporary "
                                      "git worktree), or the directory of a checkout")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        theirs = None
        if args.against and os.path.isdir(args.against):
            theirs = Path(args.against).resolve()
        elif args.against:
            theirs = Path(tmp) / "rev"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                            str(theirs), args.against], check=True)
        try:
            c = guard_costs(_load_guards(theirs) if theirs else None)
            n_b, n_r, n_old = c["counts"]
            us = {k: v * 1e6 for k, v in c.items() if k != "counts"}
            new = us["bindings"] + us["reads"]
            print(f"two-layer whole step, guards per compiled call: tensors {us['tensors']:.2f} "
                  f"us, bindings {us['bindings']:.2f} us ({n_b}), reads {us['reads']:.2f} us "
                  f"({n_r}); the call {us['call']:.0f} us, without the reads guard "
                  f"{us['call without reads']:.0f} us (ratio "
                  f"{c['call'] / c['call without reads']:.3f})")
            if theirs:
                print(f"   names+reads now {new:.2f} us against {args.against}'s bindings "
                      f"{us['old bindings']:.2f} us ({n_old}): +{new - us['old bindings']:.2f}"
                      f" us a call, {(new - us['old bindings']) / us['call'] * 100:.2f}% of it")
                a, b = whole_calls(ROOT, theirs)
                print(f"   whole compiled call, alternating processes: this checkout "
                      f"{a * 1e6:.0f} us, {args.against} {b * 1e6:.0f} us (ratio {a / b:.3f})")
                print(f"README training loop: {readme_traces(ROOT)} of 40 calls traced "
                      f"({readme_traces(theirs)} at {args.against})")
            else:
                print(f"README training loop: {readme_traces(ROOT)} of 40 calls traced")
        finally:
            if theirs and theirs.parent == Path(tmp):
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(theirs)], check=False)


if __name__ == "__main__":
    main()
