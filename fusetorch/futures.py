"""`torch.futures.Future` and `torch.fork`/`torch.wait` (TorchScript's asynchronous calls):
fusetorch runs the forked call at once, so its future is complete when returned."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    def __init__(self, *, devices=None) -> None:
        self._done, self._value, self._error, self._callbacks = False, None, None, []

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once")
        self._done, self._value = True, result
        for cb in self._callbacks:
            cb(self)

    def set_exception(self, result: BaseException) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once")
        self._done, self._error = True, result
        for cb in self._callbacks:
            cb(self)

    def wait(self) -> Any:
        if not self._done:
            raise RuntimeError("fusetorch: waiting on a Future nothing will complete (fusetorch "
                               "runs work synchronously)")
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> Any:
        return self.wait()

    def then(self, callback: Callable) -> "Future":
        out = Future()

        def run(fut: "Future") -> None:
            try:
                out.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001 (the callback's error belongs to `out`)
                out.set_exception(e)
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback: Callable) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


def collect_all(futures: list) -> Future:
    out = Future()
    out.set_result(list(futures))
    return out


def wait_all(futures: list) -> list:
    return [f.wait() for f in futures]


def fork(func: Callable, *args, **kwargs) -> Future:
    """func(*args, **kwargs), run now; its result (or error) in a completed Future."""
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 (re-raised by wait, as PyTorch does)
        fut.set_exception(e)
    return fut


def wait(future: Future) -> Any:
    return future.wait()
