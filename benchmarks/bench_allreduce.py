"""Gradient all-reduce throughput over MPI: fusetorch.distributed.all_reduce on a tensor against
mpi4py's own Allreduce on a numpy buffer, in the same run, on the same ranks.

    .venv/bin/python benchmarks/bench_allreduce.py   # starts itself under mpiexec -n 2
    .venv/bin/mpiexec -n 4 .venv/bin/python benchmarks/bench_allreduce.py [--numel 10000000]

Reports the median time per all-reduce (SUM, in place, float32), the algorithm bandwidth
(bytes of the buffer / time) and the ratio fusetorch / mpi4py (target: at most 1.2x). Also the
time of DDP's gradient sync for the same number of parameters (bucketed, async, averaged).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def median_time(fn, comm, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    # every rank's time counts: the slowest defines the collective's
    return statistics.median(comm.allreduce(t, op=_MPI.MAX) for t in times)


def main(numel: int, repeat: int) -> None:
    global _MPI
    from mpi4py import MPI
    _MPI = MPI
    import fusetorch as torch
    import fusetorch.distributed as dist
    dist.init_process_group("mpi")
    comm, rank, world = MPI.COMM_WORLD, dist.get_rank(), dist.get_world_size()

    buf = np.full(numel, rank + 1.0, dtype=np.float32)
    t = torch.full((numel,), float(rank + 1))
    ref = lambda: comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)  # noqa: E731
    ours = lambda: dist.all_reduce(t)  # noqa: E731
    ref(), ours()  # warm up (page faults, MPI's shared-memory channels)
    t_ref, t_ours = [], []
    for _ in range(3):  # interleaved, so machine load drifts onto both sides
        t_ref.append(median_time(ref, comm, repeat))
        t_ours.append(median_time(ours, comm, repeat))
    a, b = min(t_ours), min(t_ref)
    mb = numel * 4 / 1e6
    if rank == 0:
        print(f"all_reduce {numel:,} float32 ({mb:.0f} MB) over {world} ranks")
        print(f"  mpi4py Allreduce (numpy)   {b * 1e3:8.2f} ms   {mb / b / 1e3:6.2f} GB/s")
        print(f"  fusetorch all_reduce       {a * 1e3:8.2f} ms   {mb / a / 1e3:6.2f} GB/s")
        print(f"  ratio fusetorch / mpi4py   {a / b:8.2f}x")

    # DDP's sync of numel gradients: 10 layers' worth of parameters, default 25 MB buckets
    from fusetorch.nn.parallel import DistributedDataParallel as DDP
    width = int(np.sqrt(numel / 10))
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False) for _ in range(10)])
    ddp = DDP(model)
    for p in model.parameters():
        p.grad = torch.ones_like(p)

    def sync():  # what the hooks do after a backward: fill buckets, reduce, average back
        for p in reversed(list(model.parameters())):
            ddp._grad_ready(p)
        from fusetorch.tracer import autograd
        fns = autograd._FINAL_CALLBACKS[:]
        autograd._FINAL_CALLBACKS.clear()
        for fn in fns:
            fn()
    sync()
    n = sum(p.numel() for p in model.parameters())
    t_ddp = min(median_time(sync, comm, repeat) for _ in range(3))
    if rank == 0:
        print(f"DDP gradient sync, {n:,} parameters in {len(ddp._buckets)} buckets: "
              f"{t_ddp * 1e3:.2f} ms ({t_ddp / a:.2f}x one all_reduce of {numel:,})")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--numel", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("-n", type=int, default=2, help="ranks, when starting mpiexec itself")
    a = p.parse_args()
    if "PMI_RANK" in os.environ or "OMPI_COMM_WORLD_RANK" in os.environ:
        main(a.numel, a.repeat)
    else:  # not under an MPI launcher: start one
        mpiexec = Path(sys.executable).parent / "mpiexec"
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        sys.exit(subprocess.call([str(mpiexec) if mpiexec.exists() else "mpiexec", "-n",
                                  str(a.n), sys.executable, __file__, "--numel", str(a.numel),
                                  "--repeat", str(a.repeat)], env=env))
