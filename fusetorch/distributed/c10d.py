"""The process group and the collectives' public API (torch.distributed's names, signatures and
errors). Checks live here; moving bytes is the backend's job (`mpi.py`, `nccl.py`), which works on
the tensors' arrays in place, so nothing is pickled."""
from __future__ import annotations

import enum
import importlib.util
import warnings

from ..tracer.tensor import Tensor, _data_read

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class ReduceOp:
    """`dist.ReduceOp.SUM`, ... (AVG is computed as SUM then a division by the world size)."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


class Backend(str):
    """Backend names, as `dist.Backend.MPI == "mpi"`."""
    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"

    def __new__(cls, name: str):
        return str.__new__(cls, name.lower())


class GroupMember:
    """`dist.group.WORLD`: the default group, the only one (no `new_group` yet)."""
    WORLD = object()
    NON_GROUP_MEMBER = object()


group = GroupMember


class Work:
    """What an `async_op=True` collective returns: `wait()` completes it (and the work that
    follows the transfer, e.g. AVG's division or writing back into a non-contiguous tensor)."""

    def __init__(self, requests: list, finish=None, test=None):
        self._requests, self._finish, self._test = requests, finish, test
        self._done = False

    def wait(self, timeout=None) -> bool:
        if not self._done:
            for r in self._requests:
                r.Wait()
            if self._finish is not None:
                self._finish()
            self._done = True
        return True

    def is_completed(self) -> bool:
        if not self._done and all(r.Test() for r in self._requests):
            self.wait()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()


_PG = None  # the default process group: an MPIBackend or NCCLBackend


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    # without importing mpi4py: importing it initialises MPI
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    return importlib.util.find_spec("cupy") is not None


def is_initialized() -> bool:
    return _PG is not None


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "",
                       pg_options=None, device_id=None) -> None:
    """Join the default process group. Ranks come from the MPI launcher (`mpiexec -n N`; a
    script started without it is rank 0 of 1). `backend`: "mpi" (the default; CPU tensors) or
    "nccl" (CUDA tensors through cupy, with MPI carrying only NCCL's id). `init_method`, `store`
    and `timeout` are accepted for PyTorch scripts and not used: MPI does the rendezvous."""
    global _PG
    if _PG is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = "mpi" if backend is None else Backend(str(backend))
    if name == "gloo":
        _PG = _gloo_on_mpi(world_size, rank)
        return
    if name not in ("mpi", "nccl"):
        if name in ("ucc", "xccl", "cpu:gloo,cuda:nccl"):
            raise RuntimeError(f"fusetorch.distributed has no '{name}' backend: use 'mpi' for CPU "
                               "tensors (launch with mpiexec) or 'nccl' for CUDA tensors")
        raise ValueError(f"Invalid backend: '{backend}'")
    if world_size != -1 or rank != -1:
        warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are ignored "
                      "since they are assigned by the MPI runtime.", stacklevel=2)
    if name == "mpi":
        from .mpi import MPIBackend
        _PG = MPIBackend()
    else:
        from .nccl import NCCLBackend
        _PG = NCCLBackend()


# what MPI launchers (mpich/hydra, Open MPI, PMIx, Slurm's PMI) put in each rank's environment
_MPI_LAUNCHER_ENV = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                     "MPI_LOCALNRANKS")
_gloo_noted = False


def launched_by_mpi() -> bool:
    """Whether this process was started by an MPI launcher (mpiexec/mpirun/srun), read from the
    environment so that nothing imports mpi4py (which would initialise MPI)."""
    import os
    return any(v in os.environ for v in _MPI_LAUNCHER_ENV)


def _gloo_on_mpi(world_size: int, rank: int):
    """'gloo' (PyTorch's CPU backend) runs on the MPI backend under an MPI launcher; a single
    process started without one is a world of one, which needs no MPI (local.py). Processes started any other way (torchrun, mp.spawn with a rendezvous)
    cannot find each other through MPI: that is an error, never N separate worlds of one."""
    import os
    global _gloo_noted
    wanted = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "1") or 1)
    if wanted > 1 and not launched_by_mpi():
        raise RuntimeError(
            f"fusetorch.distributed runs the 'gloo' backend on MPI, and this process was not "
            f"started by an MPI launcher (world_size {wanted} was asked for): launch the ranks "
            f"with `mpiexec -n {wanted} python script.py` instead of torchrun or "
            "multiprocessing.spawn")
    if wanted == 1 and not launched_by_mpi():
        if rank not in (-1, 0):
            raise RuntimeError(f"init_process_group('gloo', world_size=1, rank={rank}): the "
                               "only rank of a world of one is 0")
        from .local import LocalBackend
        return LocalBackend()
    from .mpi import MPIBackend
    pg = MPIBackend()
    if (world_size != -1 and world_size != pg.size) or (rank != -1 and rank != pg.rank):
        pg.close()
        raise RuntimeError(f"init_process_group('gloo', world_size={world_size}, rank={rank}): "
                           f"the MPI launcher made this process rank {pg.rank} of {pg.size}")
    pg.name = "gloo"  # get_backend() answers what the script asked for
    if not _gloo_noted:
        _gloo_noted = True
        warnings.warn("fusetorch.distributed has no gloo backend of its own: 'gloo' runs on the "
                      "MPI backend (CPU tensors; ranks and world size from the MPI launcher). "
                      "This note is shown once.", UserWarning, stacklevel=3)
    return pg


