"""fusetorch.distributed's collectives on 2 and 4 MPI ranks against numpy references (the checks
themselves are in mpi_checks.py, run in one launch per world size)."""
import pytest

import fusetorch.distributed as dist

CHECKS = ["all_reduce_ops", "all_reduce_non_contiguous_and_half", "async_work_and_barrier",
          "broadcast_from_each_rank", "all_gather_and_reduce_scatter", "errors_as_pytorch",
          "nccl_backend_on_a_stand_in_cupy"]


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
    with pytest.raises(RuntimeError, match="no 'gloo' backend"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


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
