"""PyTorch's configuration modules (`torch._inductor.config`, `torch._dynamo.config`): a module
whose attributes are a fixed table of flags. Reading or setting a name the table lacks raises
`AttributeError("<module>.<name> does not exist")`, as PyTorch's `ConfigModule` does; dotted
flags (`triton.cudagraphs`) are reached through a proxy per prefix (`config.triton`). Values are
not type-checked (PyTorch's are not either). `patch` sets flags for a `with` block or a
decorated function; `get_config_copy` and `to_dict` return the current values.

A leaf: imports nothing from fusetorch."""
from __future__ import annotations

import contextlib
import functools
import sys
import types
from typing import Any


class _Proxy:
    """`config.triton`: the flags named `triton.*`."""

    def __init__(self, config: "ConfigModule", prefix: str) -> None:
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        return self._config._get(self._prefix + name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._config._set(self._prefix + name, value)


class ConfigModule(types.ModuleType):
    """A module of flags (`install` turns a module into one)."""

    def _get(self, name: str) -> Any:
        values = self.__dict__["_values"]
        name = self.__dict__["_aliases"].get(name, name)
        if name in values:
            return values[name]
        prefix = name + "."
        if any(k.startswith(prefix) for k in values):
            return _Proxy(self, prefix)
        raise AttributeError(f"{self.__name__}.{name} does not exist")

    def _set(self, name: str, value: Any) -> None:
        values = self.__dict__["_values"]
        name = self.__dict__["_aliases"].get(name, name)
        if name not in values:
            raise AttributeError(f"{self.__name__}.{name} does not exist")
        values[name] = value

    def __getattr__(self, name: str) -> Any:  # only for names not in the module's __dict__
        if name.startswith("__"):
            raise AttributeError(name)
        return self._get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__ or name.startswith("__"):
            super().__setattr__(name, value)
        else:
            self._set(name, value)

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k.split(".")[0] for k in self._values})

    def get_config_copy(self) -> dict[str, Any]:
        return dict(self._values)

    to_dict = get_config_copy
    shallow_copy_dict = get_config_copy

    def load_config(self, config: dict[str, Any]) -> None:
        for name, value in config.items():
            self._set(name, value)

    def patch(self, arg1: str | dict | None = None, arg2: Any = None, **changes: Any):
        """`with config.patch(max_autotune=True):`, `config.patch("name", value)` or
        `config.patch({"triton.cudagraphs": True})`; also a decorator."""
        if isinstance(arg1, str):
            changes = {arg1: arg2, **changes}
        elif isinstance(arg1, dict):
            changes = {**arg1, **changes}
        for name in changes:
            self._get(name)  # unknown names raise before anything is set
        return _Patch(self, changes)


class _Patch(contextlib.ContextDecorator):
    def __init__(self, config: ConfigModule, changes: dict[str, Any]) -> None:
        self.config, self.changes, self.saved = config, changes, []

    def __enter__(self):
        self.saved.append({k: self.config._get(k) for k in self.changes})
        for k, v in self.changes.items():
            self.config._set(k, v)
        return self

    def __exit__(self, *exc) -> None:
        for k, v in self.saved.pop().items():
            self.config._set(k, v)

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run


def install(module_name: str, flags: dict[str, Any], aliases: dict[str, str]) -> None:
    """Make the module `module_name` a `ConfigModule` over a copy of `flags`; each alias reads
    and sets the flag it names."""
    module = sys.modules[module_name]
    module.__dict__["_values"] = dict(flags)
    module.__dict__["_aliases"] = dict(aliases)
    module.__class__ = ConfigModule
