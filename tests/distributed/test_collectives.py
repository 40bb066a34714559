"""fusetorch.distributed's collectives on 2 and 4 MPI ranks against numpy references (the checks
themselves are in mpi_checks.py, run in one launch per world size)."""
import re

import pytest

import fusetorch.distributed as dist

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


def test_gloo_in_a_single_process_is_a_world_of_one_without_mpi(monkeypatch):
    """A DDP script run as one process (mp.spawn with nprocs=1, `torchrun --nproc_per_node=1`):
    'gloo' with world_size 1 outside an MPI launcher needs no MPI; each collective is its value
    over one rank, as PyTorch's gloo gives it (checked by hand in PyTorch 2.13)."""
    import numpy as np

    import fusetorch as torch
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(RuntimeError, match="the only rank of a world of one is 0"):
        dist.init_process_group("gloo", rank=1, world_size=1)
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
        x = torch.tensor([1.0, 2.0])
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        dist.broadcast(x, src=0)
        assert x.tolist() == [1.0, 2.0]
        outs = [torch.zeros(2)]
        dist.all_gather(outs, x)
        out = torch.zeros(2)
        dist.reduce_scatter(out, [x * 3])
        assert outs[0].tolist() == [1.0, 2.0] and out.tolist() == [3.0, 6.0]
        work = dist.all_reduce(x, async_op=True)
        assert work.wait() and dist.barrier() is None
        objs = [None]
        dist.broadcast_object_list(objs, src=0)
        # DDP over the world of one trains as the module alone
        model = torch.nn.Linear(3, 2).double()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        inp = torch.tensor(np.arange(6.0).reshape(2, 3))
        ddp(inp).sum().backward()
        np.testing.assert_allclose(model.weight.grad.numpy(),
                                   np.ones((2, 2)).T @ inp.numpy(), rtol=1e-12)
        assert list(ddp.state_dict())[0] == "module.weight"
    finally:
        dist.destroy_process_group()
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
