"""`torch.cuda.Stream`, `Event` and the stream context, over cupy's streams and events.

fusetorch's CUDA work (cupy's array operations and its own kernels, launched through cupy) goes
to cupy's current stream, so making a stream current (`with torch.cuda.stream(s):`) is what
PyTorch's context does. Without a device the constructors raise PyTorch's RuntimeErrors (its
CPU build: "Tried to instantiate dummy base class Event", "torch.cuda.Stream requires CUDA
support"); `torch.cuda.stream(None)` is a context that does nothing, as there.
"""
from __future__ import annotations

from ..runtime import device as _dev


def _cupy_or_raise(message: str):
    cp = _dev._cupy()
    if cp is None:
        raise RuntimeError(message)
    return cp


class Stream:
    """A CUDA stream: work queued on it runs in order, apart from other streams' work."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        cp = _cupy_or_raise("torch.cuda.Stream requires CUDA support")
        self.device = _dev.device("cuda", _index(device))
        self.priority = priority
        with cp.cuda.Device(self.device.index):
            self._s = kwargs.pop("_cupy", None) or (
                cp.cuda.Stream(non_blocking=True, priority=priority) if priority else
                cp.cuda.Stream(non_blocking=True))

    def wait_event(self, event: "Event") -> None:
        """Make later work on this stream wait for `event`."""
        self._s.wait_event(event._e)

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work on this stream wait for what `stream` has queued so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return self._s.done

    def synchronize(self) -> None:
        self._s.synchronize()

    @property
    def cuda_stream(self) -> int:
        return self._s.ptr

    def __enter__(self) -> "Stream":
        self._ctx = StreamContext(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._ctx.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: a point in a stream's work to wait for or to time from."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        cp = _cupy_or_raise("Tried to instantiate dummy base class Event")
        self.enable_timing = enable_timing
        self._e = cp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                interprocess=interprocess)

    def record(self, stream: Stream | None = None) -> None:
        self._e.record((stream or current_stream())._s)

    def wait(self, stream: Stream | None = None) -> None:
        (stream or current_stream()).wait_event(self)

    def query(self) -> bool:
        return self._e.done

    def synchronize(self) -> None:
        self._e.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and `end_event` (both recorded, with timing)."""
        cp = _dev._cupy()
        return float(cp.cuda.get_elapsed_time(self._e, end_event._e))

    def __repr__(self) -> str:
        return f"<torch.cuda.Event {self._e.ptr:#x}>"


class StreamContext:
    """`with torch.cuda.stream(s):`: `s` is the current stream inside; None changes nothing."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self._prev = None

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self._prev = self.stream._s.__enter__()
        return self.stream

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            self.stream._s.__exit__(*exc)


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)


def current_stream(device=None) -> Stream:
    """The stream CUDA work is queued on now (cupy's current stream)."""
    cp = _cupy_or_raise("Found no NVIDIA driver on your system.")
    return _wrap(cp.cuda.get_current_stream(), device)


def default_stream(device=None) -> Stream:
    cp = _cupy_or_raise("Found no NVIDIA driver on your system.")
    return _wrap(cp.cuda.Stream.null, device)


def _wrap(cupy_stream, device) -> Stream:
    return Stream(device, _cupy=cupy_stream)


def _index(device) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    d = _dev.device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index or 0
