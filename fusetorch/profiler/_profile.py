"""`profile`, `record_function`, `schedule` and `tensorboard_trace_handler` with PyTorch's
interface (`torch.profiler`), over the hook in `_record.py`."""
from __future__ import annotations

import enum
import functools
import os
import socket
import time
import warnings
from typing import Callable, Iterable

from ..runtime import program as _program
from ..tracer import dispatch as _dispatch
from ._events import EventList, function_events
from ._record import Hook


class ProfilerActivity(enum.Enum):
    """Activity groups (PyTorch's values). fusetorch records CPU activity: ops, autograd,
    compiled kernels; CUDA and the others are accepted and add nothing."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's schedule: skip `skip_first` steps, then cycles of `wait` idle, `warmup` and
    `active` recorded steps (the last of which saves), `repeat` times (0: until the end)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup="
            f"{warmup} (need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)
    return schedule_fn


def _default_schedule(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An `on_trace_ready` that writes each cycle's trace to
    `dir_name/<worker>.<ns>.pt.trace.json[.gz]` (the names TensorBoard's plugin reads)."""

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler_fn


def _install(hook: Hook | None) -> None:
    if hook is not None and _dispatch.PROFILE is not None:
        raise RuntimeError("a profiler is already recording in this thread: fusetorch "
                           "records one profile at a time per thread")
    _dispatch.PROFILE = hook
    _program.PROFILE = hook


def _forget_in_child() -> None:
    """A process forked while a profile records (DataLoader workers) does not record: its
    events would never reach the parent."""
    _dispatch.PROFILE = None
    _program.PROFILE = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class _Profile:
    """What both spellings share: recording on and off, and the results of the last
    recording."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool,
                 acc_events: bool = False):
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.acc_events = with_stack, acc_events
        self._hook: Hook | None = None
        self._raw: list = []
        self._t0 = self._wall0 = 0
        self._events: EventList | None = None

    def _start_trace(self) -> None:
        hook = Hook(self.record_shapes, self.with_stack, self.profile_memory)
        _install(hook)
        self._hook = hook
        if not (self.acc_events and self._raw):
            self._raw, self._t0, self._wall0 = [], time.perf_counter_ns(), time.time_ns()
        self._events = None

    def _stop_trace(self) -> None:
        hook = self._hook
        if hook is None:
            return
        hook.close_all()
        hook.closed = True  # (stopped from another thread: its own thread's entry points skip it)
        if _dispatch.PROFILE is hook:
            _install(None)
        self._raw.extend(hook.events)
        self._hook = None
        self._events = None

    # ------------------------------------------------------------ results

    def events(self) -> EventList:
        """Every recorded event (FunctionEvent), in start order."""
        if self._events is None or self._hook is not None:
            raw = self._raw + (self._hook.events if self._hook is not None else [])
            ev = function_events(raw, self._t0)
            ev._profile_memory, ev._base_ns = self.profile_memory, self._wall0
            self._events = ev
        return self._events

    @property
    def function_events(self) -> EventList:
        return self.events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def kernel_table(self, sort_by: str = "self_cpu_time_total", row_limit: int = 100,
                     max_ops_column_width: int = 60) -> str:
        """The compiled kernels that ran: what each fuses, the user's lines, time, bytes
        moved per call and GB/s against this machine's copy bandwidth ('' if none ran)."""
        return self.events().kernel_table(sort_by, row_limit, max_ops_column_width)

    def total_average(self):
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)


class profile(_Profile):
    """`torch.profiler.profile`: a context manager (or `start()`/`stop()`, with `step()` per
    iteration when a `schedule` is given) recording fusetorch's ops, autograd, optimizer
    steps, `record_function` ranges and compiled kernels. `with_flops`, `with_modules` and
    the CUDA-side options are accepted and add nothing."""

    def __init__(self, *, activities: Iterable | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        acts = set()
        for a in (activities if activities is not None else supported_activities()):
            acts.update(a.keys() if isinstance(a, dict) else [a])
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
        if not acts:
            raise AssertionError("No valid profiler activities found")
        super().__init__(record_shapes, profile_memory, with_stack, acc_events)
        self.activities = acts
        self.with_flops, self.with_modules = with_flops, with_modules
        self.schedule = schedule or _default_schedule
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_span = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """The next step begins: the schedule decides whether it is recorded."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step()

    def _open_step(self) -> None:
        if self.record_steps and self._hook is not None:
            self._step_span = self._hook.open(f"ProfilerStep#{self.step_num}",
                                              "user_annotation")

    def _close_step(self) -> None:
        if self._step_span is not None:
            if self._hook is not None:
                self._hook.close(self._step_span)
            self._step_span = None

    def _transit(self, prev: ProfilerAction, cur: ProfilerAction | None) -> None:
        """PyTorch's action map, where warming up costs nothing (no device to prepare)."""
        was, now = prev in _RECORDING, cur in _RECORDING
        if prev is ProfilerAction.WARMUP and cur is ProfilerAction.NONE:
            warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
        if was and cur in (ProfilerAction.NONE, ProfilerAction.WARMUP) \
                and prev is ProfilerAction.RECORD:
            warnings.warn(f"Incorrect schedule: RECORD followed by {cur.name}", stacklevel=3)
        if was and (not now or prev is ProfilerAction.RECORD_AND_SAVE):
            self._stop_trace()
            if prev is ProfilerAction.RECORD_AND_SAVE or cur is None:
                self._trace_ready()
        if now and self._hook is None:
            self._start_trace()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)


class record_function:
    """`with record_function("name"):` (or `@record_function("name")`) adds a user range to
    the profile being recorded; nothing when none is."""

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args = name, args
        self._hook = self._event = None

    def __enter__(self):
        hook = _dispatch.PROFILE
        if hook is not None:
            self._hook, self._event = hook, hook.open(self.name, "user_annotation")
        return self

    def __exit__(self, *exc) -> bool:
        if self._event is not None:
            self._hook.close(self._event)
            self._hook = self._event = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper
