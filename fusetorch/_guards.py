"""Guards on the Python names a compiled function reads: its globals and closure cells.

A trace bakes in what it read through names: a global tensor becomes a graph input bound to
that tensor object, a global float becomes a constant. Rebinding the name (`w = full(...)`,
`lr = 0.01`) must make the next call trace again, as eager Python and torch.compile see the
new value. `Bindings.of(fn)` records, before a trace, every global that code the call may run loads
(`LOAD_GLOBAL`, not every name of `co_names`, which also holds attribute names: a loop variable
`step` next to `opt.step()` is no read of the global `step`) and every closure cell it holds,
and `Bindings.hold()` says whether each still holds the same object (equal, for plain scalars
and strings; floats by their bits, so 0.0 and -0.0 differ); `Bindings.failure()` says which
one changed, for the retrace's reason.

The code a call may run is found from the function without running it: its own code and
nested code (lambdas, inner functions), then, through the values its globals and cells hold,
plain functions, `functools.partial`s, bound methods, every method of the user's classes
involved (the class of a Module entry and of each of its submodules, a Module or other object
of a user class held in a global, a user class itself), and functions that user modules held
in globals hold. Attributes that code can name of user modules and classes held in globals are
guarded too (`cfg.SCALE`, `Model.scale`). This over-approximates (a name in a method that
never runs is guarded as well; rebinding it costs one retrace) and adds nothing to the trace
itself (a `sys.settrace` hook that saw exactly the code that ran made LeNet's traced step
15-25% slower). Attributes of objects (`self.scale`, `model.training`, `holder.model`) are
guarded by what the trace actually read (see `_reads.py`); the classes of user objects found
here are the ones whose instances' reads it records (`Bindings.classes`). A list or dict a
global or cell holds is guarded by its items too (up to `_MAX_ITEMS`; `k[0] = 5.0`,
`cfg["scale"] = 3` between calls retrace, as torch.compile's guards on what it read do): a
call that changes such a container itself (`calls.append(1)`) is no replay but an effect
(compile.py's `changed_container`), so the items guarded are the ones no call changes. Not
guarded: globals of code reached only through attributes of objects (a function stored as
`self.helper`).
"""
from __future__ import annotations

import collections
import dis
import functools
import operator
import os
import struct
import sys
import sysconfig
import types
import weakref
from typing import Any, Callable

_MAX_DEPTH = 8  # steps from the entry function through values (f calls g calls h ...)
_MISSING = object()
_SCALARS = (int, float, bool, str, complex, type(None))
# packages whose module-level names never change between calls: ours, numpy, the stdlib
_LIBRARIES = {"fusetorch", "numpy", "ml_dtypes", "builtins"}
_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep  # (not a venv's)
_stable_names: dict[str, bool] = {}
_bits = struct.Struct("<d").pack
_MAX_ITEMS = 64  # a larger container is guarded by its identity only
_EMPTY = ()  # the items of an empty container
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "DELETE_GLOBAL", "STORE_GLOBAL"})
_loaded_globals: "weakref.WeakKeyDictionary[types.CodeType, frozenset]" = \
    weakref.WeakKeyDictionary()


class Bindings:
    __slots__ = ("_globals", "_cells", "_items", "classes")

    def __init__(self, globals_: list, cells: list, classes: list = ()):
        self._globals = globals_  # (namespace dict or class/module __dict__, name, value)
        self._cells = cells  # (cell, value, name)
        # (container, its items as `items_of` takes them, name): lists and dicts held
        self._items = [(value, items, f"global '{name}'") for _ns, name, value in globals_
                       if (items := items_of(value)) is not None]
        self._items += [(value, items, f"closure variable '{name}'") for _c, value, name in cells
                        if (items := items_of(value)) is not None]
        # the user classes (not Modules) whose methods a call may run: their instances'
        # attribute reads are what the trace records (`_reads.recording`)
        self.classes = list(classes)

    @staticmethod
    def of(fn: Callable, also: list = ()) -> "Bindings":
        """The names `fn`'s code (and the code of the objects in `also`, a call's Module
        arguments) may read, with what they hold now."""
        walk = _Walk()
        for obj in also:
            walk.value(obj, 0)
        for f in _entry_functions(fn):
            walk.function(f, 0)
        for cls in _module_classes(fn):
            walk.methods(cls, 0)
        if isinstance(fn, types.MethodType):  # `compile(trainer.step)`: `self`'s class
            walk.value(fn.__self__, 0)
        return Bindings(walk.globals, walk.cells, walk.classes)

    def hold(self) -> bool:
        for ns, name, value in self._globals:
            now = ns.get(name, _MISSING)
            if now is not value and not _same(now, value):
                return False
        for cell, value, _name in self._cells:
            try:
                now = cell.cell_contents
            except ValueError:  # the cell was emptied (`del`)
                return False
            if now is not value and not _same(now, value):
                return False
        for value, items, _name in self._items:
            if not same_items(value, items):
                return False
        return True

    def failure(self) -> str | None:
        """Which guarded name no longer holds what the trace read, in words; None if all do."""
        for ns, name, value in self._globals:
            now = ns.get(name, _MISSING)
            if not _same(now, value):
                where = "global" if "__builtins__" in ns or "__name__" in ns else "attribute"
                return f"{where} '{name}' {changed(value, now)}"
        for cell, value, name in self._cells:
            try:
                now = cell.cell_contents
            except ValueError:
                return f"closure variable '{name}' was deleted"
            if not _same(now, value):
                return f"closure variable '{name}' {changed(value, now)}"
        for value, items, where in self._items:
            if not same_items(value, items):
                return f"{where} changed its items"
        return None

    def __len__(self) -> int:
        return len(self._globals) + len(self._cells)

    def contents(self) -> list:
        """The mutable containers the names hold (a global `calls = []`, a closed-over dict),
        each with its contents now, for `changed_container` after a call."""
        out = []
        for ns, name, value in self._globals:
            if isinstance(value, _CONTAINERS):
                out.append((name, value, _contents(value)))
        for _cell, value, name in self._cells:
            if isinstance(value, _CONTAINERS):
                out.append((name, value, _contents(value)))
        return out

    @staticmethod
    def changed_container(before: list) -> str | None:
        """Which container of `contents()` the call changed (`calls.append(1)`,
        `counts[k] += 1`), in words: a replay runs no Python and would not change it."""
        for name, value, was in before:
            if not _same_contents(value, was):
                return f"it changes the {type(value).__name__} '{name}'"
        return None


def _same(a: Any, b: Any) -> bool:
    """The same object, or an equal plain scalar of the same type. Floats compare by their bits,
    as ir/identity.py's value_key does: 0.0 and -0.0 trace to different constants (x / s), and
    a NaN equals itself (no retrace per call)."""
    if a is b:
        return True
    if type(a) is not type(b) or not isinstance(a, _SCALARS):
        return False
    if isinstance(a, float):
        return _bits(a) == _bits(b)
    if isinstance(a, complex):
        return (_bits(a.real), _bits(a.imag)) == (_bits(b.real), _bits(b.imag))
    return a == b


def items_of(value: Any):
    """A mutable container's shallow contents as a guard compares them (`_reads.Reads`), or
    None: a dict's keys and values, a list's items, `_EMPTY` for an empty one; None for anything
    else and for one of more than `_MAX_ITEMS` items (guarded by its identity only). A tuple is
    its identity."""
    if isinstance(value, (dict, list)) and len(value) <= _MAX_ITEMS:
        if not value:
            return _EMPTY
        return (tuple(value), tuple(value.values())) if isinstance(value, dict) else \
            tuple(value)
    return None


_CONTAINERS = (list, dict, set, bytearray, collections.deque)


def _contents(value) -> tuple:
    """A container's length and, up to `_MAX_ITEMS`, its items (a dict's and a list's as the
    guards take them, `items_of`), to tell whether a call changed it."""
    if len(value) > _MAX_ITEMS:
        return (len(value),)
    return (len(value), items_of(value) if isinstance(value, (dict, list)) else tuple(value))


def _same_contents(value, was: tuple) -> bool:
    """Whether container `value` still holds what `_contents` saw, compared as the guards
    compare items (the same objects, or equal plain scalars)."""
    if len(value) != was[0]:
        return False
    if len(was) == 1:
        return True
    if isinstance(value, (dict, list)):
        return same_items(value, was[1])
    return _all_same(value, was[1])


