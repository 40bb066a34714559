"""`spawn` / `start_processes`: run `fn(i, *args)` in `nprocs` processes and wait for them, as
`torch.multiprocessing.spawn` does. The first process to fail stops the others; its exception
(with its traceback, passed back through a file) or its exit code or signal is raised here.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed because its code raised."""


class ProcessExitedException(ProcessException):
    """A process died from a signal or exited with a non-zero code."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # stopped by the parent
    except Exception:
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes: list, error_files: list):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to `timeout` for a process to finish. True when all have finished; raises
        the first failure after stopping the others (SIGTERM, then SIGKILL)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:  # let the others stop by themselves first
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():  # stuck in C code, where SIGTERM's Python handler cannot run
                p.kill()
            p.join()
        failed = self.processes[error_index]
        path = self.error_files[error_index]
        if not os.access(path, os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(
                    f"process {error_index:d} terminated with signal {name}",
                    error_index=error_index, error_pid=failed.pid, exit_code=code,
                    signal_name=name)
            raise ProcessExitedException(
                f"process {error_index:d} terminated with exit code {code:d}",
                error_index=error_index, error_pid=failed.pid, exit_code=code)
        with open(path, "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(path)
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n"
        raise ProcessRaisedException(msg + original_trace, error_index, failed.pid)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Start `nprocs` processes running `fn(i, *args)`; with `join`, wait for all of them,
    else return their `ProcessContext`."""
    mp = multiprocessing.get_context(start_method)
    error_files, processes = [], []
    for i in range(nprocs):
        # the child writes its traceback here only when it fails; the name is free until then
        tf = tempfile.NamedTemporaryFile(prefix="fusetorch-errorfile-", suffix=".pickle",
                                         delete=False)
        tf.close()
        os.unlink(tf.name)
        p = mp.Process(target=_wrap, args=(fn, i, args, tf.name), daemon=daemon)
        p.start()
        error_files.append(tf.name)
        processes.append(p)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn"):
    """Spawn `nprocs` processes running `fn(i, *args)` (start method 'spawn').

    >>> fusetorch.multiprocessing.spawn(train, args=(model,), nprocs=2)
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
