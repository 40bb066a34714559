"""Guards on the attributes of objects that a trace read: `model.training`, `drop.p`, `bn.eps`,
`lin.weight`, `seq._modules`, `holder.model`.

A traced call bakes in what it read from objects: `self.training` picks dropout or not,
`self.eps` becomes a constant, `self.weight` becomes a graph input bound to that tensor object,
`self._modules` fixes which layers run. A compiled call must return what the eager call would,
so each later call checks that every attribute the trace read still holds the same value (the
same object; equal for plain scalars) and traces again if not. Only what the trace read is
guarded: setting an attribute the forward never reads (`model.step_count = i`) costs nothing.

The reads are recorded while a trace runs, and only then: `recording(classes)` gives
`Module` (so every layer, however it is reached: the compiled module itself, a global, a
closure cell, an attribute of another object, `self`) and the given user classes (objects
found through the function's globals and cells, `self` of a compiled method) an
`__getattribute__` that notes reads of instance attributes, and `Module` a `__getattr__` that
notes reads of parameters, buffers and submodules; both are removed when the last trace ends,
so eager code never pays for them. A container read as a whole (`self._modules` iterated by
`Sequential`, a list of sizes) is guarded by its items too (`_guards.items_of`).
Classes that define their own `__getattribute__` and built-in types are not recorded (a
`SimpleNamespace` or argparse `Namespace` in a global or cell has the attributes its code
names guarded by `_guards.py` instead). A forward that appends to a list attribute it reads
(`self.history.append(...)`) traces on every call, as its eager run is the only one that
appends; the retrace's reason names the attribute. While a trace runs, `builtins.print` notes
the user's line of the call's first output (`_Log.printed`: a print, a write to sys.stdout or
sys.stderr, a logging record not fusetorch's own): a replay would not make it, so `compile`
traces such a call again, as it does one that changes a global container.
"""
from __future__ import annotations

import builtins
import os
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ._guards import _EMPTY, _MISSING, _same, changed, items_of, same_items

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # fusetorch's own frames
_local = threading.local()  # .logs: the read logs of the traces running in this thread
_lock = threading.Lock()
_patched: dict = {}  # class -> [traces using its recording hooks, what to restore]


