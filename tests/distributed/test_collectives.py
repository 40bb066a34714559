"""fusetorch.distributed's collectives on 2 and 4 MPI ranks against numpy references (the checks
themselves are in mpi_checks.py, run in one launch per world size)."""
import os
import re
import subprocess
import sys

import pytest

import fusetorch.distributed as dist
from conftest import mpi_missing

CHECKS = ["all_reduce_ops", "all_reduce_non_contiguous_and_half", "async_work_and_barrier",
          "broadcast_from_each_rank", "all_gather_and_reduce_scatter", "errors_as_pytorch",
          "nccl_backend_on_a_stand_in_cupy", "gloo_runs_on_mpi"]


@pytest.mark.parametrize("name", CHECKS)
def test_collective(mpi_run, name):
    mpi_run(name)


def test_errors_before_init_as_pytorch():
    assert dist.is_available() and not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier,
               lambda: dist.all_reduce(None)):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("nonsense")
    with pytest.raises(RuntimeError, match="no 'ucc' backend"):
        dist.init_process_group("ucc")
    assert not dist.is_initialized()


def test_gloo_outside_an_mpi_launcher_refuses_several_ranks(monkeypatch):
    """'gloo' runs on MPI; processes torchrun or mp.spawn started cannot meet through MPI, so
    asking for a world of several from one of them is an error (never N worlds of one). Checked
    before mpi4py is imported."""
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(var, raising=False)
    msg = ("fusetorch.distributed runs the 'gloo' backend on MPI, and this process was not "
           "started by an MPI launcher (world_size 2 was asked for): launch the ranks with "
           "`mpiexec -n 2 python script.py` instead of torchrun or multiprocessing.spawn")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        dist.init_process_group("gloo", rank=1, world_size=2)  # mp.spawn's pattern
    monkeypatch.setenv("WORLD_SIZE", "2")  # torchrun's
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_gloo_in_a_single_process_is_rank_0_of_1_on_mpi():
    if mpi_missing():
        pytest.skip(mpi_missing())
    env = {k: v for k, v in os.environ.items() if k not in (
        "PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
        "WORLD_SIZE")}
    code = ("import warnings\n"
            "import fusetorch as torch, fusetorch.distributed as dist\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    dist.init_process_group('gloo', rank=0, world_size=1)\n"
            "x = torch.ones(2)\n"
            "dist.all_reduce(x)\n"
            "print(dist.get_rank(), dist.get_world_size(), dist.get_backend(), x.tolist(),\n"
            "      [str(m.message).split(':')[0] for m in w])\n"
            "dist.destroy_process_group()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("0 1 gloo [1.0, 1.0] ['fusetorch.distributed has no gloo "
                                  "backend of its own']")


def test_reduce_op_names():
    assert dist.ReduceOp.SUM == dist.ReduceOp.SUM != dist.ReduceOp.AVG
    assert str(dist.ReduceOp.MAX) == "RedOpType.MAX"
    assert dist.Backend("MPI") == dist.Backend.MPI == "mpi"


def test_nccl_without_cupy_or_gpu_says_what_is_missing():
    if dist.is_nccl_available():
        pytest.skip("cupy is installed: the NCCL backend needs a multi-rank GPU run")
    with pytest.raises(RuntimeError, match="doesn't have NCCL built in.*cupy"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()
