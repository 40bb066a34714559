"""The NCCL backend: CUDA tensors through cupy's NCCL bindings (`cupy.cuda.nccl`). Ranks come
from the MPI launcher as for the 'mpi' backend; MPI carries NCCL's unique id once, then every
collective is an NCCL call on the current cupy stream (ordered with the kernels around it)."""
from __future__ import annotations

from .c10d import RedOpType, Work


class _StreamDone:
    """A request-like wrapper so `Work.wait()` synchronises the stream an op was queued on."""

    def __init__(self, stream):
        self._event = stream.record()

    def Wait(self):
        self._event.synchronize()

    def Test(self):
        return self._event.done


class NCCLBackend:
    name = "nccl"

    def __init__(self):
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise RuntimeError("Distributed package doesn't have NCCL built in: the 'nccl' "
                               "backend needs cupy with NCCL (the `cuda` extra) and a GPU "
                               f"({e})") from None
        try:
            n_gpus = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # no driver, no device
            n_gpus, why = 0, e
        else:
            why = "no CUDA device"
        if n_gpus == 0:
            raise RuntimeError(f"the 'nccl' backend needs a CUDA GPU ({why}); use 'mpi' for CPU "
                               "tensors")
        from .mpi import MPIBackend
        self._mpi = MPIBackend()
        self.rank, self.size = self._mpi.rank, self._mpi.size
        self.cp, self.nccl = cupy, nccl
        cupy.cuda.Device(self.rank % n_gpus).use()  # one GPU per rank, as torch's LOCAL_RANK
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = self._mpi.comm.bcast(uid, root=0)  # 128 bytes, once: the only pickled message
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        self._dtypes = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
                        "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8,
                        "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
                        "int64": nccl.NCCL_INT64}
        self._ops = {RedOpType.SUM: nccl.NCCL_SUM, RedOpType.AVG: nccl.NCCL_SUM,
                     RedOpType.PRODUCT: nccl.NCCL_PROD, RedOpType.MIN: nccl.NCCL_MIN,
                     RedOpType.MAX: nccl.NCCL_MAX}

    def close(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()
        self.comm.destroy()
        self._mpi.close()

    def _check(self, a):
        if not isinstance(a, self.cp.ndarray):
            raise RuntimeError("Tensors must be CUDA and dense")
        if str(a.dtype) not in self._dtypes:
            raise RuntimeError(f"the 'nccl' backend does not support dtype {a.dtype}")

    def _staged(self, a):
        self._check(a)
        if a.flags.c_contiguous:
            return a, False
        return self.cp.ascontiguousarray(a), True

    def _op(self, op: RedOpType):
        if op not in self._ops:
            raise RuntimeError(f"the 'nccl' backend does not support ReduceOp.{op.name}")
        return self._ops[op]

    def _done(self, async_op: bool, finish) -> Work:
        stream = self.cp.cuda.get_current_stream()
        if finish is not None:
            finish()  # queued on the same stream: ordered after the collective
        return Work([_StreamDone(stream)] if async_op else [])

    def _finish(self, op: RedOpType, buf, dest):
        def finish():
            if op is RedOpType.AVG:
                self.cp.divide(buf, self.size, out=buf)
            if dest is not None:
                dest[...] = buf
        return finish

    def barrier(self, async_op: bool = False):
        self.cp.cuda.get_current_stream().synchronize()
        return self._mpi.barrier(async_op)

    def all_reduce(self, a, op: RedOpType, async_op: bool) -> Work:
        buf, back = self._staged(a)
        s = self.cp.cuda.get_current_stream().ptr
        self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, self._dtypes[str(buf.dtype)],
                            self._op(op), s)
        return self._done(async_op, self._finish(op, buf, a if back else None))

    def broadcast(self, a, src: int, async_op: bool) -> Work:
        buf, back = self._staged(a)
        s = self.cp.cuda.get_current_stream().ptr
        self.comm.broadcast(buf.data.ptr, buf.data.ptr, buf.size, self._dtypes[str(buf.dtype)],
                            src, s)
        return self._done(async_op, self._finish(RedOpType.SUM, buf,
                                                 a if back and self.rank != src else None))

    def all_gather(self, outs: list, a, async_op: bool) -> Work:
        send, _ = self._staged(a)
        recv = self.cp.empty((self.size,) + send.shape, send.dtype)
        s = self.cp.cuda.get_current_stream().ptr
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.size,
                            self._dtypes[str(send.dtype)], s)

        def finish():
            for o, r in zip(outs, recv):
                o[...] = r
        return self._done(async_op, finish)

    def reduce_scatter(self, out, ins: list, op: RedOpType, async_op: bool) -> Work:
        for x in ins:
            self._check(x)
        send = self.cp.stack(ins)
        recv, back = self._staged(out)
        s = self.cp.cuda.get_current_stream().ptr
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size,
                                self._dtypes[str(recv.dtype)], self._op(op), s)
        return self._done(async_op, self._finish(op, recv, out if back else None))
