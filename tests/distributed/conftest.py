"""Launching the MPI checks (tests/distributed/mpi_checks.py): once per world size for the whole
session, since starting MPI ranks is the slow part; each test then reads its check's line."""
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("mpi_checks.py")
TIMEOUT_S = 300  # a deadlocked collective must fail the test, never hang CI
_RUNS: dict = {}


def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"  # where the mpich wheel puts it
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def mpi_missing() -> str:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install -e \".[distributed]\")"
    if _mpiexec() is None:
        return "no mpiexec (pip install -e \".[distributed]\" brings one)"
    return ""


def _launch(world: int) -> dict:
    env = dict(os.environ)
    # one BLAS/OpenMP thread per rank: W ranks on two cores must not oversubscribe them
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # the ranks run the script from tests/distributed: put this checkout's fusetorch first,
    # not whichever one the environment has installed
    root = str(SCRIPT.parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        p = subprocess.run([_mpiexec(), "-n", str(world), sys.executable, str(SCRIPT)],
                           capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                           stdin=subprocess.DEVNULL)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = f"mpiexec -n {world} timed out after {TIMEOUT_S} s\n" + (
            e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or ""))
        rc = None
    results = {}
    for line in out.splitlines():
        if line.startswith("CHECK "):
            _, name, verdict = line.split()
            results[name] = verdict == "ok"
    return {"results": results, "stderr": err, "stdout": out, "rc": rc}


@pytest.fixture(params=[2, 4], ids=lambda w: f"np{w}")
def mpi_run(request):
    """The launch for one world size (2 and 4 ranks): call with a check's name."""
    why = mpi_missing()
    if why:
        pytest.skip(why)
    world = request.param
    if world not in _RUNS:
        _RUNS[world] = _launch(world)
    run = _RUNS[world]

    def result(name: str) -> None:
        if name not in run["results"]:
            pytest.fail(f"check {name} did not report (exit code {run['rc']}):\n"
                        f"{run['stdout'][-2000:]}\n{run['stderr'][-4000:]}")
        if not run["results"][name]:
            pytest.fail(f"check {name} failed on {world} ranks:\n{run['stderr'][-6000:]}")
    return result
