"""Guards on the Python names a compiled function reads: its globals and closure cells.

A trace bakes in what it read through names: a global tensor becomes a graph input bound to
that tensor object, a global float becomes a constant. Rebinding the name (`w = full(...)`,
`lr = 0.01`) must make the next call trace again, as eager Python and torch.compile see the
new value. `Bindings.of(fn)` records, before a trace, every global and closure cell the
function's code can name (and, through globals that are plain Python functions, the code they
call, a few levels deep); `Bindings.hold()` says whether each still holds the same object
(equal, for plain scalars and strings).
"""
from __future__ import annotations

import types
from typing import Any, Callable

_MAX_DEPTH = 3  # helper functions followed through globals, as `f` calls `g` calls `h`
_MISSING = object()
_SCALARS = (int, float, bool, str, complex, type(None))


class Bindings:
    __slots__ = ("_globals", "_cells")

    def __init__(self, globals_: list, cells: list):
        self._globals = globals_  # (namespace dict, name, value)
        self._cells = cells  # (cell, value)

    @staticmethod
    def of(fn: Callable) -> "Bindings":
        globals_: list = []
        cells: list = []
        seen: set = set()
        for f in _entry_functions(fn):
            _collect(f, globals_, cells, seen, 0)
        return Bindings(globals_, cells)

    def hold(self) -> bool:
        for ns, name, value in self._globals:
            if not _same(ns.get(name, _MISSING), value):
                return False
        for cell, value in self._cells:
            try:
                now = cell.cell_contents
            except ValueError:  # the cell was emptied (`del`)
                return False
            if not _same(now, value):
                return False
        return True

    def __len__(self) -> int:
        return len(self._globals) + len(self._cells)


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and isinstance(a, _SCALARS) and a == b)


def _entry_functions(fn: Callable) -> list:
    """The Python functions a call of `fn` starts in: a function, a bound method's function,
    a Module's `forward` (and its hooks are modules' own business: their tensors are guarded
    as parameters), a callable object's `__call__`."""
    if isinstance(fn, types.FunctionType):
        return [fn]
    if isinstance(fn, types.MethodType):
        return _entry_functions(fn.__func__)
    forward = getattr(type(fn), "forward", None)
    if isinstance(forward, types.FunctionType):
        return [forward]
    call = getattr(type(fn), "__call__", None)
    return [call] if isinstance(call, types.FunctionType) else []


def _is_library(f: types.FunctionType) -> bool:
    # fusetorch's own functions read only module-level constants and the names of other
    # functions, which never change between calls
    return (f.__module__ or "").split(".")[0] == "fusetorch"


def _collect(f: types.FunctionType, globals_: list, cells: list, seen: set,
             depth: int) -> None:
    if id(f) in seen or _is_library(f):
        return
    seen.add(id(f))
    ns = f.__globals__
    for name in _names(f.__code__):
        value = ns.get(name, _MISSING)
        if value is _MISSING:  # a builtin (or a name not yet defined: it would raise)
            continue
        globals_.append((ns, name, value))
        if isinstance(value, types.FunctionType) and depth < _MAX_DEPTH:
            _collect(value, globals_, cells, seen, depth + 1)
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        cells.append((cell, value))
        if isinstance(value, types.FunctionType) and depth < _MAX_DEPTH:
            _collect(value, globals_, cells, seen, depth + 1)


def _names(code: types.CodeType) -> set:
    """Global names a code object (and the code nested in it: lambdas, inner functions) may
    load. `co_names` also holds attribute names; those that are no global are skipped."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names
