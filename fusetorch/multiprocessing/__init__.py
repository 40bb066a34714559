"""`fusetorch.multiprocessing`: Python's `multiprocessing`, with CPU tensors crossing processes
as shared memory instead of copies.

The API is the standard module's (Process, Queue, SimpleQueue, Pipe, Pool, get_context,
set_start_method, ...), as in `torch.multiprocessing`. A tensor sent to another process (a
Process argument under spawn/forkserver, a Queue, a Pipe) is moved into shared memory and the
receiver maps the same pages, so writes on either side are seen by both:

    import fusetorch.multiprocessing as mp
    q = mp.Queue()
    q.put(t)           # t.is_shared() is now True; the receiver's tensor aliases it

Registration happens on import (`import fusetorch` imports this package); plain `pickle` and
`fusetorch.save` still copy. Segments are anonymous files (see `storage.py`): freed when the
last process using them lets go or dies, never left in /dev/shm.
"""
import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__

# One strategy: file descriptors to anonymous files. PyTorch's "file_system" (named files in
# /dev/shm, kept by a daemon) exists to dodge descriptor limits at the cost of leak risk.
_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for sharing CPU tensors (only "file_descriptor" exists here)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """The strategy for sharing CPU tensors."""
    return _sharing_strategy


def get_all_sharing_strategies() -> set:
    """The sharing strategies this system supports."""
    return set(_all_sharing_strategies)


if sys.platform == "win32":  # no file-descriptor passing: tensors are pickled as copies
    _all_sharing_strategies = set()
else:
    init_reductions()
