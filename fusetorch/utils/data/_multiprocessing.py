"""Loading in worker processes: the DataLoader iterator for `num_workers > 0`.

Workers are processes (start method `fork` where the platform has it). The main process hands
out whole batches of indices round-robin, at most `prefetch_factor` per worker ahead, and
returns the results in sampler order, so the batches equal those of `num_workers=0`. Each
worker has its own index queue and its own result pipe; the main process waits on the pipes
and on the workers' process sentinels together (`multiprocessing.connection.wait`), so a worker
that dies is noticed at once and raises instead of hanging. Batches cross as shared memory:
a worker collates straight into a shared segment, and the pipe carries only the segment's
file descriptor (see `fusetorch.multiprocessing`), which the main process fetches from the
worker while unpickling; a worker gone by then counts as a dead worker.
"""
from __future__ import annotations

import atexit
import itertools
import os
import time
import weakref
from multiprocessing import connection as mp_connection

from ._worker import ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration, \
    _worker_loop
from .dataloader import DataLoader, _BaseDataLoaderIter, _DatasetKind, _default_context

# Iterators with live workers, shut down before multiprocessing's own exit handler runs.
_LIVE: "weakref.WeakSet[_MultiProcessingDataLoaderIter]" = weakref.WeakSet()
_EXITING = False


@atexit.register
def _shutdown_all() -> None:
    global _EXITING
    for it in list(_LIVE):
        it._shutdown_workers(graceful=False)
    _EXITING = True


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for "
                                 "MultiProcessingDataLoaderIter")
        ctx = loader.multiprocessing_context or _default_context()
        fork = ctx.get_start_method() == "fork"
        self._owner = os.getpid()
        self._shutdown = False
        # a lock-free flag: a worker killed while holding an Event's lock would hang shutdown
        self._done = ctx.RawValue("b", 0)
        self._index_queues, self._workers, self._conns = [], [], []
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()  # never block exit on a dead worker's queue
                reader, writer = ctx.Pipe(duplex=False)
                w = ctx.Process(
                    target=_worker_loop,
                    args=(self._dataset_kind, self._dataset, index_queue, writer, self._done,
                          self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, loader.worker_init_fn, i, self._num_workers,
                          self._persistent_workers, list(self._conns) if fork else []),
                    daemon=True)
                w.start()
                writer.close()  # the worker holds the only write end: its death means EOF
                self._index_queues.append(index_queue)
                self._workers.append(w)
                self._conns.append(reader)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        _LIVE.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # next task to hand out
        self._rcvd_idx = 0  # next task to return
        self._task_info = {}  # task -> (worker,) while outstanding, (worker, data) when early
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: new epoch, drop what the last one left
            for q in self._index_queues:
                q.put(_ResumeIteration())
            remaining = self._num_workers
            while remaining > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _get_data(self):
        """The next message from any worker. Raises when a worker died, or after `timeout`."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            conns = [c for c in self._conns if c is not None]
            alive = {w.sentinel: wid for wid, w in enumerate(self._workers)
                     if self._workers_status[wid]}
            if not conns and not alive:  # nothing could ever arrive: never wait forever
                raise RuntimeError("DataLoader has no live workers left to wait for")
            wait_s = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = mp_connection.wait(conns + list(alive), timeout=wait_s)
            if not ready and deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            # results before deaths: a worker may have sent its batch and then exited
            for c in ready:
                if c in alive:
                    continue
                wid = self._conns.index(c)
                try:
                    return c.recv()
                except (EOFError, OSError):  # its write end closed: the worker is gone
                    c.close()
                    self._conns[wid] = None
                    if self._workers_status[wid]:
                        self._worker_failed([wid])
            dead = [alive[s] for s in ready if s in alive]
            if dead:
                self._worker_failed(dead)

    def _worker_failed(self, worker_ids: list) -> None:
        pids = ", ".join(str(self._workers[w].pid) for w in worker_ids)
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _next_data(self):
        if self._shutdown:  # after a worker failure the iterator is finished
            raise StopIteration
        while True:
            # skip tasks of workers that stopped (iterable datasets) without a result
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            if isinstance(idx, _ResumeIteration):
                continue
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable \
                    and isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, round-robin
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order or self._workers_num_tasks[worker_queue_idx] \
                        < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx: int):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        # the worker exits when it reads None; its end-of-pipe is then expected, not a failure
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self, graceful: bool = True) -> None:
        """Stop the workers and reap them. Graceful: tell them (None on their queues), wait
        for them to finish the batch in hand, then terminate stragglers. Not graceful (from
        `__del__` and at exit): terminate them at once and leave the queues alone, because a
        garbage collection can run `__del__` inside a queue's feeder thread, where waiting
        on, or locking, a queue would deadlock."""
        # a forked child holds a copy of this object: only the process that started the
        # workers may stop them
        if self._shutdown or _EXITING or getattr(self, "_owner", None) != os.getpid():
            return
        self._shutdown = True
        try:
            self._done.value = 1
            if graceful:
                for worker_id in range(len(self._workers)):
                    if self._persistent_workers or self._workers_status[worker_id]:
                        self._mark_worker_as_unavailable(worker_id)
            # closing our read ends makes a worker blocked on sending a batch fail and exit
            for c in self._conns:
                if c is not None:
                    c.close()
            self._conns = [None] * len(self._conns)
            if graceful:
                deadline = time.monotonic() + 5.0
                for w in self._workers:
                    w.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in self._index_queues:
                q.cancel_join_thread()  # a dead reader must not block interpreter exit
                if graceful:
                    q.close()
        finally:
            for w in self._workers:  # still busy in the user's code: stop it, then reap it
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
                if w.is_alive():
                    w.kill()
                    w.join()
            _LIVE.discard(self)

    def __del__(self) -> None:
        try:
            self._shutdown_workers(graceful=False)
        except Exception:  # interpreter teardown: modules may be half gone
            pass
