"""The MPI backend: mpi4py's buffer (uppercase) calls on the tensors' numpy arrays, in place.
A non-contiguous tensor goes through one contiguous copy and is written back."""
from __future__ import annotations

import numpy as np

from .c10d import RedOpType, Work


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("Distributed package doesn't have MPI built in: install the "
                           "`distributed` extra (pip install \"fusetorch[distributed]\"), which "
                           f"brings mpi4py and an MPI ({e})") from None
    return MPI


def _staged(a: np.ndarray):
    """A C-contiguous array MPI can use for `a` (float16 and bfloat16
    widened: MPI has no half type), and
    whether it must be copied back into `a`."""
    if not isinstance(a, np.ndarray):
        raise RuntimeError("the 'mpi' backend works on CPU tensors; CUDA tensors go through "
                           "init_process_group('nccl')")
    if a.dtype == np.float16 or a.dtype.name == "bfloat16":
        return a.astype(np.float32), True
    if a.flags.c_contiguous and a.flags.writeable:
        return a, False
    return np.ascontiguousarray(a), True


class MPIBackend:
    name = "mpi"

    def __init__(self, comm=None):
        MPI = _import_mpi()
        self.MPI = MPI
        # a private communicator: our collectives never match a user's own mpi4py calls
        self.comm = (comm or MPI.COMM_WORLD).Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self._ops = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
                     RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
                     RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}
        # MPI's arithmetic ops are not defined on C bool: PyTorch's bool sum/max is "or"
        self._bool_ops = {RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.BOR: MPI.LOR,
                          RedOpType.MIN: MPI.LAND, RedOpType.PRODUCT: MPI.LAND,
                          RedOpType.BAND: MPI.LAND, RedOpType.BXOR: MPI.LXOR}

    def close(self) -> None:
        self.comm.Free()

    def _run(self, name: str, async_op: bool, args: tuple, finish) -> Work:
        if async_op:
            return Work([getattr(self.comm, "I" + name[0].lower() + name[1:])(*args)], finish)
        getattr(self.comm, name)(*args)
        return Work([], finish)

    def _op(self, op: RedOpType, dtype):
        return (self._bool_ops if dtype == np.bool_ else self._ops)[op]

    def _finisher(self, op: RedOpType, buf: np.ndarray, dest: np.ndarray | None):
        size = self.size

        def finish():
            if op is RedOpType.AVG:
                np.divide(buf, size, out=buf)
            if dest is not None:
                np.copyto(dest, buf, casting="unsafe")
        return finish

    def barrier(self, async_op: bool = False):
        work = self._run("Barrier", async_op, (), None)
        return work if async_op else work.wait() and None

    def all_reduce(self, a: np.ndarray, op: RedOpType, async_op: bool) -> Work:
        buf, back = _staged(a)
        return self._run("Allreduce", async_op, (self.MPI.IN_PLACE, buf, self._op(op, buf.dtype)),
                         self._finisher(op, buf, a if back else None))

    def broadcast(self, a: np.ndarray, src: int, async_op: bool) -> Work:
        buf, back = _staged(a)
        dest = a if back and self.rank != src else None
        return self._run("Bcast", async_op, (buf, src),
                         self._finisher(RedOpType.SUM, buf, dest))

    def all_gather(self, outs: list, a: np.ndarray, async_op: bool) -> Work:
        send, _ = _staged(a)
        recv = np.empty((self.size,) + send.shape, send.dtype)

        def finish():
            for o, r in zip(outs, recv):
                np.copyto(o, r, casting="unsafe")
        return self._run("Allgather", async_op, (send, recv), finish)

    def reduce_scatter(self, out: np.ndarray, ins: list, op: RedOpType, async_op: bool) -> Work:
        wide = np.float32 if out.dtype == np.float16 or out.dtype.name == "bfloat16" \
            else out.dtype
        send = np.stack([np.asarray(x, dtype=wide) for x in ins])
        recv, back = _staged(out)
        return self._run("Reduce_scatter_block", async_op,
                         (send, recv, self._op(op, send.dtype)),
                         self._finisher(op, recv, out if back else None))
