"""The smoke programs of tests/programs (public PyTorch programs in miniature: tutorials,
pytorch/examples, nanoGPT, ...), timed whole: each `main()` (its model built, a few training
steps on tiny data), fusetorch next to PyTorch where it is installed.

    python benchmarks/bench_programs.py [--runs 5] [--torch /path/to/python-with-torch] [names]

Each program runs twice to warm up (what a longer run of it would have done by its third
step: kernel builds, composite captures; tests/programs' main()s take two or three steps),
then `--runs` times; a cell is the median wall time of a run. PyTorch runs the same files with their imports of fusetorch turned
into imports of torch (the programs' one change), in its own interpreter. Read the ratio
column: at these sizes a run is mostly per-op overhead, which is what eager scripts on small
models pay.
"""
from __future__ import annotations

import argparse
import importlib.util
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
# The environment as the user started this script, for PyTorch's process: importing fusetorch
# sets OMP_WAIT_POLICY=PASSIVE (runtime/cbuild.py) and OPENBLAS_THREAD_TIMEOUT (__init__.py)
# for its own threads, which a child inheriting them would run under (bench_table.py does the
# same)
USER_ENV = dict(os.environ)
PROGRAMS = HERE.parent / "tests" / "programs"
SKIP = {"test_programs", "makemore"}  # (the test module; makemore needs tensorboard)


def _names() -> list:
    return sorted(p.stem for p in PROGRAMS.glob("*.py") if p.stem not in SKIP)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"bench_program_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (torch.save of a model pickles its class by module)
    spec.loader.exec_module(module)
    return module


def time_programs(names: list, runs: int, folder: Path) -> dict:
    """{name: median seconds of main()}, or {name: 'error ...'}."""
    out = {}
    for name in names:
        try:
            main = _load(folder / f"{name}.py", name).main
            main()
            main()
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                main()
                times.append(time.perf_counter() - t0)
            out[name] = statistics.median(times)
        except Exception as e:  # noqa: BLE001  (reported in the table, the others still run)
            out[name] = f"error {type(e).__name__}: {str(e)[:60]}"
    return out


def as_torch(src: str) -> str:
    """A program's source with its fusetorch imports turned into torch's."""
    return re.sub(r"\bfusetorch\b", "torch", src)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--torch", metavar="PYTHON", default=None)
    ap.add_argument("--child", metavar="FOLDER", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.names or _names()
    if args.child:
        import torch  # noqa: F401  (fails here, not in the first program, without it)
        print(json.dumps(time_programs(names, args.runs, Path(args.child))))
        return
    sys.path.insert(0, str(HERE.parent))
    import fusetorch
    ours = time_programs(names, args.runs, PROGRAMS)
    fusetorch.set_default_device("cpu")
    theirs = {}
    if args.torch:
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                (Path(tmp) / f"{name}.py").write_text(as_torch(
                    (PROGRAMS / f"{name}.py").read_text()))
            child = subprocess.run([args.torch, __file__, "--child", tmp, "--runs",
                                    str(args.runs)] + names, capture_output=True, text=True,
                                   timeout=3600, cwd=tmp, env=USER_ENV)
            if child.returncode == 0:
                theirs = json.loads(child.stdout.strip().splitlines()[-1])
            else:
                print(f"PyTorch run failed:\n{child.stderr[-2000:]}")
    print("| program | fusetorch | torch | fusetorch / torch |")
    print("|---|---|---|---|")
    ratios = []
    for name in names:
        a, b = ours.get(name), theirs.get(name)
        cells = [f"{v * 1e3:.1f} ms" if isinstance(v, float) else (v or "-") for v in (a, b)]
        ratio = "-"
        if isinstance(a, float) and isinstance(b, float):
            ratios.append(a / b)
            ratio = f"{a / b:.2f}"
        print(f"| {name} | {cells[0]} | {cells[1]} | {ratio} |")
    if ratios:
        print(f"geometric mean of the ratios: "
              f"{statistics.geometric_mean(ratios):.2f} over {len(ratios)} programs")


if __name__ == "__main__":
    main()
