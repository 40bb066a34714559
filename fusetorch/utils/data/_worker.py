"""What runs inside a DataLoader worker process, and what the workers send back.

A worker receives `(task index, batch of indices)` on its own multiprocessing queue, fetches and
collates that batch, and sends `(task index, batch)` back through its own pipe. The main process
puts the batches back into sampler order (see `dataloader.py`). An exception in the worker
travels back as an `ExceptionWrapper` holding the worker's formatted traceback.
"""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

# How often (seconds) a waiting worker checks that the main process is still there.
MP_STATUS_CHECK_INTERVAL = 1.0

_worker_info: "WorkerInfo | None" = None


@dataclass(frozen=True)
class WorkerInfo:
    """`get_worker_info()` inside a worker: its id, the number of workers, its seed and its own
    copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


def get_worker_info() -> WorkerInfo | None:
    """The `WorkerInfo` of this DataLoader worker process; None in the main process."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Persistent workers: start a new epoch."""

    seed: int | None = None


class KeyErrorMessage(str):
    """A str whose repr is itself, so a re-raised KeyError prints its traceback text readably."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker: its type and the formatted traceback (the traceback
    object itself cannot cross processes)."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the wrapped exception type here, its message carrying the worker's
        traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # the exception type takes other arguments: the text still gets through
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # exception -> traceback -> this frame -> exception would be a cycle keeping the
            # loader's iterator (and so its worker processes) alive until the next gc
            del exception


def _generate_state(base_seed: int, worker_id: int) -> list:
    """The 4 x 32-bit numpy seed PyTorch gives worker `worker_id` (numpy's SeedSequence
    hashing of `[worker_id, base_seed low, base_seed high, 0]`), so numpy's global random
    state differs across workers and epochs."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_A = INIT_A

    def hash(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)
        result &= MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    for i in range(len(pool)):
        pool[i] = hash(entropy[i])
    for i_src in range(len(pool)):
        for i_dst in range(len(pool)):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))
    hash_const_B = INIT_B
    state = []
    for i_dst in range(4):
        data_val = (pool[i_dst] ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        state.append((data_val ^ (data_val >> XSHIFT)) & MASK32)
    return state


def _send(conn, idx, data, worker_id: int) -> bool:
    """Send one result; a batch that cannot be pickled goes back as the pickling error.
    False when the main process has gone away."""
    try:
        conn.send((idx, data))
        return True
    except (BrokenPipeError, ConnectionResetError, EOFError):
        return False
    except Exception:  # pickling failed before anything was written: report it instead
        err = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        try:
            conn.send((idx, err))
        except (BrokenPipeError, ConnectionResetError, EOFError):
            return False
        except Exception:  # the exception type itself does not pickle: keep its text
            err.exc_type = RuntimeError
            try:
                conn.send((idx, err))
            except Exception:
                return False
        return True


def _worker_loop(dataset_kind, dataset, index_queue, conn, done_flag, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                 persistent_workers, inherited) -> None:
    """The body of worker process `worker_id`."""
    from ...tracer.creation import manual_seed
    from .dataloader import _DatasetKind
    global _worker_info
    try:
        # Forked after earlier workers: close our copies of their pipes' read ends, so their
        # writes fail (instead of blocking) once the main process has closed its own.
        for c in inherited:
            c.close()
        seed = base_seed + worker_id
        random.seed(seed)
        manual_seed(seed)
        import numpy as np
        np.random.seed(_generate_state(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                  collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:  # orphaned (main process killed): stop
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                if not _send(conn, r, None, worker_id):
                    break
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                      collate_fn, drop_last)
                continue
            if r is None:  # shutdown (or this worker's iterable dataset is done)
                break
            if done_flag.value or iteration_end:  # shutting down: skip what is queued
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(
                            where=f"in DataLoader worker process {worker_id}")
            if not _send(conn, idx, data, worker_id):
                break
            del data, idx, index, r
    except KeyboardInterrupt:
        pass  # the main process handles Ctrl-C and shuts the workers down
    finally:
        try:
            conn.close()
        except OSError:
            pass