def same_items(now: Any, items: tuple) -> bool:
    """Whether container `now` (the object `items_of` saw) still holds those items."""
    if items is _EMPTY:
        return not now
    if isinstance(now, dict):
        keys, values = items
        # (keys by identity too: a tensor key's == would compare elements)
        return len(now) == len(keys) and _all_same(now, keys) and \
            _all_same(now.values(), values)
    return len(now) == len(items) and _all_same(now, items)


def _all_same(now, items: tuple) -> bool:
    return all(map(operator.is_, now, items)) or all(map(_same, now, items))


def changed(old: Any, new: Any) -> str:
    """How a guarded value changed, for a retrace's reason: values for scalars, else types."""
    if new is _MISSING:
        return "was deleted"
    if isinstance(old, _SCALARS) and isinstance(new, _SCALARS):
        return f"changed ({_short(old)} -> {_short(new)})"
    if type(old) is type(new):
        return f"is another {type(new).__name__} object"
    return f"changed ({type(old).__name__} -> {type(new).__name__})"


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def _namespace(value: Any) -> bool:
    """A `SimpleNamespace` or argparse's `Namespace` (not imported here for this)."""
    if isinstance(value, types.SimpleNamespace):
        return True
    argparse = sys.modules.get("argparse")
    return argparse is not None and isinstance(value, argparse.Namespace)


def _entry_functions(fn: Callable) -> list:
    """The Python functions a call of `fn` starts in: a function, a bound method's function,
    a partial's function, a Module's `forward` (its other methods and its submodules' come from
    `_module_classes`), a callable object's `__call__`."""
    if isinstance(fn, types.FunctionType):
        return [fn]
    if isinstance(fn, types.MethodType):
        return _entry_functions(fn.__func__)
    if isinstance(fn, functools.partial):
        return _entry_functions(fn.func)
    forward = getattr(type(fn), "forward", None)
    if isinstance(forward, types.FunctionType):
        return [forward]
    call = getattr(type(fn), "__call__", None)
    return [call] if isinstance(call, types.FunctionType) else []


def _module_classes(obj: Any) -> list:
    """The classes of a Module and of all its submodules (their methods may run in a call);
    [] for anything else."""
    if isinstance(obj, type):
        return []
    try:  # (any object's __getattr__ runs here: whatever it raises, it is no Module)
        if not hasattr(obj, "_modules") or not callable(getattr(obj, "modules", None)):
            return []
        return list(dict.fromkeys(type(m) for m in obj.modules()))
    except Exception:
        return []


def _stable(obj: Any) -> bool:
    """Whether a module, class or function belongs to a package whose names are fixed: ours,
    numpy, or the standard library's (loaded from its directory: a user's own `test.py` or
    `code.py` is the user's)."""
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    top = (name or "").split(".")[0]
    stable = _stable_names.get(top)
    if stable is None:
        stable = top in _LIBRARIES
        if not stable and top in sys.stdlib_module_names:
            path = getattr(sys.modules.get(top), "__file__", None)  # None: built in
            stable = path is None or os.path.realpath(path).startswith(_STDLIB)
        _stable_names[top] = stable
    return stable


