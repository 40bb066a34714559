"""`fusetorch.distributed`: collectives between processes, on MPI (mpi4py) for CPU tensors and
NCCL (cupy) for CUDA tensors (a single process asking for a world of one needs no MPI).
Launch with MPI, which gives every process its rank:

    mpiexec -n 2 python train.py

    import fusetorch.distributed as dist
    dist.init_process_group("mpi")
    dist.all_reduce(t)            # in place, sum over all ranks

Install the launcher and bindings with `pip install "fusetorch[distributed]"`.
"""
from .c10d import (Backend, GroupMember, ReduceOp, Work, all_gather, all_reduce, barrier,
                   broadcast, broadcast_object_list, destroy_process_group, get_backend,
                   get_rank, get_world_size, init_process_group, is_available, is_initialized,
                   is_mpi_available, is_nccl_available, reduce_scatter)

__all__ = ["Backend", "GroupMember", "ReduceOp", "Work", "all_gather", "all_reduce", "barrier",
           "broadcast", "broadcast_object_list", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size",
           "init_process_group", "is_available", "is_initialized", "is_mpi_available",
           "is_nccl_available", "reduce_scatter"]