def destroy_process_group(group=None) -> None:
    global _PG
    if _PG is None:
        raise AssertionError("Process group cannot be None")
    _pg(group)
    pg, _PG = _PG, None
    pg.close()


def _pg(group):
    if _PG is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is not None and group is not GroupMember.WORLD:
        raise ValueError("fusetorch.distributed has one process group, the default (WORLD); "
                         "new_group is not supported yet")
    return _PG


def get_backend(group=None) -> str:
    return Backend(_pg(group).name)


def get_rank(group=None) -> int:
    return _pg(group).rank


def get_world_size(group=None) -> int:
    return _pg(group).size


def barrier(group=None, async_op: bool = False, device_ids=None, timeout=None):
    return _pg(group).barrier(async_op)


def _check_tensor(t, param: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")


def _check_tensor_list(ts, param: str) -> None:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        "List[torch.Tensor]\n             but got "
                        f"{type(ts)} with elements of type "
                        f"{[type(t) for t in ts] if isinstance(ts, (list, tuple)) else None} "
                        "instead.")


_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}


def _check_op(op, t: Tensor):
    if not isinstance(op, RedOpType):
        raise TypeError(f"op must be a ReduceOp (dist.ReduceOp.SUM, ...), got {op!r}")
    if op is RedOpType.AVG and not t._dtype.is_floating_point:
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{_SCALAR_NAMES.get(t._dtype.name, t._dtype.name)}")
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and t._dtype.is_floating_point:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    return op


def _same_dtypes(ts: list) -> None:
    for t in ts[1:]:
        if t._dtype is not ts[0]._dtype:
            raise ValueError(f"Invalid usage of tensors with different dtypesFound torch."
                             f"{t._dtype.name} and  torch.{ts[0]._dtype.name}")


def _same_sizes(what: str, ts: list, ref: Tensor) -> None:
    for i, t in enumerate(ts):
        if tuple(t._data.shape) != tuple(ref._data.shape):
            raise RuntimeError(f"{what}: invalid tensor size at index {i} (expected "
                               f"{_shape(ref)}, got {_shape(t)})")


def _shape(t: Tensor) -> str:
    return "(" + ", ".join(str(d) for d in t._data.shape) + ")"


def _written(*ts: Tensor) -> None:
    """Collectives read data into Python (a graph break under `compile`) and write buffers in
    place (autograd must see the new version)."""
    _data_read("a collective")
    for t in ts:
        t._bump_version()


def _result(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over all ranks, in place on every rank."""
    pg = _pg(group)
    _check_tensor(tensor, "tensor")
    _check_op(op, tensor)
    _written(tensor)
    return _result(pg.all_reduce(tensor._data, op, async_op), async_op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy rank `src`'s `tensor` into `tensor` on every other rank."""
    pg = _pg(group)
    _check_tensor(tensor, "tensor")
    src = group_src if src is None else src
    if src is None:
        raise ValueError("Either src or group_src must be specified")
    if not 0 <= src < pg.size:
        raise RuntimeError(f"broadcast: invalid root rank: {src}")
    _written(tensor)
    return _result(pg.broadcast(tensor._data, src, async_op), async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """`tensor_list[r]` becomes rank r's `tensor`, on every rank."""
    pg = _pg(group)
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    _same_dtypes([tensor] + list(tensor_list))
    if len(tensor_list) != pg.size:
        raise RuntimeError(f"all_gather: invalid output tensor list at index 0 (expected "
                           f"length {pg.size}, got {len(tensor_list)})")
    _same_sizes("all_gather", tensor_list, tensor)
    _written(*tensor_list)
    return _result(pg.all_gather([t._data for t in tensor_list], tensor._data, async_op),
                   async_op)


def reduce_scatter(output: Tensor, input_list: list, op=ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """`output` on rank r becomes the reduction over ranks of their `input_list[r]`."""
    pg = _pg(group)
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    _same_dtypes([output] + list(input_list))
    _check_op(op, output)
    if len(input_list) != pg.size:
        raise RuntimeError(f"reduce_scatter: invalid input tensor list at index 0 (expected "
                           f"length {pg.size}, got {len(input_list)})")
    _same_sizes("reduce_scatter", input_list, output)
    _written(output)
    return _result(pg.reduce_scatter(output._data, [t._data for t in input_list], op, async_op),
                   async_op)


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Rank `src`'s picklable objects into `object_list` on every rank (in place), as PyTorch's:
    the pickles' sizes, then their bytes, travel by `broadcast`. Unpickling runs what a peer
    sent: use it only among the job's own processes, as in PyTorch."""
    import pickle

    import numpy as np

    from ..tracer.creation import from_numpy
    pg = _pg(group)
    src = group_src if src is None else src
    if src is None:
        raise ValueError("Either src or group_src must be specified")
    mine = pg.rank == src
    blobs = [pickle.dumps(o) for o in object_list] if mine else []
    sizes = from_numpy(np.array([len(b) for b in blobs] if mine else [0] * len(object_list),
                                dtype=np.int64))
    broadcast(sizes, src, group)
    n = sizes._data
    flat = np.frombuffer(b"".join(blobs), dtype=np.uint8).copy() if mine else \
        np.empty(int(n.sum()), dtype=np.uint8)
    data = from_numpy(flat)
    broadcast(data, src, group)
    if not mine:
        raw, at = data._data.tobytes(), 0
        for i, k in enumerate(n.tolist()):
            object_list[i] = pickle.loads(raw[at:at + k])
            at += k