def _names(code: types.CodeType) -> set:
    """Every name a code object (and the code nested in it: lambdas, inner functions) holds in
    `co_names`: the globals it loads and the attributes it reads (`cfg.SCALE`)."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _globals_loaded(code: types.CodeType) -> frozenset:
    """The global names a code object (and the code nested in it) loads, stores or deletes:
    the operands of its global opcodes, not its attribute names."""
    names = _loaded_globals.get(code)
    if names is None:
        found = {ins.argval for ins in dis.get_instructions(code) if ins.opname in _GLOBAL_LOADS}
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                found |= _globals_loaded(c)
        names = _loaded_globals[code] = frozenset(found)
    return names


# names through which code can read its own frame's locals without loading them by name
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "_getframe", "currentframe",
                            "stack", "getouterframes", "getframeinfo"})
_unread_of: "weakref.WeakKeyDictionary[types.CodeType, frozenset]" = weakref.WeakKeyDictionary()


def unread_parameters(code: types.CodeType) -> frozenset:
    """The parameters of a code object that its body never reads: no instruction but a store
    names them (`LOAD_FAST`, a closure cell, `del`), and the code names nothing that reads a
    frame's locals (`locals()`, `sys._getframe`). Such an argument cannot change what a call
    computes, so `compile` does not key its variants on it: `f(x, step)` with a `step` that
    `f` never reads traces once (torch.compile guards only on what the frame reads, too)."""
    unread = _unread_of.get(code)
    if unread is None:
        n = code.co_argcount + code.co_kwonlyargcount
        params = set(code.co_varnames[:n]) - set(code.co_cellvars)
        if _names(code) & _FRAME_READERS:
            params = set()
        for ins in dis.get_instructions(code):
            if params and ins.opname != "STORE_FAST":
                named = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
                params.difference_update(v for v in named if isinstance(v, str))
        unread = _unread_of[code] = frozenset(params)
    return unread


class _Walk:
    """What `Bindings.of` collects, and what it has looked at (each object once)."""

    def __init__(self):
        self.globals: list = []
        self.cells: list = []
        self.classes: list = []
        self._seen: set = set()
        self._keys: set = set()

    def _first(self, obj: Any) -> bool:
        if id(obj) in self._seen:
            return False
        self._seen.add(id(obj))
        return True

    def _bind(self, ns, name: str, value: Any) -> None:
        if (id(ns), name) not in self._keys:
            self._keys.add((id(ns), name))
            self.globals.append((ns, name, value))

    def function(self, f: types.FunctionType, depth: int) -> None:
        # fusetorch's own functions read only module-level constants and the names of other
        # functions, which never change between calls
        if _stable(f) or not self._first(f):
            return
        ns = f.__globals__
        names = _names(f.__code__)
        for name in _globals_loaded(f.__code__):
            value = ns.get(name, _MISSING)
            if value is _MISSING:  # a builtin (or a name not yet defined: it would raise)
                continue
            self._bind(ns, name, value)
            self.attributes(value, names, depth)
            self.value(value, depth + 1)
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if self._first(cell):
                self.cells.append((cell, value, name))
            self.attributes(value, names, depth)
            self.value(value, depth + 1)

    def attributes(self, value: Any, names: set, depth: int) -> None:
        """Bind the attributes the code may read (`names`) of a user module or class, or of a
        namespace object whose reads `_reads` cannot record (`SimpleNamespace`, argparse's
        `Namespace`): `cfg.SCALE`, `Model.scale`, `ns.model`."""
        if isinstance(value, (types.ModuleType, type)):
            if _stable(value):
                return
        elif not _namespace(value):
            return
        attrs = value.__dict__
        for attr in names:
            if attr in attrs:
                self._bind(attrs, attr, attrs[attr])
                if not isinstance(value, type):
                    self.value(attrs[attr], depth + 1)

    def value(self, value: Any, depth: int) -> None:
        """Follow a value a global or cell holds to the code a call through it may run."""
        if depth > _MAX_DEPTH:
            return
        if isinstance(value, types.FunctionType):
            self.function(value, depth)
        elif isinstance(value, functools.partial):
            self.value(value.func, depth)
        elif isinstance(value, types.MethodType):
            self.value(value.__func__, depth)
            self.value(value.__self__, depth)
        elif isinstance(value, type):
            self.methods(value, depth)
        elif isinstance(value, (types.ModuleType, types.BuiltinFunctionType,
                                types.BuiltinMethodType)) or isinstance(value, _SCALARS):
            return
        elif not _stable(type(value)):  # an object of a user class: a Module, a callable
            for cls in _module_classes(value) or [type(value)]:
                self.methods(cls, depth)

    def methods(self, cls: type, depth: int) -> None:
        """Every function defined by the user's classes in `cls`'s MRO (methods, static and
        class methods, properties)."""
        for klass in cls.__mro__:
            if _stable(klass) or not self._first(klass):
                continue
            self.classes.append(klass)
            for attr in vars(klass).values():
                if isinstance(attr, (staticmethod, classmethod)):
                    attr = attr.__func__
                elif isinstance(attr, property):
                    for f in (attr.fget, attr.fset):
                        if isinstance(f, types.FunctionType):
                            self.function(f, depth + 1)
                    continue
                if isinstance(attr, types.FunctionType):
                    self.function(attr, depth + 1)