class Reads:
    """The attributes a trace read: (owner, namespace dict, name, value, items, line) each,
    where items is a container value's shallow contents (None for other values) and line the
    user's line that read it (the innermost frame outside fusetorch)."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list):
        self._entries = entries

    def hold(self) -> bool:
        # (the hot path of every compiled call: identity first, the slower `_same` only for
        # an equal scalar that is another object)
        for _owner, ns, name, value, items, _line in self._entries:
            now = ns.get(name, _MISSING)
            if now is not value and not _same(now, value):
                return False
            if items is not None:
                if items is _EMPTY:  # (most: a module's hook dicts)
                    if now:
                        return False
                elif not same_items(now, items):
                    return False
        return True

    def failure(self) -> str | None:
        """Which attribute no longer holds what the trace read, in words; None if all do."""
        for owner, ns, name, value, items, line in self._entries:
            now = ns.get(name, _MISSING)
            what = f"{type(owner).__name__}.{name}"
            if not _same(now, value):
                return f"attribute {what} {changed(value, now)} (read at {line})"
            if items is not None and not same_items(now, items):
                return f"attribute {what} changed its items (read at {line})"
        return None

    def __len__(self) -> int:
        return len(self._entries)


class _Log:
    __slots__ = ("entries", "seen", "printed")

    def __init__(self):
        self.entries: list = []
        self.seen: set = set()
        self.printed: str | None = None  # the user's line of the call's first output

    def note(self, owner: Any, ns: dict, name: str, value: Any) -> None:
        key = (id(ns), name)
        if key not in self.seen:  # the first read: what the call found there
            self.seen.add(key)
            self.entries.append((owner, ns, name, value, items_of(value), _user_line()))


def _user_line(depth: int = 3) -> str:
    f = sys._getframe(depth)
    while f is not None and (f.f_code.co_filename.startswith(_PACKAGE) or
                             f.f_globals.get("__name__") == "logging"):
        f = f.f_back
    return "?" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


def _note(owner: Any, ns: dict, name: str, value: Any) -> None:
    for log in getattr(_local, "logs", ()):
        log.note(owner, ns, name, value)


def _recording_getattribute(self, name: str):
    value = object.__getattribute__(self, name)
    if getattr(_local, "logs", None):
        try:
            ns = object.__getattribute__(self, "__dict__")
        except AttributeError:  # (__slots__ only)
            return value
        if ns.get(name, _MISSING) is value:  # an instance attribute, not a method
            _note(self, ns, name, value)
    return value


def _module_getattr(module_getattr):
    def __getattr__(self, name: str):
        value = module_getattr(self, name)
        if getattr(_local, "logs", None):
            d = object.__getattribute__(self, "__dict__")
            for dname in ("_parameters", "_buffers", "_modules"):
                members = d.get(dname)
                if members is not None and name in members:
                    _note(self, members, name, value)
                    break
        return value
    __getattr__.recording = True
    return __getattr__


# Output a replay would not make. A replay runs no Python, so output the traced code makes
# (print, a write to sys.stdout/sys.stderr, a logging record) would show only while tracing;
# `compile` traces such a call again. The hooks stand while any trace runs (in any thread).
_real_print = builtins.print
_printing = [0]  # traces running while the output hooks stand
_SKIPPED_WRITERS = frozenset({"warnings", "_py_warnings"})  # a warning shows once by itself


def _note_output(depth: int) -> None:
    logs = getattr(_local, "logs", ())
    if logs:
        line = _user_line(depth + 1)
        for log in logs:
            if log.printed is None:
                log.printed = line


def _recording_print(*args, **kwargs):
    _note_output(2)
    return _real_print(*args, **kwargs)


class _NotingStream:
    """sys.stdout/sys.stderr while a trace runs: the stream, with its writes noted."""

    def __init__(self, stream):
        object.__setattr__(self, "_stream", stream)

    def write(self, text):
        if sys._getframe(1).f_globals.get("__name__") not in _SKIPPED_WRITERS:
            _note_output(2)
        return self._stream.write(text)

    def writelines(self, lines):
        _note_output(2)
        return self._stream.writelines(lines)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._stream, name, value)


def _recording_call_handlers(self, record):
    if not record.name.startswith("fusetorch"):  # (fusetorch's own log says how it compiles)
        _note_output(2)
    return _real_call_handlers(self, record)


def _install_output_hooks() -> None:
    global _real_call_handlers
    if builtins.print is _real_print:
        builtins.print = _recording_print
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _NotingStream):
            setattr(sys, name, _NotingStream(stream))
    logger = sys.modules["logging"].Logger if "logging" in sys.modules else None
    if logger is not None and logger.callHandlers is not _recording_call_handlers:
        _real_call_handlers = logger.callHandlers
        logger.callHandlers = _recording_call_handlers


def _remove_output_hooks() -> None:
    # (each only where it is still the hook: code that replaced it meanwhile keeps its own)
    if builtins.print is _recording_print:
        builtins.print = _real_print
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, _NotingStream):
            setattr(sys, name, stream._stream)
    logger = sys.modules["logging"].Logger if "logging" in sys.modules else None
    if logger is not None and logger.callHandlers is _recording_call_handlers:
        logger.callHandlers = _real_call_handlers


_real_call_handlers = None


def _recordable(cls: type) -> bool:
    """A Python class whose instances' attribute reads the hook can see: no class of its MRO
    but `object` defines `__getattribute__` (the hook replaces `object`'s)."""
    return all(vars(k).get("__getattribute__", _recording_getattribute) is
               _recording_getattribute for k in cls.__mro__[:-1])


def _patch(cls: type, module: bool) -> None:
    entry = _patched.get(cls)
    if entry is not None:
        entry[0] += 1
        return
    old_getattr = vars(cls).get("__getattr__") if module else None
    try:
        cls.__getattribute__ = _recording_getattribute
    except Exception:  # a built-in or extension type, a metaclass that refuses (not recorded)
        return
    if module:
        cls.__getattr__ = _module_getattr(old_getattr)
    _patched[cls] = [1, old_getattr]


def _unpatch(cls: type) -> None:
    entry = _patched.get(cls)
    if entry is None:
        return
    entry[0] -= 1
    if entry[0] == 0:
        del _patched[cls]
        try:
            del cls.__getattribute__
        except Exception:  # (a metaclass that let it be set but refuses to delete it)
            cls.__getattribute__ = object.__getattribute__
        if entry[1] is not None:
            cls.__getattr__ = entry[1]


@contextmanager
def recording(classes: list = ()) -> Iterator[_Log]:
    """Record the attribute reads of Modules and of objects of `classes` made in this thread
    while the block runs (see the module's docstring); `Reads(log.entries)` guards them."""
    from .nn.module import Module
    targets = [Module] + [c for c in dict.fromkeys(classes)
                          if isinstance(c, type) and not issubclass(c, Module) and
                          _recordable(c)]
    log = _Log()
    with _lock:
        for c in targets:
            _patch(c, c is Module)
        _printing[0] += 1
        if _printing[0] == 1:
            _install_output_hooks()
    logs = getattr(_local, "logs", None)
    if logs is None:
        logs = _local.logs = []
    logs.append(log)
    try:
        yield log
    finally:
        logs.remove(log)
        with _lock:
            for c in targets:
                _unpatch(c)
            _printing[0] -= 1
            if _printing[0] == 0:
                _remove_output_hooks()
